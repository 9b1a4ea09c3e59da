"""A JSON value still arriving, told apart two ways: strict JSON at C speed (``complete_json_at``) and
the scan that remembers how far it got (``value_end``). Where the first says "incomplete", the second
must say the same, so that a stream waits for the same text whichever of the two answered."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.runtime.values import (
    _SHORT_JSON,
    INCOMPLETE,
    Undecodable,
    complete_json_at,
    decode,
    decode_notation,
    python_literal,
    value_end,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text("ab\"\\{}[]:, \n'é"),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text('ab"\\{}[]', max_size=4), inner, max_size=4),
    max_leaves=12,
)


def _texts() -> st.SearchStrategy[str]:
    written = json_values.flatmap(
        lambda value: st.sampled_from(
            [json.dumps(value), json.dumps(value, indent=1), json.dumps(value, ensure_ascii=False)]
        )
    )
    # Some with a slip in them (a quote, a bracket, a letter where it does not belong).
    slipped = st.tuples(written, st.integers(0, 200), st.sampled_from(["'", "]", "}", "x", "\\", '"'])).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
    )
    return st.one_of(written, slipped).map(lambda text: "pre " + text)


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(_texts())
def test_every_prefix_strict_json_calls_incomplete_is_incomplete_to_the_scan(text: str) -> None:
    start = 4
    for end in range(start + 1, len(text) + 1):
        prefix = text[:end]
        found = complete_json_at(prefix, start)
        scanned = value_end(prefix, start)
        if found == INCOMPLETE:
            assert len(prefix) - start <= _SHORT_JSON
            assert scanned == INCOMPLETE, prefix
        elif isinstance(found, tuple):
            assert scanned == found[1], prefix


def test_a_long_value_still_arriving_is_left_to_the_scan() -> None:
    # Past the short length the scan reads it once, through the memo, instead of strict JSON reading
    # it whole again at every closing bracket.
    text = '{"a": [' + "{}, " * _SHORT_JSON
    assert complete_json_at(text, 0) is None
    assert value_end(text, 0) == INCOMPLETE
    assert complete_json_at('{"a": [{}, ', 0) == INCOMPLETE


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('["a", "b"]', ["a", "b"]),
        ("{'a': ''}", {"a": ""}),
        ("'\"'", '"'),
        ('""', ""),
        # Strings side by side, which Python joins: a comma left out, not one string.
        ('["a" "b"]', None),
        ("['a''b']", None),
        ("('x'\n 'y')", None),
        ("{'k': 'it''s'}", None),
    ],
)
def test_a_python_literal_with_strings_side_by_side_is_none(text: str, value: object) -> None:
    assert python_literal(text) == (None if value is None else (value,))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # JSON with Python's constants (neither syntax alone): the constants are read, strings kept.
        ('{"a": true, "b": None, "isTrue": "None of it"}', {"a": True, "b": None, "isTrue": "None of it"}),
        ('[False, "True"]', [False, "True"]),
        # An invalid escape in a key: no value, rather than a key with its words rewritten.
        ('{"fNone\'\\Noneilters": 1}', Undecodable),
    ],
)
def test_python_constants_in_json_are_read_outside_strings_only(text: str, value: object) -> None:
    if value is Undecodable:
        with pytest.raises(Undecodable):
            decode(text)
    else:
        assert decode(text) == value


def test_a_templates_notation_keeps_its_keys_and_strings() -> None:
    assert decode_notation('{isTrue:True,x:<|"|>None<|"|>}', '<|"|>', '<|"|>') == {"isTrue": True, "x": "None"}
