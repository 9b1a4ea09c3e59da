"""detect/arguments.py on toy templates: arguments as one value (a JSON object, a JSON string, a
Python dict) or one by one, with a form per JSON type, the separator between two, how strings are
escaped, the order, and text written around special strings only."""

from __future__ import annotations

import pytest
from helpers.toy import calls_of, chat, describe, key_value, lit

from analyzer.description import ArgumentForm, Field, JsonArguments, Text, Unknown, pattern_text

NAME = "{{ tc.function.name }}"
JSON_VALUE = "{{ v if v is string else v | tojson }}"
TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")


def each(body: str, separator: str = "", *, items: str = "tc.function.arguments.items()") -> str:
    """Jinja writing ``body`` for every argument (``k``, ``v``) of every call (``tc``)."""
    between = "{% if not loop.first %}" + lit(separator) + "{% endif %}" if separator else ""
    return (
        "{% for tc in m.tool_calls or [] %}<call "
        + NAME
        + ">{% for k, v in "
        + items
        + " %}"
        + between
        + body
        + "{% endfor %}</call>{% endfor %}"
    )


def forms(description) -> dict[str, tuple[str, str]]:
    """json type: (pattern, syntax)."""
    return {f.json_type: (pattern_text(f.pattern), f.syntax) for f in key_value(description).forms}


def test_xml_parameters_one_form_for_every_type():
    d = describe(chat(calls=each('<param name="{{ k }}">' + JSON_VALUE + "</param>", "\n")))
    arguments = key_value(d)
    assert d.format == "tag-kv"
    assert pattern_text(calls_of(d).call) == "<call {name}>{arguments}</call>"
    assert arguments.separator == "\n"
    string = ArgumentForm(
        "string", (Text('<param name="'), Field("key"), Text('">'), Field("value"), Text("</param>")), "raw"
    )
    assert arguments.forms[0] == string
    assert forms(d) == {
        "string": ('<param name="{key}">{value}</param>', "raw"),
        **{t: ('<param name="{key}">{value}</param>', "json") for t in TYPES[1:]},
    }
    assert (arguments.string_escaping, arguments.order, arguments.special_string_wrapper) == (
        "none",
        "as given",
        ("", ""),
    )


def test_a_value_whose_text_the_form_also_writes_is_found_where_the_string_value_stands():
    """The type written beside the value (``type="null">null``): the value is the occurrence placed
    as a string value is, not the first."""
    kind = "{{ 'null' if v is none else 'string' if v is string else 'other' }}"
    d = describe(chat(calls=each('<arg key="{{ k }}" type="' + kind + '">' + JSON_VALUE + "</arg>", "\n")))
    assert forms(d)["null"] == ('<arg key="{key}" type="null">{value}</arg>', "json")


def test_values_printed_as_python_have_python_syntax():
    d = describe(chat(calls=each("<{{ k }}>{{ v }}</{{ k }}>")))
    assert forms(d)["string"] == ("<{key}>{value}</{key}>", "raw")
    assert forms(d)["integer"][1] == "json"
    assert {t: forms(d)[t][1] for t in ("boolean", "null", "object", "array")} == dict.fromkeys(
        ("boolean", "null", "object", "array"), "python"
    )
    assert key_value(d).separator == ""


def test_a_pattern_per_type():
    body = "<param name=\"{{ k }}\" type=\"{{ 'text' if v is string else 'json' }}\">" + JSON_VALUE + "</param>"
    d = describe(chat(calls=each(body)))
    assert forms(d)["string"] == ('<param name="{key}" type="text">{value}</param>', "raw")
    assert forms(d)["integer"] == ('<param name="{key}" type="json">{value}</param>', "json")
    assert forms(d)["array"] == ('<param name="{key}" type="json">{value}</param>', "json")


def test_python_call_syntax():
    """f(a='x', n=1): the name, then the arguments in parentheses."""
    body = "{{ k }}={% if v is string %}'{{ v }}'{% else %}{{ v | tojson }}{% endif %}"
    calls = (
        "{% for tc in m.tool_calls or [] %}" + NAME + "({% for k, v in tc.function.arguments.items() %}"
        "{% if not loop.first %}, {% endif %}" + body + "{% endfor %}){% endfor %}"
    )
    d = describe(chat(calls=calls))
    assert d.format == "python"
    assert pattern_text(calls_of(d).call) == "{name}({arguments})"
    assert key_value(d).separator == ", "
    assert forms(d)["string"] == ("{key}='{value}'", "raw")
    assert forms(d)["integer"] == ("{key}={value}", "json")


def test_strings_escaped_as_json():
    d = describe(chat(calls=each('<param name="{{ k }}">{{ v | tojson }}</param>')))
    assert key_value(d).string_escaping == "json"
    assert forms(d)["string"] == ('<param name="{key}">{value}</param>', "json")


def test_strings_rewritten_some_other_way_have_unknown_escaping():
    body = "<param name=\"{{ k }}\">{{ v | string | replace('\"', '') | replace('\\n', ' ') }}</param>"
    escaping = key_value(describe(chat(calls=each(body)))).string_escaping
    assert escaping == Unknown("strings are rewritten in a way we do not recognise")


def test_arguments_sorted_by_name():
    d = describe(chat(calls=each("<{{ k }}>{{ v }}</{{ k }}>", items="tc.function.arguments | dictsort")))
    assert key_value(d).order == "sorted"


def test_text_around_special_strings_only():
    value = "{% if v is string and ('<' in v or '&' in v) %}<![CDATA[{{ v }}]]>{% else %}{{ v }}{% endif %}"
    d = describe(chat(calls=each('<param name="{{ k }}">' + value + "</param>")))
    assert key_value(d).special_string_wrapper == ("<![CDATA[", "]]>")
    assert forms(d)["string"] == ('<param name="{key}">{value}</param>', "raw")


@pytest.mark.parametrize("engine", ["minijinja", "jinja2"])
def test_arguments_printed_as_a_python_dict(engine):
    calls = "{% for tc in m.tool_calls or [] %}<call>" + NAME + " {{ tc.function.arguments }}</call>{% endfor %}"
    d = describe(chat(calls=calls), engine=engine)
    assert calls_of(d).arguments == JsonArguments("python")
    assert d.format == "tag-json"


def test_arguments_the_renders_do_not_show_are_unknown():
    calls = (
        "{% for tc in m.tool_calls or [] %}<call " + NAME + ">{{ tc.function.arguments | length }}</call>{% endfor %}"
    )
    d = describe(chat(calls=calls))
    assert calls_of(d).arguments == Unknown("no repeating argument unit found between one and two arguments")
    assert d.format == "unknown"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "where no arguments are found, the one-argument render's text stays in the call pattern as a literal "
        "(<call {name}>1</call>: the count), though the two-argument render, which the analysis makes, writes 2 "
        "there; the pattern then describes only calls with one argument"
    ),
)
def test_text_that_changes_with_the_arguments_is_not_a_literal_of_the_call():
    calls = (
        "{% for tc in m.tool_calls or [] %}<call " + NAME + ">{{ tc.function.arguments | length }}</call>{% endfor %}"
    )
    pattern = calls_of(describe(chat(calls=calls))).call
    assert all("1" not in part.text for part in pattern if isinstance(part, Text)), pattern
