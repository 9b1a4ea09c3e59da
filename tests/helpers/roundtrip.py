"""The round-trip conversations the parser tests share, and the model's output for each.

Only two reasons excuse a case from a template: its description says the template does not write it
(parallel calls, content beside calls), or the template itself refuses it (``raise_exception``, a
``RenderError`` with ``raised_by_template``). Any other exception is ours or the engine's and
propagates: it must fail the test that met it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from analyzer.description import Calls, FormatDescription, Reasoning
from analyzer.errors import RenderError
from analyzer.lower import lower
from analyzer.render.conversation import put_reasoning
from analyzer.render.sandbox import CompiledTemplate
from analyzer.runtime.shape import JsonCallObject
from helpers.golden import assistant_output, compile_for, golden_descriptions, tool_calls

__all__ = [
    "CASES",
    "IDS",
    "REASONING",
    "TOOLS",
    "case_outputs",
    "compile_for",
    "descriptions",
    "model_output",
    "not_written",
    "unreadable_render",
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a place",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City and country"},
                    "days": {"type": "integer", "description": "How many days"},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search documents",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "filters": {"type": "object", "description": "Filters", "additionalProperties": True},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List files",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    # Names as templates write them, whatever their characters: another script, a quote.
    {
        "type": "function",
        "function": {
            "name": "météo",
            "description": "Le temps qu'il fait",
            "parameters": {
                "type": "object",
                "properties": {
                    "ville": {"type": "string", "description": "La ville"},
                    "ключ": {"type": "string", "description": "Ключ"},
                },
                "required": ["ville"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": 'q"uote',
            "description": "A name with a quote",
            "parameters": {
                "type": "object",
                "properties": {'a"b': {"type": "string", "description": "A key with a quote"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where"},
                    "content": {"type": "string", "description": "What"},
                    "mode": {"type": "string", "enum": ["create", "append"], "description": "How"},
                },
                "required": ["path", "content"],
            },
        },
    },
]

# case: (content beside the calls or None, [(tool name, arguments)])
CASES: dict[str, tuple[str | None, list[tuple[str, dict[str, Any]]]]] = {
    "one call": (None, [("get_weather", {"location": "Paris, France", "days": 3})]),
    "parallel calls": (None, [("get_weather", {"location": "Paris"}), ("search", {"query": "weather in Lyon"})]),
    "content before a call": ("Let me check that.", [("get_weather", {"location": "Tokyo"})]),
    "unicode and multi-line": (None, [("search", {"query": 'línea 1\nline "2" <b>&'})]),
    "nested object": (None, [("search", {"query": "q", "filters": {"tags": ["a", "b"], "year": 2024}})]),
    "no arguments": (None, [("list_files", {})]),
    "non-ASCII names": (None, [("météo", {"ville": "Paris", "ключ": "v"})]),
    "quotes in names": (None, [('q"uote', {'a"b': "1"})]),
    # Raw strings holding what separates or closes arguments in some notation: a comma, "=", ")".
    "raw strings with commas and newlines": (
        None,
        [("write_file", {"path": "notes/a.txt", "content": "line1, x=2)\nline2", "mode": "append"})],
    ),
}
IDS = ["Ab3De6Gh9", "Zy8Xw7Vu6"]
REASONING = "I should look this up."
USER = {"role": "user", "content": "What is the weather?"}


def descriptions() -> list[FormatDescription]:
    """The golden descriptions of every corpus template that writes calls."""
    return golden_descriptions(with_calls=True)


def not_written(
    description: FormatDescription, content: str | None, calls: list[tuple[str, dict[str, Any]]]
) -> str | None:
    """Why the description says the template does not write this case; None when it does."""
    assert isinstance(description.calls, Calls)
    if len(calls) > 1 and description.capabilities.parallel_calls.status != "yes":
        return f"parallel calls are not written ({description.capabilities.parallel_calls.status})"
    if content and description.calls.content_before_calls != "kept":
        return f"content beside calls is not written ({description.calls.content_before_calls})"
    return None


def unreadable_render(
    description: FormatDescription, output: str, calls: list[tuple[str, dict[str, Any]]]
) -> str | None:
    """Why the template's render of these calls is itself broken, so that no parser could give them
    back; None when it is not. A template that puts a name into a JSON call as it is, between quotes,
    without escaping the quote it holds (``{"name": "q"uote"}``), writes text that is not JSON."""
    if not any(isinstance(part, JsonCallObject) for part in lower(description).calls.call):  # type: ignore[union-attr]
        return None
    for name, _ in calls:
        if '"' in name and f'"{name}"' in output and json.dumps(name) not in output:
            return f"the template writes the name {name!r} into JSON without escaping it, which is no JSON"
    return None


def model_output(
    description: FormatDescription,
    compiled: CompiledTemplate,
    content: str | None,
    calls: list[tuple[str, dict[str, Any]]],
) -> str:
    """The model's part of the template's render of these calls, up to where the model stops."""
    form = description.input_form
    turn: dict[str, Any] = {
        "role": "assistant",
        "content": content if content is not None else form.content_with_calls,
        "tool_calls": tool_calls(description, [(name, args, IDS[i]) for i, (name, args) in enumerate(calls)]),
    }
    if isinstance(description.reasoning, Reasoning) and description.reasoning.forced_open:
        # The prompt opened reasoning: the model writes some and closes it before anything else.
        put_reasoning(turn, description.reasoning.field, REASONING)
    output = assistant_output(description, compiled, [USER], turn, TOOLS)
    # A model stops at the turn's stop string; what a template appends after a final message
    # (a new header, an instruction) is not model output.
    last = max(output.rfind(name) for name, _ in calls)
    ends = [output.find(stop, last) + len(stop) for stop in description.turn.stop if output.find(stop, last) != -1]
    closer = description.calls.section_close.strip()
    at = output.find(closer, last) if closer else -1
    while at != -1:
        # The section closer that ends the calls is followed by a marker or nothing, not more JSON.
        rest = output[at + len(closer) :].lstrip()
        if not rest or rest[0] in "<[":
            ends.append(at + len(closer))
            break
        at = output.find(closer, at + 1)
    return output[: min(ends)] if ends else output


def case_outputs(
    description: FormatDescription, compiled: CompiledTemplate, cases: Iterable[str]
) -> Iterator[tuple[str, str]]:
    """(case, model output) for each case the template writes: cases its description says it does not
    write, and cases the template itself refuses, are left out; any other error propagates."""
    for case in cases:
        content, calls = CASES[case]
        if not_written(description, content, calls):
            continue
        try:
            output = model_output(description, compiled, content, calls)
        except RenderError as exc:
            if not exc.raised_by_template:
                raise
            continue
        yield case, output
