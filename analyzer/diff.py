"""Diff primitives on renders: common prefixes and suffixes, and the repeated-unit finder that tells a
per-item marker from a section marker.

Everything here works on plain strings and knows nothing about chat templates; ``detect`` modules
call these with renders and sentinels. What counts as a marker (and so where a cut would split
one) is ``analyzer.markers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.markers import inside_marker_mask


def common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    # Compare in blocks first: renders share long prefixes (the system prompt).
    step = 64
    while i + step <= n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_suffix_len(a: str, b: str, limit: int | None = None) -> int:
    n = min(len(a), len(b)) if limit is None else min(len(a), len(b), limit)
    i = 0
    while i < n and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return i


@dataclass(frozen=True, slots=True)
class Insertion:
    """``longer`` is ``shorter`` with ``inserted`` put in at ``at``; the position can slide in [lo, hi]."""

    lo: int
    hi: int
    size: int


def insertion(shorter: str, longer: str) -> Insertion | None:
    """Where ``longer`` equals ``shorter`` plus one inserted run of text, if it does."""
    size = len(longer) - len(shorter)
    if size < 0:
        return None
    hi = common_prefix_len(shorter, longer)
    suffix = common_suffix_len(shorter, longer, limit=len(shorter))
    lo = len(shorter) - suffix
    if lo > hi:
        return None
    return Insertion(lo=lo, hi=hi, size=size)


_DIGITS = re.compile(r"\d+")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class RepeatedUnit:
    """``two`` is ``one`` with ``separator + second`` inserted right after ``first``.

    ``first`` is ``one[start:end]``; ``second`` is ``first`` with the sentinels of the first item
    replaced by those of the second, and with ``counters`` (digit runs that count items, such as a
    call index) changed: each is (index of the digit run in ``first``, its text, the text in ``second``).
    """

    start: int
    end: int
    separator: str
    first: str
    second: str
    counters: tuple[tuple[int, str, str], ...]


def repeated_unit(one: str, two: str, to_first: Callable[[str], str], must_contain: str) -> RepeatedUnit | None:
    """Find the unit that repeats when a second item (call, argument) is added.

    ``to_first`` turns the second item's text into the first's (its sentinels replaced by the
    first item's). The unit must hold the first item's sentinel ``must_contain``: text without
    sentinels repeats trivially. Prefers a unit whose ends do not fall inside a marker, then one with
    no whitespace at either end (whitespace goes to the separator), then the longest, so that a marker
    written once per item counts as the item's own; among equals, the one placed last.
    """
    ins = insertion(one, two)
    if ins is None or ins.size == 0:
        return None
    best: tuple[tuple[bool, bool, int], RepeatedUnit] | None = None
    inside = inside_marker_mask(one)
    for end in range(ins.lo, ins.hi + 1):
        end_ok = not inside[end] if end < len(inside) else True
        if best is not None and best[0][0] and not end_ok:
            continue  # a unit ending inside a marker cannot beat one on marker boundaries
        inserted = two[end : end + ins.size]
        translated = to_first(inserted)
        # The unit is a suffix of ``translated`` that also ends ``one`` at ``end`` (digits may differ:
        # they count items). Every such suffix up to the longest common one is a candidate.
        common = _common_suffix_digits_alike(one, end, translated)
        holder = one.rfind(must_contain, max(0, end - common), end)
        if holder == -1 or holder + len(must_contain) > end:
            continue
        # Longest first: the first candidate that scores best for this end is the one to keep, so
        # the costly checks run only for candidates that could still win.
        for length in range(common, end - holder - 1, -1):
            if best is not None and best[0] > (True, True, length):
                break  # no shorter unit can beat the best found
            start = end - length
            first_char, last_char = one[start], one[end - 1]
            on_boundaries = end_ok and not inside[start]
            score = (on_boundaries, not (first_char.isspace() or last_char.isspace()), length)
            if best is not None and score < best[0]:
                continue
            cut = _cut_for(inserted, translated, len(translated) - length, to_first)
            if cut is None:
                continue
            first, second = one[start:end], inserted[cut:]
            counters = _same_modulo_counters(to_first(second), first)
            if counters is None:
                continue
            counters = tuple((k, old, new) for k, new, old in counters)
            if best is None or score >= best[0]:
                best = (score, RepeatedUnit(start, end, inserted[:cut], first, second, counters))
            if score[0] and score[1]:
                break
    return best[1] if best else None


def _common_suffix_digits_alike(one: str, end: int, other: str) -> int:
    n = min(end, len(other))
    i = 0
    # Equal blocks first; the character loop below only runs near differences.
    step = 32
    while i + step <= n and one[end - i - step : end - i] == other[len(other) - i - step : len(other) - i]:
        i += step
    while i < n:
        a, b = one[end - 1 - i], other[len(other) - 1 - i]
        if a != b and not (a.isdigit() and b.isdigit()):
            break
        i += 1
        while i + step <= n and one[end - i - step : end - i] == other[len(other) - i - step : len(other) - i]:
            i += step
    return i


def _cut_for(inserted: str, translated: str, offset: int, to_first: Callable[[str], str]) -> int | None:
    """The position in ``inserted`` whose translation starts at ``offset`` of ``translated``."""
    # Sentinel replacements change lengths only inside the replaced text, so the text before the
    # cut translates to ``translated[:offset]``; try the cut at that length first, then its neighbours.
    head = translated[:offset]
    if to_first(inserted[:offset]) == head:
        return offset
    for cut in range(len(inserted) + 1):
        if to_first(inserted[:cut]) == head:
            return cut
    return None


def _same_modulo_counters(expected: str, actual: str) -> tuple[tuple[int, str, str], ...] | None:
    """Equal, or equal but for digit runs that count items; returns (run index, old, new) per counter.

    A counter keeps its width (the renders count 0, 1, 2), digit for digit: the rule
    ``repeated_unit``'s suffix scan compares by, so that every unit it can find is one this accepts.
    """
    if expected == actual:
        return ()
    if len(expected) != len(actual) or _DIGIT.sub("#", expected) != _DIGIT.sub("#", actual):
        return None
    expected_runs = [m.group() for m in _DIGITS.finditer(expected)]
    actual_runs = [m.group() for m in _DIGITS.finditer(actual)]
    pairs = zip(expected_runs, actual_runs, strict=True)  # the digits stand alike, so the runs pair one to one
    return tuple((k, e, a) for k, (e, a) in enumerate(pairs) if e != a)


def added_text(base: str, longer: str, must_contain: str) -> str | None:
    """The run of text ``longer`` adds to ``base`` that holds ``must_contain``.

    Aligned with rapidfuzz's Indel edit script, so that small changes elsewhere (a template that
    writes the previous turn differently once a result follows it) do not swallow the added run. Of
    the positions the run could slide to, the latest is taken: what a new message adds comes after
    the turn it follows.
    """
    head = common_prefix_len(base, longer)
    tail = common_suffix_len(base, longer, limit=min(len(base), len(longer)) - head)
    middle = longer[head : len(longer) - tail]
    if must_contain in middle and len(longer) - len(base) == len(middle):
        return middle
    # imported here: most renders differ in one run and never need it (start-up time)
    from rapidfuzz.distance import Indel

    for op in Indel.opcodes(base, longer):
        if op.tag != "equal" and must_contain in longer[op.dest_start : op.dest_end]:
            start, end = op.dest_start, op.dest_end
            if op.tag == "insert":
                start, end = _slide_late(longer, start, end)
            return longer[start:end]
    return middle if must_contain in middle else None


def _slide_late(text: str, start: int, end: int) -> tuple[int, int]:
    """An inserted run can slide while the character it uncovers equals the one it covers; take the
    latest place whose ends are not inside a marker, else the latest place."""
    places = [(start, end)]
    while start > 0 and text[start - 1] == text[end - 1]:
        start, end = start - 1, end - 1
        places.append((start, end))
    start, end = places[0]
    while end < len(text) and text[start] == text[end]:
        start, end = start + 1, end + 1
        places.append((start, end))
    inside = inside_marker_mask(text)
    clean = [p for p in places if not inside[p[0]] and not inside[p[1]]]
    return max(clean or places)


def find_all(text: str, needle: str) -> list[int]:
    found = []
    i = text.find(needle)
    while i != -1:
        found.append(i)
        i = text.find(needle, i + 1)
    return found
