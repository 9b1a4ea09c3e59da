"""detect/engines.py on small hand-written templates: jinja2 and minijinja side by side."""

from __future__ import annotations

from analyzer.analysis import analyze
from analyzer.detect.engines import detect_engine_agreement
from analyzer.sources import load_template

CHAT = (
    "{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
LABELS = ["prompt with tools", "one call and its result", "two parallel calls"]


def _detect(tmp_template, source: str):
    template = load_template(str(tmp_template(source)))
    return detect_engine_agreement(template, analyze(template))


def test_engines_agree(tmp_template) -> None:
    found = _detect(tmp_template, CHAT)
    assert [c.label for c in found.cases] == LABELS
    assert found.agree and {c.outcome for c in found.cases} == {"agree"}


def test_engines_differ_at_a_position(tmp_template) -> None:
    # jinja2 prints a large float in exponent form, minijinja in full.
    found = _detect(tmp_template, "Budget {{ 1e20 }}\n" + CHAT)
    assert not found.agree
    case = found.cases[0]
    assert case.outcome == "differ" and case.position == len("Budget 1")
    assert case.jinja2.startswith("Budget 1e+20") and case.minijinja.startswith("Budget 100000000000000000000.0")


def test_only_one_engine_raises(tmp_template) -> None:
    found = _detect(tmp_template, "{{ 'x'.removeprefix('x') }}" + CHAT)
    assert {c.outcome for c in found.cases} == {"only minijinja raises"}
    assert all("removeprefix" in c.minijinja and c.jinja2 == "" for c in found.cases)


def test_both_raise_differently(tmp_template) -> None:
    found = _detect(tmp_template, "{% if tools %}{{ 'x' | truncate(0) }}{% endif %}" + CHAT)
    assert found.cases[0].outcome == "both raise"
    assert found.cases[0].jinja2 != found.cases[0].minijinja
