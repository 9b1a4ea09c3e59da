"""The audit: what a template does that a deployment should know about, each finding with evidence.

``audit`` formats a format description and the evidence gathered beside it (``analysis.inspect``)
as findings: where tool definitions go and what they cost, what the template requires or refuses,
whether the prompt depends on the current date, whether jinja2 and minijinja render it alike, how
tool results are linked back to calls, and how earlier turns are written back. It renders nothing
itself. Every finding carries ``evidence``: the render excerpt (or the template's own message) it
rests on. Whitespace is left as is; making it visible is the caller's job (``render_text`` does it
with ``analyzer.backends.summary.visible``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from analyzer.backends.summary import visible
from analyzer.description import CallIds, Calls, Capabilities, FormatDescription, Reasoning, Results
from analyzer.evidence import ContextUse, EngineAgreement, Evidence, History, ToolDefinitions, ToolPlacement
from analyzer.runtime.shape import ID_FORMS
from analyzer.tokenizer import TOKENS_UNKNOWN

Style = Callable[..., str]

ID_FORM_NAMES = {name: form.label for name, form in ID_FORMS.items()}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the audit found. ``severity``: "info", "warning" (an input the template refuses or
    changes) or "risk" (a way a correct-looking deployment goes wrong)."""

    topic: str  # "tools" | "requirements" | "nondeterminism" | "engines" | "results" | "history"
    code: str  # short stable identifier, e.g. "id-form-refused"
    severity: str
    message: str
    evidence: str = ""
    # A second excerpt where two renders are compared (minijinja's side when engines differ).
    other_evidence: str = ""


@dataclass(frozen=True, slots=True)
class ToolSection:
    """What tool definitions add to the prompt, in characters (and tokens with the model's tokenizer)."""

    placements: tuple[ToolPlacement, ...]
    fixed_chars: int | None  # the section's cost with no tool in it (None when it could not be measured)
    per_tool_chars: int | None
    descriptions: str  # "written" | "dropped" | "none given" | "unknown"
    tokens: str = TOKENS_UNKNOWN


@dataclass(frozen=True, slots=True)
class AuditReport:
    template: str
    engine: str
    format: str
    tool_section: ToolSection
    findings: tuple[Finding, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = json.loads(json.dumps(asdict(self), ensure_ascii=False))
        return plain

    def by_topic(self, topic: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.topic == topic)


def audit(description: FormatDescription, evidence: Evidence) -> AuditReport:
    findings: list[Finding] = []
    section = _tool_section(description, evidence.tools, findings)
    _requirements(description, findings)
    _nondeterminism(evidence.context, findings)
    _engines(evidence.engines, findings)
    _results(description, findings)
    _history(description, evidence.history, findings)
    _stops(description, findings)
    return AuditReport(description.template.name, evidence.engine, description.format, section, tuple(findings))


# --------------------------------------------------------------------------- 1. tool definitions

_FORM_TEXT = {
    "as given": "tool definitions are written as the JSON they are given in",
    "re-indented": "tool definitions are written as JSON, re-indented",
    "function only": "tool definitions are written as JSON of the function alone (no type wrapper)",
    "rewritten": "tool definitions are rewritten into another form (not the JSON given)",
}


def _tool_section(description: FormatDescription, tools: ToolDefinitions, findings: list[Finding]) -> ToolSection:
    tokens = TOKENS_UNKNOWN
    if tools.fixed_tokens is not None and tools.per_tool_tokens is not None:
        tokens = f"{tools.fixed_tokens} fixed, {tools.per_tool_tokens} per tool (tokenizer.json)"
    section = ToolSection(tools.placements, tools.fixed_chars, tools.per_tool_chars, tools.descriptions, tokens)
    for p in tools.placements:
        severity = "warning" if p.placement in ("error", "not written") else "info"
        message = {
            "error": f"with a [{p.opening}] conversation the prompt does not render with tools",
            "not written": f"with a [{p.opening}] conversation tool definitions do not change the prompt",
        }.get(
            p.placement,
            f"with a [{p.opening}] conversation tool definitions go in "
            + ("their own block" if p.placement == "own block" else f"the {p.placement}"),
        )
        findings.append(Finding("tools", "tool-placement", severity, message, p.evidence))
    if tools.per_tool_chars is not None:
        findings.append(
            Finding(
                "tools",
                "tool-cost",
                "info",
                f"tool section: {tools.fixed_chars} characters fixed, {tools.per_tool_chars} "
                f"characters per tool; tokens: {tokens}",
            )
        )
    if description.format == "none":
        findings.append(
            Finding(
                "tools",
                "no-tool-format",
                "warning",
                "the template writes no tool calls"
                + ("" if tools.written else " nor tool definitions")
                + ": tools can still be offered through the prompt (template-analyzer prompted)",
            )
        )
    if tools.form in _FORM_TEXT:
        findings.append(Finding("tools", "tool-form", "info", _FORM_TEXT[tools.form], tools.form_evidence))
    if tools.descriptions == "dropped":
        findings.append(
            Finding(
                "tools",
                "descriptions-dropped",
                "warning",
                "tool descriptions are not written into the prompt: the model never sees them",
                tools.descriptions_evidence,
            )
        )
    elif tools.descriptions == "written":
        findings.append(Finding("tools", "descriptions-written", "info", "tool descriptions are written as given"))
    return section


# --------------------------------------------------------------------------- 2. requirements and refusals

_CAPABILITY_TEXT = {
    "system_role": "a system message",
    "parallel_calls": "parallel tool calls (two calls in one assistant turn)",
    "object_arguments": "call arguments given as a JSON object",
    "string_arguments": "call arguments given as a JSON string",
    "content_none": "content None on an assistant message with tool calls",
}


def _requirements(description: FormatDescription, findings: list[Finding]) -> None:
    caps: Capabilities = description.capabilities
    for key, what in _CAPABILITY_TEXT.items():
        cap = getattr(caps, key)
        if cap.status == "yes":
            findings.append(Finding("requirements", f"{key.replace('_', '-')}-accepted", "info", f"accepts {what}"))
            continue
        verb = {
            "refused": "refuses",
            "error": "fails on",
            "dropped": "drops",
            "differs": "changes",
            "no": "does not take",
            "unknown": "gave no evidence about",
        }.get(cap.status, cap.status)
        findings.append(
            Finding(
                "requirements",
                f"{key.replace('_', '-')}-{cap.status}",
                "info" if cap.status in ("no", "unknown") else "warning",
                f"{verb} {what}",
                cap.message,
            )
        )
    ids = description.calls.ids if isinstance(description.calls, Calls) else None
    if isinstance(ids, CallIds):
        accepted = [ID_FORM_NAMES.get(f, f) for f in ids.accepted]
        if ids.refused and ids.accepted:
            findings.append(
                Finding(
                    "requirements",
                    "id-form-required",
                    "warning",
                    f"requires {' or '.join(accepted)}",
                    ids.refused[0][1],
                )
            )
        for form, message in ids.refused:
            findings.append(
                Finding(
                    "requirements", "id-form-refused", "warning", f"refuses {ID_FORM_NAMES.get(form, form)}", message
                )
            )
        if not ids.refused:
            findings.append(
                Finding(
                    "requirements", "id-form-accepted", "info", f"accepts {', '.join(accepted)}; ids are {ids.written}"
                )
            )


# --------------------------------------------------------------------------- 3. nondeterminism


def _nondeterminism(context: ContextUse, findings: list[Finding]) -> None:
    if context.date == "unknown":
        findings.append(
            Finding(
                "nondeterminism",
                "unrendered",
                "info",
                "the prompt does not render with tools; the date check was skipped",
                context.date_evidence,
            )
        )
        return
    if context.date == "uses the date":
        findings.append(
            Finding(
                "nondeterminism",
                "uses-current-date",
                "risk",
                "uses the current date (strftime_now): the prompt changes from day to day, "
                "so prompt caches and reproducible evaluations break at midnight",
                context.date_evidence,
            )
        )
    else:
        findings.append(
            Finding("nondeterminism", "deterministic", "info", "deterministic: the prompt does not depend on the clock")
        )
    for variable in context.variables:
        findings.append(
            Finding(
                "nondeterminism",
                "context-variable",
                "info",
                f"the prompt reads the context variable {variable.name!r} (a default is written when it is unset)",
                variable.evidence,
            )
        )


# --------------------------------------------------------------------------- 4. engine disagreement


def _engines(engines: EngineAgreement, findings: list[Finding]) -> None:
    for case in engines.cases:
        if case.outcome == "differ":
            findings.append(
                Finding(
                    "engines",
                    "engines-differ",
                    "risk",
                    f"{case.label}: jinja2 and minijinja first differ at character {case.position}",
                    case.jinja2,
                    case.minijinja,
                )
            )
        elif case.outcome == "both raise":
            findings.append(
                Finding(
                    "engines",
                    "engines-both-raise",
                    "info",
                    f"{case.label}: both engines raise, with different messages",
                    case.jinja2,
                    case.minijinja,
                )
            )
        elif case.outcome == "only jinja2 raises":
            findings.append(
                Finding("engines", "engine-raises", "risk", f"{case.label}: only jinja2 raises", case.jinja2)
            )
        elif case.outcome == "only minijinja raises":
            findings.append(
                Finding("engines", "engine-raises", "risk", f"{case.label}: only minijinja raises", case.minijinja)
            )
    if engines.agree:
        findings.append(
            Finding(
                "engines", "engines-agree", "info", "jinja2 and minijinja render the audited conversations identically"
            )
        )


# --------------------------------------------------------------------------- 5. tool results


def _results(description: FormatDescription, findings: list[Finding]) -> None:
    r = description.results
    if not isinstance(r, Results):
        findings.append(Finding("results", "results-unknown", "info", f"tool results: unknown ({r.reason})"))
        return
    findings.append(
        Finding(
            "results",
            "results-form",
            "info",
            f"tool results are written as {r.rendered_as}; linked by {r.linked_by}; "
            f"id written: {'yes' if r.carries_id else 'no'}; "
            f"name written: {'yes' if r.carries_name else 'no'}; JSON content: {r.json_content}",
        )
    )
    if r.linked_by == "order":
        findings.append(
            Finding(
                "results",
                "linked-by-order",
                "risk",
                "results are linked to calls by order only: results returned out of call order "
                "will be attributed to the wrong call",
            )
        )
    if r.json_content == "quoted":
        findings.append(
            Finding(
                "results", "json-quoted", "info", "JSON tool results are escaped into a string before they are written"
            )
        )


# --------------------------------------------------------------------------- 6. history

_REASONING_TEXT = {
    "kept": ("info", "reasoning of earlier turns is kept in history"),
    "dropped on earlier turns": (
        "warning",
        "reasoning is dropped from earlier turns once a later user turn follows (only the last turn keeps it)",
    ),
    "not written": (
        "warning",
        "the reasoning of an answer turn is not written back, on earlier turns or on the last one",
    ),
}


def _history(description: FormatDescription, history: History, findings: list[Finding]) -> None:
    """How an earlier assistant turn is written back: reasoning kept or dropped once a later user turn
    follows, content beside calls, and whether roles must alternate."""
    if history.reasoning in _REASONING_TEXT:
        severity, text = _REASONING_TEXT[history.reasoning]
        findings.append(Finding("history", "reasoning-on-later-turns", severity, text, history.reasoning_evidence))
    calls = description.calls
    if isinstance(calls, Calls):
        kept = calls.content_before_calls
        if kept == "dropped":
            findings.append(
                Finding(
                    "history",
                    "content-dropped",
                    "warning",
                    "content written beside tool calls is dropped from history",
                    history.call_turn,
                )
            )
        elif kept == "calls dropped":
            findings.append(
                Finding(
                    "history",
                    "calls-dropped",
                    "risk",
                    "an assistant turn with content and tool calls loses its calls in history",
                    history.call_turn,
                )
            )
        elif kept == "kept":
            findings.append(
                Finding(
                    "history", "content-kept", "info", "content beside tool calls is kept in history", history.call_turn
                )
            )
        elif kept == "separate turn":
            findings.append(
                Finding(
                    "history",
                    "content-separate-turn",
                    "warning",
                    "content beside tool calls is written as an assistant message of its own, closed by the "
                    "turn's stop: a model that writes content first stops before its calls",
                    history.call_turn,
                )
            )
        if calls.section_close_from > 1:
            findings.append(
                Finding(
                    "history",
                    "closer-after-several-calls",
                    "warning",
                    f"the calls section is closed ({calls.section_close!r}) only after "
                    f"{calls.section_close_from} or more calls, never after one; the parser takes a closer "
                    "after one call too, the grammar asks exactly what the template writes",
                    calls.section_close,
                )
            )
        arguments = "a JSON string" if description.input_form.arguments_as_string else "a JSON object"
        findings.append(
            Finding(
                "history",
                "argument-form",
                "info",
                f"call arguments are written back from {arguments}",
                history.call_turn,
            )
        )
    if history.consecutive_users == "raises":
        findings.append(
            Finding(
                "requirements",
                "alternating-roles",
                "warning",
                "requires user and assistant turns to alternate (two user turns in a row raise)",
                history.users_evidence,
            )
        )
    elif history.consecutive_users == "second dropped":
        findings.append(
            Finding(
                "requirements",
                "consecutive-user-dropped",
                "warning",
                "of two user turns in a row, the second is not written",
                history.users_evidence,
            )
        )


# --------------------------------------------------------------------------- text


# --------------------------------------------------------------------------- 6. where a server stops


def _stops(description: FormatDescription, findings: list[Finding]) -> None:
    """The strings a server stops on, and any of them the model also writes inside its turn."""
    stops = description.turn.stop
    if not stops:
        findings.append(Finding("stops", "no-stop", "warning", "no render shows where the model's turn ends"))
        return
    findings.append(Finding("stops", "stops", "info", f"a server stops on {', '.join(map(repr, stops))}"))
    reasoning = description.reasoning
    if isinstance(reasoning, Reasoning):
        for stop in stops:
            if stop in reasoning.close:
                findings.append(
                    Finding(
                        "stops",
                        "stop-inside-reasoning-close",
                        "risk",
                        f"the reasoning block closes with {reasoning.close!r}, which holds the stop {stop!r}: a "
                        "server stopping there ends every reply after its reasoning; the renders show no other "
                        "end of an answer",
                        reasoning.close,
                    )
                )


def _plain(text: str, **_: object) -> str:
    return text


_SEVERITY_COLOURS = {"info": "white", "warning": "yellow", "risk": "red"}
TOPICS = (
    ("tools", "tool definitions"),
    ("requirements", "requirements and refusals"),
    ("nondeterminism", "nondeterminism"),
    ("engines", "engine agreement"),
    ("results", "tool results"),
    ("history", "written back into history"),
    ("stops", "where a server stops"),
)


def render_text(report: AuditReport, style: Style = _plain) -> str:
    """Lines for a terminal. ``style`` is ``click.style`` for colour, or plain."""
    lines = [
        style(report.template, bold=True) + f"  format: {style(report.format, fg='green', bold=True)}"
        f"  (engine {report.engine})"
    ]
    s = report.tool_section
    fixed = "unknown" if s.fixed_chars is None else f"{s.fixed_chars} chars"
    per = "unknown" if s.per_tool_chars is None else f"{s.per_tool_chars} chars"
    lines.append(
        f"  tool section cost  fixed {fixed}, per tool {per}; descriptions {s.descriptions}; tokens: {s.tokens}"
    )
    for topic, title in TOPICS:
        items = report.by_topic(topic)
        if not items:
            continue
        lines.append(style(f"  {title}", bold=True))
        for f in items:
            tag = style(f"[{f.severity}]", fg=_SEVERITY_COLOURS.get(f.severity, "white"))
            lines.append(f"    {tag} {f.message}")
            if f.evidence and f.other_evidence:
                lines.append("        jinja2:    " + style(visible(f.evidence), fg="cyan"))
                lines.append("        minijinja: " + style(visible(f.other_evidence), fg="cyan"))
            elif f.evidence:
                lines.append("        " + style(visible(f.evidence), fg="cyan"))
    return "\n".join(lines)


__all__ = ["AuditReport", "Finding", "ToolPlacement", "ToolSection", "audit", "render_text"]
