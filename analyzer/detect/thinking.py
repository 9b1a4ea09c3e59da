"""Which request variable switches thinking on and off in the prompt, and with which values.

Serving stacks pass the request's template variables through (OpenAI's ``chat_template_kwargs``), and
templates read thinking from several names: ``enable_thinking`` in most, ``thinking`` or ``reasoning``
(booleans), ``thinking_mode`` ("enabled"/"disabled") or ``reasoning_effort`` in others. Each is tried
with the values that mean on and off, in that order, and the first that changes the prompt is the switch.

``enable_thinking`` exists for nothing else, so any change it makes is the switch. The other names may
mean something else too (``reasoning_effort`` sets how hard a model that always reasons should try), so
they count only where they change how the assistant's turn opens, after the user's message: a system
prompt that says "Reasoning: high" is not a switch.
"""

from __future__ import annotations

from analyzer.description import STANDARD_SWITCH, ThinkingSwitch, Unknown
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session

UNRENDERABLE = "prompt does not render with enable_thinking set"
# The names and values tried, standard first; a value that does not render counts as not tried.
CANDIDATES = (
    STANDARD_SWITCH,
    ThinkingSwitch("thinking", True, False),
    ThinkingSwitch("reasoning", True, False),
    ThinkingSwitch("thinking_mode", "enabled", "disabled"),
    ThinkingSwitch("reasoning_effort", "high", "none"),
)


def thinking_switch(session: Session) -> ThinkingSwitch | Unknown:
    """The first of ``CANDIDATES`` that switches thinking in ``session``'s prompt; ``off`` becomes None
    where its off value does not render but the template's default differs from on."""
    default = session.prompt()
    for candidate in CANDIDATES:
        on = session.prompt(extra=candidate.context(True))
        off = session.prompt(extra=candidate.context(False))
        switch = candidate
        if isinstance(off, Failed):
            off, switch = default, ThinkingSwitch(candidate.variable, candidate.on, None)
        if isinstance(on, Failed) or isinstance(off, Failed) or on == off:
            continue
        if candidate is STANDARD_SWITCH or _turn_opening(on) != _turn_opening(off):
            return switch
    standard = [session.prompt(extra=STANDARD_SWITCH.context(value)) for value in (True, False)]
    if any(isinstance(prompt, Failed) for prompt in standard):
        return Unknown(UNRENDERABLE)
    names = ", ".join(candidate.variable for candidate in CANDIDATES)
    return Unknown(f"no request variable tried switches thinking in the prompt ({names})")


def _turn_opening(prompt: str) -> str:
    """What the prompt writes after the user's message: how the assistant's turn opens."""
    at = prompt.rfind(v.USER_TEXT)
    return prompt[at + len(v.USER_TEXT) :] if at != -1 else prompt
