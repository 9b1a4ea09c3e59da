"""detect/sample.py: the sample conversation of the audit page, with markers labelled only where the
description places them, and the answer and call outputs compared."""

from __future__ import annotations

import html
import itertools
import re
from pathlib import Path

import pytest

from analyzer.analysis import analyze, inspect
from analyzer.backends.html_report import render_html
from analyzer.detect.sample import TOOL_NAME, detect_sample, differences, example_arguments
from analyzer.render.conversation import Renderer
from analyzer.sources import load_template
from analyzer.tools import declared_tools

# A call written <fn=NAME>ARGS</fn>: its ">" also closes every tag of the tool list and every header.
# (a line break inside a tag is whitespace the template does not write: long lines are broken there)
SHORT_MARKERS = """{%- if tools %}<tools>{% for t in tools %}<tool><name>{{ t.function.name }}</name></tool>{% endfor
%}</tools>
{% endif -%}
{%- for m in messages %}<|{{ m.role }}|>
{%- if m.role == 'assistant' and m.tool_calls %}{% for c in m.tool_calls %}<fn={{ c.function.name }}>{{
c.function.arguments | tojson }}</fn>{% endfor %}
{%- elif m.role == 'tool' %}<result>{{ m.content }}</result>
{%- else %}{{ m.content }}{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""


def _sample(template):
    description = analyze(template)
    return detect_sample(Renderer.for_template(template, description), description)


def _labelled(sample, text: str) -> list[int]:
    return [m.start for m in sample.marks if sample.conversation[m.start : m.end] == text]


def test_a_short_marker_is_labelled_only_where_the_pattern_puts_it(tmp_template) -> None:
    sample = _sample(load_template(str(tmp_template(SHORT_MARKERS))))
    text = sample.conversation
    assert text.count(">") > 10
    closers = _labelled(sample, ">")
    assert closers == [text.index(f"<fn={TOOL_NAME}>") + len(f"<fn={TOOL_NAME}")]
    labels = {(text[m.start : m.end], m.label) for m in sample.marks}
    assert labels == {
        ("<fn=", "call marker"),
        (">", "call marker"),
        ("</fn>", "call marker"),
        ("<|end|>", "turn end"),
        ("<|tool|><result>", "result marker"),
        ("</result>", "result marker"),
        ("<|end|>", "result marker"),
        ("<|assistant|>", "generation prompt"),
    }
    # every mark is where the conversation holds its text, and none overlap
    assert all(a.end <= b.start for a, b in itertools.pairwise(sample.marks))


def test_a_call_turns_own_end_is_labelled_the_turn_end(tmp_template) -> None:
    """<|eom|> ends a turn with calls where <|end|> ends the others: the label goes to it."""
    source = SHORT_MARKERS.replace(
        "{%- else %}{{ m.content }}{% endif %}<|end|>",
        "{%- else %}{{ m.content }}{% endif %}{% if m.tool_calls %}<|eom|>{% else %}<|end|>{% endif %}",
    )
    assert source != SHORT_MARKERS
    sample = _sample(load_template(str(tmp_template(source))))
    labels = {(sample.conversation[m.start : m.end], m.label) for m in sample.marks}
    assert ("<|eom|>", "turn end") in labels


def test_the_outputs_differ_by_what_a_call_adds(tmp_template) -> None:
    sample = _sample(load_template(str(tmp_template(SHORT_MARKERS))))
    assert sample.answer.startswith("It is sunny in Paris.")
    assert sample.call.startswith(f"<fn={TOOL_NAME}>")
    assert next(sample.call[s:e] for s, e in sample.call_changes).startswith(f"<fn={TOOL_NAME}>")


def test_differences_compare_markers_whole() -> None:
    left, right = differences("<|a|>hi there<|end|>", "<|b|>hi <x><|end|>")
    assert left == ((0, 5), (8, 13))
    assert right == ((0, 5), (8, 11))


def test_a_conversation_that_does_not_render(tmp_template) -> None:
    refusing = "{% if messages | length > 1 %}{{ raise_exception('one message only') }}{% endif %}" + SHORT_MARKERS
    sample = _sample(load_template(str(tmp_template(refusing))))
    assert (
        sample.conversation.startswith("(this conversation does not render:")
        and "one message only" in sample.conversation
    )
    assert sample.marks == ()


@pytest.mark.parametrize(
    "name, short, before",
    [
        ("Qwen3-Coder", ">", f"<function={TOOL_NAME}"),
        ("moonshotai-Kimi-K2", ":", f"functions.{TOOL_NAME}"),
    ],
)
def test_corpus_short_markers_are_labelled_once(corpus_dir: Path, name: str, short: str, before: str) -> None:
    """The labels used to go on every occurrence of a marker's text: 35 ">" labelled "call marker" on
    Qwen3-Coder. Now only the one the call pattern places, right after the tool's name."""
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    description = analyze(template)
    evidence = inspect(template, description)
    sample = evidence.sample
    assert sample.conversation.count(short) > 3
    assert [sample.conversation[:at].endswith(before) for at in _labelled(sample, short)] == [True]
    page = render_html(description, evidence)
    runs = re.findall(r'data-label="([^"]*)" data-text="([^"]*)"', page)
    assert [label for label, text in runs if html.unescape(text) == short] == ["call marker"]


CALLER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "parameters": {
                "type": "object",
                "properties": {
                    "origin": {"type": "string"},
                    "passengers": {"type": ["null", "integer"]},
                    "cabin": {"enum": ["economy", "business"]},
                },
                "required": ["origin", "passengers", "cabin", "not_a_property"],
            },
        },
    },
    {"type": "function", "function": {"name": "book_hotel", "parameters": {"type": "object", "properties": {}}}},
]


def test_the_sample_offers_the_callers_tools_and_calls_the_first(tmp_template) -> None:
    """audit --tools: the conversation offers the caller's tools and calls the first, with example
    arguments made from its schema; the call marker is placed after that tool's name."""
    template = load_template(str(tmp_template(SHORT_MARKERS)))
    description = analyze(template)
    sample = detect_sample(Renderer.for_template(template, description), description, CALLER_TOOLS)
    assert sample.tools == ("search_flights", "book_hotel") and sample.called == "search_flights"
    assert sample.calls_tool
    text = sample.conversation
    assert "<tool><name>search_flights</name></tool><tool><name>book_hotel</name></tool>" in text
    assert TOOL_NAME not in text + sample.call
    assert sample.call.startswith(
        '<fn=search_flights>{"origin": "example origin", "passengers": 1, "cabin": "economy"}'
    )
    assert _labelled(sample, ">") == [text.index("<fn=search_flights>") + len("<fn=search_flights")]
    assert "(what search_flights returned)" in text and "(a request that needs search_flights)" in text


@pytest.mark.parametrize(
    "parameters, expected",
    [
        ({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}, {"q": "example q"}),
        ({"properties": {"q": {"const": 3}}, "required": ["q"]}, {"q": 3}),
        (
            {"properties": {"flag": {"type": "boolean"}, "xs": {"type": "array"}}, "required": ["xs", "flag"]},
            {"xs": [], "flag": True},
        ),
        ({"properties": {"odd": "not a schema"}, "required": "odd"}, {"odd": "example odd"}),
        ({}, {}),
    ],
)
def test_example_arguments_follow_the_schema(parameters, expected) -> None:
    """Each required property (the first property when none is required), by enum, const or type;
    a schema that is not one gives a placeholder, not an error (schemas are untrusted input)."""
    tool = declared_tools([{"name": "t", "parameters": parameters}])[0]
    assert example_arguments(tool) == expected


NO_CALLS = """{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""


def test_a_template_without_calls_gets_a_question_and_its_answer(tmp_template) -> None:
    """No call turn to show: the sample is the question and the answer, with the answer's header and end."""
    sample = _sample(load_template(str(tmp_template(NO_CALLS))))
    assert not sample.calls_tool
    assert (
        sample.conversation
        == "<|user|>What is the weather in Paris?<|end|>\n<|assistant|>It is sunny in Paris.<|end|>\n"
    )
    labels = [(sample.conversation[m.start : m.end], m.label) for m in sample.marks]
    assert labels == [("<|assistant|>", "generation prompt"), ("<|end|>", "turn end")]
    assert sample.marks[-1].start == sample.conversation.rindex("<|end|>")  # the answer's end, not the question's
