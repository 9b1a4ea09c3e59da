"""The turn's end is a marker, not content: for every corpus template, an answer the model writes up to
its end-of-generation token (the stop), with or without the stop's text, parses to exactly the answer,
in one piece and streamed a character at a time. Whatever the template writes to close a turn before
the stop (Kimi-K3's ``<|close|>response<|sep|><|close|>message<|sep|>``) is dropped."""

from __future__ import annotations

import json

import pytest
from helpers.gbnf_check import Checker, accepts
from helpers.golden import assistant_output, compile_for, golden, golden_descriptions, golden_paths
from helpers.grammar import TOOLS, USER, case, described, model_output, turn_span

from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
from analyzer.backends.parser import Parser
from analyzer.lower import lower

ANSWER = "It is sunny."
NAMES = [path.stem for path in golden_paths()]

# Templates whose answer does not come back as content, with the reason.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN else []) for n in NAMES],
)
def test_an_answer_up_to_the_stop_is_the_answer(name, corpus_dir):
    description = golden(name)
    shape = lower(description)
    if shape.reasoning is not None and shape.reasoning.opened_by_prompt(None):
        pytest.skip("the prompt opens reasoning: an answer without its close marker is reasoning")
    output = assistant_output(
        description, compile_for(description, corpus_dir), [USER], {"role": "assistant", "content": ANSWER}, TOOLS
    )
    cut = min([at for stop in shape.stops if (at := output.find(stop)) >= 0] or [len(output)])
    stop = next((stop for stop in shape.stops if output.startswith(stop, cut)), "")
    parser = Parser(description, TOOLS)
    for text in (output[:cut], output[:cut] + stop):
        message = parser.parse(text)
        assert (message.content, message.tool_calls, message.errors) == (ANSWER, [], []), text
        session = parser.stream()
        for ch in text:
            session.feed(ch)
        session.finish()
        assert session.message.content == ANSWER, text


CALL = ("get_weather", {"location": "Paris, France", "days": 3}, "Ab3De6Gh9")

# Templates whose call turn, cut where the model's turn ends, does not come back as its calls alone.
CALL_TURN_KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            n, marks=[pytest.mark.xfail(strict=True, reason=CALL_TURN_KNOWN[n])] if n in CALL_TURN_KNOWN else []
        )
        for n in described()
    ],
)
def test_a_call_turn_up_to_its_end_is_the_calls(name, corpus_dir):
    """The call turn the template writes, up to the marker the model's turn ends with (the first stop
    after the calls: ``<|eom_id|>``, ``<|call|>``, ``<|calls|>`` where call turns end otherwise than
    content turns), parses to the call with no stray text, in one piece and streamed; a grammar for
    the calls takes it without that marker (the end-of-generation token, which a grammar never sees as
    text)."""
    c = case(name, corpus_dir)
    output = model_output(c, [CALL])
    _, end = turn_span(c.shape, output, 1)
    stop = next((stop for stop in c.shape.stops if output.startswith(stop, end)), "")
    text = output[:end] + stop
    call_end = c.description.turn.call_end
    if call_end:
        assert stop == call_end, f"the call turn does not end with {call_end!r}: {output!r}"
    parser = Parser(c.description, TOOLS)
    message = parser.parse(text)
    assert [(call.name, json.loads(call.arguments)) for call in message.tool_calls] == [CALL[:2]], text
    assert (message.content or "").strip() == "" and message.errors == [], text
    session = parser.stream()
    for ch in text:
        session.feed(ch)
    session.finish()
    assert (session.message.content or "").strip() == "", text
    grammar = to_grammar(c.shape, TOOLS, tool_choice="required")
    assert grammar is not None
    verdict = Checker(grammar.text).check(output[:end])
    assert verdict, f"{output[:end]!r}: {verdict.reason}"


@pytest.mark.parametrize("name", [n for n in described() if golden(n).turn.call_end])
def test_the_grammar_ends_where_a_call_turn_ends_and_the_server_stops_there(name, corpus_dir):
    """Where call turns have an end of their own, the grammar's calls end before it (writing its text
    would be writing an end-of-generation token as text, which a server given the grammar never
    allows), and every llama-server request stops on it, with a grammar or without."""
    c = case(name, corpus_dir)
    call_end = c.description.turn.call_end
    output = model_output(c, [CALL])
    _, end = turn_span(c.shape, output, 1)
    for choice in ("auto", "required"):
        grammar = to_grammar(c.shape, TOOLS, tool_choice=choice)
        assert grammar is not None
        start = 0 if choice == "required" else turn_span(c.shape, output, 1)[0]
        assert accepts(grammar.text, output[start:end]), output[start:end]
        assert not accepts(grammar.text, output[start:end] + call_end)
        assert call_end in grammar.to_llama_server()["stop"]
    assert call_end in llama_server_fields(None, preserved_tokens(c.shape), c.shape.stops)["stop"]


def test_the_corpus_templates_whose_turns_end_otherwise():
    """The call turns and last messages issue 12 found ending otherwise than content turns, read from
    their renders (gemma-4-interleaved's call turn ends with <turn|>, as its content turns do), and
    command-r-plus's call turn, left open until the next header starts."""
    ends = {d.template.name: (d.turn.call_end, d.turn.final_end) for d in golden_descriptions()}
    assert {name: found for name, found in ends.items() if found != ("", "")} == {
        "meetkai-functionary-medium-v3.1": ("<|eom_id|>", ""),
        "upstage-Solar-Open-100B": ("<|calls|>", ""),
        "google-gemma-4-31B-it": ("<|tool_response>", ""),
        "openai-gpt-oss-120b": ("<|call|>", "<|return|>"),
        "CohereForAI-c4ai-command-r-plus-tool_use": ("<|START_OF_TURN_TOKEN|>", ""),
    }


@pytest.mark.parametrize("name", [n for n in NAMES if golden(n).turn.call_end or golden(n).turn.final_end])
def test_every_end_a_turn_may_have_ends_an_answer(name, corpus_dir):
    """A turn the model ends with a call turn's end or the last message's end (a model may end any turn
    with any of its end-of-generation tokens) is the answer: the end's text is no content."""
    description = golden(name)
    output = assistant_output(
        description, compile_for(description, corpus_dir), [USER], {"role": "assistant", "content": ANSWER}, TOOLS
    )
    answer = output[: output.index(ANSWER) + len(ANSWER)]
    parser = Parser(description, TOOLS)
    for end in (description.turn.call_end, description.turn.final_end):
        if end:
            message = parser.parse(answer + end)
            assert (message.content, message.tool_calls, message.errors) == (ANSWER, [], []), answer + end
