"""What broke the parser before, on real corpus templates: it never raises, loses nothing, stays strict
UTF-8 JSON, and a stream gives what one batch parse gives (issue 11's reproducers, one row each)."""

from __future__ import annotations

import json

import pytest
from helpers.golden import golden
from helpers.roundtrip import TOOLS

from analyzer.backends.parser import Message, Parser, apply

NULLABLE = [
    {
        "type": "function",
        "function": {
            "name": "set_value",
            "parameters": {"type": "object", "properties": {"v": {"type": ["string", "null"]}}},
        },
    }
]
DEEP = "[" * 1000 + "]" * 1000
_KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:{}<|tool_call_argument_begin|>"
    '{{"location": "Paris"}}<|tool_call_end|><|tool_calls_section_end|>'
)

# (template, model output, what the message must hold: a predicate over its dict, tools)
CASES = {
    "lone surrogate escape in a name": (
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "\\ud800", "arguments": {}}\n</tool_call>',
        lambda m: m["tool_calls"][0]["function"]["name"] == "\ufffd" and m["errors"][0]["kind"] == "unknown_tool",
    ),
    "nesting of a thousand levels": (
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "search", "arguments": {"query": ' + DEEP + "}}\n</tool_call>",
        lambda m: [e["kind"] for e in m["errors"]] == ["malformed_call"] and DEEP in m["errors"][0]["text"],
    ),
    "a Python bytes key": (
        "LFM2.5-8B-A1B",
        "<|tool_call_start|>[search(query={b'q': 1})]<|tool_call_end|>",
        lambda m: json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"query": {"q": 1}},
    ),
    "NaN, Infinity and a lone surrogate in arguments": (
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "search", "arguments": {"query": "a\\udc00", "n": NaN, "m": 1e999}}\n</tool_call>',
        lambda m: (
            json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"query": "a\udc00", "n": "NaN", "m": "Infinity"}
            and sum("no JSON number" in e["message"] for e in m["errors"]) == 2
        ),
    ),
    "an empty calls section": (
        "moonshotai-Kimi-K2",
        "<|tool_calls_section_begin|><|tool_calls_section_end|>",
        lambda m: m["errors"] == [] and not m.get("tool_calls"),
    ),
    "a closer with whitespace inside": (
        "Apriel-1.6-15b-Thinker-fixed",
        '<tool_calls>[{"name": "list_files", "arguments": {}}]</tool_cal ls>',
        lambda m: "</tool_cal ls>" in (m["content"] or ""),
    ),
    "a closer cut short across two markers": (
        "CohereForAI-c4ai-command-r-plus-tool_use",
        'Action: ```json\n[\n    {\n        "tool_name": "list_files",\n        "parameters": {}\n    }\n]\n`',
        lambda m: m["tool_calls"][0]["function"]["name"] == "list_files" and not m["errors"],
    ),
    "a duplicated prefix": (
        "muse-glimmer",
        ' to=to=get_weather<|message|>{"location": "x"}<|call|>',
        lambda m: "to=get_weather" in (m["content"] or ""),
    ),
    "a call whose two name fields disagree": (
        "muse-glimmer",
        ' to=searchQzvk1<|message|><atem:function_calls>\n<atem:invoke name="search">\n'
        '<atem:parameter name="query">x</atem:parameter>\n</atem:invoke>\n</atem:function_calls>',
        lambda m: (
            not m.get("tool_calls")
            and m["errors"][0]["kind"] == "malformed_call"
            and "searchQzvk1" in m["errors"][0]["text"]
        ),
    ),
    "a closer the template writes only after several calls, after one": (
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n"
        '{"query": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        lambda m: not m["content"] and m["tool_calls"][0]["function"]["name"] == "search" and not m["errors"],
    ),
    "leading whitespace in reasoning": (
        "MiniMax-M2",
        "\n</THINK>",
        lambda m: not m["reasoning_content"].startswith("\n"),
    ),
    "a misspelled arguments key and an extra field": (
        "Qwen-Qwen2.5-7B-Instruct",
        '<tool_call>\n{"name": "search", "argument": {"query": "x"}, "extra": 1}\n</tool_call>',
        lambda m: (
            sorted(e["text"] for e in m["errors"] if e["kind"] == "unknown_call_field")
            == ['"argument": {"query": "x"}', '"extra": 1']
        ),
    ),
    "a reply cut inside the call's opening marker": (
        "Qwen-Qwen2.5-7B-Instruct",
        "Hello <tool_call",
        lambda m: (
            m["content"] == "Hello"
            and m["errors"][0]
            == {
                "kind": "unterminated_call",
                "message": "the output ends inside a call's opening marker",
                "text": "<tool_call",
                "call_index": 0,
            }
        ),
    ),
    "None for a nullable argument in a Python call": (
        "LFM2.5-8B-A1B",
        "<|tool_call_start|>[set_value(v=None)]<|tool_call_end|>",
        lambda m: json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"v": None} and not m["errors"],
    ),
    "an argument closed by another name": (
        "MiniMax-M3",
        '</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>['
        "<dQzvk1ays>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
        lambda m: (
            m["errors"]
            and "dQzvk1ays" in (m["content"] or "") + "".join(e.get("text", "") for e in m["errors"])
            and "dQzvk1ays" not in "".join(c["function"]["arguments"] for c in m.get("tool_calls") or [])
        ),
    ),
    "an index that is not a number": (
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
        '<|START_ACTION|>[\n    {"tool_call_id": "x9", "tool_name": "list_files", "parameters": {}}\n]<|END_ACTION|>',
        lambda m: any(e["kind"] == "unknown_call_field" and '"x9"' in e["text"] for e in m["errors"]),
    ),
    # Found by the fuzzer (seed 97): the search for a call in reasoning had been marked done up to the
    # end of the text when the call it found lay past the reasoning's end, so in a later reasoning block
    # of the same text (a batch parse holds it all) a call went unread and stayed reasoning.
    "a call in reasoning left open, after closed reasoning blocks": (
        "Kimi-K2-Thinking",
        "<think>a</think>"
        + _KIMI_CALL.format(0)
        + "<think>b</think>"
        + _KIMI_CALL.format(1)
        + "<think>still thinking"
        + _KIMI_CALL.format(2),
        lambda m: len(m["tool_calls"]) == 3 and m["reasoning_content"] == "abstill thinking",
    ),
    "a lone surrogate in the output text": (
        "Qwen-Qwen2.5-7B-Instruct",
        "Hi \ud800 there",
        lambda m: m["content"] == "Hi \ufffd there" and m["errors"][0]["kind"] == "invalid_utf8",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_output_is_read_and_reported(case: str) -> None:
    template, text, holds = CASES[case]
    parser = Parser(golden(template), NULLABLE if "set_value" in text else TOOLS)
    batch = parser.parse(text).to_dict()
    json.dumps(batch, ensure_ascii=False, allow_nan=False).encode("utf-8")  # strict, valid UTF-8
    assert holds(batch), batch
    for size in (1, 3):
        stream, message = parser.stream(), Message()
        for at in range(0, len(text), size):
            for delta in stream.feed(text[at : at + size]):
                apply(message, delta)
        for delta in stream.finish():
            apply(message, delta)
        assert message.to_dict() == batch, size


# Outputs the million-output fuzz run found a stream to read otherwise than the batch: reasoning the
# prompt opened, then a call whose names hold a quote (a declared name cut short by a chunk was read
# as an undeclared one ending at its quote, and the call was taken for reasoning).
CUT_ANYWHERE = {
    "a name with a quote after reasoning": (
        "MiniMax-M2",
        'I should look this up.\n\n\n\n<minimax:tool_call>\n<invoke name="q"uote">\n'
        '<parameter name="a"b">1</parameter>\n</invoke>\n</minimax:tool_call>',
    ),
    "an argument name with a quote after reasoning": (
        "MiniMax-M2",
        'I should look this up.\n<minimax:tool_call>\n<invoke name="search">\n'
        '<parameter name="a"b">1</parameter>\n</invoke>\n</minimax:tool_call>',
    ),
}


@pytest.mark.parametrize("case", list(CUT_ANYWHERE))
def test_a_stream_cut_anywhere_gives_the_batch(case: str) -> None:
    template, text = CUT_ANYWHERE[case]
    tools = [*TOOLS, _tool_with_key('a"b', "search")] if "search" in text else TOOLS
    parser = Parser(golden(template), tools)
    batch = parser.parse(text).to_dict()
    for cut in range(1, len(text)):
        stream, message = parser.stream(), Message()
        for piece in (text[:cut], text[cut:]):
            for delta in stream.feed(piece):
                apply(message, delta)
        for delta in stream.finish():
            apply(message, delta)
        assert message.to_dict() == batch, (cut, text[:cut])


def _tool_with_key(key: str, name: str) -> dict:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {key: {"type": "string"}}}},
    }
