"""Continuing a prefilled assistant message (``continue_final_message``, a prefill): the prompt ends
inside the conversation's last message, a partial assistant message, and the model's output goes on
with it. The parser is given that message (``continuing``) and returns the whole message, prefill and
continuation, while a stream's deltas carry only the output's text. The output continues the message's
content when it has any, else its reasoning, inside the block the prompt left open; nothing is stripped
where the two meet. Every row is read in one batch and streamed one character at a time, on real corpus
templates, and the two must agree."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest
from helpers.cli import run
from helpers.golden import golden
from helpers.roundtrip import TOOLS

from analyzer.backends.parser import Message, Parser, Prefill, PrefillError, apply

PREFILL_CONTENT = {"role": "assistant", "content": "Hello, ", "reasoning_content": "I'm thinking"}
PREFILL_REASONING = {"role": "assistant", "content": "", "reasoning_content": "I'm"}
ANSWER = "Hello, world!\nWhat's up?"
_PARIS = (("get_weather", {"location": "Paris"}),)
_QWEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
_QWEN35_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>\n</tool_call>"
)
_KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"location": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)


class Row(NamedTuple):
    template: str
    prefill: dict[str, Any]
    output: str
    content: str
    reasoning: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    thinking: bool | None = None


ROWS = {
    # Content continues: the prompt holds the reasoning block closed and the content so far.
    "content, Qwen3": Row(
        "Qwen-Qwen3-0.6B", PREFILL_CONTENT, "world!\nWhat's up?", ANSWER, "I'm thinking", thinking=True
    ),
    "content, Qwen3.5": Row("Qwen3.5-4B", PREFILL_CONTENT, "world!\nWhat's up?", ANSWER, "I'm thinking", thinking=True),
    "content, Kimi-K2-Thinking": Row("Kimi-K2-Thinking", PREFILL_CONTENT, "world!\nWhat's up?", ANSWER, "I'm thinking"),
    # A shape without reasoning: the message's reasoning stays as given, and content continues.
    "content, granite-4.0 (no reasoning)": Row(
        "ibm-granite-granite-4.0", PREFILL_CONTENT, "world!\nWhat's up?", ANSWER, "I'm thinking"
    ),
    "content, Qwen2.5 (no reasoning)": Row(
        "Qwen-Qwen2.5-7B-Instruct", PREFILL_CONTENT, "world!\nWhat's up?", ANSWER, "I'm thinking"
    ),
    # Reasoning continues, inside the block the prompt left open; the space the output starts with is kept.
    "reasoning, Qwen3": Row(
        "Qwen-Qwen3-0.6B", PREFILL_REASONING, " thinking\n</think>\n\nHello, world!\nWhat's up?", ANSWER, "I'm thinking"
    ),
    "reasoning, Qwen3.5": Row(
        "Qwen3.5-4B", PREFILL_REASONING, " thinking\n</think>\n\nHello, world!\nWhat's up?", ANSWER, "I'm thinking"
    ),
    "reasoning, Kimi-K2-Thinking": Row(
        "Kimi-K2-Thinking", PREFILL_REASONING, " thinking</think>Hello, world!\nWhat's up?", ANSWER, "I'm thinking"
    ),
    # Thinking switched off in the request: the message still says the prompt left the block open.
    "reasoning, Qwen3.5 with thinking off": Row(
        "Qwen3.5-4B",
        PREFILL_REASONING,
        " thinking</think>Hello, world!\nWhat's up?",
        ANSWER,
        "I'm thinking",
        thinking=False,
    ),
    # On a shape without reasoning, a message with reasoning alone starts content (its reasoning kept).
    "reasoning only, granite-4.0 (no reasoning)": Row(
        "ibm-granite-granite-4.0", PREFILL_REASONING, "Hello, world!\nWhat's up?", ANSWER, "I'm"
    ),
    # Nothing is stripped where the prefill and the output meet, either side.
    "a space the output starts with": Row(
        "Qwen-Qwen3-0.6B", {"content": "Hello,"}, " world!", "Hello, world!", "", thinking=True
    ),
    "a newline the prefill ends with": Row(
        "Qwen3.5-4B",
        {"content": "Line one.\n", "reasoning_content": "Short."},
        "Line two.",
        "Line one.\nLine two.",
        "Short.",
    ),
    "a newline the reasoning prefill ends with": Row(
        "Qwen3.5-4B",
        {"reasoning_content": "Step one.\n"},
        "Step two.\n</think>\n\nDone.",
        "Done.",
        "Step one.\nStep two.",
    ),
    # Content given as text parts.
    "content as text parts": Row(
        "Qwen-Qwen2.5-7B-Instruct",
        {"content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": ", "}]},
        "world!",
        "Hello, world!",
        "",
    ),
    # A call after the continued content, in each template's own format.
    "a call after continued content, Qwen3": Row(
        "Qwen-Qwen3-0.6B", {"content": "Let me check"}, f".\n{_QWEN_CALL}", "Let me check.", "", _PARIS, True
    ),
    "a call after continued content, Qwen3.5": Row(
        "Qwen3.5-4B",
        {"content": "Let me check", "reasoning_content": "Weather."},
        f".\n\n{_QWEN35_CALL}",
        "Let me check.",
        "Weather.",
        _PARIS,
        True,
    ),
    "a call after continued content, Kimi-K2-Thinking": Row(
        "Kimi-K2-Thinking", {"content": "Let me check"}, f".{_KIMI_CALL}", "Let me check.", "", _PARIS
    ),
    "a call after continued content, granite-4.0": Row(
        "ibm-granite-granite-4.0", {"content": "Let me check"}, f".\n{_QWEN_CALL}", "Let me check.", "", _PARIS
    ),
    # The prefill's whitespace is its own: a call right after it leaves it as the client wrote it.
    "a call right after a prefill ending in a space": Row(
        "Qwen-Qwen3-0.6B", {"content": "Let me check. "}, _QWEN_CALL, "Let me check. ", "", _PARIS, True
    ),
    "a call ends continued reasoning never closed": Row(
        "Qwen-Qwen3-0.6B",
        {"reasoning_content": "I should"},
        f" call it.\n{_QWEN_CALL}",
        "",
        "I should call it.",
        _PARIS,
    ),
}


def _parser(row: Row, *, strict: bool = False) -> Parser:
    return Parser(golden(row.template), TOOLS, thinking=row.thinking, strict=strict, continuing=row.prefill)


def _calls(message: Message) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, json.loads(call.arguments)) for call in message.tool_calls]


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_continuation(row: Row, strict: bool) -> None:
    parser = _parser(row, strict=strict)
    batch = parser.parse(row.output)
    assert (batch.content, batch.reasoning_content, _calls(batch)) == (row.content, row.reasoning, list(row.calls))
    assert not batch.errors and not batch.warnings

    stream = parser.stream()
    deltas = [delta for ch in row.output for delta in stream.feed(ch)] + stream.finish()
    assert stream.message == batch
    # The deltas carry the output's text alone: folded onto the prefill, they give the whole message.
    prefill = parser.continuing
    assert isinstance(prefill, Prefill)
    folded = Message(prefill.content, prefill.reasoning_content)
    for delta in deltas:
        apply(folded, delta)
    assert folded == batch
    assert "".join(delta.content for delta in deltas) == batch.content.removeprefix(prefill.content)
    assert "".join(d.reasoning_content for d in deltas) == batch.reasoning_content.removeprefix(
        prefill.reasoning_content
    )


def test_deltas_hold_only_the_output() -> None:
    """A stream's deltas are what the output adds; the message is the whole message."""
    parser = Parser(golden("Qwen3.5-4B"), thinking=True, continuing=PREFILL_CONTENT)
    stream = parser.stream()
    deltas = stream.feed("world!") + stream.feed("\nWhat's up?") + stream.finish()
    assert "".join(delta.content for delta in deltas) == "world!\nWhat's up?"
    assert not any(delta.reasoning_content for delta in deltas)
    assert (stream.message.content, stream.message.reasoning_content) == (ANSWER, "I'm thinking")


@pytest.mark.parametrize("template", ["Qwen-Qwen3-0.6B", "Qwen3.5-4B", "Kimi-K2-Thinking", "ibm-granite-granite-4.0"])
@pytest.mark.parametrize("output", ["Hi there.", "\n<think>\nx\n</think>\n\nHi there.", ""])
def test_a_message_with_no_text_is_a_plain_start(template: str, output: str) -> None:
    description = golden(template)
    plain = Parser(description, TOOLS, thinking=True).parse(output)
    for empty in (
        {},
        {"role": "assistant", "content": "", "reasoning_content": ""},
        {"content": None},
        {"content": []},
    ):
        assert Parser(description, TOOLS, thinking=True, continuing=empty).parse(output) == plain


def test_tolerances_apply_after_a_continuation() -> None:
    """A call whose closer the model left out is still read (and warned of); strict reads none."""
    description = golden("Qwen-Qwen3-0.6B")
    output = '.\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}'
    lenient = Parser(description, TOOLS, continuing={"content": "Let me check"}).parse(output)
    assert (lenient.content, _calls(lenient)) == ("Let me check.", list(_PARIS))
    assert [warning.kind for warning in lenient.warnings] == ["missing_closer"]
    strict = Parser(description, TOOLS, strict=True, continuing={"content": "Let me check"}).parse(output)
    # Its name and arguments were sent as they arrived: kept, with the error naming the call.
    assert strict.content == "Let me check." and _calls(strict) == list(_PARIS)
    assert [(error.kind, error.call_index) for error in strict.errors] == [("unterminated_call", 0)]


@pytest.mark.parametrize(
    ("continuing", "output"),
    [
        ({"reasoning_content": "I should"}, ' call it.\n<tool_call>\n{"name": "get_weather", "argu'),
        (None, '<think>\nI should call it.\n<tool_call>\n{"name": "get_weather", "argu'),
    ],
    ids=["continued reasoning", "reasoning the output opens"],
)
def test_a_call_cut_short_in_reasoning_never_closed_is_kept(continuing: dict[str, Any] | None, output: str) -> None:
    """The output ends inside a call, in a reasoning block never closed: the call's text is reported,
    not lost (it was, before: the fuzzer found it once reasoning continued)."""
    parser = Parser(golden("Qwen-Qwen3-0.6B"), TOOLS, thinking=True, continuing=continuing)
    batch = parser.parse(output)
    assert batch.reasoning_content == "I should call it."
    assert [(error.kind, error.text) for error in batch.errors] == [
        ("unterminated_call", '<tool_call>\n{"name": "get_weather", "argu')
    ]
    stream = parser.stream()
    for ch in output:
        stream.feed(ch)
    stream.finish()
    assert stream.message == batch


def test_to_dict_is_the_whole_message() -> None:
    message = Parser(golden("Kimi-K2-Thinking"), continuing=PREFILL_CONTENT).parse("world!")
    assert message.to_dict() == {
        "role": "assistant",
        "content": "Hello, world!",
        "reasoning_content": "I'm thinking",
        "errors": [],
    }


BAD_MESSAGES = {
    "a user message": ({"role": "user", "content": "Hi"}, "has role 'user'"),
    "a message with calls": (
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function"}]},
        "holds tool_calls",
    ),
    "an image part": ({"content": [{"type": "image_url", "image_url": {"url": "x"}}]}, "part 0"),
    "a part that is no object": ({"content": ["Hello"]}, "not a text part"),
    "content of another type": ({"content": 3}, "content of type int"),
    "reasoning of another type": ({"reasoning_content": ["x"]}, "reasoning_content of type list"),
    "two reasonings that differ": (
        {"reasoning_content": "a", "reasoning": "b"},
        "both reasoning_content and reasoning",
    ),
    "a lone surrogate": ({"content": "Hello \ud800"}, "lone surrogate"),
    "no object": (["Hello"], "must be an object"),
}


@pytest.mark.parametrize(("message", "mentions"), list(BAD_MESSAGES.values()), ids=list(BAD_MESSAGES))
def test_bad_messages_are_refused(message: Any, mentions: str) -> None:
    with pytest.raises(PrefillError, match=mentions):
        Parser(golden("Qwen-Qwen3-0.6B"), continuing=message)


def test_reasoning_under_its_other_name() -> None:
    message = Parser(golden("Qwen3.5-4B"), continuing={"reasoning": "I'm"}).parse(" thinking</think>Hi.")
    assert (message.content, message.reasoning_content) == ("Hi.", "I'm thinking")


# --------------------------------------------------------------------------- the command line


def test_command_line_continues(corpus_dir, tmp_path) -> None:
    prefill = tmp_path / "prefill.json"
    prefill.write_text(json.dumps(PREFILL_REASONING), encoding="utf-8")
    template = str(corpus_dir / "Qwen3.5-4B.jinja")
    output = " thinking\n</think>\n\nHello, world!\nWhat's up?"
    code, out, err = run(["parse", template, "--thinking", "--continue", str(prefill)], input=output)
    assert code == 0, err
    message = json.loads(out)
    assert (message["content"], message["reasoning_content"]) == (ANSWER, "I'm thinking")

    code, out, err = run(["parse", template, "--thinking", "--stream", "--continue", str(prefill)], input=output)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-1]["message"] == message
    assert "".join(line.get("reasoning_content", "") for line in lines[:-1]) == " thinking"


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        (json.dumps({"role": "user", "content": "Hi"}), "has role 'user'"),
        (json.dumps({"content": "x", "tool_calls": [{"id": "a"}]}), "holds tool_calls"),
        ("{", "is not valid JSON"),
        (None, "cannot read the message to continue"),
    ],
    ids=["user message", "tool calls", "not JSON", "missing file"],
)
def test_command_line_refuses_bad_messages(corpus_dir, tmp_path, text: str | None, mentions: str) -> None:
    path = tmp_path / "prefill.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    code, out, err = run(["parse", str(corpus_dir / "Qwen3.5-4B.jinja"), "--continue", str(path)], input="Hi")
    assert code == 2
    assert not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: ") and mentions in lines[0], err
