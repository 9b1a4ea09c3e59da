"""The turn's end is a marker, not content: for every corpus template, an answer the model writes up to
its end-of-generation token (the stop), with or without the stop's text, parses to exactly the answer,
in one piece and streamed a character at a time. Whatever the template writes to close a turn before
the stop (Kimi-K3's ``<|close|>response<|sep|><|close|>message<|sep|>``) is dropped."""

from __future__ import annotations

import pytest
from helpers.golden import assistant_output, compile_for, golden, golden_paths
from helpers.grammar import TOOLS, USER

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
