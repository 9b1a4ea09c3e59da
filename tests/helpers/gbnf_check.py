"""Does a GBNF grammar accept a text? Asked of a real grammar engine, llguidance.

The grammar is converted with llguidance's own GBNF-to-Lark converter and run over a byte-level
vocabulary (256 one-byte tokens and an end token), so a text is fed exactly, byte by byte. A byte the
grammar does not allow puts the matcher in an error state; its message says where and why.

llguidance lexes greedily: the converter makes every rule built only of literals, character classes
and such rules one terminal, which takes the longest run it can and never gives any back. llama.cpp's
own GBNF engine has no lexer and follows every alternative character by character, so this check is
the stricter of the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import llguidance
from llguidance.gbnf_to_lark import gbnf_to_lark

_END = 256  # the end-of-text token, after the 256 byte tokens


class _ByteTokenizer:
    """The tokenizer ``llguidance.TokenizerWrapper`` wraps: one token per byte."""

    tokens = [bytes([b]) for b in range(256)] + [b"<end>"]
    eos_token_id = _END
    bos_token_id = None
    special_token_ids: ClassVar[list[int]] = [_END]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text.encode() if isinstance(text, str) else text)


@cache
def _tokenizer() -> llguidance.LLTokenizer:
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str  # why not: the engine's error, or that the text stops before the grammar is done

    def __bool__(self) -> bool:
        return self.accepted


class GrammarError(Exception):
    """The engine refused the grammar itself."""


class Checker:
    """One grammar, compiled once, asked about any number of texts."""

    def __init__(self, gbnf: str) -> None:
        self.gbnf = gbnf
        grammar = llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(gbnf))
        self._start = llguidance.LLMatcher(_tokenizer(), grammar, log_level=0)
        if self._start.is_error():
            raise GrammarError(self._start.get_error())

    def check(self, text: str) -> Verdict:
        matcher = self._start.deep_copy()
        data = text.encode()
        for at, byte in enumerate(data):
            if not matcher.consume_token(byte):
                seen = data[max(0, at - 40) : at].decode(errors="replace")
                first_line = matcher.get_error().splitlines()[0] if matcher.get_error() else "rejected"
                return Verdict(False, f"byte {at} {bytes([byte])!r} after ...{seen!r}: {first_line}")
        if not matcher.is_accepting():
            return Verdict(False, f"the text ends before the grammar does (...{text[-60:]!r})")
        return Verdict(True, "")


def accepts(gbnf: str, text: str) -> Verdict:
    return Checker(gbnf).check(text)
