"""The format description: exact serialisation, strict loading, pattern helpers."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.description import (
    FIELD_NAMES,
    SCHEMA_VERSION,
    ArgumentForm,
    CallIds,
    Calls,
    Capabilities,
    Capability,
    Field,
    FormatDescription,
    InputForm,
    JsonArguments,
    JsonCall,
    KeyValueArguments,
    Reasoning,
    Results,
    TemplateRef,
    Text,
    Turn,
    Unknown,
    dumps,
    from_dict,
    literals,
    loads,
    pattern_text,
    to_dict,
)
from analyzer.errors import DescriptionError, InputError

KIMI_CALL = (
    Text("<|tool_call_begin|>functions."),
    Field("name"),
    Text(":"),
    Field("index", base=0),
    Text("<|tool_call_argument_begin|>"),
    Field("arguments"),
    Text("<|tool_call_end|>"),
)


def capabilities() -> Capabilities:
    return Capabilities(
        tools=Capability("yes"),
        tool_calls=Capability("yes"),
        parallel_calls=Capability("refused", "This model only supports single tool-calls at once!"),
        system_role=Capability("yes"),
        object_arguments=Capability("yes"),
        string_arguments=Capability("dropped"),
        content_none=Capability("unknown"),
        thinking_toggle=Capability("no"),
    )


def json_call_description() -> FormatDescription:
    """A JSON call format: with ``key_value_description`` every node type is used."""
    return FormatDescription(
        schema_version=SCHEMA_VERSION,
        template=TemplateRef(name="demo", sha256="ab" * 32, engine="minijinja"),
        format="tag-json",
        turn=Turn(
            generation_prompt="<|im_start|>assistant\n",
            history_prefix="",
            content_open="",
            content_close="",
            end="<|im_end|>\n",
            stop=("<|im_end|>", "<|endoftext|>"),
        ),
        reasoning=Reasoning(
            open="<think>\n",
            close="\n</think>\n\n",
            field="reasoning_content",
            forced_open=False,
            empty_block="<think>\n\n</think>\n\n",
            toggle=Unknown("no toggle variable changed the prompt"),
            scope="turns with tool calls",
            opened_when_thinking=True,
        ),
        calls=Calls(
            section_open="",
            section_close="",
            separator="\n",
            call=(Text("<tool_call>\n"), Field("call"), Text("\n</tool_call>")),
            json_call=JsonCall(
                name_path=("function", "name"),
                name_is_key=False,
                arguments_path=("function", "arguments"),
                arguments_encoding="string",
                id_path=("id",),
                index_path=None,
                index_base=1,
                constants=((("type",), '"function"'), (("function", "strict"), "true")),
                key_order=("id", "type", "function"),
            ),
            arguments=JsonArguments("string"),
            ids=CallIds(
                written="as given",
                accepted=("openai", "alnum9"),
                refused=(("short", "Tool call IDs should be alphanumeric strings with length 9!"),),
            ),
            content_before_calls="kept",
            no_arguments=(Text('<tool_call>\n{"name": "'), Field("name"), Text('", "arguments": {}}\n</tool_call>')),
            json_array=False,
        ),
        results=Results(
            role="tool",
            open=(Text('<tool_response name="'), Field("name"), Text('">\n')),
            close=(Text("\n</tool_response>"),),
            separator="\n",
            group_open=(Text("<|im_start|>user\n"),),
            group_close=(),
            carries_id=False,
            carries_name=True,
            json_content="as is",
            linked_by="order",
            rendered_as="user turn",
        ),
        capabilities=capabilities(),
        input_form=InputForm(
            content_with_calls=None, arguments_as_string=True, id_form="alnum9", tool_descriptions=True
        ),
        warnings=("content None raises", "é ünïcode kept"),
    )


def key_value_description() -> FormatDescription:
    return FormatDescription(
        schema_version=SCHEMA_VERSION,
        template=TemplateRef(name="kimi", sha256="0" * 64, engine="jinja2"),
        format="tag-json",
        turn=Turn(
            generation_prompt=Unknown("the template raised"),
            history_prefix="",
            content_open="",
            content_close="",
            end=Unknown("no turn end"),
            stop=(),
        ),
        reasoning=Unknown("no reasoning field is read"),
        calls=Calls(
            section_open="<|tool_calls_section_begin|>",
            section_close="<|tool_calls_section_end|>",
            separator="",
            call=KIMI_CALL,
            json_call=None,
            arguments=KeyValueArguments(
                separator=", ",
                forms=(ArgumentForm("string", (Field("key"), Text(": "), Field("value")), "python"),),
                string_escaping=Unknown("no string argument"),
            ),
            ids=Unknown("ids are not written"),
            content_before_calls=Unknown("no content rendered"),
            no_arguments=Unknown("a call with no arguments does not render"),
            json_array=False,
        ),
        results=Unknown("results are not rendered"),
        capabilities=capabilities(),
        input_form=InputForm(
            content_with_calls="", arguments_as_string=False, id_form="openai", tool_descriptions=False
        ),
    )


ALL_DESCRIPTIONS = [json_call_description, key_value_description]


# --------------------------------------------------------------------------- round trips


def test_every_node_type_is_exercised() -> None:
    def kinds(data: object) -> set[str]:
        if isinstance(data, dict):
            return {data["kind"]} | set().union(*(kinds(v) for v in data.values()))
        if isinstance(data, list):
            return set().union(*(kinds(v) for v in data)) if data else set()
        return set()

    seen = kinds(to_dict(json_call_description())) | kinds(to_dict(key_value_description()))
    assert seen == {
        "unknown",
        "text",
        "field",
        "json_arguments",
        "argument_form",
        "key_value_arguments",
        "json_call",
        "call_ids",
        "calls",
        "turn",
        "reasoning",
        "results",
        "capability",
        "capabilities",
        "template",
        "format_description",
        "input_form",
    }


@pytest.mark.parametrize("make", ALL_DESCRIPTIONS)
def test_to_dict_from_dict_round_trip(make) -> None:
    description = make()
    data = to_dict(description)
    back = from_dict(data)
    assert back == description
    assert type(back) is FormatDescription
    assert hash(back) == hash(description)  # all tuples: descriptions hash


@pytest.mark.parametrize("make", ALL_DESCRIPTIONS)
def test_dumps_loads_round_trip(make) -> None:
    description = make()
    text = dumps(description)
    assert loads(text) == description
    assert dumps(loads(text)) == text


def test_results_rewritten_loads_again() -> None:
    # The results detector says "rewritten" when a template writes JSON content neither as is nor
    # quoted; a description saved with it must load again.
    description = json_call_description()
    assert isinstance(description.results, Results)
    rewritten = replace(description, results=replace(description.results, json_content="rewritten"))
    assert loads(dumps(rewritten)) == rewritten


def test_to_dict_exact_shapes() -> None:
    assert to_dict(Text("<a>")) == {"kind": "text", "text": "<a>"}
    assert to_dict(Field("index", base=1)) == {"kind": "field", "name": "index", "base": 1}
    assert to_dict(Field("name")) == {"kind": "field", "name": "name", "base": 0}
    assert to_dict(Unknown("why")) == {"kind": "unknown", "reason": "why"}
    assert to_dict(Capability("no")) == {"kind": "capability", "status": "no", "message": ""}
    assert to_dict(KIMI_CALL[:2]) == [
        {"kind": "text", "text": "<|tool_call_begin|>functions."},
        {"kind": "field", "name": "name", "base": 0},
    ]
    call = to_dict(json_call_description().calls.json_call)
    assert call["constants"] == [[["type"], '"function"'], [["function", "strict"], "true"]]
    assert call["index_path"] is None
    assert call["name_path"] == ["function", "name"]


def test_from_dict_restores_nested_tuples() -> None:
    call = from_dict(to_dict(json_call_description().calls.json_call))
    assert call.constants == ((("type",), '"function"'), (("function", "strict"), "true"))
    assert isinstance(call.constants[0][0], tuple)
    assert call.id_path == ("id",)


def test_dumps_is_sorted_and_stable() -> None:
    text = dumps(json_call_description())
    assert text.endswith("}\n")
    assert text == dumps(json_call_description())
    data = json.loads(text)
    assert text == json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    # keys sorted at the top level and inside nodes, independent of the dataclass field order
    assert list(data) == sorted(data)
    assert list(data)[:4] == ["bound_variables", "calls", "capabilities", "format"]
    assert list(data["turn"]) == [
        "call_end",
        "content_close",
        "content_open",
        "end",
        "final_end",
        "generation_prompt",
        "history_prefix",
        "kind",
        "stop",
    ]
    assert "é ünïcode kept" in text  # not \u-escaped
    assert data["schema_version"] == SCHEMA_VERSION == 2


def test_dumps_exact_small_node_layout() -> None:
    description = key_value_description()
    text = dumps(description)
    assert '  "results": {\n    "kind": "unknown",\n    "reason": "results are not rendered"\n  },\n' in text
    assert '  "reasoning": {\n    "kind": "unknown",\n    "reason": "no reasoning field is read"\n  },\n' in text
    assert '  "warnings": []\n}\n' in text


# --------------------------------------------------------------------------- strict loading


def _assert_one_line_description_error(text: str, expected: str) -> None:
    with pytest.raises(DescriptionError) as info:
        loads(text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(expected), message
    assert isinstance(info.value, InputError)
    assert info.value.exit_code == 2


def test_loads_rejects_non_json() -> None:
    _assert_one_line_description_error("{not json", "format description is not JSON: ")
    _assert_one_line_description_error("", "format description is not JSON: ")


def test_loads_rejects_wrong_schema_version() -> None:
    data = to_dict(json_call_description())
    data["schema_version"] = 1  # the last version, whose reasoning toggle was a bare name
    _assert_one_line_description_error(json.dumps(data), "format description must have schema_version 2")
    del data["schema_version"]
    _assert_one_line_description_error(json.dumps(data), "format description must have schema_version 2")
    _assert_one_line_description_error("[]", "format description must have schema_version 2")
    _assert_one_line_description_error('"text"', "format description must have schema_version 2")


@pytest.mark.parametrize("version", [2.0, "2"])
def test_loads_rejects_a_schema_version_that_is_not_the_integer_2(version: object) -> None:
    data = to_dict(json_call_description())
    data["schema_version"] = version
    _assert_one_line_description_error(json.dumps(data), "format description must have schema_version 2")


def test_loads_rejects_unknown_kind() -> None:
    data = to_dict(json_call_description())
    data["calls"]["call"][1]["kind"] = "slot"
    _assert_one_line_description_error(json.dumps(data), "unknown node kind 'slot'")


def test_loads_rejects_missing_kind() -> None:
    data = to_dict(json_call_description())
    del data["turn"]["kind"]
    _assert_one_line_description_error(json.dumps(data), "unknown node kind None")


def test_loads_rejects_unexpected_field() -> None:
    data = to_dict(json_call_description())
    data["calls"]["json_call"]["extra_path"] = ["x"]
    data["calls"]["json_call"]["another"] = 1
    _assert_one_line_description_error(
        json.dumps(data), "unexpected field(s) ['another', 'extra_path'] in 'json_call' node"
    )


def test_loads_rejects_missing_field() -> None:
    data = to_dict(json_call_description())
    del data["results"]["linked_by"]
    _assert_one_line_description_error(json.dumps(data), "malformed 'results' node: ")


def test_loads_rejects_another_node_at_the_top() -> None:
    data = to_dict(Turn(generation_prompt="", history_prefix="", content_open="", content_close="", end="", stop=()))
    data["schema_version"] = SCHEMA_VERSION
    # schema_version is not a Turn field
    _assert_one_line_description_error(json.dumps(data), "unexpected field(s) ['schema_version'] in 'turn' node")


def test_from_dict_passes_plain_values_through() -> None:
    assert from_dict(3) == 3
    assert from_dict(None) is None
    assert from_dict("x") == "x"
    assert from_dict([1, [2, 3]]) == (1, (2, 3))


# --------------------------------------------------------------------------- pattern helpers


def test_pattern_text() -> None:
    assert pattern_text(KIMI_CALL) == (
        "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"
    )
    assert pattern_text((Text("<tool_call>\n"), Field("call"), Text("\n</tool_call>"))) == (
        "<tool_call>\n{call}\n</tool_call>"
    )
    assert pattern_text(()) == ""
    assert pattern_text((Field("index", base=1),)) == "{index}"


def test_literals() -> None:
    assert literals(KIMI_CALL) == (
        "<|tool_call_begin|>functions.",
        ":",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    )
    # empty text parts are not literals
    assert literals((Text(""), Field("key"), Text("="), Field("value"), Text(""))) == ("=",)
    assert literals((Field("call"),)) == ()
    assert literals(()) == ()


def test_field_names() -> None:
    assert FIELD_NAMES == ("name", "id", "index", "arguments", "call", "key", "value")


# --------------------------------------------------------------------------- property


parts = st.one_of(
    st.builds(Text, st.text(max_size=20)),
    st.builds(Field, st.sampled_from(FIELD_NAMES), st.integers(min_value=-3, max_value=10)),
)
patterns = st.lists(parts, max_size=8).map(tuple)


@given(patterns)
def test_pattern_round_trip(pattern: tuple) -> None:
    data = to_dict(pattern)
    assert isinstance(data, list)
    assert from_dict(data) == pattern
    # through JSON text as well
    assert from_dict(json.loads(json.dumps(data, ensure_ascii=False))) == pattern
    assert "".join(literals(pattern)) == "".join(p.text for p in pattern if isinstance(p, Text))


@given(patterns)
def test_pattern_round_trip_inside_a_description(pattern: tuple) -> None:
    description = key_value_description()
    calls = description.calls
    changed = FormatDescription(
        schema_version=description.schema_version,
        template=description.template,
        format=description.format,
        turn=description.turn,
        reasoning=description.reasoning,
        calls=Calls(
            calls.section_open,
            calls.section_close,
            calls.separator,
            pattern,
            calls.json_call,
            calls.arguments,
            calls.ids,
            calls.content_before_calls,
            calls.no_arguments,
            calls.json_array,
        ),
        results=description.results,
        capabilities=description.capabilities,
        input_form=description.input_form,
    )
    assert loads(dumps(changed)) == changed


def test_loads_rejects_a_value_outside_an_enumeration() -> None:
    data = json.loads(dumps(json_call_description()))
    data["capabilities"]["tools"]["status"] = "banana"
    _assert_one_line_description_error(json.dumps(data), "field 'status' of 'capability' node has the wrong type")
    data = json.loads(dumps(json_call_description()))
    data["results"]["linked_by"] = "magic"
    _assert_one_line_description_error(json.dumps(data), "field 'linked_by' of 'results' node has the wrong type")
