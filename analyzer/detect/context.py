"""What the prompt reads besides the conversation: the clock and the template's own variables.

The engines call ``strftime_now`` on a fixed clock; the prompt is rendered again with a second clock
that differs in every field, and any change is the template using the date. The template's own
variables (names it reads that are no chat-template variable) are set one by one to a sentinel.
"""

from __future__ import annotations

import datetime as _dt

from analyzer.detect.variables import own_variables
from analyzer.diff import common_prefix_len
from analyzer.evidence import ContextUse, VariableUse, excerpt
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer
from analyzer.template import Template

# A second clock for strftime_now, different from the engines' fixed one in every field.
OTHER_NOW = _dt.datetime(2031, 11, 27, 21, 47, 53)
VARIABLE_SENTINEL = "Zqz caller value"


def detect_context(renderer: Renderer, template: Template) -> ContextUse:
    opening = [v.user()]
    tools = v.tools(renderer.spelling)

    def prompt(extra: dict[str, object] | None = None) -> str | Failed:
        return renderer.attempt(opening, tools=tools, generation_prompt=True, extra=extra)

    base = prompt()
    if isinstance(base, Failed):
        return ContextUse("unknown", base.message, ())
    other = prompt({"strftime_now": lambda fmt: OTHER_NOW.strftime(fmt)})
    if isinstance(other, str) and other != base:
        date = ContextUse("uses the date", excerpt(other, common_prefix_len(base, other)), ())
    else:
        date = ContextUse("deterministic", "", ())
    variables = []
    for name in own_variables(template):
        changed = prompt({name: VARIABLE_SENTINEL})
        if isinstance(changed, str) and changed != base:
            at = changed.find(VARIABLE_SENTINEL)
            variables.append(VariableUse(name, excerpt(changed, at if at >= 0 else common_prefix_len(base, changed))))
    return ContextUse(date.date, date.date_evidence, tuple(variables))
