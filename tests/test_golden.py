"""Every corpus template's analysis, audit and compare row must equal its reviewed golden files.

Rewrite with ``template-analyzer golden --update`` (or TEMPLATE_ANALYZER_UPDATE_GOLDEN=1), then review
the diff of golden/ like code.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.golden import GOLDEN, golden_paths

from analyzer.analysis import analyze
from analyzer.description import dumps, loads
from analyzer.golden import AUDIT_FOLDER, audit_text, run_golden
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


def test_golden_audit_and_compare(corpus_paths):
    """golden/audit/<name>.json: the audit as `audit --json` prints it and the template's `compare` row."""
    changed = []
    for path in corpus_paths:
        template = load_template(str(path))
        text = audit_text(template, analyze(template))
        target = GOLDEN / AUDIT_FOLDER / f"{path.stem}.json"
        if UPDATE:
            target.parent.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
            continue
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            changed.append(path.stem)
    assert not changed, f"audit or compare row differs from golden/{AUDIT_FOLDER}/ for: {', '.join(changed)}"
    assert {p.stem for p in (GOLDEN / AUDIT_FOLDER).glob("*.json")} == {p.stem for p in corpus_paths}


def test_the_golden_command_reports_a_changed_audit(corpus_dir: Path, tmp_path: Path) -> None:
    """A golden folder whose description is right but whose audit says something else is changed, and
    --update writes the audit back as it was."""
    name = "Qwen-Qwen2.5-7B-Instruct"
    shutil.copy(GOLDEN / f"{name}.json", tmp_path / f"{name}.json")
    (tmp_path / AUDIT_FOLDER).mkdir()
    kept = (GOLDEN / AUDIT_FOLDER / f"{name}.json").read_text(encoding="utf-8")
    edited = json.loads(kept)
    edited["audit"]["findings"][0]["message"] += " (edited)"
    (tmp_path / AUDIT_FOLDER / f"{name}.json").write_text(json.dumps(edited), encoding="utf-8")
    paths = [corpus_dir / f"{name}.jinja"]
    assert run_golden(paths, tmp_path, update=False).changed == (name,)
    assert run_golden(paths, tmp_path, update=True).changed == (name,)
    assert (tmp_path / AUDIT_FOLDER / f"{name}.json").read_text(encoding="utf-8") == kept
    assert run_golden(paths, tmp_path, update=False).changed == ()


@pytest.mark.parametrize("path", golden_paths(), ids=lambda p: p.stem)
def test_golden_files_load_back(path):
    text = path.read_text(encoding="utf-8")
    assert dumps(loads(text)) == text
