"""What follows what in an output shape: the facts every reader of a shape needs, worked out once.

The parser, the grammar and the response_template builder each need to know, of every part of a
call, which texts may come right after it (its follow set), the text a call closes with, the first
characters its arguments may start with, whether an argument form writes its value between tags named
by its key, and what a form's last characters are. They are computed here with one rule, so that the
readers agree: walking forward from a part, a marker with text is what comes next (and nothing after
it); whitespace alone is no text of its own (it stands around what comes next); arguments written one
by one may be absent (a call without arguments), so what their forms start with comes next, and then
what follows them; any other field is the end of what can be said. Past the last part of a call come
the texts that may follow a call: the separator, the section closer, the next call's opener, the
turn's stops, and content where the template writes content after its calls.

``analysis(shape)`` builds it once per shape (kept by the shape's identity); the shape stores none of
it. A reader holding only a part of a shape uses the rule's functions (``leading_markers``,
``closing_text``, ``follow``, ``next_marker``, ``form_tag_frame``) on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .shape import (
    ArgKey,
    ArgPart,
    ArgumentShape,
    ArgValue,
    CallsShape,
    JsonArgs,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Markers,
    OutputShape,
    Part,
)

# What may follow the last call besides text: the output's end, or content the template writes after
# its calls. Neither is text a marker could be: they never collide with a follower.
END_OF_CALLS = "\x00end"
CONTENT_AFTER = "\x00content"


# --------------------------------------------------------------------------- the rule, on parts


def leading_markers(parts: tuple[Part, ...]) -> Markers:
    """The markers a call starts with, before its first field."""
    found = []
    for part in parts:
        if not isinstance(part, Marker):
            break
        found.append(part)
    return tuple(found)


def closing_text(parts: tuple[Part, ...]) -> str:
    """The text a call ends with: its last marker's, "" when a field (a value) ends it."""
    last = parts[-1] if parts else None
    return last.text if isinstance(last, Marker) else ""


def closing_markers(parts: tuple[Part, ...] | None) -> Markers:
    """The markers with text a call's parts end with, after its last field; () when the call is markers only."""
    found: list[Marker] = []
    for part in reversed(parts or ()):
        if not isinstance(part, Marker):
            break
        if part.text:
            found.append(part)
    return tuple(reversed(found)) if len(found) < len(parts or ()) else ()


def call_followers(
    separator: Markers | None, section_close: Markers, opener: Markers, stops: tuple[str, ...]
) -> tuple[str, ...]:
    """The texts that may follow a call: the separator's first marker, the section closer's, the next
    call's opener (calls written one after another), the turn's stops."""
    found = [markers[0].text for markers in (separator or (), section_close) if markers]
    if opener:
        found.append(opener[0].text)
    return (*found, *stops)


def follow(parts: tuple[Part, ...], k: int, after: tuple[str, ...]) -> tuple[str, ...]:
    """The texts that may come right after part ``k`` of ``parts`` (-1: before the first), ``after``
    past the last part. Empty texts are left out; a field with no literal start ends the walk."""
    found: list[str] = []
    for part in parts[k + 1 :]:
        if isinstance(part, Marker):
            if part.text:
                found.append(part.text)
                return _unique(found)
            continue  # whitespace alone: what comes after it comes next
        if isinstance(part, KeyValueArgs):
            found += [text for text in argument_starts(part) if text]
            continue  # there may be no arguments
        return _unique(found)
    return _unique([*found, *after])


def next_marker(parts: tuple[Part, ...], k: int, after: tuple[str, ...]) -> tuple[str, ...]:
    """The literal that bounds what part ``k`` writes: the next marker with text, arguments one by one
    passed over (they may be absent); ``after`` past the last part; () where another field comes first."""
    for part in parts[k + 1 :]:
        if isinstance(part, Marker):
            if part.text:
                return (part.text,)
            continue
        if isinstance(part, KeyValueArgs):
            continue
        return ()
    return after


def argument_starts(part: KeyValueArgs) -> tuple[str, ...]:
    """The first markers of the argument forms (an argument starts with one of them; "" for a form
    that starts with its key)."""
    return _unique(
        [form.parts[0].text if form.parts and isinstance(form.parts[0], Marker) else "" for form in part.forms]
    )


def last_characters(forms: tuple[tuple[Part, ...] | None, ...]) -> str:
    """The characters the call's forms end with, when each ends with a JSON object or a marker; else ""."""
    found = ""
    for parts in forms:
        last = parts[-1] if parts else None
        if isinstance(last, JsonCallObject):
            found += "}"
        elif isinstance(last, JsonArgs):
            # An object (JSON or Python) ends with "}", a string (arguments the template encodes as one) with a quote.
            found += '"' if last.encoding == "string" else "}"
        elif isinstance(last, Marker) and last.text:
            found += last.text[-1]
        elif parts:
            return ""
    return "".join(sorted(set(found)))


# --------------------------------------------------------------------------- argument forms


@dataclass(frozen=True, slots=True)
class TagFrame:
    """An argument written between tags named by its key (``<`` key ``>`` value ``</`` key ``>``): the
    texts before the key, between key and value, after the value, and after the closing key, each the
    markers' texts joined (whitespace around them left out)."""

    opening: str
    middle: str
    closing: str
    end: str

    @property
    def between_arguments(self) -> str:
        """The part of the closing text a template writes between two arguments too (MiniMax-M3's
        ``]<]minimax[>``): the longest end of ``end`` the closing text starts with."""
        end, closing = self.end, self.closing
        return next((end[-n:] for n in range(min(len(end), len(closing)), 0, -1) if closing.startswith(end[-n:])), "")


def tag_frame(parts: tuple[ArgPart, ...]) -> TagFrame | None:
    """The tag frame of an argument form: markers, the key, markers, the value, markers, the key again,
    markers, each run of markers with text and the form nothing else; None for any other form."""
    kinds = [type(part) for part in parts]
    if kinds.count(ArgKey) != 2 or ArgValue not in kinds:
        return None
    first, value = kinds.index(ArgKey), kinds.index(ArgValue)
    second = len(kinds) - 1 - kinds[::-1].index(ArgKey)
    if not first < value < second:
        return None
    texts = [
        "".join(part.text for part in parts[start:stop] if isinstance(part, Marker))
        for start, stop in ((0, first), (first + 1, value), (value + 1, second), (second + 1, len(parts)))
    ]
    if not all(texts) or any(not isinstance(part, Marker) for part in parts[:first] + parts[second + 1 :]):
        return None
    return TagFrame(texts[0], texts[1], texts[2], texts[3])


@dataclass(frozen=True, slots=True)
class FormFacts:
    """One call form (the call, or the call without arguments): for each part, what may follow it and
    the literal that bounds it."""

    parts: tuple[Part, ...]
    follow: tuple[tuple[str, ...], ...]
    bound: tuple[tuple[str, ...], ...]
    closing: str
    closing_markers: Markers
    after: tuple[str, ...]  # what may follow the form

    def value_stops(self, k: int) -> str:
        """The first characters of what may follow an argument of part ``k`` (arguments one by one):
        the separator between two, and the literal after the arguments; a value of unknown syntax
        stops before them."""
        part = self.parts[k]
        separator = part.separator[0].text if isinstance(part, KeyValueArgs) and part.separator else ""
        return "".join(dict.fromkeys(text[0] for text in (separator, *self.bound[k]) if text and text[0] != "\x00"))

    def arguments_start(self, k: int) -> str:
        """The first characters an arguments part (part ``k``) may start with, or, where it may be empty,
        of what follows it."""
        part = self.parts[k]
        if not isinstance(part, KeyValueArgs):
            return "{["
        texts = follow(self.parts, k - 1, self.after)
        return "".join(dict.fromkeys(text[0] for text in texts if text and text[0] != "\x00"))


def _form_facts(parts: tuple[Part, ...], after: tuple[str, ...]) -> FormFacts:
    return FormFacts(
        parts,
        tuple(follow(parts, k, after) for k in range(len(parts))),
        tuple(next_marker(parts, k, after) for k in range(len(parts))),
        closing_text(parts),
        closing_markers(parts),
        after,
    )


def marker_before_closing(calls: CallsShape) -> str:
    """The text every form of a call writes right before its last marker: the end they share of the
    marker before it ("" if none)."""
    shared: str | None = None
    for parts in (calls.call, calls.no_arguments):
        if parts is None:
            continue
        if len(parts) < 2 or not isinstance(parts[-1], Marker) or parts[-1].text != closing_text(calls.call):
            return ""
        before = parts[-2]
        if not isinstance(before, Marker):
            return ""
        text = before.text
        if shared is not None:
            k = 0
            while k < min(len(text), len(shared)) and text[-1 - k] == shared[-1 - k]:
                k += 1
            text = text[len(text) - k :]
        shared = text
    return shared or ""


# --------------------------------------------------------------------------- the analysis of a shape


@dataclass(frozen=True, slots=True)
class CallsAnalysis:
    """``followers``: what may follow a call (texts only); ``after_section``: what may follow the
    section (the stops, the output's end, content where the template writes it after the calls);
    ``call``/``no_arguments``: the facts of each form."""

    calls: CallsShape
    opener: Markers
    closing: str
    followers: tuple[str, ...]
    after_section: tuple[str, ...]
    content_after: bool
    call: FormFacts
    no_arguments: FormFacts | None
    last_characters: str
    before_closing: str  # what every form writes right before its closing marker (marker_before_closing)

    @property
    def without_arguments(self) -> FormFacts | None:
        """How a call without arguments is written: the no-argument pattern, or where the template
        writes it as the call pattern, that pattern with its arguments part left out; None where the
        arguments are one value (written even when empty)."""
        if self.no_arguments is not None:
            return self.no_arguments
        parts = self.call.parts
        if not any(isinstance(part, KeyValueArgs) for part in parts):
            return None
        return _form_facts(tuple(part for part in parts if not isinstance(part, KeyValueArgs)), self.call.after)


@dataclass(frozen=True, slots=True)
class ShapeAnalysis:
    """``server_stops``: the turn's stops a server may stop generating on."""

    shape: OutputShape
    calls: CallsAnalysis | None
    server_stops: tuple[str, ...]


def server_stops(shape: OutputShape) -> tuple[str, ...]:
    """The turn's stop strings, less any a call starts with: a server stopping there would cut every
    call off (a template that writes a call as a new message opened by its turn separator)."""
    calls = shape.calls
    openers = [m.text for m in calls.section_open[:1]] if calls is not None else []
    opener = leading_markers(calls.call) if calls is not None else ()
    if opener and opener[0].text:
        openers.append(opener[0].text)
    return tuple(stop for stop in shape.stops if not any(text.startswith(stop) for text in openers))


def _analyse(shape: OutputShape) -> ShapeAnalysis:
    calls = shape.calls
    if calls is None:
        return ShapeAnalysis(shape, None, server_stops(shape))
    opener = leading_markers(calls.call)
    followers = call_followers(calls.separator, calls.section_close, opener, shape.stops)
    content_after = calls.content_after
    after_section = (*shape.stops, END_OF_CALLS, *((CONTENT_AFTER,) if content_after else ()))
    # Past a call: what may follow it, and where the section may end there, what follows the section.
    after_call = _unique([*followers, END_OF_CALLS, *((CONTENT_AFTER,) if content_after else ())])
    return ShapeAnalysis(
        shape,
        CallsAnalysis(
            calls,
            opener,
            closing_text(calls.call),
            followers,
            after_section,
            content_after,
            _form_facts(calls.call, after_call),
            _form_facts(calls.no_arguments, after_call) if calls.no_arguments is not None else None,
            last_characters((calls.call, calls.no_arguments)),
            marker_before_closing(calls),
        ),
        server_stops(shape),
    )


_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class ByIdentity(Generic[_Key, _Value]):
    """What is worked out from a part of an output shape, kept by that part's identity: the shape
    lives as long as its readers, and hashing it (a tree of frozen dataclasses) would cost more than
    the work. Keeps the keys alive, so an identity is never reused while kept; at most 256."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[_Key, _Value]] = {}

    def get(self, key: _Key, make: Callable[..., _Value], *arguments: Any) -> _Value:
        """The value kept for ``key``, or ``make(*arguments)`` kept for it (arguments read off ``key``)."""
        kept = self._kept.get(id(key))
        if kept is not None and kept[0] is key:
            return kept[1]
        value = make(*arguments)
        if len(self._kept) >= 256:
            self._kept.clear()
        self._kept[id(key)] = (key, value)
        return value


_ANALYSES: ByIdentity[OutputShape, ShapeAnalysis] = ByIdentity()
_TAG_FRAMES: ByIdentity[ArgumentShape, TagFrame | None] = ByIdentity()


def analysis(shape: OutputShape) -> ShapeAnalysis:
    """The analysis of ``shape``, built once per shape."""
    return _ANALYSES.get(shape, _analyse, shape)


def form_tag_frame(form: ArgumentShape) -> TagFrame | None:
    """``tag_frame`` of an argument form, once per form."""
    return _TAG_FRAMES.get(form, tag_frame, form.parts)


def _unique(texts: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(texts))
