"""A format description as text for people: markers with visible whitespace, colour optional."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from analyzer.description import (
    ArgumentForm,
    CallIds,
    Calls,
    Capabilities,
    Capability,
    Escaping,
    Field,
    FormatDescription,
    JsonArguments,
    JsonCall,
    KeyValueArguments,
    Pattern,
    Reasoning,
    Results,
    Text,
    ThinkingSwitch,
    Unknown,
)

Style = Callable[..., str]


def visible(text: str) -> str:
    """Show whitespace: markers are read by people, and a trailing newline matters."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def _plain(text: str, **_: object) -> str:
    return text


def summarize(d: FormatDescription, style: Style = _plain) -> str:
    """Lines of a readable summary. ``style`` is ``click.style`` for colour, or plain."""
    lines: list[str] = []

    def marker(text: str) -> str:
        return style(f"'{visible(text)}'", fg="cyan")

    def unknown(u: Unknown) -> str:
        return style(f"unknown ({u.reason})", fg="yellow")

    def show(value: object) -> str:
        if isinstance(value, Unknown):
            return unknown(value)
        if isinstance(value, str):
            return marker(value)
        return str(value)

    def pattern(parts: Pattern) -> str:
        out = []
        for p in parts:
            out.append(
                style(visible(p.text), fg="cyan")
                if isinstance(p, Text)
                else style("{" + p.name + "}", fg="magenta", bold=True)
            )
        return "".join(out)

    lines.append(
        style(d.template.name, bold=True) + f"  format: {style(d.format, fg='green', bold=True)}"
        f"  (engine {d.template.engine})"
    )
    t = d.turn
    lines.append(f"  generation prompt  {show(t.generation_prompt)}")
    if t.history_prefix:
        lines.append(f"  history prefix     {show(t.history_prefix)}")
    if t.content_open or t.content_close:
        lines.append(f"  content wrapper    {show(t.content_open)} ... {show(t.content_close)}")
    lines.append(f"  turn end           {show(t.end)}   stop: {', '.join(marker(s) for s in t.stop) or '-'}")
    if t.call_end:
        lines.append(f"  call turn end      {show(t.call_end)}")
    if t.final_end:
        lines.append(f"  last message end   {show(t.final_end)}")

    r = d.reasoning
    if isinstance(r, Reasoning):
        extra = " (opened by the prompt)" if r.forced_open else ""
        lines.append(f"  reasoning          {show(r.open)} ... {show(r.close)}  from '{r.field}'{extra}")
        if r.empty_block:
            lines.append(f"  empty reasoning    {show(r.empty_block)}")
        if isinstance(r.toggle, ThinkingSwitch):
            off = "unset" if r.toggle.off is None else json.dumps(r.toggle.off)
            lines.append(f"  thinking switch    {r.toggle.variable}: on {json.dumps(r.toggle.on)}, off {off}")
    else:
        lines.append(f"  reasoning          {show(r)}")

    c = d.calls
    if isinstance(c, Calls):
        lines.append(f"  calls section      {show(c.section_open)} ... {show(c.section_close)}")
        lines.append(f"  one call           {pattern(c.call)}")
        lines.append(f"  between calls      {show(c.separator)}")
        if isinstance(c.json_call, JsonCall):
            j = c.json_call
            name = "the only key" if j.name_is_key else ".".join(j.name_path)
            lines.append(
                f"  call JSON          name: {name}; arguments: {'.'.join(j.arguments_path) or 'value'}"
                f" ({j.arguments_encoding}); id: {'.'.join(j.id_path) if j.id_path else '-'};"
                f" keys in order: {', '.join(j.key_order)}"
            )
        a = c.arguments
        if isinstance(a, JsonArguments):
            lines.append(f"  arguments          one JSON value ({a.encoding})")
        elif isinstance(a, KeyValueArguments):
            escaping = a.string_escaping
            lines.append(
                f"  arguments          one by one, joined by {show(a.separator)};"
                f" string escaping: {show(escaping) if isinstance(escaping, Unknown) else escaping}"
            )
            for form in a.forms:
                lines.append(f"    {form.json_type:<8} {pattern(form.pattern)}  value syntax: {form.syntax}")
        else:
            lines.append(f"  arguments          {show(a)}")
        if not (isinstance(c.json_separators, Unknown) and isinstance(c.json_indent, Unknown)):
            lines.append(f"  JSON layout        {_json_layout(c.json_separators, c.json_indent, show)}")
        if isinstance(c.ids, CallIds):
            refused = "; ".join(f"{form} refused: {msg}" for form, msg in c.ids.refused)
            lines.append(
                f"  call ids           {c.ids.written}; accepted: {', '.join(c.ids.accepted) or '-'}"
                + (f"; {refused}" if refused else "")
            )
        lines.append(f"  content with calls {show(c.content_before_calls)}")
        if isinstance(c.no_arguments, tuple):
            lines.append(f"  no-argument call   {pattern(c.no_arguments)}")
        if c.json_array:
            lines.append("  calls form a JSON array")
        escapings = [("function names", c.name_escaping)]
        if isinstance(a, KeyValueArguments):
            escapings.append(("argument names", a.key_escaping))
        for what, names in escapings:
            if isinstance(names, Escaping):
                written = ", ".join(f"{marker(ch)} as {marker(text)}" for ch, text in names.replaced)
                lines.append(f"  {what:<18} escaped: {written}")
            elif isinstance(names, Unknown):
                lines.append(f"  {what:<18} {unknown(names)}")
    else:
        lines.append(f"  calls              {show(c)}")

    res = d.results
    if isinstance(res, Results):
        lines.append(f"  tool result        {pattern(res.open)} ... {pattern(res.close)}")
        if res.group_open or res.group_close:
            lines.append(f"  results grouped in {pattern(res.group_open)} ... {pattern(res.group_close)}")
        lines.append(
            f"                     written as {res.rendered_as}; linked by {res.linked_by};"
            f" id written: {res.carries_id}; name written: {res.carries_name}; JSON content: {res.json_content}"
        )
    else:
        lines.append(f"  tool result        {show(res)}")

    lines.append("  capabilities       " + _capabilities(d.capabilities, style, d.template.name))
    for warning in d.warnings:
        lines.append(style(f"  warning: {warning}", fg="yellow"))
    return "\n".join(lines)


# What each capability probes, for the note under a capability the template refuses or fails on.
_CAPABILITY_INPUT = {
    "parallel_calls": "parallel tool calls (two calls in one assistant turn)",
    "system_role": "a system message",
    "object_arguments": "call arguments given as a JSON object",
    "string_arguments": "call arguments given as a JSON string",
    "content_none": "content None on an assistant message with tool calls",
}

# The status "error" is the template's own render error on that input; shown as a word that says so,
# so that it does not read as a failure of the analysis. The JSON keeps the status as it is.
_SHOWN_STATUS = {"error": "fails"}

# minijinja's place in a render error: the template is compiled under the name "chat" (render/engines.py).
_MINIJINJA_PLACE = re.compile(r"\s*\(in chat:(\d+)\)$")


def _json_layout(
    separators: tuple[str, str] | Unknown, indent: tuple[str, str] | Unknown, show: Callable[[object], str]
) -> str:
    """How the calls' JSON is written: its separators and its lines."""
    between = show(separators) if isinstance(separators, Unknown) else f"{show(separators[0])} {show(separators[1])}"
    if isinstance(indent, Unknown):
        lines = show(indent)
    elif not indent[0]:
        lines = "on one line"
    else:
        lines = f"indented by {show(indent[0])}" + (f" under {show(indent[1])}" if indent[1] else "")
    return f"separators {between}; {lines}"


def _capability_note(template_name: str, key: str, cap: Capability) -> str:
    """One line saying what the template does with the input: refuses it with its own message, or
    stops rendering on it with the engine's error (and the template's line when the engine gives it)."""
    message = cap.message.removeprefix(f"{template_name}: ")
    what = _CAPABILITY_INPUT[key]
    if cap.status == "refused":
        return f'{key}: the template refuses {what}, raising "{message.removeprefix("template raised: ")}"'
    place = _MINIJINJA_PLACE.search(message)
    where = f"its line {place.group(1)}" if place else "it"
    if place:
        message = message[: place.start()]
    return f"{key}: the template cannot render {what} ({where} fails: {message})"


def _capabilities(caps: Capabilities, style: Style, template_name: str) -> str:
    colours = {
        "yes": "green",
        "no": "red",
        "refused": "red",
        "dropped": "yellow",
        "differs": "yellow",
        "error": "red",
        "unknown": "yellow",
    }
    items = []
    for name in (
        "tools",
        "tool_calls",
        "parallel_calls",
        "system_role",
        "object_arguments",
        "string_arguments",
        "content_none",
        "thinking_toggle",
    ):
        cap = getattr(caps, name)
        shown = _SHOWN_STATUS.get(cap.status, cap.status)
        items.append(f"{name}={style(shown, fg=colours.get(cap.status, 'white'))}")
    notes = [
        _capability_note(template_name, name, getattr(caps, name))
        for name in _CAPABILITY_INPUT
        if getattr(caps, name).status in ("refused", "error")
    ]
    text = " ".join(items)
    if notes:
        text += "\n" + "\n".join(style(f"    {note}", fg="red") for note in notes)
    return text


__all__ = ["ArgumentForm", "Field", "summarize"]
