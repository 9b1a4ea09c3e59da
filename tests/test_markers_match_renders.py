"""The markers in each golden description must reproduce what the template writes for other calls.

The analysis runs on sentinel names and values; here every corpus template renders calls with
ordinary names and values (a comma and a space inside a string, two parallel calls), and the call
region of the render must match the description: section opener, one call pattern per call joined by
the separator, section closer. This is what the parser and grammar will rely on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analyzer.description import Calls, Text, loads
from analyzer.render.engines import compile_template
from analyzer.sources import load_template

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
TOOLS = [
    {"type": "function", "function": {"name": name, "description": f"{name} tool",
                                      "parameters": {"type": "object",
                                                     "properties": {"location": {"type": "string", "description": "where"}},
                                                     "required": ["location"]}}}
    for name in ("get_weather", "list_files")
]
CALLS = [("get_weather", {"location": "Paris, France"}, "Ab3De6Gh9"), ("list_files", {"location": "/tmp/x y"}, "Zy8Xw7Vu6")]


def call_regex(calls: Calls, name: str) -> str:
    parts = []
    for part in calls.call:
        if isinstance(part, Text):
            parts.append(re.escape(part.text))
        elif part.name == "name":
            parts.append(re.escape(name))
        elif part.name == "index":
            parts.append(r"\d+")
        elif part.name == "id":
            parts.append(r"\S+?")
        else:  # arguments, call: a run that must mention the call's name or argument
            parts.append(r"[\s\S]*?")
    return "".join(parts)


def described_templates():
    for path in sorted(GOLDEN.glob("*.json")):
        description = loads(path.read_text(encoding="utf-8"))
        if isinstance(description.calls, Calls):
            yield pytest.param(description, id=path.stem)


@pytest.mark.parametrize("description", list(described_templates()))
def test_description_matches_a_fresh_render(description, corpus_dir):
    calls: Calls = description.calls
    caps = description.capabilities
    template = load_template(str(corpus_dir / f"{description.template.name}.jinja"))
    engine = "jinja2" if description.template.engine.startswith("jinja2") else description.template.engine
    if description.template.engine == "jinja2-mutable":
        from analyzer.render.engines import compile_mutable
        compiled = compile_mutable(template)
    else:
        compiled = compile_template(template, engine)
    as_string = description.input_form.arguments_as_string
    count = 2 if caps.parallel_calls.status == "yes" else 1
    tool_calls = [{"id": call_id, "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}
                  for name, args, call_id in CALLS[:count]]
    content = description.input_form.content_with_calls
    messages = [{"role": "user", "content": "What is the weather?"},
                {"role": "assistant", "content": content, "tool_calls": tool_calls}]
    rendered = compiled.render(messages, tools=TOOLS, extra={name: "" for name in description.bound_variables})
    separator = calls.separator if isinstance(calls.separator, str) else ""
    body = re.escape(separator).join(call_regex(calls, name) for name, _, _ in CALLS[:count])
    pattern = re.escape(calls.section_open) + body + re.escape(calls.section_close)
    assert re.search(pattern, rendered), f"no match for {pattern!r} in ...{rendered[-600:]!r}"
    # The arguments' values appear in the calls, however they are encoded.
    for name, args, _ in CALLS[:count]:
        assert name in rendered and "Paris" in rendered
