"""The small GBNF text toolkit the grammar backend builds with, at the bottom of it: ``literal`` and
``char_class`` spell text and character sets the way every GBNF reader takes them; ``seq``, ``group``,
``optional``, ``choice`` and ``ordered`` join expressions; ``Rules`` collects named rules (a body written
twice gets one name). It imports nothing of the backend, which builds on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

WS_MAX = 20  # the most whitespace the flexible mode lets a model write between two tokens
_WS_CHARS = " \t\n\r"
_NAME_JUNK = re.compile(r"[^a-z0-9]+")
_RESERVED = frozenset({"root", "start"})
_CLASS_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_LINE_BREAKS = frozenset("\u2028\u2029")  # besides the control characters: str.splitlines splits at them


def name_part(hint: str) -> str:
    """``hint`` as the lower-case letters, digits and dashes a GBNF rule name is made of."""
    return _NAME_JUNK.sub("-", hint.lower()).strip("-")


def literal(text: str) -> str:
    """A GBNF string literal for ``text``. Non-ASCII characters are written as themselves: an escape
    like ``\\u00e9`` is read differently by GBNF tools, the raw UTF-8 is read the same by all."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _CLASS_ESCAPES:
            out.append(_CLASS_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def char_class(chars: Iterable[str], *, negated: bool = False) -> str:
    """A GBNF character class. Tab, newline and carriage return get their escapes; other control
    characters and those that mean something inside a class, ``\\xHH`` escapes, which every GBNF
    reader takes literally."""
    body = []
    for ch in sorted(set(chars)):
        if ch in _CLASS_ESCAPES:
            body.append(_CLASS_ESCAPES[ch])
        elif ch in "\\]^-[" or ord(ch) < 0x20 or ord(ch) == 0x7F or ch == "\x85":
            body.append(f"\\x{ord(ch):02X}")
        elif ch in _LINE_BREAKS:
            body.append(f"\\u{ord(ch):04X}")  # (a reader of the grammar text by lines would split there)
        else:
            body.append(ch)
    return "[" + ("^" if negated else "") + "".join(body) + "]"


def seq(*items: str) -> str:
    """Items in sequence, empty ones left out."""
    return " ".join(item for item in items if item)


def group(expr: str) -> str:
    return f"( {expr} )" if expr else ""


def optional(expr: str) -> str:
    return group(expr) + "?" if expr else ""


def choice(options: Iterable[str]) -> str:
    """Alternatives as one inline expression (duplicates dropped)."""
    unique = list(dict.fromkeys(options))
    return unique[0] if len(unique) == 1 else group(" | ".join(unique))


def ordered(members: list[tuple[str, bool]], separator: str, extra: str = "", *, empty: bool = True) -> str:
    """Members in their order with ``separator`` between two, each ``(expr, required)``: required
    ones must be written, optional ones may be left out; ``extra``: any number of further members
    after them; ``empty``: whether none at all may be written. Inline, and linear in size when a
    member is required: every member before the first required one is followed by a separator, every
    member after it preceded by one."""
    more = group(seq(separator, extra)) + "*" if extra else ""
    first = next((i for i, (_, required) in enumerate(members) if required), None)
    if first is not None:
        items = [
            optional(seq(expr, separator))
            if i < first
            else expr
            if i == first
            else seq(separator, expr)
            if required
            else optional(seq(separator, expr))
            for i, (expr, required) in enumerate(members)
        ]
        return seq(*items, more)
    # All optional: the first member written is the one not preceded by a separator.
    options = [
        seq(expr, *(optional(seq(separator, later)) for later, _ in members[i + 1 :]), more)
        for i, (expr, _) in enumerate(members)
    ]
    if extra:
        options.append(seq(extra, more))
    return optional(" | ".join(options)) if empty else group(" | ".join(options))


class Rules:
    """GBNF rules under construction: ``add`` names a body (the same body gets the same name)."""

    def __init__(self) -> None:
        self._bodies: dict[str, str] = {}  # name -> body, in definition order
        self._names: dict[str, str] = {}  # body -> name
        self._recursive: dict[str, str] = {}  # hint -> name
        self.unenforced: list[str] = []  # "where: keyword" for each constraint the grammar does not hold

    def note(self, where: str, what: str) -> None:
        """A constraint the grammar does not hold, for the caller to report (once each)."""
        entry = f"{where}: {what}"
        if entry not in self.unenforced:
            self.unenforced.append(entry)

    def add(self, hint: str, body: str) -> str:
        """The name of a rule with ``body``; ``hint`` becomes a valid, unused GBNF name."""
        if body not in self._names:
            name = self._fresh(hint)
            self._bodies[name] = body
            self._names[body] = name
        return self._names[body]

    def recursive(self, hint: str, build: Callable[[str], str]) -> str:
        """A rule that refers to itself, made once per ``hint``: ``build`` gets its name, gives its body."""
        if hint not in self._recursive:
            name = self._fresh(hint)
            self._bodies[name] = ""  # the name is taken while the body is built
            self._recursive[hint] = name
            self._bodies[name] = build(name)
        return self._recursive[hint]

    def _fresh(self, hint: str) -> str:
        base = name_part(hint) or "r"
        name, n = base, 1
        while name in self._bodies or name in _RESERVED:
            n += 1
            name = f"{base}-{n}"
        return name

    def ws(self, most: int = WS_MAX) -> str:
        """Optional whitespace, ``most`` characters at most: between JSON tokens and wherever a template
        wrote some."""
        return self.add("ws" if most == WS_MAX else f"ws-{most}", f"{char_class(_WS_CHARS)}{{0,{most}}}")

    def ws_required(self) -> str:
        """Whitespace that must be there: between two words."""
        return self.add("ws-required", f"{char_class(_WS_CHARS)}{{1,{WS_MAX}}}")

    def text(self, root: str) -> str:
        """The grammar: ``root ::= root`` first, then every rule in the order it was added."""
        lines = [f"root ::= {root}"]
        lines.extend(f"{name} ::= {body}" for name, body in self._bodies.items())
        return "\n".join(lines) + "\n"
