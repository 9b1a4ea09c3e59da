"""The prompted tool format, on every corpus template whose analysis finds no tool format of its own.

The prompt goes through the template; the grammar is checked with a real grammar engine
(llguidance), the response schema with jsonschema, and the parser reads back what both accept."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers.cli import run
from helpers.gbnf_check import Checker
from helpers.stand_in import url
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import corpus
from analyzer.analysis import analyze
from analyzer.backends.parser import Message, apply
from analyzer.backends.prompted import PromptedParser, prompted, prompted_format
from analyzer.backends.prompted.conversation import FIRST_USER_TURN, SYSTEM_TURN
from analyzer.backends.prompted.format import BLOCK_SEPARATOR, FENCE_OPEN, call_text, fenced
from analyzer.lower import Marker, ReasoningShape
from analyzer.sources import load_template

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "kelvin"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}
LIGHT = {
    "type": "function",
    "function": {
        "name": "switch_light",
        "description": "Turn the light on or off",
        "parameters": {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]},
    },
}
TOOLS = [WEATHER, LIGHT]
ASKED = [{"role": "user", "content": "What is the weather in Paris?"}]
ANSWERED = [
    *ASKED,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "switch_light", "arguments": {"on": True}}},
        ],
    },
    # results come back out of order: the prompt puts them in call order
    {"role": "tool", "tool_call_id": "c2", "content": "done"},
    {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
    {"role": "user", "content": "Thanks. And tomorrow?"},
]

CALLS = [
    ("get_weather", {"city": "Paris"}),
    ("get_weather", {"city": 'Zürich "old"\n', "unit": "kelvin", "days": 3}),
    ("switch_light", {"on": False}),
]
WRONG_CALLS = [
    ("get_weather", {"unit": "kelvin"}),  # required argument missing
    ("get_weather", {"city": "Paris", "unit": "fahrenheit"}),  # not in the enum
    ("switch_light", {"on": "yes"}),  # wrong type
    ("open_door", {}),
]  # not a declared tool


@cache
def _none_templates() -> tuple[str, ...]:
    """Corpus templates the analysis finds no tool-call format in (derived, not listed)."""
    found = []
    for path in corpus.corpus_templates(corpus.fetch()):
        if analyze(load_template(str(path))).format == "none":
            found.append(path.stem)
    return tuple(found)


def test_the_corpus_has_templates_without_tool_calls() -> None:
    assert len(_none_templates()) >= 5, _none_templates()


@pytest.fixture(scope="module", params=_none_templates())
def template_case(request, corpus_dir: Path) -> tuple[Any, Any]:
    template = load_template(str(corpus_dir / f"{request.param}.jinja"))
    return template, analyze(template)


# --------------------------------------------------------------------------- the prompt


def test_the_prompt_goes_through_the_template(template_case) -> None:
    template, description = template_case
    for style in ("json", "fenced"):
        setup = prompted(template, description, ANSWERED, TOOLS, style=style)
        prompt = setup.prompt.text
        assert 'get_weather(city: string, unit?: "celsius" | "kelvin", days?: integer)' in prompt
        assert prompt.index("You can use these tools") < prompt.index("What is the weather in Paris?")
        # the history's calls in the reply format, results as a user turn in call order with the tool's name
        assert call_text("get_weather", {"city": "Paris"}) in prompt
        results = prompt.index('{"tool": "get_weather", "result": {"temp": 21}}')
        assert results < prompt.index('{"tool": "switch_light", "result": "done"}')
        assert prompt.index("Tool results:") < results < prompt.index("And tomorrow?")
        refused = description.capabilities.system_role.status in ("refused", "dropped")
        assert setup.prompt.placement == (FIRST_USER_TURN if refused else SYSTEM_TURN), setup.prompt.reason
        assert setup.to_dict()["cost"]["characters"] == len(setup.system_text)


def test_a_template_that_refuses_a_system_role_gets_the_tools_in_the_first_user_turn(corpus_dir: Path) -> None:
    template = load_template(str(corpus_dir / "google-gemma-2-2b-it.jinja"))
    description = analyze(template)
    assert description.capabilities.system_role.status == "refused"
    setup = prompted(template, description, [{"role": "system", "content": "Be brief."}, *ANSWERED], TOOLS)
    assert setup.prompt.placement == FIRST_USER_TURN and "System role not supported" in setup.prompt.reason
    # the caller's system text comes first, then the tools, then the user's question, in one user turn
    prompt = setup.prompt.text
    assert prompt.index("Be brief.") < prompt.index("You can use these tools") < prompt.index("weather in Paris")
    # results and the next user message share one user turn: the template insists on alternating roles
    assert "Tool results:" in prompt and prompt.count("<start_of_turn>user") == 2


# --------------------------------------------------------------------------- grammar, schema, parser agree


def _reply(style: str, calls: list[tuple[str, dict[str, Any]]], answer: str | None = None) -> str:
    if style == "json":
        return json.dumps({"answer": answer}) if answer is not None else call_text(*calls[0])
    blocks = BLOCK_SEPARATOR.join(fenced(call_text(name, arguments)) for name, arguments in calls)
    return (answer + "\n" if answer else "") + blocks


def _read(setup, text: str) -> Message:
    return PromptedParser(setup.format, TOOLS).parse(text)


def _calls(message: Message) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, json.loads(call.arguments)) for call in message.tool_calls]


@pytest.mark.parametrize("style", ["json", "fenced"])
def test_required_and_named_replies_are_accepted_by_grammar_and_schema_and_read_back(template_case, style: str) -> None:
    template, description = template_case
    for tool_choice in ("required", "switch_light"):
        setup = prompted(template, description, ASKED, TOOLS, style=style, tool_choice=tool_choice)
        checker = Checker(setup.grammar.text)
        assert setup.grammar.lazy is False
        allowed = [c for c in CALLS if tool_choice == "required" or c[0] == tool_choice]
        for call in allowed:
            text = _reply(style, [call])
            assert checker.check(text), (tool_choice, text, checker.check(text).reason)
            assert _calls(_read(setup, text)) == [call] and not _read(setup, text).errors
            if style == "json":
                jsonschema.validate(json.loads(text), setup.response_format["json_schema"]["schema"])
        refused = WRONG_CALLS + [c for c in CALLS if c not in allowed]
        for call in refused:
            text = _reply(style, [call])
            assert not checker.check(text), (tool_choice, text)
            if style == "json":
                with pytest.raises(jsonschema.ValidationError):
                    jsonschema.validate(json.loads(text), setup.response_format["json_schema"]["schema"])
            if call in WRONG_CALLS:
                assert _read(setup, text).errors, text  # the parser reports what the grammar would have stopped
        answer = _reply(style, [], "It is sunny.")
        assert not checker.check(answer), (tool_choice, answer)


def test_auto_allows_an_answer_or_a_call_and_none_only_an_answer(template_case) -> None:
    template, description = template_case
    auto = prompted(template, description, ASKED, TOOLS, style="json")
    schema = auto.response_format["json_schema"]["schema"]
    checker = Checker(auto.grammar.text)
    for text in ('{"answer": "It is \\"sunny\\".\\nBye"}', _reply("json", [CALLS[1]])):
        assert checker.check(text), checker.check(text).reason
        jsonschema.validate(json.loads(text), schema)
    assert _read(auto, '{"answer": "It is \\"sunny\\".\\nBye"}').content == 'It is "sunny".\nBye'
    for text in ("It is sunny.", '{"answer": "a", "tool": "switch_light"}', '{"reply": "hi"}'):
        assert not checker.check(text), text
    none = prompted(template, description, ASKED, TOOLS, style="json", tool_choice="none")
    assert Checker(none.grammar.text).check('{"answer": "hi"}')
    assert not Checker(none.grammar.text).check(_reply("json", [CALLS[0]]))
    assert "to call a tool" not in none.system_text


def test_fenced_auto_is_a_lazy_grammar_from_the_fence(template_case) -> None:
    template, description = template_case
    setup = prompted(template, description, ASKED, TOOLS, style="fenced")
    assert setup.grammar.lazy and [t.value for t in setup.grammar.triggers] == [FENCE_OPEN]
    assert setup.response_format is None  # prose around JSON: no schema describes it
    checker = Checker(setup.grammar.text)
    two = _reply("fenced", CALLS[:2])
    assert checker.check(two), checker.check(two).reason  # from the trigger on: blocks only
    message = _read(setup, "Let me look.\n" + two)
    assert message.content == "Let me look." and _calls(message) == CALLS[:2] and not message.errors
    single = prompted(template, description, ASKED, TOOLS, style="fenced", parallel=False)
    assert not Checker(single.grammar.text).check(two)
    assert prompted(template, description, ASKED, TOOLS, style="fenced", tool_choice="none").grammar is None


# --------------------------------------------------------------------------- the parser alone


def _json_format(**options: Any):
    return prompted_format(TOOLS, style="json", **options)


def _stream(parser: PromptedParser, text: str, size: int) -> Message:
    session, message = parser.stream(), Message()
    for at in range(0, len(text), size):
        for delta in session.feed(text[at : at + size]):
            apply(message, delta)
    for delta in session.finish():
        apply(message, delta)
    return message


REPLIES = {
    "call": '{"tool": "switch_light", "arguments": {"on": true}}',
    "fenced object and prose": 'Sure.\n```json\n{"tool": "get_weather", "arguments": {"city": "Oslo"}}\n```\nDone.',
    "answer": '  {"answer": "Caf\\u00e9 \\ud83d\\ude00 \\"x\\""}  ',
    "answer then prose": '{"answer": "Yes"} and more',
    "arguments as a string": '{"tool": "switch_light", "arguments": "{\\"on\\": false}"}',
    "prose only": "I cannot help with that.",
    "missing closing brace": '{"tool": "switch_light", "arguments": {"on": true}',
    "invalid JSON": '{"tool": "switch_light", "arguments": {on: true}}',
    "unknown tool": '{"tool": "open_door", "arguments": {}}',
    "neither key": '{"reply": "hello"}',
    "both keys": '{"answer": "hi", "tool": "switch_light", "arguments": {"on": true}}',
    "cut answer": '{"answer": "It is sun',
    "braces in prose": 'Use {x} here: {"tool": "switch_light", "arguments": {"on": true}}',
}


def test_json_replies_are_read_and_malformed_ones_reported() -> None:
    parser = PromptedParser(_json_format(), TOOLS)
    read = {name: parser.parse(text) for name, text in REPLIES.items()}
    assert _calls(read["call"]) == [("switch_light", {"on": True})] and not read["call"].content
    assert _calls(read["fenced object and prose"]) == [("get_weather", {"city": "Oslo"})]
    assert read["fenced object and prose"].content == "Sure.\nDone."
    assert read["answer"].content == 'Café 😀 "x"' and not read["answer"].tool_calls
    assert read["answer then prose"].content == "Yes and more"  # the prose as written, the object's text read
    assert _calls(read["arguments as a string"]) == [("switch_light", {"on": False})]
    assert read["prose only"].content == "I cannot help with that." and not read["prose only"].errors
    assert _calls(read["braces in prose"]) == [("switch_light", {"on": True})]
    assert read["braces in prose"].content == "Use {x} here:"
    expected_errors = {
        "missing closing brace": "unterminated_call",
        "invalid JSON": "malformed_call",
        "unknown tool": "unknown_tool",
        "neither key": "not_a_reply",
        "both keys": "malformed_call",
        "cut answer": "unterminated_call",
    }
    for name, kind in expected_errors.items():
        assert [e.kind for e in read[name].errors] == [kind], (name, read[name].errors)
    # nothing is lost: what is not content or a call is in the error
    for name in ("missing closing brace", "invalid JSON", "neither key"):
        assert read[name].errors[0].text.strip() == REPLIES[name].strip()
    assert read["cut answer"].content == "It is sun"
    assert read["both keys"].content == "hi" and not read["both keys"].tool_calls


@pytest.mark.parametrize("style", ["json", "fenced"])
def test_streaming_in_any_chunks_gives_the_batch_message(style: str) -> None:
    parser = PromptedParser(prompted_format(TOOLS, style=style), TOOLS)
    texts = list(REPLIES.values()) + [
        "Checking.\n" + fenced(call_text("switch_light", {"on": True})) + "\n" + fenced(call_text("open_door", {})),
        "```tool_call\n{not json}\n```\nsorry",
        '```tool_call\n{"tool": "get_weather", "arguments": {"city": "a```b"}}\n```',
        "Text with ``` fences ```python\nx\n``` and ``tool_call",
        '```tool_call\n{"tool": "switch_light", "arg',
    ]
    for text in texts:
        batch = parser.parse(text)
        for size in (1, 2, 5):
            streamed = _stream(parser, text, size)
            assert streamed.content == batch.content, (text, size)
            assert [(c.id, c.name, c.arguments) for c in streamed.tool_calls] == [
                (c.id, c.name, c.arguments) for c in batch.tool_calls
            ]
            assert streamed.errors == batch.errors


def test_fenced_blocks_are_read_and_broken_ones_reported() -> None:
    parser = PromptedParser(prompted_format(TOOLS, style="fenced"), TOOLS)
    message = parser.parse(
        "Checking.\n"
        + fenced(call_text("switch_light", {"on": True}))
        + "\nThen "
        + fenced(call_text("get_weather", {"city": "a```b"}))
    )
    assert _calls(message) == [("switch_light", {"on": True}), ("get_weather", {"city": "a```b"})]
    assert message.content == "Checking.\n\nThen" and not message.errors  # the text outside the blocks
    broken = parser.parse("Hm.\n```tool_call\n{not json}\n```\nsorry")
    assert [e.kind for e in broken.errors] == ["malformed_call"] and broken.content == "Hm.\n\nsorry"
    assert broken.errors[0].text == "```tool_call\n{not json}\n```"
    unclosed = f'{FENCE_OPEN}\n{{"tool": "switch_light"'
    cut = parser.parse(unclosed)
    assert [e.kind for e in cut.errors] == ["unterminated_call"] and cut.errors[0].text == unclosed


def test_a_reasoning_block_the_template_knows_is_read_first() -> None:
    reasoning = ReasoningShape((Marker("<think>"),), (Marker("</think>", lead="\n"),), False)
    fmt = prompted_format(TOOLS, style="json", reasoning=reasoning)
    parser = PromptedParser(fmt, TOOLS)
    text = '<think>\nthe user wants light\n</think>\n{"tool": "switch_light", "arguments": {"on": true}}'
    message = parser.parse(text)
    assert message.reasoning_content == "the user wants light" and _calls(message) == [("switch_light", {"on": True})]
    assert _stream(parser, text, 1).reasoning_content == "the user wants light"


# --------------------------------------------------------------------------- the command and the export


def _files(tmp_path: Path, messages: list[dict[str, Any]] = ASKED) -> tuple[str, str]:
    (tmp_path / "messages.json").write_text(json.dumps(messages))
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    return str(tmp_path / "messages.json"), str(tmp_path / "tools.json")


def test_prompted_command_prints_one_json_object(corpus_dir: Path, tmp_path: Path) -> None:
    messages, tools = _files(tmp_path)
    template = str(corpus_dir / "google-gemma-2-2b-it.jinja")
    code, out, err = run(["prompted", template, "--tools", tools, "--tool-choice", "required", "--messages", messages])
    assert code == 0, err
    plan = json.loads(out)
    assert plan["placement"]["where"] == FIRST_USER_TURN and plan["cost"]["characters"] == len(plan["system_prompt"])
    assert plan["grammar"]["grammar_lazy"] is False and plan["response_format"]["json_schema"]["schema"]["oneOf"]
    assert "answer" not in plan["reply_format"] and plan["prompt"].endswith("<start_of_turn>model\n")
    code, out, err = run(["prompted", template, "--tools", tools, "--tool-choice", "open_door"])
    assert code == 2 and "open_door" in err and err.count("\n") == 1 and out == ""
    code, _, err = run(["prompted", template, "--tools", tools, "--messages", tools])
    assert code == 2 and "message 1" in err and "Traceback" not in err


def test_export_sends_the_prompted_format_and_reads_the_reply(corpus_dir: Path, tmp_path: Path, stand_in) -> None:
    messages, tools = _files(tmp_path)
    template = str(corpus_dir / "google-gemma-2-2b-it.jinja")
    stand_in.script = (200, '{"tool": "get_weather", "arguments": {"city": "Paris"}}', "eos")
    code, out, err = run(["export", template, "--messages", messages, "--tools", tools, "--send", url(stand_in)])
    assert code == 0, err
    assert "prompted json format" in err  # the template has no tool format: said, not silent
    sent = stand_in.requests[0][1]
    assert "You can use these tools" in sent["prompt"] and '"\\"tool\\"" ": " "\\"get_weather\\""' in sent["grammar"]
    choice = json.loads(out)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    stand_in.script = (200, '{"answer": "Sunny."}', "eos")
    code, out, _ = run(
        [
            "export",
            template,
            "--messages",
            messages,
            "--tools",
            tools,
            "--tool-format",
            "json",
            "--send",
            url(stand_in),
            "--stream",
        ]
    )
    chunks = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "".join(c["delta"].get("content", "") for ch in chunks for c in ch["choices"]) == "Sunny."
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["usage"]["total_tokens"] == 26


# --------------------------------------------------------------------------- properties

_FRAGMENTS = [
    *REPLIES.values(),
    "```",
    "```tool_call\n",
    "```json\n",
    "{",
    "}",
    '"',
    "\\",
    "\\u00e9",
    "\\ud83d",
    '{"answer": "',
    '{"tool": "switch_light", "arguments": ',
    "true",
    "\n",
    " ",
    "prose",
    "</think>",
]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_FRAGMENTS), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    style=st.sampled_from(["json", "fenced"]),
)
def test_any_reply_in_any_chunks_parses_without_raising_as_the_batch(
    pieces: list[str], cuts: list[int], style: str
) -> None:
    text = "".join(pieces)
    parser = PromptedParser(prompted_format(TOOLS, style=style), TOOLS)
    batch = parser.parse(text)
    session, streamed, previous = parser.stream(), Message(), 0
    for cut in sorted({c % (len(text) + 1) for c in cuts}) + [len(text)]:
        for delta in session.feed(text[previous:cut]):
            apply(streamed, delta)
        previous = cut
    for delta in session.finish():
        apply(streamed, delta)
    assert (streamed.content, streamed.errors) == (batch.content, batch.errors)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in batch.tool_calls]
    # nothing is lost: text that holds no call is kept whole as content
    if style == "fenced" and not batch.tool_calls and not batch.errors:
        assert "".join(batch.content.split()) == "".join(text.split())
    if style == "json" and "{" not in text:
        assert batch.content == text.strip() and not batch.errors


def test_the_tool_text_is_counted_in_tokens_when_a_tokenizer_sits_beside_the_template(
    corpus_dir: Path, tmp_path: Path
) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "tools": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "chat_template.jinja").write_text(
        (corpus_dir / "google-gemma-2-2b-it.jinja").read_text(encoding="utf-8"), encoding="utf-8"
    )
    template = load_template(str(tmp_path))
    setup = prompted(template, analyze(template), None, TOOLS)
    words = len(pre_tokenizers.Whitespace().pre_tokenize_str(setup.system_text))
    assert setup.to_dict()["cost"]["tokens"] == words  # one token per pre-tokenized piece in a word-level model
    plain = load_template(str(corpus_dir / "google-gemma-2-2b-it.jinja"))
    assert prompted(plain, analyze(plain), None, TOOLS).to_dict()["cost"]["tokens"] == "unknown (no tokenizer)"
