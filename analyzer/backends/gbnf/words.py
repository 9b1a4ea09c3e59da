"""Text that holds none of some words, as GBNF: a reasoning block's text up to its closer, a raw value
up to the marker after it, content that opens no call. The words are compiled to a small regex
(an automaton that tracks how much of each word the text ends with) and the regex to GBNF rules, so
the text can never hold a word nor end with its beginning where that would read as a marker cut off.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from analyzer.backends.gbnf.text import Rules, char_class, literal


@dataclass(frozen=True, slots=True)
class _Lit:
    text: str


@dataclass(frozen=True, slots=True)
class _Class:
    chars: frozenset[str]
    negated: bool


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[_Regex, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    items: tuple[_Regex, ...]


@dataclass(frozen=True, slots=True)
class _Star:
    item: _Regex


_Regex = _Lit | _Class | _Seq | _Alt | _Star
_EMPTY = _Seq(())
_MAX_NESTING = 8


def text_without(rules: Rules, hint: str, avoid: tuple[str, ...]) -> str:
    """A rule for any text (empty too) that holds none of ``avoid`` and does not end with the start of
    one (which a reader at the end of the output takes for a marker cut off): ``text_until``'s
    automaton, ending where nothing of a word is matched."""
    return _words_text(rules, hint, None, avoid)


def text_until(rules: Rules, hint: str, stop: str, avoid: tuple[str, ...] = ()) -> str:
    """A rule for any text that ends with the first ``stop`` in it and holds none of ``avoid``.

    The language is regular and written with literals and classes only, so a GBNF reader that lexes
    (llguidance) takes it as one terminal that can neither end early nor run past ``stop``. Built as
    the automaton that reads text watching for the words (Aho-Corasick), whose states are then removed
    one by one, deepest first, the edges between the remaining ones becoming regexes (state
    elimination). Deeply nested alternatives become rules of their own: GBNF readers limit nesting.
    """
    return _words_text(rules, hint, stop, avoid)


def _words_text(rules: Rules, hint: str, stop: str | None, avoid: tuple[str, ...]) -> str:
    """``text_until`` ``stop``, or with ``stop`` None ``text_without``."""
    return rules.add(hint, _gbnf(_words_regex(stop, avoid), rules, hint))


@functools.lru_cache(maxsize=512)
def _words_regex(stop: str | None, avoid: tuple[str, ...]) -> _Regex:
    """The regex of ``_words_text``, once per words: a grammar asks for the same raw text many times
    (every argument of every tool, every call position)."""
    avoid = tuple(word for word in avoid if word and word not in (stop or ""))  # such a word would bar stop itself
    words = (stop, *avoid) if stop is not None else avoid
    prefixes = sorted({word[:i] for word in words for i in range(len(word))}, key=lambda p: (len(p), p))
    state = {prefix: i for i, prefix in enumerate(prefixes)}  # state 0: nothing matched yet
    start, accept = len(prefixes), len(prefixes) + 1
    alphabet = {ch for word in words for ch in word}

    def step(prefix: str, ch: str) -> int | None:
        seen = prefix + ch
        if stop is not None and seen.endswith(stop):
            return accept
        if any(seen.endswith(word) for word in avoid):
            return None
        return next(state[seen[i:]] for i in range(len(seen) + 1) if seen[i:] in state)

    edges: dict[tuple[int, int], _Regex] = {(start, 0): _EMPTY}
    if stop is None:  # the text may end where no word is begun
        edges[(0, accept)] = _EMPTY
    for prefix, source in state.items():
        targets: dict[int, set[str]] = {}
        for ch in sorted(alphabet):  # in a fixed order: the grammar text is the same in every process
            target = step(prefix, ch)
            if target is not None:
                targets.setdefault(target, set()).add(ch)
        # Back to nothing matched: every character no word holds, and the listed ones that lead there.
        back = _Class(frozenset(alphabet - targets.pop(0, set())), True)
        edges[(source, 0)] = _alt(edges[(source, 0)], back) if (source, 0) in edges else back
        for target, chars in targets.items():
            edges[(source, target)] = _Lit(next(iter(chars))) if len(chars) == 1 else _Class(frozenset(chars), False)
    for k in reversed(range(len(prefixes))):
        loop = edges.pop((k, k), None)
        into = [(i, r) for (i, j), r in edges.items() if j == k]
        out = [(j, r) for (i, j), r in edges.items() if i == k]
        for key in [key for key in edges if k in key]:
            del edges[key]
        for i, first in into:
            for j, last in out:
                path = _seq(first, _Star(loop) if loop else _EMPTY, last)
                edges[(i, j)] = _alt(edges[(i, j)], path) if (i, j) in edges else path
    return edges[(start, accept)]


def _seq(*items: _Regex) -> _Regex:
    flat: list[_Regex] = []
    for item in items:
        for part in item.items if isinstance(item, _Seq) else (item,):
            if flat and isinstance(part, _Lit) and isinstance(flat[-1], _Lit):
                flat[-1] = _Lit(flat[-1].text + part.text)
            else:
                flat.append(part)
    return flat[0] if len(flat) == 1 else _Seq(tuple(flat))


def _alt(*items: _Regex) -> _Regex:
    options: list[_Regex] = []
    for item in items:
        options.extend(
            option for option in (item.items if isinstance(item, _Alt) else (item,)) if option not in options
        )
    return options[0] if len(options) == 1 else _Alt(tuple(options))


def _gbnf(regex: _Regex, rules: Rules, hint: str, depth: int = 0, top: bool = True) -> str:
    """GBNF for a regex. ``depth``: how many alternatives it stands in; ``top``: it needs no parentheses."""
    if isinstance(regex, _Lit):
        return literal(regex.text)
    if isinstance(regex, _Class):
        return char_class(regex.chars, negated=regex.negated)
    if isinstance(regex, _Seq):
        if not regex.items:
            return '""'
        return " ".join(_gbnf(item, rules, hint, depth, top=False) for item in regex.items)
    if isinstance(regex, _Alt):
        if depth >= _MAX_NESTING:
            return rules.add(f"{hint}-part", _gbnf(regex, rules, hint))
        text = " | ".join(_gbnf(item, rules, hint, depth + 1) for item in regex.items)
        return text if top else f"( {text} )"
    inner = _gbnf(regex.item, rules, hint, depth + 1, top=False)
    return (inner if isinstance(regex.item, (_Lit, _Class, _Alt)) else f"( {inner} )") + "*"
