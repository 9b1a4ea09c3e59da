"""The stream's scanners: searches over the buffer that the state machine (``stream.py``) runs on
each chunk, and the searches the plan (``stream_plan.py``) builds once: where the next marker
stands, how much of a buffer's end may be a marker's beginning, a closer written with loose
whitespace, a JSON string's decodable text so far. Each works on text and markers alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable

from .shape import Markers
from .shape_analysis import ByIdentity
from .steps import NEED, Mismatch, Step, skip_ws


def marker_before(buf: str, at: int, marker: str, start: int) -> bool:
    """Whether ``marker`` stands right before ``at`` in ``buf``, whitespace between, at or after ``start``."""
    while at > start and buf[at - 1].isspace():
        at -= 1
    return buf.endswith(marker, start, at)


def first_of(characters: set[str]) -> Callable[..., re.Match[str] | None]:
    """A search for the first of ``characters`` in a text, from an offset if given (None where there is none)."""
    if not characters:
        return lambda text, start=0: None
    return re.compile("[" + "".join(re.escape(c) for c in sorted(characters)) + "]").search


@functools.lru_cache(maxsize=256)
def cached_words_search(words: tuple[str, ...]) -> re.Pattern[str] | None:
    """``words_search``, once per set of words (a server makes a parser per request; escaping and
    joining the words costs more than the rest of a plan's searches)."""
    return words_search(list(words))


def words_search(words: list[str]) -> re.Pattern[str] | None:
    """One search for several words: it finds the leftmost, and of those standing there the longest
    (regex alternatives are tried in order, so the longest come first). None for no words."""
    by_length = sorted((word for word in words if word), key=len, reverse=True)
    return re.compile("|".join(re.escape(word) for word in by_length)) if by_length else None


def may_open_member(tail: str, key: str) -> bool:
    """Whether ``tail`` (from a "{") may still become the opening of ``{"key": "``."""
    rest = tail[1:].lstrip()
    quoted = '"' + key + '"'
    if len(rest) <= len(quoted):
        return quoted.startswith(rest)
    if not rest.startswith(quoted):
        return False
    rest = rest[len(quoted) :].lstrip()
    return not rest or (rest[0] == ":" and not rest[1:].strip())


def string_body(text: str, start: int) -> tuple[int, int]:
    """In a JSON string whose text starts at ``start``: where its closing quote is (-1 when not yet),
    and up to where its text can be decoded now (not into an escape or a surrogate pair cut short)."""
    i = safe = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return i, i
        if ch == "\\":
            if i + 1 >= len(text):
                break
            if text[i + 1] == "u":
                if i + 6 > len(text):
                    break
                high = 0xD800 <= _hex_value(text[i + 2 : i + 6]) <= 0xDBFF
                if high and i + 12 > len(text):
                    break  # the low half of the pair is still to come
                i += 12 if high and text.startswith("\\u", i + 6) else 6
            else:
                i += 2
        else:
            i += 1
        safe = i
    return -1, safe


def _hex_value(code: str) -> int:
    try:
        return int(code, 16)
    except ValueError:
        return -1


def json_string_text(body: str) -> str:
    """The text of a JSON string's body; what does not decode is kept as written, and a surrogate
    without its pair becomes U+FFFD, so the message stays valid UTF-8."""
    try:
        text: str = json.loads('"' + body + '"', strict=False)
    except ValueError:
        text = body
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def match_closer(buf: str, literal: Markers, final: bool) -> Step:
    """A closing literal, or the part of it the output has before it ends: a model stops on the
    turn's end token, which templates sometimes write as part of the closer."""
    step = loose_literal(buf, literal)
    if step is NEED and final:
        # The closer, cut short where the output ends.
        return len(buf) if buf.strip() else Mismatch("no closer")
    return step


def loose_literal(buf: str, literal: Markers) -> Step:
    """A closing literal at the start of ``buf`` with whitespace where the template wrote some, and
    also between two characters of a marker that are not both word characters (a newline inside
    ``]`` and three backquotes), never inside a word (``</tool_cal ls>`` is no closer)."""
    target, boundaries = _joined_markers(literal)
    i, k = skip_ws(buf, 0), 0
    # Written as the template writes it, or the start of that: no character-by-character walk.
    if buf.startswith(target, i):
        return i + len(target)
    if len(buf) - i < len(target) and target.startswith(buf[i:]):
        return NEED
    while k < len(target):
        if i == len(buf):
            return NEED
        if buf[i] == target[k]:
            i, k = i + 1, k + 1
        elif buf[i].isspace() and k and (k in boundaries or not (_wordy(target[k - 1]) and _wordy(target[k]))):
            i = skip_ws(buf, i)
        else:
            return Mismatch(f"expected {target!r}")
    return i


def _joined_markers(literal: Markers) -> tuple[str, frozenset[int]]:
    """A literal's markers as one text, and where in it each marker ends (kept: see ``ByIdentity``)."""
    return _JOINED.get(literal, _join_markers, literal)


def _join_markers(literal: Markers) -> tuple[str, frozenset[int]]:
    ends, at = [], 0
    for marker in literal:
        at += len(marker.text)
        ends.append(at)
    return "".join(marker.text for marker in literal), frozenset(ends)


_JOINED: ByIdentity[Markers, tuple[str, frozenset[int]]] = ByIdentity()


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def pending_start(buf: str, words: list[str], at: int, longest: int) -> int | None:
    """Where a watched word may be starting at or before ``at`` and run past the end of ``buf``;
    ``longest``: the length of the longest word."""
    for start in range(max(0, len(buf) - longest + 1), at + 1):
        tail = buf[start:]
        if any(len(w) > len(tail) and w.startswith(tail) for w in words):
            return start
    return None


@functools.lru_cache(maxsize=256)
def cut_patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """For the texts where a malformed call is cut: a pattern finding their first characters (a chunk
    without any cannot start one: a reader's plain text), and one matching their proper beginnings
    (text held back from a reader, while it may still be one of them; never where one of them stands
    inside another's beginning: it would be found there, not held). Cached: a server makes a parser
    per request."""
    if not words:
        return NO_MATCH, NO_MATCH
    starts = re.compile("[" + "".join(sorted({re.escape(w[0]) for w in words})) + "]")
    if any(a in b[:-1] for a in words for b in words):
        return starts, NO_MATCH
    return starts, re.compile("|".join(re.escape(w[:n]) for w in words for n in range(len(w) - 1, 0, -1)))


NO_MATCH = re.compile("(?!)")


def partial_suffix(buf: str, words: list[str] | tuple[str, ...]) -> int:
    """Length of the longest end of ``buf`` that begins one of ``words``: it may be a marker in the making."""
    best = 0
    for word in words:
        # Such an end starts with the word's first character: look only where that stands.
        at = buf.find(word[:1], max(0, len(buf) - len(word) + 1))
        while at != -1 and len(buf) - at > best:
            if word.startswith(buf[at:]):
                best = len(buf) - at
                break
            at = buf.find(word[:1], at + 1)
    return best
