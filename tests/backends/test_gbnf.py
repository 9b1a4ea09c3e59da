"""The GBNF backend, checked with a real grammar engine (llguidance, see ``gbnf_check``).

1. JSON Schema rules on small schemas: what each feature accepts and rejects.
2. The grammar on hand-made output shapes: layouts no corpus template has, tool_choice, llama-server fields.
3. Every corpus template with calls: the grammar must accept what the template itself writes for
   calls of the test tools (one call; two when the template takes parallel calls), and reject a
   wrong tool name, a missing required argument, a non-number integer, and a second call when
   parallel calls are off (``CORPUS_CHECKS`` in helpers/grammar.py, which
   test_gbnf_llama_validator.py asks llama.cpp's own validator too). Templates whose renders the
   grammar cannot accept are listed in ``XFAIL`` there with the reason, strict: the day the cause is
   fixed, the entry must go.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from typing import Any

import pytest
from helpers.gbnf_check import Checker, accepts
from helpers.golden import Call, assistant_output, tool_calls
from helpers.grammar import (
    CORPUS_CHECKS,
    NO_ARGS_TOOL,
    TOOLS,
    USER,
    WEATHER,
    WEATHER_TOOL,
    XFAIL,
    Case,
    Expectation,
    a_call_without_arguments,
    calls_for,
    calls_span,
    calls_then_content,
    case,
    content_after_templates,
    described,
    from_the_start,
    from_the_trigger,
    model_output,
    parallel_templates,
    params,
    reasoning_then_a_call,
    tool,
    turn_end,
    turn_span,
    two_calls_with_parallel_off,
    with_reasoning,
    wrong_calls,
)

from analyzer.backends.gbnf.grammar import (
    TRIGGER_PATTERN,
    TRIGGER_PATTERN_FULL,
    TRIGGER_WORD,
    Grammar,
    text_until,
    to_grammar,
)
from analyzer.backends.gbnf.json_schema import PythonRules, SchemaRules
from analyzer.backends.gbnf.text import Rules
from analyzer.backends.parser import Parser
from analyzer.choices import WHITESPACE_MODES
from analyzer.description import ArgumentForm, Field, JsonCall, Text
from analyzer.errors import InputError, UnsupportedFormat
from analyzer.lower import calls_shape, key_value_args, lower, output_shape, reasoning_shape
from analyzer.render.engines import compile_template
from analyzer.runtime.shape import (
    ID_FORMS,
    CallId,
    Index,
    JsonArgs,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Name,
    OutputShape,
    ReasoningShape,
)
from analyzer.sources import load_template

# =========================================================================== 1. JSON Schema rules


def schema_grammar(schema: Any, *, python: bool = False) -> str:
    rules = Rules()
    return rules.text((PythonRules if python else SchemaRules)(rules).value(schema, "args"))


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"location": {"type": "string"}, "days": {"type": "integer"}, "units": {"enum": ["c", "f"]}},
    "required": ["location"],
}

SCHEMA_CASES = {
    "string": (
        {"type": "string"},
        ['"Paris"', '""', '"caf\u00e9 \u00fc\u4e2d"', r'"a\"b\\c\/d\b\f\n\r\t"', r'"\u00e9\uD83D\uDE00"'],
        ["Paris", '"a\nb"', '"tab\there"', r'"\x41"', r'"\u12"', '"open', "'single'"],
    ),
    "integer": ({"type": "integer"}, ["0", "-12", "42"], ["01", "1.5", '"1"', "-", "1e3", "+1"]),
    "number": ({"type": "number"}, ["0", "-0.25", "1.5e-3", "2E+10", "7"], ["1.", ".5", "0x10", "NaN", "--1"]),
    "boolean": ({"type": "boolean"}, ["true", "false"], ["True", "1", '"true"']),
    "null": ({"type": "null"}, ["null"], ["None", '""']),
    "enum": ({"enum": ["c", "f", 3, None]}, ['"c"', '"f"', "3", "null"], ['"k"', "4", '"C"']),
    "const": ({"const": {"a": 1}}, ['{"a": 1}'], ['{"a": 2}', '{"a":1}']),
    "required and optional, in schema order": (
        WEATHER_SCHEMA,
        [
            '{"location": "Paris"}',
            '{"location": "Paris", "days": 3}',
            '{"location": "P", "units": "f"}',
            '{"location": "P", "days": 3, "units": "c"}',
            '{ "location" : "P" ,\n  "days" : 3 }',
            '{"location":"P"}',
        ],
        [
            "{}",
            '{"days": 3}',
            '{"days": 3, "location": "P"}',
            '{"location": "P", "units": "k"}',
            '{"location": "P",}',
            '{"location": "P" "days": 3}',
            '{"location": "P", "location": "Q"}',
        ],
    ),
    "all optional": (
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        ["{}", '{"a": 1}', '{"b": 2}', '{"a": 1, "b": 2}'],
        ['{"b": 2, "a": 1}', '{,"b": 2}', '{"c": 1}'],
    ),
    "additionalProperties false or absent: declared properties only": (
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        ['{"a": 1}', "{}"],
        ['{"a": 1, "z": 2}', '{"z": 2}'],
    ),
    "additionalProperties true: any further members": (
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
        ['{"a": 1, "z": [1, {"y": null}]}', '{"z": "x"}', "{}"],
        ['{"a": 1 "z": 2}', '{"z": 1,}', '{"z"}'],
    ),
    "additionalProperties schema: typed further members": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        ['{"x": 1, "y": 2}', "{}"],
        ['{"x": "1"}'],
    ),
    "object without properties: any members": ({"type": "object"}, ['{"k": [true, 1.5, "s"]}', "{}"], ["[]", "{k: 1}"]),
    "no properties and additionalProperties false: only {}": (
        {"type": "object", "additionalProperties": False},
        ["{}", "{ }"],
        ['{"a": 1}'],
    ),
    "nested objects": (
        {
            "type": "object",
            "properties": {
                "filters": {
                    "type": "object",
                    "required": ["lang"],
                    "properties": {"lang": {"type": "string"}, "max_age": {"type": "integer"}},
                }
            },
        },
        ['{"filters": {"lang": "fr", "max_age": 7}}', '{"filters": {"lang": "fr"}}', "{}"],
        ['{"filters": {"max_age": 7}}', '{"filters": {"lang": 1}}', '{"filters": "fr"}'],
    ),
    "arrays with items and bounds": (
        {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        ['["a"]', '["a", "b"]', '[ "a" ,"b" ]'],
        ["[]", '["a", "b", "c"]', "[1]", '["a",]'],
    ),
    "arrays without bounds": ({"type": "array", "items": {"type": "integer"}}, ["[]", "[1, 2, 3]"], ['["1"]', "[1 2]"]),
    "anyOf": (
        {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "string"}}}]},
        ["5", '{"x": "y"}'],
        ['"5"', '{"x": 5}'],
    ),
    "oneOf": ({"oneOf": [{"type": "string"}, {"type": "null"}]}, ['"s"', "null"], ["1"]),
    "type list": ({"type": ["string", "null"]}, ['"s"', "null"], ["1", "true"]),
    "empty schema: any JSON value": (
        {},
        ['{"a": [1, {"b": null}, true, "x", -1.5e3]}', "[]", '"s"', "0", "null"],
        ["{a: 1}", "[1,]", "undefined", "'s'"],
    ),
    "whitespace is bounded": ({"type": "array"}, ["[" + " " * 20 + "]"], ["[" + " " * 21 + "]"]),
}


@pytest.mark.parametrize("schema, good, bad", list(SCHEMA_CASES.values()), ids=list(SCHEMA_CASES))
def test_schema_rules_accept_and_reject(schema, good, bad):
    checker = Checker(schema_grammar(schema))
    for text in good:
        verdict = checker.check(text)
        assert verdict, f"{text!r} should be accepted: {verdict.reason}"
    for text in bad:
        assert not checker.check(text), f"{text!r} should be rejected"


def test_python_literals():
    checker = Checker(
        schema_grammar(
            {
                **WEATHER_SCHEMA,
                "properties": {
                    **WEATHER_SCHEMA["properties"],
                    "exact": {"type": "boolean"},
                    "tags": {"type": "array"},
                    "note": {"type": ["string", "null"]},
                },
            },
            python=True,
        )
    )
    for text in [
        "{'location': 'Paris, France'}",
        "{'location': \"it's\", 'days': 3, 'units': 'c'}",
        "{'location': 'a\\'b\\n', 'exact': True, 'tags': ['x', 1, None], 'note': None}",
        '{"location": "P"}',
        "{'location': 'two\nlines'}",
    ]:
        verdict = checker.check(text)
        assert verdict, f"{text!r}: {verdict.reason}"
    for text in [
        "{'location': 'P', 'exact': true}",
        "{'days': 3}",
        "{'location': 'P', 'note': null}",
        "{'location': P}",
    ]:
        assert not checker.check(text), text


def test_rule_names_are_gbnf_identifiers_and_shared_rules_are_written_once():
    units = {"type": "string", "enum": ["c", "f"]}
    text = schema_grammar(
        {
            "type": "object",
            "properties": {"from unit": units, "to.unit": units, "n": {"type": "integer"}, "m": {"type": "integer"}},
        }
    )
    names = [line.split(" ::= ")[0] for line in text.splitlines()]
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in names), names
    assert len(names) == len(set(names))
    assert sum(' ::= "\\"c\\"" | "\\"f\\""' in line for line in text.splitlines()) == 1
    assert sum(line.startswith("integer ::= ") for line in text.splitlines()) == 1


TEXT_UNTIL_CASES = [("aab", ()), ("aba", ()), ("ab", ("ba",)), ("abc", ("ca", "bcb")), ("</p>", ("<t>",))]


@pytest.mark.parametrize("stop, avoid", TEXT_UNTIL_CASES)
def test_text_until_is_exactly_the_text_up_to_the_first_stop(stop, avoid):
    """Every short text over the words' letters and one other: accepted exactly when it ends with its
    first ``stop`` and holds none of ``avoid``."""
    rules = Rules()
    checker = Checker(rules.text(text_until(rules, "text", stop, avoid)))
    letters = sorted(set(stop + "".join(avoid))) + ["x"]
    for size in range(7 if len(letters) <= 4 else 5):
        for chars in itertools.product(letters, repeat=size):
            text = "".join(chars)
            expected = (
                text.endswith(stop)
                and text.find(stop) == len(text) - len(stop)
                and not any(word in text for word in avoid)
            )
            assert bool(checker.check(text)) == expected, text


# =========================================================================== 2. hand-made shapes


def make_shape(
    call: tuple,
    *,
    section_open: tuple = (),
    section_close: tuple = (),
    separator: tuple | None = (),
    no_arguments: tuple | None = None,
    reasoning: ReasoningShape | None = None,
    prefix: tuple = (),
    id_form: str = "openai",
    generation_prompt: str = "",
) -> OutputShape:
    calls = calls_shape(section_open, section_close, separator, call, no_arguments)
    if reasoning is not None:  # what follows the block comes from the prefix, as lowering makes it
        reasoning = reasoning_shape(
            reasoning.open,
            reasoning.close,
            reasoning.forced_open,
            toggle=reasoning.toggle,
            opened_when_thinking=reasoning.opened_when_thinking,
            prefix=prefix,
            generation_prompt=generation_prompt,
        )
    return output_shape(
        "hand-made",
        generation_prompt=generation_prompt,
        prefix=prefix,
        reasoning=reasoning,
        calls=calls,
        stops=("<end>",),
        id_form=ID_FORMS[id_form],
    )


TAG_CALL = (Marker("<call>", trail="\n"), Name(), Marker("(", lead=""), JsonArgs("object"), Marker(")</call>"))


def check(grammar: Grammar | None, good: list[str], bad: list[str]) -> None:
    assert grammar is not None
    checker = Checker(grammar.text)
    for text in good:
        verdict = checker.check(text)
        assert verdict, f"{text!r} should be accepted: {verdict.reason}\n{grammar.text}"
    for text in bad:
        assert not checker.check(text), f"{text!r} should be rejected\n{grammar.text}"


def test_nested_json_call_with_constants_and_string_arguments():
    layout = JsonCall(
        name_path=("function", "name"),
        name_is_key=False,
        arguments_path=("function", "arguments"),
        arguments_encoding="string",
        id_path=("id",),
        index_path=None,
        index_base=0,
        constants=((("type",), '"function"'),),
        key_order=("id", "type", "function"),
    )
    shape = make_shape(
        (JsonCallObject(layout),),
        section_open=(Marker("[", trail=" "),),
        section_close=(Marker("]", lead=" "),),
        separator=(Marker(",", trail=" "),),
        id_form="alnum9",
    )
    call = '{"id": "Ab3De6Gh9", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"a\\": 1}"}}'
    other_id = call.replace("Ab3De6Gh9", "call_1")
    other_type = call.replace('"type": "function"', '"type": "tool"')
    object_arguments = call.replace('"{\\"a\\": 1}"', '{"a": 1}')
    check(
        to_grammar(shape, [WEATHER_TOOL], whitespace="flexible"),
        [f"[{call}]", f"[ {call}, {call} ]"],
        [f"[{other_id}]", f"[{other_type}]", f"[{object_arguments}]", "[]"],
    )


def test_no_argument_pattern_is_an_alternative_for_tools_without_parameters_where_it_differs():
    shape = make_shape(TAG_CALL, no_arguments=(Marker("<call>", trail="\n"), Name(), Marker("/>")))
    grammar = to_grammar(shape, [WEATHER_TOOL, NO_ARGS_TOOL], whitespace="flexible")
    check(
        grammar,
        ["<call>list_files/>", "<call>\nlist_files({})</call>", '<call>get_weather({"location": "x"})</call>'],
        ["<call>get_weather/>"],
    )


def test_no_argument_pattern_that_writes_the_same_is_not_a_second_spelling():
    same = (Marker("<call>", trail="\n"), Name(), Marker("({})</call>"))
    for whitespace in WHITESPACE_MODES:
        assert to_grammar(make_shape(TAG_CALL, no_arguments=same), [NO_ARGS_TOOL], whitespace=whitespace) == to_grammar(
            make_shape(TAG_CALL), [NO_ARGS_TOOL], whitespace=whitespace
        )


def test_a_no_argument_pattern_that_differs_in_whitespace_only_is_the_exact_one():
    """The call pattern with its arguments left out keeps the whitespace on both sides of them (GLM-4.6:
    a newline after the name, one before the closer); the template writes one: the exact grammar asks for
    the no-argument pattern's, the flexible one takes both."""
    call = (Marker("<call>"), Name(), Marker("", lead="\n"), KeyValueArgs((), (), "none", False, ("", ""), ("", "")))
    call += (Marker("</call>", lead="\n"),)
    bare = (Marker("<call>"), Name(), Marker("</call>", lead="\n"))
    shape = make_shape(call, no_arguments=bare)
    check(to_grammar(shape, [NO_ARGS_TOOL]), ["<call>list_files\n</call>"], ["<call>list_files\n\n</call>"])
    check(to_grammar(shape, [NO_ARGS_TOOL], whitespace="flexible"), ["<call>list_files\n</call>"], [])


def test_python_and_string_argument_encodings():
    python = (Marker("<call>"), Name(), Marker(":"), JsonArgs("python"), Marker("</call>"))
    check(
        to_grammar(make_shape(python), [WEATHER_TOOL]),
        ["<call>get_weather:{'location': 'Paris', 'days': 3}</call>"],
        ["<call>get_weather:{'days': 3}</call>", '<call>get_weather:{"location": "P", "days": true}</call>'],
    )
    string = (Marker("<call>"), Name(), Marker(":"), JsonArgs("string"), Marker("</call>"))
    check(
        to_grammar(make_shape(string), [WEATHER_TOOL]),
        ['<call>get_weather:"{\\"location\\": \\"Paris\\"}"</call>'],
        ['<call>get_weather:{"location": "Paris"}</call>', '<call>get_weather:"unterminated</call>'],
    )


def test_call_ids_and_indexes():
    call = (
        Marker("<c"),
        CallId(ID_FORMS["alnum9"]),
        Marker(">"),
        Name(),
        Marker("#"),
        Index(1),
        Marker(":"),
        JsonArgs("object"),
        Marker("</c>"),
    )
    check(
        to_grammar(make_shape(call), [WEATHER_TOOL]),
        ['<cAb3De6Gh9>get_weather#1:{"location": "x"}</c>'],
        ['<cAb3De6Gh>get_weather#1:{"location": "x"}</c>', '<cAb3De6Gh9>get_weather#x:{"location": "x"}</c>'],
    )
    first, second = '<cAb3De6Gh9>get_weather#1:{"location": "x"}</c>', '<cAb3De6Gh9>get_weather#2:{"location": "y"}</c>'
    # The template numbers its calls: each is held to its own number, in order (flexible: any number).
    check(
        to_grammar(make_shape(call, separator=(Marker(";"),)), [WEATHER_TOOL]),
        [first, f"{first};{second}"],
        [second, f"{first};{first}", f"{second};{first}"],
    )
    check(
        to_grammar(make_shape(call, separator=(Marker(";"),)), [WEATHER_TOOL], whitespace="flexible"),
        [second, f"{first};{first}"],
        [],
    )
    many = ";".join(f'<cAb3De6Gh9>get_weather#{n}:{{"location": "x"}}</c>' for n in range(1, 13))
    check(to_grammar(make_shape(call, separator=(Marker(";"),)), [WEATHER_TOOL]), [many], [])
    token = (Marker("<c>"), CallId(ID_FORMS["openai"]), Marker("<n>"), Name(), JsonArgs("object"))
    check(
        to_grammar(make_shape(token), [WEATHER_TOOL]),
        ['<c>call_abc-1<n>get_weather{"location": "x"}'],
        ['<c>call abc<n>get_weather{"location": "x"}'],
    )


KV_FORMS = (
    ArgumentForm("string", (Text('<arg name="'), Field("key"), Text('">'), Field("value"), Text("</arg>")), "raw"),
    ArgumentForm("integer", (Text('<arg name="'), Field("key"), Text('">'), Field("value"), Text("</arg>")), "json"),
    ArgumentForm("boolean", (Text('<arg name="'), Field("key"), Text('">'), Field("value"), Text("</arg>")), "python"),
    ArgumentForm("object", (Field("key"), Text("="), Field("value")), "unknown"),
)


def test_key_value_arguments_by_form():
    call = (
        Marker("<call"),
        Marker('name="', lead=" "),
        Name(),
        Marker('">', trail="\n"),
        key_value_args(KV_FORMS, "\n", "none"),
        Marker("</call>", lead="\n"),
    )
    search = tool(
        "search",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
            "filters": {"type": "object"},
        },
        ["query"],
    )
    check(
        to_grammar(make_shape(call), [search], whitespace="flexible"),
        [
            '<call name="search">\n<arg name="query">cafés "open" <b>late</b>\nnear</arg>\n</call>',
            '<call name="search"><arg name="query">q</arg><arg name="limit"> 5 </arg>'
            '<arg name="exact">True</arg>filters={a:{b,c},d:[1,2]}</call>',
        ],
        [
            '<call name="search"><arg name="limit">5</arg></call>',
            '<call name="search"><arg name="query">q</arg><arg name="limit">five</arg></call>',
            '<call name="search"><arg name="query">q</arg><arg name="exact">true</arg></call>',
            '<callname="search"><arg name="query">q</arg></call>',
        ],
    )


def test_reasoning_before_calls_in_required_mode():
    opened = ReasoningShape((Marker("<think>", trail="\n"),), (Marker("</think>", lead="\n"),), False)
    shape = make_shape(TAG_CALL, reasoning=opened)
    call = '<call>get_weather({"location": "x"})</call>'
    check(
        to_grammar(shape, [WEATHER_TOOL], tool_choice="required", whitespace="flexible"),
        [call, f"<think>\nhmm </thin\n</think>\n\n{call}", f"\n<think></think>{call}"],
        [f"</think>{call}", f"<think>plan {call}</think>{call}", "", "text"],
    )
    forced = make_shape(TAG_CALL, reasoning=ReasoningShape(opened.open, opened.close, True))
    check(
        to_grammar(forced, [WEATHER_TOOL], tool_choice="required", whitespace="flexible"),
        [call, f"hmm\n</think>\n{call}", f"</think>{call}"],
        [f"hmm {call}", "hmm</think>"],
    )


def test_what_every_turn_starts_with_may_come_first():
    call = '<call>get_weather({"location": "x"})</call>'
    plain = make_shape(TAG_CALL, prefix=(Marker("<pre>"),))
    check(
        to_grammar(plain, [WEATHER_TOOL], tool_choice="required", whitespace="flexible"),
        [call, f"<pre>\n{call}"],
        [f"<pre><pre>{call}"],
    )
    # The prompt opened reasoning: the prefix past the close marker follows the (optional) block.
    think = ReasoningShape((Marker("<think>"),), (Marker("</think>"),), True)
    forced = make_shape(TAG_CALL, reasoning=think, prefix=(Marker("</think><response>"),))
    check(
        to_grammar(forced, [WEATHER_TOOL], tool_choice="required", whitespace="flexible"),
        [call, f"</think><response>{call}", f"plan</think>\n<response>{call}", f"<response>{call}"],
        [f"<response><response>{call}", "<response></think>"],
    )
    # Calls that open with the tool's name: the trigger lets the prefix stand before it.
    named = make_shape((Name(), JsonArgs("object")), prefix=(Marker("to=", lead=" "),))
    full = to_grammar(named, [WEATHER_TOOL]).triggers[0]  # type: ignore[union-attr]
    assert re.fullmatch(full.value, " to=get_weather{}").start(1) == 4
    assert re.fullmatch(full.value, "get_weather{}").start(1) == 0
    assert not re.fullmatch(full.value, "Sure: get_weather{}")


def test_a_reasoning_message_is_followed_by_the_next_messages_prefix():
    """The block is a message of its own: its close ends it and opens the next with the header the prompt
    writes, after which every message's prefix comes again, then the call (muse-glimmer's layout)."""
    header = "<|start|>assistant"
    shape = make_shape(
        (Name(), Marker("<|message|>"), JsonArgs("object"), Marker("<|eom|>")),
        separator=(Marker("<|eom|>" + header), Marker("to=", lead=" ")),
        reasoning=ReasoningShape((Marker("self<|message|>"),), (Marker("<|eom|>" + header),), False),
        prefix=(Marker("to=", lead=" "),),
        generation_prompt=header,
    )
    assert shape.reasoning is not None and shape.reasoning.after == shape.prefix
    call = 'get_weather<|message|>{"location": "x"}<|eom|>'
    good = [f" to={call}", f" to=self<|message|>plan<|eom|>{header} to={call}"]
    bad = [f" to=self<|message|>plan<|eom|>{header}{call}", f" to=self<|message|>plan<|eom|>{header} to=to={call}"]
    for whitespace in WHITESPACE_MODES:
        check(to_grammar(shape, [WEATHER_TOOL], tool_choice="required", whitespace=whitespace), good, bad)
    message = Parser(shape, [WEATHER_TOOL]).parse(good[1])
    assert message.reasoning_content == "plan" and [c.name for c in message.tool_calls] == ["get_weather"]
    assert not message.content


def test_whitespace_is_required_only_between_two_words():
    call = (Marker("to", trail=" "), Marker("call", lead=" "), Marker(":"), Name(), JsonArgs("object"))
    check(
        to_grammar(make_shape(call), [WEATHER_TOOL], whitespace="flexible"),
        ['to call:get_weather{"location": "x"}', 'to\ncall:get_weather {"location": "x"}'],
        ['tocall:get_weather{"location": "x"}', 'to call :get_weather{"location": "x"}'],
    )


def test_tool_choice_and_parallel():
    shape = make_shape(TAG_CALL, separator=())
    tools = [WEATHER_TOOL, NO_ARGS_TOOL]
    one, other = '<call>get_weather({"location": "x"})</call>', "<call>list_files({})</call>"
    check(to_grammar(shape, tools, whitespace="flexible"), [one, other, f"{one}\n{other}{one}"], [f"text {one}"])
    check(to_grammar(shape, tools, parallel=False, whitespace="flexible"), [one], [f"{one}{other}"])
    named = to_grammar(shape, tools, tool_choice="list_files", whitespace="flexible")
    check(named, [other, f"  {other}"], [one])
    assert named is not None and not named.lazy and named.triggers == ()
    assert to_grammar(shape, tools, tool_choice="none") is None
    with pytest.raises(InputError, match="'nope' is none of the declared tools"):
        to_grammar(shape, tools, tool_choice="nope")
    with pytest.raises(InputError):
        to_grammar(shape, [])
    no_calls = output_shape("plain", stops=("<end>",))
    with pytest.raises(UnsupportedFormat, match="writes no tool calls"):
        to_grammar(no_calls, tools)


def test_a_closer_written_only_after_several_calls():
    """One call alone, or two and more and then the closer (a template that closes the section only
    after several calls): exactly what it writes."""
    calls = calls_shape((Marker("<calls>"),), (Marker("</calls>"),), (Marker(";"),), TAG_CALL)
    shape = output_shape("hand-made", calls=replace(calls, close_from=2), stops=("<end>",))
    one, two = '<call>\nget_weather({"location": "x"})</call>', '<call>\nget_weather({"location": "y"})</call>'
    check(
        to_grammar(shape, [WEATHER_TOOL], tool_choice="required"),
        [f"<calls>{one}", f"<calls>{one};{two}</calls>", f"<calls>{one};{two};{one}</calls>"],
        [f"<calls>{one}</calls>", f"<calls>{one};{two}"],
    )
    check(to_grammar(shape, [WEATHER_TOOL], tool_choice="required", parallel=False), [f"<calls>{one}"], [])


def test_llama_server_fields():
    shape = make_shape(TAG_CALL, reasoning=ReasoningShape((Marker("<think>"),), (Marker("</think>"),), False))
    auto = to_grammar(shape, [WEATHER_TOOL])
    assert auto is not None
    fields = auto.to_llama_server()
    assert fields == {
        "grammar": auto.text,
        "grammar_lazy": True,
        "grammar_triggers": [{"type": 1, "value": "<call>"}],
        "preserved_tokens": ["<think>", "</think>", "<call>", "(", ")</call>", "<end>"],
        "stop": ["<end>"],
    }
    assert all(type(t["type"]) is int for t in fields["grammar_triggers"])
    for choice in ("required", "get_weather"):
        eager = to_grammar(shape, [WEATHER_TOOL], tool_choice=choice)
        assert eager is not None
        assert eager.to_llama_server()["grammar_lazy"] is False and eager.to_llama_server()["grammar_triggers"] == []
    bare = make_shape(
        (
            JsonCallObject(
                JsonCall(("name",), False, ("arguments",), "object", None, None, 0, (), ("name", "arguments"))
            ),
        )
    )
    assert to_grammar(bare, [WEATHER_TOOL]).triggers[0].type == TRIGGER_PATTERN  # type: ignore[union-attr]
    named = make_shape((Name(), JsonArgs("object")))
    full = to_grammar(named, [WEATHER_TOOL, NO_ARGS_TOOL]).triggers[0]  # type: ignore[union-attr]
    assert full.type == TRIGGER_PATTERN_FULL and re.fullmatch(full.value, "\nlist_files{}").start(1) == 1


# =========================================================================== 3. the corpus


def triggered_at(grammar: Grammar, output: str) -> int | None:
    """Where llama-server starts a lazy grammar: at a word, at a regex's first group (or its match)
    found anywhere, or for a full-output regex, when it matches all the output so far."""
    starts = []
    for trigger in grammar.triggers:
        if trigger.type == TRIGGER_WORD:
            found = output.find(trigger.value)
            starts += [found] if found >= 0 else []
        else:
            match = (re.search if trigger.type == TRIGGER_PATTERN else re.fullmatch)(trigger.value, output)
            if match:
                starts.append(
                    next((match.start(i) for i in range(1, len(match.groups()) + 1) if match.group(i)), match.start())
                )
    return min(starts, default=None)


def check_expectations(expectations: list[Expectation]) -> None:
    checkers: dict[str, Checker] = {}
    for expected in expectations:
        checker = checkers.setdefault(expected.grammar, Checker(expected.grammar))
        verdict = checker.check(expected.text)
        if expected.accepted:
            assert verdict, f"{expected.what} is refused: {expected.text!r}: {verdict.reason}"
        else:
            assert not verdict, f"{expected.what} was accepted: {expected.text!r}"


def test_every_xfail_names_a_template_with_calls():
    assert len(described()) == 63
    assert {name for _, name in XFAIL} <= set(described())
    assert {test for test, _ in XFAIL} <= set(CORPUS_CHECKS)


@pytest.mark.parametrize("name", params("auto-1", described()))
def test_auto_grammar_accepts_one_call(name, corpus_dir):
    check_expectations(from_the_trigger(case(name, corpus_dir), 1))


@pytest.mark.parametrize("name", params("auto-2", parallel_templates()))
def test_auto_grammar_accepts_two_parallel_calls(name, corpus_dir):
    check_expectations(from_the_trigger(case(name, corpus_dir), 2))


@pytest.mark.parametrize("name", params("trigger", described()))
def test_trigger_starts_the_grammar_where_the_calls_start(name, corpus_dir):
    c = case(name, corpus_dir)
    output = model_output(c, calls_for(1))
    start, end = calls_span(c.shape, output, 1)
    grammar = to_grammar(c.shape, TOOLS)
    assert grammar is not None
    assert triggered_at(grammar, output[:end]) == start, f"{grammar.triggers} on {output[:end]!r}"
    assert all(type(t["type"]) is int and t["type"] in (1, 2, 3) for t in grammar.to_llama_server()["grammar_triggers"])


@pytest.mark.parametrize("name", params("required-1", described()))
def test_required_grammar_accepts_one_call(name, corpus_dir):
    check_expectations(from_the_start(case(name, corpus_dir), 1))


@pytest.mark.parametrize("name", params("required-2", parallel_templates()))
def test_required_grammar_accepts_two_parallel_calls(name, corpus_dir):
    check_expectations(from_the_start(case(name, corpus_dir), 2))


@pytest.mark.parametrize("name", params("reject", described()))
def test_grammar_rejects_wrong_calls(name, corpus_dir):
    check_expectations(wrong_calls(case(name, corpus_dir)))


@pytest.mark.parametrize("name", params("no-arguments", described()))
def test_grammar_takes_a_call_without_arguments_as_the_template_writes_it(name, corpus_dir):
    check_expectations(a_call_without_arguments(case(name, corpus_dir)))


def test_content_after_calls_is_where_the_template_writes_it(corpus_dir):
    """gemma-4 writes a message's content after its calls; the other templates (content before the
    calls, or none beside them) get no room for text after them."""
    assert set(content_after_templates()) == {"google-gemma-4-31B-it", "google-gemma-4-31B-it-interleaved"}
    c = case("GLM-4.6", corpus_dir)
    output = model_output(c, calls_for(1))
    start, end = turn_span(c.shape, output, 1)
    grammar = to_grammar(c.shape, TOOLS)
    assert grammar is not None
    check(grammar, [output[start:end]], [output[start:end] + "Let me check the weather first."])


@pytest.mark.parametrize("name", params("content-after", content_after_templates()))
def test_grammar_takes_content_after_calls_where_the_template_writes_it(name, corpus_dir):
    check_expectations(calls_then_content(case(name, corpus_dir)))


@pytest.mark.parametrize("name", params("parallel-false", parallel_templates()))
def test_parallel_false_refuses_two_calls(name, corpus_dir):
    check_expectations(two_calls_with_parallel_off(case(name, corpus_dir)))


@pytest.mark.parametrize("name", params("stops", described()))
def test_stop_strings_do_not_cut_the_calls(name, corpus_dir):
    """A server stops at the stop strings it is given: none may stand in the calls the grammar is for."""
    c = case(name, corpus_dir)
    output = model_output(c, calls_for(1))
    start, end = calls_span(c.shape, output, 1)
    stops = to_grammar(c.shape, TOOLS).stops  # type: ignore[union-attr]
    assert not [stop for stop in stops if stop in output[start:end]]


def test_arguments_sorted_by_name_are_asked_for_sorted(corpus_dir):
    """gemma-4 writes arguments sorted by name whatever the order given: the grammar asks for that order."""
    c = case("google-gemma-4-31B-it", corpus_dir)
    kv = next(part for part in c.shape.calls.call if isinstance(part, KeyValueArgs))  # type: ignore[union-attr]
    assert kv.sorted_names
    grammar = to_grammar(c.shape, TOOLS).text  # type: ignore[union-attr]
    # (the call turn's end <|tool_response> is a stop: the grammar ends before it)
    assert accepts(grammar, '<|tool_call>call:get_weather{days:3,location:<|"|>Paris<|"|>}<tool_call|>')
    assert not accepts(grammar, '<|tool_call>call:get_weather{location:<|"|>Paris<|"|>,days:3}<tool_call|>')


def test_raw_string_with_an_enum_takes_only_its_values(corpus_dir):
    """Tag/key-value formats write strings raw; an enum there must still hold, with the template's own
    whitespace around the value (the parser takes off exactly that)."""
    from analyzer.analysis import analyze
    from analyzer.backends.parser import Parser

    units = tool("set_unit", {"unit": {"type": "string", "enum": ["celsius", "kelvin"]}}, ["unit"])
    template = load_template(str(corpus_dir / "Qwen3-Coder.jinja"))
    description = analyze(template)
    rendered = compile_template(template).render(
        [
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": "set_unit", "arguments": {"unit": "kelvin"}}}],
            },
        ],
        tools=[units],
    )
    call = rendered[rendered.rindex("<tool_call>") : rendered.rindex("</tool_call>") + len("</tool_call>")]
    assert "\nkelvin\n" in call
    check(
        to_grammar(lower(description), [units], tool_choice="required"),
        [call],
        [call.replace("kelvin", "fahrenheit"), call.replace("\nkelvin\n", "\n  kelvin\n")],
    )
    assert json.loads(Parser(description, [units]).parse(call).tool_calls[0].arguments) == {"unit": "kelvin"}


def test_preserved_tokens_name_the_bracketed_word_a_marker_starts_with():
    shape = make_shape((Marker("[TOOL_CALLS]["), Name(), JsonArgs("object"), Marker("]")))
    preserved = to_grammar(shape, [WEATHER_TOOL]).preserved_tokens  # type: ignore[union-attr]
    assert preserved[:2] == ("[TOOL_CALLS][", "[TOOL_CALLS]") and "]" in preserved


def test_thinking_switched_off_leaves_no_room_for_reasoning():
    think = ((Marker("<think>"),), (Marker("</think>"),))
    shape = make_shape(TAG_CALL, reasoning=ReasoningShape(*think, False, toggle=True))
    text = '<think>hm</think><call>\nget_weather({"location": "Paris"})</call>'
    check(to_grammar(shape, [WEATHER_TOOL], tool_choice="required", whitespace="flexible"), [text], [])
    check(to_grammar(shape, [WEATHER_TOOL], tool_choice="required", thinking=True, whitespace="flexible"), [text], [])
    check(
        to_grammar(shape, [WEATHER_TOOL], tool_choice="required", thinking=False, whitespace="flexible"),
        [text[len("<think>hm</think>") :]],
        [text],
    )


def test_calls_that_open_with_a_name_are_triggered_after_content_behind_the_separator(corpus_dir):
    """functionary-v3.2 writes content, then ``>>>`` and the call: a lazy grammar holds from the name
    there, and accepts the calls from it."""
    c = case("meetkai-functionary-medium-v3.2", corpus_dir)
    grammar = to_grammar(c.shape, TOOLS)
    assert grammar is not None
    output = 'all\nLet me check.>>>get_weather\n{"location": "Paris"}'
    start = triggered_at(grammar, output)
    assert start == output.index("get_weather")
    assert accepts(grammar.text, output[start:])
    assert triggered_at(grammar, "all\nThree arrows >>> mean nothing here.") is None


def test_nested_tags_are_held_to_the_schema(corpus_dir):
    """MiniMax-M3 writes nested objects and arrays as nested tags in the argument form: the grammar
    takes the template's own render of them, member by member as the schema lists them, and not
    a member the schema does not have nor a string where it asks for a number."""
    from helpers.golden import assistant_output

    steps = tool(
        "plan",
        {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                    "required": ["name"],
                },
            }
        },
        ["steps"],
    )
    c = case("MiniMax-M3", corpus_dir)
    arguments = {"steps": [{"name": "a <b>\nc", "n": 2}, {"name": "d"}]}
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "plan", "arguments": arguments}}],
    }
    output = assistant_output(c.description, c.compiled, [{"role": "user", "content": "go"}], turn, [steps])
    written = output[output.index("]<]minimax[>[<tool_call>") : output.rindex("</tool_call>") + len("</tool_call>")]
    assert "[<item>]<]minimax[>[<name>a <b>\nc]<]minimax[>[</name>" in written
    check(
        to_grammar(c.shape, [steps], tool_choice="required"),
        [written],
        [written.replace("[<n>2]<]minimax[>[</n>", "[<m>2]<]minimax[>[</m>"), written.replace("[<n>2]", "[<n>two]")],
    )


def test_names_with_a_quote_are_escaped_in_json(corpus_dir):
    """A tool or argument name holding a quote is written JSON-escaped inside a JSON call: the grammar
    takes the escaped name and not the raw one (which would be no JSON)."""
    quoted = tool('q"uote', {'a"b': {"type": "string"}}, ['a"b'])
    c = case("Qwen-Qwen2.5-7B-Instruct", corpus_dir)
    good = '<tool_call>\n{"name": "q\\"uote", "arguments": {"a\\"b": "1"}}\n</tool_call>'
    check(
        to_grammar(c.shape, [quoted], tool_choice="required"),
        [good],
        [good.replace('q\\"uote', 'q"uote'), good.replace('a\\"b', 'a"b')],
    )


def test_names_escaped_by_the_template_are_written_escaped(corpus_dir):
    """Kimi-K3 writes names into XML attributes with '"' and '&' as entities: the grammar writes them so,
    and refuses the raw quote, which the template never writes there."""
    quoted = tool('q"uote', {'a"b': {"type": "string"}}, ['a"b'])
    c = case("Kimi-K3", corpus_dir)
    good = (
        '<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="q&quot;uote" index="1"<|sep|>'
        '<|open|>argument key="a&quot;b" type="string"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|><|close|>message<|sep|>"
    )
    check(
        to_grammar(c.shape, [quoted]),
        [good],
        [good.replace('tool="q&quot;uote"', 'tool="q"uote"'), good.replace('key="a&quot;b"', 'key="a"b"')],
    )


def test_a_call_opening_with_an_escaped_name_is_triggered_by_the_name_as_written():
    quoted = tool("a&b", {"x": {"type": "string"}}, ["x"])
    named = make_shape((Name((("&", "&amp;"),)), JsonArgs("object")), separator=(Marker(";"),))
    grammar = to_grammar(named, [quoted])
    assert grammar is not None
    for trigger in grammar.triggers:
        assert re.search(trigger.value, ';a&amp;b{"x": "1"}'), trigger.value
        assert not re.search(trigger.value, ';a&b{"x": "1"}'), trigger.value
    check(grammar, ['a&amp;b{"x": "1"}'], ['a&b{"x": "1"}'])


def _names_tool(name: str, keys: list[str]) -> dict[str, Any]:
    return tool(name, {key: {"type": "string"} for key in keys}, keys)


NAMED = {
    "non-ASCII": (_names_tool("météo", ["ville", "ключ"]), {"ville": "Paris", "ключ": "v"}),
    "quoted": (_names_tool('q"uote', ['a"b']), {'a"b': "1"}),
}


@pytest.mark.parametrize("names", sorted(NAMED))
@pytest.mark.parametrize("name", described())
def test_the_grammar_takes_names_as_the_template_writes_them(name, names, corpus_dir):
    """A name in another script or with a quote, written by the template (raw in tags, escaped in
    JSON, \\u-escaped by a tojson that keeps to ASCII): the lazy grammar takes the call from its trigger.
    A JSON template that writes a quoted name unescaped writes no JSON, which no grammar for JSON takes."""
    from helpers.golden import assistant_output, tool_calls
    from helpers.roundtrip import unreadable_render

    declared, arguments = NAMED[names]
    c = case(name, corpus_dir)
    call_name = declared["function"]["name"]
    turn = {
        "role": "assistant",
        "content": c.description.input_form.content_with_calls,
        "tool_calls": tool_calls(c.description, [(call_name, arguments, "Ab3De6Gh9")]),
    }
    output = assistant_output(c.description, c.compiled, [{"role": "user", "content": "hi"}], turn, [declared])
    if unreadable_render(c.description, output, [(call_name, arguments)]):
        return
    grammar = to_grammar(c.shape, [declared])
    assert grammar is not None
    start = triggered_at(grammar, output)
    assert start is not None, output
    # the grammar holds the turn up to its end (the end-of-generation token, which it never sees as text)
    try:
        _, end = turn_span(c.shape, output, 1)
    except AssertionError:  # a call that opens with its name: no marker to find the calls by
        end = turn_end(c.shape, output, start + 1)
    verdict = Checker(grammar.text).check(output[start:end])
    assert verdict, f"{output[start:end]!r}: {verdict.reason}"


# =========================================================================== 4. exact and flexible whitespace


def _extra_space_at(c: Case, text: str) -> int | None:
    """Where in ``text`` the template writes whitespace after a marker of a call, before another
    marker, the name or a JSON value (not before raw text, which may start with any whitespace): just
    past that whitespace. None when the calls write no such whitespace."""
    assert c.shape.calls is not None
    parts = c.shape.calls.call
    for part, following in itertools.pairwise(parts):
        if (
            isinstance(part, Marker)
            and part.text
            and part.trail
            and isinstance(following, (Marker, Name, JsonArgs, JsonCallObject))
            and not (isinstance(following, Marker) and not following.text)
        ):
            at = text.find(part.text + part.trail)
            if at >= 0:
                return at + len(part.text + part.trail)
    return None


def test_exact_whitespace_is_the_templates_and_flexible_takes_more(corpus_dir):
    """Every corpus template whose calls write whitespace between two markers: three more newlines
    there are refused by the exact default and taken by the flexible grammar (the parser reads both)."""
    tested = 0
    for name in described():
        c = case(name, corpus_dir)
        output = model_output(c, calls_for(1))
        start, end = turn_span(c.shape, output, 1)
        text = output[start:end]
        at = _extra_space_at(c, text)
        if at is None:
            continue
        tested += 1
        spaced = text[:at] + "\n\n\n" + text[at:]
        exact, flexible = (to_grammar(c.shape, TOOLS, whitespace=mode) for mode in ("exact", "flexible"))
        assert exact is not None and flexible is not None
        assert accepts(exact.text, text), name
        assert not accepts(exact.text, spaced), f"{name}: exact took {spaced!r}"
        verdict = accepts(flexible.text, spaced)
        assert verdict, f"{name}: flexible refused {spaced!r}: {verdict.reason}"
        assert [call.name for call in Parser(c.description, TOOLS).parse(output[:start] + spaced).tool_calls] == [
            "get_weather"
        ], name
    assert tested >= 25, tested


def test_exact_json_is_written_with_the_templates_separators(corpus_dir):
    """Templates whose calls hold JSON written with ", " and ": ": the compact spelling of the same
    call is refused by the exact default and taken by the flexible grammar."""
    tested = 0
    for name in described():
        c = case(name, corpus_dir)
        assert c.shape.calls is not None
        if c.shape.calls.json_separators != (", ", ": "):
            continue
        output = model_output(c, calls_for(1))
        start, end = turn_span(c.shape, output, 1)
        text = output[start:end]
        if '": ' not in text:
            continue  # JSON written only in values the WEATHER call does not have
        tested += 1
        compact = text.replace('": ', '":', 1)
        exact, flexible = (to_grammar(c.shape, TOOLS, whitespace=mode) for mode in ("exact", "flexible"))
        assert exact is not None and flexible is not None
        assert not accepts(exact.text, compact), f"{name}: exact took {compact!r}"
        verdict = accepts(flexible.text, compact)
        assert verdict, f"{name}: flexible refused {compact!r}: {verdict.reason}"
    assert tested >= 25, tested


def test_the_issue_example_is_refused_by_the_exact_grammar(corpus_dir):
    """A random-weight model under the old required grammar for Qwen3-Coder wrote this."""
    c = case("Qwen3-Coder", corpus_dir)
    written = (
        "<tool_call>\n\n\n\n\n\n\n\n\n\n\n    \n\t \t\r<function=get_weather>\n"
        "<parameter=location>\nParis\n</parameter>\n</function>\n</tool_call>"
    )
    templates_own = written.replace("\n\n\n\n\n\n\n\n\n\n\n    \n\t \t\r", "\n")
    exact = to_grammar(c.shape, TOOLS, tool_choice="required")
    assert exact is not None
    assert accepts(exact.text, templates_own) and not accepts(exact.text, written)
    assert "ws ::=" not in exact.text  # no free whitespace anywhere: Qwen3-Coder's values are raw or its own JSON
    flexible = to_grammar(c.shape, TOOLS, tool_choice="required", whitespace="flexible")
    assert flexible is not None and accepts(flexible.text, templates_own)
    with pytest.raises(InputError, match="whitespace 'loose' is none of exact, flexible"):
        to_grammar(c.shape, TOOLS, whitespace="loose")


@pytest.mark.parametrize("name", params("reasoning", with_reasoning()))
def test_required_grammar_accepts_reasoning_then_a_call(name, corpus_dir):
    check_expectations(reasoning_then_a_call(case(name, corpus_dir)))


NESTED_TOOL = tool(
    "edit",
    {
        "path": {"type": "string"},
        "options": {
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "none": {"type": "object"}},
            "additionalProperties": False,  # (the template reads it of every object parameter)
        },
        "env": {"type": "object", "additionalProperties": True},
        "anything": {},
    },
    ["path"],
)


def test_exact_indented_json_takes_only_the_templates_indentation(corpus_dir):
    """command-r-plus writes its call list with ``tojson(indent=4)`` inside a list indented by 4: the
    exact grammar takes that at every depth (nested objects and arrays, empty ones as ``{}``/``[]``,
    free-form values) and nothing else, neither other whitespace nor the same JSON on one line, which
    the flexible grammar takes. granite-4.0 (one line, one pair of separators) is exact too."""
    granite = case("ibm-granite-granite-4.0", corpus_dir)
    output = model_output(granite, calls_for(1))
    _, end = turn_span(granite.shape, output, 1)
    grammar = to_grammar(granite.shape, TOOLS, tool_choice="required")
    assert grammar is not None
    check(grammar, [output[:end]], [output[:end].replace('{"name"', '{\r\n\r\n\t\t\n "name"')])
    c = case("CohereForAI-c4ai-command-r-plus-tool_use", corpus_dir)
    assert c.description.calls.json_indent == ("    ", "    ")
    tools = [*TOOLS, NESTED_TOOL]
    nested = (
        "edit",
        {
            "path": "a.txt",
            "options": {"tags": ["x", "y"], "none": {}},
            "env": {"A": {"deep": [[1, {"b": None}], []]}, "B": "c"},
            "anything": [{"k": [True, 1.5]}],
        },
        "call_2",
    )
    # Nested past INDENT_DEPTH_MAX, where whitespace is free again, with room for the indentation.
    deep: Any = [1]
    for key in "abcdefghij":
        deep = {key: deep}
    deepest = ("edit", {"path": "c", "anything": deep}, "call_4")
    empty = ("edit", {"path": "b", "options": {"tags": []}, "env": {}}, "call_3")

    def written_and_not(calls: list[Call]) -> tuple[str, list[str]]:
        """The template's render of ``calls``, and the same with other whitespace: more around a
        call object, none at all (the JSON on one line), a member indented by two spaces less."""
        turn = {"role": "assistant", "content": "", "tool_calls": tool_calls(c.description, calls)}
        output = assistant_output(c.description, c.compiled, [USER], turn, tools)
        _, end = turn_span(c.shape, output, len(calls))
        written = output[:end]
        head, rest = written.split("[", 1)
        body, tail = rest.rsplit("]", 1)
        others = [
            written.replace('{\n        "tool_name"', '{\r\n\r\n\t\t\n "tool_name"'),
            head + "[" + re.sub(r"\n *", "", body) + "]" + tail,
            written.replace('\n            "path"', '\n          "path"'),
        ]
        assert len({written, *others}) == 4
        return written, others

    exact = to_grammar(c.shape, tools, tool_choice="required")
    flexible = to_grammar(c.shape, tools, tool_choice="required", whitespace="flexible")
    assert exact is not None and flexible is not None
    calls = [WEATHER, nested, empty, deepest]
    written, others = written_and_not(calls)
    assert '\n                "tags": [\n                    "x",' in written and '"none": {}' in written
    assert "\n" + " " * 52 + '"a": [\n' + " " * 56 + "1" in written
    check(exact, [written], others)
    check(flexible, [written, *others], [])
    assert [json.loads(call.arguments) for call in Parser(c.description, tools).parse(written).tool_calls] == [
        arguments for _, arguments, _ in calls
    ]
