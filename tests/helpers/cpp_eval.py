"""A reader for the small part of C++ that test sources build their inputs with.

``tokenize`` splits C++ source into tokens, decoding string literals as the compiler does (escapes,
raw strings, encoding prefixes); adjacent literals are joined where an expression reads them.
``Program`` holds the definitions of one or more sources (structs and classes with their fields and
defaults, enums, functions, global variables) and ``Interpreter`` runs functions over them: values,
braced initialisers converted to the type that receives them, struct fields, calls of the sources' own
functions, methods and constructors, ``if`` and range ``for``. Anything else is ``Unsupported``; the
caller decides whether a statement it could not run matters (see ``Interpreter.lenient``).

Used to read llama.cpp's ``tests/test-chat.cpp`` at test time (helpers/llama_chat_cases.py) instead of
copying anything out of it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


class CppError(Exception):
    """The source is not C++ this reader understands (a tokenizer or definition error)."""


class Unsupported(Exception):
    """A construct the interpreter does not run, or a value it could not compute was used."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "str" (text: the decoded value), "ident", "num", "char", "punct"
    text: str
    line: int


# --------------------------------------------------------------------------- tokenizer

# longest first, so that "::" is read before ":" and "->" before "-"
_PUNCTUATORS = sorted(
    (*"{}()[];,.:?!~+-*/%<>=&|^#", "::", "->", "...", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "++", "--")
    + ("+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "##"),
    key=len,
    reverse=True,
)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F']+|\d[\d']*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfFzZ]*")
_STRING_PREFIXES = ("u8R", "uR", "UR", "LR", "R", "u8", "u", "U", "L")
_SIMPLE_ESCAPES = {
    "n": b"\n",
    "t": b"\t",
    "r": b"\r",
    "\\": b"\\",
    '"': b'"',
    "'": b"'",
    "?": b"?",
    "a": b"\a",
    "b": b"\b",
    "f": b"\f",
    "v": b"\v",
}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


def tokenize(source: str) -> list[Token]:
    """The tokens of ``source``, comments and preprocessor lines left out."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(source)
    line_start = True  # only whitespace since the last newline: a '#' opens a preprocessor line
    while i < n:
        c = source[i]
        if c == "\n":
            line, line_start, i = line + 1, True, i + 1
            continue
        if c.isspace():
            i += 1
            continue
        if source.startswith("//", i):
            i = _line_end(source, i)
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                raise CppError(f"line {line}: unterminated comment")
            line += source.count("\n", i, end)
            i = end + 2
            continue
        if c == "#" and line_start:
            end = i
            while True:  # a directive continues past a newline escaped with a backslash
                end = _line_end(source, end)
                if end > 0 and source[end - 1] == "\\" and end < n:
                    line, end = line + 1, end + 1
                    continue
                break
            i = end
            continue
        line_start = False
        ident = _IDENT.match(source, i)
        if ident is not None:
            word = ident.group()
            if word in _STRING_PREFIXES and ident.end() < n and source[ident.end()] == '"':
                text, i, lines = _string_literal(source, ident.end(), raw="R" in word, line=line)
                tokens.append(Token("str", text, line))
                line += lines
                continue
            if word in _STRING_PREFIXES and ident.end() < n and source[ident.end()] == "'":
                text, i = _char_literal(source, ident.end(), line)
                tokens.append(Token("char", text, line))
                continue
            tokens.append(Token("ident", word, line))
            i = ident.end()
            continue
        if c == '"':
            text, i, lines = _string_literal(source, i, raw=False, line=line)
            tokens.append(Token("str", text, line))
            line += lines
            continue
        if c == "'":
            text, i = _char_literal(source, i, line)
            tokens.append(Token("char", text, line))
            continue
        number = _NUMBER.match(source, i)
        if number is not None and (c.isdigit() or c == "."):
            tokens.append(Token("num", number.group(), line))
            i = number.end()
            continue
        for punct in _PUNCTUATORS:
            if source.startswith(punct, i):
                tokens.append(Token("punct", punct, line))
                i += len(punct)
                break
        else:
            raise CppError(f"line {line}: unexpected character {c!r}")
    return tokens


def _line_end(source: str, i: int) -> int:
    end = source.find("\n", i)
    return len(source) if end < 0 else end


def _string_literal(source: str, i: int, *, raw: bool, line: int) -> tuple[str, int, int]:
    """The decoded literal whose opening quote is at ``i``, where it ends, and the newlines it spans."""
    if raw:
        open_paren = source.find("(", i + 1)
        delimiter = source[i + 1 : open_paren]
        if open_paren < 0 or len(delimiter) > 16 or any(ch in delimiter for ch in ' ()\\\t\n"'):
            raise CppError(f"line {line}: bad raw string delimiter")
        closing = ")" + delimiter + '"'
        end = source.find(closing, open_paren + 1)
        if end < 0:
            raise CppError(f"line {line}: unterminated raw string")
        body = source[open_paren + 1 : end]
        return body, end + len(closing), body.count("\n")
    out = bytearray()
    j = i + 1
    while True:
        if j >= len(source) or source[j] == "\n":
            raise CppError(f"line {line}: unterminated string literal")
        ch = source[j]
        if ch == '"':
            break
        if ch != "\\":
            out += ch.encode("utf-8")
            j += 1
            continue
        escaped, j = _escape(source, j + 1, line)
        out += escaped
    try:
        return out.decode("utf-8"), j + 1, 0
    except UnicodeDecodeError as exc:
        raise CppError(f"line {line}: string literal is not UTF-8 ({exc})") from None


def _escape(source: str, j: int, line: int) -> tuple[bytes, int]:
    """The bytes of the escape sequence after a backslash at ``j - 1``, and where it ends."""
    ch = source[j] if j < len(source) else ""
    if ch in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[ch], j + 1
    if ch == "\n":  # a backslash-newline inside a literal joins the lines
        return b"", j + 1
    if ch and ch in _OCTAL:
        end = j
        while end < len(source) and end < j + 3 and source[end] in _OCTAL:
            end += 1
        return _byte(int(source[j:end], 8), line), end
    if ch == "x":
        end = j + 1
        while end < len(source) and source[end] in _HEX:
            end += 1
        if end == j + 1:
            raise CppError(f"line {line}: \\x with no hex digits")
        return _byte(int(source[j + 1 : end], 16), line), end
    if ch in ("u", "U"):
        width = 4 if ch == "u" else 8
        digits = source[j + 1 : j + 1 + width]
        if len(digits) != width or any(d not in _HEX for d in digits):
            raise CppError(f"line {line}: bad \\{ch} escape")
        return chr(int(digits, 16)).encode("utf-8"), j + 1 + width
    raise CppError(f"line {line}: unknown escape \\{ch}")


def _byte(value: int, line: int) -> bytes:
    if value > 0xFF:
        raise CppError(f"line {line}: escape value {value:#x} does not fit in a char")
    return bytes([value])


def _char_literal(source: str, i: int, line: int) -> tuple[str, int]:
    j = i + 1
    if source[j : j + 1] == "\\":
        value, j = _escape(source, j + 1, line)
        text = value.decode("latin-1")
    else:
        text, j = source[j], j + 1
    if source[j : j + 1] != "'":
        raise CppError(f"line {line}: bad character literal")
    return text, j + 1


# --------------------------------------------------------------------------- values and types


@dataclass(frozen=True, slots=True)
class Type:
    """A declared type, qualifiers dropped: ``std::vector<common_chat_tool>`` is name ``std::vector``
    with one argument. ``ref``: a reference (values are not copied into it)."""

    name: str
    args: tuple[Type, ...] = ()
    ref: bool = False
    pointer: bool = False

    def __str__(self) -> str:
        inner = f"<{', '.join(map(str, self.args))}>" if self.args else ""
        return self.name + inner + ("*" if self.pointer else "") + ("&" if self.ref else "")


AUTO = Type("auto")
_STRING_TYPES = frozenset(("std::string", "std::string_view", "string"))
_INT_TYPES = frozenset(("int", "size_t", "unsigned", "long", "short", "uint32_t", "int32_t", "int64_t", "uint64_t"))
_QUALIFIERS = frozenset(
    ("const", "static", "constexpr", "inline", "explicit", "mutable", "volatile", "typename", "struct", "extern")
)


@dataclass(slots=True)
class Unresolved:
    """A value the interpreter could not compute; it fails only where it is used."""

    reason: str


@dataclass(frozen=True, slots=True)
class EnumValue:
    type: str
    name: str


@dataclass(slots=True)
class Brace:
    """A braced initialiser list, not yet converted to the type that receives it."""

    items: list[Any]


@dataclass(slots=True)
class Instance:
    """A struct or class value: its type's name and its fields."""

    type: str
    fields: dict[str, Any]
    tag: Any = None  # what an observer attached (the interpreter never reads it)

    def __deepcopy__(self, memo: dict[int, Any]) -> Instance:
        return Instance(self.type, copy.deepcopy(self.fields, memo), self.tag)


@dataclass(frozen=True, slots=True)
class Span:
    """Tokens ``start`` up to ``end`` (exclusive) of ``tokens``."""

    tokens: list[Token]
    start: int
    end: int


@dataclass(slots=True)
class Param:
    type: Type
    name: str | None
    default: Span | None


@dataclass(slots=True)
class Function:
    name: str
    owner: str | None  # the class a method or constructor belongs to
    returns: Type
    params: list[Param]
    body: Span
    initializers: list[tuple[str, Span]] = field(default_factory=list)  # a constructor's member initialisers


@dataclass(slots=True)
class Field:
    name: str
    type: Type
    default: Span | None


@dataclass(slots=True)
class ClassDef:
    name: str
    fields: list[Field] = field(default_factory=list)
    methods: dict[str, Function] = field(default_factory=dict)
    constructor: Function | None = None

    def field_type(self, name: str) -> Type | None:
        return next((f.type for f in self.fields if f.name == name), None)


@dataclass(slots=True)
class Global:
    name: str
    type: Type
    init: Span | None  # an expression (after '='), or a braced list
    line: int


@dataclass(slots=True)
class Program:
    """The definitions of the sources read, in order."""

    classes: dict[str, ClassDef] = field(default_factory=dict)
    enums: dict[str, EnumValue] = field(default_factory=dict)  # enumerator name -> value
    enum_first: dict[str, EnumValue] = field(default_factory=dict)  # enum type -> its zero value
    functions: dict[str, Function] = field(default_factory=dict)  # free functions by name
    globals: list[Global] = field(default_factory=list)

    def read(self, source: str, *, only: tuple[str, ...] = ("struct", "enum", "function", "global")) -> list[Token]:
        """Add the definitions of ``source`` of the kinds in ``only``; returns its tokens."""
        tokens = tokenize(source)
        _Definitions(self, tokens, only).top_level(0, len(tokens))
        return tokens


# --------------------------------------------------------------------------- definitions


def _matching(tokens: list[Token], i: int) -> int:
    """The index just after the bracket closing the one at ``i``."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opening = tokens[i].text
    closing = pairs[opening]
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.kind != "punct":
            continue
        if t.text in pairs:
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                if t.text != closing:
                    raise CppError(f"line {t.line}: {t.text!r} closes {opening!r}")
                return j + 1
    raise CppError(f"line {tokens[i].line}: {opening!r} is never closed")


def _angle_end(tokens: list[Token], i: int) -> int:
    """The index just after the '>' closing the '<' at ``i`` ('>>' closes two)."""
    depth = 0
    j = i
    while j < len(tokens):
        t = tokens[j]
        if t.kind == "punct" and t.text in "([{":
            j = _matching(tokens, j)
            continue
        if t.kind == "punct" and t.text == "<":
            depth += 1
        elif t.kind == "punct" and t.text in (">", ">>"):
            depth -= len(t.text)
            if depth <= 0:
                return j + 1
        elif t.kind == "punct" and t.text == ";":
            break
        j += 1
    raise CppError(f"line {tokens[i].line}: '<' is never closed")


def _stop(tokens: list[Token], i: int, end: int, stops: tuple[str, ...]) -> int:
    """The first index from ``i`` whose token is one of ``stops`` outside brackets (``end`` if none)."""
    j = i
    while j < end:
        t = tokens[j]
        if t.kind == "punct" and t.text in stops:
            return j
        if t.kind == "punct" and t.text in "([{":
            j = _matching(tokens, j)
            continue
        j += 1
    return end


def _split(tokens: list[Token], start: int, end: int, separator: str = ",") -> list[tuple[int, int]]:
    """The ranges between top-level separators (angle brackets count as brackets: type lists)."""
    parts: list[tuple[int, int]] = []
    j, part, angle = start, start, 0
    while j < end:
        t = tokens[j]
        if t.kind == "punct":
            if t.text in "([{":
                j = _matching(tokens, j)
                continue
            if t.text == "<":
                angle += 1
            elif t.text in (">", ">>"):
                angle = max(0, angle - len(t.text))
            elif t.text == separator and angle == 0:
                parts.append((part, j))
                part = j + 1
        j += 1
    if part < end:
        parts.append((part, end))
    return parts


def parse_type(tokens: list[Token], i: int, end: int) -> tuple[Type, int]:
    """The type written from ``i``: qualifiers, a qualified name with template arguments, '*' and '&'."""
    j = i
    while j < end and tokens[j].kind == "ident" and tokens[j].text in _QUALIFIERS:
        j += 1
    if j >= end or tokens[j].kind != "ident":
        raise Unsupported(f"line {tokens[min(j, end - 1)].line}: no type here")
    name = tokens[j].text
    j += 1
    while j + 1 < end and tokens[j].text == "::" and tokens[j + 1].kind == "ident":
        name += "::" + tokens[j + 1].text
        j += 2
    if name in ("unsigned", "signed", "long") and j < end and tokens[j].text in ("int", "long", "char"):
        name, j = f"{name} {tokens[j].text}", j + 1
    args: tuple[Type, ...] = ()
    if j < end and tokens[j].text == "<":
        close = _angle_end(tokens, j)
        inner_end = close - 1
        # a '>>' closing two lists: the inner type ends before it, the outer at it
        args = tuple(parse_type(tokens, a, b)[0] for a, b in _split(tokens, j + 1, inner_end))
        j = close
    ref = pointer = False
    while j < end and tokens[j].text in ("*", "&", "&&", "const"):
        pointer |= tokens[j].text == "*"
        ref |= tokens[j].text in ("&", "&&")
        j += 1
    if name == "char" and pointer:
        name, pointer = "std::string", False  # a C string: read as text
    return Type(name, args, ref, pointer), j


class _Definitions:
    """Reads top-level definitions into a Program."""

    def __init__(self, program: Program, tokens: list[Token], only: tuple[str, ...]) -> None:
        self.program, self.tokens, self.only = program, tokens, only

    def top_level(self, i: int, end: int) -> None:
        t = self.tokens
        while i < end:
            word = t[i].text
            if t[i].kind == "punct" and word == ";":
                i += 1
            elif word == "namespace" and t[i].kind == "ident":
                brace = _stop(t, i, end, ("{", ";"))
                i = _matching(t, brace) if brace < end and t[brace].text == "{" else brace + 1
            elif word in ("using", "typedef", "static_assert") and t[i].kind == "ident":
                i = _stop(t, i, end, (";",)) + 1
            elif word == "template" and t[i].kind == "ident":
                i = _angle_end(t, i + 1)
            elif word == "extern" and i + 1 < end and t[i + 1].kind == "str":  # extern "C" { ... }
                i = _matching(t, i + 2) if t[i + 2].text == "{" else i + 2
            elif word in ("struct", "class", "union") and t[i].kind == "ident" and self._is_type_definition(i, end):
                i = self.class_definition(i, end)
            elif word == "enum" and t[i].kind == "ident":
                i = self.enum_definition(i, end)
            else:
                i = self.declaration(i, end)

    def _is_type_definition(self, i: int, end: int) -> bool:
        # `struct name {`, `struct name : base {` or `struct name;`, not `struct name var = ...`
        j = i + 1
        return j + 1 < end and self.tokens[j].kind == "ident" and self.tokens[j + 1].text in ("{", ";", ":", "final")

    def enum_definition(self, i: int, end: int) -> int:
        t = self.tokens
        j = i + 1
        if t[j].text in ("class", "struct"):
            j += 1
        name = t[j].text
        brace = _stop(t, j, end, ("{", ";"))
        if t[brace].text == ";":
            return brace + 1
        close = _matching(t, brace)
        if "enum" in self.only:
            first = True
            for a, b in _split(t, brace + 1, close - 1):
                if a < b and t[a].kind == "ident":
                    value = EnumValue(name, t[a].text)
                    self.program.enums[t[a].text] = value
                    if first or (b - a >= 3 and t[a + 1].text == "=" and t[a + 2].text == "0"):
                        self.program.enum_first[name] = value
                    first = False
        return _stop(t, close, end, (";",)) + 1

    def class_definition(self, i: int, end: int) -> int:
        t = self.tokens
        name = t[i + 1].text
        brace = _stop(t, i + 1, end, ("{", ";"))
        if t[brace].text == ";":
            return brace + 1
        close = _matching(t, brace)
        if "struct" in self.only:
            cls = self.program.classes.setdefault(name, ClassDef(name))
            self.members(cls, brace + 1, close - 1)
        return _stop(t, close, end, (";",)) + 1

    def members(self, cls: ClassDef, i: int, end: int) -> None:
        t = self.tokens
        while i < end:
            word = t[i].text
            if word in ("public", "private", "protected") and i + 1 < end and t[i + 1].text == ":":
                i += 2
                continue
            if word == ";":
                i += 1
                continue
            if word in ("friend", "using", "typedef", "static_assert"):
                i = _stop(t, i, end, (";",)) + 1
                continue
            if word in ("struct", "class", "union", "enum"):  # nested types: not needed
                brace = _stop(t, i, end, ("{", ";"))
                i = (_stop(t, _matching(t, brace), end, (";",)) + 1) if t[brace].text == "{" else brace + 1
                continue
            stop = _stop(t, i, end, (";", "{", "=", "("))
            if stop < end and t[stop].text == "(":
                i = self.function(i, stop, end, owner=cls)
                continue
            # a field: TYPE NAME [= default | {default}] ;
            type_, j = parse_type(t, i, end)
            if j >= end or t[j].kind != "ident":
                raise CppError(f"line {t[i].line}: cannot read member of {cls.name}")
            name = t[j].text
            j += 1
            default: Span | None = None
            if t[j].text == "=":
                semi = _stop(t, j + 1, end, (";",))
                default, j = Span(t, j + 1, semi), semi
            elif t[j].text == "{":
                close = _matching(t, j)
                default, j = Span(t, j, close), close
            cls.fields.append(Field(name, type_, default))
            i = _stop(t, j, end, (";",)) + 1

    def function(self, i: int, paren: int, end: int, owner: ClassDef | None) -> int:
        """A function (or method, or constructor) whose parameter list opens at ``paren``: stored when it has
        a body; returns where it ends."""
        t = self.tokens
        name = t[paren - 1].text
        head = [tok.text for tok in t[i : paren - 1]]
        owner_name = owner.name if owner is not None else None
        if len(head) >= 2 and head[-1] == "::" and paren >= 3:
            owner_name = head[-2]
            head = head[:-2]
        is_constructor = owner_name is not None and name == owner_name
        returns = AUTO if is_constructor or not head else _type_of(t, i, paren - 1)
        close = _matching(t, paren)
        params = [self.param(a, b) for a, b in _split(t, paren + 1, close - 1)]
        j = close
        while j < end and t[j].kind == "ident" and t[j].text in ("const", "override", "noexcept", "final"):
            j += 1
        initializers: list[tuple[str, Span]] = []
        if j < end and t[j].text == ":":
            body_at = _stop(t, j + 1, end, ("{",))
            # member initialisers: name(expr), name{expr}, ... (each bracket group skipped whole)
            k = j + 1
            while k < body_at:
                member = t[k].text
                group_end = _matching(t, k + 1)
                initializers.append((member, Span(t, k + 2, group_end - 1)))
                k = group_end + (1 if group_end < body_at and t[group_end].text == "," else 0)
            j = body_at
        if j < end and t[j].text == "=":  # = default / = delete
            return _stop(t, j, end, (";",)) + 1
        if j >= end or t[j].text != "{":
            return _stop(t, j, end, (";",)) + 1 if j < end else end  # a declaration only
        body_end = _matching(t, j)
        function = Function(name, owner_name, returns, params, Span(t, j + 1, body_end - 1), initializers)
        if "function" in self.only or owner is not None or owner_name is not None:
            if owner_name is None:
                self.program.functions[name] = function
            else:
                cls = self.program.classes.setdefault(owner_name, ClassDef(owner_name))
                if is_constructor:
                    cls.constructor = function
                else:
                    cls.methods.setdefault(name, function)
        return body_end

    def param(self, a: int, b: int) -> Param:
        t = self.tokens
        eq = _stop(t, a, b, ("=",))
        default = Span(t, eq + 1, b) if eq < b else None
        name = t[eq - 1].text if eq - 1 > a and t[eq - 1].kind == "ident" else None
        type_end = eq - 1 if name is not None else eq
        try:
            type_ = _type_of(t, a, type_end)
        except Unsupported:  # `...`, a function pointer: a parameter no chain passes anything to
            type_ = Type("?")
        return Param(type_, name, default)

    def declaration(self, i: int, end: int) -> int:
        t = self.tokens
        stop = _stop(t, i, end, (";", "{", "=", "("))
        if stop >= end:
            raise CppError(f"line {t[i].line}: declaration runs off the end")
        if t[stop].text == "(":
            operator_at = next((k for k in range(i, stop) if t[k].text == "operator"), None)
            if operator_at is not None:  # operator<<(...): the parenthesis that opens its parameters
                stop = _stop(t, operator_at + 2, end, ("(",))
            return self.function(i, stop, end, owner=None)
        # a variable: TYPE NAME ; | TYPE NAME = expr ; | TYPE NAME { list } ;
        if t[stop - 1].kind != "ident":
            raise CppError(f"line {t[i].line}: cannot read declaration")
        name = t[stop - 1].text
        type_ = _type_of(t, i, stop - 1)
        init: Span | None = None
        if t[stop].text == "=":
            semi = _stop(t, stop + 1, end, (";",))
            init, after = Span(t, stop + 1, semi), semi + 1
        elif t[stop].text == "{":
            close = _matching(t, stop)
            init, after = Span(t, stop, close), _stop(t, close, end, (";",)) + 1
        else:
            after = stop + 1
        if "global" in self.only:
            self.program.globals.append(Global(name, type_, init, t[i].line))
        return after


def _type_of(tokens: list[Token], start: int, end: int) -> Type:
    if start >= end:
        return AUTO
    type_, _ = parse_type(tokens, start, end)
    return type_


# --------------------------------------------------------------------------- interpreter


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass(slots=True)
class _Ref:
    """Where a value lives: a variable or a field, with its declared type (None: not declared)."""

    holder: dict[str, Any]
    key: str
    type: Type | None


class Scope:
    def __init__(self, parent: Scope | None, this: Instance | None = None, function: bool = False) -> None:
        self.vars: dict[str, Any] = {}
        self.types: dict[str, Type] = {}
        self.parent = parent
        self.this = this
        self.function = function  # a function's outermost scope: `this` is looked up after it

    def declare(self, name: str, type_: Type, value: Any) -> None:
        self.vars[name] = value
        self.types[name] = type_

    def find(self, name: str, interp: Interpreter) -> _Ref | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return _Ref(scope.vars, name, scope.types.get(name))
            if scope.function and scope.this is not None and name in scope.this.fields:
                cls = interp.program.classes.get(scope.this.type)
                return _Ref(scope.this.fields, name, cls.field_type(name) if cls else None)
            scope = scope.parent
        return None

    def current_this(self) -> Instance | None:
        scope: Scope | None = self
        while scope is not None:
            if scope.function:
                return scope.this
            scope = scope.parent
        return None


Hook = Callable[[Instance, list[Any], Token], Any]
Observer = Callable[[Instance, Any, Token], None]
Failure = Callable[[Span, str], None]


class Interpreter:
    """Runs a Program's functions. ``replace[(class, method)]`` is called instead of that method;
    ``observe[(class, method)]`` after it, with the result. A block for which ``lenient(block)`` holds
    runs statement by statement: a statement that fails is reported to ``on_failure`` (with its tokens
    and the reason) and skipped, a variable it declares left Unresolved. In any other block a failure
    fails the call, so a helper function is run whole or not at all."""

    MAX_DEPTH = 64

    def __init__(
        self,
        program: Program,
        *,
        replace: dict[tuple[str, str], Hook] | None = None,
        observe: dict[tuple[str, str], Observer] | None = None,
        lenient: Callable[[Span], bool] = lambda span: False,
        on_failure: Failure | None = None,
    ) -> None:
        self.program = program
        self.replace = replace or {}
        self.observe = observe or {}
        self.lenient = lenient
        self.on_failure = on_failure or (lambda span, reason: None)
        self.globals = Scope(None)
        self._depth = 0
        for decl in program.globals:
            try:
                value = self._initial(decl.type, decl.init, self.globals)
            except Unsupported as exc:
                value = Unresolved(f"global {decl.name}: {exc}")
            self.globals.declare(decl.name, decl.type, value)

    # ------------------------------------------------------------ calls

    def call(self, function: Function, args: list[Any], this: Instance | None = None) -> Any:
        if self._depth >= self.MAX_DEPTH:
            raise Unsupported(f"calls nested deeper than {self.MAX_DEPTH}")
        scope = Scope(self.globals, this, function=True)
        if len(args) > len(function.params):
            raise Unsupported(f"{function.name}: {len(args)} arguments for {len(function.params)} parameters")
        for k, param in enumerate(function.params):
            if k < len(args):
                value = args[k]
            elif param.default is not None:
                value = self.expression(param.default, self.globals)
            else:
                raise Unsupported(f"{function.name}: no value for parameter {param.name}")
            if param.name is not None:
                scope.declare(param.name, param.type, self._bind(value, param.type))
        self._depth += 1
        try:
            self.block(function.body, scope)
        except _Return as returned:
            value = returned.value
            return value if function.returns.ref else self._bind(value, function.returns)
        finally:
            self._depth -= 1
        return None

    def construct(self, cls: ClassDef, args: list[Any]) -> Instance:
        """A new instance: fields at their defaults, then the constructor (its initialisers and body), or
        aggregate initialisation from ``args`` where the class has no constructor."""
        instance = self.default(Type(cls.name))
        assert isinstance(instance, Instance)
        ctor = cls.constructor
        if ctor is None:
            return self._aggregate(cls, args)
        scope = Scope(self.globals, instance, function=True)
        for k, param in enumerate(ctor.params):
            if k < len(args):
                value = args[k]
            elif param.default is not None:
                value = self.expression(param.default, self.globals)
            else:
                raise Unsupported(f"{cls.name}: no value for constructor parameter {param.name}")
            if param.name is not None:
                scope.declare(param.name, param.type, self._bind(value, param.type))
        for member, span in ctor.initializers:
            try:  # a member the interpreter cannot make fails only where it is used
                value = self.expression(span, scope)
            except Unsupported as exc:
                value = Unresolved(f"{cls.name}.{member}: {exc}")
            instance.fields[member] = self._bind(value, cls.field_type(member) or AUTO)
        self._depth += 1
        try:
            self.block(ctor.body, scope)
        except _Return:
            pass
        finally:
            self._depth -= 1
        return instance

    def _aggregate(self, cls: ClassDef, items: list[Any]) -> Instance:
        if len(items) > len(cls.fields):
            raise Unsupported(f"{len(items)} initialisers for {cls.name}'s {len(cls.fields)} fields")
        instance = self.default(Type(cls.name))
        assert isinstance(instance, Instance)
        for fld, item in zip(cls.fields, items, strict=False):
            instance.fields[fld.name] = self.convert(item, fld.type)
        return instance

    # ------------------------------------------------------------ values and conversion

    def default(self, type_: Type) -> Any:
        """The value a declaration of ``type_`` without initialiser holds."""
        name = type_.name
        if type_.pointer:
            return Unresolved(f"a {type_} pointer")
        if name in _STRING_TYPES:
            return ""
        if name == "bool":
            return False
        if name in _INT_TYPES:
            return 0
        if name in ("float", "double"):
            return 0.0
        if name == "std::vector":
            return []
        if name in self.program.enum_first:
            return self.program.enum_first[name]
        cls = self.program.classes.get(name)
        if cls is not None:
            instance = Instance(name, {})
            for fld in cls.fields:
                if fld.default is not None:
                    try:
                        instance.fields[fld.name] = self._initial(fld.type, fld.default, self.globals)
                    except Unsupported as exc:
                        instance.fields[fld.name] = Unresolved(f"{name}.{fld.name} default: {exc}")
                else:
                    instance.fields[fld.name] = self.default(fld.type)
            return instance
        return Unresolved(f"a value of type {type_}")

    def _initial(self, type_: Type, init: Span | None, scope: Scope) -> Any:
        if init is None:
            return self.default(type_)
        return self._bind(self.expression(init, scope), type_)

    def _bind(self, value: Any, type_: Type) -> Any:
        """``value`` as stored into a place of ``type_``: converted, and copied unless a reference."""
        converted = self.convert(value, type_)
        return converted if type_.ref else copy.deepcopy(converted)

    def convert(self, value: Any, type_: Type) -> Any:
        if isinstance(value, Unresolved):
            return value
        name = type_.name
        if name == "auto" or type_.pointer:
            return value
        if name in _STRING_TYPES:
            if isinstance(value, str):
                return value
            if isinstance(value, Brace) and not value.items:
                return ""
            if isinstance(value, Brace) and len(value.items) == 1 and isinstance(value.items[0], str):
                return value.items[0]
            raise Unsupported(f"{_show(value)} is not a string")
        if name == "bool":
            if isinstance(value, bool):
                return value
            raise Unsupported(f"{_show(value)} is not a bool")
        if name in _INT_TYPES or name in ("float", "double"):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
            raise Unsupported(f"{_show(value)} is not a number")
        if name == "std::vector":
            element = type_.args[0] if type_.args else AUTO
            items = value.items if isinstance(value, Brace) else value
            if not isinstance(items, list):
                raise Unsupported(f"{_show(value)} is not a list")
            return [self.convert(item, element) for item in items]
        if name == "std::pair":
            items = value.items if isinstance(value, Brace) else list(value) if isinstance(value, tuple) else None
            if items is None or len(items) != 2 or len(type_.args) != 2:
                raise Unsupported(f"{_show(value)} is not a pair")
            return (self.convert(items[0], type_.args[0]), self.convert(items[1], type_.args[1]))
        if name in self.program.enum_first:
            if isinstance(value, EnumValue) and value.type == name:
                return value
            raise Unsupported(f"{_show(value)} is not a {name}")
        cls = self.program.classes.get(name)
        if cls is not None:
            if isinstance(value, Instance) and value.type == name:
                return value
            if isinstance(value, Brace):
                if cls.constructor is not None:
                    return self.construct(cls, value.items)
                return self._aggregate(cls, value.items)
            raise Unsupported(f"{_show(value)} is not a {name}")
        if isinstance(value, Brace):
            raise Unsupported(f"a braced list for {type_}, a type this reader does not know")
        return value

    # ------------------------------------------------------------ statements

    def block(self, span: Span, scope: Scope) -> None:
        lenient = self.lenient(span)
        i = span.start
        while i < span.end:
            end = statement_end(span.tokens, i, span.end)
            statement = Span(span.tokens, i, end)
            if not lenient:
                self.statement(statement, scope)
            else:
                try:
                    self.statement(statement, scope)
                except Unsupported as exc:
                    # what the statement declares or may have changed before it failed is not to be
                    # trusted: a later statement using it fails too, instead of reading a half-made value
                    declared = _declared_name(statement, self)
                    if declared is not None:
                        scope.declare(declared, AUTO, Unresolved(str(exc)))
                    for name in _possibly_modified(statement):
                        ref = scope.find(name, self)
                        if ref is not None and name != declared:
                            ref.holder[ref.key] = Unresolved(f"{name} was changed by a statement that failed: {exc}")
                    self.on_failure(statement, str(exc))
            i = end

    def statement(self, span: Span, scope: Scope) -> None:
        t, i, end = span.tokens, span.start, span.end
        word = t[i].text if t[i].kind in ("ident", "punct") else ""
        if word == "{":
            self.block(Span(t, i + 1, end - 1), Scope(scope))
        elif word == ";":
            return
        elif word == "if":
            close = _matching(t, i + 1)
            condition = self.expression(Span(t, i + 2, close - 1), scope)
            body_end = statement_end(t, close, end)
            if self.truth(condition):
                self.statement(Span(t, close, body_end), Scope(scope))
            elif body_end < end and t[body_end].text == "else":
                self.statement(Span(t, body_end + 1, end), Scope(scope))
        elif word == "for":
            self.range_for(span, scope)
        elif word == "return":
            value = None if t[i + 1].text == ";" else self.expression(Span(t, i + 1, end - 1), scope)
            raise _Return(value)
        elif word in ("while", "do", "switch", "try", "throw", "goto", "break", "continue", "case", "default"):
            raise Unsupported(f"line {t[i].line}: `{word}` statement")
        elif (decl := self._declaration(span)) is not None:
            type_, name, kind, init = decl
            if kind == "none" or init is None:
                value = self.default(type_)
            elif kind == "call":
                cls = self.program.classes.get(type_.name)
                if cls is None:
                    raise Unsupported(
                        f"line {t[i].line}: constructor call of {type_}, a type this reader does not know"
                    )
                value = self.construct(cls, _Expression(self, init, scope).all_arguments())
            else:
                value = self._bind(self.expression(init, scope), type_)
            if type_.name == "auto" and isinstance(value, Brace):
                raise Unsupported(f"line {t[i].line}: auto from a braced list")
            scope.declare(name, type_ if type_.name != "auto" else AUTO, value)
        else:
            semi = end - 1
            if t[semi].text != ";":
                raise Unsupported(f"line {t[i].line}: statement does not end with ';'")
            assign = _stop(t, i, semi, ("=", "+="))
            if assign < semi:
                self.assign(Span(t, i, assign), t[assign].text, Span(t, assign + 1, semi), scope)
            else:
                self.expression(Span(t, i, semi), scope)

    def _declaration(self, span: Span) -> tuple[Type, str, str, Span | None] | None:
        """``TYPE NAME;``, ``TYPE NAME = expr;``, ``TYPE NAME{...};`` or ``TYPE NAME(args);``: the type, the
        name, how it is initialised ("none", "expr", "brace", "call") and the initialiser's tokens."""
        t, i, end = span.tokens, span.start, span.end
        if t[i].kind != "ident":
            return None
        try:
            type_, j = parse_type(t, i, end)
        except (Unsupported, CppError):
            return None
        if j >= end or t[j].kind != "ident" or j + 1 >= end:
            return None
        known = (
            type_.name in ("auto", "bool", "float", "double")
            or type_.name in _STRING_TYPES
            or type_.name in _INT_TYPES
            or "::" in type_.name
            or type_.name in self.program.classes
            or bool(type_.args)
            or t[i].text in _QUALIFIERS
        )
        follow = t[j + 1].text
        if not known or follow not in ("=", ";", "{", "("):
            return None
        name = t[j].text
        if follow == ";":
            return type_, name, "none", None
        if follow == "=":
            return type_, name, "expr", Span(t, j + 2, end - 1)
        if follow == "{":
            return type_, name, "brace", Span(t, j + 1, _matching(t, j + 1))
        return type_, name, "call", Span(t, j + 2, _matching(t, j + 1) - 1)

    def range_for(self, span: Span, scope: Scope) -> None:
        t, i = span.tokens, span.start
        close = _matching(t, i + 1)
        colon = _stop(t, i + 2, close - 1, (":",))
        if colon >= close - 1:
            raise Unsupported(f"line {t[i].line}: a `for` that is not a range for")
        items = self.expression(Span(t, colon + 1, close - 1), scope)
        items = items.items if isinstance(items, Brace) else items
        if not isinstance(items, list):
            raise Unsupported(f"line {t[i].line}: `for` over {_show(items)}")
        head = [tok.text for tok in t[i + 2 : colon]]
        body = Span(t, close, span.end)
        for item in items:
            inner = Scope(scope)
            if "[" in head:  # structured binding: auto & [a, b]
                names = [tok.text for tok in t[i + 2 : colon] if tok.kind == "ident" and tok.text not in _QUALIFIERS]
                names = [n for n in names if n != "auto"]
                values = list(item) if isinstance(item, (tuple, list)) else None
                if values is None or len(values) != len(names):
                    raise Unsupported(f"line {t[i].line}: cannot bind {names} to {_show(item)}")
                for name, value in zip(names, values, strict=True):
                    inner.declare(name, AUTO, value)
            else:
                type_ = _type_of(t, i + 2, colon - 1)
                inner.declare(t[colon - 1].text, type_, self._bind(item, type_))
            self.statement(body, inner)

    def assign(self, target: Span, operator: str, value_span: Span, scope: Scope) -> None:
        ref = self.reference(target, scope)
        value = self.expression(value_span, scope)
        if operator == "+=":
            value = _add(ref.holder[ref.key], value, target.tokens[target.start])
        ref.holder[ref.key] = self._bind(value, ref.type or AUTO) if ref.type else copy.deepcopy(value)

    def reference(self, span: Span, scope: Scope) -> _Ref:
        evaluator = _Expression(self, span, scope)
        _, ref = evaluator.postfix()
        if evaluator.i != span.end or ref is None:
            raise Unsupported(f"line {span.tokens[span.start].line}: cannot assign to this")
        return ref

    def expression(self, span: Span, scope: Scope) -> Any:
        if span.start >= span.end:
            raise Unsupported("empty expression")
        evaluator = _Expression(self, span, scope)
        value = evaluator.parse()
        if evaluator.i != span.end:
            tok = span.tokens[evaluator.i]
            raise Unsupported(f"line {tok.line}: cannot read expression at {tok.text!r}")
        return value

    @staticmethod
    def truth(value: Any) -> bool:
        if isinstance(value, Unresolved):
            raise Unsupported(value.reason)
        if isinstance(value, (bool, int, float, str)):
            return bool(value)
        raise Unsupported(f"{_show(value)} as a condition")

    # ------------------------------------------------------------ names and methods

    def name(self, name: str, scope: Scope, token: Token) -> tuple[Any, _Ref | None]:
        ref = scope.find(name, self)
        if ref is not None:
            value = ref.holder[ref.key]
            return value, ref
        if name in self.program.enums:
            return self.program.enums[name], None
        if name in ("true", "false"):
            return name == "true", None
        if name in ("nullptr", "NULL"):
            return Unresolved("a null pointer"), None
        raise Unsupported(f"line {token.line}: unknown name {name}")

    def call_named(self, name: str, args: list[Any], scope: Scope, token: Token) -> Any:
        if name in ("std::move", "std::ref", "std::cref") and len(args) == 1:
            return args[0]
        if name in _STRING_TYPES and len(args) <= 1:
            return self.convert(args[0] if args else "", Type("std::string"))
        cls = self.program.classes.get(name)
        if cls is not None:
            return self.construct(cls, args)
        function = self.program.functions.get(name)
        if function is not None:
            return self.call(function, args)
        raise Unsupported(f"line {token.line}: call of {name}, a function this reader does not run")

    def method(self, obj: Any, ref: _Ref | None, name: str, args: list[Any], token: Token) -> Any:
        if isinstance(obj, Unresolved):
            raise Unsupported(f"line {token.line}: .{name}() on {obj.reason}")
        if isinstance(obj, Instance):
            hook = self.replace.get((obj.type, name))
            if hook is not None:
                return hook(obj, args, token)
            cls = self.program.classes.get(obj.type)
            function = cls.methods.get(name) if cls is not None else None
            if function is not None:
                result = self.call(function, args, this=obj)
                observer = self.observe.get((obj.type, name))
                if observer is not None:
                    observer(obj, result, token)
                return result
            raise Unsupported(f"line {token.line}: {obj.type} has no method {name} this reader knows")
        if name == "empty" and not args and isinstance(obj, (str, list)):
            return not obj
        if name in ("size", "length") and not args and isinstance(obj, (str, list)):
            return len(obj)
        if name == "c_str" and not args and isinstance(obj, str):
            return obj
        if name == "push_back" and len(args) == 1 and isinstance(obj, list):
            element = ref.type.args[0] if ref is not None and ref.type is not None and ref.type.args else AUTO
            obj.append(self._bind(args[0], element))
            return None
        raise Unsupported(f"line {token.line}: .{name}() on {_show(obj)}")

    def member(self, obj: Any, name: str, token: Token) -> tuple[Any, _Ref]:
        if isinstance(obj, Unresolved):
            raise Unsupported(f"line {token.line}: .{name} of {obj.reason}")
        if not isinstance(obj, Instance) or name not in obj.fields:
            raise Unsupported(f"line {token.line}: no field {name} in {_show(obj)}")
        cls = self.program.classes.get(obj.type)
        return obj.fields[name], _Ref(obj.fields, name, cls.field_type(name) if cls else None)


def _declared_name(span: Span, interp: Interpreter) -> str | None:
    try:
        decl = interp._declaration(span)
    except Unsupported:
        return None
    return decl[1] if decl is not None else None


# methods that only read the value they are called on
_READING_METHODS = frozenset(
    ("empty", "size", "length", "c_str", "data", "find", "rfind", "compare", "substr", "at", "get", "dump", "what")
)


def _possibly_modified(span: Span) -> set[str]:
    """The variables a statement may change: the root of each name path it assigns to (``a.b = ...``) or
    calls a method on that is not a mere reading (``a.b.push_back(...)``, ``tst.test(...)``)."""
    t, out = span.tokens, set()
    k = span.start
    while k < span.end:
        if t[k].kind != "ident" or (k > span.start and t[k - 1].text in (".", "->", "::")):
            k += 1
            continue
        root, j, last = t[k].text, k + 1, t[k].text
        while j + 1 < span.end and t[j].text in (".", "->") and t[j + 1].kind == "ident":
            last, j = t[j + 1].text, j + 2
        after = t[j].text if j < span.end else ""
        if after in ("=", "+=") or (after == "(" and j > k + 1 and last not in _READING_METHODS):
            out.add(root)
        k = j
    return out


def statement_end(tokens: list[Token], i: int, end: int) -> int:
    """Where the statement starting at ``i`` ends (just after it)."""
    t = tokens[i]
    word = t.text if t.kind in ("ident", "punct") else ""
    if word == "{":
        return _matching(tokens, i)
    if word in ("if", "for", "while", "switch"):
        body = statement_end(tokens, _matching(tokens, i + 1), end)
        if word == "if" and body < end and tokens[body].text == "else":
            return statement_end(tokens, body + 1, end)
        return body
    if word == "do":
        body = statement_end(tokens, i + 1, end)
        return _stop(tokens, body, end, (";",)) + 1
    if word == "try":
        j = _matching(tokens, i + 1)
        while j < end and tokens[j].text == "catch":
            j = _matching(tokens, _matching(tokens, j + 1))
        return j
    return min(_stop(tokens, i, end, (";",)) + 1, end)


def _add(left: Any, right: Any, token: Token) -> Any:
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left + right
    raise Unsupported(f"line {token.line}: {_show(left)} + {_show(right)}")


def _show(value: Any) -> str:
    if isinstance(value, Unresolved):
        return f"<unresolved: {value.reason}>"
    if isinstance(value, Instance):
        return f"a {value.type}"
    if isinstance(value, Brace):
        return f"a braced list of {len(value.items)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Expression:
    """One expression, read and evaluated at once (precedence climbing over the binary operators)."""

    _BINARY = (("||",), ("&&",), ("==", "!="), ("+", "-"))

    def __init__(self, interp: Interpreter, span: Span, scope: Scope) -> None:
        self.interp, self.t, self.i, self.end, self.scope = interp, span.tokens, span.start, span.end, scope

    def peek(self, text: str) -> bool:
        return self.i < self.end and self.t[self.i].text == text and self.t[self.i].kind == "punct"

    def expect(self, text: str) -> None:
        if not self.peek(text):
            at = self.t[min(self.i, self.end - 1)]
            raise Unsupported(f"line {at.line}: expected {text!r} at {at.text!r}")
        self.i += 1

    def parse(self, level: int = 0) -> Any:
        if level == len(self._BINARY):
            return self.unary()
        left = self.parse(level + 1)
        while self.i < self.end and self.t[self.i].kind == "punct" and self.t[self.i].text in self._BINARY[level]:
            op = self.t[self.i]
            self.i += 1
            right = self.parse(level + 1)
            left = self.binary(op, left, right)
        return left

    def binary(self, op: Token, left: Any, right: Any) -> Any:
        for value in (left, right):
            if isinstance(value, Unresolved):
                raise Unsupported(value.reason)
        if op.text == "||":
            return Interpreter.truth(left) or Interpreter.truth(right)
        if op.text == "&&":
            return Interpreter.truth(left) and Interpreter.truth(right)
        if op.text == "==":
            return left == right
        if op.text == "!=":
            return left != right
        if op.text == "+":
            return _add(left, right, op)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            return left - right
        raise Unsupported(f"line {op.line}: {op.text} on {_show(left)}")

    def unary(self) -> Any:
        if self.peek("!"):
            self.i += 1
            return not Interpreter.truth(self.unary())
        if self.peek("-"):
            self.i += 1
            value = self.unary()
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value
            raise Unsupported(f"negative {_show(value)}")
        if self.peek("*") and self.i + 1 < self.end and self.t[self.i + 1].text == "this":
            self.i += 2
            this = self.scope.current_this()
            if this is None:
                raise Unsupported("*this outside a method")
            return this
        value, _ = self.postfix()
        return value

    def all_arguments(self) -> list[Any]:
        """The comma-separated values of the whole span (a parenthesised argument list's inside)."""
        args: list[Any] = []
        while self.i < self.end:
            args.append(self.parse())
            if self.i < self.end:
                self.expect(",")
        return args

    def arguments(self, closing: str) -> list[Any]:
        args: list[Any] = []
        while not self.peek(closing):
            args.append(self.parse())
            if not self.peek(closing):
                self.expect(",")
        self.i += 1
        return args

    def primary(self) -> tuple[Any, _Ref | None, str | None]:
        """A value, where it lives, and the (qualified) name it was read from, if any."""
        if self.i >= self.end:
            raise Unsupported("expression ends early")
        tok = self.t[self.i]
        if tok.kind == "str":
            text = ""
            while self.i < self.end and self.t[self.i].kind == "str":  # adjacent literals are one
                text += self.t[self.i].text
                self.i += 1
            return text, None, None
        if tok.kind == "num":
            self.i += 1
            return _number(tok), None, None
        if tok.kind == "char":
            self.i += 1
            return tok.text, None, None
        if tok.text == "(" and tok.kind == "punct":
            self.i += 1
            value = self.parse()
            self.expect(")")
            return value, None, None
        if tok.text == "{" and tok.kind == "punct":
            self.i += 1
            return Brace(self.arguments("}")), None, None
        if tok.kind == "ident":
            name = tok.text
            self.i += 1
            while (
                self.i + 1 < self.end and self.t[self.i].text == "::" and self.t[self.i + 1].kind == "ident"
            ):  # qualified names: std::move, std::string
                name += "::" + self.t[self.i + 1].text
                self.i += 2
            if self.peek("(") or self.peek("{"):
                return None, None, name  # a call or construction: the caller reads the arguments
            if name == "this":
                raise Unsupported(f"line {tok.line}: `this` as a pointer")
            value, ref = self.interp.name(name, self.scope, tok)
            return value, ref, None
        raise Unsupported(f"line {tok.line}: cannot read {tok.text!r}")

    def postfix(self) -> tuple[Any, _Ref | None]:
        value, ref, callee = self.primary()
        if callee is not None:
            tok = self.t[self.i - 1]
            if self.peek("("):
                self.i += 1
                args = self.arguments(")")
                value, ref = self.interp.call_named(callee, args, self.scope, tok), None
            else:
                self.i += 1
                items = self.arguments("}")
                cls = self.interp.program.classes.get(callee)
                if cls is None and callee not in _STRING_TYPES:
                    raise Unsupported(f"line {tok.line}: {callee}{{...}} of a type this reader does not know")
                value, ref = self.interp.convert(Brace(items), Type(callee)), None
        while self.i < self.end:
            if self.peek("."):
                name_tok = self.t[self.i + 1]
                self.i += 2
                if self.peek("("):
                    self.i += 1
                    args = self.arguments(")")
                    value, ref = self.interp.method(value, ref, name_tok.text, args, name_tok), None
                else:
                    value, ref = self.interp.member(value, name_tok.text, name_tok)
            elif self.peek("->"):
                raise Unsupported(f"line {self.t[self.i].line}: '->'")
            elif self.peek("["):
                raise Unsupported(f"line {self.t[self.i].line}: indexing")
            else:
                break
        return value, ref


def _number(tok: Token) -> int | float:
    text = tok.text.replace("'", "").rstrip("uUlLfFzZ")
    if text.lower().startswith("0x"):
        return int(text, 16)
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text, 8) if len(text) > 1 and text.startswith("0") else int(text)


def method_call_sites(tokens: list[Token], method: str) -> Iterator[int]:
    """Where ``.method(`` is written: the index of the method's name token."""
    for k in range(1, len(tokens) - 1):
        if (
            tokens[k].kind == "ident"
            and tokens[k].text == method
            and tokens[k - 1].text == "."
            and tokens[k + 1].text == "("
        ):
            yield k
