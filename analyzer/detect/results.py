"""Tool results: the wrapper a result is written in, and what links it to its call."""

from __future__ import annotations

import json

from analyzer.description import Results, Unknown
from analyzer.diff import common_prefix_len, common_suffix_len, repeated_unit
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


def _inserted(base: str, longer: str) -> str:
    """The text ``longer`` adds to ``base``, placed as late as it can go (after the turn it follows)."""
    head = common_prefix_len(base, longer)
    tail = common_suffix_len(base, longer, limit=min(len(base), len(longer)) - head)
    return longer[head:len(longer) - tail]


def detect_results(session: Session) -> Results | Unknown:
    form = session.form
    call_turn = v.assistant(form, calls=(v.CALL1,))
    base = session.history(call_turn)
    one = session.history(call_turn, v.tool_result(v.CALL1, v.RESULT_TEXT, form))
    if isinstance(base, Failed) or isinstance(one, Failed):
        failed = base if isinstance(base, Failed) else one
        return Unknown(f"a tool result does not render: {failed.message}")
    added = _inserted(base, one)
    at = added.find(v.RESULT_TEXT)
    if at == -1:
        return Unknown("the tool result text is not written")
    id1 = form.ids()[0]
    carries_id = id1 in added
    carries_name = v.FN1 in added

    payload = json.dumps(v.RESULT_JSON)
    as_json = session.history(call_turn, v.tool_result(v.CALL1, payload, form))
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
    both = session.history(pair, v.tool_result(v.CALL1, v.RESULT_TEXT, form),
                           v.tool_result(v.CALL2, v.RESULT_TEXT2, form))
    separator: str | Unknown = Unknown("two results do not render")
    if isinstance(first, str) and isinstance(both, str):
        id2 = form.ids()[1]
        unit = repeated_unit(first, both, lambda t: t.replace(v.RESULT_TEXT2, v.RESULT_TEXT)
                             .replace(id2, id1).replace(v.FN2, v.FN1), v.RESULT_TEXT)
        separator = unit.separator if unit else Unknown("two results are not written as one result repeated")

    return Results(
        role="tool",
        open=added[:at],
        close=added[at + len(v.RESULT_TEXT):],
        separator=separator,
        carries_id=carries_id,
        carries_name=carries_name,
        json_content=json_content,
        linked_by="id" if carries_id else "name" if carries_name else "order",
    )
