"""Toy chat templates for the detector tests: a few lines of Jinja with markers of their own.

``chat`` writes a whole template around the assistant turn a test cares about: tool definitions in a
``<|turn|>tools`` turn, system and user turns as ``<|turn|>role\\n...<|end|>\\n``, tool results as a
``<|turn|>tool`` turn, and ``<|turn|>assistant\\n`` as the generation prompt; each of these can be
replaced. ``describe`` runs the whole analysis on it. Block tags carry no ``-``: the engines trim the
newline right after a block tag and the indentation before one, as transformers does; text that must
start with a newline right after a block tag is written as an expression with ``lit``.
"""

from __future__ import annotations

import json

from analyzer.analysis import analyze
from analyzer.description import Calls, FormatDescription, KeyValueArguments
from analyzer.template import Template

TOOLS = "{% if tools %}<|turn|>tools\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|end|>\n{% endif %}"
SYSTEM = "<|turn|>system\n{{ m.content }}<|end|>\n"
USER = "<|turn|>user\n{{ m.content }}<|end|>\n"
TOOL = "<|turn|>tool\n{{ m.content }}<|end|>\n"
PROMPT = "<|turn|>assistant\n"
HEAD = "<|turn|>assistant\n"
END = "<|end|>\n"
CONTENT = "{{ m.content or '' }}"

# Calls written one JSON object each: <call>{"name": ..., "arguments": {...}}</call>
JSON_CALLS = "{% for tc in m.tool_calls or [] %}<call>{{ tc.function | tojson }}</call>{% endfor %}"


def lit(text: str) -> str:
    """``text`` as a Jinja expression, so no newline of it is trimmed after a block tag."""
    return "{{ " + json.dumps(text) + " }}"


def chat(
    assistant: str | None = None,
    *,
    calls: str = JSON_CALLS,
    tool: str = TOOL,
    user: str = USER,
    system: str = SYSTEM,
    prompt: str = PROMPT,
    before: str = TOOLS,
) -> str:
    """A whole toy template. ``assistant`` is the assistant turn (reading the message as ``m``); by
    default the head, the content, ``calls`` and the end."""
    if assistant is None:
        assistant = HEAD + CONTENT + calls + END
    return (
        before + "{% for m in messages %}"
        "{% if m.role == 'system' %}"
        + system
        + "{% elif m.role == 'user' %}"
        + user
        + "{% elif m.role == 'assistant' %}"
        + assistant
        + "{% elif m.role == 'tool' %}"
        + tool
        + "{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}" + prompt + "{% endif %}"
    )


def describe(source: str, *, engine: str = "minijinja") -> FormatDescription:
    return analyze(Template(source=source, name="toy", origin="test"), engine=engine)


def calls_of(description: FormatDescription) -> Calls:
    assert isinstance(description.calls, Calls), description.calls
    return description.calls


def key_value(description: FormatDescription) -> KeyValueArguments:
    arguments = calls_of(description).arguments
    assert isinstance(arguments, KeyValueArguments), arguments
    return arguments
