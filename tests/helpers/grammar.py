"""The corpus cases the grammar tests share (tests/backends/test_gbnf.py, test_parser_grammar_agree.py,
test_gbnf_llama_validator.py): the tools, the calls, a template's description with its lowered shape and
compiled template, the model's output for calls, where the calls stand in that output, and the texts each
corpus check asks a grammar to accept or refuse (``CORPUS_CHECKS``), whatever engine answers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from analyzer.backends.gbnf import to_grammar
from analyzer.description import FormatDescription, Reasoning, ThinkingSwitch
from analyzer.errors import RenderError
from analyzer.lower import lower
from analyzer.render.conversation import put_reasoning
from analyzer.render.sandbox import CompiledTemplate
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
    if calls.section_close and count >= calls.close_from:
        end = output.index(calls.section_close[-1].text, end) + len(calls.section_close[-1].text)
    elif not isinstance(last, Marker):
        end = min([at for stop in shape.stops if (at := output.find(stop, start + 1)) >= 0] + [len(output)])
        end = len(output[:end].rstrip())
    return start, end


def turn_span(shape: OutputShape, output: str, count: int) -> tuple[int, int]:
    """From where the calls start (as ``calls_span``) to where the model's turn ends: the first stop
    after the calls, which is the end-of-generation token (a model writes it as that token, and a
    grammar never sees it as text). A call turn the template leaves open (command-r-plus) has the next
    header's first marker among the stops."""
    start, end = calls_span(shape, output, count)
    return start, turn_end(shape, output, end)


def turn_end(shape: OutputShape, output: str, after: int) -> int:
    """Where the model's turn ends after ``after``, as ``turn_span`` says."""
    ends = [at for stop in shape.stops if (at := output.find(stop, after)) >= 0]
    return min(ends, default=len(output))


# =========================================================================== the corpus checks


# Corpus checks whose renders the grammar cannot take, by check and template, with the reason. Every
# engine's tests mark them strict xfail: the day the cause is fixed, the entry must go. (None today.)
XFAIL: dict[tuple[str, str], str] = {}


def params(test: str, names: list[str], known: dict[tuple[str, str], str] = XFAIL) -> list[Any]:
    """One pytest parameter per template, strict xfail where ``known`` lists (test, template)."""
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=known[(test, name)])] if (test, name) in known else [],
        )
        for name in names
    ]


def parallel_templates() -> list[str]:
    return [name for name in described() if golden(name).capabilities.parallel_calls.status == "yes"]


def calls_for(count: int) -> list[Call]:
    return [WEATHER, SEARCH][:count]


@dataclass(frozen=True)
class Expectation:
    """A grammar (GBNF text) must take ``text`` (``accepted``) or refuse it; ``what`` names the text."""

    grammar: str
    text: str
    accepted: bool
    what: str


def from_the_trigger(c: Case, count: int) -> list[Expectation]:
    """What the model writes from the trigger up to its end-of-generation token: the calls and what
    the template writes after them (the grammar must end where the turn ends), in the exact default."""
    output = model_output(c, calls_for(count))
    start, end = turn_span(c.shape, output, count)
    grammar = to_grammar(c.shape, TOOLS)
    assert grammar is not None and grammar.lazy
    return [Expectation(grammar.text, output[start:end], True, f"{count} call(s) from the trigger")]


def from_the_start(c: Case, count: int) -> list[Expectation]:
    """Everything the model writes up to its end-of-generation token: what the template writes between
    the generation prompt and the calls (an empty reasoning block, a newline) is the model's too. The
    grammar for tool_choice='search' must refuse it (it calls get_weather)."""
    output = model_output(c, calls_for(count))
    _, end = turn_span(c.shape, output, count)
    grammar = to_grammar(c.shape, TOOLS, tool_choice="required")
    assert grammar is not None and not grammar.lazy
    named = to_grammar(c.shape, TOOLS, tool_choice="search")
    assert named is not None
    return [
        Expectation(grammar.text, output[:end], True, f"{count} call(s) from the output's start"),
        Expectation(named.text, output[:end], False, "a get_weather call under tool_choice='search'"),
    ]


def wrong_calls(c: Case) -> list[Expectation]:
    """The lazy grammar takes a call and one with an integer argument, and refuses a wrong tool name,
    a missing required argument and an integer argument that is not a number."""
    grammar = to_grammar(c.shape, TOOLS)
    assert grammar is not None

    def calls_text(calls: list[Call]) -> str:
        output = model_output(c, calls)
        start, end = turn_span(c.shape, output, len(calls))
        return output[start:end]

    right = calls_text([WEATHER])
    numbered = calls_text([("get_weather", {"location": "Paris, France", "days": 4242}, WEATHER[2])])
    return [
        Expectation(grammar.text, right, True, "the call itself"),
        Expectation(grammar.text, numbered, True, "the call with an integer argument"),
        Expectation(grammar.text, right.replace("get_weather", "get_climate"), False, "a tool that is not declared"),
        Expectation(
            grammar.text,
            calls_text([("get_weather", {"days": 3, "units": "c"}, WEATHER[2])]),
            False,
            "a missing required argument",
        ),
        Expectation(grammar.text, numbered.replace("4242", '42"42'), False, "an integer argument that is not a number"),
    ]


def two_calls_with_parallel_off(c: Case) -> list[Expectation]:
    """Two calls: taken by the lazy grammar, refused by the one made with parallel=False."""
    output = model_output(c, [WEATHER, ("get_weather", {"location": "Rome"}, "Zy8Xw7Vu6")])
    start, end = turn_span(c.shape, output, 2)
    two = output[start:end]
    grammar, single = to_grammar(c.shape, TOOLS), to_grammar(c.shape, TOOLS, parallel=False)
    assert grammar is not None and single is not None
    return [
        Expectation(grammar.text, two, True, "two calls"),
        Expectation(single.text, two, False, "two calls with parallel=False"),
    ]


def with_reasoning() -> list[str]:
    """The templates that write a reasoning block in a call turn of the history, from a message field."""
    return [
        name
        for name in described()
        if isinstance(r := golden(name).reasoning, Reasoning) and r.field and r.scope != "not written in history"
    ]


PLAN = "Plan it."


def reasoning_thinking(c: Case) -> bool | None:
    """Thinking on where the template has a toggle: a model reasons when asked to, and a prompt rendered
    with thinking off may already close the block (None: the template's default)."""
    reasoning = c.description.reasoning
    return True if isinstance(reasoning, Reasoning) and isinstance(reasoning.toggle, ThinkingSwitch) else None


def reasoning_then_a_call_output(c: Case) -> str:
    """A call turn with reasoning (``PLAN``), as the template writes it with ``reasoning_thinking``, from
    the output's start to the end of the turn."""
    reasoning = c.description.reasoning
    assert isinstance(reasoning, Reasoning)
    turn = {
        "role": "assistant",
        "content": c.description.input_form.content_with_calls,
        "tool_calls": tool_calls(c.description, [WEATHER]),
    }
    put_reasoning(turn, reasoning.field, PLAN)
    output = assistant_output(c.description, c.compiled, [USER], turn, TOOLS, reasoning_thinking(c))
    assert PLAN in output
    _, end = turn_span(c.shape, output, 1)
    return output[:end]


def reasoning_then_a_call(c: Case) -> list[Expectation]:
    """``reasoning_then_a_call_output``, under the exact default (the whitespace between the block's close
    and the calls is bounded there: the shape does not hold it)."""
    grammar = to_grammar(c.shape, TOOLS, tool_choice="required", thinking=reasoning_thinking(c))
    assert grammar is not None
    text = reasoning_then_a_call_output(c)
    return [Expectation(grammar.text, text, True, "reasoning then a call, from the output's start")]


# Named as the test tool ``calls_span`` finds calls that open with their name by.
KEYWORD_TOOL = tool(
    "get_weather",
    {
        "anything": {},
        "count_or_name": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "maybe": {"type": ["integer", "null"]},
        "unit": {"$ref": "#/$defs/unit"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMaximum": 1.5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
    ["count_or_name"],
)
KEYWORD_TOOL["function"]["parameters"]["$defs"] = {"unit": {"type": "string", "enum": ["c", "f"]}}
KEYWORD_CALLS = [
    {"anything": "text", "count_or_name": 7, "maybe": None, "unit": "f", "age": 42, "ratio": 0.25, "code": "ABC"},
    {"anything": 3, "count_or_name": "seven", "maybe": 5},
]


def rendered_keyword_calls(c: Case) -> list[Expectation]:
    """Never refuse a valid call: calls whose arguments use JSON Schema keywords (a value without a
    top-level type, a type list, anyOf, a $ref, bounds, a pattern), rendered by the template itself,
    taken by the lazy grammar from the trigger up to the end of the turn. Skips the test when the
    template cannot render the tool."""
    grammar = to_grammar(c.shape, [KEYWORD_TOOL])
    assert grammar is not None
    expectations = []
    for arguments in KEYWORD_CALLS:
        jsonschema.validate(arguments, KEYWORD_TOOL["function"]["parameters"])
        turn = {
            "role": "assistant",
            "content": c.description.input_form.content_with_calls,
            "tool_calls": tool_calls(c.description, [("get_weather", arguments, "Ab3De6Gh9")]),
        }
        try:
            output = assistant_output(c.description, c.compiled, [USER], turn, [KEYWORD_TOOL])
        except RenderError as exc:
            pytest.skip(f"the template cannot render this tool: {exc}")
        start, end = turn_span(c.shape, output, 1)
        expectations.append(Expectation(grammar.text, output[start:end], True, f"a call with {sorted(arguments)}"))
    return expectations


# Each corpus check by the name XFAIL keys it with: the templates it runs on, and what it expects of them.
CORPUS_CHECKS: dict[str, tuple[Callable[[], list[str]], Callable[[Case], list[Expectation]]]] = {
    "auto-1": (described, lambda c: from_the_trigger(c, 1)),
    "auto-2": (parallel_templates, lambda c: from_the_trigger(c, 2)),
    "required-1": (described, lambda c: from_the_start(c, 1)),
    "required-2": (parallel_templates, lambda c: from_the_start(c, 2)),
    "reject": (described, wrong_calls),
    "parallel-false": (parallel_templates, two_calls_with_parallel_off),
    "keywords": (described, rendered_keyword_calls),
    "reasoning": (with_reasoning, reasoning_then_a_call),
}
