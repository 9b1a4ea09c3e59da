"""Reasoning: the markers around it, the message key it is read from, whether the prompt opens it.

The block is found by rendering the same content turn with and without reasoning; its open marker is
the text right before the reasoning sentinel back to where the two renders part, and its close marker
the text after it up to where they meet again. When the two renders part or meet inside a marker
(``<think>\\n\\n</think>`` versus ``<think>\\nR\\n</think>``), the marker next to the sentinel is taken whole.
"""

from __future__ import annotations

import re
from typing import Any

from analyzer.description import Reasoning, ReasoningScope, ThinkingSwitch, Turn, Unknown
from analyzer.detect.thinking import thinking_switch
from analyzer.diff import common_prefix_len, common_suffix_len
from analyzer.markers import (
    first_marker,
    glued_end,
    glued_start,
    is_marker,
    last_marker,
    marker_at,
    marker_end,
    marker_start,
)
from analyzer.render import variants as v
from analyzer.render.conversation import reasoning_part_field
from analyzer.render.session import Failed, Session

# The keys clients and templates use for reasoning, each probed with its own text.
REASONING_PROBES = {"reasoning_content": "Rqz thinking", "reasoning": "Rwj musing", "thinking": "Rkx pondering"}


def _last_marker_start(text: str) -> int | None:
    found = last_marker(text)
    return found.start() if found else None


def _first_marker_end(text: str) -> int | None:
    found = first_marker(text)
    return found.end() if found else None


def _glue_marker(text: str, at: int) -> int:
    """A cut right after a marker and before a word (``<|channel|>`` + ``analysis``) splits one header:
    move it back to include the marker."""
    if 0 < at < len(text) and text[at - 1] in ">]" and (text[at].isalnum() or text[at] == "_"):
        start = _last_marker_start(text[:at])
        if start is not None and is_marker(text[start:at]):
            return start
    return at


# Reasoning as a content part, (type, key), as chat APIs send it ({"type": "thinking", "thinking": ...}); the
# text always under a key of its own name, so that a template printing every part's "text" is not taken for one.
REASONING_PARTS = (("thinking", "thinking"), ("reasoning", "reasoning"))


def _reasoning_key(session: Session, **message: Any) -> str | None:
    """Which message key the template reads reasoning from: one render with every key set to its own
    text; else a content part, one render for each (a template that reads parts may refuse others)."""
    found = _reasoning_message_key(session, **message)
    if found is not None:
        return found
    for part_type, key in REASONING_PARTS:
        field = reasoning_part_field(part_type, key)
        form = session.form.with_(reasoning_key=field)
        output = session.history(v.assistant(form, reasoning=v.REASONING_TEXT, **message))
        if isinstance(output, str) and v.REASONING_TEXT in output and not _part_printed(output, key):
            return field
    return None


def _part_printed(output: str, key: str) -> bool:
    """Whether the template printed the content parts as data (a list's repr or JSON) rather than
    reading the reasoning part: the part's key stands quoted right before the reasoning text."""
    printed = re.compile(r"""["']""" + re.escape(key) + r"""["']\s*:\s*["']""" + re.escape(v.REASONING_TEXT))
    return printed.search(output) is not None


def _reasoning_message_key(session: Session, **message: Any) -> str | None:
    # reasoning_content alone first: it is what OpenAI-style clients send, so a template that reads
    # several keys is described by that one.
    for keys in (("reasoning_content",), tuple(REASONING_PROBES)[1:]):
        probe = v.assistant(session.form, **message)
        for key in keys:
            probe[key] = REASONING_PROBES[key]
        output = session.history(probe)
        if isinstance(output, str):
            found = next((key for key in keys if REASONING_PROBES[key] in output), None)
            if found is not None:
                return found
    return None


def detect_reasoning(session: Session, turn: Turn) -> Reasoning | Unknown:
    # Whole history renders, not model outputs: the generation prompt may have written the open marker.
    plain = session.history(v.assistant(session.form, content=v.CONTENT_TEXT))
    if isinstance(plain, Failed):
        return Unknown(f"content turn does not render: {plain.message}")
    found = _from_history(session, session, turn, plain)
    if found is None:
        # Some templates write reasoning back only while thinking is on (DeepSeek-V4 keeps it under
        # its switch): the same probes with the switch on.
        switch = thinking_switch(session)
        if isinstance(switch, ThinkingSwitch):
            thinking = Session(session.compiled, session.form, extra={**session.extra, **switch.context(True)})
            thinking_plain = thinking.history(v.assistant(session.form, content=v.CONTENT_TEXT))
            if isinstance(thinking_plain, str):
                found = _from_history(thinking, session, turn, thinking_plain, thinking_on=True)
    if found is not None:
        return found
    return _from_prompts(session, turn) or Unknown(
        "no reasoning field (reasoning_content, reasoning, thinking) is written in history"
    )


def _from_history(
    session: Session, default: Session, turn: Turn, plain: str, *, thinking_on: bool = False
) -> Reasoning | Unknown | None:
    """Reasoning markers from history renders of ``session`` (``default``: the template's own
    context, where the thinking switch is read); None when history writes no reasoning field."""
    key = _reasoning_key(session, content=v.CONTENT_TEXT)
    if key is not None:
        form = session.form.with_(reasoning_key=key)
        output = session.with_form(form).history(v.assistant(form, content=v.CONTENT_TEXT, reasoning=v.REASONING_TEXT))
        if isinstance(output, str) and v.REASONING_TEXT in output:
            scope: ReasoningScope = "turns while thinking is on" if thinking_on else "all turns"
            return _markers(default, turn, plain, output, key, scope)
    # Some templates keep reasoning only on turns that call tools (it is needed to continue them).
    call_plain = session.history(v.assistant(session.form, calls=(v.CALL1,)))
    key = _reasoning_key(session, calls=(v.CALL1,))
    if key is not None and isinstance(call_plain, str):
        form = session.form.with_(reasoning_key=key)
        output = session.with_form(form).history(v.assistant(form, calls=(v.CALL1,), reasoning=v.REASONING_TEXT))
        if isinstance(output, str) and v.REASONING_TEXT in output:
            scope = "turns while thinking is on" if thinking_on else "turns with tool calls"
            return _markers(default, turn, call_plain, output, key, scope)
    return None


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w:.\-]*)>\s*\Z")


def _from_prompts(session: Session, turn: Turn) -> Reasoning | None:
    """Reasoning markers when history never writes reasoning: from what the thinking switch changes in
    the generation prompt (thinking off closes the block the prompt opens), or from a prompt that
    opens a tag whose closing tag the template strips from content in history."""
    switch = thinking_switch(session)
    on = session.prompt(extra=switch.context(True)) if isinstance(switch, ThinkingSwitch) else None
    off = session.prompt(extra=switch.context(False)) if isinstance(switch, ThinkingSwitch) else None
    if isinstance(on, str) and isinstance(off, str) and on != off and off.startswith(on):
        close = off[len(on) :]
        start = _last_marker_start(on)
        if start is not None and first_marker(close) and close.strip():
            prompt = turn.generation_prompt if isinstance(turn.generation_prompt, str) else ""
            return Reasoning(
                open=on[start:],
                close=close,
                field="",
                forced_open=prompt.rstrip().endswith(on[start:].strip())
                and not prompt.rstrip().endswith(close.strip()),
                empty_block="",
                toggle=switch,
                scope="not written in history",
                opened_when_thinking=True,
            )
    prompt = turn.generation_prompt if isinstance(turn.generation_prompt, str) else ""
    m = _OPEN_TAG.search(prompt)  # never in "": an unknown prompt opens nothing
    if m is None:
        return None
    close = f"</{m.group(1)}>"
    message = v.assistant(session.form, content=f"{v.REASONING_TEXT}{close}{v.CONTENT_TEXT}")
    # Also with a user turn after it: a template may take a last assistant message for a prefill
    # and write it as given (Nemotron-Nano-v2), where it strips earlier turns.
    probes = (session.history(message), session.history(message, v.user(v.USER_TEXT2)))
    if not any(isinstance(p, str) and v.CONTENT_TEXT in p and v.REASONING_TEXT not in p for p in probes):
        return None
    # The template cuts everything up to the closing tag out of content: that is reasoning.
    return Reasoning(
        open=prompt[m.start() :],
        close=close,
        field="",
        forced_open=True,
        empty_block="",
        toggle=switch,
        scope="not written in history",
        opened_when_thinking=True,
    )


def _markers(
    session: Session, turn: Turn, plain: str, output: str, key: str, scope: ReasoningScope
) -> Reasoning | Unknown:
    at = output.find(v.REASONING_TEXT)
    after_at = at + len(v.REASONING_TEXT)
    head = marker_start(output, min(common_prefix_len(plain, output), at))
    head = _glue_marker(output, head)
    before = output[head:at]
    if not first_marker(before) or head == at:
        start = _last_marker_start(output[:at])
        if start is not None:
            head = glued_start(output, start)
        before = output[head:at]
    if marker_at(output, head):
        glued = glued_start(output, head)
        prompt_text = turn.generation_prompt.strip() if isinstance(turn.generation_prompt, str) else ""
        # Not back over the assistant header itself (``<|start|>assistant`` + ``<|channel|>``).
        if not (prompt_text and output[glued:at].startswith(prompt_text)):
            head = glued
        before = output[head:at]
    tail = marker_end(output, max(len(output) - common_suffix_len(plain, output), after_at))
    after = output[after_at:tail]
    if not first_marker(after):
        end = _first_marker_end(output[after_at:])
        if end is not None:
            end = glued_end(output, after_at + end) - after_at
            after = output[after_at : after_at + end]
            # Keep the whitespace a template writes after the close marker: the model writes it too.
            rest = output[after_at + end :]
            after += rest[: len(rest) - len(rest.lstrip())]
    prompt = turn.generation_prompt
    rest = output[after_at + len(after) :]
    if isinstance(prompt, str) and prompt.strip() and rest.startswith(prompt):
        # Reasoning is a message of its own: the model opens the next one with the same header.
        after += prompt
    forced_open = isinstance(prompt, str) and _prompt_opens(prompt, before, after)
    if not before.strip() and not after.strip():
        return Unknown("reasoning is written with no markers around it")

    empty_block = ""
    if before.strip() and after.strip():
        m = re.search(re.escape(before.strip()) + r"\s*" + re.escape(after.strip()) + r"\s*", plain)
        if m:
            empty_block = m.group()
    toggle = thinking_switch(session)
    opened_when_thinking = forced_open
    if isinstance(toggle, ThinkingSwitch) and before.strip():
        on = session.prompt(extra=toggle.context(True))
        opened_when_thinking = isinstance(on, str) and _prompt_opens(on, before, after)
    return Reasoning(
        open=before,
        close=after,
        field=key,
        forced_open=forced_open,
        empty_block=empty_block,
        toggle=toggle,
        scope=scope,
        opened_when_thinking=opened_when_thinking,
    )


def _prompt_opens(prompt: str, open_marker: str, close: str) -> bool:
    """Whether the model's output starts inside the block: the prompt writes the open marker and
    after it only text, no marker and not the close (Apriel's prompt writes the header that opens
    reasoning, then "Here are my reasoning steps:", which the model goes on from)."""
    opener = open_marker.strip()
    at = prompt.rfind(opener) if opener else -1
    if at == -1:
        return False
    rest = prompt[at + len(opener) :]
    return first_marker(rest) is None and not (close.strip() and close.strip() in rest)
