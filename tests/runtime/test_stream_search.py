"""The parser's search for watched markers in content: one regex over all of them must find what a
search for each word finds, taking the earliest and, where several start at one place, the longest."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.runtime.scanners import words_search


def earliest(buf: str, words: list[str], start: int) -> tuple[int, str] | None:
    """The definition: each word searched for alone."""
    best: tuple[int, str] | None = None
    for word in words:
        at = buf.find(word, start)
        if at != -1 and (best is None or at < best[0] or (at == best[0] and len(word) > len(best[1]))):
            best = (at, word)
    return best


# Few letters, so that words overlap, nest in one another and start at the same places.
letters = st.text("<>|ab.*", max_size=12)


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.text("<>|ab.*", min_size=1, max_size=5), max_size=5, unique=True), letters, st.integers(0, 13))
def test_one_search_finds_what_each_word_finds(words: list[str], buf: str, start: int) -> None:
    search = words_search(words)
    if not words:
        assert search is None
        return
    assert search is not None
    m = search.search(buf, start)
    assert ((m.start(), m.group()) if m else None) == earliest(buf, words, start)


def test_longest_word_wins_where_several_start() -> None:
    search = words_search(["<", "<tool_call>", "<tool"])
    assert search is not None
    m = search.search("text <tool_call> more")
    assert m is not None and (m.start(), m.group()) == (5, "<tool_call>")
