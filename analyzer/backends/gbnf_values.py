"""GBNF for two JSON Schema constraints on scalar values: integer bounds and string patterns.

``integer_range(low, high)``: the decimal integers from ``low`` to ``high`` (either may be None: no
bound), written as JSON writes them (no leading zeros, ``-`` for negatives), as an expression of
literals and digit classes: a number is split by its count of digits, and each count into ranges that
share a prefix, the usual construction for a regular language of bounded numbers.

``pattern_body(pattern, char, escape)``: the characters of a JSON string's body that match a regular
expression (Python/ECMA syntax, the subset a grammar can hold: literals, escapes ``\\d \\w \\s``,
classes, ``.``, groups, alternation, the greedy quantifiers ``* + ? {n} {n,} {n,m}``, ``^``/``$`` at the
ends). Literal characters that JSON must escape are written escaped. ``None`` for anything else
(look-around, back-references, word boundaries, lazy or possessive quantifiers, Unicode classes): the
caller reports the pattern as not enforced rather than guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from analyzer.backends.json_schema_gbnf import char_class, literal

_MAX_DIGITS = 16  # as the integer rule: longer numbers are not JSON integers a model should write


# --------------------------------------------------------------------------- integers


def _digits_range(low: str, high: str) -> list[str]:
    """Expressions for the digit strings of one length from ``low`` to ``high`` (same length)."""
    if low == high:
        return [literal(low)]
    if len(low) == 1:
        return [char_class(chr(c) for c in range(ord(low), ord(high) + 1))]
    if low[0] == high[0]:
        return [f"{literal(low[0])} {rest}" for rest in _alternatives(_digits_range(low[1:], high[1:]))]
    out: list[str] = []
    first, last = int(low[0]), int(high[0])
    tail = len(low) - 1
    if low[1:] == "0" * tail:
        start = first
    else:
        out += [f"{literal(low[0])} {rest}" for rest in _alternatives(_digits_range(low[1:], "9" * tail))]
        start = first + 1
    end = last if high[1:] == "9" * tail else last - 1
    if start <= end:
        out.append(f"{char_class(str(d) for d in range(start, end + 1))} [0-9]{{{tail}}}")
    if high[1:] != "9" * tail:
        out += [f"{literal(high[0])} {rest}" for rest in _alternatives(_digits_range("0" * tail, high[1:]))]
    return out


def _alternatives(options: list[str]) -> list[str]:
    return [options[0]] if len(options) == 1 else ["( " + " | ".join(options) + " )"]


def _natural_range(low: int, high: int | None) -> list[str]:
    """Expressions for the non-negative integers from ``low`` to ``high`` (None: no bound)."""
    top = high if high is not None else 10**_MAX_DIGITS - 1
    out: list[str] = []
    for size in range(len(str(low)), len(str(top)) + 1):
        first = max(low, 10 ** (size - 1) if size > 1 else 0)
        last = min(top, 10**size - 1)
        if first > last:
            continue
        if high is None and first == 10 ** (size - 1) and size > 1:
            # Every longer number is in range too: one expression for all the lengths left.
            out.append(f"[1-9] [0-9]{{{size - 1},{_MAX_DIGITS - 1}}}")
            break
        out += _digits_range(str(first), str(last))
    return out


def integer_range(low: int | None, high: int | None) -> str:
    """GBNF for the JSON integers from ``low`` to ``high`` inclusive; "" when none is."""
    if low is not None and high is not None and low > high:
        return ""
    options: list[str] = []
    if low is None or low < 0:
        # Negative numbers: their magnitudes from max(1, -high) to -low.
        smallest = 1 if high is None or high >= 0 else -high
        largest = None if low is None else -low
        options += [f'"-" {rest}' for rest in _alternatives(_natural_range(smallest, largest))]
    if high is None or high >= 0:
        options += _natural_range(max(low or 0, 0), high)
    return " | ".join(options)


# --------------------------------------------------------------------------- patterns


class _Unsupported(Exception):
    pass


_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": " \t\n\r\f\v"}
_SPECIAL = set("\\^$.|?*+()[]{}")


@dataclass
class _Reader:
    text: str
    at: int = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def take(self) -> str:
        ch = self.peek()
        self.at += 1
        return ch


def _expand(spec: str) -> set[str]:
    """The characters of a class body written as ranges (``a-z0-9_``)."""
    found: set[str] = set()
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            found |= {chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1)}
            i += 3
        else:
            found.add(spec[i])
            i += 1
    return found


class _PatternWriter:
    """Writes a regex as GBNF over a JSON string body: ``char`` is any one (escaped or not) character."""

    def __init__(self, char: str) -> None:
        self.char = char

    def chars(self, chars: set[str], negated: bool) -> str:
        """One character in (or not in) ``chars``, as a JSON string body writes it."""
        plain = {ch for ch in chars if ch not in '"\\' and ord(ch) >= 0x20}
        escaped = sorted(chars - plain)
        if negated:
            # Any character but these: the plain ones not listed, and any escape (an escape may stand
            # for a listed character; taking it errs on the side of a valid value).
            excluded = plain | {'"', "\\"} | {chr(c) for c in range(0x20)}
            return f'( {char_class(excluded, negated=True)} | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{{4}} ) )'
        options = [char_class(plain)] if plain else []
        options += [literal(json.dumps(ch)[1:-1]) for ch in escaped]
        if not options:
            raise _Unsupported("an empty class")
        return options[0] if len(options) == 1 else "( " + " | ".join(options) + " )"

    def alternation(self, r: _Reader) -> str:
        options = [self.sequence(r)]
        while r.peek() == "|":
            r.take()
            options.append(self.sequence(r))
        return options[0] if len(options) == 1 else "( " + " | ".join(o or '""' for o in options) + " )"

    def sequence(self, r: _Reader) -> str:
        items: list[str] = []
        while r.peek() and r.peek() not in "|)":
            atom = self.atom(r)
            items.append(self.quantified(r, atom))
        return " ".join(item for item in items if item)

    def quantified(self, r: _Reader, atom: str) -> str:
        ch = r.peek()
        if not ch or ch not in "*+?{":
            return atom
        if ch == "{":
            m = re.match(r"\{(\d+)(,(\d*))?\}", r.text[r.at :])
            if not m:
                raise _Unsupported("a brace that is no repetition")
            r.at += m.end()
            low, comma, high = m.group(1), m.group(2), m.group(3)
            suffix = f"{{{low}}}" if not comma else f"{{{low},{high}}}"
        else:
            r.take()
            suffix = ch
        if r.peek() in ("?", "+"):
            raise _Unsupported("a lazy or possessive quantifier")
        return f"( {atom} ){suffix}"

    def atom(self, r: _Reader) -> str:
        ch = r.take()
        if ch == "(":
            if r.peek() == "?":
                r.take()
                if r.take() != ":":
                    raise _Unsupported("a group other than (?:...)")
            inner = self.alternation(r)
            if r.take() != ")":
                raise _Unsupported("an unclosed group")
            return f"( {inner or chr(34) * 2} )"
        if ch == "[":
            return self.klass(r)
        if ch == ".":
            return self.chars({"\n", "\r"}, negated=True)
        if ch == "\\":
            return self.escape(r.take(), in_class=False)
        if ch in "*+?{}":
            raise _Unsupported(f"a quantifier with nothing before it: {ch}")
        if ch in "^$":
            raise _Unsupported("an anchor inside the pattern")
        return self.chars({ch}, negated=False)

    def escape(self, ch: str, *, in_class: bool) -> str:
        if ch.lower() in _ESCAPES:
            chars = _expand(_ESCAPES[ch.lower()]) if ch.lower() != "s" else set(_ESCAPES["s"])
            return self.chars(chars, negated=ch.isupper())
        if ch in "nrtfv":
            return self.chars({{"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}[ch]}, negated=False)
        if ch in _SPECIAL or ch in "-/\"'":
            return self.chars({ch}, negated=False)
        raise _Unsupported(f"the escape \\{ch}")

    def klass(self, r: _Reader) -> str:
        negated = r.peek() == "^"
        if negated:
            r.take()
        chars: set[str] = set()
        first = True
        while True:
            ch = r.take()
            if not ch:
                raise _Unsupported("an unclosed class")
            if ch == "]" and not first:
                break
            first = False
            if ch == "\\":
                code = r.take()
                if code.lower() in _ESCAPES:
                    if code.isupper():
                        raise _Unsupported("a negated escape inside a class")
                    chars |= _expand(_ESCAPES[code.lower()]) if code.lower() != "s" else set(_ESCAPES["s"])
                    continue
                ch = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}.get(code, code)
            if r.peek() == "-" and r.text[r.at + 1 : r.at + 2] not in ("]", ""):
                r.take()
                end = r.take()
                if end == "\\":
                    end = r.take()
                if ord(end) < ord(ch):
                    raise _Unsupported("a reversed range")
                chars |= {chr(c) for c in range(ord(ch), ord(end) + 1)}
            else:
                chars.add(ch)
        return self.chars(chars, negated)


def pattern_body(pattern: str, char: str) -> str | None:
    """GBNF for a JSON string body (between the quotes) whose text matches ``pattern`` anywhere, as
    JSON Schema's ``pattern`` means (unanchored: any text may stand around a match); ``char`` is the
    rule for any one character. None when the pattern uses what a grammar cannot hold."""
    anchored_start = pattern.startswith("^")
    anchored_end = pattern.endswith("$") and not pattern.endswith("\\$")
    body = pattern[1 if anchored_start else 0 : len(pattern) - 1 if anchored_end else len(pattern)]
    try:
        re.compile(pattern)
        reader = _Reader(body)
        expr = _PatternWriter(char).alternation(reader)
        if reader.at != len(body):
            raise _Unsupported("an unmatched parenthesis")
    except (_Unsupported, re.error, ValueError):
        return None
    around = f"{char}*"
    return " ".join(part for part in ("" if anchored_start else around, expr, "" if anchored_end else around) if part)
