"""The prompted tool format: tool calling for templates that write no calls of their own.

Such a template never renders tools or calls, so there is no format to find in its renders. We
define one instead and tell the model about it in its system prompt: a reply is one JSON object,
``{"tool": NAME, "arguments": {...}}`` to call a tool or ``{"answer": TEXT}`` to answer (style
"json"), or prose with calls in fenced blocks (style "fenced"). ``PromptedFormat`` is the one
description of that format. Its output shape (``prompted_shape``) is what a native template's
description lowers to, so the one parser and the one grammar builder serve it; the prompt text and
the response schema are made from it here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from analyzer.choices import PROMPTED_STYLES
from analyzer.errors import InputError
from analyzer.lower import calls_shape, output_shape
from analyzer.runtime.shape import JsonCall, JsonCallObject, Marker, OutputShape, ReasoningShape, Trigger
from analyzer.tools import Tool, chosen_tools, declared_tools

STYLES = PROMPTED_STYLES
TOOL_KEY, ARGUMENTS_KEY, ANSWER_KEY = "tool", "arguments", "answer"
FENCE_OPEN, FENCE_CLOSE = "```tool_call", "```"
BLOCK_SEPARATOR = "\n\n"  # between two fenced calls (and prose before them) in a reply
JSON_SEPARATORS = (", ", ": ")  # as call_text writes calls (json.dumps's own)
RESULTS_HEADER = "Tool results:"
RESULT_KEY = "result"


@dataclass(frozen=True, slots=True)
class PromptedFormat:
    """What a reply may be. ``callable`` are the tools a reply may call (one for a named tool_choice);
    ``listed`` every declared tool, as the prompt lists them and the parser validates against them."""

    style: str  # "json" | "fenced"
    tool_choice: str  # "auto" | "required" | "none" | a tool's name
    listed: tuple[Tool, ...]
    callable: tuple[Tool, ...]
    answers: bool  # a reply may answer instead of calling (tool_choice auto or none)
    parallel: bool  # several calls in one reply: fenced blocks one after another (the json style has one object)
    reasoning: ReasoningShape | None  # the template's reasoning block, which may come before the reply
    stops: tuple[str, ...]  # the template's turn-end strings
    thinking: bool | None = None  # thinking on or off in the prompt (None: the template's default)

    @property
    def calls(self) -> bool:
        return bool(self.callable)


def prompted_format(
    tools: list[dict[str, Any]],
    *,
    style: str = "json",
    tool_choice: str = "auto",
    parallel: bool = True,
    reasoning: ReasoningShape | None = None,
    stops: tuple[str, ...] = (),
    thinking: bool | None = None,
) -> PromptedFormat:
    if style not in STYLES:
        raise InputError(f"style {style!r} is none of {', '.join(STYLES)}")
    listed = declared_tools(tools)
    return PromptedFormat(
        style,
        tool_choice,
        listed,
        chosen_tools(listed, tool_choice),
        tool_choice in ("auto", "none"),
        parallel and style == "fenced",
        reasoning,
        stops,
        thinking,
    )


# --------------------------------------------------------------------------- as an output shape

_CALL_LAYOUT = JsonCall(
    name_path=(TOOL_KEY,),
    name_is_key=False,
    arguments_path=(ARGUMENTS_KEY,),
    arguments_encoding="object",
    id_path=None,
    index_path=None,
    index_base=0,
    constants=(),
    key_order=(TOOL_KEY, ARGUMENTS_KEY),
)


def prompted_shape(fmt: PromptedFormat) -> OutputShape:
    """What a reply in the format looks like, for the parser and the grammar. Style "json": one JSON
    object, a call or the answer object; every JSON object in a reply is read as one of them (or
    reported as not a reply). Style "fenced": prose, and calls in ```tool_call blocks."""
    if fmt.style == "json":
        calls = calls_shape(
            (),
            (),
            None,
            (JsonCallObject(_CALL_LAYOUT),),
            trigger=Trigger(pattern=r'\{\s*"'),
            json_separators=JSON_SEPARATORS,
        )
        return output_shape(
            f"prompted {fmt.style}", reasoning=fmt.reasoning, calls=calls, stops=fmt.stops, answer_key=ANSWER_KEY
        )
    block = (Marker(FENCE_OPEN, trail="\n"), JsonCallObject(_CALL_LAYOUT), Marker(FENCE_CLOSE, lead="\n"))
    calls = calls_shape(
        (),
        (),
        () if fmt.parallel else None,
        block,
        separator_space=BLOCK_SEPARATOR,
        json_separators=JSON_SEPARATORS,
    )
    return output_shape(f"prompted {fmt.style}", reasoning=fmt.reasoning, calls=calls, stops=fmt.stops)


def response_format(fmt: PromptedFormat) -> dict[str, Any] | None:
    """An OpenAI ``response_format`` that allows the same replies as the grammar (style "json" only: a
    fenced reply mixes prose and JSON, which no JSON schema describes)."""
    if fmt.style != "json":
        return None
    options = [
        {
            "type": "object",
            "properties": {TOOL_KEY: {"const": tool.name}, ARGUMENTS_KEY: tool.arguments_schema},
            "required": [TOOL_KEY, ARGUMENTS_KEY],
            "additionalProperties": False,
        }
        for tool in fmt.callable
    ]
    if fmt.answers:
        options.append(
            {
                "type": "object",
                "properties": {ANSWER_KEY: {"type": "string"}},
                "required": [ANSWER_KEY],
                "additionalProperties": False,
            }
        )
    return {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": {"oneOf": options}}}


# --------------------------------------------------------------------------- how the prompt shows it


def call_text(name: str, arguments: Any) -> str:
    """One call as the reply format writes it (the JSON object, without a fence)."""
    return json.dumps({TOOL_KEY: name, ARGUMENTS_KEY: arguments}, ensure_ascii=False)


def answer_text(text: str) -> str:
    return json.dumps({ANSWER_KEY: text}, ensure_ascii=False)


def fenced(call: str) -> str:
    return f"{FENCE_OPEN}\n{call}\n{FENCE_CLOSE}"


def signature(tool: Tool) -> str:
    """``name(city: string, unit?: "celsius" | "kelvin")``: the arguments with their types, optional
    ones marked."""
    properties = tool.parameters.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = set(tool.parameters.get("required") or ())
    arguments = ", ".join(
        f"{key}{'' if key in required else '?'}: {type_text(schema)}" for key, schema in properties.items()
    )
    return f"{tool.name}({arguments})"


def type_text(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list):
            return " | ".join(type_text(option) for option in schema[combinator])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return type_text(schema.get("items")) + "[]"
    return str(kind) if kind else "object" if "properties" in schema else "any"


def example_value(schema: Any) -> Any:
    """A value of the schema for the prompt's example: the schema's own (const, default, examples,
    enum) when it gives one, else a plain value of its type."""
    if not isinstance(schema, dict):
        return "text"
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list) and schema[combinator]:
            return example_value(schema[combinator][0])
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object" or (kind is None and "properties" in schema):
        return example_arguments(schema)
    if kind == "array":
        return [example_value(schema.get("items"))]
    if not isinstance(kind, str):  # absent, or not a type name (an untrusted schema may hold anything)
        return "text"
    return {"string": "text", "integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, "text")


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Required arguments (all of them when none is required), each with an example value."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = [key for key in schema.get("required") or () if key in properties]
    return {key: example_value(properties[key]) for key in (required or properties)}


def tool_line(tool: Tool) -> str:
    described = " ".join(tool.description.split())
    if described and described[-1] not in ".!?":
        described += "."
    example = call_text(tool.name, example_arguments(tool.parameters))
    return f"- {signature(tool)}: {described + ' ' if described else ''}Example: {example}"


def system_text(fmt: PromptedFormat) -> str:
    """The text that goes in the model's system prompt: the tools, one line each, and the reply format."""
    lines = ["You can use these tools:"]
    lines.extend(tool_line(tool) for tool in fmt.listed)
    lines.append("")
    call = call_text("NAME", {"ARGUMENT": "VALUE"})
    if fmt.style == "json":
        lines.append("Reply with exactly one JSON object and nothing else:")
        if fmt.calls:
            lines.append(f"- to call a tool: {call}")
        if fmt.answers:
            lines.append(f"- to answer: {answer_text('TEXT')}")
    else:
        lines.append("To call a tool, write a block like this:")
        lines.append(fenced(call))
        if fmt.parallel:
            lines.append("Write one block per call to call several tools at once.")
        if fmt.answers:
            lines.append("Anything outside such blocks is your answer.")
    lines.append(_choice_line(fmt))
    lines.append(
        f"Results of your calls come back in a user message that starts with {json.dumps(RESULTS_HEADER)}, "
        f"one line per call: {json.dumps({TOOL_KEY: 'NAME', RESULT_KEY: 'RESULT'})}"
    )
    return "\n".join(lines)


def _choice_line(fmt: PromptedFormat) -> str:
    return {
        "none": "Do not call a tool now: answer.",
        "auto": "Call a tool when it helps; otherwise answer.",
        "required": "Call a tool now.",
    }.get(fmt.tool_choice, f"Call the tool {fmt.tool_choice} now.")


def results_text(results: list[tuple[str, Any]]) -> str:
    """Tool results as the user turn that carries them back: the header, then one line per result, in
    call order, with the tool's name."""
    lines = [RESULTS_HEADER]
    lines.extend(
        json.dumps({TOOL_KEY: name, RESULT_KEY: _as_value(content)}, ensure_ascii=False) for name, content in results
    )
    return "\n".join(lines)


def _as_value(content: Any) -> Any:
    """A result's content as a JSON value: a JSON text is embedded as the value it holds."""
    if isinstance(content, str):
        try:
            return json.loads(content)
        except json.JSONDecodeError:
            return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content
