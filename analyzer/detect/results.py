"""Tool results: the wrapper a result is written in, and what links it to its call."""

from __future__ import annotations

import json

from analyzer.description import Field, PatternPart, Results, ResultsJsonContent, ResultsRenderedAs, Unknown
from analyzer.detect.arguments import build_pattern
from analyzer.detect.calls import written_part
from analyzer.diff import added_text, find_all, repeated_unit
from analyzer.markers import first_marker
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


def _wrapper(render: str, added: str, stops: tuple[str, ...]) -> tuple[str, str]:
    """Text before and after the result. The diff against the render without a result can reach back
    into the assistant turn (templates write calls differently when a result follows), so where the
    turn's stop string comes before the result, the wrapper starts after it; likewise it ends at the
    first stop after the result."""
    at = added.find(v.RESULT_TEXT)
    before, after_result = added[:at], added[at + len(v.RESULT_TEXT) :]
    where = render.rfind(v.RESULT_TEXT)
    head, tail = render[:where], render[where + len(v.RESULT_TEXT) :]
    for stop in stops:
        cut = head.rfind(stop)
        if cut != -1:
            rest = head[cut + len(stop) :]
            # Extend back to the turn end over a short header; cut a diff that reached past it.
            if (len(rest) >= len(before) and len(rest) - len(before) <= 64) or len(rest) < len(before):
                before = rest.lstrip()
        ends = tail.find(stop)
        if ends != -1 and ends <= len(after_result) + 2 * len(stop):
            end = ends + len(stop)
            after_result = tail[:end] + tail[end:][: len(tail[end:]) - len(tail[end:].lstrip("\n"))]
    return before, after_result


def detect_results(session: Session, stops: tuple[str, ...] = ()) -> Results | Unknown:
    form = session.form
    call_turn = v.assistant(form, calls=(v.CALL1,))
    base = session.history(call_turn)
    one = session.history(call_turn, v.tool_result(v.CALL1, v.RESULT_TEXT, form))
    if isinstance(base, Failed) or isinstance(one, Failed):
        failed = next(render for render in (base, one) if isinstance(render, Failed))
        return Unknown(f"a tool result does not render: {failed.message}")
    added = added_text(base, one, v.RESULT_TEXT)
    if added is None:
        return Unknown("the tool result text is not written")
    id1 = v.ids(form)[0]
    carries_id = bool(written_part(added, id1))
    carries_name = v.FN1 in added

    payload = json.dumps(v.RESULT_JSON)
    as_json = session.history(call_turn, v.tool_result(v.CALL1, payload, form))
    json_content: ResultsJsonContent
    if isinstance(as_json, Failed):
        json_content = "unknown"
    elif payload in as_json:
        json_content = "as is"
    elif json.dumps(payload)[1:-1] in as_json:
        json_content = "quoted"
    else:
        json_content = "rewritten"

    pair = v.assistant(form, calls=(v.CALL1, v.CALL2))
    first = session.history(pair, v.tool_result(v.CALL1, v.RESULT_TEXT, form))
    both = session.history(
        pair, v.tool_result(v.CALL1, v.RESULT_TEXT, form), v.tool_result(v.CALL2, v.RESULT_TEXT2, form)
    )
    separator: str | Unknown = Unknown("two results do not render")
    unit = None
    if isinstance(first, str) and isinstance(both, str):
        id2 = v.ids(form)[1]
        unit = repeated_unit(
            first,
            both,
            lambda t: t.replace(v.RESULT_TEXT2, v.RESULT_TEXT).replace(id2, id1).replace(v.FN2, v.FN1),
            v.RESULT_TEXT,
        )
        separator = unit.separator if unit else Unknown("two results are not written as one result repeated")

    open_text, close_text = _wrapper(one, added, stops)
    group_open = group_close = ""
    if isinstance(first, str) and isinstance(both, str) and unit is not None:
        # Results that follow each other may share one wrapper (one tool turn holding several
        # responses): what repeats per result is the unit; the rest wraps the group.
        at = unit.first.find(v.RESULT_TEXT)
        item_open, item_close = unit.first[:at], unit.first[at + len(v.RESULT_TEXT) :]
        if item_open.strip() and open_text.endswith(item_open) and open_text != item_open:
            group_open, open_text = open_text[: len(open_text) - len(item_open)], item_open
        if item_close.strip() and close_text.startswith(item_close) and close_text != item_close:
            group_close, close_text = close_text[len(item_close) :], item_close
    rendered_as = _rendered_as(session, one, group_open + open_text, stops)
    return Results(
        role="tool",
        open=_with_fields(open_text, id1),
        close=_with_fields(close_text, id1),
        separator=separator,
        group_open=_with_fields(group_open, id1),
        group_close=_with_fields(group_close, id1),
        carries_id=carries_id,
        carries_name=carries_name,
        json_content=json_content,
        linked_by="id" if carries_id else "name" if carries_name else "order",
        rendered_as=rendered_as,
    )


def _with_fields(text: str, call_id: str) -> tuple[PatternPart, ...]:
    """The wrapper as a pattern: the tool name and the call id it writes are fields, not literal text."""
    spans: list[tuple[int, int, PatternPart]] = [(i, i + len(v.FN1), Field("name")) for i in find_all(text, v.FN1)]
    written = written_part(text, call_id)
    if written:
        spans += [(i, i + len(written), Field("id")) for i in find_all(text, written)]
    return build_pattern(text, spans)


def _rendered_as(session: Session, render: str, open_text: str, stops: tuple[str, ...]) -> ResultsRenderedAs:
    """Whether results are written as a user turn, a turn of their own, or inside the assistant turn.

    A user turn is recognised by the header written before a user message; a result with no turn end
    between the calls and itself sits inside the assistant turn.
    """
    opening = session.render([v.user()], tools=True)
    if isinstance(opening, str) and v.USER_TEXT in opening:
        head = opening[: opening.find(v.USER_TEXT)]
        cut = max((head.rfind(stop) + len(stop) for stop in stops if stop in head), default=-1)
        user_header = head[cut:].lstrip() if cut >= 0 else ""
        if user_header.strip() and open_text.startswith(user_header.strip()):
            return "user turn"
    before_result = render[: render.rfind(v.RESULT_TEXT)]
    after_calls = before_result[before_result.rfind(v.STR1) + len(v.STR1) :]
    # No turn end between the calls and the result, and no marker of a header before it.
    if stops and not any(stop in after_calls for stop in stops) and first_marker(open_text, symbols=True) is None:
        return "inside the assistant turn"
    return "own turn"
