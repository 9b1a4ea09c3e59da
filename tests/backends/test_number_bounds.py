"""Number bounds in the grammar (``gbnf.values.number_range``) against exact decimal arithmetic: for
bounds that are integers, fractions, negative, inclusive or not, every spelling in a sweep of numbers
is accepted exactly when it is in range, and the spellings a JSON writer uses for very small and very
large numbers (``1e-05``, ``1e+16``) and a negative zero are accepted where their values are."""

from __future__ import annotations

import itertools
import json
from decimal import Decimal

import pytest
from helpers.gbnf_check import Checker

from analyzer.backends.gbnf.json_schema import _NUMBER
from analyzer.backends.gbnf.values import Bound, number_range

VALUES = ["0", "1", "-1", "0.5", "-2.5", "0.05", "0.125", "1.005", "10", "-100"]
BOUNDS = [None] + [Bound(Decimal(v), inclusive) for v in VALUES for inclusive in (True, False)]
SWEEP = sorted(
    {
        f"{sign}{whole}{fraction}"
        for sign in ("", "-")
        for whole in (0, 1, 2, 9, 10, 11, 100, 101)
        for fraction in ("", ".0", ".5", ".05", ".049", ".051", ".125", ".1249", ".1251", ".005", ".0049", ".99")
    }
)
WRITTEN = [1e-05, -1e-05, 2.5e-07, 1e16, -1e16, 1.5e17, 0.0, -0.0, 0.0001, 3e-300]


def _in_range(value: Decimal, low: Bound | None, high: Bound | None) -> bool:
    above = low is None or value > low.value or (low.inclusive and value == low.value)
    below = high is None or value < high.value or (high.inclusive and value == high.value)
    return above and below


PAIRS = [(low, high) for low, high in itertools.product(BOUNDS, BOUNDS) if low is not None or high is not None]


@pytest.mark.parametrize("chunk", range(8))
def test_numbers_are_accepted_exactly_when_in_range(chunk: int) -> None:
    for low, high in PAIRS[chunk::8]:
        expression = number_range(low, high)
        assert expression is not None
        if not expression:
            assert not any(_in_range(Decimal(text), low, high) for text in SWEEP), (low, high)
            continue
        checker = Checker(f"root ::= {expression}")
        for text in SWEEP:
            assert bool(checker.check(text)) == _in_range(Decimal(text), low, high), (text, low, high, expression)
        for number in WRITTEN:
            text = json.dumps(number)
            assert bool(checker.check(text)) == _in_range(Decimal(str(number)), low, high), (text, low, high)


def test_bounds_no_plain_spelling_reaches_are_not_enforced() -> None:
    assert number_range(Bound(Decimal("1e-05"), True), None) is None
    assert number_range(None, Bound(Decimal("1e17"), True)) is None
    assert number_range(Bound(Decimal("0." + "1" * 25), True), None) is None


# The largest doubles as a JSON writer spells them, and past them the spellings that read as infinity.
FINITE_AT_THE_TOP = [1.7976931348623157e308, 1.797e308, 1.5e308, 1e308, 9.99e307, 1.0000000000000002e308, 5e292]
INFINITE = ["1.798e+308", "2e308", "1e309", "1E400", "10e308", "1.8e+308", "-1e999"]


def test_every_double_a_writer_spells_is_a_number_and_infinity_is_not() -> None:
    """The number rule (no schema bounds) takes each finite double's ``json.dumps`` spelling, positive and
    negative, up to the largest, and refuses spellings beyond it, which the parser would read as infinity."""
    checker = Checker(f"root ::= {_NUMBER}")
    for number in [*FINITE_AT_THE_TOP, *WRITTEN]:
        for text in {json.dumps(number), json.dumps(-number)}:
            assert checker.check(text), text
    for text in INFINITE:
        assert float(text) in (float("inf"), float("-inf"))
        assert not checker.check(text), text
