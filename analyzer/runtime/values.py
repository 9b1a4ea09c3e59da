"""Reading values the way models write them: JSON, Python literals, and the usual slips between them.

``value_end`` finds where a value ends without decoding it, so a stream can tell "not finished yet"
from "finished" in one pass over new text; ``decode`` is tolerant of what real models write where the
template asked for JSON (``True``, single quotes, arguments encoded twice).
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
import warnings
from typing import Any

INCOMPLETE = -1
INVALID = -2
_LITERAL_START = set("-0123456789tfnTFN")
_LITERAL_CHARS = set("0123456789+-.eEtruefalsnoTFN")  # numbers, true/false/null, True/False/None


# A string's body up to its closing quote (or up to a backslash the text ends on); runs of characters
# that mean nothing inside a container. Matched by the re module, so long values cost little.
_STRING_BODY = {'"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S), "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*", re.S)}
_NOTHING_TO_SEE = re.compile(r"[^\"'{}\[\]]*")
_CLOSERS = {"{": "}", "[": "]"}
# A closing quote, then whitespace and an opening one: where two strings may stand side by side.
_SIDE_BY_SIDE_QUOTES = re.compile(r"[\"']\s*[\"']")
_LAYOUT_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})

# start of a value -> how far scanning it got: strings an offset, containers (offset, stack)
# keyed by where a value starts; raw values (read up to what follows them) by ("raw", start)
Memo = dict[int | tuple[str, int], int | tuple[int, tuple[str, ...]]]


def value_end(text: str, start: int, memo: Memo | None = None) -> int:
    """End offset of the JSON or Python value at ``start``; INCOMPLETE if the text stops inside it,
    INVALID if no value starts there. ``memo`` keeps how far an incomplete value was scanned, so that
    text that only grows (a stream) is never scanned twice."""
    if start >= len(text):
        return INCOMPLETE
    first = text[start]
    if first in "{[":
        return _container_end(text, start, memo)
    if first in "\"'":
        return _string_end(text, start, memo)
    if first in _LITERAL_START:
        i = start
        while i < len(text) and text[i] in _LITERAL_CHARS:
            i += 1
        return INCOMPLETE if i == len(text) else i
    return INVALID


def _string_end(text: str, start: int, memo: Memo | None) -> int:
    quote = text[start]
    resume = memo.get(start) if memo is not None else None
    body = _STRING_BODY[quote].match(text, resume if isinstance(resume, int) else start + 1)
    assert body is not None  # the pattern matches the empty string
    stop = body.end()
    if stop < len(text) and text[stop] == quote:
        return stop + 1
    if memo is not None:
        memo[start] = stop  # the closing quote (or what follows a final backslash) is still to come
    return INCOMPLETE


def _container_end(text: str, start: int, memo: Memo | None) -> int:
    resume = memo.get(start) if memo is not None else None
    i, stack = (resume[0], list(resume[1])) if isinstance(resume, tuple) else (start + 1, [_CLOSERS[text[start]]])
    while True:
        nothing = _NOTHING_TO_SEE.match(text, i)
        assert nothing is not None  # the pattern matches the empty string
        i = nothing.end()
        if i >= len(text):
            break
        ch = text[i]
        if ch in "\"'":
            end = _string_end(text, i, memo)
            if end == INCOMPLETE:
                break
            i = end
            continue
        if ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch != stack[-1]:
            return INVALID
        else:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    if memo is not None:
        memo[start] = (i, tuple(stack))
    return INCOMPLETE


class Undecodable(ValueError):
    pass


_SURROGATE = re.compile("[\ud800-\udfff]")  # one by one: a pair split in two is no character either
_MAX_DEPTH = 512  # deeper values are refused rather than risking the interpreter's recursion limit
_UNDECODABLE = (ValueError, SyntaxError, MemoryError, RecursionError, TypeError)


def decode(text: str, *, python: bool = False) -> Any:
    """A JSON value; Python literals too (``True``, ``None``, single quotes) since models mix them up.
    Python literals become JSON values (bytes as text, tuples and sets as lists, keys as strings);
    what has no JSON value (a complex number, a value nested too deeply) is ``Undecodable``."""
    return decode_syntax(text)[0]


def decode_syntax(text: str, *, strict: bool = False, python: bool = False) -> tuple[Any, bool]:
    """``decode``, and whether the text is written in the other literal syntax than the one asked for
    (Python where ``python`` is false, JSON where it is true). ``strict``: only the syntax asked for."""
    try:
        value = json.loads(text)
        # Nesting past _MAX_DEPTH takes more brackets than a shorter text holds.
        value = value if len(text) <= _MAX_DEPTH else _shallow(value)
        if not python:
            return value, False
        if python_literal(text) is None:
            if strict:
                raise Undecodable(f"not a Python literal: {text[:60]!r}")
            return value, True
        return value, False
    except _UNDECODABLE:
        if strict and not python:
            raise Undecodable(f"not a JSON value: {text[:60]!r}") from None
    found = python_literal(text)
    if found is not None:
        return found[0], not python
    if strict:
        raise Undecodable(f"not a {'Python literal' if python else 'JSON value'}: {text[:60]!r}")
    repaired = _constants_as_json(text)
    try:
        return _shallow(json.loads(repaired)), True
    except _UNDECODABLE:
        raise Undecodable(f"not a JSON value: {text[:60]!r}") from None


def python_literal(text: str) -> tuple[Any] | None:
    """The JSON value of a Python literal, in a 1-tuple (the value may be None); None when it is none.
    Two strings side by side (``["a" "b"]``) are none: Python joins them, but a model that wrote them
    left out a comma, and a stream that sent ``"a"`` cannot take it back."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in model text are not our warnings
            value = ast.literal_eval(text.strip())
    except _UNDECODABLE:
        return None
    if _SIDE_BY_SIDE_QUOTES.search(text) and _joins_strings(text):
        return None
    try:
        return (_as_json(value, 0),)
    except _UNDECODABLE:
        return None


def _joins_strings(text: str) -> bool:
    """Whether two string literals stand side by side in ``text`` (a valid Python literal)."""
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text.strip()).readline):
        if token.type in _LAYOUT_TOKENS:
            continue
        if token.type == tokenize.STRING and previous == tokenize.STRING:
            return True
        previous = token.type
    return False


def _shallow(value: Any) -> Any:
    """``value``, if it is nested no deeper than every later step (validation, serialising) can go."""
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > _MAX_DEPTH:
            raise ValueError("nested too deeply")
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
    return value


def strict_object(text: str) -> bool:
    """Whether ``text`` is a JSON object as strict JSON has it (no NaN or Infinity), so it can be
    passed on as the model wrote it."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(_shallow(_STRICT_JSON.decode(text)), dict)  # json.loads, less a decoder per call
    except _UNDECODABLE:
        return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant)
# Up to this length, a value still arriving is read whole again at each chance that it is complete;
# past it, scanned once, in Python, through the memo (a long value with many closing brackets).
_SHORT_JSON = 512


def complete_json_at(text: str, start: int, memo: Memo | None = None) -> tuple[Any, int] | int | None:
    """The strict JSON object, array or string at ``start`` and where it ends, when the text already
    holds all of it: the common case, read at C speed in one pass. INCOMPLETE when the text is the
    beginning of a short one (strict JSON runs out of text, nothing else is wrong); None otherwise, and
    then ``value_end`` tells a value still to come from an invalid one. A value the memo has scanned
    before is not tried again (it was incomplete then), so a growing value is never re-read from its
    start: a short one is read again whole, which costs less than scanning it once in Python."""
    if start >= len(text) or text[start] not in '{["' or (memo and start in memo):
        return None
    try:
        value, end = _STRICT_JSON.raw_decode(text, start)
        return (value if end - start <= _MAX_DEPTH else _shallow(value)), end
    except json.JSONDecodeError as exc:
        return INCOMPLETE if exc.pos == len(text) and len(text) - start <= _SHORT_JSON else None
    except _UNDECODABLE:
        return None


def _as_json(value: Any, depth: int) -> Any:
    """A Python literal as the JSON value it stands for."""
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_as_json(item, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        return [_as_json(item, depth + 1) for item in sorted(value, key=repr)]
    if isinstance(value, dict):
        return {_json_key(key): _as_json(item, depth + 1) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} has no JSON value")


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    raise ValueError(f"a {type(key).__name__} key has no JSON value")


# What json.dumps(value, ensure_ascii=False, allow_nan=False) builds for every call, built once.
_JSON_WRITER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def json_text(value: Any) -> str:
    """Strict JSON text for a value: no NaN or Infinity (see ``finite``), and a lone surrogate kept as
    its escape, so the text always encodes as UTF-8."""
    text = _JSON_WRITER.encode(value)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, allow_nan=False)
    return text


_FLAT_JSON = frozenset((str, int, bool, type(None)))


def finite(value: Any, path: tuple[str | int, ...] = ()) -> tuple[Any, list[tuple[tuple[str | int, ...], str]]]:
    """``value`` with every number JSON cannot hold (NaN, Infinity, 1e999) replaced by its text, and
    where each was: nothing the model wrote is lost, and the arguments stay strict JSON."""
    if type(value) is dict and all(type(item) in _FLAT_JSON for item in value.values()):
        return value, []  # flat arguments without a float, as most are: nothing to replace
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        text = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        return text, [(path, text)]
    if isinstance(value, list):
        items, found = [], []
        for index, item in enumerate(value):
            clean, more = finite(item, path + (index,))
            items.append(clean)
            found += more
        return items, found
    if isinstance(value, dict):
        members, found = {}, []
        for key, item in value.items():
            clean, more = finite(item, path + (key,))
            members[key] = clean
            found += more
        return members, found
    return value, []


def readable(text: str) -> str:
    """Text with each lone surrogate (from a ``\\ud800`` escape) replaced by U+FFFD: names and ids
    must encode as UTF-8."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def read_arguments(text: str, encoding: str, *, strict: bool = False) -> tuple[dict[str, Any], bool, bool]:
    """Arguments written in ``encoding`` ("object": a JSON object, "string": a JSON string holding one,
    "python": a Python dict), as a dict; and whether they were written in the other literal syntax,
    and encoded otherwise (a string where an object was asked for, twice, or an object where a string
    was). ``strict``: only as the encoding says."""
    value, other_syntax = decode_syntax(text, strict=strict, python=encoding == "python")
    encodings = 0
    for _ in range(2):
        if isinstance(value, str):
            value, nested_syntax = decode_syntax(value, strict=strict)
            other_syntax = other_syntax or nested_syntax
            encodings += 1
    if not isinstance(value, dict):
        raise Undecodable(f"arguments are not an object: {text[:60]!r}")
    other_encoding = encodings != (1 if encoding == "string" else 0)
    if strict and other_encoding:
        raise Undecodable(f"arguments are not {'a JSON string' if encoding == 'string' else 'an object'}")
    return value, other_syntax, other_encoding


def coerce(raw: str, json_type: str | None) -> Any:
    """A raw (unquoted) argument value typed by its schema type; without one, JSON if it reads as JSON."""
    if json_type == "string":
        return raw
    stripped = raw.strip()
    if json_type is not None:
        try:
            value = decode(stripped)
        except Undecodable:
            return raw
        return value
    try:
        value = decode(stripped)
    except Undecodable:
        return raw
    return value if not isinstance(value, str) else raw


_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)(\s*:)")


def decode_notation(text: str, quote_open: str, quote_close: str) -> Any:
    """A nested value in a template's own notation: JSON-like, keys bare, strings between the
    template's own quote markers (``{lang:<|"|>fr<|"|>}``). Strings become JSON strings, bare keys are
    quoted, Python literals read as JSON."""
    parts: list[str] = []
    i = 0
    while i < len(text):
        start = text.find(quote_open, i) if quote_open else -1
        if start == -1:
            parts.append(_bare(text[i:]))
            break
        end = text.find(quote_close, start + len(quote_open))
        if end == -1:
            raise Undecodable(f"unclosed string in {text[:60]!r}")
        parts.append(_bare(text[i:start]))
        parts.append(json.dumps(text[start + len(quote_open) : end], ensure_ascii=False))
        i = end + len(quote_close)
    return decode("".join(parts))


def _bare(fragment: str) -> str:
    return _constants_as_json(_BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}"{m.group(3)}', fragment))


# A JSON string is passed over whole: the words are the model's text there ("fNone", a key "isTrue").
_STRING_OR_CONSTANT = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|\b(True|False|None)\b', re.S)
_JSON_CONSTANTS = {"True": "true", "False": "false", "None": "null"}


def _constants_as_json(text: str) -> str:
    """``text`` with Python's True, False and None written as JSON's, outside strings."""
    return _STRING_OR_CONSTANT.sub(lambda m: m.group(1) or _JSON_CONSTANTS[m.group(2)], text)
