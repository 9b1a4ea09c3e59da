"""A call's arguments streamed as they arrive (issue 26 item 3), on real corpus templates: its index, id
and name first, then argument fragments whose concatenation is the final arguments string byte for
byte, each fragment only text no later character can change, and a batch parse reads the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.golden import compile_for, golden
from helpers.roundtrip import TOOLS, descriptions, model_output, not_written

from analyzer.backends.parser import Parser
from analyzer.runtime.message import Delta

# A file a coding agent writes: long, with quotes, commas, brackets and what closes markup.
LONG = "line 1\n" + "".join(f'line {k}: a "quoted" word, x=[2] & <b>done</b>\n' for k in range(2, 40))
WRITE = ("write_file", {"path": "notes/a.txt", "content": LONG, "mode": "append"})

# Formats whose arguments are a JSON object: a call object (Qwen, Hermes, Llama 3.1, Mistral's list),
# arguments after markers (Kimi-K2, functionary, DeepSeek V3.1), Reka. (Command-R's template writes its
# JSON indented: such text is sent once the call is whole, see below.)
JSON_ARGUMENTS = [
    "Qwen-Qwen3-0.6B",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
    "meta-llama-Llama-3.1-8B-Instruct",
    "Mistral-Small-3.2-24B-Instruct-2506",
    "moonshotai-Kimi-K2",
    "meetkai-functionary-medium-v3.1",
    "deepseek-ai-DeepSeek-V3.1",
    "Reka-Edge",
]


def _description(name: str) -> Any:
    return next(d for d in descriptions() if d.template.name == name)


def _output(corpus_dir: Path, name: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    description = _description(name)
    return model_output(description, compile_for(description, corpus_dir), None, calls)


def _fed_one_by_one(parser: Parser, text: str) -> tuple[list[list[Delta]], list[Delta]]:
    """Each character's deltas, and the finish's."""
    stream = parser.stream()
    steps = [stream.feed(ch) for ch in text]
    return steps, stream.finish()


def _arguments_sent(steps: list[list[Delta]], index: int) -> list[str]:
    return [d.arguments for step in steps for d in step if d.call_index == index and d.arguments]


# Formats that write arguments one by one: tags named by the key (Qwen3-Coder), key and value tags (GLM),
# named parameters (MiniMax-M2), DeepSeek V3.2's DSML. (Gemma 4 writes strings in its own quotes, in
# another form than other values: which form an argument is turns on its end, so each is sent whole.)
KEY_VALUE = ["Qwen3-Coder", "GLM-4.6", "MiniMax-M2", "deepseek-ai-DeepSeek-V3.2"]


@pytest.mark.parametrize("name", JSON_ARGUMENTS + KEY_VALUE)
def test_a_long_string_argument_streams_as_it_arrives(corpus_dir: Path, name: str) -> None:
    text = _output(corpus_dir, name, [WRITE])
    parser = Parser(golden(name), TOOLS)
    steps, last = _fed_one_by_one(parser, text)
    batch = parser.parse(text)
    assert len(batch.tool_calls) == 1 and not batch.errors, batch
    final = batch.tool_calls[0].arguments
    # The name (with the id) comes first, on its own, before any argument text.
    headers = [d for step in steps + [last] for d in step if d.call_name is not None]
    assert len(headers) == 1 and headers[0].call_id == batch.tool_calls[0].id and headers[0].arguments == ""
    fragments = _arguments_sent(steps, 0)
    # Sent while the call arrives, not at its end: the string's lines come one character at a time.
    assert len(fragments) > len(LONG) // 2, len(fragments)
    assert "".join(fragments + _arguments_sent([last], 0)) == final
    sent = ""
    for k, step in enumerate(steps):
        sent += "".join(d.arguments for d in step if d.call_index == 0)
        assert final.startswith(sent), (name, text[: k + 1][-40:], sent[-40:])  # never retracted


@pytest.mark.parametrize("name", [*JSON_ARGUMENTS, *KEY_VALUE, "google-gemma-4-31B-it"])
def test_the_stream_and_the_batch_parse_read_the_same(corpus_dir: Path, name: str) -> None:
    calls = [WRITE, ("search", {"query": "weather in Lyon"})]
    if not_written(_description(name), None, calls):
        calls = calls[:1]  # a template that writes one call at a time
    text = _output(corpus_dir, name, calls)
    parser = Parser(golden(name), TOOLS)
    stream = parser.stream()
    for at in range(0, len(text), 3):
        stream.feed(text[at : at + 3])
    stream.finish()
    assert stream.message == parser.parse(text)


# Strict JSON is passed on as written; tolerated arguments are re-encoded when the call is whole. What
# is sent before is the part written as that re-encoding writes it, so it begins either final string.
TOLERATED = [
    ("{'location': 'Paris', 'days': 3}", '{"location": "Paris", "days": 3}', "{"),
    ('{"location": "Paris", "note": True}', '{"location": "Paris", "note": true}', '{"location": "Paris", "note": '),
    ('{"location": "Paris", "days": 3.50}', '{"location": "Paris", "days": 3.50}', '{"location": "Paris", "days": '),
    ('{"location": "Caf\\u00e9"}', '{"location": "Caf\\u00e9"}', '{"location": "Caf'),
    ('{"location":"Paris"}', '{"location":"Paris"}', '{"location":'),
]


@pytest.mark.parametrize(("written", "final", "sent"), TOLERATED)
def test_what_a_tolerance_reads_otherwise_is_held_until_the_call_is_whole(written: str, final: str, sent: str) -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        + written
        + "<|tool_call_end|><|tool_calls_section_end|>"
    )
    parser = Parser(golden("moonshotai-Kimi-K2"), TOOLS)
    steps, last = _fed_one_by_one(parser, text)
    assert "".join(_arguments_sent(steps[: len(text) - len("<|tool_call_end|><|tool_calls_section_end|>")], 0)) == sent
    assert "".join(_arguments_sent(steps + [last], 0)) == final == parser.parse(text).tool_calls[0].arguments


def test_a_key_written_twice_stops_the_stream_where_it_stands() -> None:
    """Strict JSON with a repeated key is passed on as written, so the stream may send up to the repeat
    (the comma before it is sent with the key after it)."""
    written = '{"location": "Paris", "location": "Rome"}'
    text = f'<tool_call>\n{{"name": "get_weather", "arguments": {written}}}\n</tool_call>'
    parser = Parser(golden("Qwen-Qwen3-0.6B"), TOOLS)
    steps, last = _fed_one_by_one(parser, text)
    before_close = _arguments_sent(steps[: text.index("}}") + 1], 0)
    assert "".join(before_close) == '{"location": "Paris"'
    assert "".join(_arguments_sent(steps + [last], 0)) == written == parser.parse(text).tool_calls[0].arguments


def test_a_key_still_arriving_is_sent_while_it_can_be_no_repeat() -> None:
    """A key goes out as it comes while no key before it in its object begins the same way; one that
    may yet repeat an earlier key waits until it is whole (a repeat stops the stream)."""
    parser = Parser(golden("Qwen-Qwen3-0.6B"), TOOLS)
    head = '<tool_call>\n{"name": "get_weather", "arguments": '
    for written, sent in [
        ('{"locat', '{"locat'),
        ('{"location": "Paris", "da', '{"location": "Paris", "da'),
        ('{"location": "Paris", "loc', '{"location": "Paris"'),  # (", " goes with the key after it)
        ('{"location": "Paris", "locx', '{"location": "Paris", "locx'),
        # Doubt inside a key (a raw control character, an escape json.dumps does not write): what
        # came before its first character not written as is stays sent, read at once or char by char.
        ('{"l\r\nocation": "Paris"', '{"l'),
        ('{"a\\"b\r": "1"', '{"a'),
        ('{"location": "Paris", "d\u0000ays', '{"location": "Paris", "d'),
        ('{"location": "Paris", "loc\x00', '{"location": "Paris"'),
    ]:
        steps, _ = _fed_one_by_one(parser, head + written)
        assert "".join(_arguments_sent(steps, 0)) == sent, written
        stream = parser.stream()
        stream.feed(head + written)
        assert stream.message.tool_calls[0].arguments == sent, written  # all at once: the same
        assert parser.parse(head + written).tool_calls[0].arguments == sent, written  # and the batch


# Call objects that hold the call's id or count after its arguments: Mistral Nemo's nine-letter id,
# Command R7B's and Cohere2's count.
WITH_IDS = ["mistralai-Mistral-Nemo-Instruct-2407", "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "Cohere2MoE"]


@pytest.mark.parametrize("name", WITH_IDS)
def test_with_fresh_ids_a_call_object_carrying_an_id_streams_its_arguments(corpus_dir: Path, name: str) -> None:
    """By default such a call waits for its id, written after the arguments, and is sent whole; with
    ``fresh_ids`` (the caller makes ids, as serve does) its arguments stream as they arrive, the batch
    reads the same, and parallel calls still get distinct ids."""
    text = _output(corpus_dir, name, [WRITE])
    by_default, _ = _fed_one_by_one(Parser(golden(name), TOOLS), text)
    assert len(_arguments_sent(by_default, 0)) == 1
    parser = Parser(golden(name), TOOLS, fresh_ids=True)
    steps, last = _fed_one_by_one(parser, text)
    batch = parser.parse(text)
    assert len(batch.tool_calls) == 1 and not batch.errors, batch
    final = batch.tool_calls[0].arguments
    assert json.loads(final) == WRITE[1]
    fragments = _arguments_sent(steps, 0)
    # (text before a ``]`` in the string waits for the next character: ``]`` may close Nemo's list)
    assert len(fragments) > LONG.count("\n"), len(fragments)
    assert "".join(fragments + _arguments_sent([last], 0)) == final
    sent = ""
    for step in steps:
        sent += "".join(d.arguments for d in step if d.call_index == 0)
        assert final.startswith(sent)  # never retracted
    two = _output(corpus_dir, name, [WRITE, ("get_weather", {"location": "Paris"})])
    stream = parser.stream()
    for at in range(0, len(two), 3):
        stream.feed(two[at : at + 3])
    stream.finish()
    assert stream.message == parser.parse(two)
    assert len({call.id for call in stream.message.tool_calls}) == 2


def test_a_call_cut_off_shows_what_was_sent_and_the_error_names_it(corpus_dir: Path) -> None:
    """Output cut inside a call (no finish yet: a partial parse) shows the call with its arguments so
    far; at the finish, the call stays as sent (a client has it) and the unterminated error names it."""
    text = _output(corpus_dir, "Qwen-Qwen3-0.6B", [WRITE])
    cut = text[: text.index("line 9")]
    parser = Parser(golden("Qwen-Qwen3-0.6B"), TOOLS)
    stream = parser.stream()
    stream.feed(cut)
    (call,) = stream.message.tool_calls
    assert call.name == "write_file" and call.arguments.startswith('{"path": "notes/a.txt", "content": "line 1\\n')
    assert call.arguments.endswith('line 8: a \\"quoted\\" word, x=[2] & <b>done</b>\\n')
    stream.finish()
    assert stream.message == parser.parse(cut)
    assert [(e.kind, e.call_index) for e in stream.message.errors] == [("unterminated_call", 0)]
    assert stream.message.errors[0].text.endswith('line 8: a \\"quoted\\" word, x=[2] & <b>done</b>\\n')


def test_arguments_stop_at_the_first_text_that_may_close_the_call() -> None:
    """A malformed call's error is cut at the first closer, so no argument text past it is sent while
    the call arrives; a string that holds the closer in a call that is whole is sent with the call."""
    parser = Parser(golden("Qwen-Qwen3-0.6B"), TOOLS)
    whole = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Par</tool_call>is"}}\n</tool_call>'
    steps, last = _fed_one_by_one(parser, whole)
    assert "".join(_arguments_sent(steps[: whole.index("is")], 0)) == '{"location": "Par'
    assert "".join(_arguments_sent(steps + [last], 0)) == '{"location": "Par</tool_call>is"}'
    malformed = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Par</tool_call>is"]\n</tool_call>'
    steps, last = _fed_one_by_one(parser, malformed)
    assert "".join(_arguments_sent(steps + [last], 0)) == '{"location": "Par'
    batch = parser.parse(malformed)
    assert [(e.kind, e.call_index) for e in batch.errors] == [("malformed_call", 0)]
    assert batch.errors[0].text.endswith("Par</tool_call>") and batch.content.startswith("is")
    stream = parser.stream()
    for ch in malformed:
        stream.feed(ch)
    stream.finish()
    assert stream.message == batch


def test_indented_json_is_sent_when_the_call_is_whole(corpus_dir: Path) -> None:
    """Command-R's template indents its JSON: whitespace a re-encoding would not write is a point of
    doubt, so only the opening brace goes before the call is whole (the final string is as written)."""
    name = "CohereForAI-c4ai-command-r-plus-tool_use"
    text = _output(corpus_dir, name, [WRITE])
    parser = Parser(golden(name), TOOLS)
    steps, last = _fed_one_by_one(parser, text)
    fragments = _arguments_sent(steps + [last], 0)
    assert fragments[0] == "{" and len(fragments) == 2
    assert "".join(fragments) == parser.parse(text).tool_calls[0].arguments


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a key written twice in arguments that are also tolerated (re-encoded): the re-encoding "
    "keeps the later value in the earlier key's place, after the earlier value was sent; the stream reports "
    "streamed_call_differs, a batch parse nothing",
)
def test_a_repeated_key_in_tolerated_arguments() -> None:
    written = '{"location": "Paris", "location": "Rome", "days": True}'
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        + written
        + "<|tool_call_end|><|tool_calls_section_end|>"
    )
    parser = Parser(golden("moonshotai-Kimi-K2"), TOOLS)
    stream = parser.stream()
    for ch in text:
        stream.feed(ch)
    stream.finish()
    assert stream.message == parser.parse(text)


def test_key_value_arguments_are_sent_as_json_built_as_values_arrive(corpus_dir: Path) -> None:
    """Qwen3-Coder: each argument's JSON once whole (the integer when its closing tag comes), a string's
    text as it comes; a value's trailing newline, the template's own, never sent."""
    text = _output(corpus_dir, "Qwen3-Coder", [("get_weather", {"location": "Paris, France", "days": 3})])
    parser = Parser(golden("Qwen3-Coder"), TOOLS)
    steps, last = _fed_one_by_one(parser, text)
    sent, seen = "", []
    for step in steps:
        sent += "".join(d.arguments for d in step if d.call_index == 0)
        if not seen or seen[-1] != sent:
            seen.append(sent)
    assert '{"location": "Paris, Fr' in seen and '{"location": "Paris, France", "days": 3' in seen
    assert not any(s.endswith("\\n") for s in seen)
    assert sent + "".join(d.arguments for d in last) == '{"location": "Paris, France", "days": 3}'


# Outputs the fuzzer (benchmarks/fuzz_parser.py) found a stream read otherwise than the batch parse.
FUZZ_FOUND = [
    # A closing marker's beginning, then another marker: never the closer, however the text arrives
    # (the batch held it back as a closer's beginning at the call's cut, a stream had seen past it).
    (
        "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter</function>\n</function>\n"
        "</tool_call>",
    ),
    # A comma, then the object's end: '{"query": "q",}' is Python, re-encoded without the comma a
    # stream had sent.
    ("unsloth-mistral-Devstral-Small-2507", '[TOOL_CALLS]search[ARGS]{"query": "q",} "filters": {"tags": ["a"]}'),
    # A string past the next call's opener, where the call may lack its closer (a tolerance): the call
    # was read to the opener, its value another way, after the string was sent.
    (
        "google-gemma-4-31B-it-interleaved",
        '<|tool_call>call:get_weather{location:<|"|>Paris<|"|X>}<to-1e999ol_call|><|tool_call>call:search{query:'
        '<|"|>weather in Lyon<',
    ),
    # Two JSON strings side by side: read as Python, they were joined ("ab") after "a" was sent.
    (
        "unsloth-Apriel-1.5",
        '\n<tool_calls>[{"name": "search", "arguments": {"query": "q", "filters": {"tags": ["a" "b"], "year": 2024}}}]'
        "</tool_calls>",
    ),
    # A value past its closer's broken spelling up to the next call: the batch read the value to a
    # later closer, past where the call may close, and sent none of it; a stream had sent it.
    (
        "Spark2.5",
        "<tool_call>get_weather<arg_key>location</arg_key><arg_value>Paris</a{rg_value></tool_callQzvk0174>"
        "<tool_call>search<arg_key>query</arg_key><arg_value>weather in Lyon</arg_value>",
    ),
    (
        "Qwen3.5-4B",
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis, France\n</parameter<tool_call>\n"
        "<parameter=days>\n3\n</parameter>Qzvk0586\n</function>\n</tool_call>",
    ),
    # A comma, a space, then the object's end: sent with the comma before the re-encoding dropped it.
    ("unsloth-mistral-Devstral-Small-2507", '[TOOL_CALLS]météo[ARGS]{"ville": "Paris", }"ключ": "v"}'),
    # An invalid escape in a key, and Python's None around it: the batch read None as null inside the
    # key (and its escape as JSON's), a key no stream had sent.
    (
        "Reka-Edge",
        ' <tool_call>\n{"name": "search", "arguments": {"query": "q", "fNone\'\\Noneilters": {"tags": ["a", "b"], '
        '"year": 2024}}}\n</tool_call>\n\n<sep>',
    ),
]
# Outputs read as continuing a prefilled message.
FUZZ_FOUND_CONTINUING = [
    # A call id hundreds of characters long in reasoning the prompt opened: a stream let it go as no id
    # (long ids are none) while the batch read it whole as a call ending the reasoning.
    (
        "upstage-Solar-Open-100B",
        "<|tool_calls|><|tool_calls|><|tool_call:begin|>Ab3De6G" + "(" * 500 + "h9<|tool_call:name|>search"
        '<|tool_call:args|>{"query": "q"}<|tool_call:end|><|calls|>',
        {"reasoning_content": "Let me "},
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "continuing"),
    [(name, text, None) for name, text in FUZZ_FOUND] + FUZZ_FOUND_CONTINUING,
    ids=[name for name, _ in FUZZ_FOUND] + [f"{name}-continuing" for name, *_ in FUZZ_FOUND_CONTINUING],
)
def test_outputs_the_fuzzer_found_stream_as_the_batch_reads_them(
    name: str, text: str, continuing: dict[str, str] | None
) -> None:
    parser = Parser(golden(name), TOOLS, continuing=continuing)
    batch = parser.parse(text)
    for size in (1, 2, 3, 7, len(text)):
        stream = parser.stream()
        for at in range(0, len(text), size):
            stream.feed(text[at : at + size])
        stream.finish()
        assert stream.message == batch, size
    assert not [e for e in batch.errors if e.kind == "streamed_call_differs"]
