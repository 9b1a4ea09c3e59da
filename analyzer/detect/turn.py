"""The assistant turn: generation prompt, what history adds at the start, content wrapper, turn end.

A final assistant message is often rendered with whatever the template appends at the very end (an
instruction, a new generation prompt), so the end of a turn is read where the final render and a
render with a user message after it part: the text they share after the content closes the turn. A
shared tail that opens the next header (``<|im_start|>``, which the generation prompt also starts
with) is not part of the end. Templates with no end marker of their own (``<|user|>`` starts the next
turn) have an empty end; the model then stops on the next header, which becomes the stop string.

Some templates end other turns with other markers: a turn that holds tool calls (``<|eom_id|>`` where
content ends with ``<|eot_id|>``), or the last assistant message (``<|return|>`` where every earlier
one ends with ``<|end|>``). Those ends are read the same way, from renders of such a turn, and are
stops too: a model's turn is over once it writes one.
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.description import Turn, Unknown
from analyzer.diff import common_prefix_len, common_suffix_len
from analyzer.markers import find_markers, marker_at, marker_end, marker_start
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


def generation_prompt(session: Session) -> str | Unknown:
    with_prompt = session.prompt()
    without = session.render(v.opening(session.form), generation_prompt=False)
    if isinstance(with_prompt, Failed) or isinstance(without, Failed):
        failed = next(render for render in (with_prompt, without) if isinstance(render, Failed))
        return Unknown(f"prompt does not render: {failed.message}")
    return with_prompt[marker_start(with_prompt, common_prefix_len(with_prompt, without)) :]


def content_output(session: Session) -> str | Failed:
    return session.output(v.assistant(session.form, content=v.CONTENT_TEXT))


def after(text: str | Failed, needle: str) -> str | None:
    if isinstance(text, Failed):
        return None
    at = text.rfind(needle)
    return None if at == -1 else text[at + len(needle) :]


def _first_marker(text: str) -> str:
    """The first marker of ``text`` with the whitespace around it; "" when ``text`` opens with no marker."""
    stripped = text.lstrip()
    m = marker_at(stripped, symbols=True)
    if not m:
        return ""
    end = len(text) - len(stripped) + m.end()
    rest = text[end:]
    return text[:end] + rest[: len(rest) - len(rest.lstrip())]


def shared_turn_end(final: str, continued: str, prompt: str | Unknown, opening: str = "") -> str:
    """What two continuations of a turn share, less the start of the next header.

    The next header starts the way the assistant header (the generation prompt) starts, or, for a
    template that writes its generation prompt whatever it is asked (the prompt then reads as ""),
    the way the first header of a conversation does: ``opening`` is a render's start, where no
    turn ends before the first header."""
    shared = final[: marker_start(final, common_prefix_len(final, continued))]
    for m in find_markers(shared, symbols=True):
        header = shared[m.start() :]
        if header.strip() and (
            (isinstance(prompt, str) and prompt and prompt.startswith(header)) or _opens(opening, header)
        ):
            return shared[: m.start()]
    return shared


def _opens(text: str, header: str) -> bool:
    """Whether ``text`` holds ``header`` before any text that is not a marker (the first header)."""
    at = text.find(header)
    if at < 0:
        return False
    before = text[:at]
    for m in reversed(find_markers(before, symbols=True)):
        before = before[: m.start()] + before[m.end() :]
    return not before.strip()


def _turn_stop(end: str, after_user: str | None, call_output: str | Failed) -> str:
    """The stop in a turn end: its first marker that also ends a user's turn and stands nowhere in a
    call turn but at its end (``<|end|>`` of ``\n<|end|>\n</s>``: a model's turn is over once it
    writes that, and a vocabulary marks such a token end-of-generation); else the end's last marker."""
    found = find_markers(end.strip(), symbols=True)
    if not found:
        return ""
    written = call_output if isinstance(call_output, str) else ""
    for m in found[:-1]:
        marker = m.group()
        if (
            after_user is not None
            and after_user.lstrip().startswith(marker)
            and written.count(marker) == end.count(marker)
        ):
            return marker
    return found[-1].group()


# Sentinels that stand inside a call: the last of them in a render is where the calls end.
_CALL_SENTINELS = (v.FN1, v.FN2, v.ARG1, v.ARG2, v.STR1, v.STR2)


def last_call_sentinel_end(output: str, start: int = 0) -> int:
    """Where the last call sentinel of ``output`` ends (``start`` when it holds none)."""
    return max((output.rfind(s) + len(s) for s in _CALL_SENTINELS if s in output), default=start)


def continuation(full: str | Failed, output: str, last: int) -> str | None:
    """The text after ``output[:last]`` (the calls) in ``full``, a render where a message follows them."""
    if isinstance(full, Failed):
        return None
    head = output[:last]
    at = full.find(head[-200:]) if head else -1
    if at == -1:
        return None
    return full[at + len(head[-200:]) :]


def call_turn_end(
    session: Session, call_output: str | Failed, end: str | Unknown, stop: str, prompt: str | Unknown, opening: str
) -> str:
    """The marker that ends a turn holding tool calls where it is not the content turn's stop.

    Read as the content turn's end is: what the renders share after the calls when a tool result and
    when a user message follows them, less the next header. Where a user message after the calls
    still comes after the content turn's stop, call turns end as content turns do (""). Otherwise the
    last marker of that shared text ends the call turn (``<|eom_id|>``, ``<|calls|>``), provided a
    turn writes it once, after all its calls: a marker written after every call closes a call, not
    the turn. Only templates whose turns have an end marker of their own have one (where the next
    header ends a turn, it ends call turns too), and only a bracketed marker, which a model writes as
    one special token. Where the shared text holds none, the call turn is not closed and the next
    header's first marker ends it (``_next_header_start``)."""
    if not (isinstance(end, str) and end.strip() and stop and isinstance(call_output, str) and v.FN1 in call_output):
        return ""
    form = session.form
    message = v.assistant(form, calls=(v.CALL1,))
    last = last_call_sentinel_end(call_output)
    tool_after = continuation(session.history(message, v.tool_result(v.CALL1, v.RESULT_TEXT, form)), call_output, last)
    user_after = continuation(session.history(message, v.user(v.USER_TEXT2)), call_output, last)
    if tool_after is None or user_after is None:
        return ""
    if stop in user_after.partition(v.USER_TEXT2)[0]:
        # A user message after the calls closes the turn as after content: where a tool result writes
        # something else, the results are written inside the turn, not after its end.
        return ""
    shared = shared_turn_end(tool_after, user_after, prompt, opening)
    found = find_markers(shared)  # bracketed only: a run of symbols there is JSON or a code fence (``]```)
    marker = found[-1].group() if found else ""
    two = session.output(v.assistant(form, calls=(v.CALL1, v.CALL2))) if marker else None
    if isinstance(two, str) and v.FN1 in two and v.FN2 in two:
        first, second = sorted((two.find(v.FN1), two.find(v.FN2)))
        if marker in two[first:second]:
            marker = ""  # it closes a call, not the turn
    return marker or _next_header_start(tool_after[len(shared) :], user_after[len(shared) :], prompt)


def _next_header_start(after_tool: str, after_user: str, prompt: str | Unknown) -> str:
    """Where a turn with calls writes no end of its own while content turns do: the first marker of
    the next turn's header, which both continuations start with and the generation prompt too
    (command-r-plus: ``<|START_OF_TURN_TOKEN|>`` right after the calls). A model taught by such renders
    writes it next, so it ends the turn; "" where they start otherwise."""
    m = marker_at(after_tool.lstrip())
    if m is None or not isinstance(prompt, str):
        return ""
    marker = m.group()
    return marker if after_user.lstrip().startswith(marker) and prompt.startswith(marker) else ""


def ends_before_the_next_turn(turn: Turn) -> tuple[str, ...]:
    """The stops that end a turn before the next one starts: not a call turn's end that is the next
    header's first marker (``_next_header_start``), which starts the tool results' turn as well."""
    prompt = turn.generation_prompt if isinstance(turn.generation_prompt, str) else ""
    header_start = turn.call_end if turn.call_end and prompt.startswith(turn.call_end) else ""
    return tuple(stop for stop in turn.stop if stop != header_start)


def final_message_end(final_tail: str, end: str | Unknown, stop: str) -> str:
    """The marker that ends the last assistant message where it is not the end every other one has
    (``<|return|>`` for ``<|end|>``): the first marker of the final render after the content, when that
    render does not write the turn's end there. "" when it does, or writes no marker there."""
    if not (isinstance(end, str) and end.strip() and stop):
        return ""
    tail = final_tail.lstrip()
    if tail.startswith(end.strip()):
        return ""
    m = marker_at(tail)
    return m.group() if m and m.group() != stop else ""


def detect_turn(session: Session, call_output: str | Failed) -> Turn:
    prompt = generation_prompt(session)
    output = content_output(session)
    if isinstance(output, Failed) or v.CONTENT_TEXT not in output:
        reason = output.message if isinstance(output, Failed) else "assistant content is not written"
        return Turn(prompt, "", "", "", Unknown(reason), (), "", "")
    at = output.find(v.CONTENT_TEXT)
    final_after = output[at + len(v.CONTENT_TEXT) :]
    answer = v.assistant(session.form, content=v.CONTENT_TEXT)
    continued = session.history(answer, v.user(v.USER_TEXT2))
    then_user = None
    after_user = None  # what the template writes after a user's message: the user's turn end first
    if isinstance(continued, str) and v.USER_TEXT2 in continued:
        text = continued[: continued.rfind(v.USER_TEXT2)]
        then_user = after(text, v.CONTENT_TEXT)
        after_user = continued[continued.rfind(v.USER_TEXT2) + len(v.USER_TEXT2) :]
    opening = session.render(v.opening(session.form), generation_prompt=False)
    opening_text = opening if isinstance(opening, str) else ""

    if isinstance(call_output, str) and v.FN1 in call_output:
        # What a content turn and a call turn share at the start belongs to the turn, not the content.
        shared_head = marker_start(output, min(common_prefix_len(output, call_output), at))
        tail_len = common_suffix_len(output, call_output, limit=len(final_after))
        tail_start = marker_end(final_after, len(final_after) - tail_len)
        # A wrapper closes content only if a turn end shared with call turns follows it.
        content_close = final_after[:tail_start] if tail_start < len(final_after) else ""
    else:
        shared_head, content_close = at, ""
    # Content has a wrapper only if something opens it; otherwise what follows it ends the turn.
    if not output[shared_head:at] or (then_user is not None and not then_user.startswith(content_close)):
        content_close = ""

    if then_user is None:
        end: str | Unknown = Unknown("a user message after an assistant message does not render")
        stop_text = final_after[len(content_close) :]
    else:
        following = then_user[len(content_close) :]
        end = shared_turn_end(final_after[len(content_close) :], following, prompt, opening_text)
        if not end.strip():
            first = _first_marker(following)
            header = find_markers(following, symbols=True)
            # The first marker after the content ends the turn unless it is the next turn's header.
            next_header = (bool(header) and header[-1].group() == first.strip()) or (
                isinstance(prompt, str) and prompt.startswith(first.strip())
            )
            if first.strip() and not next_header:
                end = first
        stop_text = end if end.strip() else following
    found = find_markers(stop_text.strip(), symbols=True) if stop_text.strip() else []
    if isinstance(end, str) and end.strip() and found:
        stop = _turn_stop(end, after_user, call_output)
    else:
        stop = found[0].group() if found and found[0].start() == 0 else ""
    call_end = call_turn_end(session, call_output, end, stop, prompt, opening_text)
    final_end = final_message_end(final_after[len(content_close) :], end, stop)
    return Turn(
        generation_prompt=prompt,
        history_prefix=output[:shared_head],
        content_open=output[shared_head:at],
        content_close=content_close,
        end=end,
        stop=tuple(dict.fromkeys(text for text in (stop, call_end, final_end) if text)),
        call_end=call_end,
        final_end=final_end,
    )


def stops_the_model_writes(turn: Turn, written: tuple[str, ...]) -> Turn:
    """The turn without the stops that stand in markers the model writes inside its turn (a reasoning
    block's close, ``<|end|><|start|>assistant``): a server stopping there would cut every reply short
    of its answer. Only where the last message has an end of its own that remains a stop (gpt-oss:
    ``<|return|>``); otherwise that stop is also the only end of an answer, and the renders cannot
    tell a server the two apart, so it stays."""
    inside = {stop for stop in turn.stop if any(stop in marker for marker in written if marker)}
    kept = tuple(stop for stop in turn.stop if stop not in inside)
    return replace(turn, stop=kept) if inside and turn.final_end in kept else turn
