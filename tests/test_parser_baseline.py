"""benchmarks/parser_speed.py --baseline REV: the runtime of another git revision loaded beside ours in
one process (tests/helpers/baseline_runtime.py), and the comparison of what the two read.

Loaded at HEAD itself it must read the round-trip outputs as ours does (when analyzer/ holds no change
HEAD lacks), or the comparison's difference count means nothing; no speed figure is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import baseline_runtime
from helpers.golden import compile_for, golden
from helpers.roundtrip import CASES, TOOLS, case_outputs

from analyzer.backends.parser import Parser
from analyzer.runtime import stream
from analyzer.runtime.message import Message, ParseError, ParseWarning, ToolCall

CHECKOUT = Path(__file__).resolve().parents[1]
BENCHMARK = CHECKOUT / "benchmarks" / "parser_speed.py"
# The benchmark run with this checkout's analyzer, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
# A call format whose ids the template writes (Kimi's functions.NAME:N) and one whose ids we make.
TEMPLATES = ["Kimi-K2-Instruct", "Qwen-Qwen2.5-7B-Instruct"]


def _head_is_the_runtime_under_test() -> None:
    if not (CHECKOUT / ".git").exists():
        pytest.skip("not a git checkout: no revision to load")
    changed = subprocess.run(
        ["git", "-C", str(CHECKOUT), "status", "--porcelain", "--", "analyzer"], capture_output=True, text=True
    )
    if changed.returncode != 0:
        pytest.skip(f"git cannot read this checkout: {changed.stderr.strip()}")
    if changed.stdout.strip():
        pytest.skip("analyzer/ has changes HEAD lacks: HEAD's runtime is not the one under test")


def test_the_runtime_at_head_loads_beside_ours_and_reads_the_outputs_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus_dir: Path
) -> None:
    _head_is_the_runtime_under_test()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    baseline = baseline_runtime.load("HEAD", TEMPLATES)
    assert list(tmp_path.iterdir()) == [], "the exported tree was left behind"
    assert sorted(baseline.shapes) == TEMPLATES and baseline.failed == {}
    # Another package than ours, so that a figure compares two runtimes and not one with itself.
    assert baseline.runtime.__name__.startswith("baseline_runtime_")
    assert baseline.runtime.stream.Parser is not stream.Parser
    calls_read = 0
    for name in TEMPLATES:
        description = golden(name)
        ours = Parser(description, TOOLS)
        theirs = baseline.parser(baseline.shape(name), TOOLS)
        outputs = list(case_outputs(description, compile_for(description, corpus_dir), CASES))
        assert len(outputs) >= 5, name
        for case, text in outputs:
            mine, other = ours.parse(text), theirs.parse(text)
            assert type(other) is not Message
            assert baseline_runtime.difference(mine, other) is None, (name, case)
            # The same runtime also makes the same ids.
            assert [call.id for call in mine.tool_calls] == [call.id for call in other.tool_calls], (name, case)
            calls_read += len(other.tool_calls)
    assert calls_read >= 10


def test_the_benchmark_compares_with_head_in_one_short_run() -> None:
    _head_is_the_runtime_under_test()
    args = ["--baseline", "HEAD", "--only", "baseline", *(f"--template={name}" for name in TEMPLATES)]
    run = subprocess.run(
        [sys.executable, str(BENCHMARK), *args], capture_output=True, text=True, timeout=300, cwd=CHECKOUT, env=ENV
    )
    assert run.returncode == 0, run.stderr
    rows = {cells[0]: cells for cells in map(str.split, run.stdout.splitlines()) if cells and cells[0] in TEMPLATES}
    assert sorted(rows) == TEMPLATES, run.stdout
    for name, cells in rows.items():
        # outputs, then batch, 1-char and set-up as current, baseline and ratio, then the outputs read differently
        assert len(cells) == 12 and int(cells[1]) >= 5 and cells[-1] == "0", (name, cells)
        assert all(float(cell) > 0 for cell in cells[2:11:3] + cells[3:11:3]), (name, cells)
    assert "set-up (Parser())" in run.stdout
    assert "aside): 0 of " in run.stdout, run.stdout


def test_only_the_compared_parts_of_a_message_count() -> None:
    call = ToolCall("call_1", "get_weather", '{"city": "Paris", "unit": "c"}')
    base = Message("Checking.", "The user wants weather.", [call], [ParseError("malformed_call", "no")])
    # Other ids, warnings, spacing and key order in the arguments, error messages: alike.
    alike = Message(
        "Checking.",
        "The user wants weather.",
        [ToolCall("functions.get_weather:0", "get_weather", '{"unit":"c","city":"Paris"}')],
        [ParseError("malformed_call", "another message")],
        [ParseWarning("some_tolerance", "read anyway", 3)],
    )
    assert baseline_runtime.difference(base, alike) is None
    unlike = {
        "content": Message("Checking!", "The user wants weather.", [call], list(base.errors)),
        "reasoning": Message("Checking.", "", [call], list(base.errors)),
        "calls": Message("Checking.", "The user wants weather.", [ToolCall("c", "get_weather", '{"city": "Rome"}')]),
        "error kinds": Message("Checking.", "The user wants weather.", [call], [ParseError("unknown_tool", "no")]),
    }
    for part, message in unlike.items():
        found = baseline_runtime.difference(base, message)
        assert found is not None and found.startswith(f"{part}: current "), (part, found)


def test_a_name_that_is_no_revision_is_a_usage_error() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCHMARK), "--baseline", "no-such-revision-x", "--only", "baseline"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CHECKOUT,
        env=ENV,
    )
    assert run.returncode == 2, run.stderr
    [error] = [line for line in run.stderr.splitlines() if "error:" in line]
    assert "--baseline 'no-such-revision-x': not a git revision" in error, run.stderr
    assert "Traceback" not in run.stderr


def test_a_revision_without_a_runtime_is_refused(tmp_path: Path) -> None:
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "analyzer").mkdir()
    (tmp_path / "analyzer" / "lower.py").write_text("", encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "no runtime"], check=True)
    with pytest.raises(baseline_runtime.BaselineError, match=r"its tree has no analyzer/runtime/__init__\.py"):
        baseline_runtime.load("HEAD", repo=tmp_path)


def test_only_baseline_needs_a_revision() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCHMARK), "--only", "baseline"], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert run.returncode == 2 and "--only baseline: give the revision" in run.stderr, run.stderr
