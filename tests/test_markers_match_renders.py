"""The markers in each golden description must reproduce what the template writes for other calls.

The analysis runs on sentinel names and values; here every corpus template renders calls with
ordinary names and values (a comma and a space inside a string, an integer, two parallel calls where
the template takes them), and the model's output (the render past the generation prompt) must be,
from its first character, exactly what the description says: the history prefix, the section opener,
one call pattern per call joined by the separator, the section closer, then the turn's end or stop.
Inside each call every field holds the call's own value: the name exactly, the arguments decoding to
exactly the arguments given (JSON, a JSON string, a Python dict, or argument by argument through the
form for each JSON type), the id as given, the index counting from its base.

The check is a small backtracking matcher over the description's pieces, written here on purpose
apart from the parser: it takes no whitespace the description does not hold. It is shown to reject
descriptions with one thing wrong (a separator, a section opener or closer, a call literal, the
arguments' encoding) and calls other than the ones rendered.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers.golden import Call, assistant_output, compile_for, golden, golden_descriptions, tool_calls

from analyzer.description import (
    CallIds,
    Calls,
    Field,
    FormatDescription,
    JsonArguments,
    JsonCall,
    KeyValueArguments,
    Pattern,
    Text,
    Unknown,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "where"},
                    "days": {"type": "integer", "description": "how many days"},
                },
                "required": ["location"],
            },
        },
    }
    for name in ("get_weather", "list_files")
]
CALLS: list[Call] = [
    ("get_weather", {"location": "Paris, France", "days": 3}, "Ab3De6Gh9"),
    ("list_files", {"location": "/tmp/x y"}, "Zy8Xw7Vu6"),
]
USER = {"role": "user", "content": "What is the weather?"}

_decoder = json.JSONDecoder()


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1`` is not ``true``, ``3`` is not ``3.0``."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# --------------------------------------------------------------------------- the matcher

# A piece takes the text from a position and yields every position where it can end; when it cannot,
# it says why through ``miss`` (the matcher keeps the reason given furthest into the text).
Piece = Callable[[str, int, Callable[[int, str], None]], Iterator[int]]


def literal(expected: str, what: str) -> Piece:
    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        if text.startswith(expected, at):
            yield at + len(expected)
        else:
            miss(at, f"{what} {expected!r} expected, found {text[at : at + len(expected) + 20]!r}")

    return piece


def one_of(candidates: list[str], what: str) -> Piece:
    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        found = False
        for candidate in sorted(set(candidates), key=len, reverse=True):
            if text.startswith(candidate, at):
                found = True
                yield at + len(candidate)
        if not found:
            miss(at, f"{what} (one of {candidates!r}) expected, found {text[at : at + 40]!r}")

    return piece


def json_value(check: Callable[[Any], str | None], what: str) -> Piece:
    """A JSON value starting right here, which ``check`` accepts (returns no complaint for)."""

    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        try:
            value, end = _decoder.raw_decode(text, at)
        except ValueError:
            miss(at, f"{what}: no JSON value at {text[at : at + 40]!r}")
            return
        complaint = check(value)
        if complaint:
            miss(at, f"{what}: {complaint}")
        else:
            yield end

    return piece


def python_value(expected: Any, what: str) -> Piece:
    """A Python literal starting right here, equal to ``expected``."""

    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        found = False
        for end in range(at + 1, min(len(text), at + 400) + 1):
            try:
                value = ast.literal_eval(text[at:end])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if same(value, expected):
                found = True
                yield end
        if not found:
            miss(at, f"{what}: no Python literal equal to {expected!r} at {text[at : at + 40]!r}")

    return piece


def digits(expected: int, what: str) -> Piece:
    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        end = at
        while end < len(text) and text[end].isdigit():
            end += 1
        if end > at and int(text[at:end]) == expected:
            yield end
        else:
            miss(at, f"{what} {expected} expected, found {text[at : at + 10]!r}")

    return piece


def turn_ends(description: FormatDescription) -> Piece:
    """After the calls: nothing, the turn's end, or a stop string."""
    ends = [stop for stop in description.turn.stop if stop]
    if isinstance(description.turn.end, str) and description.turn.end and description.turn.end not in ends:
        ends.append(description.turn.end)

    def piece(text: str, at: int, miss: Callable[[int, str], None]) -> Iterator[int]:
        if at == len(text) or any(text.startswith(end, at) for end in ends):
            yield len(text)
        else:
            miss(at, f"the turn's end or stop ({ends!r}) expected after the calls, found {text[at : at + 40]!r}")

    return piece


def match(pieces: list[Piece], text: str) -> str | None:
    """None when the pieces match all of ``text`` from its start, else why not (at the furthest point)."""
    furthest: list[tuple[int, str]] = [(-1, "")]

    def miss(at: int, reason: str) -> None:
        if at > furthest[0][0]:
            furthest[0] = (at, reason)

    def from_(i: int, at: int) -> bool:
        if i == len(pieces):
            return at == len(text)
        return any(from_(i + 1, end) for end in pieces[i](text, at, miss))

    if from_(0, 0):
        return None
    at, reason = furthest[0]
    return f"at {at}: {reason}; the output: {text!r}"


# --------------------------------------------------------------------------- pieces from a description


class Undescribed(Exception):
    """The description holds no way to write this (an unknown field, no form for a JSON type)."""


def id_candidates(call_id: str) -> list[str]:
    """The id, or a part of it a template keeps (its last or first characters, at least six)."""
    return [call_id] + [part for size in range(len(call_id) - 1, 5, -1) for part in (call_id[-size:], call_id[:size])]


def arguments_check(encoding: str, expected: dict[str, Any]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if encoding == "string":
            if not isinstance(value, str):
                return f"a JSON string expected, found {value!r}"
            try:
                value = json.loads(value)
            except ValueError:
                return f"the string does not hold JSON: {value!r}"
        return None if same(value, expected) else f"arguments {value!r}, expected {expected!r}"

    return check


def at_path(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise KeyError("/".join(path))
        value = value[key]
    return value


def json_call_check(
    json_call: JsonCall, name: str, arguments: dict[str, Any], call_id: str, index: int
) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"a JSON object expected, found {value!r}"
        try:
            if json_call.name_is_key:
                if list(value) != [name]:
                    return f"the only key should be the name {name!r}: {list(value)}"
                return arguments_check(json_call.arguments_encoding, arguments)(value[name])
            if at_path(value, json_call.name_path) != name:
                return f"name {at_path(value, json_call.name_path)!r} at {json_call.name_path}, expected {name!r}"
            complaint = arguments_check(json_call.arguments_encoding, arguments)(
                at_path(value, json_call.arguments_path)
            )
            if complaint:
                return f"{complaint} (at {json_call.arguments_path})"
            if json_call.id_path is not None and at_path(value, json_call.id_path) not in id_candidates(call_id):
                return f"id {at_path(value, json_call.id_path)!r} at {json_call.id_path}, expected {call_id!r}"
            if json_call.index_path is not None and str(at_path(value, json_call.index_path)) != str(index):
                return f"index {at_path(value, json_call.index_path)!r}, expected {index}"
            for path, text in json_call.constants:
                if not same(at_path(value, path), json.loads(text)):
                    return f"constant {'/'.join(path)} is {at_path(value, path)!r}, expected {text}"
        except KeyError as missing:
            return f"no key {missing} in {value!r}"
        if tuple(value) != json_call.key_order:
            return f"keys in the order {tuple(value)}, expected {json_call.key_order}"
        return None

    return check


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return {int: "integer", float: "number", str: "string", dict: "object", list: "array"}[type(value)]


def value_piece(arguments: KeyValueArguments, syntax: str, value: Any, what: str) -> Piece:
    if syntax == "json":
        return json_value(lambda found: None if same(found, value) else f"{found!r}, expected {value!r}", what)
    if syntax == "python":
        return python_value(value, what)
    if syntax != "raw":
        raise Undescribed(f"{what}: syntax {syntax!r}")
    if not isinstance(value, str):
        return one_of([json.dumps(value), str(value)], what)
    escaping = arguments.string_escaping
    if isinstance(escaping, Unknown):
        raise Undescribed(f"{what}: string escaping unknown ({escaping.reason})")
    text = {"none": value, "json": json.dumps(value, ensure_ascii=False)[1:-1], "python": repr(value)[1:-1]}[escaping]
    opener, closer = arguments.special_string_wrapper
    return one_of([text, opener + text + closer], what)


def pattern_pieces(pattern: Pattern, fields: dict[str, Callable[[Field], list[Piece]]], what: str) -> list[Piece]:
    """A pattern's literals as they are, its fields by ``fields`` (a field it has no entry for cannot be written)."""
    pieces: list[Piece] = []
    for part in pattern:
        if isinstance(part, Text):
            pieces.append(literal(part.text, f"{what}: literal"))
        elif part.name in fields:
            pieces += fields[part.name](part)
        else:
            raise Undescribed(f"field {part.name!r} in {what}")
    return pieces


def argument_pieces(arguments: KeyValueArguments, values: dict[str, Any], k: int) -> list[Piece]:
    items = sorted(values.items()) if arguments.order == "sorted" else list(values.items())
    pieces: list[Piece] = []
    for n, (key, value) in enumerate(items):
        if n:
            if isinstance(arguments.separator, Unknown):
                raise Undescribed(f"separator between arguments unknown ({arguments.separator.reason})")
            pieces.append(literal(arguments.separator, f"call {k}: separator between arguments"))
        form = next((f for f in arguments.forms if f.json_type == json_type(value)), None)
        if form is None:
            raise Undescribed(f"no argument form for {json_type(value)}")
        what = f"call {k}, argument {key!r}"
        pieces += pattern_pieces(
            form.pattern,
            {
                "key": lambda _, key=key, what=what: [literal(key, f"{what}: key")],
                "value": lambda _, form=form, value=value, what=what: [
                    value_piece(arguments, form.syntax, value, f"{what}: value")
                ],
            },
            what,
        )
    return pieces


def arguments_pieces(calls: Calls, arguments: dict[str, Any], k: int) -> list[Piece]:
    what = f"call {k}: arguments"
    if isinstance(calls.arguments, JsonArguments):
        if calls.arguments.encoding == "python":
            return [python_value(arguments, what)]
        return [json_value(arguments_check(calls.arguments.encoding, arguments), what)]
    if isinstance(calls.arguments, KeyValueArguments):
        return argument_pieces(calls.arguments, arguments, k)
    raise Undescribed(f"arguments unknown ({calls.arguments.reason})")


def json_call_pieces(calls: Calls, call: Call, k: int) -> list[Piece]:
    if calls.json_call is None:
        raise Undescribed("a call field with no JSON call layout")
    name, arguments, call_id = call
    check = json_call_check(calls.json_call, name, arguments, call_id, calls.json_call.index_base + k)
    return [json_value(check, f"call {k}: JSON call")]


def call_pieces(calls: Calls, call: Call, k: int) -> list[Piece]:
    name, arguments, call_id = call
    what = f"call {k}"
    return pattern_pieces(
        calls.call,
        {
            "name": lambda _: [literal(name, f"{what}: name")],
            "id": lambda _: [one_of(id_candidates(call_id), f"{what}: id")],
            "index": lambda field: [digits(field.base + k, f"{what}: index")],
            "call": lambda _: json_call_pieces(calls, call, k),
            "arguments": lambda _: arguments_pieces(calls, arguments, k),
        },
        what,
    )


def mismatch(description: FormatDescription, output: str, calls: list[Call]) -> str | None:
    """Why ``output`` is not what ``description`` says the model writes for ``calls``; None when it is."""
    described = description.calls
    assert isinstance(described, Calls)
    try:
        pieces = [
            literal(description.turn.history_prefix, "history prefix"),
            literal(described.section_open, "section opener"),
        ]
        for k, call in enumerate(calls):
            if k:
                if isinstance(described.separator, Unknown):
                    raise Undescribed(f"separator unknown ({described.separator.reason})")
                pieces.append(literal(described.separator, "separator"))
            pieces += call_pieces(described, call, k)
        closer = described.section_close if len(calls) >= described.section_close_from else ""
        pieces += [literal(closer, "section closer"), turn_ends(description)]
    except Undescribed as exc:
        return f"the description cannot write these calls: {exc}"
    return match(pieces, output)


# --------------------------------------------------------------------------- the corpus


def call_count(description: FormatDescription) -> int:
    return 2 if description.capabilities.parallel_calls.status == "yes" else 1


@cache
def fresh_output(name: str, corpus_dir: Path) -> str:
    """The model's output for CALLS (two where the template takes parallel calls), rendered afresh."""
    description = golden(name)
    turn = {
        "role": "assistant",
        "content": description.input_form.content_with_calls,
        "tool_calls": tool_calls(description, CALLS[: call_count(description)]),
    }
    return assistant_output(description, compile_for(description, corpus_dir), [USER], turn, TOOLS)


# Templates whose fresh render the description does not reproduce, with the reason (strict: fixing
# one must remove it here).
KNOWN_MISMATCHES: dict[str, str] = {}

NAMES = [d.template.name for d in golden_descriptions(with_calls=True)]


def _params() -> list[Any]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MISMATCHES[name])] if name in KNOWN_MISMATCHES else [],
        )
        for name in NAMES
    ]


@pytest.mark.parametrize("name", _params())
def test_description_matches_a_fresh_render(name, corpus_dir):
    description = golden(name)
    calls = CALLS[: call_count(description)]
    problem = mismatch(description, fresh_output(name, corpus_dir), calls)
    assert problem is None, problem


# --------------------------------------------------------------------------- the check can fail


@dataclass(frozen=True)
class Mutation:
    """One thing made wrong in a description's calls; ``apply`` gives None where it does not apply.
    The rejection must come from the part made wrong: its reason names ``where``."""

    name: str
    apply: Callable[[Calls, int], Calls | None]
    where: str


def _first_literal(calls: Calls) -> int | None:
    return next((k for k, part in enumerate(calls.call) if isinstance(part, Text) and part.text.strip()), None)


def _literal_changed(calls: Calls, count: int) -> Calls | None:
    k = _first_literal(calls)
    if k is None:
        return None
    part = calls.call[k]
    assert isinstance(part, Text)
    return replace(calls, call=calls.call[:k] + (Text(part.text + "#"),) + calls.call[k + 1 :])


def _encoding_changed(calls: Calls, count: int) -> Calls | None:
    if isinstance(calls.arguments, JsonArguments) and calls.json_call is None:
        other = "string" if calls.arguments.encoding != "string" else "object"
        return replace(calls, arguments=JsonArguments(other))
    if calls.json_call is not None:
        other = "string" if calls.json_call.arguments_encoding != "string" else "object"
        return replace(calls, json_call=replace(calls.json_call, arguments_encoding=other))
    return None


def _argument_key_changed(calls: Calls, count: int) -> Calls | None:
    arguments = calls.arguments
    if not isinstance(arguments, KeyValueArguments):
        return None
    forms = tuple(
        replace(
            f,
            pattern=tuple(
                Text(p.text) if isinstance(p, Text) else (Text("location") if p.name == "key" else p) for p in f.pattern
            ),
        )
        for f in arguments.forms
    )
    return replace(calls, arguments=replace(arguments, forms=forms))


MUTATIONS = [
    Mutation(
        "separator replaced",
        lambda c, n: replace(c, separator=c.separator + "#") if n == 2 and isinstance(c.separator, str) else None,
        ": separator ",
    ),
    Mutation(
        "section opener dropped",
        lambda c, n: replace(c, section_open="") if c.section_open.strip() else None,
        ": call 0: ",
    ),
    Mutation(
        "section opener doubled",
        lambda c, n: replace(c, section_open=c.section_open * 2) if c.section_open.strip() else None,
        ": section opener ",
    ),
    Mutation(
        "section closer dropped",
        lambda c, n: replace(c, section_close="") if c.section_close.strip() else None,
        ": the turn's end or stop ",
    ),
    Mutation(
        "section closer added", lambda c, n: replace(c, section_close=c.section_close + "</calls>"), ": section closer "
    ),
    Mutation("call literal changed", _literal_changed, ": call 0: literal "),
    Mutation("arguments encoding changed", _encoding_changed, "a JSON string expected"),
    Mutation("argument key written as a literal", _argument_key_changed, ": call 0, argument "),
]


def _mutation_params() -> list[Any]:
    found = []
    for name in NAMES:
        if name in KNOWN_MISMATCHES:
            continue
        calls = golden(name).calls
        assert isinstance(calls, Calls)
        for mutation in MUTATIONS:
            if mutation.apply(calls, call_count(golden(name))) is not None:
                found.append(pytest.param(name, mutation, id=f"{name}-{mutation.name}"))
    return found


@pytest.mark.parametrize("name, mutation", _mutation_params())
def test_a_wrong_description_is_rejected(name, mutation, corpus_dir):
    description = golden(name)
    calls = description.calls
    assert isinstance(calls, Calls)
    wrong = replace(description, calls=mutation.apply(calls, call_count(description)))
    problem = mismatch(wrong, fresh_output(name, corpus_dir), CALLS[: call_count(description)])
    assert problem is not None and mutation.where in problem.split("; the output")[0], problem


@pytest.mark.parametrize("name", [name for name in NAMES if name not in KNOWN_MISMATCHES])
def test_calls_other_than_the_rendered_ones_are_rejected(name, corpus_dir):
    """The fields are checked against the call's own values: another name, another argument value,
    another id (where ids are written), or the two calls in the other order do not match the render."""
    description = golden(name)
    count = call_count(description)
    output = fresh_output(name, corpus_dir)
    renamed = [("get_climate", *CALLS[0][1:]), *CALLS[1:count]]
    other_days = [(CALLS[0][0], {**CALLS[0][1], "days": 4}, CALLS[0][2]), *CALLS[1:count]]
    # what: (the calls, a word the reason must hold: the field that differs)
    wrong = {"another name": (renamed, "name"), "another argument value": (other_days, "argument")}
    if count == 2:
        wrong["the calls swapped"] = ([CALLS[1], CALLS[0]], "name")
    if isinstance(description.calls.ids, CallIds) and description.calls.ids.written == "as given":
        wrong["another id"] = ([(*CALLS[0][:2], "Qq1Ww2Ee3"), *CALLS[1:count]], "id")
    for what, (calls, field) in wrong.items():
        problem = mismatch(description, output, calls)
        assert problem is not None and field in problem.split("; the output")[0], (what, problem)


def test_every_mutation_applies_somewhere():
    applied = {mutation.name for _, mutation in (p.values for p in _mutation_params())}
    assert applied == {m.name for m in MUTATIONS}
