"""Property tests: random and mutated model outputs never raise, streaming in any chunks equals the
batch parse, and plain text is kept whole as content."""

from __future__ import annotations

import json
from functools import cache

import pytest
from helpers.golden import golden
from helpers.roundtrip import TOOLS, case_outputs, compile_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.backends.parser import Message, Parser, apply

# A spread of format classes, so the property runs stay quick.
SAMPLE = [
    golden(name)
    for name in (
        "Qwen-Qwen2.5-7B-Instruct",
        "Qwen3-Coder",
        "moonshotai-Kimi-K2",
        "mistralai-Mistral-Nemo-Instruct-2407",
        "LFM2.5-8B-A1B",
        "google-gemma-4-31B-it",
        "openai-gpt-oss-120b",
        "Qwen3.5-4B",
        "GLM-4.7-Flash",
        "meta-llama-Llama-3.1-8B-Instruct",
        "deepseek-ai-DeepSeek-V3.2",
        "upstage-Solar-Open-100B",
    )
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@cache
def _outputs(name: str, corpus_dir) -> tuple[str, ...]:
    """Real model outputs (the template's own renders) to mutate: the cases the template writes. A case
    is left out only where the description says it is not written or the template refuses it; any
    other error fails the tests of this template."""
    description = golden(name)
    cases = ("one call", "parallel calls", "unicode and multi-line")
    return tuple(text for _, text in case_outputs(description, compile_for(description, corpus_dir), cases))


@pytest.fixture(scope="module")
def outputs(corpus_dir):
    return lambda name: _outputs(name, corpus_dir)


def stream_parse(parser: Parser, text: str, cuts: list[int]) -> Message:
    message = Message()
    stream = parser.stream()
    previous = 0
    for cut in sorted(set(c % (len(text) + 1) for c in cuts)) + [len(text)]:
        for delta in stream.feed(text[previous:cut]):
            apply(message, delta)
        previous = cut
    for delta in stream.finish():
        apply(message, delta)
    return message


@pytest.mark.parametrize("description", SAMPLE, ids=lambda d: d.template.name)
@SETTINGS
@given(data=st.data())
def test_mutated_outputs_never_raise_and_stream_equals_batch(description, outputs, data):
    texts = outputs(description.template.name)
    assert texts, "the template writes none of the cases"
    text = data.draw(st.sampled_from(texts))
    # Mutations: cut the text short, delete a slice, or insert random text somewhere.
    kind = data.draw(st.sampled_from(["truncate", "delete", "insert", "none"]))
    if kind == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    elif kind == "delete" and text:
        a = data.draw(st.integers(0, len(text) - 1))
        b = data.draw(st.integers(a, min(len(text), a + 12)))
        text = text[:a] + text[b:]
    elif kind == "insert":
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(st.text(max_size=8)) + text[at:]
    parser = Parser(description, TOOLS)
    batch = parser.parse(text)
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=12))
    assert stream_parse(parser, text, cuts).to_dict() == batch.to_dict()
    json.dumps(batch.to_dict())  # always serialisable


PLAIN = st.text(
    alphabet=st.characters(blacklist_characters="<>[]{}|\\`", blacklist_categories=("Cs",)), min_size=1, max_size=80
)


@pytest.mark.parametrize("description", SAMPLE, ids=lambda d: d.template.name)
@SETTINGS
@given(text=PLAIN)
def test_plain_text_is_kept_whole_as_content(description, text):
    parser = Parser(description, [])
    message = parser.parse(text)
    # Text with no marker characters is content; reasoning only when the prompt opened it.
    kept = (message.content or "") + message.reasoning_content
    assert kept.split() == text.split() or "".join(kept.split()) == "".join(text.split())
    assert not message.tool_calls


@pytest.mark.parametrize("spaces", [0, 4, 5, 10, 20])
def test_a_bare_json_call_after_a_run_of_whitespace_streams_as_in_batch(spaces: int) -> None:
    """Found by the real llama-server: a model under the grammar wrote whitespace between "{" and the
    first key, and a one-character stream lost the call the batch parse found."""
    description = golden("meta-llama-Llama-3.1-8B-Instruct")
    parser = Parser(description, [])
    text = "{" + " " * spaces + '"name": "set_unit", "parameters": {"unit": "kelvin"}}'
    streamed = stream_parse(parser, text, list(range(len(text))))
    assert [(c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [("set_unit", {"unit": "kelvin"})]
    assert streamed.content == parser.parse(text).content == ""
