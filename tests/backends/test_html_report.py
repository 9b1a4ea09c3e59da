"""The audit's HTML page, loaded in a real headless Chromium (Debian's package, installed by .ci/run).

Each page is loaded with a script of the test's own appended, which reads the rendered DOM (text as
shown, element order, computed colours) into ``#test-facts``; the assertions are on those facts. The
page must read to someone who has never seen the tool: a summary first, severities written out and
not by colour alone, probe values in the evidence explained, excerpts cut where no marker is split,
the answer-vs-call comparison captioned, and the sample conversation made with the tools given.

A screenshot of each page is written to TEMPLATE_ANALYZER_REPORT_DIR (else pytest's temporary folder)
under html-audit/, and the folder is printed at the end of the run, for a reviewer to open.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from analyzer.analysis import analyze, inspect
from analyzer.backends.audit import AuditReport, Finding, audit
from analyzer.backends.html_report import SEVERITIES, render_html
from analyzer.description import FormatDescription
from analyzer.evidence import Evidence
from analyzer.sources import load_template

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_chromium_installed = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's package)"
)


def needs_chromium(test: Callable[..., None]) -> Callable[..., None]:
    """Skipped without Chromium, and end to end (the e2e mark: out of the developer's loop)."""
    return pytest.mark.e2e(_chromium_installed(test))


# Qwen3, Mistral-Nemo, Llama 3.1, Kimi-K2, Gemma 2 (which writes no tool calls) and Llama 3.2 (whose
# prompt reads the date: its evidence holds the second clock's year).
PAGES = [
    "Qwen-Qwen3-0.6B",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "meta-llama-Llama-3.1-8B-Instruct",
    "moonshotai-Kimi-K2",
    "google-gemma-2-2b-it",
    "meta-llama-Llama-3.2-3B-Instruct",
]

# Tools of a caller's own (audit --tools): the sample must offer these and call the first.
CALLER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Find flights between two airports",
            "parameters": {
                "type": "object",
                "properties": {
                    "origin": {"type": "string"},
                    "destination": {"type": "string"},
                    "cabin": {"type": "string", "enum": ["economy", "business"]},
                },
                "required": ["origin", "cabin"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "book_hotel",
            "description": "Book a hotel room",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
]

# The test's own reader of the rendered page.
_READ_FACTS = """
<script>
(function () {
  function textOutside(root, skip) {
    var out = [], walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      var node = walker.currentNode, parent = node.parentElement;
      if (parent.closest("script, style, #test-facts") || (skip && parent.closest(skip))) { continue; }
      out.push(node.nodeValue);
    }
    return out.join("");
  }
  var sections = Array.from(document.querySelectorAll("body > section"));
  var summary = document.getElementById("summary");
  var caption = document.querySelector("#output-diff figcaption");
  var facts = {
    sections: sections.map(function (s) { return s.id; }),
    tops: sections.map(function (s) { return s.getBoundingClientRect().top; }),
    summary: summary ? summary.innerText : "",
    summaryLinks: summary ? Array.from(summary.querySelectorAll("a[href^='#finding-']")).map(function (a) {
      var target = document.getElementById(a.getAttribute("href").slice(1));
      return {href: a.getAttribute("href"), target: target ? target.className : null};
    }) : [],
    findings: Array.from(document.querySelectorAll("li.finding")).map(function (li) {
      var badge = li.querySelector(".severity");
      var pres = Array.from(li.querySelectorAll("pre.evidence"));
      return {
        id: li.id, classes: li.className, severity: badge ? badge.innerText.trim() : "",
        background: badge ? getComputedStyle(badge).backgroundColor : "",
        message: li.querySelector(".message").innerText,
        label: li.querySelector(".evidence-label") ? li.querySelector(".evidence-label").innerText : "",
        evidence: pres.map(function (p) { return p.textContent; })
      };
    }),
    severityLegend: (document.getElementById("severity-legend") || {innerText: ""}).innerText,
    unexplained: textOutside(document.body, ".probe, #probe-legend"),
    probes: Array.from(document.querySelectorAll(".probe")).map(function (p) {
      return {text: p.textContent, title: p.title, meaning: p.dataset.meaning || "",
              inLegend: !!p.closest("#probe-legend")};
    }),
    caption: caption ? caption.innerText : "",
    captionSwatch: caption ? !!caption.querySelector("ins") : false,
    columns: Array.from(document.querySelectorAll("#output-diff .columns h3")).map(function (h) {
      return h.innerText;
    }),
    conversation: (document.getElementById("conversation") || {textContent: ""}).textContent,
    call: (document.getElementById("call-output") || {textContent: ""}).textContent,
    sampleText: (document.getElementById("sample") || {innerText: ""}).innerText,
    checked: document.body.dataset.checked || "",
    errors: document.getElementById("errors").textContent,
    height: document.documentElement.scrollHeight
  };
  var out = document.createElement("pre");
  out.id = "test-facts";
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
})();
</script>
"""


def chromium(*arguments: str, profile: Path) -> str:
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
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout


def page_facts(page: str, folder: Path) -> dict[str, Any]:
    """The facts the test's script reads from ``page`` as Chromium renders it (a copy in ``folder``)."""
    probe = folder / "page-with-test-script.html"
    probe.write_text(page.replace("</body>", _READ_FACTS + "</body>", 1), encoding="utf-8")
    dom = chromium("--window-size=1280,1000", "--dump-dom", probe.as_uri(), profile=folder / "profile")
    found = re.search(r'<pre id="test-facts">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the test's script did not run"
    facts: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return facts


def screenshot(page_path: Path, height: int, out: Path, profile: Path) -> None:
    chromium(f"--window-size=1280,{height}", f"--screenshot={out}", page_path.as_uri(), profile=profile)
    assert out.stat().st_size > 10_000, f"{out} is almost empty"


_CACHE: dict[str, tuple[FormatDescription, Evidence]] = {}


def _analysed(
    corpus_dir: Path, name: str, tools: list[dict[str, Any]] | None = None
) -> tuple[FormatDescription, Evidence]:
    key = name + ("+tools" if tools else "")
    if key not in _CACHE:
        template = load_template(str(corpus_dir / f"{name}.jinja"))
        description = analyze(template)
        _CACHE[key] = description, inspect(template, description, tools=tools)
    return _CACHE[key]


@pytest.fixture(scope="module")
def rendered(corpus_dir: Path, screenshot_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``rendered(name, tools=None)``: (report, evidence, facts) of the page, with its screenshot written."""
    pages: dict[str, tuple[AuditReport, Evidence, dict[str, Any]]] = {}

    def render(name: str, tools: list[dict[str, Any]] | None = None) -> tuple[AuditReport, Evidence, dict[str, Any]]:
        key = name + ("-with-tools" if tools else "")
        if key not in pages:
            description, evidence = _analysed(corpus_dir, name, tools)
            page = render_html(description, evidence)
            path = screenshot_dir / f"{key}.html"
            path.write_text(page, encoding="utf-8")
            work = tmp_path_factory.mktemp(key)
            facts = page_facts(page, work)
            screenshot(path, facts["height"], screenshot_dir / f"{key}.png", work / "profile")
            pages[key] = audit(description, evidence), evidence, facts
        return pages[key]

    yield render


def _pairs(facts: dict[str, Any], report: AuditReport) -> list[tuple[dict[str, Any], Finding]]:
    """Each finding shown (grouped by topic on the page) with the report's finding its id numbers."""
    pairs = [(shown, report.findings[int(shown["id"].removeprefix("finding-"))]) for shown in facts["findings"]]
    assert sorted(shown["id"] for shown, _ in pairs) == sorted(f"finding-{n}" for n in range(len(report.findings)))
    return pairs


# --------------------------------------------------------------------------- the page loads


@needs_chromium
@pytest.mark.parametrize(
    "name, expected",
    [
        ("Qwen-Qwen3-0.6B", ["<tool_call>", "</tool_call>", "<|im_end|>", "<tool_response>"]),
        ("moonshotai-Kimi-K2", ["<|tool_calls_section_begin|>", "<|tool_call_argument_begin|>", "<|im_end|>"]),
        ("mistralai-Mistral-Nemo-Instruct-2407", ["[TOOL_CALLS][", '[TOOL_RESULTS]{"content":']),
        ("google-gemma-2-2b-it", ["<start_of_turn>model", "<end_of_turn>"]),
    ],
)
def test_page_loads_and_highlights_the_markers(
    name: str, expected: list[str], corpus_dir: Path, tmp_path: Path
) -> None:
    description, evidence = _analysed(corpus_dir, name)
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(description, evidence), encoding="utf-8")
    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    checked = re.search(r'data-checked="(\d+)/(\d+)"', dom)
    assert checked, "the page's script did not run"
    good, total = map(int, checked.groups())
    assert good == total > 0
    assert re.search(r'<pre id="errors"></pre>', dom), "script errors on the page"
    marked = {html.unescape(m) for m in re.findall(r'data-text="([^"]*)"', dom)}
    for marker in expected:
        assert marker in marked, f"{marker!r} is not highlighted"


# --------------------------------------------------------------------------- what a reader sees


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_the_summary_comes_first_and_says_what_matters(name: str, rendered: Any) -> None:
    report, evidence, facts = rendered(name)
    assert facts["sections"][0] == "summary"
    assert facts["tops"][0] < min(facts["tops"][1:]), "the summary is not above every other section"
    summary = facts["summary"]
    for heading in ("Tool-call format", "Tool definitions", "What tools cost", "How a call is written", "How a result"):
        assert heading in summary
    assert report.format in summary
    section = report.tool_section
    if evidence.tools.written:
        assert f"{section.fixed_chars} characters" in summary and f"{section.per_tool_chars} characters" in summary
    else:
        assert "tool definitions do not change the prompt" in summary
    counts = {s: sum(f.severity == s for f in report.findings) for s in SEVERITIES}
    for severity, count in counts.items():
        assert re.search(rf"\b{count} {severity}", summary), (severity, count)
    # Every risk and warning is linked from the summary, to the finding it names.
    linked = sorted(link["href"] for link in facts["summaryLinks"])
    wanted = sorted(f"#finding-{n}" for n, f in enumerate(report.findings) if f.severity in ("risk", "warning"))
    assert linked == wanted
    assert all(link["target"] and "finding" in link["target"] for link in facts["summaryLinks"])
    assert facts["errors"] == "" and facts["checked"]


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_each_finding_has_its_severity_in_words(name: str, rendered: Any) -> None:
    report, _, facts = rendered(name)
    assert len(facts["findings"]) == len(report.findings)
    for shown, finding in _pairs(facts, report):
        # The word, not only the colour (the icon beside it is hidden from screen readers).
        assert shown["severity"].split()[-1] == finding.severity, shown
        assert finding.severity in shown["classes"].split()
        assert shown["message"] == finding.message
    backgrounds = {f["severity"].split()[-1]: f["background"] for f in facts["findings"]}
    assert len(set(backgrounds.values())) == len(backgrounds), "severities are not told apart by colour too"
    for severity in SEVERITIES:
        assert severity in facts["severityLegend"]


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_probe_values_are_marked_and_explained(name: str, rendered: Any) -> None:
    _, evidence, facts = rendered(name)
    unexplained = facts["unexplained"]
    for probe in evidence.probes:
        if probe.text.isdigit():
            assert not re.search(rf"(?<!\d){probe.text}(?!\d)", unexplained), probe
        else:
            assert probe.text not in unexplained, probe
    # The probe values all have "qz" or a sibling in them: none shows outside a mark.
    assert "qz" not in unexplained.lower()
    meanings = {p.text: p.meaning for p in evidence.probes}
    shown = [p for p in facts["probes"] if not p["inLegend"]]
    legend = {p["text"] for p in facts["probes"] if p["inLegend"]}
    for probe in shown:
        assert probe["meaning"] == meanings[probe["text"]], probe
        assert probe["title"] == f"probe value: {probe['meaning']}"
        assert probe["text"] in legend, f"{probe['text']!r} is not in the legend"
    if evidence.tools.written:  # the tool definitions hold tool names, descriptions and argument names
        assert len({p["text"] for p in shown}) >= 3


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_evidence_is_the_real_render_cut_between_markers(name: str, rendered: Any) -> None:
    report, _, facts = rendered(name)
    tail_of_marker = re.compile(r"^[^\s<>\[\]]{1,64}(?:>|\])")  # opens with the end of a marker: m_start|>user
    head_of_marker = re.compile(r"(?:<|\[)[^\s<>\[\]]{1,64}$")  # ends inside one: <|im_sta
    excerpts = 0
    for shown, finding in _pairs(facts, report):
        # Marked, not rewritten: the excerpt reads exactly as the finding's evidence.
        assert shown["evidence"] == [e for e in (finding.evidence, finding.other_evidence) if e]
        for text in shown["evidence"]:
            for part in text.split(" ... "):
                if finding.topic in ("requirements",) or not part.strip():
                    continue  # a template's message, not a render
                excerpts += 1
                assert not tail_of_marker.search(part), (finding.code, part[:80])
                assert not head_of_marker.search(part), (finding.code, part[-80:])
        if shown["evidence"]:
            assert shown["label"].startswith("Evidence")
    assert excerpts >= 1


@needs_chromium
@pytest.mark.parametrize("name", PAGES)
def test_the_answer_and_call_comparison_is_captioned(name: str, rendered: Any) -> None:
    _, evidence, facts = rendered(name)
    caption = facts["caption"]
    assert "plain answer" in caption and f"call to {evidence.sample.called}" in caption
    assert "Green" in caption and "other side does not have" in caption and "same on both sides" in caption
    assert facts["captionSwatch"], "the caption shows no swatch of the colour it explains"
    assert facts["columns"] == ["Answer", "Call"]


@needs_chromium
def test_the_sample_conversation_uses_the_tools_given(rendered: Any) -> None:
    _, evidence, facts = rendered("Qwen-Qwen3-0.6B", tools=CALLER_TOOLS)
    assert evidence.sample.tools == ("search_flights", "book_hotel")
    assert "search_flights" in facts["conversation"] and "book_hotel" in facts["conversation"]
    assert "get_weather" not in facts["conversation"] + facts["call"]
    # The call is to the first tool, with example arguments for its required properties.
    assert '"name": "search_flights"' in facts["call"]
    assert '"origin": "example origin"' in facts["call"] and '"cabin": "economy"' in facts["call"]
    assert "search_flights" in facts["summary"]
    assert "Tools offered: search_flights, book_hotel" in facts["sampleText"]
    # Without --tools, the weather sample.
    _, plain, plain_facts = rendered("Qwen-Qwen3-0.6B")
    assert plain.sample.tools == ("get_weather",) and "get_weather" in plain_facts["conversation"]


def test_every_corpus_page_marks_its_probe_values(corpus_paths: list[Path]) -> None:
    """Without a browser, over all 70 templates: outside the probe marks and their legend, the page's
    text holds no probe value."""
    assert len(corpus_paths) == 70
    for path in corpus_paths:
        template = load_template(str(path))
        description = analyze(template)
        evidence = inspect(template, description)
        body = render_html(description, evidence).split("<body>", 1)[1]
        body = re.sub(r"<script>.*?</script>|<table class='legend' id='probe-legend'>.*?</table>", "", body, flags=re.S)
        text = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r'<span class="probe"[^>]*>[^<]*</span>', "", body)))
        for probe in evidence.probes:
            shown = re.search(rf"(?<!\d){probe.text}(?!\d)", text) if probe.text.isdigit() else probe.text in text
            assert not shown, (path.stem, probe)
        assert "qz" not in text.lower(), path.stem


@needs_chromium
def test_a_template_without_calls_gets_a_question_and_an_answer(rendered: Any) -> None:
    _, evidence, facts = rendered("google-gemma-2-2b-it")
    assert not evidence.sample.calls_tool
    assert "writes no tool calls" in facts["sampleText"]
    assert "It is sunny in Paris." in facts["conversation"]
    assert "does not render" not in facts["conversation"]
