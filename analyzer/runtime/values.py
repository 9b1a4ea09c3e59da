"""Reading values the way models write them: JSON, Python literals, and the usual slips between them.

``value_end`` finds where a value ends without decoding it, so a stream can tell "not finished yet"
from "finished" in one pass over new text; ``decode`` is tolerant of what real models write where the
template asked for JSON (``True``, single quotes, arguments encoded twice).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

INCOMPLETE = -1
INVALID = -2
_LITERAL_START = set("-0123456789tfnTFN")
_LITERAL_CHARS = set("0123456789+-.eEtruefalsnTFN")


def value_end(text: str, start: int) -> int:
    """End offset of the JSON or Python value at ``start``; INCOMPLETE if the text stops inside it,
    INVALID if no value starts there."""
    if start >= len(text):
        return INCOMPLETE
    first = text[start]
    if first in "{[":
        return _container_end(text, start)
    if first in "\"'":
        return _string_end(text, start)
    if first in _LITERAL_START:
        i = start
        while i < len(text) and text[i] in _LITERAL_CHARS:
            i += 1
        return INCOMPLETE if i == len(text) else i
    return INVALID


def _string_end(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return INCOMPLETE


def _container_end(text: str, start: int) -> int:
    closers = {"{": "}", "[": "]"}
    stack = [closers[text[start]]]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            end = _string_end(text, i)
            if end == INCOMPLETE:
                return INCOMPLETE
            i = end
            continue
        if ch in closers:
            stack.append(closers[ch])
        elif ch in "}]":
            if ch != stack[-1]:
                return INVALID
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return INCOMPLETE


class Undecodable(ValueError):
    pass


def decode(text: str, *, python: bool = False) -> Any:
    """A JSON value; Python literals too (``True``, ``None``, single quotes) since models mix them up."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in model text are not our warnings
            return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    repaired = text.replace("True", "true").replace("False", "false").replace("None", "null")
    try:
        return json.loads(repaired)
    except ValueError:
        raise Undecodable(f"not a JSON value: {text[:60]!r}") from None


def decode_arguments(text: str, encoding: str) -> dict[str, Any]:
    """Arguments as a dict. A JSON string holding the object (written by the template, or by a model
    that encoded it twice) is decoded once more."""
    value = decode(text, python=encoding == "python")
    for _ in range(2):
        if isinstance(value, str):
            value = decode(value)
    if not isinstance(value, dict):
        raise Undecodable(f"arguments are not an object: {text[:60]!r}")
    return value


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
        parts.append(json.dumps(text[start + len(quote_open):end], ensure_ascii=False))
        i = end + len(quote_close)
    return decode("".join(parts))


def _bare(fragment: str) -> str:
    fragment = _BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}"{m.group(3)}', fragment)
    return fragment.replace("True", "true").replace("False", "false").replace("None", "null")
