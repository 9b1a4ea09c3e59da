"""Matching one call of an output shape against model text: one matcher per part kind.

Every matcher takes the text, a position, and whether more text may still come (``final``), and
returns the position after what it matched, ``NEED`` when the text stops before it can tell, or a
``Mismatch`` saying why the text is not that part (the steps of ``steps.py``). Whitespace around
markers is flexible: models write a newline where the template wrote a space, or nothing. Arguments
written one by one are read form by form in ``key_values.py``; here, and as they arrive
(``KeyValuesReader``), they are read one after another.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .arguments_stream import ASLEEP, JsonArgumentsReader
from .call_forms import JsonCall
from .headers import HeaderToken
from .key_values import ArgumentsContext, FormGroup, form_groups, match_form, read_key
from .shape import (
    ArgKey,
    CallId,
    IdForm,
    Index,
    JsonArgs,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Name,
    Part,
    id_pattern,
    unescape_name,
)
from .shape_analysis import ByIdentity, follow, next_marker
from .steps import (
    NEED,
    Mismatch,
    Need,
    Step,
    Texts,
    match_literal,
    match_word,
    names_as_written,
    read_name,
    skip_ws,
)
from .tolerance import ARGUMENTS_ENCODING, CALL_LIST, HEADER_TOKEN, KEY_SPELLING, LITERAL_SYNTAX
from .values import (
    INCOMPLETE,
    INVALID,
    Memo,
    Undecodable,
    complete_json_at,
    decode_syntax,
    finite,
    json_text,
    python_literal,
    read_arguments,
    strict_object,
    value_end,
)

_INDEX_DIGITS = re.compile(r"\d+")
# Longer is no call id (the longest id forms are a prefix and a 64-character hash): text read as one
# would run on through a call.
_ID_LONGEST = 9 + 64
_ID_PATTERNS: dict[IdForm, re.Pattern[str]] = {}


def _id_regex(form: IdForm) -> re.Pattern[str]:
    if form not in _ID_PATTERNS:
        _ID_PATTERNS[form] = re.compile(id_pattern(form))
    return _ID_PATTERNS[form]


@dataclass(slots=True)
class CallMatch:
    """What a call's text read as, and where it ends."""

    end: int
    name: str = ""
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    arguments_text: str = ""  # the arguments as the model wrote them, when already a JSON object
    unread: list[tuple[str, str]] = field(default_factory=list)  # (field, its JSON text): members no layout path reads
    # (tolerance kind, where in the text, the model's text it left out of the message: a header's token)
    tolerated: list[tuple[str, int, str]] = field(default_factory=list)
    more: list[CallMatch] = field(default_factory=list)  # the other calls of one JSON list of calls
    name_at: int = -1  # where the name starts in the text


_BRACE = re.compile(r"\{")
_UNKNOWN_GATE = re.compile("")  # (not worked out yet)
_NAME_ENDS = re.compile(r"[^\w-]")


class CallMatcher:
    """Matches the parts of one call; ``tools`` maps declared names to their parameter schemas."""

    __slots__ = (
        "_arguments_gate",
        "_form_groups",
        "_name_ends",
        "_reader_gates",
        "_steps",
        "_written_names",
        "call_separator",
        "closers",
        "names",
        "next_call",
        "parts",
        "strict",
        "tools",
    )

    def __init__(
        self,
        parts: tuple[Part, ...],
        tools: dict[str, dict[str, Any]],
        closers: tuple[str, ...],
        *,
        call_separator: str = "",
        next_call: tuple[str, ...] = (),
        strict: bool = False,
    ):
        self.parts = parts
        self.strict = strict  # read only what the template writes: no tolerance (tolerance.py)
        # Between two calls, and what the next one opens with: a raw value is over at its call's end
        # only where another call follows that separator.
        self.call_separator, self.next_call = call_separator, next_call
        self.tools = tools
        self.names = sorted(tools, key=len, reverse=True)
        # Each name part's declared names as the template writes them (escaped), longest first, each
        # also as is after its escaped spelling: a model may write a name unescaped.
        self._written_names = {
            id(part): names_as_written(self.names, part.escapes) for part in parts if isinstance(part, Name)
        }
        # Text that may follow a call: a separator, the section closer, a stop string.
        self.closers = closers
        # What may stand right after each name part: it ends an undeclared name.
        self._name_ends = {
            id(part): follow(parts, k, closers) for k, part in enumerate(parts) if isinstance(part, Name)
        }
        # (kept by the forms' identity: a server makes a parser per request, and grouping them costs)
        self._form_groups = {id(part): form_groups(part.forms) for part in parts if isinstance(part, KeyValueArgs)}
        self._reader_gates: dict[
            int,
            tuple[tuple[re.Pattern[str], int] | None, tuple[re.Pattern[str], int] | None, re.Pattern[str] | None],
        ] = {}
        self._arguments_gate: re.Pattern[str] | None = _UNKNOWN_GATE
        # Each part with its matcher and the text that may follow it, read off the parts once.
        self._steps = tuple(
            (_HANDLERS.get(type(part)), part, next_marker(parts, k, closers)) for k, part in enumerate(parts)
        )

    def match(self, text: str, start: int, final: bool, memo: Memo | None = None) -> CallMatch | Need | Mismatch:
        """The call at ``start``. ``memo``: how far values were scanned in text that only grows between
        matches (a stream's, which it clears when the text changes otherwise), so that matching a long
        call again costs nothing extra; one matcher serves every stream of a parser."""
        if memo is None:
            memo = {}
        result = CallMatch(start)
        i = start
        for handler, part, following in self._steps:
            if handler is None:
                raise TypeError(f"no matcher for call part {type(part).__name__}")
            step = handler(self, part, text, i, final, result, following, memo)
            if not isinstance(step, int):
                return step
            i = step
        result.end = i
        return result

    def arguments_gate(self) -> re.Pattern[str] | None:
        """The characters one of which ends the text before the call's arguments (``arguments_start``
        finds them only once one came): the brace JSON arguments open with, the last character of the
        marker before key/value arguments, what ends a name before them; None where it may be any."""
        if self._arguments_gate is _UNKNOWN_GATE:
            gate: re.Pattern[str] | None = None
            for k, part in enumerate(self.parts):
                if isinstance(part, (JsonArgs, JsonCallObject)):
                    gate = _BRACE
                    break
                if isinstance(part, KeyValueArgs):
                    before = self.parts[k - 1] if k else None
                    if isinstance(before, Marker) and not before.text and k > 1:
                        before = self.parts[k - 2]  # (whitespace alone: read along with what is before it)
                    if isinstance(before, Marker) and before.text:
                        gate = _final_characters([before.text])
                    elif isinstance(before, Name):
                        gate = _NAME_ENDS  # a name is over at the first character no name goes on with
                    break
            self._arguments_gate = gate
        return self._arguments_gate

    def arguments_start(
        self, text: str, start: int, memo: Memo, fresh_ids: bool = False
    ) -> tuple[CallMatch, JsonArgumentsReader | KeyValuesReader, int] | Need | None:
        """While the call at ``start`` is still arriving: what its parts before its arguments read (the
        name, an id), a reader of the arguments as they arrive, and where they start, once they have;
        NEED before then; None when this call's arguments cannot be sent early (a JSON string, not an
        object, or an id written after them). ``fresh_ids``: the caller gives every call an id of its
        own, so an id (or count) the model writes after the arguments need not be waited for."""
        result = CallMatch(start)
        i = start
        for k, (handler, part, following) in enumerate(self._steps):
            if isinstance(part, JsonArgs):
                if part.encoding == "string" or (part.encoding == "python" and self.strict):
                    return None  # arguments decoded from a string are sent with the call
                if not fresh_ids and _id_written_after(self.parts[k + 1 :]):
                    return None
                j = skip_ws(text, i)
                if j == len(text):
                    return NEED
                return (result, JsonArgumentsReader(j), j) if text[j] == "{" else None
            if isinstance(part, JsonCallObject):
                found = _call_object_arguments(text, skip_ws(text, i), part.layout, memo, fresh_ids)
                if isinstance(found, tuple):
                    result.name = found[0]
                    return result, JsonArgumentsReader(found[1]), found[1]
                return found
            if isinstance(part, KeyValueArgs):
                if not fresh_ids and _id_written_after(self.parts[k + 1 :]):
                    return None
                return result, KeyValuesReader(self, part, following, result.name, i), i
            if handler is None:
                return None
            step = handler(self, part, text, i, False, result, following, memo)
            if not isinstance(step, int):
                return NEED if step is NEED else None
            i = step
        return None

    def reader_gates(
        self, part: KeyValueArgs, tails: tuple[str, ...]
    ) -> tuple[tuple[re.Pattern[str], int] | None, tuple[re.Pattern[str], int] | None, re.Pattern[str] | None]:
        """For ``KeyValuesReader``: what must have come for an argument of ``part`` to read whole (its
        last marker, the separator or what follows the arguments, and where a form ends with its
        value, the first character of those and of what may follow the call, quotes, brackets and
        whitespace; an argument whole only once more text came is read at the next of those: a
        little later, never otherwise); what must have come for the markers before a value to read
        (the last of them; None where a value follows no marker); and the last characters of both,
        one of which a chunk that may change anything holds."""
        gates = self._reader_gates.get(id(part))
        if gates is None:
            groups = self._form_groups[id(part)]
            # A form read whole ends with its last marker; whether its value ended there may turn on
            # what follows (a separator, the arguments' end, the call's end).
            ends = [_marker_text(g.parts[-1]) for g in groups if g.parts]
            after = [m.text for m in part.separator] + list(tails) + [self.call_separator]
            ends += after
            if any(not g.parts or not _is_marker(g.parts[-1]) for g in groups):
                # A form ends with its value: its end is what follows (its first character), the end
                # of a quoted or bracketed value, or whitespace.
                ends += [w.strip()[:1] for w in (*after, *self.closers, *self.next_call) if w.strip()]
                ends += [*part.string_quotes, *part.string_wrapper, '"', "'", "}", "]", " ", "\n", "\t", "\r"]
            # The markers before a value read once the last of them is whole.
            opens = [_marker_text(g.parts[g.value_at - 1]) for g in groups if g.value_at >= 1]
            opens_otherwise = any(g.value_at < 1 or not _is_marker(g.parts[g.value_at - 1]) for g in groups)
            gates = self._reader_gates[id(part)] = (
                _any_word(ends),
                None if opens_otherwise else _any_word(opens),
                None if opens_otherwise else _final_characters(ends + opens),
            )
        return gates

    # ---------------------------------------------------------------- one matcher per part kind

    def marker(
        self, part: Marker, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        return match_word(text, i, part.text, final)

    def name(self, part: Name, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo) -> Step:
        i = skip_ws(text, i)
        result.name_at = i
        written_names = self._written_names.get(id(part)) or names_as_written(self.names, part.escapes)
        for written, name in written_names:
            if text.startswith(written, i):
                end = i + len(written)
                if end < len(text) and (text[end].isalnum() or text[end] in "_-"):
                    continue  # a longer undeclared name
                if end == len(text) and not final:
                    return NEED  # the name may go on
                return _named(result, name, end)
        rest = len(text) - i
        if not final and any(
            rest < len(written) and text.startswith(written[:rest], i) for written, _ in written_names
        ):
            return NEED  # a declared name cut short: read as undeclared, it would end at its quote
        step = read_name(text, i, final, self._name_ends.get(id(part), following), part.escapes)
        if isinstance(step, int):
            return _named(result, unescape_name(text[i:step], part.escapes), step)
        if isinstance(step, Mismatch):
            return Mismatch("expected a function name")
        return step

    def call_id(
        self, part: CallId, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        i = skip_ws(text, i)
        m = _id_regex(part.form).match(text, i)
        if m is None:
            return NEED if not final and len(text) - i < _ID_LONGEST else Mismatch("expected a call id")
        value, whole = m.group(), False
        for tail in following:
            # The marker that follows may be made of id characters: the id ends where it begins.
            cut = value.find(tail) if tail else -1
            if cut > 0:
                value, whole = value[:cut], True
        arriving = not whole and m.end() == len(text) and not final
        # (an id still arriving is as long as its text less what may begin the marker after it: a
        # stream and a batch refuse the same ids)
        held = _partial_suffix_of(value, 0, len(value), tuple(t for t in following if t)) if arriving else 0
        if len(value) - held > _ID_LONGEST:
            return Mismatch("expected a call id")
        if arriving:
            return NEED
        result.call_id = value
        return i + len(value)

    def index(
        self, part: Index, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        i = skip_ws(text, i)
        m = _INDEX_DIGITS.match(text, i)
        if m is None:
            return NEED if (i == len(text) and not final) else Mismatch("expected a call index")
        if m.end() == len(text) and not final:
            return NEED
        if part.id_prefix is not None and result.name_at >= 0:
            # The template writes name and count as the call's id: the model's own id for it.
            result.call_id = part.id_prefix + text[result.name_at : m.end()]
        return m.end()

    def json_args(
        self, part: JsonArgs, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        start = skip_ws(text, i)
        complete = complete_json_at(text, start, memo)
        if complete == INCOMPLETE:
            return NEED if not final else Mismatch("the arguments end before they are complete")
        if (
            isinstance(complete, tuple)
            and isinstance(complete[0], dict)
            and not (self.strict and part.encoding != "object")
        ):
            # Already the strict JSON object clients expect: passed on as the model wrote it.
            result.arguments, end = complete
            result.arguments_text = text[start:end]
            if part.encoding == "string":
                result.tolerated.append((ARGUMENTS_ENCODING, start, ""))
            elif part.encoding == "python" and python_literal(text[start:end]) is None:
                result.tolerated.append((LITERAL_SYNTAX, start, ""))
            return end
        span = _json_span(
            text,
            i,
            final,
            memo,
            "the arguments end before they are complete",
            "expected arguments as a JSON value",
        )
        if not isinstance(span, tuple):
            return span
        i, end = span
        raw = text[i:end]
        try:
            result.arguments, other_syntax, other_encoding = read_arguments(raw, part.encoding, strict=self.strict)
        except Undecodable as exc:
            return Mismatch(f"arguments are not valid: {exc}")
        if other_syntax:
            result.tolerated.append((LITERAL_SYNTAX, i, ""))
        if other_encoding:
            result.tolerated.append((ARGUMENTS_ENCODING, i, ""))
        # The model's own text is kept only when it already is the JSON object clients expect.
        result.arguments_text = raw if strict_object(raw) else ""
        return end

    def json_call(
        self, part: JsonCallObject, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        i = skip_ws(text, i)  # where the object starts: what a tolerance applied is told by
        complete = complete_json_at(text, i, memo)
        if complete == INCOMPLETE:
            return NEED if not final else Mismatch("the call ends before it is complete")
        if isinstance(complete, tuple):
            call, end = complete
        else:
            span = _json_span(text, i, final, memo, "the call ends before it is complete", "expected a JSON object")
            if not isinstance(span, tuple):
                return span
            i, end = span
            try:
                call, other_syntax = decode_syntax(text[i:end], strict=self.strict)
            except Undecodable as exc:
                return Mismatch(f"the call is not valid JSON: {exc}")
            if other_syntax:
                result.tolerated.append((LITERAL_SYNTAX, i, ""))
        if isinstance(call, list) and call and not self.strict:
            # One JSON list of calls where the template writes one object per call.
            result.tolerated.append((CALL_LIST, i, ""))
            result.more = [CallMatch(end) for _ in call[1:]]
            for item, read in zip(call, [result, *result.more], strict=True):
                problem = self._call_object(item, part.layout, read, i)
                if problem is not None:
                    return problem
            return end
        problem = self._call_object(call, part.layout, result, i)
        if problem is not None:
            return problem
        # (read alike however the object was decoded: a stream's memo decides which way)
        result.arguments_text = _arguments_as_written(text, i, part.layout, result.arguments, memo)
        return end

    def _call_object(self, call: Any, layout: JsonCall, result: CallMatch, i: int) -> Mismatch | None:
        """Read one decoded call object into ``result``; the Mismatch when it is none."""
        if not isinstance(call, dict):
            return Mismatch("the call is not a JSON object")
        if layout.name_is_key:
            if len(call) != 1:
                return Mismatch("expected one key, the function name")
            ((name, arguments),) = call.items()
        else:
            name = _get(call, layout.name_path)
            arguments = _get(call, layout.arguments_path)
            if not self.strict and (name is None or arguments is None):
                name, arguments, layout = _respelled(call, layout, name, arguments, result, i)
            if layout.id_path is not None:
                found = _get(call, layout.id_path)
                if isinstance(found, (str, int)):
                    result.call_id = str(found)
            result.unread = _unread_members(call, layout)
            if layout.index_path is not None:
                index = _get(call, layout.index_path)
                if index is not None and not (type(index) is int or (isinstance(index, str) and index.isdigit())):
                    # Not a count: the model wrote something else where the index goes; keep its text.
                    result.unread.append((".".join(layout.index_path), json.dumps(index, ensure_ascii=False)))
                elif index is not None and layout.id_path is None:
                    result.call_id = str(index)  # the count the template writes in the id's place
        if not isinstance(name, str):
            return Mismatch("the object has no function name", "not_a_reply")
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            if layout.arguments_encoding != "string":
                if self.strict:
                    return Mismatch("arguments are a string, not an object")
                result.tolerated.append((ARGUMENTS_ENCODING, i, ""))
            try:
                arguments, other_syntax, _ = read_arguments(arguments, "string", strict=self.strict)
            except Undecodable as exc:
                return Mismatch(f"arguments are not valid: {exc}")
            if other_syntax:
                result.tolerated.append((LITERAL_SYNTAX, i, ""))
        elif layout.arguments_encoding == "string" and isinstance(arguments, dict):
            if self.strict:
                return Mismatch("arguments are an object, not a JSON string")
            result.tolerated.append((ARGUMENTS_ENCODING, i, ""))
        if not isinstance(arguments, dict):
            return Mismatch("arguments are not an object")
        result.name = name
        result.arguments = arguments
        return None

    def arguments_context(
        self,
        part: KeyValueArgs,
        properties: Any,
        following: Texts,
        tolerated: list[tuple[str, int, str]] | None,
    ) -> ArgumentsContext:
        """What reading ``part``'s arguments takes besides their forms, for a call to a tool with
        ``properties``, followed by ``following``, its tolerances recorded in ``tolerated``."""
        return ArgumentsContext(
            properties,
            part.string_escaping,
            following,
            part.string_wrapper,
            part.string_quotes,
            part.separator,
            self.closers,
            (self.call_separator, self.next_call),
            tolerated,
        )

    def key_values(
        self, part: KeyValueArgs, text: str, i: int, final: bool, result: CallMatch, following: Texts, memo: Memo
    ) -> Step:
        schema = self.tools.get(result.name, {})
        properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
        arguments: dict[str, Any] = {}
        forms = self._form_groups[id(part)]
        separator = part.separator
        tails = tuple(tail for tail in following if tail)
        context = self.arguments_context(part, properties, following, None if self.strict else result.tolerated)
        while True:
            j = skip_ws(text, i)
            if tails and text.startswith(tails, j):
                break  # the call goes on with what follows its arguments
            if j == len(text):
                if final:
                    break
                return NEED
            matched = None
            for group in forms:
                outcome = match_form(group, context, text, j, final, memo)
                if outcome is NEED:
                    # An earlier form may still match once more text arrives: decide then, so that
                    # every chunking of the output reads the same.
                    return NEED
                if isinstance(outcome, tuple):
                    matched = outcome
                    break
            if matched is None:
                break  # not an argument: the next part of the call decides
            i, key, value = matched
            arguments[key] = value
            if separator:
                after = match_literal(text, i, tuple(separator), final)
                if after is NEED:
                    return NEED
                if isinstance(after, int):
                    i = after
        result.arguments = arguments
        return i


def _id_written_after(parts: tuple[Part, ...]) -> bool:
    """Whether the call's id is written among ``parts`` (it must be known before the call is sent)."""
    return any(isinstance(p, CallId) or (isinstance(p, Index) and p.id_prefix is not None) for p in parts)


# A strict JSON string token: what json.loads reads as one string (no raw control character).
_JSON_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
# What a layout reads, kept by its identity: hashing a layout costs more than a parse's lookups should.
_HEADS: ByIdentity[JsonCall, re.Pattern[str] | None] = ByIdentity()
_READ_PATHS: ByIdentity[JsonCall, tuple[tuple[tuple[str, ...], ...], frozenset[str]]] = ByIdentity()


def _call_object_head(layout: JsonCall) -> re.Pattern[str] | None:
    """A streamable call object's beginning up to its arguments object, the name first, with any
    whitespace (``skip_ws``'s) between the tokens: where ``_call_object_arguments`` would find the
    arguments, found in one pass at C speed. None for other layouts."""
    if not _streamable_layout(layout):
        return None
    name, arguments = (re.escape(json_text(path[0])) for path in (layout.name_path, layout.arguments_path))
    return re.compile(rf"\{{\s*{name}\s*:\s*{_JSON_STRING}\s*,\s*{arguments}\s*:\s*(?=\{{)")


def _streamable_layout(layout: JsonCall, fresh_ids: bool = False) -> bool:
    """A call object whose arguments a stream may send early: the name and the arguments object at
    its top, and no id or count to read (or one that is not needed: ``fresh_ids``)."""
    return not (
        layout.name_is_key
        or len(layout.name_path) != 1
        or len(layout.arguments_path) != 1
        or layout.arguments_encoding != "object"
        or (not fresh_ids and (layout.id_path is not None or layout.index_path is not None))
    )


def _call_object_arguments(
    text: str, i: int, layout: JsonCall, memo: Memo, fresh_ids: bool = False
) -> tuple[str, int] | Need | None:
    """In a call object still arriving at ``i``: its name, and where its arguments object opens, once
    both were written (the name first); NEED before then; None when the object is laid out otherwise
    (the name a key, nested paths, an id or count to read unless ``fresh_ids``, arguments as a string)."""
    if not _streamable_layout(layout, fresh_ids):
        return None
    if i >= len(text):
        return NEED
    if text[i] != "{":
        return None
    name: str | None = None
    k = i + 1
    while True:
        k = skip_ws(text, k)
        if k == len(text):
            return NEED
        read = _string_at(text, k, memo) if text[k] == '"' else None
        if not isinstance(read, tuple):
            return read
        key, key_end = read
        k = skip_ws(text, key_end)
        if k == len(text):
            return NEED
        if text[k] != ":":
            return None
        value_at = skip_ws(text, k + 1)
        if value_at == len(text):
            return NEED
        if key == layout.arguments_path[0]:
            return (name, value_at) if name is not None and text[value_at] == "{" else None
        if key == layout.name_path[0]:
            read = _string_at(text, value_at, memo)
            if not isinstance(read, tuple):
                return read
            name, end = read
        else:
            end = value_end(text, value_at, memo)
            if end == INCOMPLETE:
                return NEED
            if end < 0:
                return None
        k = skip_ws(text, end)
        if k == len(text):
            return NEED
        if text[k] != ",":
            return None
        k += 1


def _arguments_as_written(text: str, i: int, layout: JsonCall, arguments: Any, memo: Memo) -> str:
    """The arguments of a strict JSON call object at ``i`` as the model wrote them, where a stream
    could send them early (see ``_call_object_arguments``), so that what it sent is their beginning;
    "" elsewhere (they are re-encoded)."""
    head = _HEADS.get(layout, _call_object_head, layout)
    if head is None:
        return ""  # a layout whose arguments no stream sends early
    begun = head.match(text, i)  # as models mostly write it
    if begun is not None:
        at = begun.end()
    else:
        found = _call_object_arguments(text, i, layout, memo)
        if not isinstance(found, tuple):
            return ""
        at = found[1]
    complete = complete_json_at(text, at, memo)  # strict JSON read in one pass at C speed
    if isinstance(complete, tuple):
        value, end = complete
        # The object may hold the arguments key twice: the text kept must be the one that was read.
        return text[at:end] if isinstance(value, dict) and value == arguments else ""
    end = value_end(text, at, memo)
    written = text[at:end] if end > at else ""
    if not written or not strict_object(written):
        return ""
    return written if json.loads(written) == arguments else ""


def _string_at(text: str, k: int, memo: Memo) -> tuple[str, int] | Need | None:
    """The strict JSON string at ``k`` and where it ends; NEED while it may still be arriving; None
    where no such string stands."""
    complete = complete_json_at(text, k, memo)  # the common case: whole, read at C speed
    if isinstance(complete, tuple):
        value, end = complete
        return (value, end) if isinstance(value, str) else None
    end = value_end(text, k, memo)
    if end == INCOMPLETE:
        return NEED
    value = _json_string(text[k:end]) if end >= 0 else None
    return (value, end) if value is not None else None


def _json_string(written: str) -> str | None:
    """The text of a strict JSON string, else None."""
    try:
        value = json.loads(written)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


class KeyValuesReader:
    """Arguments written one by one, as they arrive, encoded as the JSON object a call's arguments
    become (``json_text``): each argument once the matcher reads it whole (as ``key_values`` does,
    form by form), and a string argument written as is before a closing marker as its text comes,
    less what may yet be that marker, and less trailing whitespace (the template's own is trimmed).
    ``more`` returns the text that became certain; nothing more is sent past a point of doubt (a
    key written twice: the object keeps one value), and the closing brace comes with the call.

    A stream calls ``more`` at every chunk, so each call does only what the new text may change: an
    argument is matched again only once a character that may end one of its forms arrived (the last
    character of a marker), a string's beginning is read once, and its text is scanned and encoded
    from where the last call stopped."""

    def __init__(self, matcher: CallMatcher, part: KeyValueArgs, following: Texts, name: str, start: int) -> None:
        self.matcher, self.part, self.following = matcher, part, following
        schema = matcher.tools.get(name, {})
        properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
        self.properties: dict[str, Any] = properties if isinstance(properties, dict) else {}
        self.groups = matcher._form_groups[id(part)]
        self.tails = tuple(tail for tail in following if tail)
        self.context = matcher.arguments_context(part, self.properties, following, None if matcher.strict else [])
        self._end_gate, self._open_gate, self._idle_gate = matcher.reader_gates(part, self.tails)
        self.at = start  # where the next argument (or the separator before it) starts
        self.count = 0  # arguments sent whole
        self.keys: set[str] = set()
        self.scan = -1  # in a string argument arriving: where its closing marker is looked for next
        self.done = False
        self._stalled = -1  # the limit the last look stopped at, with nothing more to read before it
        self._new_argument()

    def _new_argument(self) -> None:
        self._sent: list[str] = []  # what was sent of the argument still arriving
        self._tried = -1  # how far the text was when the argument was last matched in vain
        self._open_tried = -1  # and when its beginning was last read in vain
        # A string argument arriving: (where it was looked for, key, its form, where its value starts),
        # once its beginning is read; its stops; where its text starts and how far it was sent.
        self._opened_at: tuple[int, str, FormGroup, int] | None = None
        self._stops: tuple[str, ...] = ()
        self._longest_stop = 0
        self._cut = -1  # where the first of its stops stands, once seen
        self._cut_scan = -1  # where that stop is looked for next
        self._body = -1  # where its text starts (past the template's leading whitespace), once known
        self._body_sent = -1  # how far its text was sent
        self._unsettled = False  # its beginning may yet read as another form's too
        self._lost = False  # and then did

    def writes_any(self, words: list[str]) -> bool:
        """Whether the argument forms write one of ``words`` (a call's closing text, where a malformed
        call is cut): a stream would stop at once, and where it stops would turn on the chunking."""
        texts = [m.text for g in self.groups for m in g.parts if isinstance(m, Marker)]
        texts += [m.text for m in self.part.separator]
        return any(word and word in text for word in words for text in texts)

    def stalled(self, limit: int) -> bool:
        """Whether ``more`` would find nothing new unless the stream lets it read past ``limit``: it
        stopped there, between arguments (the text held back may close the call)."""
        return self._stalled == limit

    def more(self, text: str, limit: int, memo: Memo, force: bool = False) -> str:
        """What became certain; ``force``: with no shortcut (the call's last look, as a batch parse's)."""
        self._stalled = -1
        out = []
        while not self.done:
            piece = self._next(text, limit, memo, force)
            if piece is None:
                break
            out.append(piece)
        return "".join(out)

    def plain(self, text: str, chunk: str, spaces: bool = True) -> str | None:
        """``chunk``, just added to the end of ``text``, where it is certain as it stands: the middle
        of a string value sent up to the chunk, and nothing in it that may start the value's stops,
        be trailing whitespace or need an escape (the caller has made sure it starts no text that
        may close the call; ``spaces``: and no such text starts with whitespace); else None, and
        ``more`` reads it. (What ``more`` would send.)"""
        if self._cut >= 0 or self._lost or self._unsettled or self.done or not self._sent:
            return None
        plain = self._plain
        if plain is None or self._opened_at is None:
            return None
        at = len(text) - len(chunk)
        held = text[self._body_sent :]
        if self._body_sent == at or (spaces and self._spaces_plain and held[: at - self._body_sent].isspace()):
            # Plain text, after nothing held back or after whitespace held back as it might have been
            # trailing (it is not: text follows it).
            m = plain.match(text, at)
            if m is not None and m.end() == len(text):
                new = chunk if self._body_sent == at else json_text(held)[1:-1]
                self._body_sent = len(text)
                self._sent.append(new)
                return new
        # Held back: whitespace, then what may begin a stop, and still so: nothing more is certain,
        # however far the stream lets it read.
        rest = held.lstrip()
        if not rest or (self._prefixes_plain and any(len(s) > len(rest) and s.startswith(rest) for s in self._stops)):
            return ""
        return None

    _plain: re.Pattern[str] | None = None
    _prefixes_plain = False
    _spaces_plain = False

    def wake(self, text: str) -> re.Pattern[str] | None:
        """The characters one of which must arrive before ``more`` may find anything new in ``text``
        (ASLEEP: none will); None: any may. Between arguments, or in one not sent as it comes, nothing
        matters until a character that may end a marker arrives, and the stream need not look (nor
        work out how far it may read) before then."""
        if self.done:
            return ASLEEP
        if self._opened_at is not None or self._tried < 0 or self._open_tried < 0:
            return None
        gate = self._idle_gate
        # (from where either gate was last looked for, to the end: text held back by the stream too)
        return gate if gate is not None and gate.search(text, min(self._tried, self._open_tried)) is None else None

    def _next(self, text: str, limit: int, memo: Memo, force: bool) -> str | None:
        """The next argument's certain text ("" when it adds nothing), or None when nothing moved."""
        i = self.at
        separator = self.part.separator
        if self.count and separator:
            step = match_literal(text, i, tuple(separator), False)
            if step is NEED:
                return None
            if isinstance(step, int):
                i = step
        j = skip_ws(text, i)
        if j >= limit:
            self._stalled = limit
            return None
        if self.tails and text.startswith(self.tails, j):
            self.done = True  # the arguments end: the brace comes with the call
            return None
        if self.scan >= 0 and not force and not self._may_close(text, limit):
            return self._string_so_far(text, j, limit, force)  # a long string arriving: matched once it may end
        arrived = force or self._arrived(self._end_gate, text, j, self._tried, limit)
        self._tried = limit
        if arrived:
            for group in self.groups:
                outcome = self._match(group, text, j, memo)
                if outcome is NEED:
                    break
                if isinstance(outcome, tuple):
                    if outcome[0] > limit:
                        break  # read past what may be the call's closer: as far as it goes so far
                    return self._whole(outcome, limit)
        # Not an argument (the call's next part decides), one that turns out malformed, one read past the
        # limit, or text that no form reads yet but may with more: what it reads as so far; looked at
        # again with more text.
        return self._string_so_far(text, j, limit, force)

    @staticmethod
    def _arrived(gate: tuple[re.Pattern[str], int] | None, text: str, j: int, tried: int, limit: int) -> bool:
        """Whether one of the gate's words stands in ``text[j:limit]`` and may have come since it was
        looked for up to ``tried`` (always, without a gate)."""
        if gate is None or tried < 0:
            return True
        words, back = gate
        return words.search(text, max(j, tried - back), limit) is not None

    def _match(self, group: FormGroup, text: str, j: int, memo: Memo) -> tuple[int, str, Any] | Need | Mismatch:
        if self.context.tolerated:
            self.context.tolerated.clear()  # tolerances apply while arriving, recorded by the batch
        return match_form(group, self.context, text, j, False, memo)

    def _whole(self, outcome: tuple[int, str, Any], limit: int) -> str | None:
        end, key, value = outcome
        clean, _ = finite(value)
        encoded = json_text(clean)
        if key in self.keys or (not encoded.isascii() and not _utf8(encoded)):
            self.done = True
            return None
        self.keys.add(key)
        whole = ("{" if not self.count else ", ") + json_text(key) + ": " + encoded
        sent = "".join(self._sent)
        if not whole.startswith(sent):
            self.done = True  # (never, by construction: what was sent is held to what is certain)
            return None
        self.scan = -1
        self._new_argument()
        self.count += 1
        self.at = end
        return whole[len(sent) :]

    def _may_close(self, text: str, limit: int) -> bool:
        """Whether the string arriving may have ended since last looked at: a closing marker arrived."""
        found = any(text.find(stop, max(0, self.scan), limit) != -1 for stop in self._stops)
        self.scan = max(self.scan, limit - self._longest_stop + 1)
        return found

    def _string_so_far(self, text: str, j: int, limit: int, force: bool) -> str | None:
        """The certain text of a string argument still arriving at ``j``; None when there is none (not
        a string the form writes as is before a marker, or not yet past its key)."""
        opened = self._opened_at
        if self._lost:
            return None
        if opened is None or opened[0] != j:
            arrived = force or self._arrived(self._open_gate, text, j, self._open_tried, limit)
            self._open_tried = limit
            if not arrived:
                return None  # its beginning reads as it did: no marker completed since
            found = self._string_start(text, j)
            if found is None:
                return None
            key, group, i = found
            tag = group.tag_of(key)
            stops = tuple(w for w in (group.value_stop, tag.opening if tag else "", *self.tails) if w)
            self._stops, self._longest_stop, self.scan = stops, max(map(len, stops)), max(self.scan, i)
            # Text sent as it stands: no whitespace (it may be trailing), nothing json.dumps escapes, no
            # lone surrogate, and no character a stop starts with.
            firsts = "".join(sorted({re.escape(stop[0]) for stop in stops}))
            # (a stop found inside another's beginning would be missed by that shortcut)
            self._prefixes_plain = not any(a in b[:-1] for a in stops for b in stops)
            # (whitespace held back is sent with the text after it, unless a stop may start with it)
            self._spaces_plain = not any(stop[0].isspace() for stop in stops)
            self._plain = re.compile(f'[^\\s"\\\\\\x00-\\x1f\\ud800-\\udfff{firsts}]+')
            self._opened_at = opened = (j, key, group, i)
            self._cut, self._cut_scan, self._body, self._body_sent = -1, i, -1, -1
        elif self._unsettled and self._string_start(text, j) is None:
            self._lost = True  # another form reads it too: no more of it is sent
            return None
        _, key, group, i = opened
        stops = self._stops
        # Never past the first of those markers (the value may run on past it, nested, or turn out
        # malformed there): a cut that, once there, stays where it is, so every chunking sends the same.
        if self._cut < 0:
            found_at = [at for stop in stops if (at := text.find(stop, self._cut_scan, limit)) != -1]
            if found_at:
                self._cut = min(found_at)
            else:
                self._cut_scan = max(self._cut_scan, limit - self._longest_stop + 1)
        if 0 <= self._cut < limit:
            limit = self._cut
        start = self._body
        if start < 0:
            lead = group.value_lead
            if limit - i < len(lead) and lead.startswith(text[i:limit]):
                return None
            start = self._body = i + len(lead) if text.startswith(lead, i) else i
        end = limit - _partial_suffix_of(text, start, limit, stops)
        floor = max(start, self._body_sent)
        while end > floor and text[end - 1].isspace():
            end -= 1  # trailing whitespace: the template's own is trimmed, other whitespace sent later
        if self._sent and end <= self._body_sent:
            return None
        piece = text[max(start, self._body_sent) : end]
        if not piece.isascii() and not _utf8(piece):
            self.done = True  # (a lone surrogate: json_text would escape all of the value otherwise)
            return None
        new = json_text(piece)[1:-1]
        if not self._sent:
            new = ("{" if not self.count else ", ") + json_text(key) + ': "' + new
        self._sent.append(new)
        self._body_sent = end
        return new

    def _string_start(self, text: str, j: int) -> tuple[str, FormGroup, int] | None:
        """(key, form, where its value starts) for a declared string argument whose form writes it as
        is up to a marker, once its key and the markers before the value are read; else None. Only
        where no other form reads the same beginning: which one the argument is may turn on its end."""
        found: list[tuple[str, FormGroup, int]] = []
        self._unsettled = False
        for group in self.groups:
            opened = self._opened(group, text, j)
            if isinstance(opened, tuple):
                found.append(opened)
            elif opened is NEED:
                self._unsettled = True  # another form may read it too, with more text: looked at again
        if len(found) != 1:
            return None
        key, group, i = found[0]
        declared = self.properties.get(key)
        if key in self.keys or not isinstance(declared, dict) or declared.get("type") != "string":
            return None
        if not group.value_stop or "raw" not in group.syntaxes or self.part.string_wrapper[0]:
            return None
        return key, group, i

    def _opened(self, group: FormGroup, text: str, j: int) -> tuple[str, FormGroup, int] | Need | None:
        """The key and where the value starts, where ``group``'s parts before its value read at ``j``;
        NEED while they may still."""
        i, key = j, None
        for k, part in enumerate(group.parts[: group.value_at]):
            if isinstance(part, Marker):
                step = match_word(text, i, part.text, False) if part.text else i
            elif isinstance(part, ArgKey):
                after = group.after[k]
                step = read_key(text, i, False, self.properties, after[0] if after else None, part.escapes)
                if isinstance(step, int):
                    key = unescape_name(text[i:step], part.escapes)
            else:
                return None
            if step is NEED:
                return NEED
            if not isinstance(step, int):
                return None
            i = step
        return (key, group, i) if key is not None and group.value_at >= 0 else None


def _any_word(words: list[str]) -> tuple[re.Pattern[str], int] | None:
    """A pattern finding any of ``words`` (as stripped: a marker is matched after whitespace), and how
    far back before new text one may start; None when there is none to find."""
    found = sorted({w.strip() for w in words if w.strip()}, key=len, reverse=True)
    if not found:
        return None
    return re.compile("|".join(map(re.escape, found))), len(found[0]) - 1


def _is_marker(part: object) -> bool:
    return isinstance(part, Marker) and bool(part.text)


def _marker_text(part: object) -> str:
    return part.text if isinstance(part, Marker) else ""


def _final_characters(words: list[str]) -> re.Pattern[str] | None:
    """A pattern finding any last character of ``words`` (also as stripped: a marker is matched after
    whitespace, and may be read without its own); None when there is none to find."""
    last = {w[-1] for word in words for w in (word, word.strip()) if w}
    return re.compile("[" + "".join(re.escape(c) for c in sorted(last)) + "]") if last else None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _partial_suffix_of(text: str, start: int, end: int, words: tuple[str, ...]) -> int:
    """Length of the longest end of ``text[start:end]`` that may yet be one of ``words``: that begins
    one, with the text after ``end`` too (all of it is known: an end the text goes on from otherwise
    is no word, however the output was cut into chunks)."""
    best = 0
    for word in words:
        # Such an end starts with the word's first character: look only where that stands.
        at = text.find(word[:1], max(start, end - len(word) + 1), end)
        while at != -1 and end - at > best:
            if text.startswith(word[: len(text) - at], at):  # (the rest of the text, or the whole word)
                best = end - at
                break
            at = text.find(word[:1], at + 1, end)
    return best


class VariantMatcher(CallMatcher):
    """A matcher of a call form the template does not write (headers.py), which records the
    tolerances ``kinds`` at the call's start on each call it reads. ``token_slot``: the part a
    token of the header's bracketing may stand before (its index, the token's regex), recorded as
    ``header_token`` where one does."""

    __slots__ = ("kinds",)

    def __init__(
        self,
        parts: tuple[Part, ...],
        kinds: tuple[str, ...],
        *args: Any,
        token_slot: tuple[int, HeaderToken] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(parts, *args, **kwargs)
        self.kinds = kinds
        if token_slot is not None:
            at, token = token_slot
            _, part, following = self._steps[at]
            assert isinstance(part, Marker)
            steps = list(self._steps)
            steps[at] = (_after_header_token(re.compile(token.whole), re.compile(token.beginning)), part, following)
            self._steps = tuple(steps)

    def match(self, text: str, start: int, final: bool, memo: Memo | None = None) -> CallMatch | Need | Mismatch:
        got = super().match(text, start, final, memo)
        if isinstance(got, CallMatch):
            got.tolerated[:0] = [(kind, start, "") for kind in self.kinds]
        return got


def _after_header_token(token: re.Pattern[str], partial: re.Pattern[str]) -> Callable[..., Step]:
    """The marker step of a header marker that a token (``token``) may stand before: the token is
    skipped, and recorded; text that may still become one waits."""

    def step(
        matcher: CallMatcher,
        part: Marker,
        text: str,
        i: int,
        final: bool,
        result: CallMatch,
        following: Texts,
        memo: Memo,
    ) -> Step:
        j = skip_ws(text, i)
        m = token.match(text, j)
        if m is not None:
            got = match_word(text, m.end(), part.text, final)
            if isinstance(got, int):
                result.tolerated.append((HEADER_TOKEN, j, m.group()))
            return got
        if not final and partial.fullmatch(text, j):
            return NEED
        return match_word(text, i, part.text, final)

    return step


def _named(result: CallMatch, name: str, end: int) -> Step:
    """Record the call's name; a format that writes it twice (a header and the call body) must agree."""
    if result.name and result.name != name:
        return Mismatch(f"the call is named {result.name!r} and then {name!r}")
    result.name = name
    return end


# each handler takes the kind of part it is keyed by
_HANDLERS: dict[type[Any], Callable[..., Step]] = {
    Marker: CallMatcher.marker,
    Name: CallMatcher.name,
    CallId: CallMatcher.call_id,
    Index: CallMatcher.index,
    JsonArgs: CallMatcher.json_args,
    JsonCallObject: CallMatcher.json_call,
    KeyValueArgs: CallMatcher.key_values,
}


def _json_span(
    text: str, i: int, final: bool, memo: Memo | None, cut_short: str, not_json: str
) -> tuple[int, int] | Step:
    """Where the JSON value after the whitespace at ``i`` starts and ends; else the step to return:
    NEED (more text may complete it) or a Mismatch saying it was ``cut_short`` or is ``not_json``."""
    start = skip_ws(text, i)
    end = value_end(text, start, memo)
    if end == INCOMPLETE or (end == INVALID and start == len(text) and not final):
        return NEED if not final else Mismatch(cut_short)
    if end == INVALID:
        return Mismatch(not_json)
    return start, end


# Keys models write for a call object's name and arguments other than the template's own.
_NAME_KEYS = ("name", "function", "tool_name", "tool")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def _respelled(
    call: dict[str, Any], layout: JsonCall, name: Any, arguments: Any, result: CallMatch, at: int
) -> tuple[Any, Any, JsonCall]:
    """A call object whose name or arguments stand under another common key than the layout's (of one
    key: ``parameters`` for ``arguments``): read there, and the layout they were read with (so that the
    key counts as read)."""
    respelled = layout
    if name is None and len(layout.name_path) == 1:
        key = next((k for k in _NAME_KEYS if isinstance(call.get(k), str) and k != layout.arguments_path[0]), None)
        if key is not None:
            name, respelled = call[key], replace(respelled, name_path=(key,))
    if arguments is None and len(layout.arguments_path) == 1:
        key = next((k for k in _ARGUMENT_KEYS if k in call and k != respelled.name_path[0]), None)
        if key is not None:
            arguments, respelled = call[key], replace(respelled, arguments_path=(key,))
    if respelled is not layout:
        result.tolerated.append((KEY_SPELLING, at, ""))
    return name, arguments, respelled


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _read_paths(layout: JsonCall) -> tuple[tuple[tuple[str, ...], ...], frozenset[str]]:
    """The key paths a JSON call's layout reads, and the top-level keys it reads whole (no longer
    path runs through them)."""
    paths = (layout.name_path, layout.arguments_path, layout.id_path, layout.index_path)
    read = (*(path for path in paths if path), *(path for path, _ in layout.constants))
    whole = frozenset(path[0] for path in read if len(path) == 1) - {path[0] for path in read if len(path) > 1}
    return read, whole


def _unread_members(call: dict[str, Any], layout: JsonCall) -> list[tuple[str, str]]:
    """Members of a JSON call that none of the layout's paths reads (a misspelled arguments key, an
    extra field): their text is reported, not dropped."""
    read, whole = _READ_PATHS.get(layout, _read_paths, layout)
    if whole.issuperset(call):
        return []  # every member is one the layout reads whole: the common case, answered at once
    found: list[tuple[str, str]] = []
    pending: list[tuple[tuple[str, ...], Any]] = [((), call)]
    while pending:
        prefix, node = pending.pop()
        for key, value in node.items():
            path = prefix + (key,)
            if any(known[: len(path)] == path and len(known) > len(path) for known in read) and isinstance(value, dict):
                pending.append((path, value))  # a branch on the way to a path the layout reads
            elif not any(path[: len(known)] == known for known in read):
                found.append((".".join(path), json.dumps({key: value}, ensure_ascii=False)[1:-1]))
    return sorted(found)
