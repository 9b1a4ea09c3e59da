"""How a template writes the JSON of its calls: the separators between items and after keys, and
the indentation.

A call with two arguments is rendered and the outermost JSON object holding its arguments (the call
object, or the arguments themselves) is read back: the separators are the ones ``json.dumps`` needs
to write that text exactly (``", "``/``": "`` as Python's defaults and most templates' ``tojson``,
``","``/``":"`` compact). A Python dict written by the template is read the same way against
``repr``.

Indented JSON (``tojson(indent=4)``, then the template's ``indent(8)``) is read the same way: the
object the grammar writes as one value (the call object where the template writes one, else the
arguments, or the argument holding an object) must be ``json.dumps(value, indent=unit)`` with every
line after the first moved right by a base, the whitespace before its closing brace. The indentation
is (unit, base), ("", "") for JSON on one line. Anything else (JSON not written by one rule) is
unknown: the renders give no single pair.
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
# Indentation units tried, the common ones first: json.dumps takes a count of spaces or a string.
_UNITS = ("    ", "  ", "\t", " ", "   ", "      ", "        ")
JsonIndent = tuple[str, str]  # (unit, base): one level, and what every line after the first starts with
ON_ONE_LINE: JsonIndent = ("", "")
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


def layout_of(text: str, value: Any) -> tuple[tuple[str, str], JsonIndent] | None:
    """The separators and indentation with which ``json.dumps`` writes ``value`` as ``text``, if any."""
    indents: tuple[JsonIndent, ...] = (ON_ONE_LINE,)
    if "\n" in text:
        last = text.rsplit("\n", 1)[1]
        base = last[:-1]
        if base.strip() or not last:
            return None
        indents = tuple((unit, base) for unit in _UNITS)
    for unit, base in indents:
        for separators in _CANDIDATES:
            for ascii_only in (False, True):
                written = json.dumps(value, separators=separators, ensure_ascii=ascii_only, indent=unit or None)
                if (written.replace("\n", "\n" + base) if base else written) == text:
                    return separators, (unit, base)
    return None


def _innermost(text: str, target: dict[str, Any]) -> str | None:
    """The text of the object equal to ``target`` inside ``text``: the arguments a call object holds."""
    for start, end, value in json_values(text):
        if value == target:
            return text[start:end]
    return None


def detect_json_layout(session: Session, call_object: bool) -> tuple[tuple[str, str] | Unknown, JsonIndent | Unknown]:
    """The calls' JSON separators and indentation. From a call with two string arguments, else (a
    template that writes arguments one by one) from one argument holding an object, which such a
    template writes as JSON if at all. ``call_object``: the template writes each call as one JSON
    object, the value whose indentation is measured; else it is the arguments' own object."""
    reason = "the calls hold no JSON object"
    for target, arguments in ((_ARGUMENTS, _ARGUMENTS), (_OBJECT, {v.ARG1: _OBJECT})):
        output = session.output(v.assistant(session.form, calls=(v.Call(v.FN1, dict(arguments), 0),)))
        if isinstance(output, Failed):
            reason = f"a call does not render: {output.message}"
            continue
        for start, end, value in json_values(output):
            if _holds(value, target):
                found = layout_of(output[start:end], value)
                if found is None:
                    written = output[start:end]
                    unknown = Unknown(f"the call's JSON is not written by one rule of layout: {written!r:.80}")
                    return unknown, unknown
                separators, indent = found
                if not call_object and value != target and indent != ON_ONE_LINE:
                    inner = _innermost(output[start:end], target)
                    inner_layout = layout_of(inner, target) if inner is not None else None
                    if inner_layout is None:
                        return separators, Unknown(
                            f"the arguments' own JSON is not found written by one rule in {output[start:end]!r:.80}"
                        )
                    indent = inner_layout[1]
                return separators, indent
        for start, end, value in python_dicts(output):
            if _holds(value, target):
                if output[start:end] == repr(value):
                    return (", ", ": "), ON_ONE_LINE
                unknown = Unknown(f"the call's Python dict is not written as repr writes it: {output[start:end]!r:.80}")
                return unknown, unknown
    return Unknown(reason), Unknown(reason)
