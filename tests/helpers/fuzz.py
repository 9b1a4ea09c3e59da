"""Fuzzing the parser with mutated model outputs: seeds, mutations, and the properties every parse must keep.

Seeds are what each corpus template itself writes for calls (the round-trip cases). Mutations are what
goes wrong in real output: a reply cut anywhere, a marker dropped, doubled or swapped, random bytes
(control characters, NUL, CRLF, lone surrogates), deep nesting, numbers out of range, very long
content, thousands of calls. Inserted *canaries* (short words that occur nowhere else) check that
nothing is lost. The properties, for every output:

- neither a batch parse nor a stream raises;
- a stream fed in random chunks (and one character at a time, for short outputs) gives the batch message;
- every canary comes back in the content, the reasoning, a call (id, name or arguments) or an error's text;
- the message serialises as strict JSON (no NaN or Infinity) and encodes as UTF-8 (no lone surrogates).

``benchmarks/fuzz_parser.py`` runs a million outputs; ``tests/fuzz`` a bounded, seeded sample in CI.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from analyzer.backends.parser import Message, Parser, apply
from analyzer.description import FormatDescription
from analyzer.lower import lower
from helpers.golden import compile_for
from helpers.roundtrip import CASES, TOOLS, case_outputs, descriptions

CANARY = "Qzvk"  # plus a number: letters no template writes, no marker is made of


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


def mutate(
    rng: random.Random, text: str, markers: list[str], *, large_rate: float = LARGE_RATE
) -> tuple[str, list[str]]:
    """One mutated output and the canaries it holds; ``large_rate`` of the steps make it very long."""
    canaries: list[str] = []
    for _ in range(rng.randint(1, 3)):
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


def problems(parser: Parser, text: str, canaries: list[str], rng: random.Random) -> list[str]:
    """What is wrong with parsing ``text``: nothing, for a sound parser."""
    try:
        batch = parser.parse(text).to_dict()
    except Exception as exc:
        return [f"batch parse raised {type(exc).__name__}: {exc}"[:300]]
    found = []
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
    return found


def _chunk_plans(rng: random.Random, text: str) -> list[str]:
    plans = ["random"]
    if len(text) <= 2000:
        plans.append("1")
    return plans


def _streamed(parser: Parser, text: str, plan: str, rng: random.Random) -> dict:
    # A continuation's deltas carry the output's text alone: folded onto the prefill, they give the message.
    prefill = parser.continuing
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
    return "\n".join(parts)


# Each output is also read as continuing a prefilled message (continue_final_message), its content or its
# reasoning; the prefill holds a canary of its own, which must come back too.
PREFILL_CANARY = f"{CANARY}P"
PREFILLS = ({"content": f"{PREFILL_CANARY} "}, {"reasoning_content": f"{PREFILL_CANARY} "})


class Fuzzer:
    """Seeds and parsers for every corpus template with calls, built once, then any number of runs."""

    def __init__(self, corpus_dir: Path) -> None:
        self.pool = seeds(corpus_dir)
        self.parsers = {item.template: Parser(item.description, TOOLS) for item in self.pool}
        self.continuing = {
            item.template: [Parser(item.description, TOOLS, continuing=prefill) for prefill in PREFILLS]
            for item in self.pool
        }
        self.markers = {item.template: markers_of(item.description) for item in self.pool}

    def run(self, count: int, seed: int, *, large_rate: float = LARGE_RATE) -> Iterator[tuple[Seed, str, list[str]]]:
        """(seed, mutated output, its problems) for ``count`` outputs spread over every template."""
        rng = random.Random(seed)
        other = random.Random(~seed)  # for the continuations: the outputs stay those of the seed
        for _ in range(count):
            item = rng.choice(self.pool)
            text, canaries = mutate(rng, item.text, self.markers[item.template], large_rate=large_rate)
            found = problems(self.parsers[item.template], text, canaries, rng)
            continuing = other.choice(self.continuing[item.template])
            found += [
                f"continuing {continuing.continuing}: {problem}"
                for problem in problems(continuing, text, [*canaries, PREFILL_CANARY], other)
            ]
            yield item, text, found


def run(corpus_dir: Path, count: int, seed: int = 0, *, large: bool = True) -> Iterator[tuple[Seed, str, list[str]]]:
    """One run with its own seeds and parsers (for a test; a long run builds a ``Fuzzer`` once)."""
    return Fuzzer(corpus_dir).run(count, seed, large_rate=LARGE_RATE if large else 0.0)
