"""GBNF for JSON Schema constraints on scalar values: integer bounds, number bounds and string patterns.

``integer_range(low, high)``: the decimal integers from ``low`` to ``high`` (either may be None: no
bound), written as JSON writes them (no leading zeros, ``-`` for negatives), as an expression of
literals and digit classes: a number is split by its count of digits, and each count into ranges that
share a prefix, the usual construction for a regular language of bounded numbers.

``number_range(low, high)``: the same for decimal numbers (bounds that need not be integers, each
inclusive or not), written without an exponent: integer parts strictly between the bounds take any
fraction, and at a bound's own integer part the fraction is compared with the bound's digit by digit.

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
from decimal import Decimal

from analyzer.backends.gbnf.text import char_class, literal

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


# --------------------------------------------------------------------------- numbers

_MAX_FRACTION = 21  # fraction digits, as the number rule allows


@dataclass(frozen=True)
class Bound:
    """One end of a range of numbers: a decimal value, and whether the value itself is in range."""

    value: Decimal
    inclusive: bool


# Where JSON writers (Python's json, and so transformers' tojson) switch to an exponent: a magnitude
# below 1e-4 is written 5e-05, one of 1e16 or more 1e+16; every other number without one.
_PLAIN_FROM, _PLAIN_BELOW = Decimal("1e-4"), Decimal("1e16")
_TINY = '[1-9] ( "." [0-9]{1,16} )? "e-" ( "0"? [5-9] | [1-9] [0-9] | [1-2] [0-9] [0-9] | "3" [0-2] [0-9] )'
_HUGE = '[1-9] ( "." [0-9]{1,16} )? "e+" ( "1" [6-9] | [2-9] [0-9] | [1-2] [0-9] [0-9] | "3" "0" [0-8] )'


def number_range(low: Bound | None, high: Bound | None) -> str | None:
    """GBNF for the JSON numbers from ``low`` to ``high`` (None: no bound), each spelled as a JSON
    writer spells it (an exponent only for magnitudes below 1e-4 or from 1e16); "" when no number is
    in range; None when a bound itself is such a magnitude or has more fraction digits than a number
    is written with. Negative numbers are ``-`` and a magnitude, so each side is a range of
    magnitudes: an integer part, then a fraction compared digit by digit with the bound's."""
    for bound in (low, high):
        if bound is None or bound.value == 0:
            continue
        if not bound.value.is_finite() or not _PLAIN_FROM <= abs(bound.value) < _PLAIN_BELOW:
            return None
        if len(_fraction(bound.value)) > _MAX_FRACTION - 1:
            return None
    zero = Decimal(0)
    options: list[str] = []
    if low is None or low.value < 0:
        # -x for x from max(0, -high) (0 itself is written without the sign) up to -low.
        smallest = Bound(zero, False) if high is None or high.value >= 0 else Bound(-high.value, high.inclusive)
        largest = None if low is None else Bound(-low.value, low.inclusive)
        magnitudes = _magnitudes(smallest, largest)
        if magnitudes:
            options.append(f'"-" ( {magnitudes} )')
    if high is None or high.value >= 0:
        start = Bound(zero, True) if low is None or low.value < 0 else low
        magnitudes = _magnitudes(start, high)
        if magnitudes:
            options.append(magnitudes)
    if _holds(low, high, zero):
        options.append(f'"-" "0" ( "." "0"{{1,{_MAX_FRACTION}}} )?')  # a negative zero is zero
    return " | ".join(options)


def _holds(low: Bound | None, high: Bound | None, value: Decimal) -> bool:
    above = low is None or value > low.value or (low.inclusive and value == low.value)
    below = high is None or value < high.value or (high.inclusive and value == high.value)
    return above and below


def _magnitudes(low: Bound, high: Bound | None) -> str:
    """The non-negative numbers from ``low`` to ``high``, the small and large ones as their exponent
    spelling where the range holds all of them (the bounds are plain magnitudes, see above)."""
    plain = _plain_magnitudes(low, high)
    options = [plain] if plain else []
    if low.value == 0 and (high is None or high.value >= _PLAIN_FROM):  # all of (0, 1e-4)
        options.append(_TINY)
    if high is None:
        options.append(_HUGE)
    return " | ".join(options)


def _fraction(value: Decimal) -> str:
    """The digits after the point of a non-negative value, without trailing zeros."""
    text = format(abs(value), "f")
    return text.partition(".")[2].rstrip("0")


def _plain_magnitudes(low: Bound, high: Bound | None) -> str:
    """The non-negative numbers from ``low`` to ``high`` written plainly: those whose integer part lies strictly
    between the bounds' take any fraction; at a bound's own integer part the fraction is compared."""
    if high is not None and (
        low.value > high.value or (low.value == high.value and not (low.inclusive and high.inclusive))
    ):
        return ""
    low_int, low_fraction = int(low.value), _fraction(low.value)
    options: list[str] = []
    any_fraction = f'( "." [0-9]{{1,{_MAX_FRACTION}}} )?'
    if high is None:
        middle = integer_range(low_int + 1, None)
        if middle:
            options.append(f"( {middle} ) {any_fraction}")
        options += _at_integer(low_int, _fraction_at_least(low_fraction, low.inclusive))
        return " | ".join(options)
    high_int, high_fraction = int(high.value), _fraction(high.value)
    if low_int == high_int:
        fractions = _fraction_between(low_fraction, low.inclusive, high_fraction, high.inclusive)
        return " | ".join(_at_integer(low_int, fractions))
    if low_int + 1 <= high_int - 1:
        options.append(f"( {integer_range(low_int + 1, high_int - 1)} ) {any_fraction}")
    options += _at_integer(low_int, _fraction_at_least(low_fraction, low.inclusive))
    options += _at_integer(high_int, _fraction_at_most(high_fraction, high.inclusive))
    return " | ".join(options)


@dataclass(frozen=True)
class _Fractions:
    """The fractions in range at one integer part: whether the integer part alone (``3``) is, and
    GBNF alternatives for the digit strings written after the point."""

    bare: bool
    digits: list[str]


def _digits(text: str) -> str:
    """Digits as one literal each: a lexing GBNF reader (llguidance) takes a longer literal as one
    token, which then cannot also be read as the start of a longer number."""
    return " ".join(literal(digit) for digit in text)


def _at_integer(integer: int, fractions: _Fractions) -> list[str]:
    whole = _digits(str(integer))
    options = [f'{whole} "." ( {" | ".join(fractions.digits)} )'] if fractions.digits else []
    if fractions.bare:
        options.append(whole)
    return options


_ANY = f"[0-9]{{0,{_MAX_FRACTION}}}"
_NONZERO = f"[0-9]{{0,{_MAX_FRACTION}}} [1-9] [0-9]{{0,{_MAX_FRACTION}}}"  # some digit is not a zero


def _then(prefix: str, rest: str) -> str:
    return f"{_digits(prefix)} {rest}" if prefix else rest


def _fraction_at_least(bound: str, inclusive: bool) -> _Fractions:
    """Digit strings d with 0.d >= 0.bound (> when not ``inclusive``); ``bound`` has no trailing zero."""
    digits = [
        _then(bound[:k], f"{char_class(str(d) for d in range(int(digit) + 1, 10))} {_ANY}")
        for k, digit in enumerate(bound)
        if digit < "9"
    ]
    # The bound's own digits, then anything (or, when it is excluded, anything but zeros alone).
    # The bound's own digits, then anything (or, where the bound is excluded, not zeros alone).
    if bound:
        digits.append(_then(bound, _ANY if inclusive else _NONZERO))
    else:
        digits.append(f"[0-9]{{1,{_MAX_FRACTION}}}" if inclusive else _NONZERO)
    return _Fractions(bare=not bound and inclusive, digits=digits)


def _fraction_at_most(bound: str, inclusive: bool) -> _Fractions:
    """Digit strings d with 0.d <= 0.bound (< when not ``inclusive``); ``bound`` has no trailing zero."""
    digits = [
        _then(bound[:k], f"{char_class(str(d) for d in range(int(digit)))} {_ANY}")
        for k, digit in enumerate(bound)
        if digit > "0"
    ]
    digits += [_digits(bound[:k]) for k in range(1, len(bound))]  # the bound's first digits only
    if inclusive:
        digits.append(_then(bound, f'"0"{{0,{_MAX_FRACTION}}}') if bound else f'"0"{{1,{_MAX_FRACTION}}}')
    return _Fractions(bare=bool(bound) or inclusive, digits=digits)


def _fraction_between(low: str, low_inclusive: bool, high: str, high_inclusive: bool) -> _Fractions:
    """Digit strings d with 0.low <= 0.d <= 0.high (each end strict when not inclusive), low < high
    or, both inclusive, equal. They share the digits before the first place the two bounds differ;
    there d's digit decides, or, equal to one bound's digit, the rest is compared with that bound's."""
    if low == high:
        return _Fractions(bare=not low, digits=[_then(low, f'"0"{{0,{_MAX_FRACTION}}}') if low else '"0"{1,21}'])
    size = max(len(low), len(high))
    padded_low, padded_high = low.ljust(size, "0"), high.ljust(size, "0")
    c = next(k for k in range(size) if padded_low[k] != padded_high[k])
    shared = padded_high[:c]
    low_digit, high_digit = int(padded_low[c]), int(padded_high[c])
    digits = []
    if high_digit - low_digit > 1:
        digits.append(_then(shared, f"{char_class(str(d) for d in range(low_digit + 1, high_digit))} {_ANY}"))
    for digit, rest in (
        (low_digit, _fraction_at_least(low[c + 1 :], low_inclusive)),
        (high_digit, _fraction_at_most(high[c + 1 :], high_inclusive)),
    ):
        head = shared + str(digit)
        if rest.digits:
            digits.append(f"{_digits(head)} ( {' | '.join(rest.digits)} )")
        if rest.bare:
            digits.append(_digits(head))
    # Shorter than the first difference: equal to the lower bound, when it is that short.
    digits += [_digits(shared[:m]) for m in range(1, c + 1) if low_inclusive and len(low) <= m]
    return _Fractions(bare=not low and low_inclusive, digits=digits)


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
