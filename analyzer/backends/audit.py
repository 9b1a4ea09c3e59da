"""The audit: what a template does that a deployment should know about, each finding with evidence.

``audit`` reads a format description and renders a few more conversations through the template:
where tool definitions go and what they cost (in characters), what the template requires or refuses,
whether the prompt depends on the current date, whether jinja2 and minijinja render it alike, and
how tool results are linked back to calls. Every finding carries ``evidence``: a short excerpt of the
render (or the template's own message) it comes from. Whitespace is left as is; making it visible is
the caller's job (``render_text`` does it with ``analyzer.diff.visible``).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
from pathlib import Path
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import minijinja

from analyzer.analysis import KNOWN_VARIABLES, bound_context, compile_as_analysed
from analyzer.description import Capabilities, CallIds, Calls, FormatDescription, Results, Unknown
from analyzer.diff import common_prefix_len, visible
from analyzer.errors import RenderError
from analyzer.render import variants as v
from analyzer.render.engines import (
    DEFAULT_BOS, DEFAULT_ENGINE, CompiledTemplate, compile_template,
)
from analyzer.template import Template
from analyzer.tokenizer import TOKENS_UNKNOWN, tokenizer_beside

Style = Callable[..., str]

CONTEXT = 60  # characters of evidence either side of a finding's position
ENGINE_CONTEXT = 40  # characters of each engine's render around their first difference
# A second clock for strftime_now, different from the engines' fixed one in every field.
OTHER_NOW = _dt.datetime(2031, 11, 27, 21, 47, 53)
VARIABLE_SENTINEL = "Zqz caller value"

ID_FORM_NAMES = {"openai": "OpenAI-style ids (call_...)", "alnum9": "9-character alphanumeric ids"}


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
class ToolPlacement:
    opening: str  # "system, user" | "user"
    placement: str  # "system turn" | "user turn" | "own block" | "not written" | "error"
    evidence: str


@dataclass(frozen=True, slots=True)
class ToolSection:
    """What tool definitions add to the prompt, in characters."""

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
        return json.loads(json.dumps(asdict(self), ensure_ascii=False))

    def by_topic(self, topic: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.topic == topic)


# --------------------------------------------------------------------------- helpers


def excerpt(text: str, start: int, end: int | None = None, width: int = CONTEXT) -> str:
    """``width`` characters either side of ``text[start:end]`` (of ``start`` when ``end`` is None),
    the middle cut short when it is long."""
    end = start if end is None else end
    middle = text[start:end]
    if len(middle) > 2 * width:
        middle = middle[:width] + " ... " + middle[-width:]
    return text[max(0, start - width):start] + middle + text[end:end + width]


def _render(compiled: CompiledTemplate, messages: list[dict[str, Any]], tools: list | None,
            extra: dict[str, Any], generation_prompt: bool = True) -> str | RenderError:
    try:
        return compiled.render(messages, tools=tools, add_generation_prompt=generation_prompt, extra=extra)
    except RenderError as exc:
        return exc


# --------------------------------------------------------------------------- 1. tool definitions


def _inserted_block(without: str, with_tools: str, marker: str) -> tuple[int, int]:
    """Where the tools' text sits in ``with_tools``: the inserted block holding ``marker`` (a tool's
    name), else the longest inserted block."""
    matcher = difflib.SequenceMatcher(None, without, with_tools, autojunk=False)
    blocks = [(j1, j2) for op, _i1, _i2, j1, j2 in matcher.get_opcodes() if op in ("insert", "replace")]
    if not blocks:
        return (0, 0)
    for j1, j2 in blocks:
        if marker and marker in with_tools[j1:j2]:
            return (j1, j2)
    # The marker may straddle two blocks (the matcher re-used a few characters): span them all.
    if marker and marker in with_tools:
        at = with_tools.find(marker)
        near = [b for b in blocks if b[0] <= at + len(marker) and b[1] >= at - 200]
        if near:
            return (min(b[0] for b in near), max(b[1] for b in near))
    return max(blocks, key=lambda b: b[1] - b[0])


def _turn_header(render: str, sentinel: str, end: str | None) -> str:
    """The text a turn opens with before ``sentinel``: from the previous turn end (or the start)."""
    at = render.find(sentinel)
    if at < 0:
        return ""
    start = render.rfind(end, 0, at) + len(end) if end and end in render[:at] else 0
    return render[start:at].lstrip()


def _placement(with_tools: str, start: int, stop: int, end_marker: str | None, system_header: str,
               user_header: str, bos: str) -> str:
    turn_start = 0
    if end_marker:
        found = with_tools.rfind(end_marker, 0, start)
        if found >= 0:
            turn_start = found + len(end_marker)
    before = with_tools[turn_start:start]
    # The nearest conversation text before the section, inside its turn, says whose turn it is.
    sys_at, user_at = before.rfind(v.SYSTEM_TEXT), before.rfind(v.USER_TEXT)
    if sys_at >= 0 or user_at >= 0:
        return "system turn" if sys_at > user_at else "user turn"
    # Else the turn's header: which known header the turn opens with (the section itself may open a
    # turn of its own, as templates that add a system turn for tools do).
    head = (before + with_tools[start:stop]).lstrip()
    if bos and head.startswith(bos):
        head = head[len(bos):]
    sys_h = system_header[len(bos):] if bos and system_header.startswith(bos) else system_header
    user_h = user_header[len(bos):] if bos and user_header.startswith(bos) else user_header
    shared = common_prefix_len(sys_h, user_h)
    sys_match = common_prefix_len(head, sys_h) if sys_h else 0
    user_match = common_prefix_len(head, user_h) if user_h else 0
    if max(sys_match, user_match) > shared and head:
        return "system turn" if sys_match > user_match else "user turn"
    after = with_tools[start:].lstrip()
    return "own block" if not after.startswith((v.SYSTEM_TEXT, v.USER_TEXT)) else (
        "system turn" if after.startswith(v.SYSTEM_TEXT) else "user turn")


def _tool_section(template: Template, description: FormatDescription, compiled: CompiledTemplate,
                  tools: list | None, findings: list[Finding]) -> ToolSection:
    form = v.Spelling.from_description(description)
    extra = bound_context(description)
    given = tools if tools else v.tools(form)
    first = given[0]
    second = given[1] if len(given) > 1 else given[0]
    name = str(first.get("function", first).get("name", "")) if isinstance(first, dict) else ""
    end_marker = description.turn.end if isinstance(description.turn.end, str) and description.turn.end else None
    bos = template.bos_token if template.bos_token is not None else DEFAULT_BOS

    sys_user = [v.system(), v.user()]
    headers_render = _render(compiled, sys_user, None, extra)
    system_header = user_header = ""
    if isinstance(headers_render, str):
        system_header = _turn_header(headers_render, v.SYSTEM_TEXT, end_marker)
        user_header = _turn_header(headers_render, v.USER_TEXT, end_marker)

    placements: list[ToolPlacement] = []
    descriptions = "unknown"
    for label, opening in (("system, user", sys_user), ("user", [v.user()])):
        without = _render(compiled, opening, None, extra)
        with_tools = _render(compiled, opening, given, extra)
        if isinstance(without, RenderError) or isinstance(with_tools, RenderError):
            error = without if isinstance(without, RenderError) else with_tools
            placements.append(ToolPlacement(label, "error", getattr(error, "message", str(error))))
            continue
        if without == with_tools:
            placements.append(ToolPlacement(label, "not written", ""))
            continue
        start, stop = _inserted_block(without, with_tools, name)
        where = _placement(with_tools, start, stop, end_marker, system_header, user_header, bos)
        placements.append(ToolPlacement(label, where, excerpt(with_tools, start, stop)))
        if descriptions == "unknown":
            descriptions = _descriptions(given, with_tools)

    cost_opening = sys_user if description.capabilities.system_role.status == "yes" else [v.user()]
    lengths = [_render(compiled, cost_opening, t, extra) for t in (None, [first], [first, second])]
    fixed = per_tool = None
    tokens = TOKENS_UNKNOWN
    if all(isinstance(r, str) for r in lengths):
        n0, n1, n2 = (len(r) for r in lengths)  # type: ignore[arg-type]
        per_tool = n2 - n1
        fixed = (n1 - n0) - per_tool
        tokenizer = tokenizer_beside(template)
        if tokenizer is not None:
            t0, t1, t2 = (len(tokenizer.encode(r, add_special_tokens=False).ids) for r in lengths)  # type: ignore[arg-type]
            tokens = f"{(t1 - t0) - (t2 - t1)} fixed, {t2 - t1} per tool (tokenizer.json)"
    section = ToolSection(tuple(placements), fixed, per_tool, descriptions, tokens)

    for p in section.placements:
        severity = "warning" if p.placement in ("error", "not written") else "info"
        message = {
            "error": f"with a [{p.opening}] conversation the prompt does not render with tools",
            "not written": f"with a [{p.opening}] conversation tool definitions do not change the prompt",
        }.get(p.placement, f"with a [{p.opening}] conversation tool definitions go in "
            + ("their own block" if p.placement == "own block" else f"the {p.placement}"))
        findings.append(Finding("tools", "tool-placement", severity, message, p.evidence))
    if per_tool is not None:
        findings.append(Finding("tools", "tool-cost", "info",
                                f"tool section: {fixed} characters fixed, {per_tool} characters per tool; "
                                f"tokens: {section.tokens}"))
    written = any(p.placement not in ("error", "not written") for p in section.placements)
    if description.format == "none":
        findings.append(Finding("tools", "no-tool-format", "warning",
                                "the template writes no tool calls" + ("" if written else " nor tool definitions")
                                + ": tools can still be offered through the prompt (template-analyzer prompted)"))
    with_tools = _render(compiled, cost_opening, [first], extra)
    if written and isinstance(with_tools, str):
        form_name, where = _tool_json_form(first, with_tools)
        message = {"as given": "tool definitions are written as the JSON they are given in",
                   "re-indented": "tool definitions are written as JSON, re-indented",
                   "function only": "tool definitions are written as JSON of the function alone (no type wrapper)",
                   "rewritten": "tool definitions are rewritten into another form (not the JSON given)"}[form_name]
        findings.append(Finding("tools", "tool-form", "info", message,
                                excerpt(with_tools, where, where + 40) if where >= 0 else ""))
    if descriptions == "dropped":
        findings.append(Finding("tools", "descriptions-dropped", "warning",
                                "tool descriptions are not written into the prompt: the model never sees them",
                                placements[0].evidence if placements else ""))
    elif descriptions == "written":
        findings.append(Finding("tools", "descriptions-written", "info", "tool descriptions are written as given"))
    return section


def _tool_json_form(tool: dict[str, Any], render: str) -> tuple[str, int]:
    """How one tool definition is written: the JSON as given, re-indented, the function object alone,
    or rewritten (none of those); with where it starts in the render (-1 when rewritten)."""
    function = tool.get("function", tool) if isinstance(tool, dict) else tool
    for form, value in (("as given", tool), ("function only", function)):
        for text in (json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False, separators=(",", ":"))):
            if text in render:
                return form, render.find(text)
        for indent in (2, 4, 1, "\t"):
            text = json.dumps(value, ensure_ascii=False, indent=indent)
            if text in render:
                return "re-indented", render.find(text)
    return "rewritten", -1


def _descriptions(tools: list, render: str) -> str:
    texts = []
    for t in tools:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("description"), str) and fn["description"].strip():
            texts.append(fn["description"])
    if not texts:
        return "none given"
    return "written" if any(text in render for text in texts) else "dropped"


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
        verb = {"refused": "refuses", "error": "fails on", "dropped": "drops", "differs": "changes",
                "no": "does not take", "unknown": "gave no evidence about"}.get(cap.status, cap.status)
        findings.append(Finding("requirements", f"{key.replace('_', '-')}-{cap.status}",
                                "info" if cap.status in ("no", "unknown") else "warning",
                                f"{verb} {what}", cap.message))
    ids = description.calls.ids if isinstance(description.calls, Calls) else None
    if isinstance(ids, CallIds):
        accepted = [ID_FORM_NAMES.get(f, f) for f in ids.accepted]
        if ids.refused and ids.accepted:
            findings.append(Finding("requirements", "id-form-required", "warning",
                                    f"requires {' or '.join(accepted)}", ids.refused[0][1]))
        for form, message in ids.refused:
            findings.append(Finding("requirements", "id-form-refused", "warning",
                                    f"refuses {ID_FORM_NAMES.get(form, form)}", message))
        if not ids.refused:
            findings.append(Finding("requirements", "id-form-accepted", "info",
                                    f"accepts {', '.join(accepted)}; ids are {ids.written}"))


# --------------------------------------------------------------------------- 3. nondeterminism


def _first_difference(a: str, b: str) -> int:
    return common_prefix_len(a, b)


def _own_variables(template: Template) -> list[str]:
    try:
        names = minijinja.Environment().undeclared_variables_in_str(template.source)
    except Exception:  # noqa: BLE001 - a template minijinja cannot parse has no variables to report
        return []
    return sorted(n for n in names if n not in KNOWN_VARIABLES and not n.startswith("_"))


def _nondeterminism(template: Template, description: FormatDescription, compiled: CompiledTemplate,
                    findings: list[Finding]) -> None:
    extra = bound_context(description)
    opening = [v.user()]
    tools = v.tools(v.Spelling.from_description(description))
    base = _render(compiled, opening, tools, extra)
    if isinstance(base, RenderError):
        findings.append(Finding("nondeterminism", "unrendered", "info",
                                "the prompt does not render with tools; the date check was skipped", base.message))
        return
    other = _render(compiled, opening, tools, {**extra, "strftime_now": lambda fmt: OTHER_NOW.strftime(fmt)})
    if isinstance(other, str) and other != base:
        at = _first_difference(base, other)
        findings.append(Finding("nondeterminism", "uses-current-date", "risk",
                                "uses the current date (strftime_now): the prompt changes from day to day, "
                                "so prompt caches and reproducible evaluations break at midnight",
                                excerpt(other, at)))
    else:
        findings.append(Finding("nondeterminism", "deterministic", "info",
                                "deterministic: the prompt does not depend on the clock"))
    for name in _own_variables(template):
        changed = _render(compiled, opening, tools, {**extra, name: VARIABLE_SENTINEL})
        if isinstance(changed, str) and changed != base:
            at = changed.find(VARIABLE_SENTINEL)
            at = at if at >= 0 else _first_difference(base, changed)
            findings.append(Finding("nondeterminism", "context-variable", "info",
                                    f"the prompt reads the context variable {name!r} (a default is written when "
                                    f"it is unset)", excerpt(changed, at)))


# --------------------------------------------------------------------------- 4. engine disagreement


def _conversations(description: FormatDescription) -> list[tuple[str, list[dict[str, Any]], bool, bool]]:
    """(label, messages, with tools, generation prompt): the conversations the analysis reads."""
    form = v.Spelling.from_description(description)
    opening = v.opening(form)
    one = v.assistant(form, calls=(v.CALL1,))
    return [
        ("prompt with tools", opening, True, True),
        ("one call and its result", [*opening, one, v.tool_result(v.CALL1, v.RESULT_TEXT, form)], True, True),
        ("two parallel calls", [*opening, v.assistant(form, calls=(v.CALL1, v.CALL2))], True, False),
    ]


def _engines(template: Template, description: FormatDescription, findings: list[Finding]) -> None:
    compiled: dict[str, CompiledTemplate | RenderError] = {}
    for name in ("jinja2", "minijinja"):
        try:
            compiled[name] = compile_template(template, name)
        except Exception as exc:  # noqa: BLE001 - a syntax error in one engine is the finding
            compiled[name] = RenderError(getattr(exc, "message", str(exc)))
    extra = bound_context(description)
    tools = v.tools(v.Spelling.from_description(description))
    all_same = True
    for label, messages, with_tools, prompt in _conversations(description):
        out: dict[str, str | RenderError] = {}
        for name, c in compiled.items():
            out[name] = c if isinstance(c, RenderError) else _render(c, messages, tools if with_tools else None,
                                                                    extra, prompt)
        j, m = out["jinja2"], out["minijinja"]
        if isinstance(j, str) and isinstance(m, str):
            if j == m:
                continue
            all_same = False
            at = _first_difference(j, m)
            findings.append(Finding("engines", "engines-differ", "risk",
                                    f"{label}: jinja2 and minijinja first differ at character {at}",
                                    excerpt(j, at, width=ENGINE_CONTEXT), excerpt(m, at, width=ENGINE_CONTEXT)))
        elif isinstance(j, RenderError) and isinstance(m, RenderError):
            if j.message != m.message:
                all_same = False
                findings.append(Finding("engines", "engines-both-raise", "info",
                                        f"{label}: both engines raise, with different messages",
                                        j.message, m.message))
        else:
            all_same = False
            raised, error = ("jinja2", j) if isinstance(j, RenderError) else ("minijinja", m)
            findings.append(Finding("engines", "engine-raises", "risk",
                                    f"{label}: only {raised} raises", error.message))  # type: ignore[union-attr]
    if all_same:
        findings.append(Finding("engines", "engines-agree", "info",
                                "jinja2 and minijinja render the audited conversations identically"))


# --------------------------------------------------------------------------- 5. tool results


def _results(description: FormatDescription, findings: list[Finding]) -> None:
    r = description.results
    if not isinstance(r, Results):
        findings.append(Finding("results", "results-unknown", "info", f"tool results: unknown ({r.reason})"))
        return
    findings.append(Finding("results", "results-form", "info",
                            f"tool results are written as {r.rendered_as}; linked by {r.linked_by}; "
                            f"id written: {'yes' if r.carries_id else 'no'}; "
                            f"name written: {'yes' if r.carries_name else 'no'}; JSON content: {r.json_content}"))
    if r.linked_by == "order":
        findings.append(Finding("results", "linked-by-order", "risk",
                                "results are linked to calls by order only: results returned out of call order "
                                "will be attributed to the wrong call"))
    if r.json_content == "quoted":
        findings.append(Finding("results", "json-quoted", "info",
                                "JSON tool results are escaped into a string before they are written"))


# --------------------------------------------------------------------------- 6. history


def _history(description: FormatDescription, compiled: CompiledTemplate, findings: list[Finding]) -> None:
    """How an earlier assistant turn is written back: reasoning kept or dropped once a later user turn
    follows, content beside calls, and whether roles must alternate."""
    extra = bound_context(description)
    reasoning = description.reasoning
    if not isinstance(reasoning, Unknown) and reasoning.field:
        key = reasoning.field
        turn = {"role": "assistant", "content": v.CONTENT_TEXT, key: v.REASONING_TEXT}
        later = _render(compiled, [v.user(), turn, v.user(v.USER_TEXT2)], None, extra)
        last = _render(compiled, [v.user(), turn], None, extra, generation_prompt=False)
        if isinstance(later, str) and isinstance(last, str):
            shown = v.REASONING_TEXT if v.REASONING_TEXT in later else v.CONTENT_TEXT
            anchor = max(later.find(shown), 0)
            if v.REASONING_TEXT in later:
                severity, text = "info", "reasoning of earlier turns is kept in history"
            elif v.REASONING_TEXT in last:
                severity, text = "warning", ("reasoning is dropped from earlier turns once a later user turn "
                                             "follows (only the last turn keeps it)")
            else:
                severity, text = "warning", ("the reasoning of an answer turn is not written back, on earlier turns or "
                                             "on the last one")
            findings.append(Finding("history", "reasoning-on-later-turns", severity, text,
                                    excerpt(later, anchor, anchor + len(shown))))
    calls = description.calls
    if isinstance(calls, Calls):
        kept = calls.content_before_calls
        if kept == "dropped":
            findings.append(Finding("history", "content-dropped", "warning",
                                    "content written beside tool calls is dropped from history"))
        elif kept == "calls dropped":
            findings.append(Finding("history", "calls-dropped", "risk",
                                    "an assistant turn with content and tool calls loses its calls in history"))
        elif kept == "kept":
            findings.append(Finding("history", "content-kept", "info", "content beside tool calls is kept in history"))
        arguments = "a JSON string" if description.input_form.arguments_as_string else "a JSON object"
        findings.append(Finding("history", "argument-form", "info",
                                f"call arguments are written back from {arguments}"))
    twice = _render(compiled, [v.user(), v.user(v.USER_TEXT2)], None, extra)
    if isinstance(twice, RenderError):
        findings.append(Finding("requirements", "alternating-roles", "warning",
                                "requires user and assistant turns to alternate (two user turns in a row raise)",
                                getattr(twice, "message", str(twice))))
    elif isinstance(twice, str) and v.USER_TEXT2 not in twice:
        findings.append(Finding("requirements", "consecutive-user-dropped", "warning",
                                "of two user turns in a row, the second is not written"))


# --------------------------------------------------------------------------- entry points


def audit(template: Template, description: FormatDescription, *, tools: list | None = None,
          engine: str = DEFAULT_ENGINE) -> AuditReport:
    compiled = compile_as_analysed(template, description, engine)
    findings: list[Finding] = []
    section = _tool_section(template, description, compiled, tools, findings)
    _requirements(description, findings)
    _nondeterminism(template, description, compiled, findings)
    _engines(template, description, findings)
    _results(description, findings)
    _history(description, compiled, findings)
    return AuditReport(description.template.name, compiled.engine, description.format, section, tuple(findings))


def _plain(text: str, **_: object) -> str:
    return text


_SEVERITY_COLOURS = {"info": "white", "warning": "yellow", "risk": "red"}
_TOPICS = (("tools", "tool definitions"), ("requirements", "requirements and refusals"),
           ("nondeterminism", "nondeterminism"), ("engines", "engine agreement"), ("results", "tool results"),
           ("history", "written back into history"))


def render_text(report: AuditReport, style: Style = _plain) -> str:
    """Lines for a terminal. ``style`` is ``click.style`` for colour, or plain."""
    lines = [style(report.template, bold=True) + f"  format: {style(report.format, fg='green', bold=True)}"
             f"  (engine {report.engine})"]
    s = report.tool_section
    fixed = "unknown" if s.fixed_chars is None else f"{s.fixed_chars} chars"
    per = "unknown" if s.per_tool_chars is None else f"{s.per_tool_chars} chars"
    lines.append(f"  tool section cost  fixed {fixed}, per tool {per}; descriptions {s.descriptions};"
                 f" tokens: {s.tokens}")
    for topic, title in _TOPICS:
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


__all__ = ["AuditReport", "Finding", "ToolPlacement", "ToolSection", "audit", "excerpt", "render_text"]
