"""Arguments written one by one (``KeyValueArgs``): reading one argument in one of its forms.

The forms written alike are grouped (``FormGroup``, facts read off their parts once per shape),
and an argument is read by how its value is written: before the form's closing text
(``<parameter=k>v</parameter>``), as a literal, or as text running to the next argument or the
call's end (``RawEnds``); its JSON value then follows from that and the type the tool declares.
``match.py`` reads a call's arguments with ``match_form``, in a batch and as they arrive.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import Any

from .shape import ArgKey, ArgPart, ArgumentShape, ArgValue, Escapes, Marker, Markers, escape_name, unescape_name
from .shape_analysis import ByIdentity, TagFrame, form_tag_frame
from .steps import (
    NEED,
    WORD_NAME,
    Mismatch,
    Need,
    Step,
    match_literal,
    match_word,
    names_as_written,
    read_name,
    skip_ws,
)
from .tolerance import LITERAL_SYNTAX
from .values import INCOMPLETE, INVALID, Memo, Undecodable, coerce, decode, decode_notation, value_end


def _find_resumed(text: str, word: str, start: int, memo: Memo | None) -> int:
    """``text.find(word, start)`` in text that only grows (a stream): where an earlier search found
    nothing, the next one goes on from there, so a long value still arriving is read once, not once
    per chunk."""
    key = ("find " + word, start)
    resume = memo.get(key, start) if memo is not None else start
    at = text.find(word, resume if isinstance(resume, int) else start)
    if at == -1 and memo is not None:
        memo[key] = max(start, len(text) - len(word) + 1)
    return at


def _wrapped_end(text: str, i: int, wrapper: tuple[str, str], final: bool, memo: Memo | None) -> int | Need:
    """Where a raw value at ``i`` may end from: past the closer of the wrapper it opens with
    (``<![CDATA[`` ... ``]]>``), else ``i``. NEED while the wrapper is open; an output that ends
    inside it is read as if there were no wrapper."""
    opener, closer = wrapper
    j = skip_ws(text, i)
    if not opener or not text.startswith(opener, j):
        return NEED if not final and opener and len(text) - j < len(opener) and opener.startswith(text[j:]) else i
    close = _find_resumed(text, closer, j + len(opener), memo)
    if close == -1:
        return i if final else NEED
    return close + len(closer)


def _earliest(text: str, words: tuple[str, ...], start: int, memo: Memo | None) -> int:
    """Where the first of ``words`` found from ``start`` stands, each looked for as ``_find_resumed``
    does; -1 where none is."""
    first = -1
    for word in words:
        if word:
            at = _find_resumed(text, word, start, memo)
            if at != -1 and (first == -1 or at < first):
                first = at
    return first


@dataclass(frozen=True, slots=True)
class FormGroup:
    """Argument forms written alike (the same parts, told apart by their value), with what matching
    reads off those parts worked out once per parser instead of once per value."""

    forms: tuple[ArgumentShape, ...]
    parts: tuple[ArgPart, ...]
    syntaxes: frozenset[str]
    types: frozenset[str]
    after: tuple[Markers, ...]  # for each part, the markers right after it
    before: tuple[Markers, ...]  # and right before it
    key_at: int  # the first key part (-1: none)
    value_at: int  # the value part (-1: none)
    # An argument written as a tag named by its key (``<k>v</k>``); None when the form is not that.
    tag: TagFrame | None
    # The text that closes the value (stripped), and the whitespace the template writes right before
    # and right after the value, which a raw value is trimmed of: read at every argument.
    value_stop: str
    value_lead: str
    value_trail: str

    @classmethod
    def of(cls, forms: tuple[ArgumentShape, ...]) -> FormGroup:
        parts = forms[0].parts
        after = tuple(_markers_after(parts, k) for k in range(len(parts)))
        before = tuple(_markers_before(parts, k) for k in range(len(parts)))
        key_at = next((k for k, part in enumerate(parts) if isinstance(part, ArgKey)), -1)
        value_at = next((k for k, part in enumerate(parts) if isinstance(part, ArgValue)), -1)
        written_before = _spelled(before[value_at]) if value_at >= 0 else ""
        written_after = _spelled(after[value_at]) if value_at >= 0 else ""
        return cls(
            forms,
            parts,
            frozenset(form.syntax for form in forms),
            frozenset(form.json_type for form in forms),
            after,
            before,
            key_at,
            value_at,
            form_tag_frame(forms[0]),
            written_after.strip(),
            written_before[len(written_before.rstrip()) :],
            written_after[: len(written_after) - len(written_after.lstrip())],
        )

    def tag_of(self, key: str | None) -> _Tag | None:
        if key is None or self.tag is None:
            return None
        key_part = self.parts[self.key_at]
        key = escape_name(key, key_part.escapes) if isinstance(key_part, ArgKey) else key
        # A tag is the key between the frame's text before it and the first character after it (the
        # rest after a closing key, MiniMax-M3's ``]<]minimax[>``, is written between arguments too).
        frame = self.tag
        return _Tag(frame.opening + key + frame.middle[:1], frame.closing + key + frame.end[:1])


_FORM_GROUPS: ByIdentity[tuple[ArgumentShape, ...], tuple[FormGroup, ...]] = ByIdentity()


def form_groups(forms: tuple[ArgumentShape, ...]) -> tuple[FormGroup, ...]:
    """Forms grouped by their parts: types written alike are told apart by their value (worked out
    once per shape: a server makes a parser per request)."""
    return _FORM_GROUPS.get(forms, _grouped, forms)


def _grouped(forms: tuple[ArgumentShape, ...]) -> tuple[FormGroup, ...]:
    groups: dict[tuple[object, ...], list[ArgumentShape]] = {}
    for form in forms:
        groups.setdefault(form.parts, []).append(form)
    # Forms with more literal text first: a typed marker (string="true") must win over a bare one.
    ordered = sorted(groups.values(), key=lambda g: -sum(len(p.text) for p in g[0].parts if isinstance(p, Marker)))
    return tuple(FormGroup.of(tuple(group)) for group in ordered)


@dataclass(slots=True)
class ArgumentsContext:
    """What reading a call's arguments takes besides their forms, the same for each argument: the
    tool's declared properties, how the template escapes and wraps strings (``escaping``,
    ``wrapper``: CDATA, ``quotes``: a template's own string quotes), what may follow the arguments
    (``following``), what stands between two arguments (``separator``), what may follow the whole call
    (``closers``), the separator between calls and what a call opens with (``next_call``), and where
    the tolerances applied are recorded (``tolerated``; None: strict, none applies)."""

    properties: Any
    escaping: str
    following: tuple[str, ...]
    wrapper: tuple[str, str] = ("", "")
    quotes: tuple[str, str] = ("", "")
    separator: Markers = ()
    closers: tuple[str, ...] = ()
    next_call: tuple[str, tuple[str, ...]] = ("", ())
    tolerated: list[tuple[str, int, str]] | None = None
    _raw_ends: dict[int, RawEnds] = field(default_factory=dict)

    def declared(self, key: str | None) -> Any:
        """The schema declared for argument ``key`` (None when there is none)."""
        return self.properties.get(key) if isinstance(self.properties, dict) and key is not None else None

    def raw_ends(self, group: FormGroup) -> RawEnds:
        """Where a value of ``group`` written as is ends: worked out once per call, not once per value."""
        ends = self._raw_ends.get(id(group))
        if ends is None:
            ends = RawEnds(group.parts, self.properties, self.separator, self.following, self.closers, self.next_call)
            self._raw_ends[id(group)] = ends
        return ends


# How an argument's value was written, which decides how it is read: as is (coerced to its type),
# a literal (JSON or Python), or a literal already decoded by a tolerance.
_RAW, _LITERAL, _DECODED = "raw", "literal", "decoded"


def match_form(
    group: FormGroup, context: ArgumentsContext, text: str, i: int, final: bool, memo: Memo | None = None
) -> tuple[int, str, Any] | Need | Mismatch:
    """One argument written in one of the group's (shared) forms: (end, name, value)."""
    key: str | None = None
    written: tuple[str, str, int] | None = None  # the value's text, how it is written, and its end
    for k, part in enumerate(group.parts):
        if isinstance(part, Marker):
            if not part.text:
                continue  # whitespace alone: the value's or the key's own, trimmed below
            step = match_word(text, i, part.text, final)
            if not isinstance(step, int):
                return step
            i = step
        elif isinstance(part, ArgKey):
            after = group.after[k]
            read = read_key(text, i, final, context.properties, after[0] if after else None, part.escapes)
            if not isinstance(read, int):
                return read if read is NEED else Mismatch("expected an argument name")
            name = unescape_name(text[i:read], part.escapes)
            if key is not None and name != key:
                return Mismatch(f"argument {key!r} is closed as {name!r}")  # <a>...</b>: no argument of either
            key = name
            i = read
        elif isinstance(part, ArgValue):
            if group.value_stop and ("raw" in group.syntaxes or "unknown" in group.syntaxes):
                got = _closed_value(group, context, key, text, i, final, memo)
            else:
                got = _open_value(group, context, key, text, i, final, memo)
            if not isinstance(got, tuple):
                return got
            written = got
            i = got[2]
    if key is None or written is None:
        return Mismatch("argument without name or value")
    raw_value, syntax, _ = written
    return i, key, _value_of(group, context, key, raw_value, syntax, i)


def _closed_value(
    group: FormGroup, context: ArgumentsContext, key: str | None, text: str, i: int, final: bool, memo: Memo | None
) -> tuple[str, str, int] | Need | Mismatch:
    """A value written as is before the form's closing text (``<parameter=k>v</parameter>``)."""
    stop = group.value_stop
    tag = group.tag_of(key)
    # A value in the template's wrapper (CDATA) may hold the closing marker: it ends after the wrapper's closer.
    value_from = _wrapped_end(text, i, context.wrapper, final, memo)
    if not isinstance(value_from, int):
        return NEED
    at = tag.close_at(text, value_from) if tag is not None else _find_resumed(text, stop, value_from, memo)
    # A value never runs past the end of its call.
    call_end = _earliest(text, context.following, value_from, memo)
    if call_end != -1 and (at == -1 or at > call_end):
        return Mismatch(f"argument value not closed by {stop!r} before the call ends")
    if at == -1:
        return NEED if not final else Mismatch(f"argument value not closed by {stop!r}")
    return _trim_written_whitespace(text[i:at], group.value_lead, group.value_trail), _RAW, at


def _open_value(
    group: FormGroup, context: ArgumentsContext, key: str | None, text: str, i: int, final: bool, memo: Memo | None
) -> tuple[str, str, int] | Need | Mismatch:
    """A value with no closing text of its own: a literal (JSON or Python), or, where the form writes
    strings as is, text up to the next argument or the call's end."""
    j = skip_ws(text, i)
    # A string the template writes as is with nothing after it (f(path=notes/a.txt, n=2)): it runs to
    # the next argument or the end of the call.
    bare = context.raw_ends(group) if "raw" in group.syntaxes else None
    declared = context.declared(key)
    if bare is not None and isinstance(declared, dict) and declared.get("type") == "string":
        step = bare.end(text, j, final, memo)
        if not isinstance(step, int):
            return step
        raw_value = text[j:step]
        quoted = _quoted_literal(raw_value) if context.tolerated is not None else None
        if quoted is not None:
            # A string in quotes the template does not write: a literal, its escapes decoded.
            context.tolerated.append((LITERAL_SYNTAX, j, ""))  # type: ignore[union-attr]  # not None: checked above
            return quoted, _DECODED, step
        return raw_value, _RAW, step
    end = value_end(text, j, memo)
    if bare is not None and (end == INVALID or (end == INCOMPLETE and final) or end >= 0):
        # A literal only if the argument ends right after it (3 is one; "3 apples" is text).
        after_literal = bare.ends_here(text, end, final) if end >= 0 else False
        if after_literal is NEED:
            return NEED
        if not after_literal:
            step = bare.end(text, j, final, memo)
            if not isinstance(step, int):
                return step
            return text[j:step], _RAW, step
    if end == INCOMPLETE:
        return NEED if not final else Mismatch("argument value ends early")
    if end == INVALID:
        # A raw value ended by what follows the whole argument.
        stop = group.value_stop
        ats = [at for t in ((stop,) if stop else context.following) if t and (at := text.find(t, j)) != -1]
        if not ats:
            return NEED if not final else Mismatch("argument value is not closed")
        return text[j : min(ats)].rstrip(), _RAW, min(ats)
    return text[j:end], _LITERAL, end


def _value_of(group: FormGroup, context: ArgumentsContext, key: str, raw_value: str, syntax: str, end: int) -> Any:
    """The JSON value of an argument's text, by how it is written and the type declared for it."""
    if syntax == _DECODED:
        return raw_value
    schema = context.declared(key)
    json_type = schema.get("type") if isinstance(schema, dict) and isinstance(schema.get("type"), str) else None
    if json_type is None and len(group.types) == 1:
        json_type = next(iter(group.types))
    quotes = context.quotes
    if syntax == _RAW:
        opener, closer = context.wrapper
        if opener and raw_value.startswith(opener) and raw_value.endswith(closer):
            raw_value = raw_value[len(opener) : len(raw_value) - len(closer)]
        if json_type != "string" and group.tag_of(key) is not None:
            nested = _read_tags(raw_value, group, schema, context)
            if nested is not None:
                return nested
        if quotes[0] and raw_value.lstrip()[:1] in ("{", "[") and json_type in (None, "object", "array"):
            try:
                return decode_notation(raw_value, *quotes)
            except Undecodable:
                pass
        return coerce(raw_value, json_type)
    try:
        value = decode(raw_value)
    except Undecodable:
        value = raw_value
        if quotes[0]:
            with contextlib.suppress(Undecodable):
                value = decode_notation(raw_value, *quotes)
    quoted = raw_value[:1] in "'\"" and raw_value[-1:] == raw_value[:1]
    if isinstance(value, str) and context.escaping == "none" and quoted:
        if quotes[0] and raw_value[0] != quotes[0] and context.tolerated is not None:
            # In quotes the template does not write strings in: a literal, its escapes decoded.
            context.tolerated.append((LITERAL_SYNTAX, end - len(raw_value), ""))
        else:
            value = raw_value[1:-1]  # quoted by the template but never escaped
    return value


def _quoted_literal(raw: str) -> str | None:
    """The text of ``raw`` when it is one quoted string literal (JSON's double quotes, or Python's single
    ones), its escapes decoded; else None."""
    if len(raw) < 2 or raw[0] not in "\"'" or raw[-1] != raw[0]:
        return None
    try:
        value = decode(raw)
    except Undecodable:
        return None
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class _Tag:
    """An argument written as a tag named by its key, closed by a tag naming it again
    (``<k>value</k>``): its value may hold the same tag, nested, so it ends at the close that
    balances it."""

    opening: str
    closing: str

    def close_at(self, text: str, i: int) -> int:
        """Where the closing marker that ends the value at ``i`` starts; -1 when it has not come."""
        depth, at = 1, i
        while True:
            close = text.find(self.closing, at)
            if close == -1:
                return -1
            nested = text.find(self.opening, at, close)
            if nested != -1:
                depth, at = depth + 1, nested + len(self.opening)
                continue
            depth -= 1
            if depth == 0:
                return close
            at = close + len(self.closing)


def _read_tags(value: str, group: FormGroup, schema: Any, context: ArgumentsContext) -> Any:
    """An object or array written as arguments are, each member a tag in the argument form
    (``<filters><lang>fr</lang><tags><item>a</item></tags></filters>``); None when ``value`` is not
    that. A template that writes a marker between two arguments writes it before the first member too
    (``]<]minimax[>`` of MiniMax-M3): that leading part of the closing marker moves to the end, where
    the last member's form ends with it."""
    after = group.value_stop
    opener = _spelled(group.before[group.key_at]).strip()
    text = value.strip()
    kind = schema.get("type") if isinstance(schema, dict) else None
    if after.startswith(text) and (text or kind in ("object", "array")):
        return [] if kind == "array" else {}  # no member: at most the part written before the first
    lead = next((n for n in range(len(after), -1, -1) if text.startswith(after[:n] + opener)), -1)
    if lead == -1 or not opener:
        return None
    text = text[lead:] + after[:lead]
    members: list[tuple[str, Any]] = []
    items = _EveryKey(schema.get("items", {}) if isinstance(schema, dict) else {})
    properties = schema.get("properties", {}) if isinstance(schema, dict) and kind != "array" else items
    members_context = ArgumentsContext(properties, context.escaping, (), context.wrapper, context.quotes)
    i = 0
    while (i := skip_ws(text, i)) < len(text):
        outcome = match_form(group, members_context, text, i, True)
        if not isinstance(outcome, tuple):
            return None
        i, name, member = outcome
        members.append((name, member))
    names = {name for name, _ in members}
    if kind == "array" or (kind is None and len(members) > 1 and len(names) == 1):
        return [member for _, member in members]
    return dict(members)


class _EveryKey(dict):  # type: ignore[type-arg]  # a dict to the code that reads properties
    """Properties where every key has one schema: an array's items, whatever tag names them."""

    def __init__(self, schema: Any) -> None:
        super().__init__()
        self.schema = schema

    def get(self, key: Any, default: Any = None) -> Any:
        return self.schema


class RawEnds:
    """Where a value written as is, with no marker after it, ends: before the separator when a declared
    argument of the tool follows it (its key written as the form writes keys), or before what follows
    the arguments when the call's own closers come after that; else it goes on (the value holds it)."""

    def __init__(
        self,
        parts: tuple[ArgPart, ...],
        properties: Any,
        separator: Markers,
        following: tuple[str, ...],
        closers: tuple[str, ...],
        next_call: tuple[str, tuple[str, ...]] = ("", ()),
    ) -> None:
        self.call_separator, self.call_openers = next_call[0], tuple(t for t in next_call[1] if t)
        at = next(k for k, part in enumerate(parts) if isinstance(part, ArgKey))
        self.before_key = tuple(p for p in parts[:at] if isinstance(p, Marker) and p.text)
        self.after_key = tuple(p for p in _markers_after(parts, at) if p.text)
        key = parts[at]
        escapes = key.escapes if isinstance(key, ArgKey) else ()
        self.names = (
            [written for written, _ in names_as_written(list(properties), escapes)]
            if isinstance(properties, dict)
            else []
        )
        self.separator = tuple(m for m in separator if m.text)
        self.following = tuple(t for t in following if t)
        self.closers = tuple(t for t in closers if t)

    def end(self, text: str, i: int, final: bool, memo: Memo | None = None) -> Step:
        """Where the value at ``i`` ends. ``memo`` keeps how far it was read in text that only grows:
        a place found not to end it never does, so a stream reads each character once."""
        marks = [m.text for m in self.separator[:1]] + list(self.following)
        kept = memo.get(("raw", i), i) if memo is not None else i
        at = kept if isinstance(kept, int) else i  # a raw value's entry is always a position
        found = {mark: text.find(mark, at) for mark in marks}
        while True:
            places = [k for k in found.values() if k != -1]
            if not places:
                if memo is not None:
                    memo[("raw", i)] = max(at, len(text) - max(map(len, marks), default=1) + 1, i)
                return NEED if not final else Mismatch("argument value is not closed")
            k = min(places)
            for mark in [mark for mark, pos in found.items() if pos == k]:
                verdict = self._ends_at(text, k, mark, final)
                if verdict is NEED:
                    if memo is not None:
                        memo[("raw", i)] = k
                    return NEED
                if verdict:
                    return k
            at = k + 1
            found = {mark: (pos if pos >= at else text.find(mark, at)) for mark, pos in found.items()}

    def ends_here(self, text: str, i: int, final: bool) -> bool | Need:
        """Whether the argument ends at ``i`` (right after a literal)."""
        j = skip_ws(text, i)
        if j == len(text):
            return NEED if not final else True
        for mark in [m.text for m in self.separator[:1]] + list(self.following):
            if text.startswith(mark, j):
                verdict = self._ends_at(text, j, mark, final)
                if verdict is not False:
                    return verdict
        return False

    def _ends_at(self, text: str, k: int, mark: str, final: bool) -> bool | Need:
        if self.separator and mark == self.separator[0].text:
            step = match_literal(text, k, self.separator, final)
            if not isinstance(step, int):
                return NEED if step is NEED else False
            return self._key_at(text, step, final)
        # What follows the arguments: the call must end there, the text after it being what may
        # follow a call (or nothing, at the end of the output).
        j = skip_ws(text, k + len(mark))
        if j == len(text):
            return NEED if not final else True
        for closer in self.closers:
            if text.startswith(closer, j):
                if closer != self.call_separator or not self.call_openers:
                    return True
                # Between two calls: only where the next call opens after it.
                after = skip_ws(text, j + len(closer))
                if any(text.startswith(opener, after) for opener in self.call_openers):
                    return True
                if not final and any(
                    opener.startswith(text[after : after + len(opener)]) for opener in self.call_openers
                ):
                    return NEED
                continue
            if not final and closer.startswith(text[j : j + len(closer)]):
                return NEED
        return not self.closers

    def _key_at(self, text: str, i: int, final: bool) -> bool | Need:
        """Whether a declared argument's key, as the form writes it, starts at ``i``."""
        step = match_literal(text, i, self.before_key, final) if self.before_key else i
        if not isinstance(step, int):
            return NEED if step is NEED else False
        j = skip_ws(text, step)
        if not self.names:
            # No tool declares its arguments: any name in the form's key spelling starts one.
            m = WORD_NAME.match(text, j)
            if m is None or (m.end() == len(text) and not final):
                return NEED if not final and (m is not None or j == len(text)) else False
            after = match_literal(text, m.end(), self.after_key, final) if self.after_key else m.end()
            return NEED if after is NEED else isinstance(after, int)
        for name in self.names:
            if text.startswith(name, j):
                after = match_literal(text, j + len(name), self.after_key, final) if self.after_key else j
                if after is NEED:
                    return NEED
                if isinstance(after, int):
                    return True
            elif not final and name.startswith(text[j : j + len(name)]):
                return NEED
        return False


@functools.lru_cache(maxsize=1024)
def _written_keys(names: tuple[str, ...], escapes: Escapes) -> tuple[str, ...]:
    """A schema's argument names as written, longest first: read at every argument, worked out once."""
    return tuple(written for written, _ in names_as_written(list(names), escapes))


def read_key(text: str, i: int, final: bool, properties: Any, after: Marker | None, escapes: Escapes = ()) -> Step:
    """Where an argument's name ends: a declared one, as written with ``escapes`` or as is, that the
    marker after it follows (whatever its characters: a quote, any script), else one read as
    ``read_name`` does."""
    end = after.text if after is not None else ""
    declared = _written_keys(tuple(properties), escapes) if isinstance(properties, dict) else ()
    for name in declared:
        if not name or not text.startswith(name, i):
            continue
        j = i + len(name)
        at = skip_ws(text, j)
        rest = text[at : at + len(end)] if end else text[j : j + 1]
        if end and rest.startswith(end):
            return j
        if end and not final and end.startswith(rest):
            return NEED  # the marker after it is still arriving
        if not end and ((rest == "" and final) or (rest and not (rest.isalnum() or rest in "_.-"))):
            return j
        if not end and rest == "":
            return NEED
    return read_name(text, i, final, (end,) if end else (), escapes)


def _markers_after(parts: tuple[object, ...], k: int) -> Markers:
    """The markers right after part ``k``, up to the next key or value."""
    found = []
    for part in parts[k + 1 :]:
        if not isinstance(part, Marker):
            break
        found.append(part)
    return tuple(found)


def _markers_before(parts: tuple[object, ...], k: int) -> Markers:
    found: list[Marker] = []
    for part in reversed(parts[:k]):
        if not isinstance(part, Marker):
            break
        found.insert(0, part)
    return tuple(found)


def _spelled(markers: Markers) -> str:
    """The text markers split from, with the whitespace the template wrote."""
    return markers[0].lead + "".join(marker.text + marker.trail for marker in markers) if markers else ""


def _trim_written_whitespace(value: str, lead: str, trail: str) -> str:
    """Remove exactly the whitespace the template writes around a raw value (``lead`` before it,
    ``trail`` after it), and no more: a value's own trailing newline must survive."""
    if lead and value.startswith(lead):
        value = value[len(lead) :]
    if trail and value.endswith(trail):
        value = value[: len(value) - len(trail)]
    return value
