"""detect/names.py on toy templates: how function and argument names are written (as is, with XML
entities, with JSON escapes), what is unknown when the renders do not show it, and the parser and
grammar made from the description reading and writing names as the template does."""

from __future__ import annotations

import json

from helpers.gbnf_check import Checker
from helpers.grammar import tool
from helpers.toy import calls_of, chat, describe, key_value

from analyzer.backends.gbnf import to_grammar
from analyzer.backends.parser import Parser
from analyzer.description import Escaping, Unknown, dumps, loads
from analyzer.lower import lower

# Kimi-K3's way: names in XML attributes, '&' and '"' as entities (in that order, so '&' is not
# escaped twice), nothing else changed.
ATTRIBUTE = "{{ X | replace('&', '&amp;') | replace('\"', '&quot;') }}"
ENTITIES = Escaping((('"', "&quot;"), ("&", "&amp;")))
JSON_ESCAPES = Escaping((('"', '\\"'), ("\\", "\\\\")))


def calls(name: str, key: str) -> str:
    """Calls as tags, the name and each argument's key written by ``name`` and ``key`` (Jinja with
    ``X`` for the name), the value raw."""
    return (
        '{% for tc in m.tool_calls or [] %}<call name="'
        + name.replace("X", "tc.function.name")
        + '">{% for k, v in tc.function.arguments.items() %}<arg key="'
        + key.replace("X", "k")
        + '">{{ v }}</arg>{% endfor %}</call>{% endfor %}'
    )


def escapings(source: str) -> tuple[object, object]:
    d = describe(chat(calls=source))
    return calls_of(d).name_escaping, key_value(d).key_escaping


def test_names_written_as_is():
    assert escapings(calls("{{ X }}", "{{ X }}")) == ("none", "none")


def test_names_written_with_xml_entities():
    assert escapings(calls(ATTRIBUTE, ATTRIBUTE)) == (ENTITIES, ENTITIES)


def test_names_written_with_json_escapes_between_the_templates_quotes():
    source = calls("{{ X | tojson }}", "{{ X | tojson }}").replace('name="', "name=").replace('key="', "key=")
    source = source.replace('}}">', "}}>")
    assert escapings(source) == (JSON_ESCAPES, JSON_ESCAPES)


def test_function_and_argument_names_are_told_apart():
    assert escapings(calls(ATTRIBUTE, "{{ X }}")) == (ENTITIES, "none")


def test_a_template_that_refuses_such_a_name_leaves_the_escaping_unknown():
    refuse = "{% if '\"' in X %}{{ raise_exception('bad name: ' + X) }}{% endif %}{{ X }}"
    name, key = escapings(calls(refuse, "{{ X }}"))
    assert isinstance(name, Unknown) and "does not render" in name.reason and "bad name" in name.reason
    assert key == "none"


def test_a_name_written_two_ways_leaves_the_escaping_unknown():
    twice = '{{ X }}" alias="' + ATTRIBUTE
    name, _ = escapings(calls(twice, "{{ X }}"))
    assert isinstance(name, Unknown) and "different escapings" in name.reason


def test_the_escaping_survives_the_description_json():
    d = describe(chat(calls=calls(ATTRIBUTE, ATTRIBUTE)))
    assert loads(dumps(d)) == d
    assert json.loads(dumps(d))["calls"]["name_escaping"] == {
        "kind": "escaping",
        "replaced": [['"', "&quot;"], ["&", "&amp;"]],
    }


QUOTED = tool('q"a&b', {'k"1': {"type": "string"}}, ['k"1'])


def test_the_parser_reads_escaped_names_back_and_the_grammar_writes_them_escaped():
    d = describe(chat(calls=calls(ATTRIBUTE, ATTRIBUTE)))
    written = '<call name="q&quot;a&amp;b"><arg key="k&quot;1">v</arg></call>'
    message = Parser(d, [QUOTED]).parse(written)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [('q"a&b', {'k"1': "v"})]
    assert message.errors == []
    # A model that writes a declared name unescaped is still understood.
    message = Parser(d, [QUOTED]).parse('<call name="q"a&b"><arg key="k"1">v</arg></call>')
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [('q"a&b', {'k"1': "v"})]
    # A name nobody declared is read back too, escapes and all.
    message = Parser(d, []).parse('<call name="x&quot;y"><arg key="a&amp;b">v</arg></call>')
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [('x"y', {"a&b": "v"})]
    grammar = to_grammar(lower(d), [QUOTED], tool_choice="required")
    assert grammar is not None
    checker = Checker(grammar.text)
    assert checker.check(written)
    assert not checker.check(written.replace("q&quot;a&amp;b", 'q"a&b'))
    assert not checker.check(written.replace("k&quot;1", 'k"1'))


def test_the_parser_reads_json_escaped_names_back():
    source = calls("{{ X | tojson }}", "{{ X | tojson }}").replace('name="', "name=").replace('key="', "key=")
    d = describe(chat(calls=source.replace('}}">', "}}>")))
    written = '<call name="q\\"a&b"><arg key="k\\"1">v</arg></call>'
    message = Parser(d, [QUOTED]).parse(written)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [('q"a&b', {'k"1': "v"})]
    message = Parser(d, []).parse('<call name="x\\"y"><arg key="a\\\\b">v</arg></call>')
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [('x"y', {"a\\b": "v"})]
