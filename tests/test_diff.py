"""Exact-value tests for the diff primitives."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from analyzer.backends.summary import visible
from analyzer.diff import (
    Insertion,
    RepeatedUnit,
    _same_modulo_counters,  # the oracle below reuses the counter comparison
    common_prefix_len,
    common_suffix_len,
    find_all,
    insertion,
    repeated_unit,
)
from analyzer.markers import inside_marker_mask

# --------------------------------------------------------------------------- prefix / suffix


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("", "", 0),
        ("", "abc", 0),
        ("abc", "abd", 2),
        ("abc", "abc", 3),
        ("ab", "abc", 2),
        ("xbc", "abc", 0),
        # across the 64-character block boundary
        ("a" * 64 + "x", "a" * 64 + "y", 64),
        ("a" * 63 + "x", "a" * 63 + "y", 63),
        ("a" * 200 + "x", "a" * 200 + "y", 200),
        ("a" * 130, "a" * 130, 130),
        ("a" * 127 + "b" + "a" * 10, "a" * 138, 127),
    ],
)
def test_common_prefix_len(a: str, b: str, expected: int) -> None:
    assert common_prefix_len(a, b) == expected
    assert common_prefix_len(b, a) == expected


@pytest.mark.parametrize(
    ("a", "b", "limit", "expected"),
    [
        ("", "", None, 0),
        ("xabc", "yabc", None, 3),
        ("abc", "abc", None, 3),
        ("abc", "zzabc", None, 3),
        ("abc", "abd", None, 0),
        ("xabc", "yabc", 2, 2),
        ("xabc", "yabc", 3, 3),
        ("xabc", "yabc", 10, 3),
        ("abc", "abc", 0, 0),
    ],
)
def test_common_suffix_len(a: str, b: str, limit: int | None, expected: int) -> None:
    assert common_suffix_len(a, b, limit=limit) == expected
    assert common_suffix_len(b, a, limit=limit) == expected


@given(st.text(alphabet="ab<>", max_size=150), st.text(alphabet="ab<>", max_size=150))
def test_prefix_and_suffix_are_maximal(a: str, b: str) -> None:
    p = common_prefix_len(a, b)
    assert a[:p] == b[:p]
    assert p == min(len(a), len(b)) or a[p] != b[p]
    s = common_suffix_len(a, b)
    assert a[len(a) - s :] == b[len(b) - s :]
    assert s == min(len(a), len(b)) or a[len(a) - 1 - s] != b[len(b) - 1 - s]


# --------------------------------------------------------------------------- insertion


@pytest.mark.parametrize(
    ("shorter", "longer", "expected"),
    [
        ("abcd", "abXcd", Insertion(lo=2, hi=2, size=1)),
        ("aa", "aXa", Insertion(lo=1, hi=1, size=1)),
        # the inserted "b" could go anywhere in "bb": the position slides in [1, 2]
        ("ab", "abb", Insertion(lo=1, hi=2, size=1)),
        ("aa", "aaa", Insertion(lo=0, hi=2, size=1)),
        # "<c>x</c>" inserted after "<c>x</c>": it can also be read as inserted after "<c>x"
        ("<c>x</c>", "<c>x</c><c>x</c>", Insertion(lo=0, hi=8, size=8)),
        ("<c>S1</c>", "<c>S1</c><c>S2</c>", Insertion(lo=5, hi=9, size=9)),
        ("", "abc", Insertion(lo=0, hi=0, size=3)),
        ("abc", "abc", Insertion(lo=0, hi=3, size=0)),
        ("abc", "abcdef", Insertion(lo=3, hi=3, size=3)),
        ("def", "abcdef", Insertion(lo=0, hi=0, size=3)),
    ],
)
def test_insertion(shorter: str, longer: str, expected: Insertion) -> None:
    assert insertion(shorter, longer) == expected


@pytest.mark.parametrize(
    ("shorter", "longer"),
    [
        ("abc", "xyz"),  # a substitution
        ("abc", "ab"),  # longer is shorter
        ("abcd", "aXbcYd"),  # two insertions
        ("abc", "abXYZ"),  # a replaced tail
    ],
)
def test_not_an_insertion(shorter: str, longer: str) -> None:
    assert insertion(shorter, longer) is None


@given(st.text(alphabet="ab<", max_size=30), st.integers(min_value=0), st.text(alphabet="ab<", max_size=10))
def test_insertion_window_is_exact(shorter: str, at: int, inserted: str) -> None:
    at = at % (len(shorter) + 1)
    longer = shorter[:at] + inserted + shorter[at:]
    ins = insertion(shorter, longer)
    assert ins is not None
    assert ins.size == len(inserted)
    assert ins.lo <= at <= ins.hi
    # every position in the window is a valid reading, and the window is as wide as possible
    for p in range(ins.lo, ins.hi + 1):
        assert shorter[:p] + longer[p : p + ins.size] + shorter[p:] == longer
    for p in (ins.lo - 1, ins.hi + 1):
        if 0 <= p <= len(shorter):
            assert shorter[:p] + longer[p : p + ins.size] + shorter[p:] != longer


# --------------------------------------------------------------------------- repeated_unit

CALL_A = '{"name": "alpha_fn", "arguments": {"city": "SENTINEL_A"}}'
CALL_B = '{"name": "beta_fn", "arguments": {"city": "SENTINEL_B"}}'


def to_first(text: str) -> str:
    return text.replace("beta_fn", "alpha_fn").replace("SENTINEL_B", "SENTINEL_A")


def test_repeated_unit_chatml_tagged_calls() -> None:
    head, tail = "<|im_start|>assistant\n", "<|im_end|>\n"
    one = head + "<tool_call>\n" + CALL_A + "\n</tool_call>" + tail
    two = head + "<tool_call>\n" + CALL_A + "\n</tool_call>\n<tool_call>\n" + CALL_B + "\n</tool_call>" + tail
    unit = repeated_unit(one, two, to_first, "SENTINEL_A")
    assert unit == RepeatedUnit(
        start=22,
        end=104,
        separator="\n",
        first="<tool_call>\n" + CALL_A + "\n</tool_call>",
        second="<tool_call>\n" + CALL_B + "\n</tool_call>",
        counters=(),
    )
    assert one[unit.start : unit.end] == unit.first


def test_repeated_unit_json_array() -> None:
    one = "[TOOL_CALLS][" + CALL_A + "]</s>"
    two = "[TOOL_CALLS][" + CALL_A + ", " + CALL_B + "]</s>"
    unit = repeated_unit(one, two, to_first, "SENTINEL_A")
    assert unit == RepeatedUnit(start=13, end=70, separator=", ", first=CALL_A, second=CALL_B, counters=())


def test_repeated_unit_short_json_array() -> None:
    one, two = '[{"n": "S1"}]', '[{"n": "S1"}, {"n": "S2"}]'
    unit = repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1")
    assert unit == RepeatedUnit(start=1, end=12, separator=", ", first='{"n": "S1"}', second='{"n": "S2"}', counters=())


def test_repeated_unit_kimi_call_index_counter() -> None:
    section_open, section_close = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
    call_a = (
        '<|tool_call_begin|>functions.alpha_fn:0<|tool_call_argument_begin|>{"city": "SENTINEL_A"}<|tool_call_end|>'
    )
    call_b = '<|tool_call_begin|>functions.beta_fn:1<|tool_call_argument_begin|>{"city": "SENTINEL_B"}<|tool_call_end|>'
    one = section_open + call_a + section_close
    two = section_open + call_a + call_b + section_close
    unit = repeated_unit(one, two, to_first, "SENTINEL_A")
    assert unit == RepeatedUnit(
        start=len(section_open),
        end=len(section_open) + len(call_a),
        separator="",
        first=call_a,
        second=call_b,
        counters=((0, "0", "1"),),
    )


def test_repeated_unit_counter_index_counts_digit_runs() -> None:
    # Digit runs that agree are not counters; the index is the run's position among all runs.
    one = "<c v=7 i=0>S1</c>"
    two = "<c v=7 i=0>S1</c><c v=7 i=1>S2</c>"
    unit = repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1")
    assert unit is not None
    assert (unit.first, unit.second, unit.separator) == (one, "<c v=7 i=1>S2</c>", "")
    assert unit.counters == ((1, "0", "1"),)


def test_repeated_unit_whitespace_goes_to_the_separator() -> None:
    one, two = "x S1 y", "x S1 y S2 y"
    unit = repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1")
    # " S1 y" repeats too and is longer, but has whitespace at its start
    assert unit == RepeatedUnit(start=2, end=6, separator=" ", first="S1 y", second="S2 y", counters=())


def test_repeated_unit_prefers_ends_outside_markers_over_length() -> None:
    one, two = "(S1)<end>", "(S1)<,(S2)<end>"
    unit = repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1")
    # "(S1)<" would repeat too (separator ",") and is longer, but ends inside "<end>"
    assert unit == RepeatedUnit(start=0, end=4, separator="<,", first="(S1)", second="(S2)", counters=())


def test_repeated_unit_longest_wins_among_clean_candidates() -> None:
    one, two = "<a>S1</a>", "<a>S1</a><a>S2</a>"
    unit = repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1")
    # "<a>S1" with separator "</a>" also repeats; the whole tagged unit is longer
    assert unit == RepeatedUnit(start=0, end=9, separator="", first="<a>S1</a>", second="<a>S2</a>", counters=())


def test_repeated_unit_none_when_nothing_repeats() -> None:
    one = "abc SENTINEL_A"
    assert repeated_unit(one, one + " and more stuff", to_first, "SENTINEL_A") is None


def test_repeated_unit_none_when_not_an_insertion() -> None:
    assert repeated_unit("abc SENTINEL_A", "xyz SENTINEL_A", to_first, "SENTINEL_A") is None
    assert repeated_unit("abc SENTINEL_A", "abc", to_first, "SENTINEL_A") is None


def test_repeated_unit_none_when_nothing_inserted() -> None:
    assert repeated_unit("<a>SENTINEL_A</a>", "<a>SENTINEL_A</a>", to_first, "SENTINEL_A") is None


def test_repeated_unit_rejects_a_unit_without_the_sentinel() -> None:
    # "<a>x</a>" repeats, but it is not the item: the item's sentinel is outside it.
    one, two = "<a>x</a>SENTINEL_A", "<a>x</a><a>x</a>SENTINEL_A"
    assert repeated_unit(one, two, to_first, "SENTINEL_A") is None
    # The same renders with a sentinel inside the unit do find it.
    unit = repeated_unit(one, two, to_first, "x")
    assert unit == RepeatedUnit(start=0, end=8, separator="", first="<a>x</a>", second="<a>x</a>", counters=())


def test_repeated_unit_rejects_a_second_item_that_differs_beyond_counters() -> None:
    # The second call differs in a letter, not in its sentinel or a digit run.
    one, two = "<c>S1 a</c>", "<c>S1 a</c><c>S2 b</c>"
    assert repeated_unit(one, two, lambda s: s.replace("S2", "S1"), "S1") is None


def _oracle(one: str, two: str, to_first, must_contain: str) -> RepeatedUnit | None:
    """repeated_unit by brute force over every (end, cut), scored as its docstring says."""
    ins = insertion(one, two)
    if ins is None or ins.size == 0:
        return None
    inside = inside_marker_mask(one)
    best = None
    for end in range(ins.lo, ins.hi + 1):
        inserted = two[end : end + ins.size]
        for cut in range(len(inserted)):
            second = inserted[cut:]
            expected = to_first(second)
            start = end - len(expected)
            if start < 0 or start >= end:
                continue
            first = one[start:end]
            if must_contain not in first:
                continue
            counters = _same_modulo_counters(expected, first)
            if counters is None:
                continue
            counters = tuple((k, old, new) for k, new, old in counters)
            score = (not inside[start] and not inside[end], not (first[0].isspace() or first[-1].isspace()), len(first))
            if best is None or score >= best[0]:
                best = (score, RepeatedUnit(start, end, inserted[:cut], first, second, counters))
    return best[1] if best else None


_PIECES = ["<", ">", "[", "]", " ", "\n", "a", "S1", ",", "|", "<t>", "</t>", "{", "}", "0", "1", "NAA"]
_piece_runs = st.lists(st.sampled_from(_PIECES), max_size=5).map("".join)


def _to_first_renaming(text: str) -> str:
    # the second item's sentinel and (shorter) name become the first item's
    return text.replace("S2", "S1").replace("NB", "NAA")


@given(
    _piece_runs, _piece_runs, st.lists(st.sampled_from(_PIECES), max_size=2).map("".join), _piece_runs, st.booleans()
)
# A find: the oracle paired digit runs of different width ("1" with "00"), which the scan never does.
@example(head="S1S10", unit="S10", separator="0S1", tail="", recount=False)
def test_repeated_unit_matches_brute_force(head: str, unit: str, separator: str, tail: str, recount: bool) -> None:
    if "S1" not in unit:
        unit += "S1"
    second = unit.replace("S1", "S2").replace("NAA", "NB")
    if recount:
        second = second.replace("0", "1")
    one = head + unit + tail
    two = head + unit + separator + second + tail
    found = repeated_unit(one, two, _to_first_renaming, "S1")
    assert found == _oracle(one, two, _to_first_renaming, "S1")
    # a unit exists by construction, and whatever is found explains ``two`` exactly
    assert found is not None
    assert one[found.start : found.end] == found.first
    assert two == one[: found.end] + found.separator + found.second + one[found.end :]
    assert "S1" in found.first


# --------------------------------------------------------------------------- find_all, visible


@pytest.mark.parametrize(
    ("text", "needle", "expected"),
    [
        ("aaaa", "aa", [0, 1, 2]),  # overlapping matches
        ("abcabc", "bc", [1, 4]),
        ("abc", "z", []),
        ("", "a", []),
        ("<tool_call>x</tool_call>", "tool_call>", [1, 14]),
    ],
)
def test_find_all(text: str, needle: str, expected: list[int]) -> None:
    assert find_all(text, needle) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a\nb", "a\\nb"),
        ("\t\r\n", "\\t\\r\\n"),
        ("back\\slash", "back\\\\slash"),
        # a literal backslash-n stays distinguishable from a newline
        ("\\n", "\\\\n"),
        ("<|im_end|>\n", "<|im_end|>\\n"),
        ("é ｜", "é ｜"),
    ],
)
def test_visible(text: str, expected: str) -> None:
    assert visible(text) == expected


@given(st.text(alphabet="ab\\\n\t\r", max_size=20), st.text(alphabet="ab\\\n\t\r", max_size=20))
def test_visible_is_injective_and_one_line(a: str, b: str) -> None:
    assert "\n" not in visible(a) and "\r" not in visible(a)
    assert (visible(a) == visible(b)) == (a == b)


def test_added_text_takes_the_block_holding_the_sentinel():
    from analyzer.diff import added_text

    base = '<calls>[{"a": 1}]</calls><end>'
    longer = '<calls>[{"a": 1}, "id": "x"]</calls><end><result>RES</result>'
    assert added_text(base, longer, "RES") == "<result>RES</result>"
    assert added_text("abc", "abXYZc", "XYZ") == "XYZ"
    assert added_text("abc", "abc", "Q") is None
