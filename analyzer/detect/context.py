"""What the prompt reads besides the conversation: the clock and the template's own variables.

The engines call ``strftime_now`` on a fixed clock; the prompt is rendered again with a second clock
that differs in every field, and any change is the template using the date. The template's own
variables (names it reads that are no chat-template variable) are set one by one to a sentinel.
"""

from __future__ import annotations

import datetime as _dt

from analyzer.detect.variables import own_variables
from analyzer.diff import common_prefix_len
from analyzer.evidence import ContextUse, DateUse, VariableUse, excerpt
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer
from analyzer.template import Template

# A second clock for strftime_now, different from the engines' fixed one in every field.
OTHER_NOW = _dt.datetime(2031, 11, 27, 21, 47, 53)
VARIABLE_SENTINEL = "Zqz caller value"
# What this stage plants besides the conversation's sentinels, for reports to explain.
PROBES = (
    (VARIABLE_SENTINEL, "a value the analysis gave a variable of the template's own"),
    (str(OTHER_NOW.year), f"the year of a second clock the analysis set ({OTHER_NOW:%Y-%m-%d %H:%M:%S})"),
)
PROBE_TEXTS = (*v.PROBE_TEXTS, *(text for text, _ in PROBES))


def detect_context(renderer: Renderer, template: Template) -> ContextUse:
    opening = [v.user()]
    tools = v.tools(renderer.spelling)

    def prompt(extra: dict[str, object] | None = None) -> str | Failed:
        return renderer.attempt(opening, tools=tools, generation_prompt=True, extra=extra)

    base = prompt()
    if isinstance(base, Failed):
        return ContextUse("unknown", base.message, (), VARIABLE_SENTINEL)
    other = prompt({"strftime_now": lambda fmt: OTHER_NOW.strftime(fmt)})
    if isinstance(other, str) and other != base:
        date: DateUse = "uses the date"
        date_evidence = excerpt(other, common_prefix_len(base, other), whole=PROBE_TEXTS)
    else:
        date, date_evidence = "deterministic", ""
    variables = []
    for name in own_variables(template):
        changed = prompt({name: VARIABLE_SENTINEL})
        if isinstance(changed, str) and changed != base:
            at = changed.find(VARIABLE_SENTINEL)
            variables.append(
                VariableUse(
                    name, excerpt(changed, at if at >= 0 else common_prefix_len(base, changed), whole=PROBE_TEXTS)
                )
            )
    return ContextUse(date, date_evidence, tuple(variables), VARIABLE_SENTINEL)
