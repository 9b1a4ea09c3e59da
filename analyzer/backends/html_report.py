"""The audit as one self-contained HTML page (no network), written for a reader who has never seen the
tool: a summary first (the format, where tool definitions go and what they cost, how a call and a
result are written, how many risks and warnings, each linked), then how to read the page (severity,
highlighted markers, probe values), the sample conversation with each marker highlighted and labelled
where the analysis places it, the model's output for an answer and for a call side by side with their
differences marked and explained, and the findings by topic, each with a written severity and its
evidence. Everything shown comes from the description and the evidence; nothing is rendered here.

Evidence excerpts are the template's real renders of the analysis's conversations, so they hold its
probe values (``Uqz user asks``): each is marked and explained (``Evidence.probes``), not replaced.

Every ``<pre>`` opens with a line break, which HTML drops, so that an excerpt that starts with one keeps it.

A small script on the page checks that every highlight holds the marker text it is labelled with and
records the result on ``<body data-checked=...>``, and any script error in ``#errors``, so a headless
browser test can read both from the DOM.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from analyzer.backends.audit import TOPICS, AuditReport, Finding, audit
from analyzer.description import Calls, FormatDescription, Results
from analyzer.evidence import Evidence, Mark, Probe, Sample
from analyzer.tokenizer import TOKENS_UNKNOWN

SEVERITIES = ("risk", "warning", "info")
# (icon, what the severity means): the icon and the word are both shown, so colour is never the only cue.
SEVERITY_TEXT = {
    "risk": ("\u2716", "a way a deployment that looks right goes wrong"),
    "warning": ("\u26a0", "an input the template refuses, drops or changes"),
    "info": ("\u2139", "how the template behaves; nothing to fix"),
}

# What each topic of findings is about, for a reader who does not know the audit.
_TOPIC_TEXT = {
    "tools": "where the tools offered to the model are written into the prompt, how, and what they cost",
    "requirements": "what the template accepts in a request, and what it refuses",
    "nondeterminism": "whether the prompt changes while the conversation does not (the date, variables)",
    "engines": "whether the two template engines, jinja2 and minijinja, render the same text",
    "results": "how a tool's result is written back and matched to its call",
    "history": "how earlier turns are written back into the prompt",
    "stops": "the text that ends the model's turn, where a server stops generating",
}

# What a finding's evidence is, by its code: a reader should know which render an excerpt comes from.
_HISTORY_TURN = "an assistant turn with content and a call, as the prompt writes it back"
_EVIDENCE_TEXT = {
    "tool-placement": "the prompt with tools, around the tool definitions (or the template's message)",
    "tool-form": "the first tool's definition as the prompt writes it",
    "descriptions-dropped": "the prompt with tools, around the tool definitions",
    "unrendered": "the template's message",
    "uses-current-date": "the prompt rendered on another day (a second clock), from where it changes",
    "engines-both-raise": "each engine's message",
    "engine-raises": "the engine's message",
    "reasoning-on-later-turns": "an answer with reasoning followed by another user turn, as the prompt writes it",
    "content-dropped": _HISTORY_TURN,
    "calls-dropped": _HISTORY_TURN,
    "content-kept": _HISTORY_TURN,
    "content-separate-turn": _HISTORY_TURN,
    "argument-form": _HISTORY_TURN,
    "closer-after-several-calls": "the closer of the calls section",
    "stop-inside-reasoning-close": "the closer of the reasoning block",
    "alternating-roles": "the template's message for two user turns in a row",
    "consecutive-user-dropped": "two user turns in a row, as the prompt writes them",
}

_FORMAT_TEXT = {
    "json": "each call is a JSON object holding the tool's name and its arguments",
    "tag-json": "each call is the tool's name between markers, then its arguments as JSON",
    "tag-kv": "each call is the tool's name between markers, then each argument as a name and a value",
    "python": "each call is written like a Python function call, name(argument=value)",
    "none": "the template writes no tool calls",
    "unknown": "the analysis could not tell how calls are written",
}
_PLACEMENT_TEXT = {
    "system turn": "they go in the system turn",
    "user turn": "they go in the user turn",
    "own block": "they go in a block of their own",
    "not written": "they are not written into the prompt",
    "error": "the prompt does not render with tools",
}
_OPENING_TEXT = {"system, user": "a system message", "user": "a user message"}
_DESCRIPTIONS_TEXT = {
    "written": "Tool descriptions are written as given.",
    "dropped": "Tool descriptions are dropped: the model never sees them.",
    "none given": "The tools measured had no descriptions.",
    "unknown": "Whether tool descriptions are written is not known.",
}

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1.5em; color: #1d1d1f; }
h1 { margin-bottom: .2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
h3 { margin: 1.2em 0 .4em; font-size: 1.05em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: .7em .9em; border-radius: 4px;
      margin: .3em 0; font-size: 13px; }
code { background: #f0f0f0; padding: 0 .25em; border-radius: 3px; font-size: 13px; white-space: pre-wrap; }
.lede { color: #444; margin-top: 0; }
#summary { background: #f4f8ff; border: 1px solid #c9d8f2; border-radius: 6px; padding: .4em 1.2em 1em; }
#summary h2 { border: 0; margin-top: .6em; }
#summary dl { display: grid; grid-template-columns: 13em 1fr; gap: .45em 1em; margin: 0; }
#summary dt { font-weight: 600; } #summary dd { margin: 0; }
#summary ul { margin: .3em 0; padding-left: 0; list-style: none; } #summary li { margin: .2em 0; }
#summary dd p { margin: 0; } #summary pre { margin: .3em 0 .2em; }
mark.marker { background: #ffe58a; border-bottom: 2px solid #c90; }
mark.marker::after { content: attr(data-label); font: 10px system-ui, sans-serif; color: #835; vertical-align: super;
                     margin-left: 2px; }
span.probe { background: #dcecff; border-bottom: 1px dotted #2a5db0; cursor: help; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.columns h3 { margin: 0 0 .2em; }
figure { margin: .4em 0; } figcaption { color: #333; margin-bottom: .4em; }
ins { background: #c8f7c5; text-decoration: none; border-bottom: 2px solid #3a3; }
.severity { display: inline-block; min-width: 5.2em; padding: 0 .45em; border-radius: 3px; font-weight: 600;
            font-size: 13px; margin-right: .5em; }
.severity.risk { background: #b3261e; color: #fff; } .severity.warning { background: #ffd24d; color: #3b2f00; }
.severity.info { background: #e3e9f3; color: #223; }
ul.findings { list-style: none; padding-left: 0; }
li.finding { margin: .35em 0; padding: .2em 0 .2em .6em; border-left: 4px solid #e3e9f3; }
li.finding.risk { border-left-color: #b3261e; } li.finding.warning { border-left-color: #e0a800; }
.evidence-label { color: #555; font-size: 13px; margin-top: .3em; }
p.topic { color: #555; margin: -.3em 0 .3em; }
table.legend { border-collapse: collapse; margin: .4em 0; }
table.legend td, table.legend th { border: 1px solid #ddd; padding: .15em .6em; text-align: left; vertical-align: top; }
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


class _Probes:
    """Marks the probe values in a text and remembers which ones the page shows, for its legend."""

    def __init__(self, probes: Iterable[Probe]) -> None:
        self.meaning: dict[str, str] = {}
        for probe in probes:
            self.meaning.setdefault(probe.text, probe.meaning)
        # Longest first, so that an id holding a shorter id is marked whole; a number only as a whole number.
        texts = sorted((t for t in self.meaning if t), key=len, reverse=True)
        alternatives = [rf"(?<!\d){re.escape(t)}(?!\d)" if t.isdigit() else re.escape(t) for t in texts]
        self.pattern = re.compile("|".join(alternatives)) if alternatives else None
        self.shown: dict[str, str] = {}

    def in_order(self) -> list[str]:
        """The probe values the page showed, in the order the evidence lists them (system message first)."""
        return [text for text in self.meaning if text in self.shown]

    def mark(self, text: str) -> str:
        """``text`` as HTML, each probe value in it marked with what it stands for."""
        if self.pattern is None:
            return html.escape(text)
        out, at = [], 0
        for found in self.pattern.finditer(text):
            value = found.group()
            meaning = self.meaning[value]
            self.shown[value] = meaning
            out.append(html.escape(text[at : found.start()]))
            out.append(_probe_span(value, meaning))
            at = found.end()
        out.append(html.escape(text[at:]))
        return "".join(out)


def _probe_span(value: str, meaning: str) -> str:
    explained = html.escape(meaning)
    return (
        f'<span class="probe" title="probe value: {explained}" data-meaning="{explained}">{html.escape(value)}</span>'
    )


def _highlight(text: str, marks: tuple[Mark, ...], probes: _Probes) -> str:
    out, at = [], 0
    for mark in marks:
        piece = text[mark.start : mark.end]
        out.append(probes.mark(text[at : mark.start]))
        out.append(
            f'<mark class="marker" data-label="{html.escape(mark.label)}" '
            f'data-text="{html.escape(piece)}">{html.escape(piece)}</mark>'
        )
        at = mark.end
    out.append(probes.mark(text[at:]))
    return "".join(out)


def _changes(text: str, spans: tuple[tuple[int, int], ...], probes: _Probes) -> str:
    """``text`` with what the other output does not have marked; spans apart by whitespace only are
    marked as one, so a changed sentence reads as one change and not as one per word."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and not text[merged[-1][1] : start].strip():
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    out, at = [], 0
    for start, end in merged:
        out.append(probes.mark(text[at:start]) + f"<ins>{probes.mark(text[start:end])}</ins>")
        at = end
    out.append(probes.mark(text[at:]))
    return "".join(out)


def _severity(severity: str) -> str:
    icon, _ = SEVERITY_TEXT.get(severity, ("", ""))
    word = html.escape(severity)
    return f'<span class="severity {word}"><span aria-hidden="true">{icon}</span> {word}</span>'


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


# --------------------------------------------------------------------------- summary


def _summary(
    description: FormatDescription,
    evidence: Evidence,
    report: AuditReport,
    numbered: list[tuple[int, Finding]],
    probes: _Probes,
) -> str:
    rows: list[tuple[str, str]] = []
    rows.append(
        (
            "Tool-call format",
            f"<code>{html.escape(description.format)}</code>: "
            + html.escape(_FORMAT_TEXT.get(description.format, description.format)),
        )
    )
    rows.append(("Tool definitions", _placements(report)))
    section = report.tool_section
    if not evidence.tools.written:
        failed = any(p.placement == "error" for p in section.placements)
        where = "where the prompt renders with tools, " if failed else ""
        cost = f"Nothing: {where}tool definitions do not change the prompt."
    elif section.per_tool_chars is not None:
        cost = (
            f"{section.fixed_chars} characters for the tool section itself, plus {section.per_tool_chars} "
            "characters for each tool. "
            + (
                "Tokens are counted only with the model's own tokenizer.json beside the template; there is none here."
                if section.tokens == TOKENS_UNKNOWN
                else f"In tokens: {html.escape(section.tokens)}."
            )
        )
    else:
        cost = "Not measured: the prompt did not render with and without tools."
    described = _DESCRIPTIONS_TEXT.get(section.descriptions, "") if evidence.tools.written else ""
    rows.append(("What tools cost", f"{cost} {described}"))
    sample = evidence.sample
    if isinstance(description.calls, Calls):
        rows.append(
            (
                "How a call is written",
                f"The model's output for a call to <code>{html.escape(sample.called)}</code> "
                f"(<a href='#outputs'>compared with an answer below</a>):"
                f"<pre class='example'>\n{probes.mark(sample.call)}</pre>",
            )
        )
    else:
        rows.append(("How a call is written", "The template writes no tool calls."))
    rows.append(("How a result is written", _results(description, sample, probes)))
    stops = description.turn.stop
    rows.append(
        (
            "Where the model's turn ends",
            "A server stops generating on " + ", ".join(f"<code>{html.escape(s)}</code>" for s in stops) + "."
            if stops
            else "No render shows where the model's turn ends.",
        )
    )
    rows.append(("Findings", _counts(numbered)))
    body = "".join(f"<dt>{title}</dt><dd>{text}</dd>" for title, text in rows)
    return (
        '<section id="summary" aria-labelledby="summary-title"><h2 id="summary-title">Summary</h2>'
        f"<dl>{body}</dl></section>"
    )


def _placements(report: AuditReport) -> str:
    placements = report.tool_section.placements
    if not placements:
        return "Not analysed."
    if len({p.placement for p in placements}) == 1:
        where = _PLACEMENT_TEXT.get(placements[0].placement, placements[0].placement)
        return _sentence(f"{where}, whether the conversation opens with a system message or with a user message.")
    return _sentence(
        "; ".join(
            f"when the conversation opens with {_OPENING_TEXT.get(p.opening, p.opening)}, "
            + _PLACEMENT_TEXT.get(p.placement, p.placement)
            for p in placements
        )
        + "."
    )


def _results(description: FormatDescription, sample: Sample, probes: _Probes) -> str:
    results = description.results
    if not isinstance(results, Results):
        return html.escape(f"Not known ({results.reason}).")
    linked = {"id": "by the call's id", "name": "by the tool's name", "order": "by their order only"}
    text = (
        f"As {html.escape(_article(results.rendered_as))}, linked to their calls "
        f"{linked.get(results.linked_by, results.linked_by)}"
        f"; the call's id is {'' if results.carries_id else 'not '}written, the tool's name is "
        f"{'' if results.carries_name else 'not '}written"
    )
    example = _result_example(sample)
    return text + (
        f". In the sample conversation:<pre class='example'>\n{probes.mark(example)}</pre>" if example else "."
    )


def _article(rendered_as: str) -> str:
    return {"user turn": "a user turn", "own turn": "a turn of their own"}.get(rendered_as, rendered_as)


def _result_example(sample: Sample) -> str:
    """The sample conversation's text from its first result marker to its last."""
    spots = [m for m in sample.marks if m.label == "result marker"]
    if not spots:
        return ""
    return sample.conversation[spots[0].start : spots[-1].end]


def _counts(numbered: list[tuple[int, Finding]]) -> str:
    by_severity = {s: [(n, f) for n, f in numbered if f.severity == s] for s in SEVERITIES}
    counts = ", ".join(
        f"{len(by_severity[s])} {s}" + ("s" if s != "info" and len(by_severity[s]) != 1 else "") for s in SEVERITIES
    )
    items = [
        f'<li>{_severity(f.severity)}<a href="#finding-{n}">{html.escape(f.message)}</a></li>'
        for s in ("risk", "warning")
        for n, f in by_severity[s]
    ]
    listed = f"<ul id='summary-findings'>{''.join(items)}</ul>" if items else "<p>No risk and no warning.</p>"
    return f"<p>{counts} (<a href='#findings-title'>all {len(numbered)} findings</a>)</p>{listed}"


# --------------------------------------------------------------------------- how to read


def _how_to_read(probes: _Probes) -> str:
    severity = "".join(
        f"<tr><td>{_severity(s)}</td><td>{html.escape(SEVERITY_TEXT[s][1])}</td></tr>" for s in SEVERITIES
    )
    probe_rows = "".join(
        f"<tr><td>{_probe_span(value, probes.meaning[value])}</td><td>{html.escape(probes.meaning[value])}</td></tr>"
        for value in probes.in_order()
    )
    probe_part = (
        "<p>To find where a template writes each part of a conversation, the analysis fills its test conversations "
        "with made-up <b>probe values</b> that no template contains. The excerpts on this page are the "
        "template's real renders of those conversations, so they hold these values; each is marked like "
        f"{_probe_span(*next(iter(probes.shown.items())))} (hover for its meaning). The sample conversation "
        "uses readable values instead, apart from its call id, which takes a form the template accepts. "
        f"The probe values on this page:</p><table class='legend' id='probe-legend'><tr><th>probe value</th>"
        f"<th>stands for</th></tr>{probe_rows}</table>"
        if probe_rows
        else ""
    )
    return (
        '<section id="how-to-read" aria-labelledby="how-title"><h2 id="how-title">How to read this page</h2>'
        f"<p>Each finding has a severity, written out and coloured:</p><table class='legend' id='severity-legend'>"
        f"{severity}</table>"
        "<p><mark class='marker' data-label='its role' data-text='Markers'>Markers</mark> are the special texts the "
        "template writes around turns, calls and results; in the sample conversation each is highlighted where "
        "the analysis places it, with its role written beside it.</p>"
        "<p>Under a finding, its <b>evidence</b>: an excerpt of the template's render that shows it, or the "
        "message the template raised. A long excerpt leaves its middle out, written <code> ... </code>.</p>"
        f"{probe_part}</section>"
    )


# --------------------------------------------------------------------------- findings


def _evidence_label(finding: Finding, evidence: Evidence) -> str:
    if finding.code == "context-variable":
        return f"the prompt with the variable set to {evidence.context.variable_value!r}"
    if finding.code in _EVIDENCE_TEXT:
        return _EVIDENCE_TEXT[finding.code]
    if finding.topic == "requirements":
        refusal = finding.code.endswith(("-refused", "-error", "-required"))
        return "the template's own message" if refusal else "what the renders showed"
    return ""


def _finding(n: int, finding: Finding, evidence_record: Evidence, probes: _Probes) -> str:
    label = _evidence_label(finding, evidence_record)
    label = f"Evidence: {probes.mark(label)}" if label else "Evidence"
    evidence = ""
    if finding.evidence and finding.other_evidence:
        evidence = (
            "<div class='evidence-label'>Evidence: the two engines' renders, from a little before their first "
            "difference</div><div class='columns'>"
            f"<div><h3>jinja2</h3><pre class='evidence' id='evidence-{n}'>\n{probes.mark(finding.evidence)}</pre></div>"
            f"<div><h3>minijinja</h3><pre class='evidence' id='evidence-{n}-other'>\n"
            f"{probes.mark(finding.other_evidence)}</pre></div></div>"
        )
    elif finding.evidence:
        evidence = (
            f"<div class='evidence-label'>{label}</div>"
            f"<pre class='evidence' id='evidence-{n}'>\n{probes.mark(finding.evidence)}</pre>"
        )
    return (
        f'<li class="finding {html.escape(finding.severity)}" id="finding-{n}">{_severity(finding.severity)}'
        f'<span class="message">{html.escape(finding.message)}</span>{evidence}</li>'
    )


def _findings(numbered: list[tuple[int, Finding]], evidence: Evidence, probes: _Probes) -> str:
    parts = []
    known = {topic for topic, _ in TOPICS}
    groups = [*TOPICS, *((f.topic, f.topic) for _, f in numbered if f.topic not in known)]
    done: set[str] = set()
    for topic, title in groups:
        items = [_finding(n, f, evidence, probes) for n, f in numbered if f.topic == topic]
        if not items or topic in done:
            continue
        done.add(topic)
        about = f"<p class='topic'>{html.escape(_TOPIC_TEXT[topic])}</p>" if topic in _TOPIC_TEXT else ""
        parts.append(f"<h3>{html.escape(title.capitalize())}</h3>{about}<ul class='findings'>{''.join(items)}</ul>")
    return (
        '<section id="findings" aria-labelledby="findings-title"><h2 id="findings-title">Findings</h2>'
        + "".join(parts)
        + "</section>"
    )


# --------------------------------------------------------------------------- the page


def render_html(description: FormatDescription, evidence: Evidence) -> str:
    report = audit(description, evidence)
    probes = _Probes(evidence.probes)
    sample = evidence.sample
    numbered = list(enumerate(report.findings))
    # Sections that mark probe values are built before the legend that lists the ones they showed.
    conversation = _highlight(sample.conversation, sample.marks, probes)
    left = _changes(sample.answer, sample.answer_changes, probes)
    right = _changes(sample.call, sample.call_changes, probes)
    findings = _findings(numbered, evidence, probes)
    summary = _summary(description, evidence, report, numbered, probes)
    tools = ", ".join(f"<code>{html.escape(t)}</code>" for t in sample.tools)
    if not evidence.tools.written:
        tools += " (the template does not write them into the prompt)"
    called = f"<code>{html.escape(sample.called)}</code>"
    name = html.escape(description.template.name)
    story = (
        f"The user asks, the assistant calls {called}, the tool's result comes back, and the prompt ends where "
        "the model writes next."
        if sample.calls_tool
        else "The template writes no tool calls, so the sample is a question and the assistant's answer."
    )
    no_calls = (
        ""
        if isinstance(description.calls, Calls)
        else " The template writes no tool calls: the right side is what it makes of an assistant message that has one."
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Audit of {name}</title><style>{_STYLE}</style></head>
<body>
<h1>Audit of {name}</h1>
<p class="lede">template-analyzer rendered this chat template with test conversations (engine
{html.escape(report.engine)}) and read from the renders how it writes tool definitions, tool calls and
their results, and what a deployment should watch for.</p>
{summary}
{_how_to_read(probes)}
<section id="sample" aria-labelledby="sample-title"><h2 id="sample-title">A sample conversation</h2>
<p>{story} Tools offered: {tools}. This is the template's render of that conversation, with the markers the
analysis found highlighted.</p>
<pre id="conversation">
{conversation}</pre>
</section>
<section id="outputs" aria-labelledby="outputs-title">
<h2 id="outputs-title">What the model writes: an answer, and a call</h2>
<figure id="output-diff">
<figcaption>The text the model is expected to write after the prompt, for a plain answer (left) and for a
call to {called} (right), as the template writes each back, compared marker by marker and word by word.
<ins>Green</ins>: text that the other side does not have (what a call writes instead of an answer, and the
reverse); unmarked text is the same on both sides.{no_calls}</figcaption>
<div class="columns"><div><h3>Answer</h3><pre id="answer-output">
{left}</pre></div>
<div><h3>Call</h3><pre id="call-output">
{right}</pre></div></div>
</figure>
</section>
{findings}
<pre id="errors"></pre>
<script>{_CHECK}</script>
</body></html>
"""
