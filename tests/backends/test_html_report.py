"""The audit's HTML page, loaded in a real headless Chromium (Debian's package, installed by .ci/run):
it loads without script errors and every highlighted marker holds the marker text the analysis found."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

import pytest

from analyzer.analysis import analyze, inspect
from analyzer.backends.audit import audit
from analyzer.backends.html_report import render_html
from analyzer.sources import load_template

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(path, profile) -> str:
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's package)")
@pytest.mark.parametrize(
    "name, expected",
    [
        ("Qwen-Qwen2.5-7B-Instruct", ["<tool_call>", "</tool_call>", "<|im_end|>", "<tool_response>"]),
        ("moonshotai-Kimi-K2", ["<|tool_calls_section_begin|>", "<|tool_call_argument_begin|>", "<|im_end|>"]),
        ("mistralai-Mistral-Nemo-Instruct-2407", ["[TOOL_CALLS][", '[TOOL_RESULTS]{"content":']),
    ],
)
def test_page_loads_and_highlights_the_markers(name, expected, corpus_dir, tmp_path):
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    description = analyze(template)
    evidence = inspect(template, description)
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(description, evidence), encoding="utf-8")
    dom = dump_dom(page, tmp_path / "profile")
    checked = re.search(r'data-checked="(\d+)/(\d+)"', dom)
    assert checked, "the page's script did not run"
    good, total = map(int, checked.groups())
    assert good == total > 0
    assert re.search(r'<pre id="errors"></pre>', dom), "script errors on the page"
    marked = {m for m in re.findall(r'data-text="([^"]*)"', dom)}
    unescaped = {html.unescape(m) for m in marked}
    for marker in expected:
        assert marker in unescaped, f"{marker!r} is not highlighted"
    assert dom.count('class="risk"') + dom.count('class="warning"') + dom.count('class="info"') == len(
        audit(description, evidence).findings
    )
