"""Deviations: a template's real output rewritten the ways real models depart from it (issue 25's
tolerance classes), for the parser fuzzer (``fuzz.py``).

Every rewrite is derived from the output shape (``analyzer.runtime.shape``): the markers with the
whitespace around them, the section's opener and closer, the separator between calls, the parts of a
call. None is keyed on a template's name. A rewrite that finds nothing to rewrite in a text returns
None; ``Deviation.applies`` says, from the shape alone, where a class can apply at all, so that a test
can check each was applied on every format it applies to.

The classes and the tolerance kinds (``analyzer.runtime.tolerance``) a parser may record for them:

- whitespace: other whitespace around and between markers, inside JSON, and between the parts of a
  marker the template writes joined ("[TOOL_CALLS][" -> "[TOOL_CALLS] [");
- framing: a section opener, a call's first marker or a closer left out (the output may end there),
  bare JSON calls in a code fence;
- literal syntax: JSON values in Python literals and back, arguments as a JSON string (once or twice)
  and back, the call object's keys respelled;
- separators: another separator between calls (";", a newline, nothing), one JSON list of calls where
  the template writes one object per call, and the reverse;
- reasoning: the opener repeated after the prompt opened the block, a closer with no opener, an empty
  block before a call;
- headers: a call header written as the template's other headers are (another channel word, the
  first word alone, the channel part first, a token before its last words: ``analysis.runtime.headers``).

Rewrites that write new text (reasoning, a string value) put a canary in it, which the parse must keep.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analyzer.runtime import tolerance
from analyzer.runtime.headers import call_variants
from analyzer.runtime.shape import (
    ArgumentShape,
    JsonArgs,
    JsonCall,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Markers,
    Name,
    OutputShape,
    escape_name,
)
from analyzer.runtime.shape_analysis import analysis, leading_markers

CANARY = "Qzvk"  # plus a number: letters no template writes, no marker is made of

# The whitespace a model may write instead of the template's: none, spaces, newlines, a tab, indentation.
SPACES = ("", " ", "  ", "\n", "\n\n", "\t", "\n    ", " \n", "\r\n")

WHITESPACE, FRAMING, LITERAL, SEPARATORS, REASONING, HEADERS = (
    "whitespace",
    "framing",
    "literal syntax",
    "separators",
    "reasoning",
    "headers",
)
CLASSES = (WHITESPACE, FRAMING, LITERAL, SEPARATORS, REASONING, HEADERS)


# --------------------------------------------------------------------------- what the shape says


def _pattern(markers: Markers) -> str:
    """A regex for a marker sequence as written, any whitespace where the template writes some."""
    texts = [re.escape(marker.text) for marker in markers if marker.text]
    return r"\s*".join(texts)


def _marker_texts(parts: tuple[object, ...]) -> list[str]:
    found: list[str] = []
    for part in parts:
        if isinstance(part, Marker) and part.text:
            found.append(part.text)
        elif isinstance(part, KeyValueArgs):
            found += _marker_texts(part.separator)
            for form in part.forms:
                found += _marker_texts(form.parts)
        elif isinstance(part, ArgumentShape):
            found += _marker_texts(part.parts)
    return found


def _split_points(text: str) -> list[int]:
    """Where a marker joins two parts a model may write apart: after a bracketed word ("[TOOL_CALLS]" of
    "[TOOL_CALLS][") or before one ("]" of "]<|tools_suffix|>")."""
    return [
        i
        for i in range(1, len(text))
        if not text[i].isspace()
        and not text[i - 1].isspace()
        and ((text[i - 1] in ">]" and text[i] not in ">]") or (text[i] in "<[" and text[i - 1] not in "<["))
    ]


@dataclass(frozen=True)
class Layout:
    """Where things stand in one format's outputs, from its output shape and the declared tools."""

    shape: OutputShape
    markers: tuple[str, ...]  # every marker text, longest first
    joined: tuple[tuple[str, tuple[int, ...]], ...]  # markers written joined, and where they part
    section_open: str  # regexes; "" where the template writes none
    section_close: str
    call_opener: str  # the markers a call starts with
    call_first: str  # the first of them, as text
    call_closer: str  # the markers a call ends with
    separator: str | None  # between two calls; None where parallel calls are not written
    call_start: str  # a regex for where a call starts (its opener, a declared name, a JSON object)
    json_call: JsonCall | None
    json_args: str  # the encoding of arguments written as one value; "" when not
    json_values: bool  # JSON is written somewhere in a call (call objects, arguments, nested values)
    python_values: bool  # Python literals are
    reasoning_open: str  # as text
    reasoning_close: str

    @classmethod
    def of(cls, shape: OutputShape, tool_names: list[str]) -> Layout:
        calls = shape.calls
        assert calls is not None, "the fuzzer's seeds all come from templates that write calls"
        markers = {*shape.markers(), *_marker_texts(calls.call), *_marker_texts(calls.no_arguments or ())}
        ordered = tuple(sorted(markers, key=lambda text: (-len(text), text)))
        # Stops end the turn (most never stand in an output): a model writes no whitespace inside them.
        joined = tuple(
            (text, tuple(points)) for text in ordered if text not in shape.stops and (points := _split_points(text))
        )
        closing: list[Marker] = []
        for part in reversed(calls.call):
            if not isinstance(part, Marker):
                break
            closing.insert(0, part)
        kv = [part for part in calls.call if isinstance(part, KeyValueArgs)]
        json_args = next((part.encoding for part in calls.call if isinstance(part, JsonArgs)), "")
        json_call = next((part.layout for part in calls.call if isinstance(part, JsonCallObject)), None)
        nested = {form.syntax for args in kv for form in args.forms if form.json_type in ("object", "array")}
        opener = leading_markers(calls.call)
        if opener:
            start = _pattern(opener)
        elif isinstance(calls.call[0], Name):
            escapes = calls.call[0].escapes
            start = "|".join(
                re.escape(escape_name(name, escapes)) for name in sorted(tool_names, key=len, reverse=True)
            )
        else:
            start = r"[{\[]"
        reasoning = shape.reasoning
        return cls(
            shape=shape,
            markers=ordered,
            joined=joined,
            section_open=_pattern(calls.section_open),
            section_close=_pattern(calls.section_close),
            call_opener=_pattern(opener),
            call_first=opener[0].text if opener else "",
            call_closer=_pattern(tuple(closing)),
            separator=None if calls.separator is None else _pattern(calls.separator),
            call_start=start,
            json_call=json_call,
            json_args=json_args,
            json_values=json_call is not None or json_args in ("object", "string") or "json" in nested,
            python_values=json_args == "python"
            or "python" in nested
            or any(args.string_quotes == ("'", "'") for args in kv),
            reasoning_open="".join(m.text for m in reasoning.open) if reasoning else "",
            reasoning_close="".join(m.text for m in reasoning.close) if reasoning else "",
        )

    def closes_a_call(self, text: str, at: int) -> bool:
        """Whether what follows ``at`` is what may follow a call (or nothing)."""
        rest = text[at:].lstrip()
        facts = analysis(self.shape).calls
        assert facts is not None
        followers = facts.followers
        return not rest or any(rest.startswith(follower) for follower in followers if follower)


# --------------------------------------------------------------------------- JSON in a text

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")
_OPENS_JSON = re.compile(r"[{\[]")


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _decode(text: str, at: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, at)
    except (ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    value: Any


def json_spans(text: str) -> list[Span]:
    """The JSON objects and lists that stand on their own in ``text`` (not inside another), in order."""
    found: list[Span] = []
    at = 0
    while (match := _OPENS_JSON.search(text, at)) is not None:
        decoded = _decode(text, match.start())
        if decoded is not None and isinstance(decoded[0], dict | list):
            found.append(Span(match.start(), decoded[1], decoded[0]))
            at = decoded[1]
        else:
            at = match.start() + 1
    return found


def _items(text: str, span: Span) -> list[Span]:
    """The items of the JSON list at ``span``, each where it is written."""
    found: list[Span] = []
    at = _skip(text, span.start + 1)
    while at < span.end - 1:
        decoded = _decode(text, at)
        if decoded is None:
            return []
        found.append(Span(at, decoded[1], decoded[0]))
        at = _skip(text, decoded[1])
        if text.startswith(",", at):
            at = _skip(text, at + 1)
    return found


@dataclass(frozen=True)
class Member:
    key: str
    key_start: int
    key_end: int
    value: Span


def members(text: str, span: Span) -> list[Member]:
    """The members of the JSON object at ``span``, each where it is written."""
    found: list[Member] = []
    at = _skip(text, span.start + 1)
    while at < span.end - 1:
        key = _decode(text, at)
        if key is None or not isinstance(key[0], str):
            return []
        colon = _skip(text, key[1])
        start = _skip(text, colon + 1)
        value = _decode(text, start)
        if not text.startswith(":", colon) or value is None:
            return []
        found.append(Member(key[0], at, key[1], Span(start, value[1], value[0])))
        at = _skip(text, value[1])
        if text.startswith(",", at):
            at = _skip(text, at + 1)
    return found


def call_objects(text: str, layout: Layout) -> list[Span]:
    """The calls written as JSON objects: each object on its own, and each object in a list of them."""
    if layout.json_call is None:
        return []
    found: list[Span] = []
    for span in json_spans(text):
        if isinstance(span.value, dict):
            found.append(span)
        else:
            found += [item for item in _items(text, span) if isinstance(item.value, dict)]
    return found


def _member_at(text: str, span: Span, path: tuple[str, ...]) -> Member | None:
    """The member at key ``path`` inside the object at ``span``."""
    for depth, key in enumerate(path):
        member = next((m for m in members(text, span) if m.key == key), None)
        if member is None:
            return None
        if depth == len(path) - 1:
            return member
        span = member.value
    return None


def argument_spans(text: str, layout: Layout) -> list[Span]:
    """Where each call's arguments are written as one JSON value (an object, or a string holding one)."""
    if layout.json_call is not None:
        path = layout.json_call.arguments_path
        found = []
        for call in call_objects(text, layout):
            if not path:  # the name is the only key, its value the arguments
                inner = members(text, call)
                found += [inner[0].value] if len(inner) == 1 else []
            elif (member := _member_at(text, call, path)) is not None:
                found.append(member.value)
        return found
    if layout.json_args in ("object", "string"):
        spans = [span for span in json_spans(text) if isinstance(span.value, dict)]
        if layout.json_args == "string":
            spans += _json_strings(text)
        return spans
    return []


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _json_strings(text: str) -> list[Span]:
    """JSON strings that hold a JSON object (arguments written as a string)."""
    found = []
    for match in _JSON_STRING.finditer(text):
        decoded = _decode(text, match.start())
        if decoded is not None and isinstance(decoded[0], str) and decoded[0].lstrip().startswith("{"):
            found.append(Span(match.start(), decoded[1], decoded[0]))
    return found


# --------------------------------------------------------------------------- literals


def python_literal(value: Any) -> str:
    """``value`` as Python writes it: single quotes, True/False/None."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(item) for item in value) + "]"
    return repr(value)


_PYTHON_TOKEN = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|\b(?:True|False|None)\b")
_JSON_WORDS = {"True": "true", "False": "false", "None": "null"}


def json_from_python(text: str) -> str:
    """Python literals in ``text`` written as JSON: single-quoted strings double-quoted, True as true."""

    def swap(match: re.Match[str]) -> str:
        token = match.group()
        if token in _JSON_WORDS:
            return _JSON_WORDS[token]
        if token.startswith("'"):
            try:
                return json.dumps(ast.literal_eval(token), ensure_ascii=False)
            except (ValueError, SyntaxError):
                return token
        return token

    return _PYTHON_TOKEN.sub(swap, text)


def _with_canary(value: Any, canary: str, rng: random.Random) -> Any:
    """``value`` with ``canary`` added to one of its strings (none: as it is)."""
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, str):
            paths.append(path)
        elif isinstance(node, dict):
            for key, item in node.items():
                walk(item, (*path, key))
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, (*path, index))

    walk(value, ())
    if not paths:
        return value
    path = rng.choice(paths)
    if not path:
        return f"{value} {canary}"
    copy = json.loads(json.dumps(value))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = f"{node[path[-1]]} {canary}"
    return copy


def _canary(rng: random.Random) -> str:
    return f"{CANARY}d{rng.randint(0, 9999)}"


# --------------------------------------------------------------------------- the deviations

Edit = tuple[str, list[str]]  # the new text, and the canaries it put in


def _occurrences(text: str, pattern: str) -> list[re.Match[str]]:
    return list(re.finditer(pattern, text)) if pattern else []


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def marker_spans(text: str, layout: Layout) -> list[tuple[int, int]]:
    """Where markers stand in ``text``: the longest first, none inside another ("]" of "[TOOL_CALLS]"
    is no marker of its own); single characters are left out, as most stand inside values."""
    claimed: list[tuple[int, int]] = []
    for marker in layout.markers:
        if len(marker) < 2:
            continue
        for match in re.finditer(re.escape(marker), text):
            if not any(start < match.end() and match.start() < end for start, end in claimed):
                claimed.append((match.start(), match.end()))
    return sorted(claimed)


def marker_whitespace(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    spans = marker_spans(text, layout)
    if not spans:
        return None
    start, end = rng.choice(spans)
    space = rng.choice(SPACES)
    if rng.random() < 0.5:
        before = len(text[:start]) - len(text[:start].rstrip())
        new = _replace(text, start - before, start, space)
    else:
        new = _replace(text, end, _skip(text, end), space)
    return (new, []) if new != text else None


def joined_marker_whitespace(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    present = [(marker, points) for marker, points in layout.joined if marker in text]
    if not present:
        return None
    marker, points = rng.choice(present)
    at = rng.choice([m.start() for m in re.finditer(re.escape(marker), text)]) + rng.choice(points)
    return _replace(text, at, at, rng.choice(SPACES[1:])), []


def json_whitespace(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    spans = json_spans(text)
    if not spans:
        return None
    span = rng.choice(spans)
    indent = rng.choice([None, None, 0, 1, 2, 4, "\t", "  "])
    separators = rng.choice([(",", ":"), (", ", ": "), (" ,", " :"), (",\n", ":\t"), (" , ", " : ")])
    new = json.dumps(span.value, ensure_ascii=False, indent=indent, separators=separators)
    return _replace(text, span.start, span.end, new), []


def drop_section_opener(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    found = _occurrences(text, layout.section_open)
    if not found:
        return None
    match = found[0]
    return _replace(text, match.start(), match.end(), ""), []


def drop_call_opener(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    found = _occurrences(text, re.escape(layout.call_first)) if layout.call_first else []
    if not found:
        return None
    match = rng.choice(found)
    return _replace(text, match.start(), match.end(), ""), []


def drop_closer(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    closers = [m for m in _occurrences(text, layout.call_closer) if layout.closes_a_call(text, m.end())]
    closers += _occurrences(text, layout.section_close)
    if not closers:
        return None
    closers.sort(key=lambda m: m.start())
    # Most often the last: the model stopped at its end token, where the closer was due.
    match = closers[-1] if rng.random() < 0.6 else rng.choice(closers)
    if rng.random() < 0.5:
        return text[: match.start()], []  # the output ends there
    return _replace(text, match.start(), match.end(), ""), []


def code_fence(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    calls = call_objects(text, layout)
    if not calls:
        return None
    start, end = calls[0].start, calls[-1].end
    opening = rng.choice(["```json\n", "```\n", "```json", "```JSON\n"])
    return text[:start] + opening + text[start:end] + rng.choice(["\n```", "```", "\n```\n"]) + text[end:], []


def python_literals(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """A JSON value written as a Python literal: a whole call object, its arguments, or a nested value."""
    candidates = call_objects(text, layout) + argument_spans(text, layout)
    candidates += [span for span in json_spans(text) if span not in candidates]
    candidates = [span for span in candidates if not isinstance(span.value, str)]
    if not candidates:
        return None
    span = rng.choice(candidates)
    canary = _canary(rng)
    value = _with_canary(span.value, canary, rng)
    if isinstance(value, dict) and rng.random() < 0.5:
        value = {**value, "flag": rng.choice([True, False, None])}  # Python's own words for JSON's
    kept = [canary] if value != span.value else []
    return _replace(text, span.start, span.end, python_literal(value)), kept


def json_literals(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """Python literals (single quotes, True/False/None) written as JSON, in the calls."""
    calls = _occurrences(text, layout.call_start)
    at = calls[0].start() if calls else 0
    new = text[:at] + json_from_python(text[at:])
    return (new, []) if new != text else None


def arguments_encoding(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """Arguments as a JSON string (once or twice) where written as an object, or the reverse."""
    spans = argument_spans(text, layout)
    if not spans:
        return None
    span = rng.choice(spans)
    canary = _canary(rng)
    if isinstance(span.value, str):  # a string holding the arguments: written as the object itself
        decoded = _decode(span.value, _skip(span.value, 0))
        if decoded is None:
            return None
        return _replace(text, span.start, span.end, json.dumps(_with_canary(decoded[0], canary, rng))), [canary]
    value = _with_canary(span.value, canary, rng)
    encoded = json.dumps(value, ensure_ascii=rng.random() < 0.3)
    for _ in range(rng.choice([1, 1, 2])):
        encoded = json.dumps(encoded, ensure_ascii=False)
    return _replace(text, span.start, span.end, encoded), ([canary] if value != span.value else [])


# The alternative keys a JSON call object may be written with.
_RESPELLED = {"arguments": "parameters", "parameters": "arguments", "name": "function"}


def key_spelling(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    call = layout.json_call
    if call is None:
        return None
    paths = [path for path in (call.name_path, call.arguments_path) if path and path[-1] in _RESPELLED]
    edits = []
    for span in call_objects(text, layout):
        for path in paths:
            member = _member_at(text, span, path)
            if member is not None:
                edits.append(member)
    if not edits:
        return None
    chosen = [edit for edit in edits if rng.random() < 0.5] or [rng.choice(edits)]
    for member in sorted(chosen, key=lambda m: -m.key_start):
        text = _replace(text, member.key_start, member.key_end, json.dumps(_RESPELLED[member.key]))
    return text, []


def _call_ends(text: str, layout: Layout) -> list[int]:
    """Where calls end: after a call's closing markers, else after the JSON value that ends it."""
    if layout.call_closer:
        return [m.end() for m in _occurrences(text, layout.call_closer)]
    ends = []
    for span in json_spans(text):
        ends.append(span.end)
        if isinstance(span.value, list):
            ends += [item.end for item in _items(text, span)]
    return ends


def separators_between(text: str, layout: Layout) -> list[tuple[int, int]]:
    """What stands between two calls (the separator and whitespace), where it is written."""
    if layout.separator is None:
        return []
    between = re.compile(r"\s*" + (layout.separator + r"\s*" if layout.separator else "") + f"(?={layout.call_start})")
    found = []
    for end in sorted(set(_call_ends(text, layout))):
        match = between.match(text, end)
        if match is not None:
            found.append((match.start(), match.end()))
    return found


def call_separator(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    found = separators_between(text, layout)
    if not found:
        return None
    start, end = rng.choice(found)
    other = [separator for separator in (";", "; ", "\n", "\n\n", "") if separator != text[start:end]]
    return _replace(text, start, end, rng.choice(other)), []


def call_list(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """One JSON list of calls where the template writes an object per call, or the reverse."""
    calls = call_objects(text, layout)
    if not calls:
        return None
    opens = _occurrences(text, layout.section_open)
    closes = [m for m in _occurrences(text, layout.section_close) if m.start() >= calls[-1].end]
    if opens and opens[0].group().endswith("[") and closes and closes[0].group().startswith("]"):
        # The template writes a list: the calls as objects on their own, the section's markers kept.
        opened, closed = opens[0].end() - 1, closes[0].start()
        joiner = rng.choice(["\n", "", " ", None])  # None: the template's separator kept
        body = text[calls[0].start : calls[-1].end]
        if joiner is not None:
            body = joiner.join(text[call.start : call.end] for call in calls)
        return (
            text[:opened]
            + text[opened + 1 : calls[0].start]
            + body
            + text[calls[-1].end : closed]
            + text[closed + 1 :],
            [],
        )
    listed = "[" + rng.choice([", ", ",", ",\n"]).join(text[call.start : call.end] for call in calls) + "]"
    return _replace(text, calls[0].start, calls[-1].end, listed), []


def _reasoning_text(rng: random.Random) -> tuple[str, str]:
    canary = _canary(rng)
    return rng.choice([f"I think {canary}.", f"{canary}", f"Let me see\n{canary} first."]), canary


def repeated_reasoning_opener(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """The prompt opened the block and the model opens it again."""
    return layout.reasoning_open + rng.choice(["", "\n", "\n\n"]) + text, []


def unopened_reasoning(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """A closer with no opener: the opener of a block left out, or reasoning and a closer up front."""
    opened = text.find(layout.reasoning_open)
    if opened != -1 and text.find(layout.reasoning_close, opened) != -1 and rng.random() < 0.5:
        return _replace(text, opened, opened + len(layout.reasoning_open), ""), []
    thought, canary = _reasoning_text(rng)
    return thought + rng.choice(["", "\n"]) + layout.reasoning_close + rng.choice(["", "\n", "\n\n"]) + text, [canary]


def empty_reasoning_before_call(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    assert layout.shape.calls is not None
    if layout.shape.calls.trigger.at_start:
        at = 0
    else:
        starts = [
            m.start() for pattern in (layout.section_open, layout.call_start) for m in _occurrences(text, pattern)
        ]
        if not starts:
            return None
        at = min(starts)
    block = layout.reasoning_open + rng.choice(["", "\n", "\n\n"]) + layout.reasoning_close + rng.choice(["", "\n"])
    return _replace(text, at, at, block), []


def call_header(rng: random.Random, text: str, layout: Layout) -> Edit | None:
    """A call's header rewritten in one of the forms ``call_variants`` derives from the shape."""
    calls = layout.shape.calls
    variants = call_variants(layout.shape)
    if calls is None or not variants:
        return None
    k = next(i for i, part in enumerate(calls.call) if isinstance(part, Name))
    head = tuple(part for part in calls.call[:k] if isinstance(part, Marker))
    tail: list[Marker] = []
    for part in calls.call[k + 1 :]:
        if not isinstance(part, Marker):
            break
        tail.append(part)
    found = _occurrences(text, _pattern(head) + r"\s*([\w.\-]+)\s*" + _pattern(tuple(tail)))
    if not found:
        return None
    match, variant = rng.choice(found), rng.choice(variants)
    name, opener = match.group(1), "".join(marker.text for marker in head)
    # A token of the header's bracketing before its last words, where the variant takes one.
    token = ""
    if variant.token_slot is not None and rng.random() < 0.5:
        brackets = variant.token_slot[1]
        token = brackets.opening + rng.choice(["constrain", "type", "x1"]) + brackets.closing
    if variant.reordered:
        lead, closing = variant.parts[0], variant.parts[len(head) + 2]
        assert isinstance(lead, Marker) and isinstance(closing, Marker)
        new = lead.text + rng.choice(SPACES[1:3]) + opener + name + closing.lead + token + closing.text
    else:
        lead, closing = variant.parts[k + 1], variant.parts[k + 2]
        assert isinstance(lead, Marker) and isinstance(closing, Marker)
        new = opener + name + lead.text + closing.lead + token + closing.text
    return _replace(text, match.start(), match.end(), new), []


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Deviation:
    name: str
    kind: str  # its class, one of CLASSES
    warnings: frozenset[str]  # the tolerance kinds a parser records for it
    applies: Callable[[Layout], bool]  # from the shape alone: whether it can apply to this format
    rewrite: Callable[[random.Random, str, Layout], Edit | None]


def _reasoning(layout: Layout) -> bool:
    return layout.shape.reasoning is not None


def _opened_by_prompt(layout: Layout) -> bool:
    return layout.shape.reasoning is not None and layout.shape.reasoning.opened_by_prompt(None)


def _respellable(layout: Layout) -> bool:
    call = layout.json_call
    return call is not None and any(path and path[-1] in _RESPELLED for path in (call.name_path, call.arguments_path))


def _bare_json_calls(layout: Layout) -> bool:
    return layout.json_call is not None and not layout.section_open and not layout.call_opener


_WHITESPACE = frozenset({tolerance.MARKER_WHITESPACE})
_OPENER = frozenset({tolerance.MISSING_OPENER})
_REASONING = frozenset({tolerance.REPEATED_REASONING_OPENER, tolerance.UNOPENED_REASONING})

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "marker whitespace",
        WHITESPACE,
        _WHITESPACE,
        lambda layout: any(len(marker) >= 2 for marker in layout.markers),
        marker_whitespace,
    ),
    Deviation(
        "whitespace inside a joined marker",
        WHITESPACE,
        _WHITESPACE,
        lambda layout: bool(layout.joined),
        joined_marker_whitespace,
    ),
    Deviation("whitespace inside JSON", WHITESPACE, _WHITESPACE, lambda layout: layout.json_values, json_whitespace),
    Deviation(
        "section opener left out", FRAMING, _OPENER, lambda layout: bool(layout.section_open), drop_section_opener
    ),
    Deviation(
        "call's first marker left out", FRAMING, _OPENER, lambda layout: bool(layout.call_first), drop_call_opener
    ),
    Deviation(
        "closer left out",
        FRAMING,
        frozenset({tolerance.MISSING_CLOSER}),
        lambda layout: bool(layout.call_closer or layout.section_close),
        drop_closer,
    ),
    Deviation("bare JSON in a code fence", FRAMING, frozenset({tolerance.CODE_FENCE}), _bare_json_calls, code_fence),
    Deviation(
        "JSON as Python literals",
        LITERAL,
        frozenset({tolerance.LITERAL_SYNTAX}),
        lambda layout: layout.json_values,
        python_literals,
    ),
    Deviation(
        "Python literals as JSON",
        LITERAL,
        frozenset({tolerance.LITERAL_SYNTAX}),
        lambda layout: layout.python_values,
        json_literals,
    ),
    Deviation(
        "arguments re-encoded",
        LITERAL,
        frozenset({tolerance.ARGUMENTS_ENCODING}),
        lambda layout: layout.json_call is not None or layout.json_args in ("object", "string"),
        arguments_encoding,
    ),
    Deviation("call keys respelled", LITERAL, frozenset({tolerance.KEY_SPELLING}), _respellable, key_spelling),
    Deviation(
        "another separator between calls",
        SEPARATORS,
        frozenset({tolerance.CALL_SEPARATOR}),
        lambda layout: layout.separator is not None,
        call_separator,
    ),
    Deviation(
        "calls as one list, or a list as objects",
        SEPARATORS,
        frozenset({tolerance.CALL_LIST}),
        lambda layout: layout.json_call is not None,
        call_list,
    ),
    Deviation(
        "reasoning opener repeated",
        REASONING,
        frozenset({tolerance.REPEATED_REASONING_OPENER}),
        _opened_by_prompt,
        repeated_reasoning_opener,
    ),
    Deviation(
        "reasoning closer with no opener",
        REASONING,
        frozenset({tolerance.UNOPENED_REASONING}),
        lambda layout: _reasoning(layout) and not _opened_by_prompt(layout),
        unopened_reasoning,
    ),
    Deviation("empty reasoning before a call", REASONING, _REASONING, _reasoning, empty_reasoning_before_call),
    Deviation(
        "a call header as another header",
        HEADERS,
        frozenset({tolerance.HEADER_ORDER, tolerance.HEADER_WORD}),
        lambda layout: bool(call_variants(layout.shape)),
        call_header,
    ),
)
BY_NAME = {deviation.name: deviation for deviation in DEVIATIONS}
