"""Commands say what is true: diff finds no change between one source under two names and prints
readable values; compare, diff and golden have --json with documented keys; NO_COLOR turns colour
off; the HTML audit labels only the marker occurrences the analysis located."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.cli import run

from analyzer.analysis import analyze, inspect
from analyzer.backends.compare import COLUMNS, SHOW_CHARS, diff_descriptions
from analyzer.backends.html_report import render_html
from analyzer.cli import cli
from analyzer.sources import load_template

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.mark.parametrize("engine", ["minijinja", "jinja2"])
def test_identical_sources_under_two_names_show_no_change(
    corpus_paths: list[Path], tmp_path: Path, engine: str
) -> None:
    """Before, 34 of 70 corpus templates "changed" against a renamed copy (messages name the file)."""
    changed = []
    for path in corpus_paths:
        copy = tmp_path / "renamed.jinja"
        shutil.copyfile(path, copy)
        old = analyze(load_template(str(path)), engine=engine)
        new = analyze(load_template(str(copy)), engine=engine)
        if diff_descriptions(old, new):
            changed.append(path.stem)
    assert changed == []


def test_diff_of_a_renamed_copy_through_the_command_line(corpus_dir: Path, tmp_path: Path) -> None:
    original = corpus_dir / "Qwen3-Coder.jinja"  # its string-arguments message names the template
    copy = tmp_path / "other-name.jinja"
    shutil.copyfile(original, copy)
    code, out, err = run(["diff", str(original), str(copy)])
    assert (code, out, err) == (0, "no change in behaviour\n", "")
    code, out, _ = run(["diff", "--json", str(original), str(copy)])
    assert json.loads(out) == {"old": str(original), "new": str(copy), "changes": []}


def test_diff_prints_readable_values_and_json_has_them_whole(corpus_dir: Path) -> None:
    old, new = str(corpus_dir / "Qwen3-Coder.jinja"), str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")
    code, out, _ = run(["diff", old, new])
    assert code == 0
    lines = out.splitlines()
    assert "format: 'tag-kv' -> 'json'" in lines
    for line in lines:
        _path, _, values = line.partition(": ")
        assert len(values) <= 2 * (SHOW_CHARS + 50) + 4, line  # each side cut, with its note
        assert "{'" not in line and "None" not in line, line  # JSON, not Python reprs
    code, out, _ = run(["diff", "--json", old, new])
    data = json.loads(out)
    assert set(data) == {"old", "new", "changes"}
    assert [sorted(c) for c in data["changes"]] == [["new", "old", "path"]] * len(data["changes"])
    assert {"path": "format", "old": "tag-kv", "new": "json"} in data["changes"]
    # The text output lists the same paths, in the same order.
    assert [line.split(": ")[0] for line in lines] == [c["path"] for c in data["changes"]]


def test_compare_json_has_one_object_per_template_with_the_table_columns(corpus_dir: Path) -> None:
    names = ["Qwen3-Coder", "google-gemma-2-2b-it"]
    code, out, _ = run(["compare", "--json", *[str(corpus_dir / f"{n}.jinja") for n in names]])
    assert code == 0
    data = json.loads(out)
    keys = [c.replace(" ", "_") for c in COLUMNS]
    assert data["columns"] == keys
    assert [list(row) for row in data["templates"]] == [keys, keys]
    assert [row["template"] for row in data["templates"]] == names
    assert [row["format"] for row in data["templates"]] == ["tag-kv", "none"]


def test_golden_json_reports_every_template(corpus_dir: Path, corpus_paths: list[Path]) -> None:
    code, out, _ = run(["golden", "--json", "--corpus-dir", str(corpus_dir), "--golden-dir", str(GOLDEN)])
    data = json.loads(out)
    assert set(data) == {"golden_dir", "checked", "changed", "updated"}
    assert data["checked"] == [p.stem for p in corpus_paths]
    assert (code, data["changed"], data["updated"]) == (0, [], False)


def test_golden_update_into_a_named_folder_then_check_it(corpus_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("Qwen3-Coder", "google-gemma-2-2b-it"):
        shutil.copyfile(corpus_dir / f"{name}.jinja", corpus / f"{name}.jinja")
    target = tmp_path / "golden"
    code, out, _ = run(["golden", "--update", "--corpus-dir", str(corpus), "--golden-dir", str(target)])
    assert (code, out) == (0, "2 of 2 golden files rewrote: Qwen3-Coder, google-gemma-2-2b-it\n")
    assert sorted(p.name for p in target.iterdir()) == ["Qwen3-Coder.json", "audit", "google-gemma-2-2b-it.json"]
    assert sorted(p.name for p in (target / "audit").iterdir()) == ["Qwen3-Coder.json", "google-gemma-2-2b-it.json"]
    code, out, _ = run(["golden", "--corpus-dir", str(corpus), "--golden-dir", str(target)])
    assert (code, out) == (0, "0 of 2 golden files differ\n")


@pytest.mark.parametrize(
    "args",
    [["analyze", "{corpus}/Qwen3-Coder.jinja"], ["audit", "{corpus}/Qwen3-Coder.jinja"]],
    ids=["analyze", "audit"],
)
def test_no_color_turns_colour_off(corpus_dir: Path, args: list[str]) -> None:
    argv = [a.format(corpus=corpus_dir) for a in args]
    runner = CliRunner()
    coloured = runner.invoke(cli, argv, color=True, env={"NO_COLOR": None})
    plain = runner.invoke(cli, argv, color=True, env={"NO_COLOR": "1"})
    assert coloured.exit_code == plain.exit_code == 0
    assert "\x1b[" in coloured.stdout  # a terminal would get colour...
    assert "\x1b[" not in plain.stdout  # ...but not with NO_COLOR set
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured.stdout) == plain.stdout


@pytest.mark.parametrize(
    ("name", "short"),
    [("Qwen3-Coder", ">"), ("mistralai-Mistral-Nemo-Instruct-2407", "]"), ("moonshotai-Kimi-K2", ":")],
)
def test_html_audit_labels_only_located_markers(corpus_dir: Path, name: str, short: str) -> None:
    """A marker as short as ``>`` is labelled where the analysis placed it, not at every occurrence
    (before: 35 ``>`` labelled "call marker" on Qwen3-Coder)."""
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    description = analyze(template)
    evidence = inspect(template, description)
    page = render_html(description, evidence)
    labelled = [
        (html.unescape(text), label)
        for label, text in re.findall(r'<mark class="marker" data-label="([^"]*)" data-text="([^"]*)"', page)
    ]
    short_marks = [label for text, label in labelled if text == short]
    conversation = evidence.sample.conversation
    assert 1 <= len(short_marks) <= 2  # the sample has one call (and one result)
    assert conversation.count(short) > 2 * len(short_marks)
    for mark in evidence.sample.marks:
        assert conversation[mark.start : mark.end] in {text for text, _ in labelled}
