"""The assistant turn: generation prompt, what history adds at the start, content wrapper, turn end."""

from __future__ import annotations

from analyzer.description import Turn, Unknown
from analyzer.diff import common_prefix_len, common_suffix_len, marker_end, marker_start
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


def generation_prompt(session: Session) -> str | Unknown:
    with_prompt = session.prompt()
    without = session.render(v.opening(session.form), generation_prompt=False)
    if isinstance(with_prompt, Failed) or isinstance(without, Failed):
        failed = with_prompt if isinstance(with_prompt, Failed) else without
        return Unknown(f"prompt does not render: {failed.message}")
    return with_prompt[marker_start(with_prompt, common_prefix_len(with_prompt, without)):]


def content_output(session: Session) -> str | Failed:
    return session.output(v.assistant(session.form, content=v.CONTENT_TEXT))


def detect_turn(session: Session, call_output: str | Failed) -> Turn:
    prompt = generation_prompt(session)
    output = content_output(session)
    if isinstance(output, Failed) or v.CONTENT_TEXT not in output:
        reason = output.message if isinstance(output, Failed) else "assistant content is not written"
        return Turn(prompt, "", "", "", Unknown(reason), ())
    at = output.find(v.CONTENT_TEXT)
    after = output[at + len(v.CONTENT_TEXT):]
    if isinstance(call_output, str) and v.FN1 in call_output:
        # What a content turn and a call turn share at both ends belongs to the turn, not the content.
        shared_head = marker_start(output, min(common_prefix_len(output, call_output), at))
        tail_len = common_suffix_len(output, call_output, limit=len(after))
        tail_start = marker_end(output, len(output) - tail_len)
        end = output[tail_start:]
        content_close = output[at + len(v.CONTENT_TEXT):tail_start]
    else:
        shared_head, end, content_close = at, after, ""
    return Turn(
        generation_prompt=prompt,
        history_prefix=output[:shared_head],
        content_open=output[shared_head:at],
        content_close=content_close,
        end=end,
        stop=stop_strings(end, content_close),
    )


def stop_strings(end: str, content_close: str) -> tuple[str, ...]:
    """The text a server stops on: the turn end without the newline templates add after it."""
    for candidate in (end, content_close):
        if candidate.strip():
            return (candidate.strip(),)
    return ()
