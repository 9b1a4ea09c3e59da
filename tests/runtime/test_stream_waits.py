"""The buffers on which a stream skips its state machine (a marker still arriving) are ones the machine
itself waits on, on every corpus format: skipping them delays no delta."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from helpers.golden import compile_for, golden_descriptions
from helpers.roundtrip import CASES, TOOLS, case_outputs

from analyzer.backends.parser import Parser
from analyzer.runtime import stream, stream_plan

DESCRIPTIONS = golden_descriptions()
STATE_NAMES = {
    stream_plan.START: "the start",
    stream_plan.REASONING: "reasoning",
    stream_plan.AFTER_REASONING: "after reasoning",
    stream_plan.CONTENT: "content",
    stream_plan.SECTION: "a call section's start",
    stream_plan.AFTER_CALL: "after a call",
}


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=[d.template.name for d in DESCRIPTIONS])
def test_every_wait_is_one_the_state_machine_waits_on(description) -> None:
    parser = Parser(description, TOOLS)
    waits = parser._plan.waits
    assert set(STATE_NAMES) >= {state for state, words in enumerate(waits) if words}
    if description.calls is not None and parser._plan.call_opening:
        assert waits[stream_plan.AFTER_CALL], "a format whose calls open with a marker waits between calls"
    checked = 0
    for state, words in enumerate(waits):
        for word in sorted(words):
            # Reasoning waits on some of these only before any reasoning was read (when the model
            # skipped it): after some, only on the ones a reasoning marker begins with.
            reasoning_read = (False, True) if word in parser._plan.reasoning_waits else (False,)
            for content_started, has_reasoning in itertools.product((False, True), reasoning_read):
                run = parser.stream()
                run._state, run._buf, run._content_started = state, word, content_started
                if has_reasoning:
                    run.message.add_text("", "earlier reasoning")
                deltas = run._run(final=False)
                assert deltas == [], f"{STATE_NAMES[state]}: {word!r} gives {deltas}"
                checked += 1
    assert checked >= 2 * sum(len(words) for words in waits)


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=[d.template.name for d in DESCRIPTIONS])
def test_whitespace_alone_gives_no_delta_where_a_stream_leaves_it_for_later(description) -> None:
    """The states in which a feed leaves a buffer of whitespace alone to a later feed: there the
    machine only drops the whitespace or holds it, whatever came before (content or none)."""
    parser = Parser(description, TOOLS)
    assert set(STATE_NAMES) >= stream._SPACE_WAITS
    for state in sorted(stream._SPACE_WAITS):
        if state == stream_plan.SECTION and parser.shape.calls is None:
            continue  # no call section to be in
        for space in (" ", "\n", "\n\n", " \n\t ", "\r\n", "\u3000", " " * (stream._SPACE_WAIT_LONGEST - 1)):
            for content_started, prefix_read in itertools.product((False, True), (False, True)):
                run = parser.stream()
                run._state, run._buf = state, space
                run._content_started, run._prefix_read = content_started, prefix_read
                if content_started:
                    run.message.add_text("earlier content", "")
                deltas = run._run(final=False)
                assert deltas == [], f"{STATE_NAMES[state]}: {space!r} gives {deltas}"


def test_a_call_with_closing_text_is_emitted_as_that_text_arrives(corpus_dir: Path) -> None:
    """A chunk inside a call lets the state machine run only where the call's closing text ends in
    it; where that text's last marker also stands inside the call (after each argument), only where
    the marker before it stands too. Streamed one character at a time, each call of the round-trip
    outputs is still emitted at the character that ends it, not later."""
    checked, recurring = 0, 0
    for description in golden_descriptions(with_calls=True):
        parser = Parser(description, TOOLS)
        before, ender = parser._plan.call_ender_after, parser._plan.call_ender
        if not ender:
            continue
        for case, text in case_outputs(description, compile_for(description, corpus_dir), CASES):
            run, emitted = parser.stream(), 0
            for at, ch in enumerate(text):
                run.feed(ch)
                # A call is whole once it is in the message and no longer the one being sent as it
                # arrives (a call's name is sent before it ends, where its arguments stream).
                whole = len(run.message.tool_calls) - (run._streaming is not None)
                if whole > emitted:
                    seen = text[: at + 1]
                    assert whole == emitted + 1, (description.template.name, case, seen[-60:])
                    assert seen.endswith(ender), (description.template.name, case, seen[-60:])
                    if before:
                        assert seen[: -len(ender)].rstrip().endswith(before), (description.template.name, case)
                        recurring += 1
                    emitted += 1
            run.finish()
            assert emitted == len(run.message.tool_calls) == len(parser.parse(text).tool_calls), case
            checked += emitted
    assert checked >= 200 and recurring >= 20
