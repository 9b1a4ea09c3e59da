"""How a template writes the JSON of its calls: the separators between items and after keys.

A call with two arguments is rendered and the outermost JSON object holding its arguments (the call
object, or the arguments themselves) is read back: the separators are the ones ``json.dumps`` needs
to write that text exactly (``", "``/``": "`` as Python's defaults and most templates' ``tojson``,
``","``/``":"`` compact). A Python dict written by the template is read the same way against
``repr``. Anything else (indented JSON, JSON not written by one rule) is unknown: the renders give no
single pair.
"""

from __future__ import annotations

import json
from typing import Any

from analyzer.description import Unknown
from analyzer.detect.arguments import json_values, python_dicts
from analyzer.render import variants as v
from analyzer.render.conversation import Failed
from analyzer.render.session import Session

_CANDIDATES = ((", ", ": "), (",", ":"), (",", ": "), (", ", ":"))
_ARGUMENTS = {v.ARG1: v.STR1, v.ARG2: v.STR2}
_OBJECT = {v.ARG2: v.STR2, "n": v.NUM1}


def _holds(value: Any, arguments: dict[str, Any]) -> bool:
    """Whether a JSON value is the arguments or holds them (as a member, or as a JSON string)."""
    if value == arguments:
        return True
    if isinstance(value, dict):
        return any(_holds(item, arguments) for item in value.values())
    if isinstance(value, list):
        return any(_holds(item, arguments) for item in value)
    if isinstance(value, str) and value.startswith("{"):
        try:
            return bool(json.loads(value) == arguments)
        except ValueError:
            return False
    return False


def separators_of(text: str, value: Any) -> tuple[str, str] | None:
    """The (item, key) separators with which ``json.dumps`` writes ``value`` as ``text``, if any."""
    for separators in _CANDIDATES:
        for ascii_only in (False, True):
            if json.dumps(value, separators=separators, ensure_ascii=ascii_only) == text:
                return separators
    return None


def detect_json_separators(session: Session) -> tuple[str, str] | Unknown:
    """From a call with two string arguments, else (a template that writes arguments one by one) from
    one argument holding an object, which such a template writes as JSON if at all."""
    reason = "the calls hold no JSON object"
    for target, arguments in ((_ARGUMENTS, _ARGUMENTS), (_OBJECT, {v.ARG1: _OBJECT})):
        output = session.output(v.assistant(session.form, calls=(v.Call(v.FN1, dict(arguments), 0),)))
        if isinstance(output, Failed):
            reason = f"a call does not render: {output.message}"
            continue
        for start, end, value in json_values(output):
            if _holds(value, target):
                found = separators_of(output[start:end], value)
                if found is None:
                    return Unknown(
                        f"the call's JSON is not written with one pair of separators: {output[start:end]!r:.80}"
                    )
                return found
        for start, end, value in python_dicts(output):
            if _holds(value, target):
                if output[start:end] == repr(value):
                    return (", ", ": ")
                return Unknown(f"the call's Python dict is not written as repr writes it: {output[start:end]!r:.80}")
    return Unknown(reason)
