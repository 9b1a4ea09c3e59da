"""Tool calling through the prompt, for templates that write no tool calls of their own.

    setup = prompted(template, description, messages, tools, style="json", tool_choice="auto")
    setup.system_text          # the tools and the reply format, as the system prompt holds them
    setup.prompt.text          # the conversation rendered by the model's own template
    setup.grammar              # GBNF (llama-server fields via .to_llama_server()), or None
    setup.shape                # its output shape, which the one parser and grammar builder read
    setup.response_format      # the same replies as a JSON schema, for servers that take schemas
    setup.parser.parse(text)   # a reply read back into an OpenAI-style message

Everything is made from one ``PromptedFormat`` (format.py), as the native path is made from a
template's format description; its output shape goes through the same parser (``analyzer.runtime``)
and the same grammar builder (``analyzer.backends.gbnf``) as a native template's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.backends.gbnf import Grammar, to_grammar
from analyzer.backends.parser import Parser
from analyzer.backends.prompted.conversation import PromptedPrompt, render_prompt
from analyzer.backends.prompted.format import (
    ANSWER_KEY,
    RESULTS_HEADER,
    STYLES,
    PromptedFormat,
    answer_text,
    call_text,
    fenced,
    prompted_format,
    prompted_shape,
    response_format,
    results_text,
    system_text,
)
from analyzer.description import FormatDescription
from analyzer.lower import lower
from analyzer.render.conversation import check_conversation
from analyzer.runtime.shape import OutputShape
from analyzer.template import Template
from analyzer.tokenizer import token_count


class PromptedParser(Parser):
    """The parser of a prompted format: the runtime's parser over the format's output shape."""

    def __init__(self, fmt: PromptedFormat, tools: list[dict[str, Any]]):
        super().__init__(prompted_shape(fmt), tools, thinking=fmt.thinking)
        self.format = fmt


@dataclass(frozen=True)
class Prompted:
    template: Template
    format: PromptedFormat
    tools: list[dict[str, Any]]
    system_text: str
    prompt: PromptedPrompt
    grammar: Grammar | None
    response_format: dict[str, Any] | None

    @property
    def shape(self) -> OutputShape:
        return prompted_shape(self.format)

    @property
    def parser(self) -> PromptedParser:
        return PromptedParser(self.format, self.tools)

    def to_dict(self, *, with_prompt: bool = True) -> dict[str, Any]:
        fmt = self.format
        example_call = call_text("NAME", {"ARGUMENT": "VALUE"})
        reply: dict[str, Any] = {
            "style": fmt.style,
            "parallel": fmt.parallel,
            "call": example_call if fmt.style == "json" else fenced(example_call),
            "answer": answer_text("TEXT") if fmt.style == "json" else "prose outside the blocks",
        }
        if not fmt.calls:
            reply.pop("call")
        if not fmt.answers:
            reply.pop("answer")
        out: dict[str, Any] = {
            "template": self.template.name,
            "tool_choice": fmt.tool_choice,
            "system_prompt": self.system_text,
            "placement": {"where": self.prompt.placement, "why": self.prompt.reason},
            "cost": {"characters": len(self.system_text), "tokens": token_count(self.template, self.system_text)},
            "reply_format": reply,
            "results_format": results_text([("NAME", "RESULT")]),
            "grammar": self.grammar.to_llama_server() if self.grammar is not None else None,
            "response_format": self.response_format,
        }
        if with_prompt:
            out["prompt"] = self.prompt.text
        return out


SAMPLE_CONVERSATION = [{"role": "user", "content": "Hello"}]


def prompted(
    template: Template,
    description: FormatDescription,
    messages: list[dict[str, Any]] | None,
    tools: list[dict[str, Any]],
    *,
    style: str = "json",
    tool_choice: str = "auto",
    parallel: bool = True,
    thinking: bool | None = None,
    engine: str | None = None,
    whitespace: str = "exact",
) -> Prompted:
    """The prompted tool format for ``tools`` on ``template``, and the prompt for ``messages`` (a one-line
    sample conversation when None: the placement of the tool text still comes from a real render).
    ``whitespace``: the grammar's (see ``to_grammar``); exact is the format's own spelling."""
    shape = lower(description)
    fmt = prompted_format(
        tools,
        style=style,
        tool_choice=tool_choice,
        parallel=parallel,
        reasoning=shape.reasoning,
        stops=shape.stops,
        thinking=thinking,
    )
    text = system_text(fmt)
    conversation = messages if messages is not None else SAMPLE_CONVERSATION
    prompt = render_prompt(
        template, description, fmt, text, check_conversation(conversation), thinking=thinking, engine=engine
    )
    grammar = to_grammar(
        prompted_shape(fmt),
        tools,
        tool_choice=tool_choice,
        parallel=fmt.parallel,
        thinking=thinking,
        whitespace=whitespace,
    )
    return Prompted(template, fmt, tools, text, prompt, grammar, response_format(fmt))


__all__ = [
    "ANSWER_KEY",
    "RESULTS_HEADER",
    "STYLES",
    "Prompted",
    "PromptedFormat",
    "PromptedParser",
    "prompted",
    "prompted_format",
    "prompted_shape",
    "response_format",
    "system_text",
]
