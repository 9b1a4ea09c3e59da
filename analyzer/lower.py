"""Lower a format description to the output shape both backends consume.

The description says what the template writes, with the exact whitespace of its renders. The
output shape says what a model's output may look like: markers with their surrounding whitespace
made flexible, the trigger where calls start, the stop strings, and one typed part per call field.
The parser (``backends/parser``) matches these parts and the grammar (``backends/gbnf.py``) prints
them, one method per part kind in each, so the two accept the same calls.

Everything here is data: frozen dataclasses, no behaviour beyond small helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from analyzer.description import (
    ArgumentForm, Calls, Field, FormatDescription, JsonArguments, JsonCall, KeyValueArguments, Reasoning,
    Text, Unknown,
)
from analyzer.errors import AnalyzerError


class UnsupportedFormat(AnalyzerError):
    """The description has calls the shape cannot express."""


# --------------------------------------------------------------------------- call parts


@dataclass(frozen=True, slots=True)
class Marker:
    """Literal text. ``lead``/``trail`` say whether whitespace may stand before/after it (the template
    wrote some there); ``text`` itself has no leading or trailing whitespace."""

    text: str
    lead: str = ""
    trail: str = ""

    @property
    def written(self) -> str:
        return self.lead + self.text + self.trail


@dataclass(frozen=True, slots=True)
class Name:
    """The function name: one of the declared tools."""


@dataclass(frozen=True, slots=True)
class CallId:
    """A call id, as the template accepts it: "alnum9" (exactly 9 alphanumerics) or "token" (no spaces)."""

    form: str


@dataclass(frozen=True, slots=True)
class Index:
    """A number that counts calls, from ``base``."""

    base: int


@dataclass(frozen=True, slots=True)
class JsonArgs:
    """Arguments as one JSON value: "object", "string" (a JSON string holding the object), "python" (dict)."""

    encoding: str


@dataclass(frozen=True, slots=True)
class KeyValueArgs:
    """Arguments one by one, each by the form for its JSON type, joined by ``separator``."""

    forms: tuple[ArgumentForm, ...]
    separator: str
    string_escaping: str  # "none" | "json" | "python"
    sorted_names: bool = False  # the template writes arguments sorted by name
    string_wrapper: tuple[str, str] = ("", "")  # around strings with special characters (CDATA)
    string_quotes: tuple[str, str] = ("", "")  # the template's own string quotes, for values in its notation


@dataclass(frozen=True, slots=True)
class JsonCallObject:
    """The whole call as one JSON object."""

    layout: JsonCall


Part = Union[Marker, Name, CallId, Index, JsonArgs, KeyValueArgs, JsonCallObject]


# --------------------------------------------------------------------------- the shape


@dataclass(frozen=True, slots=True)
class Trigger:
    """Where a lazy grammar starts: a literal ``word``, or a ``pattern`` (regex) when calls open with no
    marker of their own (bare JSON). ``at_start``: the call can only start the output."""

    word: str = ""
    pattern: str = ""
    at_start: bool = False


Literal = tuple[Marker, ...]  # literal text as markers; empty when the template wrote only whitespace


@dataclass(frozen=True, slots=True)
class CallsShape:
    section_open: Literal
    section_close: Literal
    separator: Literal | None  # None: parallel calls are not written; () when only whitespace
    call: tuple[Part, ...]
    no_arguments: tuple[Part, ...] | None  # a call without arguments when it differs from ``call``
    trigger: Trigger


@dataclass(frozen=True, slots=True)
class ReasoningShape:
    open: Literal
    close: Literal
    forced_open: bool
    # thinking was turned off through the template's toggle: the parser still reads a block the model
    # writes anyway, but a grammar gives it no room for one
    switched_off: bool = False


@dataclass(frozen=True, slots=True)
class OutputShape:
    """What a model writes after the generation prompt."""

    template: str
    generation_prompt: str
    prefix: Literal  # what every turn starts with that the prompt did not write (an empty reasoning block)
    reasoning: ReasoningShape | None
    content_open: Literal
    content_close: Literal
    calls: CallsShape | None
    stops: tuple[str, ...]  # turn-end strings: text after them is not the model's answer
    id_form: str  # form of ids to generate: "openai" | "alnum9"

    def markers(self) -> tuple[str, ...]:
        """Every marker text, for preserved tokens and streaming hold-back."""
        found: list[str] = []

        def add(parts: tuple) -> None:
            for part in parts:
                if isinstance(part, Marker) and part.text and part.text not in found:
                    found.append(part.text)

        if self.reasoning:
            add(self.reasoning.open)
            add(self.reasoning.close)
        add(self.content_open)
        add(self.content_close)
        if self.calls:
            add(self.calls.section_open)
            add(self.calls.section_close)
            add(self.calls.separator or ())
            add(self.calls.call)
        add(tuple(Marker(stop) for stop in self.stops))
        return tuple(found)


# --------------------------------------------------------------------------- lowering


_WHITESPACE = re.compile(r"\s+")


def split_markers(text: str) -> list[Marker]:
    """Literal text as markers split at whitespace: a model may write other whitespace than the
    template did (a newline for a space, none at all), so whitespace is kept only as ``lead``/``trail``."""
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
    return found


def needs_space(before: str, after: str) -> bool:
    """Whitespace between two literals is required only where it separates two words."""
    return bool(before) and bool(after) and (before[-1].isalnum() or before[-1] == "_") and (
        after[0].isalnum() or after[0] == "_")


def lower_pattern(pattern: tuple, calls: Calls, id_form: str) -> tuple[Part, ...]:
    parts: list[Part] = []
    for item in pattern:
        if isinstance(item, Text):
            found = split_markers(item.text)
            if found:
                parts.extend(found)
            elif item.text and parts and isinstance(parts[-1], Marker):
                last = parts[-1]
                parts[-1] = Marker(last.text, last.lead, last.trail + item.text)
            elif item.text:
                # Whitespace between two fields (a name, then arguments on the next line): a marker with
                # no text, so both backends allow whitespace there.
                parts.append(Marker("", item.text, ""))
        elif isinstance(item, Field):
            parts.append(_lower_field(item, calls, id_form))
    return tuple(parts)


def _lower_field(item: Field, calls: Calls, id_form: str) -> Part:
    if item.name == "name":
        return Name()
    if item.name == "id":
        return CallId("alnum9" if id_form == "alnum9" else "token")
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
            escaping = arguments.string_escaping if isinstance(arguments.string_escaping, str) else "none"
            separator = arguments.separator if isinstance(arguments.separator, str) else ""
            return KeyValueArgs(arguments.forms, separator, escaping, arguments.order == "sorted",
                                arguments.special_string_wrapper, _string_quotes(arguments.forms))
        raise UnsupportedFormat(f"arguments are not understood: {getattr(arguments, 'reason', arguments)}")
    raise UnsupportedFormat(f"unknown call field {item.name!r}")


def _string_quotes(forms: tuple[ArgumentForm, ...]) -> tuple[str, str]:
    """What a string argument has around its value that a number has not: the template's own quotes
    (``<|"|>``), used again inside nested values written in its notation."""
    by_type = {form.json_type: form.pattern for form in forms}
    text, number = by_type.get("string"), by_type.get("integer") or by_type.get("number")
    if text is None or number is None:
        return ("", "")

    def around(pattern: tuple) -> tuple[str, str]:
        at = next((k for k, p in enumerate(pattern) if isinstance(p, Field) and p.name == "value"), None)
        if at is None:
            return ("", "")
        before = pattern[at - 1].text if at and isinstance(pattern[at - 1], Text) else ""
        after = pattern[at + 1].text if at + 1 < len(pattern) and isinstance(pattern[at + 1], Text) else ""
        return before, after

    (s_before, s_after), (n_before, n_after) = around(text), around(number)
    if s_before.startswith(n_before) and s_after.endswith(n_after):
        quote_open, quote_close = s_before[len(n_before):], s_after[:len(s_after) - len(n_after)]
        if quote_open.strip() and quote_close.strip():
            return (quote_open, quote_close)
    return ("", "")


def _trigger(section_open: Literal, call: tuple[Part, ...], at_start: bool) -> Trigger:
    if section_open:
        return Trigger(word=section_open[0].text, at_start=at_start)
    first = call[0] if call else None
    if isinstance(first, Marker):
        return Trigger(word=first.text, at_start=at_start)
    if isinstance(first, JsonCallObject):
        # A bare JSON call: it opens with its first key, which is the same for every call.
        key = first.layout.key_order[0] if first.layout.key_order else ""
        if first.layout.name_is_key:
            return Trigger(pattern=r'\{\s*"', at_start=at_start)
        return Trigger(pattern=r'\{\s*"' + _regex_escape(key) + '"', at_start=at_start)
    if isinstance(first, Name):
        return Trigger(pattern="", at_start=True)
    return Trigger(at_start=True)


def _regex_escape(text: str) -> str:
    return re.escape(text)


def lower(description: FormatDescription, *, thinking: bool | None = None) -> OutputShape:
    """The output shape of a description. ``thinking`` is the ``enable_thinking`` value the prompt was
    rendered with (None: the template's default), which decides whether the prompt opened reasoning."""
    turn = description.turn
    reasoning = None
    if isinstance(description.reasoning, Reasoning):
        r = description.reasoning
        open_m, close_m = split_markers(r.open), split_markers(r.close)
        forced = r.forced_open if thinking is None or isinstance(r.toggle, Unknown) else (
            r.opened_when_thinking if thinking else False)
        if open_m and close_m:
            switched_off = thinking is False and not isinstance(r.toggle, Unknown)
            reasoning = ReasoningShape(tuple(open_m), tuple(close_m), forced, switched_off)
    calls_shape = None
    id_form = "openai"
    if isinstance(description.calls, Calls):
        c = description.calls
        if not isinstance(c.ids, Unknown) and c.ids.accepted and "openai" not in c.ids.accepted:
            id_form = c.ids.accepted[0]
        call = lower_pattern(c.call, c, id_form)
        no_arguments = None
        if isinstance(c.no_arguments, tuple):
            lowered = lower_pattern(c.no_arguments, c, id_form)
            no_arguments = lowered if lowered != call else None
        section_open = tuple(split_markers(c.section_open))
        at_start = not section_open and bool(call) and isinstance(call[0], Name)
        calls_shape = CallsShape(
            section_open=section_open,
            section_close=tuple(split_markers(c.section_close)),
            separator=tuple(split_markers(c.separator)) if isinstance(c.separator, str) else None,
            call=call,
            no_arguments=no_arguments,
            trigger=_trigger(section_open, call, at_start),
        )
    return OutputShape(
        template=description.template.name,
        generation_prompt=turn.generation_prompt if isinstance(turn.generation_prompt, str) else "",
        prefix=tuple(split_markers(turn.history_prefix)),
        reasoning=reasoning,
        content_open=tuple(split_markers(turn.content_open)),
        content_close=tuple(split_markers(turn.content_close)),
        calls=calls_shape,
        stops=turn.stop,
        id_form=id_form,
    )
