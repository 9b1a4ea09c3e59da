"""JSON Schema to GBNF rules, over the toolkit of ``text`` and the value rules of ``values``.

``SchemaRules`` turns a JSON Schema into an expression for the JSON values it allows, and
``PythonRules`` does the same for Python literals (``{'a': 'x', 'b': True}``), which some templates
write instead of JSON.

What the schema rules cover: the JSON types, ``enum`` and ``const``, ``anyOf``/``oneOf`` and type
lists as alternatives, objects with their properties in schema order (required ones mandatory,
optional ones omissible), nested objects and arrays (``items``, ``minItems``, ``maxItems``), local
``$ref`` (``#/$defs/...``, ``#/definitions/...``, recursive ones too), ``allOf`` (merged), strings'
``minLength``/``maxLength`` and ``pattern`` (the regex subset ``values`` writes), integers'
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``. Every other constraint (string
formats, number bounds, ``multipleOf``, ``uniqueItems``, ``not``, ``patternProperties``, a pattern a
grammar cannot hold...) is not checked, and never silently: ``Rules.unenforced`` lists each one
(``where: keyword``) for the caller to report. The grammar then takes more than the schema does, never
less: a valid call is never refused.

``additionalProperties``: an object schema that declares properties allows only those unless
``additionalProperties`` is ``true`` or a schema (a tool call should use the declared parameters); one
that declares none allows any members unless ``additionalProperties`` is ``false`` (then only ``{}``).
Further members come after the declared ones; their keys are not kept from repeating a declared key.

Whitespace: given the template's separators (``SchemaRules(rules, (", ", ": "))``, as its ``tojson``
writes them), values are written exactly that way, with no other whitespace; given its indentation too
(``("    ", "    ")``: ``tojson(indent=4)`` inside a list indented by 4), each object and array is
written across lines as ``json.dumps(indent=...)`` writes it at its depth (``depth``, which
``nested`` counts), ``{}`` and ``[]`` when empty, to ``INDENT_DEPTH_MAX`` levels. Without separators
(the ``flexible`` mode, or separators the renders did not show), or deeper than that, whitespace
between tokens is optional and bounded (``ws``: at most ``WS_MAX`` characters, or room for the
template's indentation ``INDENT_DEPTH_LIMIT`` levels deep where it indents), so a model can write
``{"a": 1}`` or an indented object but cannot loop on whitespace forever.

Which rules get names: GBNF readers that lex (llguidance's converter makes every rule built only of
literals, classes and such rules one greedy terminal) cannot end a terminal early once its text
could go on. So only tokens (strings, numbers, whitespace) and bracketed values (objects, arrays),
which cannot go on past their end, are named rules; a sequence whose tail is optional or repeated is
written inline, so such a reader parses it instead of lexing it. Recursive rules are never terminals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from analyzer.backends.gbnf.text import WS_MAX, Rules, choice, group, literal, name_part, optional, ordered, seq
from analyzer.backends.gbnf.values import Bound, integer_range, number_range, pattern_body

# Keywords that say nothing about which values are valid.
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "contentMediaType",
        "contentEncoding",
    }
)
# Keywords the rules enforce (bounds only where the value's type is the one they apply to).
_ENFORCED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
# "root" is the start rule; llguidance's converter renames it "start", so that name must stay free.

# JSON string: any character but '"', '\' and control characters, or an escape (RFC 8259).
_QUOTE = r'"\""'  # the GBNF literal for a JSON string's quote
_JSON_CHAR = r"""[^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )"""
_JSON_STRING = r'''"\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""'''
# Python string literal in either quote, any backslash escape (repr writes \n, \', \x.., \u....) that
# Python reads: \x, \u and \U with their hex digits (\U up to U+10FFFF), no \N{...} (a character's name).
_PY_ESCAPE = (
    r'"\\" ( [^\x0AxuUN] | "x" [0-9a-fA-F]{2} | "u" [0-9a-fA-F]{4} '
    r'| "U" ( "000" [0-9a-fA-F]{5} | "0010" [0-9a-fA-F]{4} ) )'
)
_PY_STRING = rf'''"'" ( [^'\\] | {_PY_ESCAPE} )* "'" | "\"" ( [^"\\] | {_PY_ESCAPE} )* "\""'''
# How deep indented JSON is written exactly; deeper, whitespace between tokens is free and bounded,
# with room for the indentation of a value nested INDENT_DEPTH_LIMIT deep (deeper ones are refused).
INDENT_DEPTH_MAX = 8
INDENT_DEPTH_LIMIT = 32
_INTEGER = '"-"? ( "0" | [1-9] [0-9]{0,15} )'
# A fraction as long as the shortest round-trip spelling of a double (17 digits after up to 4 zeros).
# Every number is a finite double, as the parser reads it (1E400 is JSON, and infinity, which the parser
# refuses): a positive exponent up to 292 after any integer part (16 digits at most), up to 307 after
# one digit (``repr``'s ``1.5e+300``), and 308 after 1 with a fraction up to the largest double's
# (1.7976931348623157e+308).
_FRACTION = '( "." [0-9]{1,21} )?'
_LARGEST_FRACTION = "7976931348623157"


def _digits_at_most(bound: str, room: int) -> str:
    """Fraction digits (one at least, ``room`` at most) that read as no more than ``bound``'s: the
    bound's first digits, then a lower digit and any; or the bound's first digits alone, or all of
    them and zeros. Flat alternatives: llguidance refuses a grammar nested one level per digit."""
    options = [
        seq(*([literal(bound[:k])] if k else []), f"[0-{int(bound[k]) - 1}] [0-9]{{0,{room - k - 1}}}")
        for k in range(len(bound))
        if bound[k] != "0"
    ]
    options += [literal(bound[:k]) for k in range(1, len(bound))]
    options.append(f'{literal(bound)} "0"{{0,{room - len(bound)}}}')
    return group(" | ".join(options))


_NUMBER = (
    f'{_INTEGER} {_FRACTION} ( [eE] ( "-" [0-9]{{1,3}} | "+"? ( [0-9]{{1,2}} | [01] [0-9] [0-9] | "2" [0-8] [0-9] '
    f'| "29" [0-2] ) ) )? | "-"? [1-9] {_FRACTION} [eE] "+"? ( "29" [3-9] | "30" [0-7] ) '
    f'| "-"? "1" ( "." {_digits_at_most(_LARGEST_FRACTION, 21)} )? [eE] "+"? "308"'
)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class SchemaRules:
    """JSON values a JSON Schema allows, as GBNF expressions over rules added to ``rules``."""

    prefix = ""  # of the names of the rules that differ by syntax but not by schema

    def __init__(self, rules: Rules, separators: tuple[str, ...] = (), indent: tuple[str, ...] = ()) -> None:
        """``separators``: (between items, after a key) to write values exactly so; () for any
        bounded whitespace between tokens. ``indent``: (one level, what every line after the first
        starts with) to write objects and arrays across lines as ``json.dumps(indent=...)`` does
        where values are written exactly, and to leave room for such lines where whitespace is free;
        () for one line."""
        self.rules = rules
        self.separators: tuple[str, ...] = separators if len(separators) == 2 else ()
        self.indent: tuple[str, ...] = indent if len(indent) == 2 and indent[0] else ()
        # How deep the value being written stands: 0 for the outermost, one more inside each object or
        # array. Only indented values are written differently at each depth.
        self.depth = 0
        self.root: Any = None  # the schema local $refs point into (a tool's parameters)

    # ------------------------------------------------------------------ whitespace

    def exact(self) -> bool:
        """Whether values are written exactly: with the template's separators, and indented only to
        ``INDENT_DEPTH_MAX`` (deeper, a grammar per depth would never end for a recursive schema)."""
        return bool(self.separators) and not (self.indent and self.depth > INDENT_DEPTH_MAX)

    def space(self) -> str:
        """Where whitespace may stand between tokens: none when values are written exactly."""
        return "" if self.exact() else self._ws()

    def comma(self) -> str:
        """Between two members or items of a value at this depth."""
        if not self.exact():
            return seq(literal(","), self._ws())
        return literal(self.separators[0] + self._line_break(1) if self.indent else self.separators[0])

    def colon(self) -> str:
        """Between a key and its value."""
        if self.exact():
            return literal(self.separators[1])
        ws = self._ws()
        return seq(ws, literal(":"), ws)

    def _ws(self) -> str:
        """Whitespace where it is free: bounded, but room for a line break and the template's own
        indentation of a value nested ``INDENT_DEPTH_LIMIT`` deep where it indents."""
        if not self.indent:
            return self.rules.ws()
        unit, base = self.indent
        return self.rules.ws(max(WS_MAX, 1 + len(base) + len(unit) * INDENT_DEPTH_LIMIT))

    def _line_break(self, levels: int) -> str:
        """A new line, indented to ``levels`` below the value at this depth."""
        unit, base = self.indent
        return "\n" + base + unit * (self.depth + levels)

    def indented(self) -> bool:
        """Whether objects and arrays at this depth are written across lines."""
        return bool(self.indent) and self.exact()

    def bracketed(self, opening: str, body: str, closing: str, *, empty: bool) -> str:
        """``body`` (members or items, at least one) between two brackets with the whitespace inside
        them; ``empty``: whether none may be written, as ``{}`` or ``[]`` (nothing between the
        brackets, indented or not)."""
        if not self.indented():
            return seq(literal(opening), self.space(), optional(body) if empty else body, literal(closing))
        written = seq(literal(opening + self._line_break(1)), body, literal(self._line_break(0) + closing))
        return choice((group(written), literal(opening + closing))) if empty else written

    @contextmanager
    def nested(self, levels: int = 1) -> Iterator[None]:
        """Values written ``levels`` objects or arrays deeper than this depth."""
        self.depth += levels
        try:
            yield
        finally:
            self.depth -= levels

    def _layout_key(self) -> str:
        """What sets apart a recursive rule's name by how it is written: exactly, at which depth."""
        if not self.exact():
            return ""
        return f"-exact-d{self.depth}" if self.indent else "-exact"

    # ------------------------------------------------------------------ the syntax of values

    def string(self) -> str:
        """Any string, JSON-escaped; no raw control characters."""
        return self.rules.add("string", _JSON_STRING)

    def boolean(self) -> str:
        return self.rules.add("boolean", '"true" | "false"')

    def null(self) -> str:
        return literal("null")

    def key(self, name: str) -> str:
        return self.constant(name)

    def constant(self, value: Any) -> str:
        """One value written exactly as ``json.dumps`` writes it: characters beyond ASCII as they are,
        or escaped (``\u043a``) as a ``tojson`` that keeps to ASCII writes them."""
        return choice((literal(json.dumps(value, ensure_ascii=False)), literal(json.dumps(value))))

    def integer(self) -> str:
        return self.rules.add("integer", _INTEGER)

    def number(self) -> str:
        return self.rules.add("number", _NUMBER)

    # ------------------------------------------------------------------ schemas

    def value(self, schema: Any, hint: str = "value") -> str:
        """An expression for the values ``schema`` allows; ``hint`` names the rules it needs."""
        if not isinstance(schema, dict) or not schema:
            return self.any_value()
        if "$ref" in schema:
            return self.reference(schema, hint)
        if "allOf" in schema:
            return self.value(self.merged(schema, hint), hint)
        for keyword in schema:
            if keyword not in _ENFORCED and keyword not in _ANNOTATIONS:
                self.rules.note(hint, keyword)
        if "const" in schema:
            return self.constant(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.rules.add(f"{hint}-enum", " | ".join(self.constant(v) for v in schema["enum"]))
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options:
                base = {k: v for k, v in schema.items() if k != combinator}
                return choice(
                    self.value({**base, **option} if isinstance(option, dict) else option, f"{hint}-{i}")
                    for i, option in enumerate(options)
                )
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if isinstance(k, str)]
            return (
                choice(self.value({**schema, "type": k}, f"{hint}-{k}") for k in kinds) if kinds else self.any_value()
            )
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else None
        if kind == "object":
            return self.object(schema, hint)
        if kind == "array":
            return self.array(schema, hint)
        if kind == "string":
            return self.string_value(schema, hint)
        if kind == "integer":
            return self.integer_value(schema, hint)
        if kind == "number":
            return self.number_value(schema, hint)
        simple = {"number": self.number, "boolean": self.boolean, "null": self.null}.get(kind or "")
        return simple() if simple else self.any_value()

    # ------------------------------------------------------------------ references and merged schemas

    def reference(self, schema: dict[str, Any], hint: str) -> str:
        """A local ``$ref`` (a JSON pointer into the tool's parameters), as a rule of its own so that a
        schema referring to itself is a recursive rule; any other reference: any value, reported."""
        ref = schema["$ref"]
        target = self.resolve(ref)
        if target is None:
            self.rules.note(hint, f"$ref {ref!r} (not a local reference)")
            return self.any_value()
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        if any(k not in _ANNOTATIONS for k in rest):
            # Keywords beside a $ref apply with it: merged, as allOf.
            return self.value({"allOf": [target, rest]}, hint)
        name = name_part(str(ref))
        key = f"{self.prefix}ref-{name}{self._layout_key()}"
        return self.rules.recursive(key, lambda _: self.value(target, f"{self.prefix}{name}"))

    def resolved(self, schema: Any) -> Any:
        """``schema`` with a local ``$ref`` at its top replaced by its target (the keywords beside it kept)."""
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 16:
            target = self.resolve(schema["$ref"])
            if not isinstance(target, dict):
                break
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            seen += 1
        return schema

    def resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node = self.root
        for step in ref[1:].split("/")[1:] if ref != "#" else []:
            step = step.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and step in node:
                node = node[step]
            elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
                node = node[int(step)]
            else:
                return None
        return node

    def merged(self, schema: dict[str, Any], hint: str) -> dict[str, Any]:
        """``allOf`` as one schema: properties and required lists joined, other keywords taken where
        the parts agree; where they disagree, the first part's is kept and the conflict reported."""
        out = {k: v for k, v in schema.items() if k != "allOf"}
        parts = schema["allOf"] if isinstance(schema["allOf"], list) else []
        for part in parts:
            while isinstance(part, dict) and "$ref" in part and self.resolve(part["$ref"]) is not None:
                part = {**self.resolve(part["$ref"]), **{k: v for k, v in part.items() if k != "$ref"}}
            if not isinstance(part, dict):
                continue
            if "allOf" in part:
                part = self.merged(part, hint)
            for key, value in part.items():
                if key == "properties" and isinstance(value, dict):
                    out["properties"] = {**out.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
                elif key not in out:
                    out[key] = value
                elif out[key] != value and key not in _ANNOTATIONS:
                    self.rules.note(hint, f"allOf: {key} given twice (the first kept)")
        return out

    # ------------------------------------------------------------------ bounded scalars

    def string_value(self, schema: dict[str, Any], hint: str) -> str:
        """A string, held to its ``pattern`` or its ``minLength``/``maxLength`` (not both at once)."""

        pattern = schema.get("pattern")
        low = schema.get("minLength") if type(schema.get("minLength")) is int else 0
        high = schema.get("maxLength") if type(schema.get("maxLength")) is int else None
        if self.prefix:  # Python strings: in either quote, escaped as repr does
            for keyword in ("pattern", "minLength", "maxLength"):
                if keyword in schema:
                    self.rules.note(hint, f"{keyword} of a Python string")
            return self.string()
        if not isinstance(pattern, str) and not low and high is None:
            return self.string()
        char = self.rules.add("json-char", _JSON_CHAR)
        if isinstance(pattern, str):
            body = pattern_body(pattern, char)
            if body is None:
                self.rules.note(hint, f"pattern {pattern!r}")
            else:
                for keyword in ("minLength", "maxLength"):
                    if keyword in schema:
                        self.rules.note(hint, f"{keyword} beside a pattern")
                return self.rules.add(f"{hint}-string", seq(_QUOTE, body, _QUOTE))
        if low or high is not None:
            repeat = f"{{{low},{'' if high is None else high}}}"
            return self.rules.add(f"{hint}-string", seq(_QUOTE, f"( {char} ){repeat}", _QUOTE))
        return self.string()

    def integer_value(self, schema: dict[str, Any], hint: str) -> str:
        """An integer within its bounds (``exclusive*`` as numbers, draft 6 on; as flags, draft 4)."""

        def bound(key: str, exclusive: str, step: int) -> int | None:
            value = schema.get(key)
            flag = schema.get(exclusive)
            found: list[int] = []
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                edge = math.ceil(value) if step > 0 else math.floor(value)
                found.append(edge + step if flag is True and edge == value else edge)
            if isinstance(flag, (int, float)) and not isinstance(flag, bool):
                edge = math.floor(flag) + 1 if step > 0 else math.ceil(flag) - 1
                found.append(edge)
            if not found:
                return None
            return max(found) if step > 0 else min(found)

        low, high = bound("minimum", "exclusiveMinimum", 1), bound("maximum", "exclusiveMaximum", -1)
        if low is None and high is None:
            return self.integer()
        expr = integer_range(low, high)
        if not expr:
            self.rules.note(hint, "bounds no integer meets")
            return self.integer()
        return self.rules.add(f"{hint}-integer", expr)

    def number_value(self, schema: dict[str, Any], hint: str) -> str:
        """A number within its bounds, written without an exponent where it has bounds."""

        def bound(key: str, exclusive: str, tighter: Callable[[Bound, Bound], bool]) -> Bound | None:
            found: list[Bound] = []
            value, flag = schema.get(key), schema.get(exclusive)
            if _is_number(value):
                found.append(Bound(Decimal(str(value)), flag is not True))
            if _is_number(flag):
                found.append(Bound(Decimal(str(flag)), False))
            best = None
            for candidate in found:
                if best is None or tighter(candidate, best):
                    best = candidate
            return best

        low = bound(
            "minimum",
            "exclusiveMinimum",
            lambda a, b: a.value > b.value or (a.value == b.value and not a.inclusive),
        )
        high = bound(
            "maximum",
            "exclusiveMaximum",
            lambda a, b: a.value < b.value or (a.value == b.value and not a.inclusive),
        )
        if low is None and high is None:
            return self.number()
        expr = number_range(low, high)
        if expr is None:
            for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if keyword in schema:
                    self.rules.note(
                        hint, f"{keyword} of a number with more fraction digits than a number is written with"
                    )
            return self.number()
        if not expr:
            self.rules.note(hint, "bounds no number meets")
            return self.number()
        return self.rules.add(f"{hint}-number", expr)

    def object(self, schema: dict[str, Any], hint: str) -> str:
        declared = schema.get("properties")
        properties = declared if isinstance(declared, dict) else {}
        required = set(schema.get("required") or ())
        additional = schema.get("additionalProperties")
        if not properties and additional is not False:
            return self.any_object(lambda: self.value(additional, f"{hint}-value"))
        members = []
        for name, sub in properties.items():
            with self.nested():
                value = self.value(sub, f"{hint}-{name}")
            members.append((self.member(self.key(name), value), name in required))
        extra_value = ""
        if additional is True or isinstance(additional, dict):
            with self.nested():
                extra_value = self.value(additional, f"{hint}-extra")
        extra = self.member(self.string(), extra_value) if extra_value else ""
        # Indented, no members at all is written "{}", not an empty line: the body holds one at least.
        indented = self.indented()
        body = ordered(members, self.comma(), extra, empty=not indented)
        no_required = not any(is_required for _, is_required in members)
        return self.rules.add(hint, self.bracketed("{", body, "}", empty=indented and no_required))

    def member(self, key: str, value: str) -> str:
        """``key: value`` with the whitespace that may follow it (before ``,`` or ``}``)."""
        return seq(key, self.colon(), value, self.space())

    def array(self, schema: dict[str, Any], hint: str) -> str:
        ws = self.space()
        with self.nested():
            item = seq(self.value(schema.get("items"), f"{hint}-item"), ws)
        low = schema["minItems"] if isinstance(schema.get("minItems"), int) else 0
        high = schema["maxItems"] if isinstance(schema.get("maxItems"), int) else None
        if high == 0:
            return self.rules.add(hint, literal("[]") if self.indented() else seq(literal("["), ws, literal("]")))
        more = group(seq(self.comma(), item)) + f"{{{max(low - 1, 0)},{'' if high is None else high - 1}}}"
        return self.rules.add(hint, self.bracketed("[", seq(item, more), "]", empty=low == 0))

    def any_object(self, value: Callable[[], str]) -> str:
        """An object with any keys, each value what ``value`` builds (at the members' depth)."""
        with self.nested():
            member_value = value()
        self.space()  # its rule first, as before indentation was read: grammars of one-line JSON unchanged
        member = self.member(self.string(), member_value)
        members = seq(member, group(seq(self.comma(), member)) + "*")
        return self.rules.add(f"{self.prefix}object", self.bracketed("{", members, "}", empty=True))

    def any_value(self) -> str:
        """Any value, for an empty or absent schema."""

        def build(name: str) -> str:
            ws = self.space()
            # Indented, a value inside stands one level deeper, so it is another rule (up to the
            # depth past which whitespace is free and the rule its own element again).
            indented = self.indented()
            with self.nested():
                element = self.any_value() if indented else name
            item = seq(element, ws)
            array = self.bracketed("[", seq(item, group(seq(self.comma(), item)) + "*"), "]", empty=True)
            return " | ".join(
                (
                    self.any_object(self.any_value if indented else lambda: name),
                    self.rules.add(f"{self.prefix}array", array),
                    self.string(),
                    self.number(),
                    self.boolean(),
                    self.null(),
                )
            )

        # Made once per way of writing: exactly or not, and at which depth where indented.
        return self.rules.recursive(f"{self.prefix}any-value{self._layout_key()}", build)


class PythonRules(SchemaRules):
    """Python literals for a schema: ``'single'`` or ``"double"`` quoted strings with backslash
    escapes, ``True``/``False``/``None``; numbers, lists and dicts as in JSON."""

    prefix = "py-"

    def string(self) -> str:
        return self.rules.add("py-string", _PY_STRING)

    def boolean(self) -> str:
        return self.rules.add("py-boolean", '"True" | "False"')

    def null(self) -> str:
        return literal("None")

    def key(self, name: str) -> str:
        return choice((literal(repr(name)), literal(json.dumps(name, ensure_ascii=False))))

    def constant(self, value: Any) -> str:
        return literal(repr(value))
