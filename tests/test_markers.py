"""The one definition of a marker (analyzer.markers): what every stage takes for one, and where a cut
would split one."""

from __future__ import annotations

import re

import pytest

from analyzer.markers import (
    MAX_INSIDE,
    find_markers,
    first_marker,
    glued_end,
    glued_start,
    inside_marker_mask,
    is_marker,
    last_marker,
    marker_at,
    marker_end,
    marker_start,
    special_word,
    tokens,
)

# --------------------------------------------------------------------------- marker-aware cuts

TOOL_CALL = "<|tool_call>call"  # the marker is text[0:12]


@pytest.mark.parametrize("pos", range(1, 12))
def test_cut_inside_marker_moves_to_its_ends(pos: int) -> None:
    assert marker_start(TOOL_CALL, pos) == 0
    assert marker_end(TOOL_CALL, pos) == 12


@pytest.mark.parametrize("pos", [0, 12, 13, 16])
def test_cut_at_marker_edge_or_in_plain_text_stays(pos: int) -> None:
    assert marker_start(TOOL_CALL, pos) == pos
    assert marker_end(TOOL_CALL, pos) == pos


def test_cuts_between_two_markers() -> None:
    text = "ab<x><y>cd"
    starts = [marker_start(text, p) for p in range(len(text) + 1)]
    ends = [marker_end(text, p) for p in range(len(text) + 1)]
    assert starts == [0, 1, 2, 2, 2, 5, 5, 5, 8, 9, 10]
    assert ends == [0, 1, 2, 5, 5, 5, 8, 8, 8, 9, 10]


def test_square_bracket_markers() -> None:
    text = "x[TOOL_CALLS]y"
    assert [marker_start(text, p) for p in range(2, 13)] == [1] * 11
    assert [marker_end(text, p) for p in range(2, 13)] == [13] * 11
    assert (marker_start(text, 1), marker_end(text, 1)) == (1, 1)
    assert (marker_start(text, 13), marker_end(text, 13)) == (13, 13)


def test_cut_in_plain_text_stays() -> None:
    text = "hello world\nnext line"
    for pos in range(len(text) + 1):
        assert marker_start(text, pos) == pos
        assert marker_end(text, pos) == pos


def test_newline_stops_the_search() -> None:
    # A marker does not span lines: "<a\nb>" is not one marker.
    assert marker_start("<a\nbc", 4) == 4
    assert marker_end("ab\nc>", 1) == 1


def test_marker_length_is_bounded() -> None:
    longest = "<" + "x" * MAX_INSIDE + ">"
    assert marker_start(longest, MAX_INSIDE) == 0
    assert marker_end(longest, 1) == len(longest)
    too_long = "<" + "x" * (MAX_INSIDE + 1) + ">"
    for pos in (1, 40, MAX_INSIDE):
        assert marker_start(too_long, pos) == pos
        assert marker_end(too_long, pos) == pos


def test_marker_end_needs_an_opener_before_the_cut() -> None:
    # "a>b": there is a '>' ahead but no '<' before the cut: not inside a marker.
    assert marker_end("a>b", 1) == 1
    assert marker_start("a>b", 2) == 2


def test_marker_start_with_a_full_width_marker() -> None:
    text = "<｜tool▁calls▁begin｜>"
    assert marker_start(text, 5) == 0
    assert marker_end(text, 5) == len(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # mask[i] == 1: a cut before text[i] splits a marker; one entry more than the text
        ("<|tool_call>call", [0] + [1] * 11 + [0] * 5),
        ("ab<x><y>cd", [0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0]),
        ("[TOOL_CALLS]x", [0] + [1] * 11 + [0, 0]),
        ("plain text", [0] * 11),
        ("", [0]),
        ("<>", [0, 0, 0]),  # nothing between the brackets: not a marker
        ("<a\nb>", [0] * 6),  # markers do not span lines
        ("<<a>>", [0, 0, 1, 1, 0, 0]),  # the innermost bracket pair
        ("<" + "x" * MAX_INSIDE + ">", [0] + [1] * (MAX_INSIDE + 1) + [0]),  # still a marker
        ("<" + "x" * (MAX_INSIDE + 1) + ">", [0] * (MAX_INSIDE + 4)),  # too long for a marker
        # the heuristic also takes a comparison or a short JSON array for a marker
        ("a < b > c", [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]),
        ("x[1, 2]", [0, 0, 1, 1, 1, 1, 1, 0]),
    ],
)
def test_inside_marker_mask(text: str, expected: list[int]) -> None:
    mask = inside_marker_mask(text)
    assert isinstance(mask, bytearray)
    assert list(mask) == expected


# --------------------------------------------------------------------------- finding markers


@pytest.mark.parametrize(
    "text", ["<|im_end|>", "[INST]", "<｜User｜>", "<tool_call>", "[/TOOL_RESULTS]", "<|start_header_id|>"]
)
def test_bracketed_markers(text: str) -> None:
    assert is_marker(text) and is_marker(text, symbols=True)
    assert [m.group() for m in find_markers(f"a {text}b")] == [text]


@pytest.mark.parametrize("text", ["", "<>", "[]", "plain", "<a\nb>", "<tool_call", "<a><b>"])
def test_not_one_marker(text: str) -> None:
    assert not is_marker(text)


def test_symbol_runs_are_markers_only_when_asked() -> None:
    # Special tokens outside brackets: a chunk of symbols with at most a short word inside.
    text = "answer]~b] next"
    assert find_markers(text) == []
    assert [m.group() for m in find_markers(text, symbols=True)] == ["]~b]"]
    assert is_marker("]~b]", symbols=True) and not is_marker("]~b]")
    assert marker_at("[e~[ x", symbols=True).group() == "[e~["
    assert marker_at("[e~[ x") is None


def test_first_last_and_at() -> None:
    text = "x<a>y[B]z<c>"
    assert first_marker(text).group() == "<a>"
    assert first_marker(text, 4).group() == "[B]"
    assert last_marker(text).group() == "<c>"
    assert last_marker("no markers") is None
    assert marker_at(text, 5).group() == "[B]" and marker_at(text, 4) is None


@pytest.mark.parametrize(
    ("marker", "word"),
    [
        ("[TOOL_CALLS][", "[TOOL_CALLS]"),
        ("<|tool_call_begin|>functions.", "<|tool_call_begin|>"),
        ("<tool_call>\n", "<tool_call>"),
        ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁begin｜>"),
        ("<function=", ""),  # never closed: no word
        (">\n", ""),
        ("\n<tool_call>", ""),  # the word must open the marker
        ("<tool call>", ""),  # a special token has no space in it
    ],
)
def test_special_word(marker: str, word: str) -> None:
    assert special_word(marker) == word


def test_glued_tags() -> None:
    text = "<|start|>assistant<|channel|>analysis"
    at = text.index("<|channel|>")
    assert glued_start(text, at) == 0
    assert glued_start("plain <|channel|>", 6) == 6
    close = "x<|end|>think<|sep|>rest"
    assert glued_end(close, close.index("think")) == close.index("rest")
    assert glued_end(close, 1) == 1  # no word glued at 1


def test_tokens_keep_markers_whole_and_join_back() -> None:
    text = "<|im_start|>user\nhi, [INST] a<b"
    found = tokens(text)
    assert "".join(found) == text
    assert found[:4] == ["<|im_start|>", "user", "\n", "hi"]
    assert "[INST]" in found and "<" in found  # an unclosed bracket is a symbol


# The regex backends/gbnf/grammar.py used for the word of a preserved token, kept here as the oracle.
_GRAMMAR_WORD = re.compile(r"[<\[][^\s<>\[\]]+[>\]]")


def test_special_word_names_the_same_words_as_the_grammar_did(corpus_paths) -> None:
    """The grammar's preserved tokens took the word a marker starts with from a regex of their own;
    the one definition gives the same word for every marker of every corpus template."""
    from analyzer.analysis import analyze
    from analyzer.lower import lower
    from analyzer.sources import load_template

    compared = 0
    for path in corpus_paths:
        for marker in lower(analyze(load_template(str(path)))).markers():
            old = _GRAMMAR_WORD.match(marker)
            assert special_word(marker) == (old.group() if old else ""), (path.stem, marker)
            compared += bool(special_word(marker))
    assert compared > 50
