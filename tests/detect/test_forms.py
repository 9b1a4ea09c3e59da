"""detect/forms.py (and the analysis around it) on toy templates: which input forms the template takes
(arguments as an object or a JSON string, content "" or None, id shapes, a system message), what it
refuses in its own words, calls written only when a message follows, variables of its own, and
templates that need to append to lists."""

from __future__ import annotations

from helpers.toy import CONTENT, END, HEAD, JSON_CALLS, TOOLS, calls_of, chat, describe

from analyzer.description import Capability, JsonArguments

REFUSED = "toy: template raised: "


def calls_checking(condition: str, message: str, body: str = "<call>{{ tc.function | tojson }}</call>") -> str:
    return (
        "{% for tc in m.tool_calls or [] %}{% if "
        + condition
        + " %}{{ raise_exception('"
        + message
        + "') }}{% endif %}"
        + body
        + "{% endfor %}"
    )


def test_the_plainest_form_when_the_template_takes_every_form():
    d = describe(chat())
    form = d.input_form
    assert (form.content_with_calls, form.arguments_as_string, form.id_form, form.tool_descriptions) == (
        "",
        False,
        "openai",
        True,
    )
    capabilities = d.capabilities
    assert capabilities.object_arguments == Capability("yes")
    assert capabilities.content_none == Capability("yes")
    assert capabilities.system_role == Capability("yes")
    assert d.warnings == () and d.bound_variables == ()


def test_arguments_given_as_a_string_are_written_differently():
    """tojson of a JSON string quotes it again: the template takes both, and writes them differently."""
    assert describe(chat()).capabilities.string_arguments.status == "differs"


def test_arguments_the_template_takes_only_as_a_json_string():
    calls = calls_checking(
        "tc.function.arguments is not string",
        "arguments must be a JSON string",
        "<call>{{ tc.function.name }} {{ tc.function.arguments }}</call>",
    )
    d = describe(chat(calls=calls))
    assert d.input_form.arguments_as_string
    assert d.capabilities.object_arguments == Capability("refused", REFUSED + "arguments must be a JSON string")
    assert d.capabilities.string_arguments == Capability("yes")
    assert calls_of(d).arguments == JsonArguments("object")  # the string is written as it is: JSON text


def test_ids_of_one_shape_only():
    d = describe(chat(calls=calls_checking("tc.id | length != 9", "ids must be 9 characters")))
    assert d.input_form.id_form == "alnum9"
    ids = calls_of(d).ids
    assert ids.accepted == ("alnum9",)
    assert ids.refused == (("openai", REFUSED + "ids must be 9 characters"),)


def test_a_system_message_refused_in_the_templates_words():
    d = describe(chat(system="{{ raise_exception('no system role') }}"))
    assert d.capabilities.system_role == Capability("refused", REFUSED + "no system role")


def test_a_system_message_that_is_not_written():
    assert describe(chat(system="")).capabilities.system_role == Capability(
        "dropped", "the system message is not written"
    )


def test_content_none_refused():
    assistant = (
        HEAD
        + "{% if m.content is none %}{{ raise_exception('content must be a string') }}{% endif %}"
        + CONTENT
        + JSON_CALLS
        + END
    )
    d = describe(chat(assistant))
    assert d.input_form.content_with_calls == ""
    assert d.capabilities.content_none == Capability("refused", REFUSED + "content must be a string")


def test_content_none_written_as_text():
    d = describe(chat(HEAD + "{{ m.content }}" + JSON_CALLS + END))
    assert d.capabilities.content_none == Capability("differs", "content None is written as the text 'None'")


def test_calls_written_only_when_a_message_follows():
    """A final assistant message is a prefill to this template: its calls show once a user message follows."""
    d = describe(chat(HEAD + CONTENT + "{% if not loop.last %}" + JSON_CALLS + "{% endif %}" + END))
    assert any("written only when another message follows" in w for w in d.warnings)
    assert d.capabilities.tool_calls == Capability("yes")
    assert calls_of(d).call == calls_of(describe(chat())).call


def test_variables_of_the_templates_own_are_bound_and_named():
    d = describe(chat(before="{{ custom.header }}" + TOOLS))
    assert d.bound_variables == ("custom",)
    assert d.warnings == ("the template reads variables of its own, bound to empty strings: custom",)
    assert d.capabilities.tool_calls == Capability("yes")


def test_a_template_that_appends_to_a_list_is_analysed_with_list_mutation():
    calls = (
        "{% set names = [] %}{% for tc in m.tool_calls or [] %}{% set _ = names.append(tc.function.name) %}"
        "{% endfor %}{% if names %}<calls>{{ names | join(',') }}</calls>{% endif %}"
    )
    d = describe(chat(calls=calls))
    assert d.template.engine == "jinja2-mutable"
    assert any("modify lists" in w for w in d.warnings)
    assert d.capabilities.tool_calls == Capability("yes")


# --------------------------------------------------------------------------- content given as parts

PARTS_USER = (
    "<|turn|>user\n{% if m.content is string %}{{ m.content }}{% else %}"
    "{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}<|end|>\n"
)
PARTS_ASSISTANT = (
    HEAD + "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}"
    "{% endif %}" + JSON_CALLS + END
)


def test_a_template_that_reads_content_parts_takes_them():
    assert describe(chat(PARTS_ASSISTANT, user=PARTS_USER)).capabilities.content_parts == Capability("yes")


def test_a_template_that_writes_the_list_is_told_apart():
    """``{{ m.content }}`` of a list writes the list's Python text: not the text a client meant."""
    assert describe(chat()).capabilities.content_parts == Capability(
        "differs", "content parts are written as the list itself (its Python text), not their text"
    )


def test_a_template_that_reads_parts_for_users_only_does_not_take_them():
    """Parts are passed as they are only when every role reads them: here assistant content would be
    written as a list."""
    assert describe(chat(user=PARTS_USER)).capabilities.content_parts.status == "differs"


def test_a_template_that_fails_on_a_list_says_how():
    d = describe(chat(user="<|turn|>user\n{{ m.content.strip() }}<|end|>\n"))
    assert d.capabilities.content_parts.status == "error" and d.capabilities.content_parts.message


def test_a_template_that_drops_parts_is_told_apart():
    d = describe(chat(user="<|turn|>user\n{% if m.content is string %}{{ m.content }}{% endif %}<|end|>\n"))
    assert d.capabilities.content_parts == Capability("dropped", "text given as content parts is not written")


def test_content_parts_on_corpus_templates(corpus_dir):
    """The templates the issue names, as the analysis finds them: Qwen3 fails on a list (the 400 serve
    gave), Llama 3.1 writes its Python text (the repr in the prompt), Kimi K2 and Mistral Small 3.2
    read parts."""
    from analyzer.analysis import analyze
    from analyzer.sources import load_template

    def found(name: str) -> Capability:
        return analyze(load_template(str(corpus_dir / f"{name}.jinja"))).capabilities.content_parts

    qwen3 = found("Qwen-Qwen3-0.6B")
    assert qwen3.status == "error" and "'list' object has no attribute 'startswith'" in qwen3.message
    assert found("meta-llama-Llama-3.1-8B-Instruct").status == "differs"
    assert found("mistralai-Mistral-Nemo-Instruct-2407").status == "error"
    assert found("moonshotai-Kimi-K2") == found("Mistral-Small-3.2-24B-Instruct-2506") == Capability("yes")
