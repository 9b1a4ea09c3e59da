"""detect/history.py on small hand-written templates: reasoning on later turns, a turn with content and
a call, and two user turns in a row."""

from __future__ import annotations

from analyzer.analysis import analyze
from analyzer.detect.history import detect_history
from analyzer.render.conversation import Renderer
from analyzer.sources import load_template

CALL = "{% for c in m.tool_calls %}<call>{{ c.function | tojson }}</call>{% endfor %}"
END = "{% if add_generation_prompt %}<|assistant|>{% endif %}"


def _template(reasoning: str) -> str:
    return (
        "{%- for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' %}"
        + reasoning
        + "{{ m.content }}"
        + CALL
        + "{% else %}{{ m.content }}{% endif %}<|end|>{% endfor -%}"
        + END
    )


KEPT = _template("{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}")
# Reasoning only on the turn after the last user message (what Qwen3 and GLM do).
LAST_ONLY = (
    "{%- set ns = namespace(last=0) %}{% for m in messages %}{% if m.role == 'user' %}"
    "{% set ns.last = loop.index0 %}{% endif %}{% endfor -%}"
    + _template(
        "{% if m.reasoning_content and loop.index0 > ns.last %}<think>{{ m.reasoning_content }}</think>{% endif %}"
    )
)
# Reasoning only on turns that call tools.
CALLS_ONLY = _template(
    "{% if m.reasoning_content and m.tool_calls %}<think>{{ m.reasoning_content }}</think>{% endif %}"
)


def _detect(tmp_template, source: str):
    template = load_template(str(tmp_template(source)))
    description = analyze(template)
    return description, detect_history(Renderer.for_template(template, description), description)


def test_reasoning_kept_on_earlier_turns(tmp_template) -> None:
    description, found = _detect(tmp_template, KEPT)
    assert description.reasoning.field == "reasoning_content"
    assert found.reasoning == "kept" and "<think>Rqz thinking</think>Kqz answer" in found.reasoning_evidence


def test_reasoning_dropped_once_a_user_turn_follows(tmp_template) -> None:
    _, found = _detect(tmp_template, LAST_ONLY)
    assert found.reasoning == "dropped on earlier turns"
    assert "Rqz thinking" not in found.reasoning_evidence and "Kqz answer" in found.reasoning_evidence


def test_reasoning_never_written_beside_an_answer(tmp_template) -> None:
    description, found = _detect(tmp_template, CALLS_ONLY)
    assert description.reasoning.scope == "turns with tool calls"
    assert found.reasoning == "not written"


def test_no_reasoning_field_is_unknown(tmp_template) -> None:
    _, found = _detect(tmp_template, _template(""))
    assert found.reasoning == "unknown"


def test_a_call_turn_as_history_writes_it(tmp_template) -> None:
    _, found = _detect(tmp_template, KEPT)
    assert "<|assistant|>Kqz answer<call>" in found.call_turn and "qzxfind" in found.call_turn
    # the excerpt is the turn, not the tool definitions (which name the tool too)
    assert "Dqz finds things" not in found.call_turn


def test_two_user_turns_in_a_row(tmp_template) -> None:
    _, written = _detect(tmp_template, KEPT)
    assert (written.consecutive_users, written.users_evidence) == ("written", "")
    alternating = (
        "{% for m in messages %}{% if loop.index0 > 0 and m.role == messages[loop.index0 - 1].role %}"
        "{{ raise_exception('roles must alternate') }}{% endif %}{% endfor %}"
    ) + KEPT
    _, raises = _detect(tmp_template, alternating)
    assert raises.consecutive_users == "raises" and raises.users_evidence.endswith("roles must alternate")
    # writes no user message but the first
    dropping = KEPT.replace(
        "{%- for m in messages %}", "{%- for m in messages if m.role != 'user' or m.content == messages[0].content %}"
    )
    _, dropped = _detect(tmp_template, dropping)
    assert dropped.consecutive_users == "second dropped" and "Uqz user asks" in dropped.users_evidence
