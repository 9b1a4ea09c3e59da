"""The steps every matcher takes: a matcher reads the text from a position, knowing whether more
text may still come (``final``), and returns the position after what it matched, ``NEED`` when the
text stops before it can tell, or a ``Mismatch`` saying why the text is not what it reads. These are
the smallest such steps (a marker after whitespace, a name), shared by the call matcher
(``match.py``), the argument forms (``key_values.py``) and the stream's scanners.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shape import Escapes, Markers, escape_name


class Need:
    """The type of ``NEED``: the text stops before a step can tell."""

    def __repr__(self) -> str:
        return "NEED"


NEED = Need()


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The text is no call of this shape, and why."""

    reason: str
    kind: str = "malformed_call"  # "not_a_reply": a JSON object without a function name


Step = int | Need | Mismatch


Texts = tuple[str, ...]  # texts any of which may stand at a place (what may follow a part)


_WHITESPACE = re.compile(r"\s*")
# A name with nothing written after it to end it: a run of word characters (any script), dots, dashes.
WORD_NAME = re.compile(r"[\w.\-]+")


def skip_ws(text: str, i: int) -> int:
    n = len(text)
    if i < n and text[i].isspace():
        i += 1
        if i < n and text[i].isspace():
            # A run (indented JSON): one search at C speed, not a loop per character. ``\s`` is
            # exactly what ``str.isspace`` accepts.
            run = _WHITESPACE.match(text, i)
            return run.end() if run else i
    return i


def match_literal(text: str, i: int, literal: Markers, final: bool) -> Step:
    for marker in literal:
        step = match_word(text, i, marker.text, final)
        if not isinstance(step, int):
            return step
        i = step
    return i


def match_word(text: str, i: int, word: str, final: bool) -> Step:
    """One marker's text after whitespace (the step of ``match_literal`` for each marker)."""
    # skip_ws, inline for one character (this runs several times a call), called for a run
    j = i
    if j < len(text) and text[j].isspace():
        j += 1
        if j < len(text) and text[j].isspace():
            j = skip_ws(text, j)
    if text.startswith(word, j):
        return j + len(word)
    rest = text[j : j + len(word)]  # no copy of all the rest: this runs at every candidate
    if not final and word.startswith(rest) and j + len(rest) == len(text):
        return NEED
    expected = _EXPECTED.get(word)
    if expected is None:
        if len(_EXPECTED) >= 4096:
            _EXPECTED.clear()
        expected = _EXPECTED[word] = Mismatch(f"expected {word!r}")
    return expected


# One Mismatch per marker, made once (it is immutable): a probe that finds another marker is common.
_EXPECTED: dict[str, Mismatch] = {}


def names_as_written(names: list[str], escapes: Escapes) -> list[tuple[str, str]]:
    """(as written, declared name) for each name, longest written first."""
    if not escapes:
        return [(name, name) for name in sorted(names, key=len, reverse=True)]
    found = [(escape_name(name, escapes), name) for name in names]
    found += [(name, name) for name in names if escape_name(name, escapes) != name]
    return sorted(found, key=lambda item: -len(item[0]))


def read_name(text: str, i: int, final: bool, ends: tuple[str, ...], escapes: Escapes = ()) -> Step:
    """Where a name that none of the declared ones is ends: it is written as is (or with ``escapes``,
    each taken whole), up to the marker that follows it in the shape (``ends``; "" where whitespace
    follows), so it holds no whitespace and none of the characters that marker starts with (a name
    with those is read only when declared). With nothing written after it (a value follows), a run of
    word characters of any script."""
    starts = {end[0] for end in ends if end}
    if "" in ends:
        starts |= set("{[")  # whitespace was written before the value: one written without it ends the name too
    if starts:
        j = i
        while j < len(text) and not text[j].isspace() and text[j] not in starts:
            # An escape may hold what ends a name (``\"`` between quotes): it is part of the name.
            j += next((len(written) for _, written in escapes if written and text.startswith(written, j)), 1)
    else:
        m = WORD_NAME.match(text, i)
        j = m.end() if m else i
    if j == len(text) and not final:
        return NEED  # the name may go on
    if j == i:
        return Mismatch("expected a name")
    return j
