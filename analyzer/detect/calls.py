"""Tool calls: section markers, the per-call pattern, the separator between parallel calls.

One call and two parallel calls are rendered; the second render is the first with one more call
inserted, and the unit that repeats is one call (``diff.repeated_unit``). What wraps that unit in the
one-call render is the section; what is inserted before the second call is the separator. Inside the
unit, sentinels mark the fields: the function name, the id, an index that counts calls, and the
arguments, either inside one JSON object that is the whole call or on their own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from analyzer.description import (
    CallIds,
    Calls,
    Capability,
    ContentBeforeCalls,
    Field,
    IdsWritten,
    JsonArguments,
    JsonCall,
    PatternPart,
    Text,
    Turn,
    Unknown,
)
from analyzer.detect.arguments import Located, build_pattern, find_json_arguments, find_key_value_arguments, json_values
from analyzer.detect.json_style import detect_json_layout
from analyzer.detect.names import detect_name_escaping
from analyzer.detect.turn import continuation, last_call_sentinel_end, shared_turn_end
from analyzer.diff import find_all, repeated_unit
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


@dataclass(frozen=True, slots=True)
class CallsFinding:
    calls: Calls | Unknown
    parallel: Capability
    warnings: tuple[str, ...]


def _up_to_stop(text: str, turn: Turn) -> str:
    ends = [at for stop in turn.stop if stop and (at := text.find(stop)) != -1]
    return text[: min(ends)] if ends else text


def calls_region(
    session: Session, calls: tuple[v.Call, ...], output: str, turn: Turn, known_tail: str | None = None
) -> tuple[int, int, str | None]:
    """Span of ``output`` between what every assistant turn starts with and where the turn ends.

    A final message may be followed by text the template appends at the very end, which the model
    does not write. The turn ends at the first stop string after the last call sentinel, or where a
    tool result and a user message after the calls part, whichever comes first. That second end is
    returned as the text after the last sentinel, so a render of more calls can reuse it (``known_tail``).
    """
    start = len(turn.history_prefix) if output.startswith(turn.history_prefix) else 0
    last = last_call_sentinel_end(output, start)
    end = len(output)
    for stop in turn.stop:
        found = output.find(stop, last)
        if found != -1:
            end = min(end, found)
    tail = output[last:]
    shared = known_tail
    if shared is None:
        form = session.form
        message = v.assistant(form, calls=calls)
        then_tool = session.history(message, v.tool_result(calls[0], v.RESULT_TEXT, form))
        then_user = session.history(message, v.user(v.USER_TEXT2))
        tool_after = continuation(then_tool, output, last)
        user_after = continuation(then_user, output, last)
        if tool_after is not None and user_after is not None:
            opening = session.render(v.opening(form), generation_prompt=False)
            shared = shared_turn_end(
                tool_after, user_after, turn.generation_prompt, opening if isinstance(opening, str) else ""
            )
    if shared is not None and tail.startswith(shared):
        end = min(end, last + len(shared))
    return start, max(start, end), shared


def _substitute_call(form: v.Spelling) -> Callable[[str], str]:
    id1, id2 = v.ids(form)

    def substitute(text: str) -> str:
        text = text.replace(v.FN2, v.FN1).replace(v.STR2, v.STR1).replace(id2, id1)
        # Templates may write only part of an id (its last 9 characters, say).
        for size in range(len(id2) - 1, _MIN_ID_PART - 1, -1):
            for part2, part1 in ((id2[-size:], id1[-size:]), (id2[:size], id1[:size])):
                if part2 in text:
                    return text.replace(part2, part1)
        return text

    return substitute


def detect_calls(session: Session, turn: Turn, call_output: str | Failed, ids: CallIds | Unknown) -> CallsFinding:
    warnings: list[str] = []
    if isinstance(call_output, Failed):
        return CallsFinding(Unknown(f"a tool call does not render: {call_output.message}"), Capability("unknown"), ())
    if v.FN1 not in call_output:
        return CallsFinding(Unknown("tool calls in history are not written"), Capability("unknown"), ())
    form = session.form
    start, end, tail = calls_region(session, (v.CALL1,), call_output, turn)
    region = call_output[start:end]

    two = session.output(v.assistant(form, calls=(v.CALL1, v.CALL2)))
    unit = None
    late_closer = ""
    if isinstance(two, Failed):
        parallel = Capability("refused" if two.refused else "error", two.message)
    elif v.FN2 not in two:
        parallel = Capability("dropped", "only the first of two parallel calls is written")
    else:
        parallel = Capability("yes")
        two_start, two_end, _ = calls_region(session, (v.CALL1, v.CALL2), two, turn, known_tail=tail)
        two_region = two[two_start:two_end]
        unit = repeated_unit(region, two_region, _substitute_call(form), v.FN1)
        if unit is None:
            # Two calls may end with text one call goes without (a closer written after several calls).
            one_tail = region[last_call_sentinel_end(region) :]
            two_tail = two_region[last_call_sentinel_end(two_region) :]
            if two_tail.startswith(one_tail) and two_tail[len(one_tail) :].strip():
                late_closer = two_tail[len(one_tail) :]
                trimmed = two_region[: len(two_region) - len(late_closer)]
                unit = repeated_unit(region, trimmed, _substitute_call(form), v.FN1)
                late_closer = late_closer if unit is not None else ""
        if unit is None:
            warnings.append("two parallel calls are not written as one call repeated; separator unknown")

    separator: str | Unknown
    if unit is not None:
        call_start, call_end, separator = unit.start, unit.end, unit.separator
        counters = unit.counters
        second = unit.second
    else:
        stripped = region.strip()
        call_start = region.find(stripped) if stripped else 0
        call_end = call_start + len(stripped)
        separator = (
            Unknown("parallel calls are not written")
            if parallel.status != "yes"
            else Unknown("parallel calls do not repeat one pattern")
        )
        counters, second = (), None
    call_text = region[call_start:call_end]
    section_open, section_close = region[:call_start], region[call_end:]
    close_from = 1
    if unit is not None and not isinstance(two, Failed) and not section_close.strip():
        # A closer the template writes only once there are several calls: what the render of two calls
        # writes after them, in the calls' region or after it up to the turn's stop, and one call's not.
        one_after, two_after = _up_to_stop(call_output[end:], turn), _up_to_stop(two[two_end:], turn)
        late = two_after[: len(two_after) - len(one_after)] if two_after.endswith(one_after) else ""
        if late_closer:
            section_close, close_from = section_close + late_closer, 2
        elif late.strip():
            section_close, close_from = late, 2

    pattern_spans: list[tuple[int, int, PatternPart]] = []
    found = _json_call(call_text, second, form)
    json_call: JsonCall | None = None
    arguments: Any
    if found is not None:
        (js, je), json_call = found
        pattern_spans.append((js, je, Field("call")))
        arguments = json_arguments_of(json_call)
    else:
        located = find_json_arguments(call_text, v.CALL1.arguments)
        if located is None:
            kv = find_key_value_arguments(session, call_output, start + call_start, start + call_end)
            located = kv if isinstance(kv, Located) else None
            arguments = kv if isinstance(kv, Unknown) else kv.arguments
        else:
            arguments = located.arguments
        if located is not None:
            pattern_spans.append((located.start, located.end, Field("arguments")))
        taken = [(s, e) for s, e, _ in pattern_spans]
        pattern_spans += [
            (i, i + len(v.FN1), Field("name")) for i in find_all(call_text, v.FN1) if not _inside(i, taken)
        ]
        written_id = written_part(call_text, v.ids(form)[0])
        if written_id:
            pattern_spans += [
                (i, i + len(written_id), Field("id")) for i in find_all(call_text, written_id) if not _inside(i, taken)
            ]
        digit_runs = list(re.finditer(r"\d+", call_text))
        for k, old, _new in counters:
            run = digit_runs[k] if k < len(digit_runs) else None
            if run is not None and not _inside(run.start(), taken):
                pattern_spans.append((run.start(), run.end(), Field("index", int(old))))
    pattern = build_pattern(call_text, pattern_spans)

    content = session.output(v.assistant(form, content=v.CONTENT_TEXT, calls=(v.CALL1,)))
    content_before: ContentBeforeCalls | Unknown
    if isinstance(content, Failed):
        content_before = Unknown(f"content beside a call does not render: {content.message}")
    elif v.FN1 not in content:
        content_before = "calls dropped"  # the template writes the content and not the calls
    elif v.CONTENT_TEXT not in content:
        content_before = "dropped"
    else:
        # A stop between the content and the call: the template writes them as two messages, and a
        # model, which stops there, never writes both in one reply.
        at, call_at = content.find(v.CONTENT_TEXT), content.find(v.FN1)
        between = content[min(at, call_at) : max(at, call_at)]
        if any(stop and stop in between for stop in turn.stop):
            content_before = "separate turn"
        else:
            content_before = "after the calls" if at > call_at else "kept"

    no_arguments = _no_arguments(session, turn, pattern, section_open, section_close)
    json_separators, json_indent = detect_json_layout(session, call_object=isinstance(json_call, JsonCall))
    calls = Calls(
        section_open=section_open,
        section_close=section_close,
        separator=separator,
        call=pattern,
        json_call=json_call if isinstance(json_call, JsonCall) else None,
        arguments=arguments,
        ids=_written_ids(ids, pattern, json_call if isinstance(json_call, JsonCall) else None),
        content_before_calls=content_before,
        section_close_from=close_from,
        no_arguments=no_arguments,
        json_array=(
            isinstance(json_call, JsonCall)
            and section_open.rstrip().endswith("[")
            and section_close.lstrip().startswith("]")
            and isinstance(separator, str)
            and separator.strip() == ","
        ),
        json_separators=json_separators,
        json_indent=json_indent,
        name_escaping=detect_name_escaping(session),
    )
    return CallsFinding(calls, parallel, tuple(warnings))


def _no_arguments(
    session: Session, turn: Turn, pattern: tuple[PatternPart, ...], section_open: str, section_close: str
) -> tuple[PatternPart, ...] | Unknown:
    """How a call with no arguments is written, as a pattern with the name (and id) as fields.

    The call is cut out of its render by the markers already found: after the section opener, up
    to the section closer, or else to the call's own last literal.
    """
    call = v.Call(v.FN1, {}, 0)
    output = session.output(v.assistant(session.form, calls=(call,)))
    if isinstance(output, Failed):
        return Unknown(f"a call with no arguments does not render: {output.message}")
    name_at = output.find(v.FN1)
    if name_at == -1:
        return Unknown("a call with no arguments is not written")
    start = len(turn.history_prefix) if output.startswith(turn.history_prefix) else 0
    if section_open.strip():
        opened = output.rfind(section_open.strip(), 0, name_at)
        if opened != -1:
            start = opened + len(section_open.strip())
    last_literal = pattern[-1].text if pattern and isinstance(pattern[-1], Text) else ""
    # The turn ends at its first stop string after the call; the call ends before that.
    limit = min([at for at in (output.find(stop, name_at) for stop in turn.stop) if at != -1] or [len(output)])
    end = -1
    if section_close.strip():
        end = output.find(section_close.strip(), name_at, limit)
    if end == -1 and last_literal.strip():
        end = output.rfind(last_literal.strip(), name_at, limit)
        end = end + len(last_literal.strip()) if end != -1 else -1
    if end == -1:
        start, end, _ = calls_region(session, (call,), output, turn)
    text = output[start:end]
    written_id = written_part(text, v.ids(session.form)[0])
    spans: list[tuple[int, int, PatternPart]] = [(i, i + len(v.FN1), Field("name")) for i in find_all(text, v.FN1)]
    if written_id:
        spans += [(i, i + len(written_id), Field("id")) for i in find_all(text, written_id)]
    # An index counts calls: where the call pattern has one, the first call writes its base there.
    for k, part in enumerate(pattern):
        if isinstance(part, Field) and part.name == "index" and k and isinstance(previous := pattern[k - 1], Text):
            before = previous.text
            at = text.find(before + str(part.base))
            if at != -1:
                spans.append((at + len(before), at + len(before) + len(str(part.base)), Field("index", part.base)))
    return build_pattern(
        text.strip(),
        [(s - (len(text) - len(text.lstrip())), e - (len(text) - len(text.lstrip())), p) for s, e, p in spans],
    )


_MIN_ID_PART = 6


def written_part(text: str, call_id: str) -> str:
    """The id as the template writes it in ``text``: whole, or its longest end or start (at least
    six characters; a template may keep only the last nine, as a model's ids must be)."""
    if call_id in text:
        return call_id
    for size in range(len(call_id) - 1, _MIN_ID_PART - 1, -1):
        for part in (call_id[-size:], call_id[:size]):
            if part in text:
                return part
    return ""


def _inside(i: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= i < e for s, e in spans)


def json_arguments_of(call: JsonCall) -> JsonArguments:
    return JsonArguments(call.arguments_encoding)


def _written_ids(
    ids: CallIds | Unknown, pattern: tuple[PatternPart, ...], json_call: JsonCall | None
) -> CallIds | Unknown:
    if isinstance(ids, Unknown):
        return ids
    fields = {p.name for p in pattern if isinstance(p, Field)}
    written: IdsWritten
    if "id" in fields or (json_call is not None and json_call.id_path is not None):
        written = "as given"
    elif "index" in fields or (json_call is not None and json_call.index_path is not None):
        written = "generated"
    else:
        written = "not written"
    return CallIds(written, ids.accepted, ids.refused)


# --------------------------------------------------------------------------- JSON calls


def _paths(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, str(key)))


def _contains_name(value: Any) -> bool:
    if isinstance(value, dict):
        return v.FN1 in value or any(_contains_name(item) for item in value.values())
    return bool(value == v.FN1)


def _json_call(call_text: str, second: str | None, form: v.Spelling) -> tuple[tuple[int, int], JsonCall] | None:
    """The JSON object that is the whole call, if there is one: ((start, end), JsonCall)."""
    for start, end, value in json_values(call_text):
        if isinstance(value, dict) and _contains_name(value):
            other = None
            if second is not None:
                for _, _, candidate in json_values(second):
                    if isinstance(candidate, dict) and (v.FN2 in json.dumps(candidate)):
                        other = candidate
                        break
            layout = _layout(value, other, form)
            return ((start, end), layout) if layout is not None else None
    return None


def _layout(call: dict[str, Any], other: dict[str, Any] | None, form: v.Spelling) -> JsonCall | None:
    arguments = v.CALL1.arguments
    id1 = v.ids(form)[0]
    if v.FN1 in call and len(call) == 1:
        inner = call[v.FN1]
        # The only key is the name itself: no key order to record.
        if inner == arguments:
            return JsonCall((), True, (), "object", None, None, 0, (), ())
        if isinstance(inner, str) and _loads(inner) == arguments:
            return JsonCall((), True, (), "string", None, None, 0, (), ())
        return None
    name_path = arguments_path = id_path = index_path = None
    encoding: Literal["object", "string"] = "object"
    index_base = 0
    constants: list[tuple[tuple[str, ...], str]] = []
    other_leaves = dict(_paths(other)) if other is not None else {}
    for path, value in _paths(call):
        if not path:
            continue
        if value == v.FN1:
            name_path = path
        elif value == arguments:
            arguments_path, encoding = path, "object"
        elif isinstance(value, str) and _loads(value) == arguments:
            arguments_path, encoding = path, "string"
        elif isinstance(value, str) and value and value == written_part(value, id1):
            id_path = path
        elif isinstance(value, dict):
            if not _contains_name(value) and not _under(path, arguments_path):
                constants.append((path, json.dumps(value, ensure_ascii=False)))
        elif _under(path, arguments_path) or _under(path, name_path):
            continue
        elif path in other_leaves and other_leaves[path] != value and _is_counter(value, other_leaves[path]):
            index_path, index_base = path, int(value)
        elif not any(_under(path, p) for p, _ in constants):
            constants.append((path, json.dumps(value, ensure_ascii=False)))
    if name_path is None or arguments_path is None:
        return None
    constants = [(p, text) for p, text in constants if not _under(p, arguments_path)]
    return JsonCall(
        name_path, False, arguments_path, encoding, id_path, index_path, index_base, tuple(constants), tuple(call)
    )


def _under(path: tuple[str, ...], parent: tuple[str, ...] | None) -> bool:
    return parent is not None and len(path) > len(parent) and path[: len(parent)] == parent


def _is_counter(first: Any, second: Any) -> bool:
    try:
        return int(second) == int(first) + 1
    except (TypeError, ValueError):
        return False


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
