"""The audit as one self-contained HTML page (no network): the rendered conversation with every
detected marker highlighted and labelled, the model's output for an answer and for a call side by
side with their differences marked, and the findings, each linked to its evidence.

A small script on the page checks that every highlight holds the marker text it is labelled with and
records the result on ``<body data-checked=...>``, and any script error in ``#errors``, so a headless
browser test can read both from the DOM.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from typing import Any

from analyzer.backends.audit import AuditReport
from analyzer.description import Calls, FormatDescription, Reasoning, Results, Text
from analyzer.analysis import bound_context, compile_as_analysed
from analyzer.render.session import Session
from analyzer.template import Template

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
pre { white-space: pre-wrap; word-break: break-all; background: #f7f7f7; padding: .8em; border-radius: 4px; }
mark.marker { background: #ffe58a; border-bottom: 2px solid #c90; }
mark.marker::after { content: attr(data-label); font-size: 10px; color: #835; vertical-align: super; margin-left: 2px; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
ins { background: #c8f7c5; text-decoration: none; }
.risk { color: #a00; } .warning { color: #a60; } .info { color: #333; }
#errors { color: #a00; }
"""

_CHECK = """
window.addEventListener("error", function (e) {
  document.getElementById("errors").textContent += (e.message || "script error") + "\\n";
});
(function () {
  var marks = document.querySelectorAll("mark.marker"), good = 0;
  marks.forEach(function (m) { if (m.textContent === m.dataset.text) { good += 1; } });
  document.body.dataset.checked = good + "/" + marks.length;
})();
"""

SAMPLE_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a place",
    "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City"}},
                   "required": ["location"]}}}]


def _labelled_markers(description: FormatDescription) -> list[tuple[str, str]]:
    """(text, label) for every marker the description records, longest first."""
    found: list[tuple[str, str]] = []

    def add(text: str, label: str) -> None:
        if text.strip() and (text.strip(), label) not in found:
            found.append((text.strip(), label))

    turn = description.turn
    if isinstance(turn.generation_prompt, str):
        add(turn.generation_prompt, "generation prompt")
    for stop in turn.stop:
        add(stop, "stop")
    add(turn.content_open, "content open")
    add(turn.content_close, "content close")
    if isinstance(description.reasoning, Reasoning):
        add(description.reasoning.open, "reasoning open")
        add(description.reasoning.close, "reasoning close")
    calls = description.calls
    if isinstance(calls, Calls):
        add(calls.section_open, "calls open")
        add(calls.section_close, "calls close")
        for part in calls.call:
            if isinstance(part, Text):
                add(part.text, "call marker")
    results = description.results
    if isinstance(results, Results):
        for part in results.open + results.close:
            if isinstance(part, Text):
                add(part.text, "result marker")
    return sorted(found, key=lambda item: -len(item[0]))


def _highlight(text: str, markers: list[tuple[str, str]]) -> str:
    spans: list[tuple[int, int, str]] = []
    for marker, label in markers:
        start = text.find(marker)
        while start != -1:
            end = start + len(marker)
            if not any(s < end and start < e for s, e, _ in spans):
                spans.append((start, end, label))
            start = text.find(marker, end)
    out, at = [], 0
    for start, end, label in sorted(spans):
        out.append(html.escape(text[at:start]))
        piece = text[start:end]
        out.append(f'<mark class="marker" data-label="{html.escape(label)}" '
                   f'data-text="{html.escape(piece)}">{html.escape(piece)}</mark>')
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)


_TOKEN = re.compile(r"<[^<>\n]*>|\[[^\[\]\n]*\]|\w+|\s+|[^\w\s]")


def _diff_columns(left: str, right: str) -> tuple[str, str]:
    """Both texts with what the other does not have marked, compared marker by marker and word by word."""
    a_tokens, b_tokens = _TOKEN.findall(left), _TOKEN.findall(right)
    matcher = difflib.SequenceMatcher(a=a_tokens, b=b_tokens, autojunk=False)
    a_out, b_out = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a, b = html.escape("".join(a_tokens[i1:i2])), html.escape("".join(b_tokens[j1:j2]))
        if tag == "equal":
            a_out.append(a)
            b_out.append(b)
        else:
            a_out.append(f"<ins>{a}</ins>" if a else "")
            b_out.append(f"<ins>{b}</ins>" if b else "")
    return "".join(a_out), "".join(b_out)


def _renders(template: Template, description: FormatDescription) -> tuple[str, str, str]:
    """A conversation with a call and its result, and the model's output for an answer and for a call."""
    compiled = compile_as_analysed(template, description, description.template.engine)
    form = description.input_form
    extra = bound_context(description)
    arguments: Any = {"location": "Paris"}
    call = {"id": "Ab3De6Gh9", "type": "function", "function": {
        "name": "get_weather", "arguments": json.dumps(arguments) if form.arguments_as_string else arguments}}
    user = {"role": "user", "content": "What is the weather in Paris?"}
    answer = {"role": "assistant", "content": "It is sunny in Paris."}
    calling = {"role": "assistant", "content": form.content_with_calls, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "Ab3De6Gh9", "name": "get_weather", "content": "sunny, 21 C"}

    def render(messages: list, prompt: bool = False) -> str:
        try:
            return compiled.render(messages, tools=SAMPLE_TOOLS, add_generation_prompt=prompt, extra=extra)
        except Exception as exc:  # noqa: BLE001 - the page shows why a render is missing
            return f"(this conversation does not render: {exc})"

    prompt = render([user], prompt=True)
    conversation = render([user, calling, result], prompt=True)
    answer_render, call_render = render([user, answer]), render([user, calling])
    return (conversation, answer_render[Session.cut(prompt, answer_render):],
            call_render[Session.cut(prompt, call_render):])


def render_html(template: Template, description: FormatDescription, report: AuditReport) -> str:
    conversation, answer, call = _renders(template, description)
    markers = _labelled_markers(description)
    left, right = _diff_columns(answer, call)
    findings = []
    for n, finding in enumerate(report.findings):
        evidence = f'<pre id="evidence-{n}">{html.escape(finding.evidence)}</pre>' if finding.evidence else ""
        link = f' <a href="#evidence-{n}">evidence</a>' if finding.evidence else ""
        findings.append(f'<li class="{html.escape(finding.severity)}" id="finding-{n}">'
                        f"[{html.escape(finding.topic)}] {html.escape(finding.message)}{link}{evidence}</li>")
    title = html.escape(f"{description.template.name}: {description.format}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{_STYLE}</style></head>
<body>
<h1>{title}</h1>
<p>Audit by template-analyzer (engine {html.escape(report.engine)}). Highlighted: every marker the analysis found.</p>
<h2>A conversation with a tool call and its result</h2>
<pre id="conversation">{_highlight(conversation, markers)}</pre>
<h2>What the model writes: an answer, and a call</h2>
<div class="columns"><pre id="answer-output">{left}</pre><pre id="call-output">{right}</pre></div>
<h2>Findings</h2>
<ul id="findings">{"".join(findings)}</ul>
<pre id="errors"></pre>
<script>{_CHECK}</script>
</body></html>
"""
