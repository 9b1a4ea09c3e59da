"""The audit as one self-contained HTML page (no network): the sample conversation of the evidence
with each marker highlighted and labelled where the analysis places it, the model's output for an
answer and for a call side by side with their differences marked, and the findings, each linked to
its evidence. Everything shown comes from the description and the evidence; nothing is rendered here.

A small script on the page checks that every highlight holds the marker text it is labelled with and
records the result on ``<body data-checked=...>``, and any script error in ``#errors``, so a headless
browser test can read both from the DOM.
"""

from __future__ import annotations

import html

from analyzer.backends.audit import audit
from analyzer.description import FormatDescription
from analyzer.evidence import Evidence, Mark

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


def _highlight(text: str, marks: tuple[Mark, ...]) -> str:
    out, at = [], 0
    for mark in marks:
        piece = text[mark.start : mark.end]
        out.append(html.escape(text[at : mark.start]))
        out.append(
            f'<mark class="marker" data-label="{html.escape(mark.label)}" '
            f'data-text="{html.escape(piece)}">{html.escape(piece)}</mark>'
        )
        at = mark.end
    out.append(html.escape(text[at:]))
    return "".join(out)


def _changes(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """``text`` with what the other output does not have marked."""
    out, at = [], 0
    for start, end in spans:
        out.append(html.escape(text[at:start]) + f"<ins>{html.escape(text[start:end])}</ins>")
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)


def render_html(description: FormatDescription, evidence: Evidence) -> str:
    report = audit(description, evidence)
    sample = evidence.sample
    left, right = _changes(sample.answer, sample.answer_changes), _changes(sample.call, sample.call_changes)
    findings = []
    for n, finding in enumerate(report.findings):
        excerpt = f'<pre id="evidence-{n}">{html.escape(finding.evidence)}</pre>' if finding.evidence else ""
        link = f' <a href="#evidence-{n}">evidence</a>' if finding.evidence else ""
        findings.append(
            f'<li class="{html.escape(finding.severity)}" id="finding-{n}">'
            f"[{html.escape(finding.topic)}] {html.escape(finding.message)}{link}{excerpt}</li>"
        )
    title = html.escape(f"{description.template.name}: {description.format}")
    intro = (
        f"Audit by template-analyzer (engine {html.escape(report.engine)}). "
        "Highlighted: the markers the analysis found, where its description places them."
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{_STYLE}</style></head>
<body>
<h1>{title}</h1>
<p>{intro}</p>
<h2>A conversation with a tool call and its result</h2>
<pre id="conversation">{_highlight(sample.conversation, sample.marks)}</pre>
<h2>What the model writes: an answer, and a call</h2>
<div class="columns"><pre id="answer-output">{left}</pre><pre id="call-output">{right}</pre></div>
<h2>Findings</h2>
<ul id="findings">{"".join(findings)}</ul>
<pre id="errors"></pre>
<script>{_CHECK}</script>
</body></html>
"""
