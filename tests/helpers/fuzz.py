"""Fuzzing the parser with mutated model outputs: seeds, mutations, and the properties every parse must keep.

Seeds are what each corpus template itself writes for calls (the round-trip cases). Mutations are what
goes wrong in real output: a reply cut anywhere, a marker dropped, doubled or swapped, random bytes
(control characters, NUL, CRLF, lone surrogates), deep nesting, numbers out of range, very long
content, thousands of calls; and the ways real models depart from what their templates write, each
class derived from the output shape (``deviations.py``: whitespace, framing markers left out, other
literal syntax, other separators, reasoning markers). Inserted *canaries* (short words that occur
nowhere else) check that nothing is lost. The properties, for every output:

- neither a batch parse nor a stream raises;
- a stream fed in random chunks (and one character at a time, for short outputs) gives the batch message;
- every canary comes back in the content, the reasoning, a call (id, name or arguments) or an error's text;
- the message serialises as strict JSON (no NaN or Infinity) and encodes as UTF-8 (no lone surrogates).

An output with a deviation is also read by a strict parser (``strict=True``), which must keep the same
properties and record no tolerance; the lenient parser's warnings are counted per deviation, so that a
reader sees each class exercised (how often a class is read is the parser's business, not asserted).

``benchmarks/fuzz_parser.py`` runs a million outputs; ``tests/fuzz`` a bounded, seeded sample in CI.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.backends.parser import Message, Parser, apply
from analyzer.description import FormatDescription
from analyzer.lower import lower
from helpers.deviations import CANARY, DEVIATIONS, Deviation, Layout
from helpers.golden import compile_for
from helpers.roundtrip import CASES, TOOLS, case_outputs, descriptions

__all__ = ["CANARY", "Fuzzer", "Outcome", "Seed", "mutate", "problem_kind", "problems", "run", "seeds"]

TOOL_NAMES = [tool["function"]["name"] for tool in TOOLS]


@dataclass(frozen=True)
class Seed:
    template: str
    description: FormatDescription
    text: str


def seeds(corpus_dir: Path) -> list[Seed]:
    found = []
    for description in descriptions():
        compiled = compile_for(description, corpus_dir)
        for _, text in case_outputs(description, compiled, CASES):
            found.append(Seed(description.template.name, description, text))
    return found


def markers_of(description: FormatDescription) -> list[str]:
    return [marker for marker in lower(description).markers() if marker]


# --------------------------------------------------------------------------- mutations

_JUNK = [
    "\x00",
    "\r\n",
    "\ud800",
    "\udc00",
    "\u2028",
    "\x7f",
    "\ufeff",
    "\\",
    '"',
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    "'",
    "\t",
    "é",
    "😀",
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    "99999999999999999999999",
    "True",
    "None",
]


LARGE_RATE = 0.03  # the share of mutation steps that make an output a megabyte long
DEVIATION_RATE = 0.5  # the share of outputs rewritten by a deviation class first


def mutate(
    rng: random.Random,
    text: str,
    markers: list[str],
    *,
    large_rate: float = LARGE_RATE,
    steps: int | None = None,
    canaries: list[str] | None = None,
) -> tuple[str, list[str]]:
    """One mutated output and the canaries it holds (``canaries``: those it held already); ``steps``
    mutation steps (1 to 3 when None), ``large_rate`` of them make it very long."""
    canaries = list(canaries or [])
    for _ in range(rng.randint(1, 3) if steps is None else steps):
        kind = rng.random()
        if kind < 0.2:
            text = text[: rng.randint(0, len(text))]
        elif kind < 0.35 and markers:
            text = _marker_edit(rng, text, markers)
        elif kind < 0.55:
            at = rng.randint(0, len(text))
            text = text[:at] + "".join(rng.choice(_JUNK) for _ in range(rng.randint(1, 4))) + text[at:]
        elif kind < 0.6:
            at = rng.randint(0, len(text))
            depth = rng.choice([50, 500, 5000])
            text = text[:at] + rng.choice(["[", '{"a":', "("]) * depth + text[at:]
        elif kind < 0.6 + large_rate:
            text = _long(rng, text)
        else:
            canary = f"{CANARY}{len(canaries)}{rng.randint(0, 999)}"
            at = rng.randint(0, len(text))
            text = text[:at] + canary + text[at:]
            canaries.append(canary)
    # A canary lost to a later cut is no loss.
    return text, [canary for canary in canaries if canary in text]


def deviate(
    rng: random.Random, text: str, layout: Layout, choices: list[Deviation]
) -> tuple[str, list[str], tuple[str, ...]]:
    """``text`` rewritten by one deviation class (two, now and then) of ``choices``: the text, the
    canaries the rewrites put in, and the names of those applied."""
    canaries: list[str] = []
    applied: list[str] = []
    for _ in range(1 if rng.random() < 0.75 else 2):
        for _attempt in range(4):  # a rewrite finds nothing to rewrite in some texts: try another
            deviation = rng.choice(choices)
            if deviation.name in applied:
                continue
            edit = deviation.rewrite(rng, text, layout)
            if edit is not None:
                text, added = edit
                canaries += added
                applied.append(deviation.name)
                break
    return text, canaries, tuple(applied)


def _marker_edit(rng: random.Random, text: str, markers: list[str]) -> str:
    present = [m for m in markers if m in text]
    if not present:
        return text
    marker = rng.choice(present)
    at = rng.choice([i for i in range(len(text)) if text.startswith(marker, i)])
    choice = rng.random()
    if choice < 0.4:
        return text[:at] + text[at + len(marker) :]  # dropped
    if choice < 0.7:
        return text[:at] + marker + text[at:]  # doubled
    other = rng.choice(present)
    return text[:at] + other + text[at + len(marker) :]  # swapped


def _long(rng: random.Random, text: str) -> str:
    if rng.random() < 0.5:
        return "x y <z> " * 125_000 + text  # 1 MB of content
    return text * rng.choice([100, 1000])  # many calls


# --------------------------------------------------------------------------- properties


STRICT = "strict parser: "  # before a problem a strict parser had
CONTINUING = "continuing "  # before the prefill of a parser that continues a prefilled message
PROBLEM_KINDS = (
    "batch parse raised",
    "stream",
    "canary",
    "message is not strict UTF-8 JSON",
    "strict parse applied a tolerance",
)


def problem_kind(problem: str) -> str:
    """Which of ``PROBLEM_KINDS`` a problem is, read as continuing a prefilled message or not."""
    body = problem.removeprefix(STRICT)
    if body.startswith(CONTINUING):  # "continuing Prefill(...): <problem>"
        body = body.split("): ", 1)[-1]
    for kind in PROBLEM_KINDS:
        if body.startswith(kind):
            return kind
    # (not StopIteration: raised inside a pool's job it would end the run's loop as if all jobs were done)
    raise ValueError(f"a problem of no known kind: {problem[:200]!r}")


def problems(parser: Parser, text: str, canaries: list[str], rng: random.Random) -> list[str]:
    """What is wrong with parsing ``text``: nothing, for a sound parser."""
    return _checked(parser, text, canaries, rng)[0]


def _checked(parser: Parser, text: str, canaries: list[str], rng: random.Random) -> tuple[list[str], dict[str, Any]]:
    """The problems of parsing ``text``, and the batch message ({} when the batch parse raised)."""
    try:
        batch = parser.parse(text).to_dict()
    except Exception as exc:
        return [f"batch parse raised {type(exc).__name__}: {exc}"[:300]], {}
    found = []
    if parser.strict and batch.get("warnings"):
        kinds = sorted({warning["kind"] for warning in batch["warnings"]})
        found.append(f"strict parse applied a tolerance: {', '.join(kinds)}")
    try:
        encoded = json.dumps(batch, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        found.append(f"message is not strict UTF-8 JSON: {exc}"[:300])
        encoded = json.dumps(batch, ensure_ascii=True)
    for size in _chunk_plans(rng, text):
        try:
            streamed = _streamed(parser, text, size, rng)
        except Exception as exc:
            found.append(f"stream ({size}) raised {type(exc).__name__}: {exc}"[:300])
            break
        if streamed != batch:
            found.append(f"stream ({size}) differs from batch")
            break
    kept = _kept_text(batch)
    for canary in canaries:
        if canary not in kept:
            found.append(f"canary {canary} lost")
    return found, batch


def _chunk_plans(rng: random.Random, text: str) -> list[str]:
    plans = ["random"]
    if len(text) <= 2000:
        plans.append("1")
    return plans


def _streamed(parser: Parser, text: str, plan: str, rng: random.Random) -> dict:
    # A continuation's deltas carry the output's text alone: folded onto the prefill, they give the message.
    prefill = getattr(parser, "continuing", None)  # (a stand-in parser in the tests has none)
    stream, at = parser.stream(), 0
    message = Message(prefill.content, prefill.reasoning_content) if prefill is not None else Message()
    while at < len(text):
        size = 1 if plan == "1" else rng.choice([1, 2, 3, 7, 16, 64, 512, 4096])
        for delta in stream.feed(text[at : at + size]):
            apply(message, delta)
        at += size
    for delta in stream.finish():
        apply(message, delta)
    return message.to_dict()


def _kept_text(message: dict) -> str:
    parts = [message.get("content") or "", message.get("reasoning_content") or ""]
    for call in message.get("tool_calls") or []:
        parts += [call["id"], call["function"]["name"], call["function"]["arguments"]]
    for error in message.get("errors") or []:
        parts.append(error.get("text", ""))
    for warning in message.get("warnings") or []:
        parts.append(warning.get("text", ""))  # what a tolerance left out
    return "\n".join(parts)


# Each output is also read as continuing a prefilled message (continue_final_message), its content or its
# reasoning; the prefill holds a canary of its own, which must come back too.
PREFILL_CANARY = f"{CANARY}P"
PREFILLS = ({"content": f"{PREFILL_CANARY} "}, {"reasoning_content": f"{PREFILL_CANARY} "})


@dataclass(frozen=True)
class Outcome:
    """One fuzzed output: its seed, its text, the deviations applied to it (names, in order), what
    went wrong (a strict parser's problems start with ``STRICT``), and the tolerance kinds the lenient
    parser recorded."""

    seed: Seed
    text: str
    deviations: tuple[str, ...]
    problems: list[str]
    warned: frozenset[str]
    canaries: tuple[str, ...] = ()  # the canaries the text holds


class Fuzzer:
    """Seeds and parsers for every corpus template with calls, built once, then any number of runs."""

    def __init__(self, corpus_dir: Path) -> None:
        self.pool = seeds(corpus_dir)
        self.parsers = {item.template: Parser(item.description, TOOLS) for item in self.pool}
        self.continuing = {
            item.template: [Parser(item.description, TOOLS, continuing=prefill) for prefill in PREFILLS]
            for item in self.pool
        }
        self.strict_parsers = {item.template: Parser(item.description, TOOLS, strict=True) for item in self.pool}
        self.markers = {item.template: markers_of(item.description) for item in self.pool}
        self.layouts = {item.template: Layout.of(lower(item.description), TOOL_NAMES) for item in self.pool}
        # The deviation classes each format's shape admits.
        self.deviations = {
            template: [deviation for deviation in DEVIATIONS if deviation.applies(layout)]
            for template, layout in self.layouts.items()
        }

    def run(
        self,
        count: int,
        seed: int,
        *,
        large_rate: float = LARGE_RATE,
        deviation_rate: float = DEVIATION_RATE,
        deviations_only: bool = False,
    ) -> Iterator[Outcome]:
        """``count`` outputs spread over every template: ``deviation_rate`` of them (all, with
        ``deviations_only``) rewritten by a deviation class first; the other mutations then, none but
        a canary with ``deviations_only``."""
        rng = random.Random(seed)
        other = random.Random(~seed)  # for the continuations: the outputs stay those of the seed
        for _ in range(count):
            item = rng.choice(self.pool)
            text, canaries, applied = item.text, [], ()
            choices = self.deviations[item.template]
            if choices and (deviations_only or rng.random() < deviation_rate):
                text, canaries, applied = deviate(rng, text, self.layouts[item.template], choices)
            if deviations_only:
                text, canaries = _with_canary(rng, text, canaries)
            else:
                markers = self.markers[item.template]
                steps = rng.randint(0, 2) if applied else None
                text, canaries = mutate(rng, text, markers, large_rate=large_rate, steps=steps, canaries=canaries)
            outcome = self.check(item, text, canaries, applied, rng)
            continuing = other.choice(self.continuing[item.template])
            outcome.problems.extend(
                f"{CONTINUING}{continuing.continuing}: {problem}"
                for problem in problems(continuing, text, [*outcome.canaries, PREFILL_CANARY], other)
            )
            yield outcome

    def sweep(self, seed: int, times: int) -> Iterator[Outcome]:
        """Every deviation class on every format whose shape admits it, ``times`` outputs each, each
        rewritten from a seed of that format (tried over its seeds in turn, as some seeds hold nothing
        a class rewrites: one call has no separator)."""
        rng = random.Random(seed)
        by_template: dict[str, list[Seed]] = {}
        for item in self.pool:
            by_template.setdefault(item.template, []).append(item)
        for template, items in by_template.items():
            layout = self.layouts[template]
            for deviation in self.deviations[template]:
                made = 0
                for attempt in range(times * len(items)):
                    item = items[attempt % len(items)]
                    edit = deviation.rewrite(rng, item.text, layout)
                    if edit is None:
                        continue
                    text, canaries = _with_canary(rng, *edit)
                    yield self.check(item, text, canaries, (deviation.name,), rng)
                    made += 1
                    if made == times:
                        break

    def check(
        self, item: Seed, text: str, canaries: list[str], applied: tuple[str, ...], rng: random.Random
    ) -> Outcome:
        """The outcome of parsing ``text``; a strict parser reads it too when a deviation was applied."""
        canaries = [canary for canary in canaries if canary in text]  # one a later step cut off is no loss
        found, message = _checked(self.parsers[item.template], text, canaries, rng)
        if applied:
            strict, _ = _checked(self.strict_parsers[item.template], text, canaries, rng)
            found += [STRICT + problem for problem in strict]
        warned = frozenset(warning["kind"] for warning in message.get("warnings", ()))
        return Outcome(item, text, applied, found, warned, tuple(canaries))


def _with_canary(rng: random.Random, text: str, canaries: list[str]) -> tuple[str, list[str]]:
    """``text`` with a canary put anywhere, now and then (a marker cut by it is a deviation too)."""
    if rng.random() < 0.5:
        return text, canaries
    canary = f"{CANARY}c{rng.randint(0, 9999)}"
    at = rng.randint(0, len(text))
    return text[:at] + canary + text[at:], [*canaries, canary]


def run(corpus_dir: Path, count: int, seed: int = 0, *, large: bool = True) -> Iterator[Outcome]:
    """One run with its own seeds and parsers (for a test; a long run builds a ``Fuzzer`` once)."""
    return Fuzzer(corpus_dir).run(count, seed, large_rate=LARGE_RATE if large else 0.0)
