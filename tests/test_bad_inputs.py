"""One table of bad inputs, each run through the real command line (``main``, as the console script
runs it): one ``Error:`` line saying what is wrong with which input, nothing on stdout, and the exit
code the README promises (2 for bad input)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run

ROOT = Path(__file__).resolve().parent.parent
QWEN = "{corpus}/Qwen3-Coder.jinja"
CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


def _conversation(*messages: object) -> str:
    return json.dumps([{"role": "user", "content": "hi"}, *messages])


def _assistant_calls(calls: object) -> dict[str, object]:
    return {"role": "assistant", "content": "", "tool_calls": calls}


# (id, arguments, files to write {name: text}, stdin, exit code, the error line as a regular expression)
# In arguments and the error, {tmp} is the test's folder and {corpus} the corpus folder.
CASES: list[tuple[str, list[str], dict[str, str], str | None, int, str]] = [
    (
        "export-tool-calls-a-string",
        ["export", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": _conversation(_assistant_calls("oops"))},
        None,
        2,
        r"{tmp}/m\.json: message 2: tool_calls must be a list of call objects, not a string",
    ),
    (
        "export-call-not-an-object",
        ["export", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": _conversation(_assistant_calls([1]))},
        None,
        2,
        r"{tmp}/m\.json: message 2, call 1: a call must be an object, not a number",
    ),
    (
        "export-call-without-a-name",
        ["export", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": _conversation(_assistant_calls([{"type": "function", "function": {"arguments": {}}}]))},
        None,
        2,
        r"{tmp}/m\.json: message 2, call 1: function\.name must be a non-empty string, not null",
    ),
    (
        "export-arguments-a-list",
        ["export", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": _conversation(_assistant_calls([{"function": {"name": "f", "arguments": [1]}}]))},
        None,
        2,
        r"{tmp}/m\.json: message 2, call 1: arguments of 'f' must be an object or a JSON string, not a list",
    ),
    (
        "export-content-a-number",
        ["export", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": json.dumps([{"role": "user", "content": 5}])},
        None,
        2,
        r"{tmp}/m\.json: message 1: content must be text, a list of parts or null, not a number",
    ),
    (
        "render-messages-of-strings",
        ["render", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": '["hello"]'},
        None,
        2,
        r"Invalid value for '--messages': {tmp}/m\.json: messages must be a JSON list of objects",
    ),
    (
        "render-message-without-role",
        ["render", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": '[{"content": "hello"}]'},
        None,
        2,
        r'{tmp}/m\.json: message 1 is not an object with a "role"',
    ),
    (
        "render-tool-calls-a-string",
        ["render", QWEN, "--messages", "{tmp}/m.json"],
        {"m.json": _conversation(_assistant_calls("oops"))},
        None,
        2,
        r"{tmp}/m\.json: message 2: tool_calls must be a list of call objects, not a string",
    ),
    (
        "render-template-refuses",
        ["render", "{tmp}/t.jinja", "--messages", "{tmp}/m.json"],
        {"t.jinja": "{{ raise_exception('no system role') }}", "m.json": "[]"},
        None,
        2,
        r"t: template raised: no system role",
    ),
    (
        "render-value-too-large-jinja2",
        ["render", "--engine", "jinja2", "{tmp}/t.jinja", "--messages", "{tmp}/m.json"],
        {"t.jinja": '{{ "x" * 1000000000 }}', "m.json": "[]"},
        None,
        2,
        r"t: the template builds a value of 1000000000 characters or items, past the 2000000 limit",
    ),
    (
        "render-value-too-large-minijinja",
        ["render", "--engine", "minijinja", "{tmp}/t.jinja", "--messages", "{tmp}/m.json"],
        {"t.jinja": '{{ "x" * 1000000000 }}', "m.json": "[]"},
        None,
        2,
        r"t: render ran past its instruction budget \(5000000 fuel\)",
    ),
    (
        "parse-template-from-stdin",
        ["parse", "-"],
        {},
        "<tool_call>",
        2,
        r"parse reads the model's output from stdin: give the template as a file, not -",
    ),
    (
        "parse-jsonl-and-stream",
        ["parse", "--jsonl", "--stream", QWEN],
        {},
        "",
        2,
        r"--stream and --jsonl cannot be used together",
    ),
    (
        "analyze-never-renders",
        ["analyze", "{tmp}/t.jinja"],
        {"t.jinja": "{{ 1 / 0 }}" + CHAT},
        None,
        2,
        r"t: the template renders no conversation: invalid operation: unable to calculate 1 / 0 \(in chat:1\)",
    ),
    (
        "analyze-never-renders-jinja2",
        ["analyze", "--engine", "jinja2", "{tmp}/t.jinja"],
        {"t.jinja": "{{ 1 / 0 }}" + CHAT},
        None,
        2,
        r"t: the template renders no conversation: ZeroDivisionError: division by zero",
    ),
    (
        "analyze-refuses-everything",
        ["analyze", "{tmp}/t.jinja"],
        {"t.jinja": "{{ raise_exception('we do not do tools') }}"},
        None,
        2,
        r"t: the template refuses every conversation: template raised: we do not do tools",
    ),
    (
        "analyze-template-too-long",
        ["analyze", "{tmp}/t.jinja"],
        {"t.jinja": "{# padding #}" * 20_000 + CHAT},
        None,
        2,
        r"{tmp}/t\.jinja: the template is 260066 characters long; the limit is 200000",
    ),
    (
        "golden-missing-golden-dir",
        ["golden", "--golden-dir", "{tmp}/nonexistent", "--corpus-dir", "{corpus}"],
        {},
        None,
        2,
        r"{tmp}/nonexistent: no such folder \(--update writes it\)",
    ),
    (
        "golden-empty-golden-dir",
        ["golden", "--golden-dir", "{tmp}/g", "--corpus-dir", "{corpus}"],
        {"g/readme.txt": "not a golden file"},
        None,
        2,
        r"{tmp}/g: no golden files \(\*\.json\) in this folder \(--update writes them\)",
    ),
    (
        "golden-empty-corpus-dir",
        ["golden", "--corpus-dir", "{tmp}/c"],
        {"c/readme.txt": "no templates here"},
        None,
        2,
        r"{tmp}/c: no corpus templates \(\*\.jinja\) in this folder",
    ),
    (
        "golden-missing-corpus-dir",
        ["golden", "--corpus-dir", "{tmp}/nowhere"],
        {},
        None,
        2,
        r"{tmp}/nowhere: no such folder",
    ),
]


@pytest.mark.parametrize(("args", "files", "stdin", "code", "error"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line(
    tmp_path: Path,
    corpus_dir: Path,
    args: list[str],
    files: dict[str, str],
    stdin: str | None,
    code: int,
    error: str,
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    where = {"tmp": str(tmp_path), "corpus": str(corpus_dir)}
    got_code, out, err = run([a.format(**where) for a in args], input=stdin)
    expected = "Error: " + error.replace("{tmp}", re.escape(str(tmp_path))).replace(
        "{corpus}", re.escape(str(corpus_dir))
    )
    assert (got_code, out) == (code, ""), err
    assert len(err.splitlines()) == 1, err
    assert re.fullmatch(expected, err.strip()), err


def test_golden_update_refuses_to_write_into_an_installed_copy(tmp_path: Path, corpus_dir: Path) -> None:
    """A non-editable install: the package in site-packages, no source checkout beside it."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "analyzer", site / "analyzer", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "golden", "--update", "--corpus-dir", str(corpus_dir)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "Error: this is an installed copy of template-analyzer, with no golden/ beside it: give --golden-dir"
    ]
    assert not (site / "golden").exists()
