"""Checking a tool call's arguments against the tool's JSON schema, with the standard library only.

The library and every generated parser module must judge arguments the same way, and a generated
module may not depend on anything outside the standard library, so this one validator serves both:
generated modules copy this file as is. That is why it imports only the standard library, uses no
relative imports, and gives every top-level name a ``schema``-specific spelling (it is concatenated
with other runtime modules into one file).

Semantics are JSON Schema 2020-12 for type, enum, const, required, properties, patternProperties,
additionalProperties, propertyNames, minProperties, maxProperties, items, prefixItems, contains,
minContains, maxContains, minItems, maxItems, uniqueItems, minLength, maxLength, pattern, minimum,
maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, anyOf, oneOf, allOf, not, if/then/else,
dependentRequired, dependentSchemas, $ref, $dynamicRef (which, within one document, resolves as $ref
does), $defs and boolean schemas; plus the older forms that real tool schemas still use (``items`` as
a list with ``additionalItems``, boolean ``exclusiveMinimum``/``exclusiveMaximum`` beside
``minimum``/``maximum``, ``definitions``, OpenAPI's ``nullable``). Where jsonschema, which the library
used before, decides a case its own way (``multipleOf`` on floats), this module decides it the same.

A tool's schema is untrusted input, and so are the model's arguments. Hence:

- a ``$ref`` is only ever resolved inside the schema's own document; nothing here reads a file, opens
  a connection or imports a module on demand;
- ``schema_problem`` and ``validate`` never raise, whatever JSON (or Python) value they are given;
- work is bounded: values nested more than ``_SCHEMA_MAX_VALUE_DEPTH`` levels, schemas nested more than
  ``_SCHEMA_MAX_DOCUMENT_DEPTH`` levels, chains of more than ``_SCHEMA_MAX_NESTING`` subschemas applied
  inside one another, and runs of more than ``_SCHEMA_MAX_STEPS`` subschema applications are refused
  with a single, explicit violation or problem instead of being followed.
  One thing is not bounded: Python's ``re`` has no time limit, so a ``pattern`` prone to catastrophic
  backtracking can be slow on a hostile string.
"""

import dataclasses
import fractions
import math
import re
import reprlib
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeGuard

# How far checking goes before it refuses, rather than exhaust the stack or the clock. Containers in a
# value may nest this deep (tool arguments never come close).
_SCHEMA_MAX_VALUE_DEPTH = 100
# How deep a schema document (every object and array in it, data such as ``const`` included) may nest.
_SCHEMA_MAX_DOCUMENT_DEPTH = 200
# How many subschemas may be applied inside one another while checking one value (``$ref`` chains and
# combinators count, as well as each level of the value): each costs two Python frames.
_SCHEMA_MAX_NESTING = 300
# How many members a value or a schema document may hold in all.
_SCHEMA_MAX_PARTS = 1_000_000
# How many times one ``validate`` call may apply a subschema to a part of the value. Shared references
# under ``anyOf`` can otherwise make the work grow exponentially with the schema's size.
_SCHEMA_MAX_STEPS = 1_000_000

_SCHEMA_TYPE_NAMES = ("array", "boolean", "integer", "null", "number", "object", "string")
_SCHEMA_ANCHOR_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*\Z")

# Keywords whose value is one subschema, a list of subschemas, or a map of names to subschemas: the
# places a walk over a schema's own subschemas goes (``items`` is either of the first two).
_SCHEMA_ONE_SUBSCHEMA = (
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_SUBSCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf", "items")
_SCHEMA_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_SCHEMA_REFERENCES = ("$ref", "$dynamicRef")
_SCHEMA_ANCHORS = ("$anchor", "$dynamicAnchor")


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaViolation:
    """One way a value breaks its schema, kept structured so that callers can word, filter or locate it
    themselves (the library's parser, for one, reports unknown arguments its own way).

    ``path`` leads from the checked value to the offending part (object member names and array
    indexes); it is ``()`` for the value itself, and the containing object's path for ``required``,
    ``dependentRequired`` and ``propertyNames``, since a missing member or a bad name has no location
    of its own. ``keyword`` names the schema keyword that failed; ``"false"`` is the ``false`` schema,
    and three names are not schema keywords: ``"depth"`` and ``"size"`` when checking stopped at one
    of the module's limits (the value is then not checked at all, and this is the only violation) and
    ``"error"`` for a failure that should not happen (reported, never raised)."""

    path: tuple[str | int, ...]
    keyword: str
    message: str


def schema_problem(schema: object) -> str:
    """Why ``schema`` cannot be used to check values, in one sentence, or ``""`` when it can.

    A caller decides once per tool whether its schema is usable, so that a broken schema is reported
    as such rather than blamed on the model's arguments. Refused: a keyword whose value has the wrong
    type, a ``pattern`` that does not compile, a ``$ref`` that leaves the document (it is never
    followed: the schema is untrusted) or points to nothing in it, a ``$ref`` loop that never goes
    deeper into the value, an ``$id`` below the root (references would then resolve against an
    embedded resource, which is not supported), and a schema too deep or too large to check safely."""
    try:
        return _schema_find_problem(schema)
    except RecursionError:
        return "the schema nests too deeply to be examined"
    except Exception as exc:
        return f"the schema could not be examined ({type(exc).__name__})"


def validate(schema: object, value: object) -> list[SchemaViolation]:
    """Every way ``value`` breaks ``schema``, sorted by path, then in the order of the schema's keywords.

    All violations are returned, not the first, so a caller can report each bad argument at once and
    the order is the same on every run. The schema is assumed usable (``schema_problem(schema) == ""``);
    a part of it that is not is skipped rather than raised on. ``format`` is an annotation only, as in
    jsonschema's default; ``unevaluatedProperties``, ``unevaluatedItems`` and draft-7 ``dependencies``
    are not checked; other unknown keywords are ignored."""
    try:
        too_big = _schema_value_too_big(value)
        if too_big is not None:
            return [too_big]
        run = _SchemaRun(schema)
        found: list[SchemaViolation] = []
        _schema_apply(run, schema, value, (), 0, found, False)
        if run.fatal is not None:
            return [run.fatal]
        found.sort(key=_schema_path_order)
        return found
    except RecursionError:
        return [SchemaViolation((), "depth", "the value and its schema nest too deeply here to be checked")]
    except Exception as exc:
        return [SchemaViolation((), "error", f"the value could not be checked ({type(exc).__name__})")]


# --------------------------------------------------------------------------- shared helpers


class _SchemaShortRepr(reprlib.Repr):
    """Values in messages are shortened: a message names the value, it does not reproduce it."""

    def repr_int(self, x: int, level: int) -> str:
        # repr() refuses integers of more than 4300 digits; say how big it is instead.
        if x.bit_length() > 10_000:
            return f"<an integer of about {int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


_SCHEMA_SHORT_REPR = _SchemaShortRepr()
_SCHEMA_SHORT_REPR.maxstring = 60
_SCHEMA_SHORT_REPR.maxother = 60
_SCHEMA_SHORT_REPR.maxlong = 40
_SCHEMA_SHORT_REPR.maxlist = 8
_SCHEMA_SHORT_REPR.maxdict = 6
_SCHEMA_SHORT_REPR.maxlevel = 3


def _schema_show(value: object) -> str:
    try:
        return _SCHEMA_SHORT_REPR.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _schema_count(count: object, one: str, many: str) -> str:
    return f"{_schema_show(count)} {one if count == 1 else many}"


def _schema_is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _schema_is_count(value: object) -> bool:
    """A non-negative integer, 2.0 included: JSON does not tell 2 from 2.0."""
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _schema_has_type(value: object, name: object) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "number":
        return _schema_is_number(value)
    if name == "integer":
        return _schema_is_integer(value)
    return False


def _schema_is_integer(value: object) -> bool:
    """An integer, 2.0 included: JSON does not tell 2 from 2.0."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _schema_key(value: object, room: int = _SCHEMA_MAX_VALUE_DEPTH + 1) -> object:
    """A hashable stand-in for ``value`` under JSON equality: equal keys for equal JSON values, so that
    ``enum``, ``const`` and ``uniqueItems`` take one hash lookup each. 1 and 1.0 share a key (Python's
    numbers hash alike); booleans are tagged apart from numbers; object member order does not count.
    Parts nested deeper than any value that gets checked, and non-JSON objects, equal nothing."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    if room > 0 and isinstance(value, list):
        return (4, tuple([_schema_key(item, room - 1) for item in value]))
    if room > 0 and isinstance(value, dict):
        return (5, frozenset([(name, _schema_key(item, room - 1)) for name, item in value.items()]))
    return (6, object())


def _schema_step(name: object) -> str | int:
    """A member name as a path step: JSON names are strings, but a Python caller may use other keys."""
    if type(name) is str or type(name) is int:
        return name
    return _schema_show(name)


def _schema_path_order(violation: SchemaViolation) -> tuple[tuple[int, object], ...]:
    return tuple((0, step) if isinstance(step, int) else (1, str(step)) for step in violation.path)


def _schema_where(tokens: tuple[object, ...]) -> str:
    """Where in a schema, as a JSON pointer, for messages."""
    if not tokens:
        return ""
    escaped = (str(token).replace("~", "~0").replace("/", "~1") for token in tokens)
    return " at /" + "/".join(escaped)


_SCHEMA_NOWHERE = object()


def _schema_resolve(root: object, reference: object, anchors: dict[str, object]) -> object:
    """What a local reference (``#``, ``#/json/pointer``, ``#anchor``) names in ``root``, or
    ``_SCHEMA_NOWHERE``. Only the document itself is consulted: any other reference names nothing."""
    if not isinstance(reference, str) or not reference.startswith("#"):
        return _SCHEMA_NOWHERE
    fragment = urllib.parse.unquote(reference[1:])
    if not fragment:
        return root
    if not fragment.startswith("/"):
        return anchors.get(fragment, _SCHEMA_NOWHERE)
    node = root
    for token in fragment[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif (
            isinstance(node, list)
            and token.isascii()
            and token.isdigit()
            and len(token) < 19
            and int(token) < len(node)
        ):
            node = node[int(token)]
        else:
            return _SCHEMA_NOWHERE
    return node


def _schema_subschemas(node: dict[object, object]) -> list[tuple[tuple[object, ...], dict[object, object]]]:
    """The object subschemas directly inside ``node`` with their pointer tokens (boolean subschemas hold
    nothing to walk into)."""
    found: list[tuple[tuple[object, ...], dict[object, object]]] = []
    for keyword, part in node.items():
        if keyword in _SCHEMA_ONE_SUBSCHEMA and isinstance(part, dict):
            found.append(((keyword,), part))
        elif keyword in _SCHEMA_SUBSCHEMA_LISTS and isinstance(part, list):
            found.extend(((keyword, index), item) for index, item in enumerate(part) if isinstance(item, dict))
        elif keyword in _SCHEMA_SUBSCHEMA_MAPS and isinstance(part, dict):
            found.extend(((keyword, name), item) for name, item in part.items() if isinstance(item, dict))
    return found


def _schema_anchor_table(root: object) -> tuple[dict[str, object], str]:
    """Every ``$anchor`` (and ``$dynamicAnchor``, which also names its schema for ``$ref``) declared in
    the schema's subschemas, with the first one declared twice, if any. Iterative and visiting each
    object once, so any schema is walked in bounded time and stack."""
    anchors: dict[str, object] = {}
    twice = ""
    seen: set[int] = set()
    pending: list[tuple[object, tuple[object, ...]]] = [(root, ())]
    while pending:
        node, tokens = pending.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        for keyword in _SCHEMA_ANCHORS:
            name = node.get(keyword)
            if isinstance(name, str):
                if anchors.get(name, node) is not node and not twice:
                    twice = f"anchor {name!r}{_schema_where(tokens)} is declared more than once"
                anchors.setdefault(name, node)
        pending.extend((child, tokens + step) for step, child in reversed(_schema_subschemas(node)))
    return anchors, twice


# --------------------------------------------------------------------------- schema_problem


def _schema_find_problem(schema: object) -> str:
    oversized = _schema_document_too_big(schema)
    if oversized:
        return oversized
    if not isinstance(schema, (dict, bool)):
        return f"a schema must be a JSON object or a boolean, not {_schema_show(schema)}"
    anchors, twice = _schema_anchor_table(schema)
    if twice:
        return twice
    surveyed: dict[int, tuple[dict[object, object], tuple[object, ...]]] = {}
    references: list[tuple[str, tuple[object, ...]]] = []
    problem = _schema_survey(schema, schema, (), surveyed, references)
    position = 0
    while not problem and position < len(references):
        reference, tokens = references[position]
        position += 1
        where = _schema_where(tokens)
        if not reference.startswith("#"):
            return (
                f"$ref {reference!r}{where} points outside the schema's own document, "
                "and such references are never followed"
            )
        target = _schema_resolve(schema, reference, anchors)
        if target is _SCHEMA_NOWHERE:
            return f"$ref {reference!r}{where} points to nothing in the schema"
        if not isinstance(target, (dict, bool)):
            return f"$ref {reference!r}{where} points to {_schema_show(target)}, which is not a schema"
        # A reference may point into a place the walk did not take (an unknown keyword): check it too.
        problem = _schema_survey(schema, target, _schema_pointer_tokens(reference), surveyed, references)
    return problem or _schema_loop(schema, anchors)


def _schema_document_too_big(schema: object) -> str:
    parts = 0
    pending: list[tuple[object, int]] = [(schema, 0)]
    while pending:
        node, depth = pending.pop()
        members: Iterable[object]
        if isinstance(node, dict):
            members = node.values()
        elif isinstance(node, list):
            members = node
        else:
            continue
        if depth >= _SCHEMA_MAX_DOCUMENT_DEPTH:
            return f"the schema is nested more than {_SCHEMA_MAX_DOCUMENT_DEPTH} levels deep"
        parts += len(node)
        if parts > _SCHEMA_MAX_PARTS:
            return f"the schema has more than {_SCHEMA_MAX_PARTS:,} parts"
        pending.extend((member, depth + 1) for member in members if isinstance(member, (dict, list)))
    return ""


def _schema_pointer_tokens(reference: str) -> tuple[object, ...]:
    fragment = urllib.parse.unquote(reference[1:])
    if not fragment.startswith("/"):
        return ()
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in fragment[1:].split("/"))


def _schema_survey(
    root: object,
    start: object,
    tokens: tuple[object, ...],
    surveyed: dict[int, tuple[dict[object, object], tuple[object, ...]]],
    references: list[tuple[str, tuple[object, ...]]],
) -> str:
    """Check the keywords of ``start`` and of every subschema inside it not surveyed yet; note each
    reference met for the caller to resolve."""
    pending: list[tuple[object, tuple[object, ...]]] = [(start, tokens)]
    while pending:
        node, tokens = pending.pop()
        if not isinstance(node, dict) or id(node) in surveyed:
            continue
        surveyed[id(node)] = (node, tokens)
        for keyword, part in node.items():
            need = _SCHEMA_NEEDS.get(keyword) if isinstance(keyword, str) else None
            wrong = need(part) if need is not None else ""
            if wrong:
                return f"{keyword!r}{_schema_where(tokens)} {wrong}, not {_schema_show(part)}"
            if keyword in _SCHEMA_REFERENCES:
                references.append((part, tokens))
        if "$id" in node and node is not root:
            return (
                f"'$id'{_schema_where(tokens)} starts an embedded schema resource, which is not "
                "supported: references resolve against the whole document only"
            )
        pending.extend((child, tokens + step) for step, child in reversed(_schema_subschemas(node)))
    return ""


def _schema_loop(root: object, anchors: dict[str, object]) -> str:
    """A chain of ``$ref`` and in-place keywords (allOf, anyOf, oneOf, not, if/then/else,
    dependentSchemas) that comes back to where it started applies a schema to the same value forever:
    checking could never end, so such a schema is refused (unless no value ever reaches it: a loop
    among unused definitions is harmless)."""
    state: dict[int, int] = {}  # 1: on the current chain, 2: done
    for start in _schema_applied(root, anchors):
        if id(start) in state:
            continue
        state[id(start)] = 1
        chain: list[tuple[dict[object, object], Iterator[tuple[str, object]], str]] = [
            (start, iter(_schema_in_place(start, root, anchors)), "")
        ]
        while chain:
            node, edges, _ = chain[-1]
            edge = next(edges, None)
            if edge is None:
                state[id(node)] = 2
                chain.pop()
                continue
            reference, target = edge
            if not isinstance(target, dict):
                continue
            mark = state.get(id(target))
            if mark == 1:
                # Name a reference on the loop: the one closing it, or one on the way.
                on_loop = [entry[2] for entry in chain[[id(e[0]) for e in chain].index(id(target)) + 1 :]]
                named = reference or next((ref for ref in on_loop if ref), "")
                if not named:
                    return "the schema contains itself in place, so checking would never end"
                return (
                    f"$ref {named!r} leads back to a schema it is part of without going deeper "
                    "into the value, so checking would never end"
                )
            if mark is None:
                state[id(target)] = 1
                chain.append((target, iter(_schema_in_place(target, root, anchors)), reference))
    return ""


def _schema_applied(root: object, anchors: dict[str, object]) -> list[dict[object, object]]:
    """The object subschemas that checking a value can reach from the root: through applicators and
    references, but not into ``$defs`` or ``definitions`` directly."""
    found: list[dict[object, object]] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        pending.extend(child for step, child in _schema_subschemas(node) if step[0] not in ("$defs", "definitions"))
        pending.extend(
            _schema_resolve(root, node[keyword], anchors)
            for keyword in _SCHEMA_REFERENCES
            if isinstance(node.get(keyword), str)
        )
    return found


def _schema_in_place(node: dict[object, object], root: object, anchors: dict[str, object]) -> list[tuple[str, object]]:
    """The subschemas ``node`` applies to the very value it is applied to, each with the reference
    that leads there ("" when none does)."""
    found: list[tuple[str, object]] = []
    for keyword, part in node.items():
        if keyword in ("allOf", "anyOf", "oneOf") and isinstance(part, list):
            found.extend(("", item) for item in part)
        elif keyword in ("not", "if") or (keyword in ("then", "else") and "if" in node):
            found.append(("", part))
        elif keyword == "dependentSchemas" and isinstance(part, dict):
            found.extend(("", item) for item in part.values())
        elif keyword in _SCHEMA_REFERENCES and isinstance(part, str):
            found.append((part, _schema_resolve(root, part, anchors)))
    return found


# What each keyword's value must be, as the end of a sentence ("'minimum' must be a number"), "" when it is.


def _schema_need_schema(part: object) -> str:
    return "" if isinstance(part, (dict, bool)) else "must be a schema (an object or a boolean)"


def _schema_need_schemas(part: object) -> str:
    if isinstance(part, list) and part and all(isinstance(item, (dict, bool)) for item in part):
        return ""
    return "must be a non-empty array of schemas (objects or booleans)"


def _schema_need_items(part: object) -> str:
    if isinstance(part, (dict, bool)):
        return ""
    if isinstance(part, list) and all(isinstance(item, (dict, bool)) for item in part):
        return ""
    return "must be a schema, or an array of schemas (the draft 4 to 7 form)"


def _schema_need_schema_map(part: object) -> str:
    if isinstance(part, dict) and all(isinstance(item, (dict, bool)) for item in part.values()):
        return ""
    return "must be an object whose values are schemas (objects or booleans)"


def _schema_need_pattern_map(part: object) -> str:
    wrong = _schema_need_schema_map(part)
    if wrong or not isinstance(part, dict):  # no schema map is anything but a dict
        return wrong
    for pattern in part:
        wrong = _schema_need_regex(pattern)
        if wrong:
            return f"must have regular expressions as names ({_schema_show(pattern)} {wrong})"
    return ""


def _schema_need_count(part: object) -> str:
    return "" if _schema_is_count(part) else "must be a non-negative integer"


def _schema_need_number(part: object) -> str:
    return "" if _schema_is_number(part) else "must be a number"


def _schema_need_bound(part: object) -> str:
    return "" if _schema_is_number(part) or isinstance(part, bool) else "must be a number (or, in draft 4, a boolean)"


def _schema_need_positive(part: object) -> str:
    return "" if _schema_is_number(part) and part > 0 else "must be a number greater than 0"


def _schema_need_regex(part: object) -> str:
    if not isinstance(part, str):
        return "must be a regular expression (a string)"
    try:
        re.compile(part)
    except re.error as exc:
        return f"must be a regular expression that compiles ({exc})"
    except Exception as exc:
        return f"must be a regular expression that compiles ({type(exc).__name__})"
    return ""


def _schema_need_bool(part: object) -> str:
    return "" if isinstance(part, bool) else "must be a boolean"


def _schema_need_names(part: object) -> str:
    if isinstance(part, list) and all(isinstance(name, str) for name in part) and len(set(part)) == len(part):
        return ""
    return "must be an array of distinct strings"


def _schema_need_name_lists(part: object) -> str:
    if isinstance(part, dict) and all(not _schema_need_names(names) for names in part.values()):
        return ""
    return "must be an object whose values are arrays of distinct strings"


def _schema_need_type(part: object) -> str:
    names = [part] if isinstance(part, str) else part
    if (
        isinstance(names, list)
        and names
        and len(set(map(repr, names))) == len(names)
        and all(isinstance(name, str) and name in _SCHEMA_TYPE_NAMES for name in names)
    ):
        return ""
    return f"must be one of {', '.join(map(repr, _SCHEMA_TYPE_NAMES))}, or an array of distinct ones"


def _schema_need_array(part: object) -> str:
    return "" if isinstance(part, list) else "must be an array"


def _schema_need_string(part: object) -> str:
    return "" if isinstance(part, str) else "must be a string"


def _schema_need_anchor(part: object) -> str:
    if isinstance(part, str) and _SCHEMA_ANCHOR_NAME.match(part):
        return ""
    return "must be a name made of letters, digits, '-', '_' and '.', starting with a letter or '_'"


_SCHEMA_NEEDS = {
    "type": _schema_need_type,
    "enum": _schema_need_array,
    "required": _schema_need_names,
    "dependentRequired": _schema_need_name_lists,
    "properties": _schema_need_schema_map,
    "patternProperties": _schema_need_pattern_map,
    "dependentSchemas": _schema_need_schema_map,
    "$defs": _schema_need_schema_map,
    "definitions": _schema_need_schema_map,
    "additionalProperties": _schema_need_schema,
    "propertyNames": _schema_need_schema,
    "contains": _schema_need_schema,
    "not": _schema_need_schema,
    "if": _schema_need_schema,
    "then": _schema_need_schema,
    "else": _schema_need_schema,
    "additionalItems": _schema_need_schema,
    "unevaluatedItems": _schema_need_schema,
    "unevaluatedProperties": _schema_need_schema,
    "items": _schema_need_items,
    "prefixItems": _schema_need_schemas,
    "allOf": _schema_need_schemas,
    "anyOf": _schema_need_schemas,
    "oneOf": _schema_need_schemas,
    "minLength": _schema_need_count,
    "maxLength": _schema_need_count,
    "minItems": _schema_need_count,
    "maxItems": _schema_need_count,
    "minProperties": _schema_need_count,
    "maxProperties": _schema_need_count,
    "minContains": _schema_need_count,
    "maxContains": _schema_need_count,
    "minimum": _schema_need_number,
    "maximum": _schema_need_number,
    "exclusiveMinimum": _schema_need_bound,
    "exclusiveMaximum": _schema_need_bound,
    "multipleOf": _schema_need_positive,
    "pattern": _schema_need_regex,
    "uniqueItems": _schema_need_bool,
    "format": _schema_need_string,
    "$ref": _schema_need_string,
    "$dynamicRef": _schema_need_string,
    "$id": _schema_need_string,
    "$anchor": _schema_need_anchor,
    "$dynamicAnchor": _schema_need_anchor,
}


# --------------------------------------------------------------------------- validate


class _SchemaRun:
    """One ``validate`` call's state: the root references resolve against, the work budget, the limit
    violation that stops everything, and caches keyed by the identity of schema parts (which live as
    long as the call)."""

    __slots__ = ("_anchors", "_choices", "_keys", "_regexes", "_targets", "fatal", "root", "steps")

    def __init__(self, root: object) -> None:
        self.root = root
        self.steps = 0
        self.fatal: SchemaViolation | None = None
        self._anchors: dict[str, object] | None = None
        self._targets: dict[str, object] = {}
        self._regexes: dict[str, re.Pattern[str] | None] = {}
        self._keys: dict[int, tuple[object, object]] = {}
        # apart from _keys: one list may be both a ``const`` and an ``enum``, with a different key for each
        self._choices: dict[int, tuple[list[object], frozenset[object]]] = {}

    def target(self, reference: object) -> object:
        if not isinstance(reference, str):
            return _SCHEMA_NOWHERE
        if reference not in self._targets:
            if self._anchors is None:
                self._anchors = _schema_anchor_table(self.root)[0]
            self._targets[reference] = _schema_resolve(self.root, reference, self._anchors)
        return self._targets[reference]

    def regex(self, pattern: object) -> "re.Pattern[str] | None":
        if not isinstance(pattern, str):
            return None
        if pattern not in self._regexes:
            try:
                self._regexes[pattern] = re.compile(pattern)
            except Exception:
                self._regexes[pattern] = None
        return self._regexes[pattern]

    def key(self, constant: object) -> object:
        """``_schema_key`` of a schema's constant, computed once per call."""
        if not isinstance(constant, (list, dict)):
            return _schema_key(constant)
        if id(constant) not in self._keys:
            self._keys[id(constant)] = (constant, _schema_key(constant))
        return self._keys[id(constant)][1]

    def choices(self, options: list[object]) -> frozenset[object]:
        """The keys of an ``enum``'s options, as a set computed once per call: a long enum checked
        against many values costs one lookup per value."""
        if id(options) not in self._choices:
            self._choices[id(options)] = (options, frozenset(_schema_key(option) for option in options))
        return self._choices[id(options)][1]


def _schema_value_too_big(value: object) -> SchemaViolation | None:
    """Refuse, before checking anything, a value nested or sized past the limits: everything after this
    may then recurse along the value safely."""
    parts = 0
    pending: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while pending:
        node, path = pending.pop()
        members: Iterable[tuple[object, object]]
        if isinstance(node, dict):
            members = node.items()
        elif isinstance(node, list):
            members = enumerate(node)
        else:
            continue
        if len(path) >= _SCHEMA_MAX_VALUE_DEPTH:
            return SchemaViolation(
                path,
                "depth",
                f"the value is nested more than {_SCHEMA_MAX_VALUE_DEPTH} "
                "levels deep here, deeper than values are checked",
            )
        parts += len(node)
        if parts > _SCHEMA_MAX_PARTS:
            return SchemaViolation(
                (), "size", f"the value has more than {_SCHEMA_MAX_PARTS:,} parts, more than values are checked for"
            )
        pending.extend(
            (member, path + (_schema_step(name),)) for name, member in members if isinstance(member, (dict, list))
        )
    return None


class _SchemaAt:
    """One application of a schema to a part of the value, which each of the schema's keywords checks:
    the ``validate`` call it belongs to (``run``), where the part is (``path``), how many subschemas
    apply around it (``nesting``), and the violations found so far (``found``); ``quick``: the caller
    only asks whether there is one (anyOf, not, if, contains), so checking stops at the first."""

    __slots__ = ("found", "nesting", "path", "quick", "run", "schema", "value")

    def __init__(
        self,
        run: _SchemaRun,
        schema: dict[str, object],
        value: object,
        path: tuple[str | int, ...],
        nesting: int,
        found: list[SchemaViolation],
        quick: bool,
    ) -> None:
        self.run = run
        self.schema = schema
        self.value = value
        self.path = path
        self.nesting = nesting
        self.found = found
        self.quick = quick

    @property
    def stopped(self) -> bool:
        """Whether checking stops here: a limit was passed, or a quick check found its violation."""
        return self.run.fatal is not None or (self.quick and bool(self.found))

    def fail(self, keyword: str, message: str, *steps: str | int) -> None:
        """A violation of ``keyword`` by the value, or by its member at ``steps`` below it."""
        self.found.append(SchemaViolation(self.path + steps if steps else self.path, keyword, message))

    def apply(self, subschema: object, value: object, *steps: str | int) -> bool:
        """Check ``value`` (this part, or its member at ``steps``) against ``subschema``, one level deeper,
        into the same findings; whether checking stops here."""
        path = self.path + steps if steps else self.path
        _schema_apply(self.run, subschema, value, path, self.nesting + 1, self.found, self.quick)
        return self.stopped

    def valid(self, subschema: object, value: object, *steps: str | int) -> bool:
        """Whether ``value`` (this part, or its member at ``steps``) is valid under ``subschema``,
        found on the side: a trial, which stops at its first violation."""
        trial: list[SchemaViolation] = []
        path = self.path + steps if steps else self.path
        _schema_apply(self.run, subschema, value, path, self.nesting + 1, trial, True)
        return not trial


def _schema_apply(
    run: _SchemaRun,
    schema: object,
    value: object,
    path: tuple[str | int, ...],
    nesting: int,
    found: list[SchemaViolation],
    quick: bool,
) -> None:
    """Append to ``found`` the ways ``value`` (at ``path``) breaks ``schema``; ``quick``: see ``_SchemaAt``."""
    if run.fatal is not None:
        return
    run.steps += 1
    if run.steps > _SCHEMA_MAX_STEPS:
        run.fatal = SchemaViolation(
            path, "size", f"checking the value takes more than {_SCHEMA_MAX_STEPS:,} steps, more than are allowed"
        )
        return
    if nesting > _SCHEMA_MAX_NESTING:
        run.fatal = SchemaViolation(
            path,
            "depth",
            f"more than {_SCHEMA_MAX_NESTING} subschemas apply inside "
            "one another here (a $ref loop?), more than are followed",
        )
        return
    if schema is True:
        return
    if schema is False:
        found.append(SchemaViolation(path, "false", f"{_schema_show(value)} is not allowed here (the schema is false)"))
        return
    if not isinstance(schema, dict):
        return
    at = _SchemaAt(run, schema, value, path, nesting, found, quick)
    for keyword, expected in schema.items():
        check = _SCHEMA_CHECKS.get(keyword) if isinstance(keyword, str) else None
        if check is not None:
            check(at, expected)
            if run.fatal is not None or (quick and found):  # at.stopped, inline on the hottest loop
                return


# Each check takes the application it is part of and the keyword's value.


def _schema_check_type(at: _SchemaAt, expected: Any) -> None:
    names = [expected] if isinstance(expected, str) else expected
    if _schema_need_type(expected):
        return
    if any(_schema_has_type(at.value, name) for name in names):
        return
    if at.value is None and at.schema.get("nullable") is True:  # OpenAPI 3.0
        return
    wanted = " or ".join(repr(name) for name in names)
    at.fail("type", f"{_schema_show(at.value)} is not of type {wanted}")


def _schema_check_enum(at: _SchemaAt, expected: Any) -> None:
    if isinstance(expected, list) and _schema_key(at.value) not in at.run.choices(expected):
        at.fail("enum", f"{_schema_show(at.value)} is not one of {_schema_show(expected)}")


def _schema_check_const(at: _SchemaAt, expected: Any) -> None:
    if _schema_key(at.value) != at.run.key(expected):
        at.fail("const", f"{_schema_show(at.value)} is not {_schema_show(expected)}, the only value allowed")


def _schema_check_required(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict) or not isinstance(expected, list):
        return
    for name in expected:
        if isinstance(name, str) and name not in at.value:
            at.fail("required", f"required property {name!r} is missing")
            if at.quick:
                return


def _schema_check_properties(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict) or not isinstance(expected, dict):
        return
    for name, subschema in expected.items():
        if name in at.value and at.apply(subschema, at.value[name], _schema_step(name)):
            return


def _schema_check_pattern_properties(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict) or not isinstance(expected, dict):
        return
    for pattern, subschema in expected.items():
        regex = at.run.regex(pattern)
        if regex is None:
            continue
        for name, member in at.value.items():
            if isinstance(name, str) and regex.search(name) and at.apply(subschema, member, _schema_step(name)):
                return


def _schema_check_additional_properties(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict):
        return
    named = at.schema.get("properties")
    named = named if isinstance(named, dict) else {}
    patterns = at.schema.get("patternProperties")
    regexes = [at.run.regex(pattern) for pattern in patterns] if isinstance(patterns, dict) else []
    for name, member in at.value.items():
        if name in named or (isinstance(name, str) and any(regex and regex.search(name) for regex in regexes)):
            continue
        if expected is False:
            at.fail(
                "additionalProperties", f"additional property {_schema_show(name)} is not allowed", _schema_step(name)
            )
            if at.stopped:
                return
        elif at.apply(expected, member, _schema_step(name)):
            return


def _schema_check_property_names(at: _SchemaAt, expected: Any) -> None:
    if isinstance(at.value, dict):
        for name in at.value:
            if at.apply(expected, name):
                return


def _schema_size_limit(
    at: _SchemaAt,
    container: type[dict[Any, Any]] | type[list[Any]],
    expected: object,
    keyword: str,
    units: tuple[str, str],
    *,
    least: bool,
) -> None:
    """minProperties, maxProperties, minItems, maxItems: how many members or items the value has."""
    value = at.value
    if not isinstance(value, container) or not _schema_is_number(expected):
        return
    if len(value) < expected if least else len(value) > expected:
        has = _schema_count(len(value), *units)
        bound = "fewer than the minimum" if least else "more than the maximum"
        at.fail(keyword, f"{_schema_show(value)} has {has}, {bound} of {_schema_show(expected)}")


def _schema_check_min_properties(at: _SchemaAt, expected: Any) -> None:
    _schema_size_limit(at, dict, expected, "minProperties", ("property", "properties"), least=True)


def _schema_check_max_properties(at: _SchemaAt, expected: Any) -> None:
    _schema_size_limit(at, dict, expected, "maxProperties", ("property", "properties"), least=False)


def _schema_check_items(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, list):
        return
    if isinstance(expected, list):  # draft 4 to 7: a schema per position, then additionalItems
        # the items may be fewer or more than the schemas
        for index, (subschema, item) in enumerate(zip(expected, at.value, strict=False)):
            if at.apply(subschema, item, index):
                return
        _schema_rest(at, at.value, "additionalItems", at.schema.get("additionalItems", True), len(expected))
        return
    prefix = at.schema.get("prefixItems")
    _schema_rest(at, at.value, "items", expected, len(prefix) if isinstance(prefix, list) else 0)


def _schema_rest(at: _SchemaAt, value: list[object], keyword: str, subschema: object, start: int) -> None:
    """Apply ``subschema`` to the items of ``value`` (the list checked) from ``start`` on; ``false``
    allows none, and says so once."""
    if len(value) <= start:
        return
    if subschema is False:
        allowed = f"more than the {start} allowed" if start else "and no items are allowed"
        has = _schema_count(len(value), "item", "items")
        at.fail(keyword, f"{_schema_show(value)} has {has}, {allowed}")
        return
    for index in range(start, len(value)):
        if at.apply(subschema, value[index], index):
            return


def _schema_check_prefix_items(at: _SchemaAt, expected: Any) -> None:
    if isinstance(at.value, list) and isinstance(expected, list):
        # the items may be fewer or more than the schemas
        for index, (subschema, item) in enumerate(zip(expected, at.value, strict=False)):
            if at.apply(subschema, item, index):
                return


def _schema_check_contains(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, list):
        return
    minimum = at.schema.get("minContains")
    least_given = _schema_is_number(minimum)
    least = minimum if _schema_is_number(minimum) else 1
    most = at.schema.get("maxContains")
    most = most if _schema_is_number(most) else None
    matching = 0
    for index, item in enumerate(at.value):
        if at.valid(expected, item, index):
            matching += 1
            if most is not None and matching > most:
                break
        if at.run.fatal is not None:
            return
    if matching < least:
        if matching or least_given:
            has = _schema_count(matching, "item", "items")
            at.fail(
                "minContains" if least_given else "contains",
                f"{_schema_show(at.value)} has {has} matching 'contains', fewer than the "
                f"minimum of {_schema_show(least)}",
            )
        else:
            at.fail("contains", f"{_schema_show(at.value)} has no item matching 'contains'")
    elif most is not None and matching > most:
        at.fail(
            "maxContains",
            f"{_schema_show(at.value)} has more than "
            f"{_schema_count(most, 'item', 'items')} matching 'contains', the maximum",
        )


def _schema_check_min_items(at: _SchemaAt, expected: Any) -> None:
    _schema_size_limit(at, list, expected, "minItems", ("item", "items"), least=True)


def _schema_check_max_items(at: _SchemaAt, expected: Any) -> None:
    _schema_size_limit(at, list, expected, "maxItems", ("item", "items"), least=False)


def _schema_check_unique_items(at: _SchemaAt, expected: Any) -> None:
    if expected is not True or not isinstance(at.value, list):
        return
    seen: set[object] = set()
    for item in at.value:
        key = _schema_key(item)
        if key in seen:
            at.fail(
                "uniqueItems",
                f"{_schema_show(at.value)} has repeated items ({_schema_show(item)} appears more than once)",
            )
            return
        seen.add(key)


def _schema_check_min_length(at: _SchemaAt, expected: Any) -> None:
    if isinstance(at.value, str) and _schema_is_number(expected) and len(at.value) < expected:
        at.fail(
            "minLength",
            f"{_schema_show(at.value)} is shorter than the minimum length "
            f"of {_schema_count(expected, 'character', 'characters')}",
        )


def _schema_check_max_length(at: _SchemaAt, expected: Any) -> None:
    if isinstance(at.value, str) and _schema_is_number(expected) and len(at.value) > expected:
        at.fail(
            "maxLength",
            f"{_schema_show(at.value)} is longer than the maximum length "
            f"of {_schema_count(expected, 'character', 'characters')}",
        )


def _schema_check_pattern(at: _SchemaAt, expected: Any) -> None:
    if isinstance(at.value, str):
        regex = at.run.regex(expected)
        if regex is not None and not regex.search(at.value):
            at.fail("pattern", f"{_schema_show(at.value)} does not match the pattern {_schema_show(expected)}")


def _schema_check_minimum(at: _SchemaAt, expected: Any) -> None:
    if not (_schema_is_number(at.value) and _schema_is_number(expected)):
        return
    if at.schema.get("exclusiveMinimum") is True:  # draft 4: the minimum itself is excluded
        if at.value <= expected:
            at.fail(
                "minimum",
                f"{_schema_show(at.value)} is less than or equal to the "
                f"minimum of {_schema_show(expected)}, which is excluded",
            )
    elif at.value < expected:
        at.fail("minimum", f"{_schema_show(at.value)} is less than the minimum of {_schema_show(expected)}")


def _schema_check_maximum(at: _SchemaAt, expected: Any) -> None:
    if not (_schema_is_number(at.value) and _schema_is_number(expected)):
        return
    if at.schema.get("exclusiveMaximum") is True:  # draft 4: the maximum itself is excluded
        if at.value >= expected:
            at.fail(
                "maximum",
                f"{_schema_show(at.value)} is greater than or equal to the "
                f"maximum of {_schema_show(expected)}, which is excluded",
            )
    elif at.value > expected:
        at.fail("maximum", f"{_schema_show(at.value)} is greater than the maximum of {_schema_show(expected)}")


def _schema_check_exclusive_minimum(at: _SchemaAt, expected: Any) -> None:
    if _schema_is_number(at.value) and _schema_is_number(expected) and at.value <= expected:
        at.fail(
            "exclusiveMinimum",
            f"{_schema_show(at.value)} is not greater than the exclusive minimum of {_schema_show(expected)}",
        )


def _schema_check_exclusive_maximum(at: _SchemaAt, expected: Any) -> None:
    if _schema_is_number(at.value) and _schema_is_number(expected) and at.value >= expected:
        at.fail(
            "exclusiveMaximum",
            f"{_schema_show(at.value)} is not less than the exclusive maximum of {_schema_show(expected)}",
        )


def _schema_check_multiple_of(at: _SchemaAt, expected: Any) -> None:
    if (
        _schema_is_number(at.value)
        and _schema_is_number(expected)
        and expected > 0
        and not _schema_is_multiple(at.value, expected)
    ):
        at.fail("multipleOf", f"{_schema_show(at.value)} is not a multiple of {_schema_show(expected)}")


def _schema_is_multiple(value: int | float, step: int | float) -> bool:
    """Whether ``value`` is a whole number of ``step``s, decided as jsonschema decides: with a float
    step, the float quotient must be integral (so float error is tolerated only where the division
    happens to absorb it: 0.3 is not a multiple of 0.1 there, 4.0 is of 0.5); with an integer step,
    the remainder must be zero. Where floats overflow, exact fractions decide."""
    if isinstance(step, float):
        try:
            quotient = value / step
        except (OverflowError, ZeroDivisionError):
            quotient = math.inf
        if math.isfinite(quotient):
            return quotient.is_integer()
    else:
        try:
            return value % step == 0
        except (OverflowError, ZeroDivisionError):
            pass
    try:
        return (fractions.Fraction(value) / fractions.Fraction(step)).denominator == 1
    except (ArithmeticError, ValueError, TypeError):  # infinity or NaN, which JSON cannot hold
        return False


def _schema_check_any_of(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(expected, list) or not expected:
        return
    if any(at.valid(subschema, at.value) for subschema in expected) or at.run.fatal is not None:
        return
    at.fail("anyOf", f"{_schema_show(at.value)} is not valid under any of the schemas in 'anyOf'")


def _schema_check_one_of(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(expected, list) or not expected:
        return
    matching = 0
    for subschema in expected:
        matching += at.valid(subschema, at.value)
        if matching > 1 or at.run.fatal is not None:
            break
    if at.run.fatal is not None:
        return
    if matching == 0:
        at.fail("oneOf", f"{_schema_show(at.value)} is not valid under any of the schemas in 'oneOf'")
    elif matching > 1:
        at.fail("oneOf", f"{_schema_show(at.value)} is valid under more than one of the schemas in 'oneOf'")


def _schema_check_all_of(at: _SchemaAt, expected: Any) -> None:
    if isinstance(expected, list):
        for subschema in expected:
            if at.apply(subschema, at.value):
                return


def _schema_check_not(at: _SchemaAt, expected: Any) -> None:
    if at.valid(expected, at.value) and at.run.fatal is None:
        at.fail("not", f"{_schema_show(at.value)} is valid under the schema in 'not', which it must not be")


def _schema_check_if(at: _SchemaAt, expected: Any) -> None:
    branch = "then" if at.valid(expected, at.value) else "else"
    if branch in at.schema and at.run.fatal is None:
        at.apply(at.schema[branch], at.value)


def _schema_check_dependent_required(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict) or not isinstance(expected, dict):
        return
    for name, needed in expected.items():
        if name in at.value and isinstance(needed, list):
            for other in needed:
                if isinstance(other, str) and other not in at.value:
                    at.fail("dependentRequired", f"property {other!r} is required when {_schema_show(name)} is present")
                    if at.quick:
                        return


def _schema_check_dependent_schemas(at: _SchemaAt, expected: Any) -> None:
    if not isinstance(at.value, dict) or not isinstance(expected, dict):
        return
    for name, subschema in expected.items():
        if name in at.value and at.apply(subschema, at.value):
            return


def _schema_check_ref(at: _SchemaAt, expected: Any) -> None:
    # Within one document (no $id below the root, which schema_problem refuses) a $dynamicRef resolves
    # as a $ref does, so both are followed the same way.
    target = at.run.target(expected)
    if target is not _SCHEMA_NOWHERE:
        at.apply(target, at.value)


_SCHEMA_CHECKS = {
    "type": _schema_check_type,
    "enum": _schema_check_enum,
    "const": _schema_check_const,
    "required": _schema_check_required,
    "properties": _schema_check_properties,
    "patternProperties": _schema_check_pattern_properties,
    "additionalProperties": _schema_check_additional_properties,
    "propertyNames": _schema_check_property_names,
    "minProperties": _schema_check_min_properties,
    "maxProperties": _schema_check_max_properties,
    "items": _schema_check_items,
    "prefixItems": _schema_check_prefix_items,
    "contains": _schema_check_contains,
    "minItems": _schema_check_min_items,
    "maxItems": _schema_check_max_items,
    "uniqueItems": _schema_check_unique_items,
    "minLength": _schema_check_min_length,
    "maxLength": _schema_check_max_length,
    "pattern": _schema_check_pattern,
    "minimum": _schema_check_minimum,
    "maximum": _schema_check_maximum,
    "exclusiveMinimum": _schema_check_exclusive_minimum,
    "exclusiveMaximum": _schema_check_exclusive_maximum,
    "multipleOf": _schema_check_multiple_of,
    "anyOf": _schema_check_any_of,
    "oneOf": _schema_check_one_of,
    "allOf": _schema_check_all_of,
    "not": _schema_check_not,
    "if": _schema_check_if,
    "dependentRequired": _schema_check_dependent_required,
    "dependentSchemas": _schema_check_dependent_schemas,
    "$ref": _schema_check_ref,
    "$dynamicRef": _schema_check_ref,
}


# --------------------------------------------------------------------------- quick acceptance

# Values bigger than this are left to ``validate``: well inside its limits, so that a value the quick
# test accepts is one ``validate`` checks in full rather than refuses for its size.
_SCHEMA_QUICK_MAX_PARTS = 10_000
_SCHEMA_QUICK_MAX_DEPTH = 50
# Schemas nested deeper than this get no quick test (tool schemas are a few levels deep).
_SCHEMA_QUICK_MAX_NESTING = 32

_SchemaAcceptor = Callable[[object], bool]


def schema_acceptor(schema: object) -> "_SchemaAcceptor | None":
    """A quick test, built once per schema, of whether ``validate(schema, value)`` finds nothing, for the
    shapes tool schemas mostly take: ``type``, ``enum``, ``const``, ``required``, ``properties``,
    ``additionalProperties`` and a single ``items`` schema, nested, beside annotations. None for any
    other schema. The test answers True only when ``validate`` would return no violation; False means
    "ask ``validate``", which then words the violations (a parse checks many calls against one schema,
    and most calls break none of its rules, so most of them never build a ``validate`` run)."""
    try:
        check = _schema_quick(schema, 0)
    except Exception:
        return None
    if check is None:
        return None

    def accept(value: object) -> bool:
        try:
            return _schema_quick_size_ok(value) and check(value)
        except Exception:
            return False

    return accept


def _schema_quick_size_ok(value: object) -> bool:
    """Whether ``value`` is small and shallow enough that ``validate`` checks it without nearing a limit."""
    return _schema_quick_parts(value, 0) >= 0


def _schema_quick_parts(value: object, depth: int) -> int:
    """How many members ``value`` holds at any depth; -1 past the quick test's limits. Recursive: the
    depth limit keeps it to a few dozen frames."""
    if isinstance(value, dict):
        members: Iterable[object] = value.values()
    elif isinstance(value, list):
        members = value
    else:
        return 0
    if depth >= _SCHEMA_QUICK_MAX_DEPTH:
        return -1
    parts = len(value)
    for member in members:
        if isinstance(member, (dict, list)):
            inside = _schema_quick_parts(member, depth + 1)
            if inside < 0:
                return -1
            parts += inside
        if parts > _SCHEMA_QUICK_MAX_PARTS:
            return -1
    return parts if parts <= _SCHEMA_QUICK_MAX_PARTS else -1


def _schema_quick_accept_all(value: object) -> bool:
    return True


_SCHEMA_QUICK_TYPES: dict[str, "_SchemaAcceptor"] = {
    "string": lambda value: isinstance(value, str),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "number": _schema_is_number,
    "integer": _schema_is_integer,
}


def _schema_quick(schema: object, nesting: int) -> "_SchemaAcceptor | None":
    """The quick test of one (sub)schema, or None when it uses a keyword outside the quick subset."""
    if schema is True:
        return _schema_quick_accept_all
    if not isinstance(schema, dict) or nesting > _SCHEMA_QUICK_MAX_NESTING or "nullable" in schema:
        return None
    checks: list[_SchemaAcceptor] = []
    for keyword, expected in schema.items():
        if not isinstance(keyword, str) or keyword not in _SCHEMA_CHECKS:
            continue  # an annotation: validate ignores it too
        build = _SCHEMA_QUICK_BUILDERS.get(keyword)
        check = build(schema, expected, nesting) if build is not None else None
        if check is None:
            return None
        if check is not _schema_quick_accept_all:
            checks.append(check)
    if not checks:
        return _schema_quick_accept_all
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def accept_all(value: object) -> bool:
        for check in checks:  # noqa: SIM110 - a loop, not all() over a generator: this runs once per call
            if not check(value):
                return False
        return True

    return accept_all


def _schema_quick_type(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    if _schema_need_type(expected):
        return None
    names = [expected] if isinstance(expected, str) else expected
    assert isinstance(names, list)
    tests = [_SCHEMA_QUICK_TYPES[name] for name in names]
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _schema_quick_enum(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    if not isinstance(expected, list):
        return None
    keys = frozenset(_schema_key(option) for option in expected)
    return lambda value: _schema_key(value) in keys


def _schema_quick_const(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    key = _schema_key(expected)
    return lambda value: _schema_key(value) == key


def _schema_quick_required(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    if not isinstance(expected, list):
        return None
    names = [name for name in expected if isinstance(name, str)]
    if not names:
        return _schema_quick_accept_all

    def accept(value: object) -> bool:
        if isinstance(value, dict):
            for name in names:
                if name not in value:
                    return False
        return True

    return accept


def _schema_quick_properties(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    if not isinstance(expected, dict):
        return None
    members: list[tuple[object, _SchemaAcceptor]] = []
    for name, subschema in expected.items():
        check = _schema_quick(subschema, nesting + 1)
        if check is None:
            return None
        if check is not _schema_quick_accept_all:
            members.append((name, check))
    if not members:
        return _schema_quick_accept_all

    def accept(value: object) -> bool:
        if isinstance(value, dict):
            for name, check in members:
                if name in value and not check(value[name]):
                    return False
        return True

    return accept


def _schema_quick_additional_properties(
    schema: dict[str, object], expected: object, nesting: int
) -> "_SchemaAcceptor | None":
    named = schema.get("properties")
    declared = named if isinstance(named, dict) else {}
    if expected is False:
        return lambda value: not isinstance(value, dict) or all(name in declared for name in value)
    check = _schema_quick(expected, nesting + 1)
    if check is None or check is _schema_quick_accept_all:
        return check

    def accept(value: object) -> bool:
        if not isinstance(value, dict):
            return True
        return all(check(member) for name, member in value.items() if name not in declared)

    return accept


def _schema_quick_items(schema: dict[str, object], expected: object, nesting: int) -> "_SchemaAcceptor | None":
    if isinstance(expected, list) or "prefixItems" in schema:
        return None  # items by position: left to validate
    check = _schema_quick(expected, nesting + 1)
    if check is None or check is _schema_quick_accept_all:
        return check
    return lambda value: not isinstance(value, list) or all(check(item) for item in value)


_SCHEMA_QUICK_BUILDERS: dict[str, Callable[[dict[str, object], object, int], "_SchemaAcceptor | None"]] = {
    "type": _schema_quick_type,
    "enum": _schema_quick_enum,
    "const": _schema_quick_const,
    "required": _schema_quick_required,
    "properties": _schema_quick_properties,
    "additionalProperties": _schema_quick_additional_properties,
    "items": _schema_quick_items,
}
