"""Strings drawn from a GBNF grammar by a bounded random walk, for the property test that what a grammar
lets a model write the parser reads (tests/backends/test_grammar_walks.py).

The grammar is read as the backend writes it (one rule a line, ``name ::= body``; literals, character
classes, groups, ``|``, ``* + ?`` and ``{m,n}``). A walk picks an alternative and a repetition count at
random, from a seeded ``random.Random``; past a depth or length budget it takes the way out that writes
the least (worked out per rule beforehand), so every walk ends. A negated class draws from a pool of
characters (letters, digits, punctuation, whitespace, a few non-ASCII ones, and every character the
grammar's literals hold), so free text runs into the markers' characters as a model's would. The walk
records each literal it writes, so a test can tell which tool names it chose.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|(?P<name>[A-Za-z0-9_-]+)'
    r"|(?P<rep>\{\d+(?:,\d*)?\})|(?P<op>[()|*+?]))"
)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "[": "[", "]": "]", "-": "-", "^": "^"}
_POOL = string.ascii_letters + string.digits + " \n\t" + string.punctuation + "éЖ中"
_MAX_REPEAT = 4  # the most times a walk repeats an unbounded item (before the budget runs out)


@dataclass(frozen=True)
class _Lit:
    text: str


@dataclass(frozen=True)
class _Class:
    chars: frozenset[str]
    negated: bool


@dataclass(frozen=True)
class _Ref:
    name: str


@dataclass(frozen=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    options: tuple[_Node, ...]


@dataclass(frozen=True)
class _Rep:
    item: _Node
    least: int
    most: int | None


_Node = _Lit | _Class | _Ref | _Seq | _Alt | _Rep


def _unescape(body: str) -> list[str]:
    """The characters of a literal's or class's body, each escape decoded and marked with a backslash
    before it (so an escaped dash is no range's); the character is each item's last."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]
            if nxt == "x":
                out.append("\\" + chr(int(body[i + 2 : i + 4], 16)))
                i += 4
                continue
            if nxt == "u":
                out.append("\\" + chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append("\\" + _ESCAPES.get(nxt, nxt))  # escaped: never a range dash
            i += 2
            continue
        out.append(ch)
        i += 1
    return out


def _class(text: str) -> _Class:
    body = text[1:-1]
    negated = body.startswith("^")
    items = _unescape(body[1:] if negated else body)
    chars: set[str] = set()
    k = 0
    while k < len(items):
        first = items[k][-1]
        if k + 2 < len(items) and items[k + 1] == "-":
            last = items[k + 2][-1]
            chars.update(chr(c) for c in range(ord(first), ord(last) + 1))
            k += 3
            continue
        chars.add(first)
        k += 1
    return _Class(frozenset(chars), negated)


class _Reader:
    def __init__(self, body: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        at = 0
        body = body.rstrip()
        while at < len(body):
            match = _TOKEN.match(body, at)
            if match is None or match.end() == at:
                raise ValueError(f"cannot read GBNF at {body[at : at + 30]!r}")
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            at = match.end()
        self.at = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def alternatives(self) -> _Node:
        options = [self.sequence()]
        while (token := self.peek()) is not None and token == ("op", "|"):
            self.at += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while (token := self.peek()) is not None and token not in (("op", "|"), ("op", ")")):
            items.append(self.postfix(self.atom()))
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def atom(self) -> _Node:
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "lit":
            return _Lit("".join(ch[-1] for ch in _unescape(text[1:-1])))
        if kind == "cls":
            return _class(text)
        if kind == "name":
            return _Ref(text)
        if text == "(":
            inner = self.alternatives()
            assert self.tokens[self.at] == ("op", ")")
            self.at += 1
            return inner
        raise ValueError(f"unexpected {text!r}")

    def postfix(self, node: _Node) -> _Node:
        while (token := self.peek()) is not None and (token[0] == "rep" or token[1] in ("*", "+", "?")):
            self.at += 1
            kind, text = token
            if kind == "rep":
                low, _, high = text[1:-1].partition(",")
                node = _Rep(node, int(low), int(low) if "," not in text else (int(high) if high else None))
            else:
                node = _Rep(node, *{"*": (0, None), "+": (1, None), "?": (0, 1)}[text])
        return node


@dataclass
class Walk:
    """A drawn string and the literals it wrote, in order."""

    text: str
    literals: list[str] = field(default_factory=list)


class Walker:
    """One grammar, read once, walked any number of times."""

    def __init__(self, gbnf: str, *, depth: int = 40, length: int = 600) -> None:
        self.rules: dict[str, _Node] = {}
        for line in gbnf.splitlines():
            if not line.strip():
                continue
            name, _, body = line.partition(" ::= ")
            self.rules[name.strip()] = _Reader(body).alternatives()
        self.depth, self.length = depth, length
        self.cost = self._costs()
        literal_chars = {ch for node in self._literals() for ch in node}
        self.pool = sorted(set(_POOL) | literal_chars)

    def _literals(self) -> list[str]:
        found: list[str] = []

        def visit(node: _Node) -> None:
            if isinstance(node, _Lit):
                found.append(node.text)
            elif isinstance(node, _Seq):
                for item in node.items:
                    visit(item)
            elif isinstance(node, _Alt):
                for option in node.options:
                    visit(option)
            elif isinstance(node, _Rep):
                visit(node.item)

        for node in self.rules.values():
            visit(node)
        return found

    def _costs(self) -> dict[str, float]:
        """The fewest characters each rule can write (a fixpoint: rules refer to each other)."""
        cost = dict.fromkeys(self.rules, float("inf"))
        for _ in range(len(self.rules) + 1):
            changed = False
            for name, node in self.rules.items():
                value = self._node_cost(node, cost)
                if value < cost[name]:
                    cost[name], changed = value, True
            if not changed:
                break
        return cost

    def _node_cost(self, node: _Node, cost: dict[str, float]) -> float:
        if isinstance(node, _Lit):
            return len(node.text)
        if isinstance(node, _Class):
            return 1
        if isinstance(node, _Ref):
            return cost[node.name]
        if isinstance(node, _Seq):
            return sum(self._node_cost(item, cost) for item in node.items)
        if isinstance(node, _Alt):
            return min(self._node_cost(option, cost) for option in node.options)
        return node.least * self._node_cost(node.item, cost)

    def walk(self, rng: random.Random) -> Walk:
        out = Walk("")
        parts: list[str] = []
        self._emit(self.rules["root"], rng, parts, out, 0)
        out.text = "".join(parts)
        return out

    def _tight(self, parts: list[str], depth: int) -> bool:
        return depth > self.depth or sum(map(len, parts)) > self.length

    def _emit(self, node: _Node, rng: random.Random, parts: list[str], out: Walk, depth: int) -> None:
        if isinstance(node, _Lit):
            parts.append(node.text)
            out.literals.append(node.text)
        elif isinstance(node, _Class):
            pool = [ch for ch in self.pool if (ch in node.chars) != node.negated]
            parts.append(rng.choice(pool or sorted(node.chars)))
        elif isinstance(node, _Ref):
            self._emit(self.rules[node.name], rng, parts, out, depth + 1)
        elif isinstance(node, _Seq):
            for item in node.items:
                self._emit(item, rng, parts, out, depth)
        elif isinstance(node, _Alt):
            if self._tight(parts, depth):
                option = min(node.options, key=lambda o: self._node_cost(o, self.cost))
            else:
                option = rng.choice(node.options)
            self._emit(option, rng, parts, out, depth + 1)
        else:
            most = node.most if node.most is not None else node.least + _MAX_REPEAT
            count = node.least if self._tight(parts, depth) else rng.randint(node.least, min(most, node.least + 4))
            for _ in range(count):
                self._emit(node.item, rng, parts, out, depth + 1)
