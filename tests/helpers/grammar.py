"""The corpus cases the grammar tests share (tests/backends/test_gbnf.py, test_parser_grammar_agree.py):
the tools, the calls, a template's description with its lowered shape and compiled template, the model's
output for calls, and where the calls stand in that output."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analyzer.description import FormatDescription
from analyzer.lower import lower
from analyzer.markers import find_markers
from analyzer.render.engines import CompiledTemplate
from analyzer.runtime.shape import Marker, OutputShape
from helpers.golden import Call, assistant_output, compile_for, golden, golden_descriptions, tool_calls


def tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A declared tool; every property gets a description (some templates fail without one)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": {key: {**schema, "description": key} for key, schema in properties.items()},
                "required": required,
            },
        },
    }


WEATHER_TOOL = tool(
    "get_weather",
    {"location": {"type": "string"}, "days": {"type": "integer"}, "units": {"type": "string", "enum": ["c", "f"]}},
    ["location"],
)
NO_ARGS_TOOL = tool("list_files", {}, [])
TOOLS = [
    WEATHER_TOOL,
    tool(
        "search",
        {
            "query": {"type": "string"},
            "filters": {
                "type": "object",
                "properties": {"lang": {"type": "string"}, "max_age": {"type": "integer"}},
                "additionalProperties": False,
            },
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
        },
        ["query"],
    ),
    # Declared, not called: a free-form object and no parameters at all, which the grammar must hold too.
    tool("run_code", {"code": {"type": "string"}, "env": {"type": "object", "additionalProperties": True}}, ["code"]),
    NO_ARGS_TOOL,
]
WEATHER: Call = ("get_weather", {"location": "Paris, France", "days": 3, "units": "c"}, "Ab3De6Gh9")
SEARCH: Call = (
    "search",
    {"query": 'cafés "open" late\nnear me', "filters": {"lang": "fr", "max_age": 7}, "limit": 5, "exact": True},
    "Zy8Xw7Vu6",
)
USER = {"role": "user", "content": "What is the weather?"}


@dataclass(frozen=True)
class Case:
    description: FormatDescription
    shape: OutputShape
    compiled: CompiledTemplate


def described() -> list[str]:
    """The corpus templates that write calls, by name."""
    return [d.template.name for d in golden_descriptions(with_calls=True)]


@cache
def case(name: str, corpus_dir: Path) -> Case:
    description = golden(name)
    return Case(description, lower(description), compile_for(description, corpus_dir))


def model_output(c: Case, calls: list[Call]) -> str:
    """What the model writes for an assistant message with these calls: the history render past the
    generation prompt, the message spelled in the form the template takes (content "" or None,
    arguments as an object or a JSON string)."""
    turn = {
        "role": "assistant",
        "content": c.description.input_form.content_with_calls,
        "tool_calls": tool_calls(c.description, calls),
    }
    return assistant_output(c.description, c.compiled, [USER], turn, TOOLS)


def calls_span(shape: OutputShape, output: str, count: int) -> tuple[int, int]:
    """Where the calls are in the output: from the trigger (the start of the calls for a regex or a
    name) to the end of the section closer, or of the last call, or (calls that end with their JSON
    and no closer) up to the stop string, trailing whitespace left out."""
    calls = shape.calls
    assert calls is not None
    trigger = calls.trigger
    if trigger.word:
        start = output.find(trigger.word)
        end = start + len(trigger.word)
    elif trigger.pattern:
        match = re.search(trigger.pattern, output)
        start = end = match.start() if match else -1
    else:
        start = end = output.find(WEATHER[0])
    assert start >= 0, f"the calls' start is not in {output!r}"
    last = calls.call[-1]
    if isinstance(last, Marker):
        for _ in range(count):
            end = output.index(last.text, end) + len(last.text)
    if calls.section_close:
        end = output.index(calls.section_close[-1].text, end) + len(calls.section_close[-1].text)
    elif not isinstance(last, Marker):
        end = min([at for stop in shape.stops if (at := output.find(stop, start + 1)) >= 0] + [len(output)])
        end = len(output[:end].rstrip())
    return start, end


def turn_span(shape: OutputShape, output: str, count: int) -> tuple[int, int]:
    """From where the calls start (as ``calls_span``) to where the model's turn ends: the first stop
    after the calls, which is the end-of-generation token (a model writes it as that token, and a
    grammar never sees it as text), or where the next turn's header starts when the template writes
    none for a call turn (command-r-plus writes the next turn right after the calls)."""
    start, end = calls_span(shape, output, count)
    return start, turn_end(shape, output, end)


def turn_end(shape: OutputShape, output: str, after: int) -> int:
    """Where the model's turn ends after ``after``, as ``turn_span`` says."""
    ends = [at for stop in shape.stops if (at := output.find(stop, after)) >= 0]
    header = find_markers(shape.generation_prompt, symbols=True)
    if header and (at := output.find(header[0].group(), after)) >= 0:
        ends.append(at)
    return min(ends, default=len(output))
