"""The variables a template reads of its own: names it reads that no chat template is given.

The analysis binds them so that the rest of the template renders; the context detector
(``analyzer.detect.context``) sets them one by one to see which change the prompt.
"""

from __future__ import annotations

import re

import minijinja

from analyzer.template import Template

# Variables every chat template may read; anything else it reads undefined is the template's own.
KNOWN_VARIABLES = frozenset(
    {
        "messages",
        "tools",
        "add_generation_prompt",
        "bos_token",
        "eos_token",
        "raise_exception",
        "strftime_now",
        "enable_thinking",
        "range",
        "namespace",
        "dict",
        "loop",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "lipsum",
        "cycler",
        "joiner",
    }
)


def own_variables(template: Template) -> list[str]:
    """The variables ``template`` reads that no chat template is given (private ``_names`` aside)."""
    try:
        names = minijinja.Environment().undeclared_variables_in_str(template.source)
    except Exception:
        return []
    return sorted(n for n in names if n not in KNOWN_VARIABLES and not re.match(r"^_", n))
