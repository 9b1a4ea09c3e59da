"""The parser and the grammar agree on the calls a template writes, for any argument values.

Hypothesis draws argument values from each tool's schema (strings with quotes, newlines, markup and
unicode; integers; booleans; nested objects), the template itself renders the calls, and both backends
must take them: the parser gives back exactly the calls, and the grammar (lazy, from its trigger)
accepts the text. Both are generated from the same output shape, so a disagreement is a bug in one.
"""

from __future__ import annotations

import json
import string

import pytest
from helpers.gbnf_check import accepts
from helpers.grammar import TOOLS, case, described, model_output, turn_span
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from analyzer.backends.gbnf import to_grammar
from analyzer.backends.parser import Parser
from analyzer.runtime.shape import KeyValueArgs, Marker

TEMPLATES = described()

# Text a model may put in a string argument. Characters a template writes raw around a value cannot
# be told apart from the markers that end it, so values that contain a marker are out of scope.
TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .,:;!?'\"\\/\n\t-_()éß中", max_size=40)
NAME_TEXT = TEXT.filter(lambda s: s.strip() == s and s != "")


def in_schema_order(draw_optional: dict, order: list[str]) -> st.SearchStrategy[dict]:
    """Arguments in the order the schema declares them (the grammar asks for that order, as
    llama.cpp's does; the parser takes any)."""
    return st.fixed_dictionaries({}, optional=draw_optional).map(
        lambda args: {key: args[key] for key in order if key in args}
    )


WEATHER_ARGS = st.tuples(NAME_TEXT, in_schema_order({"days": st.integers(-5, 10_000)}, ["days"])).map(
    lambda pair: {"location": pair[0], **pair[1]}
)
SEARCH_ARGS = st.tuples(
    NAME_TEXT,
    in_schema_order(
        {
            "filters": st.fixed_dictionaries(
                {}, optional={"lang": st.sampled_from(["fr", "de"]), "max_age": st.integers(0, 30)}
            ).map(lambda f: {k: f[k] for k in ("lang", "max_age") if k in f}),
            "limit": st.integers(0, 99),
            "exact": st.booleans(),
        },
        ["filters", "limit", "exact"],
    ),
).map(lambda pair: {"query": pair[0], **pair[1]})
GRAMMARS: dict[str, str] = {}
# Templates drawn with one call only, with the reason.
ONE_CALL = {
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "template defect: it closes the section (and the turn) only after "
    "the last of several calls, never after one, so two calls end with a closer the shape does not hold"
}


def _unescaped_quotes(shape) -> set[str]:
    found = set()
    for part in shape.calls.call:
        if isinstance(part, KeyValueArgs) and part.string_escaping == "none":
            for form in part.forms:
                if form.json_type == "string":
                    texts = "".join(p.text for p in form.parts if isinstance(p, Marker))
                    found |= {q for q in "'\"" if q in texts}
    return found


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


@pytest.mark.parametrize("name", TEMPLATES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(weather=WEATHER_ARGS, search=SEARCH_ARGS)
def test_parser_and_grammar_take_the_same_rendered_calls(name, corpus_dir, weather, search):
    c = case(name, corpus_dir)
    # A string between quotes the template writes without escaping cannot hold that quote.
    for quote in _unescaped_quotes(c.shape):
        assume(all(quote not in value for args in (weather, search) for value in _strings(args)))
    parallel = c.description.capabilities.parallel_calls.status == "yes" and name not in ONE_CALL
    calls = [("get_weather", weather, "Ab3De6Gh9"), ("search", search, "Zy8Xw7Vu6")][: 2 if parallel else 1]
    output = model_output(c, calls)
    message = Parser(c.description, TOOLS).parse(output)
    assert [(call.name, json.loads(call.arguments)) for call in message.tool_calls] == [
        (call_name, args) for call_name, args, _ in calls
    ], output
    assert not message.errors, message.errors
    # From the trigger up to the end-of-generation token: the grammar ends where the turn does.
    start, end = turn_span(c.shape, output, len(calls))
    grammar = GRAMMARS.setdefault(name, to_grammar(c.shape, TOOLS).text)  # type: ignore[union-attr]
    verdict = accepts(grammar, output[start:end])
    assert verdict, verdict.reason
