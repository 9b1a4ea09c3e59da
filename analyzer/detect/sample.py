"""A sample conversation for people to read, with the markers at the places the description puts them.

A user asks about the weather, the assistant calls a tool, the result comes back; with the caller's
tools (``audit --tools``) the conversation offers those and calls the first with example arguments.
A template that writes no tool calls gets a question and its answer instead. Markers are placed
by structure, not by searching for their text: the assistant header right before the model's output,
the calls section matched as the description's pattern from there (literal parts anchored, the tool
name as written, other fields as any text), the turn end after it, the result's pattern after the
calls, and the generation prompt at the end. A marker text that also occurs elsewhere (``>``, ``:``)
is labelled only where the pattern puts it; a part that does not match is left unlabelled.

The model's output for a plain answer and for a call are compared marker by marker and word by word,
so a reader sees what a call adds.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from analyzer.description import Calls, FormatDescription, Pattern, Reasoning, Results, Text
from analyzer.evidence import Mark, Sample
from analyzer.markers import tokens
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer
from analyzer.render.session import Session
from analyzer.tools import Tool, declared_tools

TOOL_NAME = "get_weather"
SAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Current weather for a place",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string", "description": "City"}},
                "required": ["location"],
            },
        },
    }
]
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
RESULT = "sunny, 21 C"
ARGUMENTS = {"location": "Paris"}

# (regex, the label of each group): a pattern to find in a render.
_Matcher = tuple[str, list[str]]
# Example values of the JSON types for arguments of a caller's tool that has no enum or const.
_EXAMPLE_VALUES: dict[str, Any] = {
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


@dataclass(frozen=True, slots=True)
class SampleTurns:
    """What the sample conversation says: the tools offered, the one called, with what, and the texts."""

    tools: list[dict[str, Any]]
    name: str
    arguments: dict[str, Any]
    question: str
    answer: str
    result: str


WEATHER = SampleTurns(SAMPLE_TOOLS, TOOL_NAME, ARGUMENTS, QUESTION, ANSWER, RESULT)


def sample_turns(tools: list[dict[str, Any]] | None) -> SampleTurns:
    """The weather conversation, or with a caller's ``tools`` (``audit --tools``) one that offers them
    and calls the first, with example arguments made from its schema; the texts say what they stand for."""
    if not tools:
        return WEATHER
    tool = declared_tools(tools)[0]
    return SampleTurns(
        tools,
        tool.name,
        example_arguments(tool),
        f"(a request that needs {tool.name})",
        "(an answer written without a tool call)",
        f"(what {tool.name} returned)",
    )


def example_arguments(tool: Tool) -> dict[str, Any]:
    """Arguments for ``tool``: each required property (else the first), with an example value of its schema."""
    properties = tool.properties
    required = tool.parameters.get("required")
    names = [n for n in required if isinstance(n, str) and n in properties] if isinstance(required, list) else []
    names = names or list(properties)[:1]
    return {name: _example(properties[name], name) for name in names}


def _example(schema: Any, name: str) -> Any:
    if not isinstance(schema, dict):
        return f"example {name}"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _EXAMPLE_VALUES[kind] if isinstance(kind, str) and kind in _EXAMPLE_VALUES else f"example {name}"


def detect_sample(
    renderer: Renderer, description: FormatDescription, tools: list[dict[str, Any]] | None = None
) -> Sample:
    """The sample conversation, about the weather or with the caller's ``tools`` when given."""
    turns = sample_turns(tools)
    call_id = v.ids(renderer.spelling)[0]
    user = {"role": "user", "content": turns.question}
    calling = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": turns.name, "arguments": turns.arguments}}
        ],
    }
    result = {"role": "tool", "tool_call_id": call_id, "name": turns.name, "content": turns.result}

    def render(messages: list[dict[str, Any]], prompt: bool = False) -> str | Failed:
        return renderer.attempt(messages, tools=turns.tools, generation_prompt=prompt)

    answering = {"role": "assistant", "content": turns.answer}
    # A template that writes no calls has no call turn to show: its sample is a question and an answer.
    calls_tool = isinstance(description.calls, Calls)
    prompt = render([user], prompt=True)
    conversation = render([user, calling, result], prompt=True) if calls_tool else render([user, answering])
    answer, call = render([user, answering]), render([user, calling])
    marks: tuple[Mark, ...] = ()
    if isinstance(prompt, str) and isinstance(conversation, str):
        marks = _marks(conversation, Session.cut(prompt, conversation), description, turns.name)
    answer_text, call_text = _output(prompt, answer), _output(prompt, call)
    answer_changes, call_changes = differences(answer_text, call_text)
    return Sample(
        _text(conversation),
        marks,
        answer_text,
        call_text,
        answer_changes,
        call_changes,
        tuple(t.name for t in declared_tools(turns.tools)),
        turns.name,
        calls_tool,
    )


def _text(render: str | Failed) -> str:
    return render if isinstance(render, str) else f"(this conversation does not render: {render.message})"


def _output(prompt: str | Failed, render: str | Failed) -> str:
    """The model's part of ``render``: past the generation prompt."""
    if isinstance(render, Failed) or isinstance(prompt, Failed):
        return _text(render if isinstance(render, Failed) else prompt)
    return render[Session.cut(prompt, render) :]


# --------------------------------------------------------------------------- marks


def _marks(text: str, cut: int, description: FormatDescription, name: str) -> tuple[Mark, ...]:
    marks: list[Mark] = []
    prompt = description.turn.generation_prompt
    prompt = prompt if isinstance(prompt, str) else ""
    if prompt.strip() and text[:cut].endswith(prompt):
        marks += _stripped(cut - len(prompt), cut, "generation prompt", text)
    at = cut
    calls = description.calls
    if isinstance(calls, Calls):
        found = _search(text, at, _calls_matcher(calls, name))
        if found is not None:
            start, at, call_marks = found
            marks += _reasoning_marks(text, cut, start, description.reasoning) + call_marks
    results = description.results
    results_start = len(text)
    if isinstance(results, Results):
        found = _search(text, at, _results_matcher(results, name))
        if found is not None:
            results_start, _, result_marks = found
            marks += result_marks
    end = description.turn.call_end or description.turn.end
    if isinstance(end, str) and end.strip() and at > cut:
        # The call turn's end (its own where it has one): the first end marker after the calls, before the result.
        where = text.find(end.strip(), at, results_start)
        if where >= 0:
            marks.append(Mark(where, where + len(end.strip()), "turn end"))
    answer_end = description.turn.end
    if not isinstance(calls, Calls) and isinstance(answer_end, str) and answer_end.strip():
        # A question and its answer: the answer's turn end, the first end marker after the prompt.
        where = text.find(answer_end.strip(), cut)
        if where >= 0:
            marks.append(Mark(where, where + len(answer_end.strip()), "turn end"))
    if prompt.strip() and text.endswith(prompt):
        marks += _stripped(len(text) - len(prompt), len(text), "generation prompt", text)
    return _disjoint(marks)


def _calls_matcher(calls: Calls, name: str) -> _Matcher:
    return _joined(
        [
            _literal(calls.section_open, "calls open"),
            _pattern(calls.call, "call marker", name),
            _literal(calls.section_close, "calls close"),
        ]
    )


def _results_matcher(results: Results, name: str) -> _Matcher:
    # The result's text stands between open and close as the template writes it (quoted, escaped).
    return _joined(
        [
            _pattern(results.group_open, "result marker", name),
            _pattern(results.open, "result marker", name),
            (".*?", []),
            _pattern(results.close, "result marker", name),
            _pattern(results.group_close, "result marker", name),
        ]
    )


def _joined(matchers: list[_Matcher]) -> _Matcher:
    return "".join(regex for regex, _ in matchers), [label for _, labels in matchers for label in labels]


def _literal(text: str, label: str) -> _Matcher:
    return (f"({re.escape(text)})", [label]) if text else ("", [])


def _pattern(pattern: Pattern, label: str, name: str) -> _Matcher:
    """Literal parts as groups; the tool's name as written; an index as digits; any other field as text."""
    fields = {"name": re.escape(name), "index": r"\d+"}
    return _joined(
        [
            _literal(part.text, label) if isinstance(part, Text) else (fields.get(part.name, ".*?"), [])
            for part in pattern
        ]
    )


def _search(text: str, start: int, matcher: _Matcher) -> tuple[int, int, list[Mark]] | None:
    """Where ``matcher`` first matches from ``start``: (start, end, the marks of its labelled groups)."""
    regex, labels = matcher
    if not labels:
        return None
    found = re.compile(regex, re.DOTALL).search(text, start)
    if found is None:
        return None
    marks = []
    for group, label in enumerate(labels, 1):
        marks += _stripped(found.start(group), found.end(group), label, text)
    return found.start(), found.end(), marks


def _reasoning_marks(text: str, start: int, end: int, reasoning: Reasoning | Any) -> list[Mark]:
    """An (empty) reasoning block the call turn writes before its calls."""
    if not isinstance(reasoning, Reasoning) or not reasoning.open.strip() or not reasoning.close.strip():
        return []
    opened = text.find(reasoning.open.strip(), start, end)
    if opened < 0:
        return []
    after = opened + len(reasoning.open.strip())
    closed = text.find(reasoning.close.strip(), after, end)
    marks = [Mark(opened, after, "reasoning open")]
    if closed >= 0:
        marks.append(Mark(closed, closed + len(reasoning.close.strip()), "reasoning close"))
    return marks


def _stripped(start: int, end: int, label: str, text: str) -> list[Mark]:
    piece = text[start:end]
    if not piece.strip():
        return []
    start += len(piece) - len(piece.lstrip())
    end -= len(piece) - len(piece.rstrip())
    return [Mark(start, end, label)]


def _disjoint(marks: list[Mark]) -> tuple[Mark, ...]:
    kept: list[Mark] = []
    for mark in sorted(marks, key=lambda m: (m.start, -m.end)):
        if not kept or mark.start >= kept[-1].end:
            kept.append(mark)
    return tuple(kept)


# --------------------------------------------------------------------------- differences


def differences(left: str, right: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The spans of ``left`` and of ``right`` the other does not have, compared in ``markers.tokens``."""
    a, b = tokens(left), tokens(right)
    a_at, b_at = _offsets(a), _offsets(b)
    left_spans, right_spans = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            left_spans.append((a_at[i1], a_at[i2]))
        if j2 > j1:
            right_spans.append((b_at[j1], b_at[j2]))
    return tuple(left_spans), tuple(right_spans)


def _offsets(pieces: list[str]) -> list[int]:
    at = [0]
    for piece in pieces:
        at.append(at[-1] + len(piece))
    return at
