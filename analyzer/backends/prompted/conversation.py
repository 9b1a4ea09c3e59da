"""A conversation with tools, spelled for a template that knows nothing of tools, and rendered by it.

The tool text goes in the system turn, or opens the first user turn when the template refuses a
system role or drops it (found by rendering, not assumed). Assistant turns are written in the reply
format, so the history shows the model the format it is asked for; tool results go back as a user
turn, in call order, with the tool's name. Turns of one role that end up next to each other are
joined, for templates that insist on alternating roles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.backends.prompted.format import (
    BLOCK_SEPARATOR,
    PromptedFormat,
    answer_text,
    call_text,
    fenced,
    results_text,
)
from analyzer.description import FormatDescription
from analyzer.errors import ConversationError, NoPlaceForTools, RenderError
from analyzer.render.conversation import Renderer, arguments_value
from analyzer.template import Template

SYSTEM_TURN, FIRST_USER_TURN = "system turn", "first user turn"


@dataclass(frozen=True, slots=True)
class PromptedPrompt:
    text: str  # the prompt, with the generation prompt
    placement: str  # SYSTEM_TURN | FIRST_USER_TURN
    reason: str  # why the tool text is where it is


def render_prompt(
    template: Template,
    description: FormatDescription,
    fmt: PromptedFormat,
    tool_text: str,
    messages: list[dict[str, Any]],
    *,
    thinking: bool | None = None,
    engine: str | None = None,
) -> PromptedPrompt:
    renderer = Renderer.for_template(template, description, engine=engine)
    system_role = description.capabilities.system_role
    evidence = next((line for line in tool_text.splitlines()[1:] if line.strip()), tool_text)
    refusal = ""
    if system_role.status in ("refused", "dropped"):
        refusal = (
            f"the template refuses a system role ({system_role.message})"
            if system_role.status == "refused"
            else "the template drops system messages"
        )
    else:
        try:
            text = renderer.render(
                spell_conversation(messages, fmt, tool_text, into_user=False), generation_prompt=True, thinking=thinking
            )
            if evidence in text:
                return PromptedPrompt(text, SYSTEM_TURN, "the template writes a system turn")
            refusal = "the template leaves the system message out of the prompt"
        except RenderError as exc:
            refusal = f"the template refuses a system message: {exc.message}"
    text = renderer.render(
        spell_conversation(messages, fmt, tool_text, into_user=True), generation_prompt=True, thinking=thinking
    )
    if evidence not in text:
        raise NoPlaceForTools(f"{template.name}: the prompt holds the tool text in neither a system nor a user turn")
    return PromptedPrompt(text, FIRST_USER_TURN, refusal + ": the tool text opens the first user turn")


def spell_conversation(
    messages: list[dict[str, Any]], fmt: PromptedFormat, tool_text: str, *, into_user: bool
) -> list[dict[str, Any]]:
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    calls: list[tuple[str, str]] = []  # (id, name) of the last assistant turn's calls, in order
    results: list[tuple[int, str, Any]] = []  # (call order, tool name, content)
    for number, message in enumerate(messages, 1):
        role = message.get("role")
        if role == "tool":
            results.append(_result(message, calls, len(results), number))
            continue
        if results:
            turns.append(_results_turn(results))
            results = []
        if role == "system" and not turns:
            system_parts.append(_text(message.get("content")))
        elif role == "assistant":
            written = message.get("tool_calls") or []
            calls = [_call(call, number) for call in written]
            written_calls = [
                (name, arguments_value(call["function"])) for (_, name), call in zip(calls, written, strict=True)
            ]
            turns.append({"role": "assistant", "content": _reply(message, written_calls, fmt)})
        else:
            turns.append({"role": role, "content": _text(message.get("content"))})
    if results:
        turns.append(_results_turn(results))
    system = "\n\n".join([*(part for part in system_parts if part), tool_text])
    if into_user:
        first_user = next((turn for turn in turns if turn["role"] == "user"), None)
        if first_user is None:
            turns.insert(0, {"role": "user", "content": system})
        else:
            first_user["content"] = system + "\n\n" + first_user["content"]
    else:
        turns.insert(0, {"role": "system", "content": system})
    return _alternating(turns)


def _results_turn(results: list[tuple[int, str, Any]]) -> dict[str, Any]:
    """Consecutive tool results as one user turn, in the order of the calls they answer."""
    in_call_order = sorted(results, key=lambda result: result[0])
    return {"role": "user", "content": results_text([(name, content) for _, name, content in in_call_order])}


def _text(content: Any) -> str:
    if isinstance(content, list):  # OpenAI content parts: their text, joined as for the native format
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _call(call: Any, number: int) -> tuple[str, str]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ConversationError(f"message {number}: a tool call without a function name")
    return str(call.get("id", "")), function["name"]


def _reply(message: dict[str, Any], calls: list[tuple[str, Any]], fmt: PromptedFormat) -> str:
    """An assistant turn of the history as the reply format writes it."""
    content = _text(message.get("content")).strip()
    if fmt.style == "json":
        if not calls:
            return answer_text(content)
        return "\n".join(call_text(name, arguments) for name, arguments in calls)
    return BLOCK_SEPARATOR.join([*([content] if content else []), *(fenced(call_text(n, a)) for n, a in calls)])


def _result(message: dict[str, Any], calls: list[tuple[str, str]], seen: int, number: int) -> tuple[int, str, Any]:
    """Where a tool result goes among the calls it answers (linked by id, else by name, else by order)."""
    call_id, name = message.get("tool_call_id"), message.get("name")
    for order, (known_id, known_name) in enumerate(calls):
        if call_id and call_id == known_id:
            return order, known_name, message.get("content")
    for order, (_, known_name) in enumerate(calls):
        if name and name == known_name:
            return order, known_name, message.get("content")
    if seen < len(calls):
        return seen, calls[seen][1], message.get("content")
    if isinstance(name, str) and name:
        return seen, name, message.get("content")
    raise ConversationError(f"message {number}: a tool result that answers no call (no tool_call_id or name)")


def _alternating(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    joined: list[dict[str, Any]] = []
    for turn in turns:
        if joined and joined[-1]["role"] == turn["role"] and turn["role"] in ("user", "assistant"):
            joined[-1] = {**joined[-1], "content": joined[-1]["content"] + "\n\n" + turn["content"]}
        else:
            joined.append(dict(turn))
    return joined
