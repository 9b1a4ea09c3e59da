"""The matchers' smallest steps (analyzer/runtime/steps.py)."""

from __future__ import annotations

import sys

import pytest

from analyzer.runtime.steps import NEED, Mismatch, match_word, skip_ws

# Every character str.isspace accepts, found by asking it of every code point.
SPACES = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())


def test_skip_ws_skips_what_isspace_accepts_and_nothing_else() -> None:
    # skip_ws reads a run with a regex (\s): it must stop and go on exactly where str.isspace would.
    assert skip_ws(SPACES + "x", 0) == len(SPACES)
    for c in range(sys.maxunicode + 1):
        char = chr(c)
        expected = 2 if char.isspace() else 0
        assert skip_ws(char + char + "x", 0) == expected, hex(c)


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("", 0, 0),
        ("x", 0, 0),
        (" x", 0, 1),
        ("  \n\t x", 0, 5),
        ("ab   ", 2, 5),  # a run to the end of the text
        ("ab", 5, 5),  # past the end: unchanged
    ],
)
def test_skip_ws(text: str, start: int, expected: int) -> None:
    assert skip_ws(text, start) == expected


def test_match_word_after_whitespace() -> None:
    assert match_word("\n    </tool_call>", 0, "</tool_call>", True) == len("\n    </tool_call>")
    assert match_word("\n    </tool", 0, "</tool_call>", False) is NEED
    assert isinstance(match_word("\n    </tool", 0, "</tool_call>", True), Mismatch)
    assert isinstance(match_word("  x", 0, "</tool_call>", False), Mismatch)
