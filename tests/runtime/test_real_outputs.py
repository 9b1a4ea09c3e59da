"""What real models write, not only what their templates render (issue 25): each row is an output a
model may write on a real corpus template, and the message the parser must read from it. Every row is
read in one batch and streamed one character at a time, and the two must agree."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest
from helpers.golden import golden
from helpers.roundtrip import TOOLS

from analyzer.backends.parser import Message, Parser, apply


class Row(NamedTuple):
    template: str
    output: str
    # what the message must hold
    content: str | None = None
    reasoning: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    thinking: bool | None = None
    # the tolerances applied (their kinds, in order); a strict parse applies none of them, and then
    # reads ``strict`` instead (content, calls, error kinds), when the row says
    warnings: tuple[str, ...] = ()
    strict: tuple[str | None, tuple[tuple[str, dict[str, Any]], ...], tuple[str, ...]] | None = None


_QWEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
_SEED_CALL = (
    "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Paris</parameter>\n</function>\n</seed:tool_call>"
)
_PARIS = (("get_weather", {"location": "Paris"}),)
_QWEN_SEARCH = '<tool_call>\n{"name": "search", "arguments": {"query": "rain"}}\n</tool_call>'
_KIMI_CALL = (
    '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"location": "Paris"}<|tool_call_end|>'
)
_HEADLESS = "Let me look.\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>\n</tool_call>"
_KIMI_SECTION = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{}"
    "<|tool_call_end|><|tool_calls_section_end|>"
)

ROWS = {
    # Inside a reasoning block that closes, markup is reasoning text: a call the model only mentions
    # while thinking is not executed, and does not cut the reasoning short.
    "a call quoted in reasoning that closes": Row(
        "Qwen-Qwen3-0.6B",
        f"<think>\nI could write {_QWEN_CALL} but let me think more.\n</think>\n\n{_QWEN_CALL}",
        reasoning=f"I could write {_QWEN_CALL} but let me think more.",
        calls=_PARIS,
        thinking=True,
    ),
    "a call quoted in reasoning that closes (Seed-OSS)": Row(
        "ByteDance-Seed-OSS",
        f"<seed:think>\nI could write {_SEED_CALL} but let me think more.\n</seed:think>\n\n{_SEED_CALL}",
        reasoning=f"I could write {_SEED_CALL} but let me think more.",
        calls=_PARIS,
    ),
    "a quoted call and no call after the block": Row(
        "Qwen-Qwen3-0.6B",
        f"<think>\nMaybe {_QWEN_CALL}? No.\n</think>\n\nIt is sunny.",
        content="It is sunny.",
        reasoning=f"Maybe {_QWEN_CALL}? No.",
        thinking=True,
    ),
    # A block the model never closes: a call in it ends it (the model went straight to acting).
    "a call ends a block never closed": Row(
        "Qwen-Qwen3-0.6B",
        f"<think>\nLet me call {_QWEN_CALL}",
        reasoning="Let me call",
        calls=_PARIS,
        thinking=True,
    ),
    "a call ends a block never closed, content after it": Row(
        "ByteDance-Seed-OSS",
        f"<seed:think>Let me call {_SEED_CALL}\nDone.",
        content="Done.",
        reasoning="Let me call",
        calls=_PARIS,
    ),
    # Reasoning the prompt opens, found from renders with the thinking switch on (history keeps
    # reasoning only then), or from a prompt that always opens the block (Nemotron-Nano-v2).
    "reasoning opened by the prompt, thinking on (DeepSeek-V4)": Row(
        "deepseek-ai-DeepSeek-V4",
        "I am\nthinking</think>Hello, world!",
        content="Hello, world!",
        reasoning="I am\nthinking",
        thinking=True,
    ),
    "no reasoning with thinking off (DeepSeek-V4)": Row(
        "deepseek-ai-DeepSeek-V4", "Hello, world!", content="Hello, world!", thinking=False
    ),
    "reasoning opened by the prompt, thinking on (Reka-Edge)": Row(
        "Reka-Edge",
        "I am\nthinking\n</think>\n\nHello, world!",
        content="Hello, world!",
        reasoning="I am\nthinking",
        thinking=True,
    ),
    "reasoning opened by every prompt (Nemotron-Nano-v2)": Row(
        "NVIDIA-Nemotron-Nano-v2",
        "I am\nthinking</think>Hello, world!",
        content="Hello, world!",
        reasoning="I am\nthinking",
    ),
    # Reasoning the template reads as a content part ({"type": "thinking"}), written [THINK]...[/THINK].
    "reasoning written as a content part (Ministral-3)": Row(
        "mistralai-Ministral-3-14B-Reasoning-2512",
        "[THINK]I am\nthinking[/THINK]Hello, world!",
        content="Hello, world!",
        reasoning="I am\nthinking",
    ),
    # A value in the template's CDATA wrapper may hold the marker that closes a value.
    "a CDATA value holding the value's closing marker (MiniCPM5)": Row(
        "openbmb-MiniCPM5-1B",
        '<function name="search"><param name="query"><![CDATA[<a href="/x">hi</a> </param>]]></param></function>',
        calls=(("search", {"query": '<a href="/x">hi</a> </param>'}),),
        thinking=False,
    ),
    # Whitespace between the parts of a marker the template writes joined.
    "a space inside the section opener (Mistral Nemo)": Row(
        "mistralai-Mistral-Nemo-Instruct-2407",
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"location": "Paris"}}]',
        calls=_PARIS,
        warnings=("marker_whitespace",),
        strict=('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"location": "Paris"}}]', (), ()),
    ),
    "a newline inside the section opener (Apertus)": Row(
        "Apertus-8B-Instruct",
        '<|tools_prefix|>\n[{"get_weather": {"location": "Paris"}}]<|tools_suffix|>',
        calls=_PARIS,
        warnings=("marker_whitespace",),
        strict=('<|tools_prefix|>\n[{"get_weather": {"location": "Paris"}}]<|tools_suffix|>', (), ()),
    ),
    # A call without the section opener the template writes before it (the call's own opener stays).
    "a call without its section opener (Kimi-K2)": Row(
        "moonshotai-Kimi-K2",
        _KIMI_CALL,
        calls=_PARIS,
        warnings=("missing_opener",),
        strict=(_KIMI_CALL, (), ()),
    ),
    # Bare JSON calls in a markdown code fence.
    "a bare JSON call in a code fence (Llama 3.1)": Row(
        "meta-llama-Llama-3.1-8B-Instruct",
        '```json\n{"name": "get_weather", "parameters": {"location": "Paris"}}\n```',
        calls=_PARIS,
        warnings=("code_fence",),
        # strict: the fence is content, and the bare JSON call inside it is read as the template writes it
        strict=("```json\n\n```", _PARIS, ()),
    ),
    # Python literals where the template writes JSON, and JSON where it writes Python.
    "a call object in Python literal syntax (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        "<tool_call>\n{'name': 'get_weather', 'arguments': {'location': 'Paris', 'days': 2}}\n</tool_call>",
        calls=(("get_weather", {"location": "Paris", "days": 2}),),
        warnings=("literal_syntax",),
        strict=("", (), ("malformed_call",)),
    ),
    "arguments in Python literal syntax (Kimi-K2)": Row(
        "moonshotai-Kimi-K2",
        _KIMI_SECTION.format("{'location': 'Paris'}"),
        calls=_PARIS,
        warnings=("literal_syntax",),
        # The call's name and the arguments' opening brace were sent before the quote showed them
        # malformed: the call stays, as sent, beside the error (and the section's closer after it
        # closes the section, as after any call).
        strict=(None, (("get_weather", "{"),), ("malformed_call",)),
    ),
    # Arguments as a JSON-encoded string where the template writes an object, and the reverse.
    "arguments encoded as a JSON string (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "get_weather", "arguments": "{\\"location\\": \\"Paris\\"}"}\n</tool_call>',
        calls=_PARIS,
        warnings=("arguments_encoding",),
        strict=("", (), ("malformed_call",)),
    ),
    "arguments encoded twice (Kimi-K2)": Row(
        "moonshotai-Kimi-K2",
        _KIMI_SECTION.format('"{\\"location\\": \\"Paris\\"}"'),
        calls=_PARIS,
        warnings=("arguments_encoding",),
        strict=("<|tool_calls_section_end|>", (), ("malformed_call",)),
    ),
    # The common alternative keys of a JSON call object.
    "parameters for arguments, function for name (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"function": "get_weather", "parameters": {"location": "Paris"}}\n</tool_call>',
        calls=_PARIS,
        warnings=("key_spelling",),
        strict=("", (), ("malformed_call",)),
    ),
    "arguments for parameters (Llama 3.2)": Row(
        "meta-llama-Llama-3.2-3B-Instruct",
        '{"name": "get_weather", "arguments": {"location": "Paris"}}',
        calls=_PARIS,
        warnings=("key_spelling",),
        # strict: the call is read with the template's key, and the other reported
        strict=(None, (("get_weather", {}),), ("unknown_call_field", "invalid_arguments")),
    ),
    # A call's first marker left out before a distinctive one (Qwen3-Coder's <function= without <tool_call>).
    "a call without its first marker (Qwen3-Coder)": Row(
        "Qwen3-Coder",
        _HEADLESS,
        content="Let me look.",
        calls=_PARIS,
        warnings=("missing_opener",),
        strict=(_HEADLESS, (), ()),
    ),
    # A call's closing text cut short or left out where the output ends (the model stopped at its end
    # token), and left out before the next call.
    "a call's closer left out at the end (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}',
        calls=_PARIS,
        warnings=("missing_closer",),
        strict=(None, _PARIS, ("unterminated_call",)),  # sent as it arrived: kept beside the error
    ),
    "a call's closer cut short at the end (Qwen3-Coder)": Row(
        "Qwen3-Coder",
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>\n</tool",
        calls=_PARIS,
        warnings=("missing_closer",),
        # sent as it arrived (the closing brace comes with a whole call): kept beside the error
        strict=(None, (("get_weather", '{"location": "Paris"'),), ("unterminated_call",)),
    ),
    "no section markers and no closers (Kimi-K2-Thinking)": Row(
        "Kimi-K2-Thinking",
        "<think>I will look<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"location": "Paris"}<|tool_call_begin|>functions.search:1<|tool_call_argument_begin|>{"query": "rain"}',
        reasoning="I will look",
        calls=(*_PARIS, ("search", {"query": "rain"})),
        thinking=True,
        warnings=("missing_opener", "missing_closer", "missing_closer"),
        strict=("", (), ()),  # strict: all of it is reasoning
    ),
    "a double-quoted string where the template writes raw single-quoted ones (LFM2.5)": Row(
        "LFM2.5-8B-A1B",
        '<|tool_call_start|>[search(query="line 1\\nline \\"2\\"")]<|tool_call_end|>',
        calls=(("search", {"query": 'line 1\nline "2"'}),),
        warnings=("literal_syntax",),
        strict=(None, (("search", {"query": 'line 1\\nline \\"2\\"'}),), ()),
    ),
    "the template's own single quotes keep backslashes as written (LFM2.5)": Row(
        "LFM2.5-8B-A1B",
        "<|tool_call_start|>[search(query='a\\nb')]<|tool_call_end|>",
        calls=(("search", {"query": "a\\nb"}),),
    ),
    "a stray reasoning closer after the answer (Gemma 4)": Row(
        "google-gemma-4-31B-it",
        "<|channel>thought\nLet me see.<channel|>Hello.<channel|>",
        content="Hello.",
        reasoning="Let me see.",
        thinking=True,
        warnings=("stray_reasoning_marker",),
        strict=("Hello.<channel|>", (), ()),
    ),
    "the generation prompt's last marker again (command-r-plus)": Row(
        "CohereForAI-c4ai-command-r-plus-tool_use",
        "<|CHATBOT_TOKEN|>Hello.",
        content="Hello.",
        warnings=("repeated_prompt_marker",),
        strict=("<|CHATBOT_TOKEN|>Hello.", (), ()),
    ),
    # Calls separated otherwise than the template separates them.
    "calls separated by a semicolon (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        f"{_QWEN_CALL};{_QWEN_SEARCH}",
        calls=(*_PARIS, ("search", {"query": "rain"})),
        warnings=("call_separator",),
        strict=(";", (*_PARIS, ("search", {"query": "rain"})), ()),  # strict: the ";" is content between calls
    ),
    "calls with nothing between them (Kimi-K2)": Row(
        "moonshotai-Kimi-K2",
        "<|tool_calls_section_begin|>" + _KIMI_CALL + _KIMI_CALL.replace(":0", ":1") + "<|tool_calls_section_end|>",
        calls=(*_PARIS, *_PARIS),
    ),
    # One JSON list of calls where the template writes an object per call, and the reverse.
    "a JSON list of calls in one call's markers (Qwen2.5)": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n[{"name": "get_weather", "arguments": {"location": "Paris"}}, '
        '{"name": "search", "arguments": {"query": "rain"}}]\n</tool_call>',
        calls=(*_PARIS, ("search", {"query": "rain"})),
        warnings=("call_list",),
        strict=("", (), ("malformed_call",)),
    ),
    "one call object where the template writes a list (Mistral Nemo)": Row(
        "mistralai-Mistral-Nemo-Instruct-2407",
        '[TOOL_CALLS]{"name": "get_weather", "arguments": {"location": "Paris"}}',
        calls=_PARIS,
        warnings=("call_list",),
        strict=('[TOOL_CALLS]{"name": "get_weather", "arguments": {"location": "Paris"}}', (), ()),
    ),
    # Reasoning markers as models write them.
    "the opener again after the prompt opened the block (Qwen3.5)": Row(
        "Qwen3.5-4B",
        "<think>\nLet me see.\n</think>\n\nHello.",
        content="Hello.",
        reasoning="Let me see.",
        thinking=True,
        warnings=("repeated_reasoning_opener",),
        strict=("Hello.", (), ()),
    ),
    "an empty block, then a call, where the prompt opened it (Qwen3.5)": Row(
        "Qwen3.5-4B",
        "<think>\n\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        calls=_PARIS,
        thinking=True,
        warnings=("repeated_reasoning_opener",),
        strict=(None, _PARIS, ()),
    ),
    # A call header written as the template writes its other messages' headers (gpt-oss: the channel
    # words of its content wrapper and reasoning opener, its channel part first).
    "a call's recipient after its channel, no content type (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=functions.get_weather<|message|>{"location": "Paris"}<|call|>',
        calls=_PARIS,
        warnings=("header_order", "header_word"),
        strict=("<|channel|>commentary", (), ("malformed_call",)),
    ),
    "a call's recipient after its channel (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=functions.get_weather json<|message|>{"location": "Paris"}',
        calls=_PARIS,
        warnings=("header_order",),
        strict=("<|channel|>commentary", (), ("malformed_call",)),
    ),
    "a call in the analysis channel, after reasoning (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>analysis<|message|>Let me look.<|end|><|start|>assistant to=functions.get_weather"
        '<|channel|>analysis<|message|>{"location": "Paris"}',
        reasoning="Let me look.",
        calls=_PARIS,
        warnings=("header_word",),
        strict=("", (), ("malformed_call",)),
    ),
    "a call in the analysis channel, recipient after it (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        '<|channel|>analysis to=functions.get_weather<|message|>{"location": "Paris"}',
        calls=_PARIS,
        warnings=("header_order", "header_word"),
        strict=("<|channel|>analysis", (), ("malformed_call",)),
    ),
    "a commentary message with no recipient is content (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>commentary<|message|>Let me look that up.",
        content="Let me look that up.",
        warnings=("header_word",),
        strict=("<|channel|>commentary<|message|>Let me look that up.", (), ()),
    ),
    "the call header as the template writes it (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Paris"}<|call|>',
        calls=_PARIS,
    ),
    # A token no render writes, bracketed as the header's own (harmony's content type annotation).
    "a call header with a token before its content type (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "Paris"}<|call|>',
        calls=_PARIS,
        warnings=("header_order", "header_token"),
        strict=("<|channel|>commentary", (), ("malformed_call",)),
    ),
    "the template's own call header with a token before its content type (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"location": "Paris"}',
        calls=_PARIS,
        warnings=("header_token",),
        strict=("", (), ("malformed_call",)),
    ),
    "a call in the analysis channel with a token before its content type (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        ' to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>{"location": "Paris"}',
        calls=_PARIS,
        warnings=("header_word", "header_token"),
        strict=("", (), ("malformed_call",)),
    ),
    "the final channel with a token before its content type is content (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>analysis<|message|>JSON it is.<|end|><|start|>assistant<|channel|>final <|constrain|>json"
        '<|message|>{"amount": 1}',
        content='{"amount": 1}',
        reasoning="JSON it is.",
        warnings=("header_token",),
        strict=('<|channel|>final <|constrain|>json<|message|>{"amount": 1}', (), ()),
    ),
    "a token of the header's bracketing before a content type, no call header of its own: content (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>final <b>bold</b>",
        content="<|channel|>final <b>bold</b>",
    ),
    "a header begun again before reasoning (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>commentary to=assistant<|channel|>analysis<|message|>Let me see.<|end|><|start|>assistant"
        "<|channel|>final<|message|>Hello.",
        content="Hello.",
        reasoning="Let me see.",
        warnings=("abandoned_header",),
        strict=("<|channel|>commentary to=assistantHello.", (), ()),
    ),
    "a header begun again before the final channel (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>analysis<|message|>Let me see.<|end|><|start|>assistant<|channel|>commentary to=assistant"
        "<|channel|>final<|message|>Hello.",
        content="Hello.",
        reasoning="Let me see.",
        warnings=("abandoned_header",),
        strict=("<|channel|>commentary to=assistantHello.", (), ()),
    ),
    "a channel word and text, no header begun again: content (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        "<|channel|>final words here, then <|channel|> later",
        content="<|channel|>final words here, then <|channel|> later",
    ),
    "a header word that is no channel of the template is no call (gpt-oss)": Row(
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=assistant<|message|>{"location": "Paris"}',
        content='<|channel|>commentary to=assistant<|message|>{"location": "Paris"}',
    ),
    "a closer with no opener (Qwen3)": Row(
        "Qwen-Qwen3-0.6B",
        "</think>\n\nHello.",
        content="Hello.",
        warnings=("unopened_reasoning",),
        strict=("</think>\n\nHello.", (), ()),
    ),
}


def _read(parser: Parser, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The batch message and the message a stream fed one character at a time folds to."""
    batch = parser.parse(text).to_dict()
    stream, folded = parser.stream(), Message()
    for ch in text:
        for delta in stream.feed(ch):
            apply(folded, delta)
    for delta in stream.finish():
        apply(folded, delta)
    return batch, folded.to_dict()


def _calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(c["function"]["name"], _arguments(c["function"]["arguments"])) for c in message.get("tool_calls", [])]


def _arguments(text: str) -> Any:
    """A call's arguments; as text where they are the beginning sent of a call that turned out malformed."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize("name", list(ROWS))
def test_real_output_reads_as_expected(name: str) -> None:
    row = ROWS[name]
    parser = Parser(golden(row.template), TOOLS, thinking=row.thinking)
    batch, streamed = _read(parser, row.output)
    assert streamed == batch
    assert batch["content"] == row.content, batch
    assert batch.get("reasoning_content", "") == row.reasoning, batch
    assert _calls(batch) == list(row.calls), batch
    assert batch["errors"] == [], batch
    assert [w["kind"] for w in batch.get("warnings", [])] == list(row.warnings), batch


@pytest.mark.parametrize("name", [name for name, row in ROWS.items() if row.warnings])
def test_a_strict_parse_applies_no_tolerance(name: str) -> None:
    row = ROWS[name]
    parser = Parser(golden(row.template), TOOLS, thinking=row.thinking, strict=True)
    batch, streamed = _read(parser, row.output)
    assert streamed == batch
    assert "warnings" not in batch, batch
    assert row.strict is not None, "a tolerance row says what a strict parse reads"
    content, calls, errors = row.strict
    assert (batch["content"], _calls(batch), [e["kind"] for e in batch["errors"]]) == (
        content,
        list(calls),
        list(errors),
    )


@pytest.mark.parametrize(
    "template, output, ids",
    [
        # The template writes a call's name and count as its id (and results name it): the model's own id.
        ("moonshotai-Kimi-K2", _KIMI_SECTION.format('{"location": "Paris"}'), ["functions.get_weather:0"]),
        (
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"location": "Paris"}}\n]<|END_ACTION|>',
            ["0"],
        ),
    ],
)
def test_a_count_written_as_the_id_is_the_call_id(template: str, output: str, ids: list[str]) -> None:
    batch, streamed = _read(Parser(golden(template), TOOLS), output)
    assert streamed == batch
    assert [call["id"] for call in batch["tool_calls"]] == ids, batch


@pytest.mark.parametrize(
    "output",
    [
        '<|channel|>commentary to=functions.get_weather<|message|>{"location": "Pa',
        ' to=functions.get_weather<|channel|>analysis<|message|>{"location": "Pa',
        "<|channel|>commentary to=functions.get_weather",
    ],
)
def test_a_call_header_variant_cut_short_is_reported_with_its_text(output: str) -> None:
    """A call in a header form the template does not write, cut off by the end of the output: its text
    is an unterminated call, not content, and not lost (gpt-oss)."""
    batch, streamed = _read(Parser(golden("openai-gpt-oss-120b"), TOOLS), output)
    assert streamed == batch
    assert [(e["kind"], e["text"]) for e in batch["errors"]] == [("unterminated_call", output.lstrip())], batch
    assert not batch["content"] and "tool_calls" not in batch, batch


@pytest.mark.parametrize(
    "output, kind, left_out",
    [
        (
            ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"location": "Paris"}',
            "header_token",
            "<|constrain|>",
        ),
        # A token the fuzzer made of the template's own by cutting it (benchmarks/fuzz_parser.py).
        (
            ' to=functions.get_weather<|channel|>analysis <|consQzvk025train|>json<|message|>{"location": "Paris"}',
            "header_token",
            "<|consQzvk025train|>",
        ),
        ('<|channel|>final <|constrain|>json<|message|>{"amount": 1}', "header_token", "<|constrain|>json"),
        (
            "<|channel|>commentary to=Qzvk7<|channel|>final<|message|>Hello.",
            "abandoned_header",
            "<|channel|>commentary to=Qzvk7",
        ),
    ],
)
def test_a_tolerance_that_leaves_text_out_reports_it(output: str, kind: str, left_out: str) -> None:
    """Nothing is lost: the model's text a tolerance keeps out of the message is in its warning (gpt-oss)."""
    batch, streamed = _read(Parser(golden("openai-gpt-oss-120b"), TOOLS), output)
    assert streamed == batch
    warning = next(w for w in batch["warnings"] if w["kind"] == kind)
    assert (warning["text"], output[warning["offset"] :].startswith(left_out)) == (left_out, True), batch


def test_every_tolerance_has_a_row() -> None:
    from analyzer.runtime.tolerance import TOLERANCES

    shown = {kind for row in ROWS.values() for kind in row.warnings}
    assert shown == set(TOLERANCES), set(TOLERANCES) - shown


def test_inline_reasoning_leaves_the_block_in_content(tmp_path, corpus_dir) -> None:
    """With inline reasoning the block stays in content as written, the opener the prompt wrote first
    (llama-server's --reasoning-format none); the command line and a generated module do the same."""
    from helpers.cli import run

    from analyzer.backends.parser.codegen import generate_parser_module

    output = "Let me see.\n</think>\n\nHello."
    parser = Parser(golden("Qwen3.5-4B"), TOOLS, thinking=True, inline_reasoning=True)
    batch, streamed = _read(parser, output)
    assert streamed == batch
    assert batch["content"] == "<think>\nLet me see.\n</think>\n\nHello." and "reasoning_content" not in batch
    module = _imported(generate_parser_module(golden("Qwen3.5-4B"), TOOLS, thinking=True), tmp_path)
    assert module.parse(output, inline_reasoning=True)["content"] == batch["content"]
    code, out, _ = run(
        ["parse", str(corpus_dir / "Qwen3.5-4B.jinja"), "--thinking", "--inline-reasoning"], input=output
    )
    assert code == 0 and json.loads(out)["content"] == batch["content"]


def _imported(source: str, folder):
    """A generated parser module, imported from its file (dataclasses look their module up)."""
    import importlib.util
    import sys

    path = folder / "generated_inline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("_generated_inline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_generated_inline"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["_generated_inline"]
    return module
