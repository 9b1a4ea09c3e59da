"""The prompted format as a GBNF grammar (for llama-server) and as a JSON schema (``response_format``
for servers that take schemas instead): both from the same ``PromptedFormat``.

Style "json": the whole reply is one object, so the grammar is eager: one alternative per callable
tool (``{"tool": NAME, "arguments": ARGS}`` with ARGS by the tool's schema) and one for the answer
when the model may answer. Style "fenced": prose is the answer and calls are fenced blocks, so for
``auto`` the grammar is lazy, triggered by the fence's opening word; for ``required`` or a tool's
name it is eager and the reply is the blocks. Either way a reasoning block the template knows may
come first, unless thinking was switched off.
"""

from __future__ import annotations

from typing import Any

from analyzer.backends.gbnf import TRIGGER_WORD, Grammar, GrammarTrigger, special_word, text_until
from analyzer.backends.json_schema_gbnf import Rules, SchemaRules, choice, group, literal, optional, seq
from analyzer.backends.prompted.format import (
    ANSWER_KEY, ARGUMENTS_KEY, FENCE_CLOSE, FENCE_OPEN, TOOL_KEY, PromptedFormat,
)
from analyzer.tools import Tool


def to_prompted_grammar(fmt: PromptedFormat) -> Grammar | None:
    """The grammar for ``fmt``; None when nothing needs constraining (the fenced style answering only)."""
    rules = Rules()
    schema_rules = SchemaRules(rules)
    ws = rules.ws()
    calls = [_call(fmt, tool, schema_rules) for tool in fmt.callable]
    if fmt.style == "json":
        replies = calls + ([_answer(schema_rules)] if fmt.answers else [])
        return _grammar(fmt, rules.text(seq(_before_reply(fmt, rules), choice(replies), ws)), lazy=False)
    if not calls:
        return None
    block = seq(literal(FENCE_OPEN), ws, choice(calls), ws, literal(FENCE_CLOSE))
    section = seq(block, group(seq(ws, block)) + "*") if fmt.parallel else block
    if fmt.answers:
        return _grammar(fmt, rules.text(section), lazy=True)
    return _grammar(fmt, rules.text(seq(_before_reply(fmt, rules), section)), lazy=False)


def _grammar(fmt: PromptedFormat, text: str, *, lazy: bool) -> Grammar:
    triggers = (GrammarTrigger(TRIGGER_WORD, FENCE_OPEN),) if lazy else ()
    return Grammar(text, lazy, triggers, preserved_tokens(fmt), fmt.stops)


def preserved_tokens(fmt: PromptedFormat) -> tuple[str, ...]:
    """The template's own special words the reply may hold: reasoning markers and turn ends."""
    words: list[str] = []
    reasoning = fmt.reasoning
    markers = [*(m.text for m in reasoning.open), *(m.text for m in reasoning.close)] if reasoning else []
    for text in (*markers, *fmt.stops):
        for word in (text, special_word(text)):
            if word and word not in words:
                words.append(word)
    return tuple(words)


def _call(fmt: PromptedFormat, tool: Tool, schema_rules: SchemaRules) -> str:
    rules = schema_rules.rules
    arguments = schema_rules.value(_object_schema(tool.parameters), f"{tool.name}-arguments")
    body = seq(schema_rules.member(schema_rules.key(TOOL_KEY), schema_rules.constant(tool.name)), literal(","),
               rules.ws(), schema_rules.member(schema_rules.key(ARGUMENTS_KEY), arguments))
    return rules.add(f"call-{tool.name}", seq(literal("{"), rules.ws(), body, literal("}")))


def _answer(schema_rules: SchemaRules) -> str:
    rules = schema_rules.rules
    member = schema_rules.member(schema_rules.key(ANSWER_KEY), schema_rules.string())
    return rules.add("answer", seq(literal("{"), rules.ws(), member, literal("}")))


def _object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """Arguments are always an object, also where the tool's schema leaves the type out."""
    return {**parameters, "type": "object"} if parameters.get("type", "object") == "object" else {"type": "object"}


def _before_reply(fmt: PromptedFormat, rules: Rules) -> str:
    """Whitespace, and the template's reasoning block when the model may write one first."""
    ws = rules.ws()
    reasoning = fmt.reasoning
    if reasoning is None or reasoning.switched_off or not reasoning.close:
        return ws
    close = reasoning.close
    text = text_until(rules, "reasoning-text", close[0].text)
    rest = [literal(m.text) for m in close[1:]]
    if reasoning.forced_open:
        return seq(ws, optional(seq(text, *rest, ws)))
    opening = [literal(m.text) for m in reasoning.open]
    return seq(ws, optional(seq(*opening, text, *rest, ws)))


# --------------------------------------------------------------------------- the same as a JSON schema


def response_format(fmt: PromptedFormat) -> dict[str, Any] | None:
    """An OpenAI ``response_format`` that allows the same replies as the grammar (style "json" only: a
    fenced reply mixes prose and JSON, which no JSON schema describes)."""
    if fmt.style != "json":
        return None
    options = [{"type": "object",
                "properties": {TOOL_KEY: {"const": tool.name}, ARGUMENTS_KEY: _object_schema(tool.parameters)},
                "required": [TOOL_KEY, ARGUMENTS_KEY], "additionalProperties": False}
               for tool in fmt.callable]
    if fmt.answers:
        options.append({"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
                        "required": [ANSWER_KEY], "additionalProperties": False})
    return {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": {"oneOf": options}}}
