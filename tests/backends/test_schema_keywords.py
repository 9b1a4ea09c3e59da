"""JSON Schema keywords in the grammar: what jsonschema accepts the grammar accepts, and what it refuses
the grammar refuses, or the keyword is reported as not enforced (never silently looser, never stricter).

1. A table of keyword cases on the schema rules, in the exact mode (the template's ", "/": "): values
   drawn from each schema by hypothesis-jsonschema are accepted; hand-written invalid values, checked
   invalid by jsonschema, are refused, or the case names the keywords reported as unenforced.
2. Every corpus template: a call whose arguments use such keywords (a value without a top-level type,
   a type list, anyOf, a $ref, bounds, a pattern), rendered by the template itself, is accepted by its
   grammar from the trigger up to the end of the turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from helpers.gbnf_check import Checker
from helpers.grammar import case, described, rendered_keyword_calls
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from analyzer.backends.gbnf.json_schema import SchemaRules
from analyzer.backends.gbnf.text import Rules

# (schema, invalid values, keywords reported as not enforced: the first word of each report)
CASES: dict[str, tuple[dict[str, Any], list[Any], set[str]]] = {
    "type string": ({"type": "string"}, [1, None], set()),
    "type integer": ({"type": "integer"}, [1.5, "1"], set()),
    "type number": ({"type": "number"}, ["1", True], set()),
    "type boolean": ({"type": "boolean"}, [0, "true"], set()),
    "type null": ({"type": "null"}, [0, ""], set()),
    "type list": ({"type": ["integer", "null"]}, ["x", 1.5], set()),
    "enum": ({"enum": ["a", 2, None]}, ["b", 3], set()),
    "const": ({"const": {"k": [1, 2]}}, [{"k": [2, 1]}], set()),
    "minLength/maxLength": ({"type": "string", "minLength": 2, "maxLength": 4}, ["a", "abcde"], set()),
    "minLength only": ({"type": "string", "minLength": 3}, ["", "ab"], set()),
    "pattern anchored": ({"type": "string", "pattern": "^[a-z]{2,5}$"}, ["a", "ABC", "abcdef"], set()),
    "pattern unanchored": ({"type": "string", "pattern": "\\d{3}"}, ["12", "ab1c2"], set()),
    "pattern with alternation": ({"type": "string", "pattern": "^(cat|dog)s?$"}, ["cow", "catss"], set()),
    "pattern a grammar cannot hold": ({"type": "string", "pattern": "^(?!x)[a-z]+$"}, [], {"pattern"}),
    "format": ({"type": "string", "format": "date"}, [], {"format"}),
    "integer bounds": ({"type": "integer", "minimum": -5, "maximum": 120}, [-6, 121, 1000], set()),
    "integer exclusive bounds": (
        {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
        [0, 10, -1],
        set(),
    ),
    "integer minimum only": ({"type": "integer", "minimum": 18}, [17, 0, -18], set()),
    "integer maximum only": ({"type": "integer", "maximum": -3}, [-2, 0, 5], set()),
    "number bounds": ({"type": "number", "minimum": 0.5, "maximum": 2}, [0.4, 0.49999, 2.0001, 3, -1], set()),
    "number exclusive bounds": (
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        [0, 0.0, -0.0, 1, 1.0, -0.5, 1.5],
        set(),
    ),
    "number minimum only": ({"type": "number", "minimum": -2.25}, [-2.26, -3, -1e20], set()),
    "number maximum only": ({"type": "number", "maximum": 0}, [1e-05, 0.1, 1e20], set()),
    "number bound a writer spells with an exponent": ({"type": "number", "minimum": 1e-05}, [], {"minimum"}),
    "multipleOf": ({"type": "integer", "multipleOf": 5}, [], {"multipleOf"}),
    "minItems/maxItems": (
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
        [[], [1, 2, 3]],
        set(),
    ),
    "nested array item types": (
        {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        [[[1]], ["a"]],
        set(),
    ),
    "uniqueItems": ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [], {"uniqueItems"}),
    "anyOf": ({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}, ["abc", 1.5], set()),
    "oneOf": ({"oneOf": [{"type": "boolean"}, {"type": "null"}]}, [0, "x"], set()),
    "allOf objects": (
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]},
            ]
        },
        [{"a": 1}, {"b": "x"}, {"a": "1", "b": "x"}],
        set(),
    ),
    "$ref to $defs": (
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/point"}},
            "required": ["p"],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
        },
        [{"p": {}}, {"p": {"x": "1"}}],
        set(),
    ),
    "$ref to definitions": (
        {
            "type": "object",
            "properties": {"u": {"$ref": "#/definitions/unit"}},
            "definitions": {"unit": {"enum": ["c", "f"]}},
        },
        [{"u": "k"}],
        set(),
    ),
    "recursive $ref": (
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
            "required": ["name"],
        },
        [{"kids": []}, {"name": "a", "kids": [{}]}],
        set(),
    ),
    "remote $ref": (
        {"$ref": "https://example.com/s.json"},
        [],
        {"$ref"},
    ),
    "not": ({"not": {"type": "string"}}, [], {"not"}),
    "patternProperties": (
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
        [],
        {"patternProperties"},
    ),
    "additionalProperties schema": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        [{"a": "x"}],
        set(),
    ),
}


_TREE = st.recursive(
    st.fixed_dictionaries({"name": st.text(max_size=4)}),
    lambda kids: st.fixed_dictionaries({"name": st.text(max_size=4)}, optional={"kids": st.lists(kids, max_size=2)}),
    max_leaves=5,
)
# Values drawn by hand where hypothesis-jsonschema cannot: a recursive $ref, a remote one (any value),
# allOf with its parts' members only (the grammar's closed objects, see _closed).
DRAW: dict[str, st.SearchStrategy[Any]] = {
    "recursive $ref": _TREE,
    "remote $ref": st.one_of(st.integers(-9, 9), st.text(max_size=5), st.none()),
    "allOf objects": st.fixed_dictionaries({"a": st.integers(-99, 99), "b": st.text(max_size=5)}),
}


def _rules(schema: dict[str, Any]) -> tuple[str, list[str]]:
    rules = Rules()
    json_rules = SchemaRules(rules, (", ", ": "))
    json_rules.root = schema
    text = rules.text(json_rules.value(schema, "v"))
    return text, rules.unenforced


@pytest.mark.parametrize("name", list(CASES))
def test_invalid_values_are_refused_or_reported(name):
    schema, invalid, reported = CASES[name]
    text, unenforced = _rules(schema)
    assert {entry.split(": ", 1)[1].split(" ")[0] for entry in unenforced} == reported, unenforced
    checker = Checker(text)
    for value in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, schema)
        assert not checker.check(json.dumps(value, ensure_ascii=False)), f"{value!r} was accepted\n{text}"


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_valid_values_are_accepted(name, data):
    schema = CASES[name][0]
    value = data.draw(DRAW[name] if name in DRAW else from_schema(_closed(schema)))
    # Patterns mean what ECMA-262 regexes do (\\d, \\w, \\s: ASCII), not what Python's do.
    pattern = schema.get("pattern")
    assume(not isinstance(pattern, str) or re.search(pattern, value, re.ASCII))
    # The grammar bounds integers to 16 digits, as llama.cpp's does: a model cannot loop on digits.
    assume(all(abs(n) < 10**16 for n in _integers(value)))
    text = json.dumps(_in_schema_order(value, schema, schema), ensure_ascii=False)
    verdict = Checker(_rules(schema)[0]).check(text)
    assert verdict, f"{text!r}: {verdict.reason}"


def _closed(schema: Any) -> Any:
    """The schema with no further members where it declares properties and says nothing of others:
    the grammar's policy (a call uses the declared parameters, as llama.cpp's converter has it)."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _closed(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


def _in_schema_order(value: Any, schema: Any, root: Any) -> Any:
    """Members in the order the schema declares them (the grammar asks for that order, as llama.cpp's)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        target = root
        for step in schema["$ref"][1:].split("/")[1:]:
            target = target[step]
        schema = target
    if isinstance(schema, dict) and "allOf" in schema:
        schema = {"properties": {k: v for part in schema["allOf"] for k, v in part.get("properties", {}).items()}}
    if isinstance(value, dict) and isinstance(schema, dict):
        declared = schema.get("properties", {})
        keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
        extra = schema.get("additionalProperties")
        return {k: _in_schema_order(value[k], declared.get(k, extra), root) for k in keys}
    if isinstance(value, list) and isinstance(schema, dict):
        return [_in_schema_order(item, schema.get("items"), root) for item in value]
    return value


def _integers(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [n for item in value for n in _integers(item)]
    return []


# --------------------------------------------------------------------------- every corpus template

KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN else [])
        for n in described()
    ],
)
def test_a_rendered_call_with_keywords_is_accepted(name, corpus_dir):
    """Never refuse a valid call: in every format family (JSON, tags, Python calls, the template's own
    notation), for values without a top-level type, type lists, anyOf and $ref among them."""
    expectations = rendered_keyword_calls(case(name, corpus_dir))
    checker = Checker(expectations[0].grammar)
    for expected in expectations:
        verdict = checker.check(expected.text)
        assert verdict, f"{expected.text!r}: {verdict.reason}"
