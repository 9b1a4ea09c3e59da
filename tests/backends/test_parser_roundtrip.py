"""Round trip on the corpus: calls rendered by each template parse back to the same calls.

For every golden description with calls, conversations of our own (one call; parallel calls; content
before a call; typed, nested, unicode and multi-line arguments; a call with no arguments) are rendered
through the template itself, the model's part is cut out the way a server sees it (after the
generation prompt), and the parser must give back exactly the calls (names and arguments) and the
content. Streaming one character at a time must give the same message. The rate per template is
printed; the cases a template cannot express are listed with their reason, never skipped silently.

A case is "n/a" only where the description says the template does not write it (parallel calls,
content beside calls) or the template itself refuses it (``raise_exception``). An exception raised
anywhere else (our rendering, cutting or parsing code, or the engine failing) fails the case with its
type, message and the line that raised it.
"""

from __future__ import annotations

import json
import sys
import traceback

import pytest

# test_parser_codegen.py loads this file by path and reads TOOLS, CASES, descriptions, compile_for and
# model_output from it: they are re-exported here on purpose.
from helpers.grammar import PLAN, WEATHER, case, reasoning_then_a_call_output, reasoning_thinking, with_reasoning
from helpers.grammar import TOOLS as GRAMMAR_TOOLS
from helpers.grammar import params as grammar_params
from helpers.roundtrip import (
    CASES,
    REASONING,
    TOOLS,
    compile_for,
    descriptions,
    model_output,
    not_written,
    unreadable_render,
)

from analyzer.backends.parser import Message, Parser, apply
from analyzer.description import Reasoning
from analyzer.errors import RenderError


def check(description, corpus_dir, case):
    """ "ok", "n/a: why" (the description says the template does not write the case, or the template
    refuses it), or "FAIL ..." (a wrong message, or an exception raised by our code or the engine)."""
    content, calls = CASES[case]
    reason = not_written(description, content, calls)
    if reason:
        return f"n/a: {reason}"
    try:
        compiled = compile_for(description, corpus_dir)
        try:
            output = model_output(description, compiled, content, calls)
        except RenderError as exc:
            if exc.raised_by_template:
                return f"n/a: the template refuses it ({exc})"
            raise
        broken = unreadable_render(description, output, calls)
        if broken:
            return f"n/a: {broken}"
        return compare(description, output, content, calls)
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"FAIL raised {type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})"


def one_character_at_a_time(parser: Parser, output: str) -> Message:
    """The message ``parser`` streams from ``output`` fed one character at a time."""
    streamed, stream = Message(), parser.stream()
    for ch in output:
        for delta in stream.feed(ch):
            apply(streamed, delta)
    for delta in stream.finish():
        apply(streamed, delta)
    return streamed


def compare(description, output, content, calls):
    parser = Parser(description, TOOLS)
    message = parser.parse(output)
    got = [(call.name, json.loads(call.arguments)) for call in message.tool_calls]
    if got != [(name, args) for name, args in calls]:
        return f"FAIL calls {got} from {output[:300]!r}"
    if (message.content or "").strip() != (content or ""):
        return f"FAIL content {message.content!r}"
    forced = isinstance(description.reasoning, Reasoning) and description.reasoning.forced_open
    if forced and message.reasoning_content.strip() not in ("", REASONING):
        return f"FAIL reasoning {message.reasoning_content!r}"
    streamed = one_character_at_a_time(parser, output)
    if streamed.to_dict() != message.to_dict():
        return f"FAIL streaming differs: {streamed.to_dict()} vs {message.to_dict()}"
    # What the template writes needs no tolerance, and a strict parser reads it the same.
    if message.warnings:
        return f"FAIL a tolerance applied to what the template writes: {[w.to_dict() for w in message.warnings]}"
    strict = Parser(description, TOOLS, strict=True).parse(output)
    if strict.to_dict() != message.to_dict():
        return f"FAIL a strict parse differs: {strict.to_dict()} vs {message.to_dict()}"
    return "ok"


# Cases that fail for a known reason, kept visible here (strict xfail: fixing one must update this).
KNOWN_FAILURES = {
    (
        "openai-gpt-oss-120b",
        "content before a call",
    ): "the template writes content beside calls into the analysis channel, so it comes back as reasoning",
}


@pytest.mark.parametrize("description", descriptions(), ids=lambda d: d.template.name)
def test_round_trip(description, corpus_dir):
    results = {case: check(description, corpus_dir, case) for case in CASES}
    name = description.template.name
    failures = {case: r for case, r in results.items() if r.startswith("FAIL") and (name, case) not in KNOWN_FAILURES}
    # Strict: a known failure that now passes, or is no longer tried, must leave the table.
    stale = {case: r for case, r in results.items() if not r.startswith("FAIL") and (name, case) in KNOWN_FAILURES}
    print(name, sum(r == "ok" for r in results.values()), "/", sum(not r.startswith("n/a") for r in results.values()))
    assert not failures, failures
    assert not stale, f"known failures no longer fail, update KNOWN_FAILURES: {stale}"


def test_known_failures_name_described_templates_and_cases():
    names = {d.template.name for d in descriptions()}
    assert {(name, case) for name, case in KNOWN_FAILURES if name in names and case in CASES} == set(KNOWN_FAILURES)


class _RaisingTemplate:
    """A compiled template whose every render raises ``exc``."""

    engine = "minijinja"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def render(self, *args, **kwargs):
        raise self.exc


@pytest.mark.parametrize(
    "exc, verdict",
    [
        (RenderError("t: template raised: one call only", raised_by_template=True), "n/a: the template refuses it"),
        (RenderError("t: invalid operation: undefined"), "FAIL raised RenderError: t: invalid operation"),
        (KeyError("arguments"), "FAIL raised KeyError: 'arguments'"),
    ],
    ids=["refused by the template", "engine error", "our own error"],
)
def test_only_the_templates_own_refusal_is_not_applicable(monkeypatch, exc, verdict):
    monkeypatch.setattr(sys.modules[__name__], "compile_for", lambda description, corpus_dir: _RaisingTemplate(exc))
    assert check(descriptions()[0], None, "one call").startswith(verdict)


def test_arguments_written_as_a_python_dict_come_back_as_json():
    from analyzer.runtime.match import CallMatcher
    from analyzer.runtime.shape import JsonArgs, Marker, Name

    matcher = CallMatcher((Marker("<call>"), Name(), Marker(">"), JsonArgs("python"), Marker("</call>")), {}, ())
    match = matcher.match("<call>f>{'a': True, 'b': None}</call>", 0, True)
    assert match.arguments == {"a": True, "b": None} and match.arguments_text == ""
    message = python_dict_parser().parse("<call>f>{'a': 'x'}</call>")
    assert json.loads(message.tool_calls[0].arguments) == {"a": "x"}


def python_dict_parser():
    from analyzer.lower import calls_shape, output_shape
    from analyzer.runtime.shape import JsonArgs, Marker, Name

    calls = calls_shape((), (), None, (Marker("<call>"), Name(), Marker(">"), JsonArgs("python"), Marker("</call>")))
    return Parser(output_shape("demo", calls=calls))


@pytest.mark.parametrize(
    "name, output",
    [
        ("GLM-4.6", "<tool_call>météo\n<arg_key>ключ</arg_key>\n<arg_value>v</arg_value>\n</tool_call>"),
        ("GLM-4.7-Flash", "<tool_call>météo<arg_key>ключ</arg_key><arg_value>v</arg_value></tool_call>"),
        ("Qwen3-Coder", "<tool_call>\n<function=météo>\n<parameter=ключ>\nv\n</parameter>\n</function>\n</tool_call>"),
        ("LFM2.5-8B-A1B", "<|tool_call_start|>[météo(ключ='v')]<|tool_call_end|>"),
    ],
)
def test_undeclared_names_are_read_as_the_template_writes_them(name, output):
    """Without declared tools, a name is read up to the marker that follows it in the shape, in any script."""
    from helpers.golden import golden

    message = Parser(golden(name)).parse(output)
    assert not message.errors, message.errors
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("météo", {"ключ": "v"})]


NESTED_TOOL = {
    "type": "function",
    "function": {
        "name": "plan",
        "description": "Nested values",
        "parameters": {
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "one": {"type": "array", "items": {"type": "integer"}},
                "meta": {"type": "object", "properties": {"item": {"type": "object"}, "ok": {"type": "boolean"}}},
            },
        },
    },
}


@pytest.mark.parametrize(
    "arguments",
    [
        {"steps": [{"name": "a <b>", "tags": ["x", "y"]}, {"name": "c", "tags": []}], "one": [7]},
        {"meta": {"item": {"item": {"deep": "1\n2"}}, "ok": False}, "one": [1, 2, 3]},
    ],
    ids=["arrays of objects", "a tag named like the array item, nested in itself"],
)
def test_nested_tags_are_read_as_nested_values(corpus_dir, arguments):
    """MiniMax-M3 writes an object's members, and an array's items, as tags in the argument form,
    nested: the parser reads them back as the values the template was given, typed by the schema."""
    from helpers.golden import assistant_output, golden

    description = golden("MiniMax-M3")
    compiled = compile_for(description, corpus_dir)
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "plan", "arguments": arguments}}],
    }
    output = assistant_output(description, compiled, [{"role": "user", "content": "go"}], turn, [NESTED_TOOL])
    output = output[: output.rindex("</tool_call>") + len("</tool_call>")]
    parser = Parser(description, [NESTED_TOOL])
    message = parser.parse(output)
    assert not message.errors, message.errors
    assert [json.loads(call.arguments) for call in message.tool_calls] == [arguments], output
    streamed = one_character_at_a_time(parser, output)
    assert streamed.to_dict() == message.to_dict()


def test_after_content_a_call_that_opens_with_a_name_stands_behind_the_separator():
    """Read off the shape, not a template: calls open with a tool's name at the start of the output
    and are separated by a marker, so after content a call stands behind that marker; text with the
    marker and no declared name after it stays content."""
    from analyzer.lower import calls_shape, output_shape
    from analyzer.runtime.shape import JsonArgs, Marker, Name, Trigger

    call = (Name(), Marker("", lead="\n"), JsonArgs("object"))
    calls = calls_shape((), (), (Marker("|next|"),), call, trigger=Trigger(tool_name=True, at_start=True))
    parser = Parser(output_shape("demo", calls=calls, stops=("<end>",)), TOOLS)
    output = 'a |next| b, then|next|get_weather\n{"location": "Oslo"}|next|search\n{"query": "q"}<end>'
    message = parser.parse(output)
    assert message.content == "a |next| b, then" and not message.errors
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("get_weather", {"location": "Oslo"}),
        ("search", {"query": "q"}),
    ]
    streamed = one_character_at_a_time(parser, output)
    assert streamed.to_dict() == message.to_dict()


@pytest.mark.parametrize("name", grammar_params("reasoning", with_reasoning()))
def test_reasoning_then_a_call_reads_as_both(name, corpus_dir):
    """The render the grammar's reasoning check takes (reasoning, then a call) parses to that reasoning
    and that call, with no content, batch and streamed alike."""
    c = case(name, corpus_dir)
    output = reasoning_then_a_call_output(c)
    parser = Parser(c.shape, GRAMMAR_TOOLS, thinking=reasoning_thinking(c))
    message = parser.parse(output)
    assert message.reasoning_content.strip() == PLAN, message.to_dict()
    assert [(call.name, json.loads(call.arguments)) for call in message.tool_calls] == [WEATHER[:2]]
    assert not (message.content or "").strip() and not message.errors, message.to_dict()
    streamed = one_character_at_a_time(parser, output)
    assert streamed.to_dict() == message.to_dict()
