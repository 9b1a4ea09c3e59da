"""Lower a format description to the output shape that the parser and the grammar consume.

The description says what the template writes, with the exact whitespace of its renders. The
output shape (``analyzer.runtime.shape``) says what a model's output may look like: markers split
at whitespace, which may differ from the template's (a newline for a space, none at all), argument
forms as parts, the trigger where calls start, what may follow a call, the stops, the id form.
This module is the only place that turns the description's text into markers: the backends read
the shape and derive nothing from the description.

The ``*_shape`` builders compute the shape's derived fields (a call's opener, what ends and follows
it, the trigger's wake word, what follows a reasoning block), so that a shape made by hand, in a
test or for the prompted format, is as complete as a lowered one.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import assert_never

from analyzer.description import (
    ArgumentForm,
    Calls,
    Escaping,
    Field,
    FormatDescription,
    JsonArguments,
    KeyValueArguments,
    NameEscaping,
    Pattern,
    Reasoning,
    StringEscaping,
    Text,
    Unknown,
)
from analyzer.errors import UnsupportedFormat
from analyzer.markers import last_marker, special_word
from analyzer.runtime.shape import (
    ID_FORMS,
    ArgKey,
    ArgPart,
    ArgumentShape,
    ArgValue,
    CallId,
    CallsShape,
    Escapes,
    IdForm,
    Index,
    JsonArgs,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Markers,
    Name,
    OutputShape,
    Part,
    ReasoningShape,
    Trigger,
)
from analyzer.runtime.shape_analysis import ByIdentity

_WHITESPACE = re.compile(r"\s+")


def split_markers(text: str) -> Markers:
    """Literal text as markers split at whitespace, the whitespace kept as ``lead``/``trail``."""
    found: list[Marker] = []
    pieces = _WHITESPACE.split(text)
    spaces = _WHITESPACE.findall(text)
    lead = ""
    if pieces and pieces[0] == "":
        lead = spaces.pop(0) if spaces else ""
        pieces = pieces[1:]
    for i, piece in enumerate(pieces):
        if piece == "":
            continue
        trail = spaces[i] if i < len(spaces) else ""
        found.append(Marker(piece, lead, trail))
        lead = trail
    return tuple(found)


def _text_parts(text: str, parts: list[Part]) -> None:
    """Append the markers of ``text``; text of whitespace alone joins the marker before it, or stands
    as a marker with no text of its own (whitespace between two fields, which both backends allow)."""
    found = split_markers(text)
    if found:
        parts.extend(found)
    elif text and parts and isinstance(parts[-1], Marker):
        last = parts[-1]
        parts[-1] = Marker(last.text, last.lead, last.trail + text)
    elif text:
        parts.append(Marker("", text, ""))


# --------------------------------------------------------------------------- calls


def lower_pattern(pattern: Pattern, calls: Calls, id_form: IdForm) -> tuple[Part, ...]:
    parts: list[Part] = []
    for item in pattern:
        if isinstance(item, Text):
            _text_parts(item.text, parts)
        elif isinstance(item, Field):
            parts.append(_lower_field(item, calls, id_form))
    return _index_ids(tuple(parts))


# What may join a name and its count into one id (``get_weather:0``), and stand before the name in it.
_ID_JOIN = re.compile(r"[:_\-./#]")
_ID_LEAD = re.compile(r"[\w.\-/]*")


def _index_ids(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The count of a call written right after its name, joined by one punctuation mark, with no id of
    its own (``<|tool_call_begin|>functions.NAME:0``): the template writes name and count as the
    call's id, so the count's part records what that id starts with (the words after the marker that
    opens the call)."""
    if any(isinstance(part, CallId) for part in parts):
        return parts
    for k, part in enumerate(parts):
        if not (isinstance(part, Index) and k >= 2 and isinstance(parts[k - 2], Name)):
            continue
        join = parts[k - 1]
        if not (isinstance(join, Marker) and _ID_JOIN.fullmatch(join.text) and not join.lead and not join.trail):
            continue
        before = parts[k - 3] if k >= 3 else None
        lead = ""
        if isinstance(before, Marker) and not before.trail:
            found = last_marker(before.text)
            rest = before.text[found.end() :] if found else before.text
            lead = rest if _ID_LEAD.fullmatch(rest) else ""
        return (*parts[:k], replace(part, id_prefix=lead), *parts[k + 1 :])
    return parts


def escapes(escaping: NameEscaping) -> Escapes:
    """The escapes of a name escaping; none where the renders did not show it (names are then read
    and written as is, as most templates write them)."""
    return escaping.replaced if isinstance(escaping, Escaping) else ()


def _lower_field(item: Field, calls: Calls, id_form: IdForm) -> Part:
    if item.name == "name":
        return Name(escapes(calls.name_escaping))
    if item.name == "id":
        return CallId(id_form)
    if item.name == "index":
        return Index(item.base)
    if item.name == "call":
        if calls.json_call is None:
            raise UnsupportedFormat("a call field without a JSON call layout")
        return JsonCallObject(calls.json_call)
    if item.name == "arguments":
        arguments = calls.arguments
        if isinstance(arguments, JsonArguments):
            return JsonArgs(arguments.encoding)
        if isinstance(arguments, KeyValueArguments):
            return key_value_args(
                arguments.forms,
                arguments.separator if isinstance(arguments.separator, str) else "",
                arguments.string_escaping if isinstance(arguments.string_escaping, str) else "none",
                sorted_names=arguments.order == "sorted",
                string_wrapper=arguments.special_string_wrapper,
                key_escapes=escapes(arguments.key_escaping),
            )
        raise UnsupportedFormat(f"arguments are not understood: {getattr(arguments, 'reason', arguments)}")
    raise UnsupportedFormat(f"unknown call field {item.name!r}")


def key_value_args(
    forms: tuple[ArgumentForm, ...],
    separator: str,
    escaping: StringEscaping,
    *,
    sorted_names: bool = False,
    string_wrapper: tuple[str, str] = ("", ""),
    key_escapes: Escapes = (),
) -> KeyValueArgs:
    lowered = tuple(argument_shape(form, key_escapes) for form in forms)
    return KeyValueArgs(
        lowered,
        _separator(separator),
        escaping,
        sorted_names,
        string_wrapper,
        _string_quotes(forms),
    )


def argument_shape(form: ArgumentForm, key_escapes: Escapes = ()) -> ArgumentShape:
    parts: list[ArgPart] = []
    for item in form.pattern:
        if isinstance(item, Text):
            found = split_markers(item.text)
            parts.extend(found if found else (Marker("", item.text, ""),) if item.text else ())
        elif item.name == "key":
            parts.append(ArgKey(key_escapes))
        elif item.name == "value":
            parts.append(ArgValue())
    return ArgumentShape(form.json_type, tuple(parts), form.syntax)


def _space_only(text: str) -> str:
    """Text that is whitespace alone, which splitting into markers leaves nowhere to stand."""
    return text if text and not text.strip() else ""


def _separator(text: str) -> Markers:
    """Between two arguments: its markers; whitespace alone is one marker with no text."""
    return split_markers(text) or ((Marker("", text, ""),) if text else ())


def _string_quotes(forms: tuple[ArgumentForm, ...]) -> tuple[str, str]:
    """What a string argument has around its value that a number has not: the template's own quotes
    (``<|"|>``), used again inside nested values written in its notation."""
    by_type = {form.json_type: form.pattern for form in forms}
    text, number = by_type.get("string"), by_type.get("integer") or by_type.get("number")
    if text is None or number is None:
        return ("", "")

    def around(pattern: Pattern) -> tuple[str, str]:
        at = next((k for k, p in enumerate(pattern) if isinstance(p, Field) and p.name == "value"), None)
        if at is None:
            return ("", "")
        before = prev.text if at and isinstance(prev := pattern[at - 1], Text) else ""
        after = nxt.text if at + 1 < len(pattern) and isinstance(nxt := pattern[at + 1], Text) else ""
        return before, after

    (s_before, s_after), (n_before, n_after) = around(text), around(number)
    if s_before.startswith(n_before) and s_after.endswith(n_after):
        quote_open, quote_close = s_before[len(n_before) :], s_after[: len(s_after) - len(n_after)]
        if quote_open.strip() and quote_close.strip():
            return (quote_open, quote_close)
    return ("", "")


# --------------------------------------------------------------------------- builders of derived fields


def trigger_for(section_open: Markers, call: tuple[Part, ...]) -> Trigger:
    """Where calls start: the section opener, else the call's first marker; a regex for a bare JSON
    call (it opens with its first key, the same for every call); a tool's name at the start."""
    at_start = not section_open and bool(call) and isinstance(call[0], Name)
    if section_open:
        return _word_trigger(section_open[0].text, at_start)
    if not call:
        return Trigger(at_start=True)
    return _call_trigger(call[0], at_start)


def _call_trigger(first: Part, at_start: bool) -> Trigger:
    """The one place a part's kind says where calls start, for calls that open with that part."""
    match first:
        case Marker():
            return _word_trigger(first.text, at_start)
        case JsonCallObject():
            layout = first.layout
            if layout.name_is_key or not layout.key_order:
                return Trigger(pattern=r'\{\s*"', at_start=at_start)
            return Trigger(pattern=r'\{\s*"' + re.escape(layout.key_order[0]) + '"', at_start=at_start)
        case Name():
            return Trigger(tool_name=True, at_start=True)
        case CallId() | Index() | JsonArgs() | KeyValueArgs():
            # No word or pattern opens such a call for a lazy grammar or the parser to watch for.
            return Trigger(at_start=True)
        case _:
            # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
            assert_never(first)


def _word_trigger(word: str, at_start: bool) -> Trigger:
    """A lazy grammar wakes on the special word the marker starts with when only punctuation follows
    it (``[TOOL_CALLS]`` of ``[TOOL_CALLS][``): a model writes that word as one special token, which a
    server (and a logit bias) can see, while the whole marker is several tokens. A marker that goes on
    with words (``<|start|>assistant...``) is kept whole: its first word alone also starts other things."""
    special = special_word(word)
    rest = word[len(special) :]
    wake = special if special and not any(ch.isalnum() or ch == "_" for ch in rest) else word
    return Trigger(word=word, wake_word=wake, at_start=at_start)


def calls_shape(
    section_open: Markers,
    section_close: Markers,
    separator: Markers | None,
    call: tuple[Part, ...],
    no_arguments: tuple[Part, ...] | None = None,
    *,
    trigger: Trigger | None = None,
    open_space: str = "",
    separator_space: str = "",
    close_space: str = "",
    json_separators: tuple[str, ...] = (),
    json_indent: tuple[str, ...] = (),
    close_from: int = 1,
    content_after: bool = False,
) -> CallsShape:
    return CallsShape(
        section_open,
        section_close,
        separator,
        call,
        no_arguments,
        trigger or trigger_for(section_open, call),
        open_space,
        separator_space,
        close_space,
        json_separators,
        json_indent,
        close_from,
        content_after,
    )


def reasoning_shape(
    open_markers: Markers,
    close: Markers,
    forced_open: bool,
    *,
    toggle: bool = False,
    opened_when_thinking: bool = False,
    prefix: Markers = (),
    generation_prompt: str = "",
) -> ReasoningShape:
    """``prefix``: what every turn starts with; where it starts with the close marker (an empty block),
    the rest of it is what follows a reasoning block. Where the close marker ends with the header the
    generation prompt writes, the block is a message of its own and its close opens the next one
    (``<|eom|><|start|>assistant``): what follows it is what follows the prompt, the whole prefix."""
    written, closing = "".join(m.text for m in prefix), "".join(m.text for m in close)
    header = "".join(generation_prompt.split())  # as markers are joined, without their whitespace
    after: Markers = ()
    if closing and written.startswith(closing):
        after = split_markers(written[len(closing) :])
    elif header and closing.endswith(header):
        after = prefix
    return ReasoningShape(open_markers, close, forced_open, toggle, opened_when_thinking, after)


def output_shape(
    template: str,
    *,
    generation_prompt: str = "",
    prefix: Markers = (),
    reasoning: ReasoningShape | None = None,
    content_open: Markers = (),
    content_close: Markers = (),
    calls: CallsShape | None = None,
    stops: tuple[str, ...] = (),
    id_form: IdForm = ID_FORMS["openai"],
    answer_key: str = "",
    end: Markers = (),
) -> OutputShape:
    return OutputShape(
        template,
        generation_prompt,
        prefix,
        reasoning,
        content_open,
        content_close,
        calls,
        stops,
        id_form,
        answer_key,
        end,
    )


# --------------------------------------------------------------------------- the description


_LOWERED: ByIdentity[FormatDescription, OutputShape] = ByIdentity()


def lowered(description: FormatDescription) -> OutputShape:
    """``lower(description)``, once per description: a server lowers its one description for every
    request, and a parser's tables are kept by the shape's identity (a new shape per request made a
    parser cost 140 us instead of 25)."""
    return _LOWERED.get(description, lower, description)


def lower(description: FormatDescription) -> OutputShape:
    """The output shape of a description, for every request: whether the prompt opened reasoning
    depends on the request's thinking switch, which the shape records and the backends apply."""
    turn = description.turn
    prefix = split_markers(turn.history_prefix)
    reasoning = None
    if isinstance(description.reasoning, Reasoning):
        r = description.reasoning
        open_markers, close = split_markers(r.open), split_markers(r.close)
        if open_markers and close:
            reasoning = reasoning_shape(
                open_markers,
                close,
                r.forced_open,
                toggle=not isinstance(r.toggle, Unknown),
                opened_when_thinking=r.opened_when_thinking,
                prefix=prefix,
                generation_prompt=turn.generation_prompt if isinstance(turn.generation_prompt, str) else "",
            )
    calls = None
    id_form = ID_FORMS["openai"]
    if isinstance(description.calls, Calls):
        c = description.calls
        known_indent = not isinstance(c.json_indent, Unknown)
        if not isinstance(c.ids, Unknown) and c.ids.accepted and "openai" not in c.ids.accepted:
            id_form = ID_FORMS[c.ids.accepted[0]]
        call = lower_pattern(c.call, c, id_form)
        no_arguments = None
        if isinstance(c.no_arguments, tuple):
            lowered = lower_pattern(c.no_arguments, c, id_form)
            no_arguments = lowered if lowered != call else None
        calls = calls_shape(
            split_markers(c.section_open),
            split_markers(c.section_close),
            split_markers(c.separator) if isinstance(c.separator, str) else None,
            call,
            no_arguments,
            # Every turn's start of whitespace alone (no marker holds it) comes before the calls too.
            open_space=_space_only(turn.history_prefix) + _space_only(c.section_open),
            separator_space=_space_only(c.separator) if isinstance(c.separator, str) else "",
            close_space=_space_only(c.section_close),
            # Separators without the indentation they go with would hold a model to JSON on one line.
            json_separators=c.json_separators if isinstance(c.json_separators, tuple) and known_indent else (),
            json_indent=c.json_indent if isinstance(c.json_indent, tuple) and c.json_indent[0] else (),
            close_from=c.section_close_from,
            content_after=c.content_before_calls == "after the calls",
        )
    return output_shape(
        description.template.name,
        generation_prompt=turn.generation_prompt if isinstance(turn.generation_prompt, str) else "",
        prefix=prefix,
        reasoning=reasoning,
        content_open=split_markers(turn.content_open),
        content_close=split_markers(turn.content_close),
        calls=calls,
        stops=turn.stop,
        id_form=id_form,
        end=split_markers(turn.end) if isinstance(turn.end, str) else (),
    )
