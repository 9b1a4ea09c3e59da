"""What a marker is: the one definition every stage uses (standard library only).

Text a model emits as one special token usually looks bracketed: ``<...>``, ``<|...|>``, ``[...]``,
``<｜...｜>``, at most ``MAX_INSIDE`` characters between the brackets and never across a line. Some
templates use tokens outside brackets, chunks of symbols with at most a short word inside (``]~b]``,
``[e~[``): ``symbols=True`` accepts those too, where a stage reads the markers a turn opens or ends with.

The definition is a heuristic on text: a comparison (``a < b > c``) or a short JSON array (``[1, 2]``)
looks bracketed as well. Stages use it to choose among places the renders already allow (where to cut
two renders apart, which unit repeats), not to find markers in text nothing else points to.
"""

from __future__ import annotations

import re

# Longest text between the brackets of one marker.
MAX_INSIDE = 64

_BRACKETED = rf"<[^<>\n]{{1,{MAX_INSIDE}}}>|\[[^\[\]\n]{{1,{MAX_INSIDE}}}\]"
# Symbols with at most a short word inside, followed by whitespace, the end, or a bracketed marker.
_SYMBOL_RUN = r"[^\s\w<>]{1,3}\w{0,3}[^\s\w<>]{1,3}(?=\s|$|<)"

BRACKETED = re.compile(_BRACKETED)
ANY = re.compile(f"{_BRACKETED}|{_SYMBOL_RUN}")
# A marker, a word glued to it, and a marker after the word (``<|start|>assistant<|channel|>``) read as one tag.
_GLUED_BEFORE = re.compile(rf"(?:{_BRACKETED})\w+\Z")
_GLUED_AFTER = re.compile(rf"\w+(?:{_BRACKETED})")
# Whole markers, then words, whitespace runs and single symbols: the units two texts are compared in.
_TOKEN = re.compile(rf"{_BRACKETED}|\w+|\s+|[^\w\s]")


def _pattern(symbols: bool) -> re.Pattern[str]:
    return ANY if symbols else BRACKETED


def find_markers(text: str, *, symbols: bool = False) -> list[re.Match[str]]:
    """Every marker in ``text``, left to right, none overlapping."""
    return list(_pattern(symbols).finditer(text))


def first_marker(text: str, start: int = 0, *, symbols: bool = False) -> re.Match[str] | None:
    """The first marker in ``text`` at or after ``start``."""
    return _pattern(symbols).search(text, start)


def last_marker(text: str, *, symbols: bool = False) -> re.Match[str] | None:
    """The last marker of ``text`` (of the non-overlapping ones ``find_markers`` gives)."""
    found = None
    for match in _pattern(symbols).finditer(text):
        found = match
    return found


def marker_at(text: str, pos: int = 0, *, symbols: bool = False) -> re.Match[str] | None:
    """The marker that starts exactly at ``pos``."""
    return _pattern(symbols).match(text, pos)


def is_marker(text: str, *, symbols: bool = False) -> bool:
    """Whether ``text`` is exactly one marker."""
    return _pattern(symbols).fullmatch(text) is not None


def special_word(marker: str) -> str:
    """The bracketed word ``marker`` starts with (``[TOOL_CALLS]`` of ``[TOOL_CALLS][``,
    ``<|tool_call_begin|>`` of ``<|tool_call_begin|>functions.``), or "": a vocabulary holds such a
    word as one special token, and a special token has no whitespace in it."""
    found = BRACKETED.match(marker)
    if found is None or any(ch.isspace() for ch in found.group()):
        return ""
    return found.group()


def _around(text: str, pos: int) -> re.Match[str] | None:
    """The bracketed marker with ``pos`` strictly inside it, if any."""
    lo = max(0, pos - MAX_INSIDE - 1)
    for found in BRACKETED.finditer(text, lo, min(len(text), pos + MAX_INSIDE + 1)):
        if found.start() >= pos:
            return None
        if found.end() > pos:
            return found
    return None


def marker_start(text: str, pos: int) -> int:
    """A cut at ``pos`` moved back to the start of the marker it falls inside: two renders that share
    ``<|`` and go on as ``<|channel>`` and ``<|tool_call>`` are cut before the ``<``."""
    found = _around(text, pos)
    return found.start() if found else pos


def marker_end(text: str, pos: int) -> int:
    """A cut at ``pos`` moved forward to the end of the marker it falls inside."""
    found = _around(text, pos)
    return found.end() if found else pos


def inside_marker_mask(text: str) -> bytearray:
    """``mask[i]`` is 1 when a cut before ``text[i]`` would split a marker."""
    mask = bytearray(len(text) + 1)
    for found in BRACKETED.finditer(text):
        mask[found.start() + 1 : found.end()] = b"\x01" * (found.end() - found.start() - 1)
    return mask


def glued_start(text: str, start: int) -> int:
    """Where the tag holding the marker at ``start`` begins: a marker before it with a word glued
    between (``<|open|>think<|sep|>``) belongs to the same tag."""
    window = max(0, start - 2 * (MAX_INSIDE + 2))
    found = _GLUED_BEFORE.search(text, window, start)
    return found.start() if found else start


def glued_end(text: str, end: int) -> int:
    """Where the tag holding the marker ending at ``end`` ends: a word glued after it and a marker
    after the word (``<|close|>think<|sep|>``) belong to the same tag."""
    found = _GLUED_AFTER.match(text, end)
    return found.end() if found else end


def tokens(text: str) -> list[str]:
    """``text`` cut into whole markers, words, whitespace runs and single symbols (they join back to ``text``)."""
    return _TOKEN.findall(text)
