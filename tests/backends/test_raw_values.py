"""Raw values in a Python-call format whose template writes strings unquoted, with nothing after them.

No corpus template writes ``f(path=notes/a.txt, n=2)``, so this one is ours (templates/). Its
strings end where the next argument or the call does: the parser must read one up to the next declared
argument's key or the call's closer (a comma, a ``=``, a ``)`` or a newline inside it stays its own),
streamed as in one piece; the grammar must still hold the schema there (an enum is one of its values).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers.gbnf_check import Checker
from helpers.golden import assistant_output

from analyzer.analysis import analyze
from analyzer.backends.gbnf import to_grammar
from analyzer.backends.parser import Message, Parser, apply
from analyzer.description import FormatDescription, KeyValueArguments
from analyzer.lower import lower
from analyzer.render.engines import compile_template
from analyzer.render.sandbox import CompiledTemplate
from analyzer.template import Template

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "python-call-raw-strings.jinja"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "mode": {"type": "string", "enum": ["create", "append"]},
                    "lines": {"type": "integer"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_unit",
            "description": "Choose the unit",
            "parameters": {
                "type": "object",
                "properties": {"unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
                "required": ["unit"],
            },
        },
    },
]
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "a path and a multi-line text": [("write_file", {"path": "notes/a.txt", "content": "line1\nline2"})],
    "commas, '=' and ')' inside a string": [
        ("write_file", {"path": "b.py", "content": "f(a, b=2)\nx = g(c), d", "mode": "append"})
    ],
    "a string that starts like a number": [("write_file", {"path": "3 apples, 2 pears", "lines": 3})],
    "parallel calls": [("write_file", {"path": "x"}), ("set_unit", {"unit": "kelvin"})],
    "an enum": [("set_unit", {"unit": "celsius"})],
}


@cache
def _template() -> tuple[FormatDescription, CompiledTemplate]:
    template = Template(source=TEMPLATE.read_text(encoding="utf-8"), name=TEMPLATE.stem, origin="test")
    return analyze(template), compile_template(template)


def _output(calls: list[tuple[str, dict[str, Any]]]) -> str:
    description, compiled = _template()
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}} for name, args in calls],
    }
    output = assistant_output(description, compiled, [{"role": "user", "content": "hi"}], turn, TOOLS)
    return output[: output.index("<|end|>")]


def test_the_template_writes_strings_raw_with_nothing_after_them():
    description, _ = _template()
    arguments = description.calls.arguments  # type: ignore[union-attr]
    assert isinstance(arguments, KeyValueArguments)
    string = next(form for form in arguments.forms if form.json_type == "string")
    assert string.syntax == "raw" and [type(item).__name__ for item in string.pattern][-1] == "Field"


@pytest.mark.parametrize("case", CASES)
def test_raw_strings_are_read_up_to_the_next_argument_or_the_calls_end(case):
    description, _ = _template()
    calls = CASES[case]
    output = _output(calls)
    parser = Parser(description, TOOLS)
    message = parser.parse(output)
    assert not message.errors, (output, message.errors)
    assert [(call.name, json.loads(call.arguments)) for call in message.tool_calls] == calls, output
    for size in (1, 2, 7):
        streamed, stream = Message(), parser.stream()
        for at in range(0, len(output), size):
            for delta in stream.feed(output[at : at + size]):
                apply(streamed, delta)
        for delta in stream.finish():
            apply(streamed, delta)
        assert streamed.to_dict() == message.to_dict(), size


def test_an_enum_written_raw_is_one_of_its_values_in_the_grammar():
    """The grammar under tool_choice required took any text for ``unit`` (a server wrote
    ``set_unit(unit="? ...``): it must take the enum's values and nothing else."""
    description, _ = _template()
    grammar = to_grammar(lower(description), TOOLS, tool_choice="required")
    assert grammar is not None
    checker = Checker(grammar.text)
    written = _output(CASES["an enum"])
    assert checker.check(written), written
    for wrong in ('set_unit(unit="? celsius)', "set_unit(unit=fahrenheit)", "set_unit(unit=celsiuss)"):
        bad = written.replace("set_unit(unit=celsius)", wrong)
        assert bad != written and not checker.check(bad), bad


def test_without_declared_tools_a_raw_string_ends_before_any_key():
    """With no tool schema to name the arguments, the next argument is any name in the form's key
    spelling after the separator."""
    description, _ = _template()
    message = Parser(description).parse(
        "<|tool_call_start|>[write_file(path=notes/a.txt, content=a, b and c, n=3)]<|tool_call_end|>"
    )
    assert not message.errors, message.errors
    assert [json.loads(call.arguments) for call in message.tool_calls] == [
        {"path": "notes/a.txt", "content": "a, b and c", "n": 3}
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_the_grammar_takes_every_raw_string_the_parser_reads(case):
    """What the parser reads back the grammar must let a model write: a raw string holds commas, '=',
    ')' and newlines as long as they do not start the next argument or end the call."""
    description, _ = _template()
    output = _output(CASES[case])
    for choice in ("auto", "required"):
        grammar = to_grammar(lower(description), TOOLS, tool_choice=choice)
        assert grammar is not None
        text = output[output.index("<|tool_call_start|>") :] if grammar.lazy else output
        assert Checker(grammar.text).check(text), (choice, text)


def test_the_grammar_refuses_a_raw_string_holding_the_next_arguments_start():
    """A raw string may hold the separator, but not the separator with a declared key and ``=`` after
    it: the parser reads that as the next argument, so the grammar must not let a model write it as
    the value (``content=b, path=c`` is no content; ``content=b, paths=c`` is; ``mode=x`` is no mode)."""
    description, _ = _template()
    grammar = to_grammar(lower(description), TOOLS, tool_choice="required")
    assert grammar is not None
    checker = Checker(grammar.text)
    start, end = "<|tool_call_start|>[write_file(path=a, content=", ")]<|tool_call_end|>"
    assert checker.check(start + "b, paths=c" + end)
    assert checker.check(start + "b, path c" + end)
    for refused in ("b, path=c", "b,  lines =3x", "b,\npath=c", "b, mode=x"):
        assert not checker.check(start + refused + end), refused


def test_strings_drawn_from_the_grammar_read_back_as_drawn():
    """Strings drawn from the grammar (a seeded walk) read as calls that the template writes back as
    the very string: the grammar splits raw values where the parser does (commas, '=' and brackets in
    a value, a key that is no declared one after a separator)."""
    import random

    from helpers.gbnf_walk import Walker

    description, _ = _template()
    grammar = to_grammar(lower(description), TOOLS, tool_choice="required")
    assert grammar is not None
    walker, parser = Walker(grammar.text), Parser(description, TOOLS)
    rng = random.Random(27)
    read_back = 0
    for _ in range(200):
        text = walker.walk(rng).text
        message = parser.parse(text)
        assert not message.errors, (text, message.errors)
        calls = [(call.name, json.loads(call.arguments)) for call in message.tool_calls]
        written = _output(calls)
        # (an integer drawn as -0 is the JSON value 0, which the template writes as 0)
        assert written == re.sub(r"(?<=lines=)-0(?=[,)])", "0", text), (text, written)
        read_back += "," in "".join(str(v) for _, arguments in calls for v in arguments.values())
    assert read_back, "no drawn value held a comma: the walk did not reach the case"
