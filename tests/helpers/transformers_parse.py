"""transformers' own response parser on the round-trip cases, beside ours.

``compare`` reads one model output with transformers (``parse_response`` with the prompt as
``prefix``, as its docs require, and ``ResponseParser`` fed one character at a time) and with our
parser, and says where the messages differ: content and reasoning (whitespace at their ends aside:
transformers strips every text field), and each call's name and arguments as JSON values.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from transformers.utils.chat_parsing import ResponseParser, parse_response

from analyzer.backends.parser import Parser
from analyzer.description import FormatDescription
from analyzer.render.sandbox import CompiledTemplate
from analyzer.response_check import read_message
from helpers.roundtrip import TOOLS, USER

# transformers logs (at INFO and WARNING) where a prompt lacks the anchor; the tests read results, not logs.
logging.getLogger("transformers").setLevel(logging.ERROR)

Message = tuple[str, str, list[tuple[Any, Any]]]


def prompt_for(description: FormatDescription, compiled: CompiledTemplate) -> str:
    """The prompt the round-trip cases are answers to (the conversation before the model's turn)."""
    extra = {name: "" for name in description.bound_variables}
    return compiled.render([USER], tools=TOOLS, add_generation_prompt=True, extra=extra)


def ours(description: FormatDescription, output: str) -> Message:
    message = Parser(description, TOOLS).parse(output)
    calls = [(call.name, json.loads(call.arguments)) for call in message.tool_calls]
    return (message.content or "").strip(), (message.reasoning_content or "").strip(), calls


def theirs(message: dict[str, Any]) -> Message:
    read = read_message(message)
    return read["content"], read["reasoning_content"], [tuple(call) for call in read["tool_calls"]]


def streamed(response_template: dict[str, Any], prompt: str, output: str) -> dict[str, Any]:
    parser = ResponseParser(response_template, prefix=prompt, tools=TOOLS)
    for character in output:
        parser.feed(character)
    return parser.finalize()[0]


def compare(description: FormatDescription, response_template: dict[str, Any], prompt: str, output: str) -> str:
    """ "" when transformers reads ``output`` as our parser does, in one go and one character at a time;
    else what differs."""
    expected = ours(description, output)
    try:
        batch = theirs(parse_response(output, response_template, prefix=prompt, tools=TOOLS))
        stream = theirs(streamed(response_template, prompt, output))
    except Exception as exc:
        return f"transformers raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if batch != expected:
        return f"parse_response gives {batch}, our parser {expected}"
    if stream != expected:
        return f"ResponseParser fed one character at a time gives {stream}, our parser {expected}"
    return ""
