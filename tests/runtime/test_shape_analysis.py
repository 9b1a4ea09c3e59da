"""The shape analysis (analyzer/runtime/shape_analysis.py): what follows what in a shape, by one rule.

Hand-made parts for each rule (whitespace alone is no text of its own; arguments one by one may be
absent; past the call, what may follow a call), and every corpus shape: the fields the shape's builder
stores agree with the analysis, and the analysis is built once per shape."""

from __future__ import annotations

import dataclasses

from helpers.golden import golden_descriptions

from analyzer.lower import lower
from analyzer.runtime.shape import (
    ArgKey,
    ArgumentShape,
    ArgValue,
    CallsShape,
    KeyValueArgs,
    Marker,
    Name,
    OutputShape,
)
from analyzer.runtime.shape_analysis import (
    CONTENT_AFTER,
    END_OF_CALLS,
    analysis,
    closing_text,
    follow,
    leading_markers,
    next_marker,
    tag_frame,
)

# GLM-4.6's call: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...\n</tool_call>
ARGUMENT = ArgumentShape(
    "string",
    (
        Marker("<arg_key>"),
        ArgKey(),
        Marker("</arg_key>", trail="\n"),
        Marker("<arg_value>", lead="\n"),
        ArgValue(),
        Marker("</arg_value>"),
    ),
    "raw",
)
ARGUMENTS = KeyValueArgs((ARGUMENT,), (Marker("", lead="\n"),), "none", False, ("", ""), ("", ""))
CALL = (Marker("<tool_call>"), Name(), Marker("", lead="\n"), ARGUMENTS, Marker("</tool_call>", lead="\n"))
AFTER = ("<tool_call>", "<|user|>")


def test_whitespace_alone_is_passed_over_and_absent_arguments_let_what_follows_them_through():
    assert follow(CALL, 1, AFTER) == ("<arg_key>", "</tool_call>")  # after the name
    assert follow(CALL, 3, AFTER) == ("</tool_call>",)  # after the arguments
    assert follow(CALL, 4, AFTER) == AFTER  # past the call
    assert next_marker(CALL, 1, AFTER) == ("</tool_call>",)  # the literal bounding the name
    assert follow((Name(), ARGUMENTS), 0, AFTER) == ("<arg_key>", *AFTER)


def test_a_field_with_no_literal_start_ends_the_walk():
    parts = (Marker("<call>"), Name(), Name(), Marker("</call>"))
    assert follow(parts, 1, AFTER) == () and next_marker(parts, 1, AFTER) == ()


def test_closing_text_and_leading_markers():
    assert closing_text(CALL) == "</tool_call>" and closing_text((Marker("<c>"), Name())) == ""
    assert leading_markers(CALL) == (Marker("<tool_call>"),)


def test_tag_frames():
    tagged = (Marker("<"), ArgKey(), Marker(">"), ArgValue(), Marker("</"), ArgKey(), Marker(">"))
    frame = tag_frame(tagged)
    assert frame is not None and (frame.opening, frame.middle, frame.closing, frame.end) == ("<", ">", "</", ">")
    assert tag_frame(ARGUMENT.parts) is None  # the key is written once
    # MiniMax-M3 writes its argument separator ]<]minimax[> as the closing text's start too.
    minimax = (Marker("]<]minimax[>[<"), ArgKey(), Marker(">"), ArgValue(), Marker("]<]minimax[>[</"), ArgKey())
    frame = tag_frame((*minimax, Marker(">]<]minimax[>")))
    assert frame is not None and frame.between_arguments == "]<]minimax[>"


def test_the_shape_stores_nothing_the_analysis_works_out():
    stored = {field.name for field in dataclasses.fields(CallsShape)} | {
        field.name for field in dataclasses.fields(OutputShape)
    }
    assert not stored & {"opener", "ends_with", "followers", "server_stops"}


def test_every_corpus_shape_analysis_holds_together():
    for description in golden_descriptions(with_calls=True):
        shape = lower(description)
        facts = analysis(shape).calls
        assert facts is not None and shape.calls is not None
        assert analysis(shape) is analysis(shape)  # built once per shape
        name = description.template.name
        assert facts.opener == leading_markers(shape.calls.call), name
        assert set(shape.stops) <= set(facts.followers), name  # a call may end the turn
        # A server stops on no stop a call opens with (it would cut every call off).
        opening = [m.text for m in (*shape.calls.section_open[:1], *facts.opener[:1]) if m.text]
        assert all(not text.startswith(stop) for stop in analysis(shape).server_stops for text in opening), name
        assert set(analysis(shape).server_stops) <= set(shape.stops), name
        assert facts.call.follow[-1] == facts.call.after, name  # past the call: what may follow one
        assert set(facts.followers) | {END_OF_CALLS} <= set(facts.call.after), name
        assert (CONTENT_AFTER in facts.after_section) == shape.calls.content_after, name
        if facts.without_arguments is not None:
            assert not any(isinstance(part, KeyValueArgs) for part in facts.without_arguments.parts), name
