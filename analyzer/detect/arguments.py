"""How call arguments are written: one JSON value, or argument by argument.

A JSON value (object, JSON string, Python dict) is found by decoding the render at each brace or
quote and comparing with the arguments we sent. Otherwise arguments are written one by one: the unit
that repeats when a second argument is added is one argument, and rendering one argument of each
JSON type shows how each type is written (``<parameter=k>v</parameter>``, ``k=1``, ``k:<|"|>v<|"|>``).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from analyzer.description import (
    ArgumentForm,
    ArgumentOrder,
    ArgumentSyntax,
    Field,
    JsonArguments,
    JsonType,
    KeyValueArguments,
    PatternPart,
    StringEscaping,
    Text,
    Unknown,
)
from analyzer.detect.names import detect_key_escaping
from analyzer.diff import common_prefix_len, common_suffix_len, find_all, repeated_unit
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session

_decoder = json.JSONDecoder()


def json_values(text: str, openers: str = "{") -> Iterator[tuple[int, int, Any]]:
    """Every JSON value that starts at one of ``openers`` in ``text``: (start, end, value)."""
    for i, ch in enumerate(text):
        if ch in openers:
            try:
                value, end = _decoder.raw_decode(text, i)
            except ValueError:
                continue
            yield i, end, value


def python_dicts(text: str) -> Iterator[tuple[int, int, Any]]:
    """Python dict literals (``{'k': 'v', 'n': True}``), as a template printing a dict writes them."""
    for i, ch in enumerate(text):
        if ch != "{":
            continue
        end = _balanced_end(text, i)
        if end is None:
            continue
        try:
            value = ast.literal_eval(text[i:end])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        yield i, end, value


def _balanced_end(text: str, start: int) -> int | None:
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


@dataclass(frozen=True, slots=True)
class Located:
    """Arguments found in a call's text: where (relative to the call text) and how."""

    start: int
    end: int
    arguments: JsonArguments | KeyValueArguments


def find_json_arguments(call_text: str, arguments: dict[str, Any]) -> Located | None:
    for start, end, value in json_values(call_text):
        if value == arguments:
            return Located(start, end, JsonArguments("object"))
    for start, end, value in json_values(call_text, '"'):
        if isinstance(value, str) and _decodes_to(value, arguments):
            return Located(start, end, JsonArguments("string"))
    for start, end, value in python_dicts(call_text):
        if value == arguments:
            return Located(start, end, JsonArguments("python"))
    return None


def _decodes_to(text: str, arguments: dict[str, Any]) -> bool:
    try:
        return bool(json.loads(text) == arguments)
    except ValueError:
        return False


def _one_call(form: v.Spelling, arguments: dict[str, Any]) -> dict[str, Any]:
    return v.assistant(form, calls=(v.Call(v.FN1, arguments, 0),))


def _substitute_argument(text: str) -> str:
    return text.replace(v.ARG2, v.ARG1).replace(v.STR2, v.STR1)


def _value_candidates(value: Any) -> list[tuple[ArgumentSyntax, str]]:
    """(syntax, text) ways a value may be written, longest first so quotes are claimed by the value."""
    found: list[tuple[ArgumentSyntax, str]] = [
        ("json", json.dumps(value, ensure_ascii=False)),
        ("json", json.dumps(value, ensure_ascii=False, separators=(",", ":"))),
        ("python", repr(value)),
    ]
    if isinstance(value, str):
        found.append(("raw", value))
    return sorted(found, key=lambda item: -len(item[1]))


def _form(
    json_type: JsonType, unit: str, value: Any, reference: str | None, *, quoted_raw: bool = False
) -> ArgumentForm:
    spans: list[tuple[int, int, PatternPart]] = [(i, i + len(v.ARG1), Field("key")) for i in find_all(unit, v.ARG1)]
    syntax: ArgumentSyntax = "unknown"
    value_span: tuple[int, int] | None = None
    for candidate_syntax, text in _value_candidates(value):
        places = [i for i in find_all(unit, text) if not any(s <= i < e or s < i + len(text) <= e for s, e, _ in spans)]
        if places:
            at = _likeliest_value_place(unit, places, len(text), reference)
            syntax, value_span = candidate_syntax, (at, at + len(text))
            break
    if quoted_raw and value_span is not None and syntax in ("json", "python"):
        start, end = value_span
        if end - start >= 2 and unit[start] == unit[end - 1] and unit[start] in "'\"":
            syntax, value_span = "raw", (start + 1, end - 1)
    if value_span is None and reference is not None:
        # A syntax of the template's own (``{Oqz:1}``): the value is what differs from a string argument.
        head = common_prefix_len(unit, reference)
        tail = common_suffix_len(unit, reference, limit=len(unit) - head)
        value_span = (head, len(unit) - tail)
    if value_span is not None:
        spans.append((value_span[0], value_span[1], Field("value")))
    return ArgumentForm(json_type, build_pattern(unit, spans), syntax)


def _likeliest_value_place(unit: str, places: list[int], size: int, reference: str | None) -> int:
    """Where in ``unit`` the value stands when its text occurs more than once (``type="null">null``):
    the place whose surroundings are most like those of the string value in ``reference``, the same
    argument written with a string; the first place when there is nothing to compare with."""
    if len(places) == 1 or reference is None:
        return places[0]
    found = find_all(reference, v.STR1)
    if len(found) != 1:
        return places[0]
    before, after = reference[: found[0]], reference[found[0] + len(v.STR1) :]
    return max(
        places,
        key=lambda at: (
            common_suffix_len(unit[:at], before) + common_prefix_len(unit[at + size :], after),
            -at,
        ),
    )


def build_pattern(text: str, spans: list[tuple[int, int, PatternPart]]) -> tuple[PatternPart, ...]:
    """Cut ``text`` into literals and the given field spans (which must not overlap)."""
    parts: list[PatternPart] = []
    at = 0
    for start, end, part in sorted(spans, key=lambda s: s[0]):
        if start < at:
            continue
        if start > at:
            parts.append(Text(text[at:start]))
        parts.append(part)
        at = end
    if at < len(text):
        parts.append(Text(text[at:]))
    return tuple(parts)


def find_key_value_arguments(session: Session, call_output: str, call_start: int, call_end: int) -> Located | Unknown:
    form = session.form
    two = session.output(_one_call(form, {v.ARG1: v.STR1, v.ARG2: v.STR2}))
    if isinstance(two, Failed):
        return Unknown(f"a call with two arguments does not render: {two.message}")
    unit = repeated_unit(call_output, two, _substitute_argument, v.ARG1)
    if unit is None or not (call_start <= unit.start and unit.end <= call_end):
        return Unknown("no repeating argument unit found between one and two arguments")
    head, tail = call_output[: unit.start], call_output[unit.end :]
    string_unit = unit.first
    escaping = _string_escaping(session, head, tail)
    # A string written in quotes but never escaped is raw text between quote characters the
    # template writes itself; the quotes belong to the pattern, not to a JSON or Python literal.
    forms = [_form("string", string_unit, v.STR1, None, quoted_raw=escaping == "none")]
    for json_type, value in v.TYPED_VALUES.items():
        output = session.output(_one_call(form, {v.ARG1: value}))
        if isinstance(output, Failed) or not (output.startswith(head) and output.endswith(tail)):
            continue
        typed_unit = output[len(head) : len(output) - len(tail)]
        forms.append(_form(json_type, typed_unit, value, string_unit))
    wrapper = _special_string_wrapper(session, head, tail, string_unit)
    return Located(
        unit.start - call_start,
        unit.end - call_start,
        KeyValueArguments(
            unit.separator, tuple(forms), escaping, _order(session), wrapper, detect_key_escaping(session)
        ),
    )


def _order(session: Session) -> ArgumentOrder | Unknown:
    """Whether arguments are written in the order given or sorted by name: sent out of order
    (the sentinel names sort ARG1 first), sorted ones come back with ARG1 first."""
    output = session.output(_one_call(session.form, {v.ARG2: v.STR2, v.ARG1: v.STR1}))
    if isinstance(output, Failed) or v.ARG1 not in output or v.ARG2 not in output:
        return Unknown("two arguments given out of order do not render")
    return "sorted" if output.find(v.ARG1) < output.find(v.ARG2) else "as given"


def _string_escaping(session: Session, head: str, tail: str) -> StringEscaping | Unknown:
    output = session.output(_one_call(session.form, {v.ARG1: v.TRICKY_STRING}))
    if isinstance(output, Failed) or not (output.startswith(head) and output.endswith(tail)):
        return Unknown("a string with quotes and a newline does not render")
    unit = output[len(head) : len(output) - len(tail)]
    if json.dumps(v.TRICKY_STRING, ensure_ascii=False)[1:-1] in unit:
        return "json"
    if repr(v.TRICKY_STRING)[1:-1] in unit:
        return "python"
    if v.TRICKY_STRING in unit:
        return "none"
    return Unknown("strings are rewritten in a way we do not recognise")


def _special_string_wrapper(session: Session, head: str, tail: str, string_unit: str) -> tuple[str, str]:
    """Text some templates put around a string only when it holds special characters (``<![CDATA[``
    ... ``]]>``): the string with quotes, a newline and markup is compared with a plain one."""
    output = session.output(_one_call(session.form, {v.ARG1: v.TRICKY_STRING}))
    at = string_unit.find(v.STR1)
    if isinstance(output, Failed) or at == -1 or not (output.startswith(head) and output.endswith(tail)):
        return ("", "")
    unit = output[len(head) : len(output) - len(tail)]
    before, after = string_unit[:at], string_unit[at + len(v.STR1) :]
    if not (unit.startswith(before) and unit.endswith(after)):
        return ("", "")
    middle = unit[len(before) : len(unit) - len(after)]
    inner = middle.find(v.TRICKY_STRING)
    if middle == v.TRICKY_STRING or inner == -1:
        return ("", "")
    return (middle[:inner], middle[inner + len(v.TRICKY_STRING) :])
