"""Every corpus template's analysis must equal its reviewed golden file.

Rewrite with ``template-analyzer golden --update`` (or TEMPLATE_ANALYZER_UPDATE_GOLDEN=1), then review
the diff of golden/ like code.
"""

from __future__ import annotations

import os

import pytest
from helpers.golden import GOLDEN, golden_paths

from analyzer.analysis import analyze
from analyzer.description import dumps, loads
from analyzer.sources import load_template

UPDATE = os.environ.get("TEMPLATE_ANALYZER_UPDATE_GOLDEN") == "1"


def test_one_golden_file_per_corpus_template(corpus_paths):
    expected = {p.stem for p in corpus_paths}
    present = {p.stem for p in golden_paths()}
    assert present == expected


def test_golden_analysis(corpus_paths):
    changed = []
    for path in corpus_paths:
        text = dumps(analyze(load_template(str(path))))
        target = GOLDEN / f"{path.stem}.json"
        if UPDATE:
            target.write_text(text, encoding="utf-8")
            continue
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            changed.append(path.stem)
    assert not changed, f"analysis differs from golden/ for: {', '.join(changed)}"


@pytest.mark.parametrize("path", golden_paths(), ids=lambda p: p.stem)
def test_golden_files_load_back(path):
    text = path.read_text(encoding="utf-8")
    assert dumps(loads(text)) == text
