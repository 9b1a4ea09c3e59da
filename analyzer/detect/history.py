"""How earlier turns are written back into the prompt: the reasoning of an answer once a later user
turn follows, a turn with content and a call, and two user turns in a row."""

from __future__ import annotations

from analyzer.description import FormatDescription, Reasoning
from analyzer.evidence import ConsecutiveUsers, History, ReasoningWriteBack, excerpt
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer


def detect_history(renderer: Renderer, description: FormatDescription) -> History:
    reasoning, reasoning_evidence = _reasoning(renderer, description)
    users, users_evidence = _consecutive_users(renderer)
    return History(reasoning, reasoning_evidence, _call_turn(renderer), users, users_evidence)


def _reasoning(renderer: Renderer, description: FormatDescription) -> tuple[ReasoningWriteBack, str]:
    """Whether the reasoning of an answer turn stays in history once a user turn follows it."""
    if not isinstance(description.reasoning, Reasoning) or not description.reasoning.field:
        return "unknown", "the template reads reasoning from no message field"
    turn = v.assistant(renderer.spelling, content=v.CONTENT_TEXT, reasoning=v.REASONING_TEXT)
    later = renderer.attempt([v.user(), turn, v.user(v.USER_TEXT2)], generation_prompt=True)
    last = renderer.attempt([v.user(), turn])
    if isinstance(later, Failed) or isinstance(last, Failed):
        failed = next(render for render in (later, last) if isinstance(render, Failed))
        return "unknown", failed.message
    shown = v.REASONING_TEXT if v.REASONING_TEXT in later else v.CONTENT_TEXT
    anchor = max(later.find(shown), 0)
    evidence = excerpt(later, anchor, anchor + len(shown), whole=v.PROBE_TEXTS)
    if v.REASONING_TEXT in later:
        return "kept", evidence
    return ("dropped on earlier turns" if v.REASONING_TEXT in last else "not written"), evidence


def _call_turn(renderer: Renderer) -> str:
    """An excerpt of a turn with content and a call as history writes it: as the last turn, or with a
    user turn after it where only that writes the call (templates that treat a last turn as a prefill)."""
    turn = v.assistant(renderer.spelling, content=v.CONTENT_TEXT, calls=(v.CALL1,))
    renders = [
        renderer.attempt(messages, tools=v.tools(renderer.spelling))
        for messages in ([v.user(), turn], [v.user(), turn, v.user(v.USER_TEXT2)])
    ]
    render = next((r for r in renders if isinstance(r, str) and v.FN1 in r[_after_user(r) :]), renders[0])
    if isinstance(render, Failed):
        return render.message
    start = _after_user(render)
    spots = [(render.find(text, start), len(text)) for text in (v.CONTENT_TEXT, v.FN1) if text in render[start:]]
    if not spots:
        return excerpt(render, start, whole=v.PROBE_TEXTS)
    return excerpt(render, min(at for at, _ in spots), max(at + size for at, size in spots), whole=v.PROBE_TEXTS)


def _after_user(render: str) -> int:
    """Where the first user message's text ends (tool definitions before it name the tools too)."""
    at = render.find(v.USER_TEXT)
    return at + len(v.USER_TEXT) if at >= 0 else 0


def _consecutive_users(renderer: Renderer) -> tuple[ConsecutiveUsers, str]:
    twice = renderer.attempt([v.user(), v.user(v.USER_TEXT2)], generation_prompt=True)
    if isinstance(twice, Failed):
        return "raises", twice.message
    if v.USER_TEXT2 not in twice:
        at = twice.find(v.USER_TEXT)
        return "second dropped", excerpt(twice, at, at + len(v.USER_TEXT), whole=v.PROBE_TEXTS) if at >= 0 else excerpt(
            twice, 0, width=120, whole=v.PROBE_TEXTS
        )
    return "written", ""
