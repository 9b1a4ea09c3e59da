"""detect/tools.py on small hand-written templates: where tool definitions go, what they cost, how
they are written, and whether their descriptions are."""

from __future__ import annotations

import json

import pytest

from analyzer.analysis import analyze
from analyzer.detect.tools import detect_tool_definitions
from analyzer.errors import InputError
from analyzer.render.conversation import Renderer
from analyzer.sources import load_template

CHAT = """{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""

# Tools join the system turn, which the template opens itself when the conversation has none.
IN_SYSTEM = """{%- if tools -%}
<|system|>{% if messages[0].role == 'system' %}{{ messages[0].content }}
{% endif %}Tools: {% for t in tools %}{{ t | tojson }}
{% endfor %}<|end|>
{%- elif messages[0].role == 'system' %}<|system|>{{ messages[0].content }}<|end|>{% endif -%}
{%- for m in messages if m.role != 'system' %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""

# Tools open the first user turn, re-indented.
IN_USER = """{%- for m in messages %}<|{{ m.role }}|>
{%- if m.role == 'user' and tools and loop.index0 == (1 if messages[0].role == 'system' else 0) -%}
Tools:{% for t in tools %}{{ t | tojson(indent=4) }}{% endfor %}
{% endif %}{{ m.content }}<|end|>{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""

# A block of their own before the conversation, names only (descriptions dropped).
OWN_BLOCK = "{%- if tools %}[TOOLS]{% for t in tools %}{{ t.function.name }};{% endfor %}[/TOOLS]{% endif -%}" + CHAT

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Xqz weather now",
        "parameters": {"type": "object", "properties": {}},
    },
}


def _detect(tmp_template, source: str, tools=None):
    template = load_template(str(tmp_template(source)))
    description = analyze(template)
    return detect_tool_definitions(Renderer.for_template(template, description), template, description, tools)


def test_tools_in_the_system_turn_written_as_given(tmp_template) -> None:
    found = _detect(tmp_template, IN_SYSTEM)
    assert [(p.opening, p.placement) for p in found.placements] == [
        ("system, user", "system turn"),
        ("user", "system turn"),
    ]
    assert "Sqz system says" in found.placements[0].evidence and "qzxfind" in found.placements[0].evidence
    assert found.form == "as given" and '{"type": "function"' in found.form_evidence
    assert found.descriptions == "written" and found.written


def test_cost_is_the_growth_of_the_prompt(tmp_template) -> None:
    found = _detect(tmp_template, IN_SYSTEM, tools=[WEATHER])
    # One tool given: the second measured is the same tool, so each costs its JSON and a newline.
    per_tool = len(json.dumps(WEATHER)) + 1
    assert found.per_tool_chars == per_tool
    # The fixed part: "<|system|>Tools: <|end|>" (the system message itself is there without tools too)
    assert found.fixed_chars == len("Tools: ") + 1
    assert found.fixed_tokens is None and found.per_tool_tokens is None  # no tokenizer.json beside it


def test_tools_in_the_user_turn_re_indented(tmp_template) -> None:
    found = _detect(tmp_template, IN_USER)
    assert {p.placement for p in found.placements} == {"user turn"}
    assert found.form == "re-indented"


def test_a_block_of_their_own_without_descriptions(tmp_template) -> None:
    found = _detect(tmp_template, OWN_BLOCK)
    assert {p.placement for p in found.placements} == {"own block"}
    assert found.form == "rewritten" and found.form_evidence == ""
    assert found.descriptions == "dropped" and "[TOOLS]qzxfind;" in found.descriptions_evidence


def test_tools_not_written(tmp_template) -> None:
    found = _detect(tmp_template, CHAT)
    assert {p.placement for p in found.placements} == {"not written"}
    assert not found.written and found.form == "not written" and found.descriptions == "unknown"
    assert found.per_tool_chars == 0 and found.fixed_chars == 0


def test_a_prompt_that_does_not_render_with_tools(tmp_template) -> None:
    refusing = (
        "{%- if tools and messages[0].role == 'system' %}{{ raise_exception('no tools with a system') }}{% endif -%}"
        + IN_SYSTEM
    )
    found = _detect(tmp_template, refusing)
    assert found.placements[0].placement == "error" and found.placements[1].placement == "system turn"
    assert found.placements[0].evidence.endswith("template raised: no tools with a system")
    # the cost is measured with a system message only where the template takes one (with tools it refuses one)
    assert found.per_tool_chars is not None and found.per_tool_chars > 0


def test_tools_the_caller_gives_must_have_names(tmp_template) -> None:
    with pytest.raises(InputError, match="tool 1 has no name"):
        _detect(tmp_template, IN_SYSTEM, tools=[{"type": "function", "function": {"description": "x"}}])
