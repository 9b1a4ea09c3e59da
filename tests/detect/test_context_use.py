"""detect/context.py on small hand-written templates: the clock and the template's own variables."""

from __future__ import annotations

from analyzer.analysis import analyze
from analyzer.detect.context import detect_context
from analyzer.detect.variables import own_variables
from analyzer.render.conversation import Renderer
from analyzer.sources import load_template

CHAT = (
    "{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _detect(tmp_template, source: str):
    template = load_template(str(tmp_template(source)))
    return detect_context(Renderer.for_template(template, analyze(template)), template)


def test_a_template_that_prints_the_date(tmp_template) -> None:
    found = _detect(tmp_template, "Today is {{ strftime_now('%d %B %Y') }}.\n" + CHAT)
    assert found.date == "uses the date"
    assert "27 November 2031" in found.date_evidence  # the second clock's date, where it changed the prompt


def test_a_deterministic_template(tmp_template) -> None:
    found = _detect(tmp_template, CHAT)
    assert (found.date, found.date_evidence, found.variables) == ("deterministic", "", ())


def test_variables_of_its_own(tmp_template) -> None:
    source = "{% if house_rules is defined %}Rules: {{ house_rules }}\n{% endif %}{{ tagline }}" + CHAT
    template = load_template(str(tmp_template(source)))
    assert own_variables(template) == ["house_rules", "tagline"]
    found = _detect(tmp_template, source)
    assert [v.name for v in found.variables] == ["house_rules", "tagline"]
    assert "Rules: Zqz caller value" in found.variables[0].evidence
    assert found.variables[1].evidence.startswith("Zqz caller value<|user|>")


def test_a_variable_that_changes_nothing_is_not_reported(tmp_template) -> None:
    found = _detect(tmp_template, "{% set unused = house_rules %}" + CHAT)
    assert found.variables == ()


def test_a_prompt_that_does_not_render(tmp_template) -> None:
    found = _detect(tmp_template, "{% if tools %}{{ raise_exception('tools are not supported') }}{% endif %}" + CHAT)
    assert found.date == "unknown" and "tools are not supported" in found.date_evidence
