"""detect/calls.py on toy templates: the section, the per-call pattern and its fields, the separator
between parallel calls, a call written as one JSON object, calls with no arguments, content beside
calls, and what is unknown when the renders show no call."""

from __future__ import annotations

from helpers.toy import CONTENT, END, HEAD, calls_of, chat, describe, lit

from analyzer.description import (
    Capability,
    Field,
    JsonArguments,
    JsonCall,
    Text,
    Unknown,
    pattern_text,
)


def each_call(body: str, *, separator: str = "") -> str:
    """Jinja writing ``body`` for every call (as ``tc``), ``separator`` between two."""
    between = "{% if not loop.first %}" + lit(separator) + "{% endif %}" if separator else ""
    return "{% for tc in m.tool_calls or [] %}" + between + body + "{% endfor %}"


def section(open_: str, body: str, close: str, separator: str = "") -> str:
    return "{% if m.tool_calls %}" + lit(open_) + each_call(body, separator=separator) + lit(close) + "{% endif %}"


NAME = "{{ tc.function.name }}"
ARGS = "{{ tc.function.arguments | tojson }}"


def test_a_call_written_as_one_json_object_in_tags():
    d = describe(chat())
    calls = calls_of(d)
    assert d.format == "json"
    assert calls.call == (Text("<call>"), Field("call"), Text("</call>"))
    assert (calls.section_open, calls.section_close, calls.separator) == ("", "", "")
    assert calls.json_call == JsonCall(
        ("name",), False, ("arguments",), "object", None, None, 0, (), ("name", "arguments")
    )
    assert calls.arguments == JsonArguments("object")
    assert d.capabilities.parallel_calls == Capability("yes")


def test_section_and_separator_of_a_json_array():
    d = describe(chat(calls=section("<calls>[", "{{ tc.function | tojson }}", "]</calls>", separator=", ")))
    calls = calls_of(d)
    assert (calls.section_open, calls.section_close, calls.separator) == ("<calls>[", "]</calls>", ", ")
    assert calls.call == (Field("call"),)
    assert calls.json_array


def test_section_of_tagged_calls_is_not_a_json_array():
    calls = calls_of(
        describe(
            chat(calls=section("<calls>\n", "<call>{{ tc.function | tojson }}</call>", "\n</calls>", separator="\n"))
        )
    )
    assert (calls.section_open, calls.section_close, calls.separator) == ("<calls>\n", "\n</calls>", "\n")
    assert not calls.json_array


def test_name_and_arguments_as_fields_of_a_tag():
    d = describe(chat(calls=each_call('<call name="' + NAME + '">' + ARGS + "</call>")))
    calls = calls_of(d)
    assert d.format == "tag-json"
    assert calls.call == (Text('<call name="'), Field("name"), Text('">'), Field("arguments"), Text("</call>"))
    assert calls.json_call is None and calls.arguments == JsonArguments("object")


def test_arguments_written_as_a_json_string():
    d = describe(chat(calls=each_call("<call>" + NAME + ":{{ tc.function.arguments | tojson | tojson }}</call>")))
    assert calls_of(d).arguments == JsonArguments("string")
    assert pattern_text(calls_of(d).call) == "<call>{name}:{arguments}</call>"


def test_a_counter_is_an_index_field_and_the_ids_are_generated():
    calls = calls_of(
        describe(chat(calls=each_call("<call>functions." + NAME + ":{{ loop.index0 }} " + ARGS + "</call>")))
    )
    assert pattern_text(calls.call) == "<call>functions.{name}:{index} {arguments}</call>"
    assert Field("index", 0) in calls.call
    assert calls.ids.written == "generated"


def test_a_counter_from_one_records_its_base():
    calls = calls_of(describe(chat(calls=each_call("<call>" + NAME + "#{{ loop.index }} " + ARGS + "</call>"))))
    assert Field("index", 1) in calls.call


def test_the_id_as_given_is_a_field():
    calls = calls_of(describe(chat(calls=each_call("[CALL]" + NAME + "[ID]{{ tc.id }}[ARGS]" + ARGS))))
    assert pattern_text(calls.call) == "[CALL]{name}[ID]{id}[ARGS]{arguments}"
    assert calls.ids.written == "as given" and calls.ids.accepted == ("openai", "alnum9")


def test_the_end_of_the_id_is_an_id_field():
    """A template may keep only the last nine characters of an id."""
    calls = calls_of(describe(chat(calls=each_call("[CALL]" + NAME + "[ID]{{ tc.id[-9:] }}[ARGS]" + ARGS))))
    assert pattern_text(calls.call) == "[CALL]{name}[ID]{id}[ARGS]{arguments}"
    assert calls.ids.written == "as given"


def test_a_counter_in_a_json_call():
    body = '{"index": "{{ loop.index0 }}", "name": "' + NAME + '", "arguments": ' + ARGS + "}"
    calls = calls_of(describe(chat(calls=section("[", body, "]", separator=", "))))
    assert calls.json_call is not None
    assert (calls.json_call.index_path, calls.json_call.index_base) == (("index",), 0)
    assert calls.json_call.constants == ()
    assert calls.ids.written == "generated"


def test_the_id_in_a_json_call():
    body = '{"name": "' + NAME + '", "arguments": ' + ARGS + ', "id": "{{ tc.id }}"}'
    calls = calls_of(describe(chat(calls=each_call("<call>" + body + "</call>"))))
    assert calls.json_call is not None and calls.json_call.id_path == ("id",)
    assert calls.json_call.key_order == ("name", "arguments", "id")
    assert calls.ids.written == "as given"


def test_a_json_call_with_nested_paths_and_constants():
    body = '{"type": "function", "function": {"name": "' + NAME + '", "parameters": ' + ARGS + "}}"
    calls = calls_of(describe(chat(calls=each_call("<call>" + body + "</call>"))))
    json_call = calls.json_call
    assert json_call is not None
    assert json_call.name_path == ("function", "name") and json_call.arguments_path == ("function", "parameters")
    assert json_call.constants == ((("type",), '"function"'),)


def test_a_json_call_keyed_by_the_name():
    calls = calls_of(describe(chat(calls=each_call('<call>{"' + NAME + '": ' + ARGS + "}</call>"))))
    assert calls.json_call is not None and calls.json_call.name_is_key
    assert calls.json_call.key_order == ()


def test_a_call_with_no_arguments_written_its_own_way():
    body = '<call name="' + NAME + '"{% if tc.function.arguments %}>' + ARGS + "</call>{% else %}/>{% endif %}"
    calls = calls_of(describe(chat(calls=each_call(body))))
    assert pattern_text(calls.call) == '<call name="{name}">{arguments}</call>'
    assert calls.no_arguments == (Text('<call name="'), Field("name"), Text('"/>'))


def test_parallel_calls_the_template_refuses():
    calls = (
        "{% if m.tool_calls and m.tool_calls | length > 1 %}{{ raise_exception('one call at a time') }}{% endif %}"
        + each_call("<call>{{ tc.function | tojson }}</call>")
    )
    d = describe(chat(calls=calls))
    assert d.capabilities.parallel_calls.status == "refused"
    assert "one call at a time" in d.capabilities.parallel_calls.message
    assert isinstance(calls_of(d).separator, Unknown)
    assert calls_of(d).call == (Text("<call>"), Field("call"), Text("</call>"))


def test_parallel_calls_of_which_only_the_first_is_written():
    calls = "{% if m.tool_calls %}<call>{{ m.tool_calls[0].function | tojson }}</call>{% endif %}"
    d = describe(chat(calls=calls))
    assert d.capabilities.parallel_calls == Capability("dropped", "only the first of two parallel calls is written")
    assert calls_of(d).separator == Unknown("parallel calls are not written")


def test_content_beside_calls_kept():
    assert calls_of(describe(chat())).content_before_calls == "kept"


def test_content_beside_calls_dropped():
    assistant = (
        HEAD
        + "{% if not m.tool_calls %}"
        + CONTENT
        + "{% endif %}"
        + each_call("<call>{{ tc.function | tojson }}</call>")
        + END
    )
    assert calls_of(describe(chat(assistant))).content_before_calls == "dropped"


def test_calls_beside_content_dropped():
    assistant = (
        HEAD
        + CONTENT
        + "{% if not m.content %}"
        + each_call("<call>{{ tc.function | tojson }}</call>")
        + "{% endif %}"
        + END
    )
    assert calls_of(describe(chat(assistant))).content_before_calls == "calls dropped"


def test_no_calls_in_history_is_unknown_and_format_none():
    d = describe(chat(calls=""))
    assert d.calls == Unknown("tool calls in history are not written")
    assert d.format == "none"
    assert d.capabilities.tool_calls.status == "no"
    assert d.results == Unknown("the template writes no tool calls")


def test_calls_the_template_refuses_are_unknown_with_its_words():
    d = describe(chat(calls="{% if m.tool_calls %}{{ raise_exception('tool calls are not supported') }}{% endif %}"))
    assert isinstance(d.calls, Unknown) and "tool calls are not supported" in d.calls.reason
    assert d.format == "none"


def test_a_closer_written_only_after_several_calls():
    """The closer follows the last of two or more calls and never a single one: written from two calls."""
    body = "<call>" + NAME + " " + ARGS + "</call>"
    close = "{% if m.tool_calls | length > 1 %}" + lit("</calls>") + "{% endif %}"
    calls_tpl = "{% if m.tool_calls %}" + lit("<calls>") + each_call(body, separator="\n") + close + "{% endif %}"
    calls = calls_of(describe(chat(HEAD + CONTENT + calls_tpl + END)))
    assert (calls.section_open, calls.section_close, calls.section_close_from) == ("<calls>", "</calls>", 2)
    plain = calls_of(describe(chat(HEAD + CONTENT + section("<calls>", body, "</calls>", "\n") + END)))
    assert (plain.section_close, plain.section_close_from) == ("</calls>", 1)
