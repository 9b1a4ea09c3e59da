"""Fuzz the parser with mutated model outputs over every corpus template with calls, and count what
went wrong: exceptions, streams that differ from the batch, text lost, output that is not strict UTF-8
JSON (the properties and mutations are in tests/helpers/fuzz.py). Half the outputs are first rewritten
the ways real models depart from their templates (tests/helpers/deviations.py: whitespace, framing
markers left out, literal syntax, separators, reasoning markers); those are also read by a strict
parser, which must keep the same properties and apply no tolerance. For each deviation the run counts
the outputs it rewrote and how many of them the lenient parser read with a tolerance of its kind.

Usage: python3 benchmarks/fuzz_parser.py [--count 1000000] [--seed 0] [--workers 2] [--large-rate 0.001]
       [--deviation-rate 0.5] [--deviations-only] [--failures FILE]

A megabyte-long output takes seconds to parse and to stream, a short one about a millisecond: at the
tests' rate (3% of mutation steps) a million outputs would take a day, so the long run makes them
rarer and prints how many it made.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import deviations, fuzz

from analyzer import corpus

LONG = 100_000  # characters: an output at least this long counts as a long one
EXAMPLES = 20  # problems printed
KEPT = 200  # failing outputs each batch keeps for --failures
KEPT_TEXT = 200_000  # characters of each kept output

_fuzzer: fuzz.Fuzzer | None = None
_failed_to_start = ""


def _start_worker() -> None:
    # A pool replaces a worker whose initializer raised, forever: keep the error for the first job instead.
    global _fuzzer, _failed_to_start
    try:
        _fuzzer = fuzz.Fuzzer(corpus.fetch())
    except Exception as exc:
        _failed_to_start = f"{type(exc).__name__}: {exc}"


@dataclass
class Tally:
    outputs: int = 0
    long_outputs: int = 0
    kinds: collections.Counter = field(default_factory=collections.Counter)  # (problem kind, strict)
    applied: collections.Counter = field(default_factory=collections.Counter)  # deviation name
    warned: collections.Counter = field(default_factory=collections.Counter)  # deviation name, with its warning
    examples: list[str] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.outputs += other.outputs
        self.long_outputs += other.long_outputs
        self.kinds.update(other.kinds)
        self.applied.update(other.applied)
        self.warned.update(other.warned)
        self.examples += other.examples[: EXAMPLES - len(self.examples)]
        self.failures += other.failures


def _share(job: tuple[int, int, float, float, bool]) -> Tally:
    count, seed, large_rate, deviation_rate, deviations_only = job
    if _fuzzer is None:
        raise RuntimeError(f"could not build the seeds and parsers: {_failed_to_start}")
    tally = Tally(outputs=count)
    outcomes = _fuzzer.run(
        count, seed, large_rate=large_rate, deviation_rate=deviation_rate, deviations_only=deviations_only
    )
    for outcome in outcomes:
        tally.long_outputs += len(outcome.text) >= LONG
        for name in outcome.deviations:
            tally.applied[name] += 1
            tally.warned[name] += bool(outcome.warned & deviations.BY_NAME[name].warnings)
        for problem in outcome.problems:
            tally.kinds[fuzz.problem_kind(problem), problem.startswith(fuzz.STRICT)] += 1
            if len(tally.examples) < EXAMPLES:
                applied = f" [{', '.join(outcome.deviations)}]" if outcome.deviations else ""
                tally.examples.append(f"{outcome.seed.template}{applied}: {problem}: {outcome.text[:300]!a}")
        if outcome.problems and len(tally.failures) < KEPT:
            tally.failures.append(
                {
                    "template": outcome.seed.template,
                    "deviations": list(outcome.deviations),
                    "problems": outcome.problems,
                    "text": outcome.text[:KEPT_TEXT],
                }
            )
    return tally


def _report(tally: Tally, seed: int, elapsed: float) -> None:
    long_outputs = f"{tally.long_outputs:,} of them {LONG:,}+ characters"
    print(f"outputs: {tally.outputs:,} (seed {seed}), {long_outputs}, in {elapsed:.0f} s")
    for kind in fuzz.PROBLEM_KINDS:
        total = tally.kinds[kind, False] + tally.kinds[kind, True]
        print(f"  {kind:36} {total} (strict parser: {tally.kinds[kind, True]})")
    rewritten = sum(tally.applied.values())
    print(f"deviations applied: {rewritten:,} (outputs rewritten, of them read with a tolerance of the class's kind)")
    for kind in deviations.CLASSES:
        print(f"  {kind}")
        for deviation in deviations.DEVIATIONS:
            if deviation.kind == kind:
                applied, warned = tally.applied[deviation.name], tally.warned[deviation.name]
                share = f"{warned / applied:.1%}" if applied else "-"
                print(f"    {deviation.name:42} {applied:>9,} {warned:>9,} ({share})")
    for example in tally.examples:
        print("  e.g.", example)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=1_000_000)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--workers", type=int, default=2)
    options.add_argument(
        "--large-rate", type=float, default=0.001, help="share of mutation steps that make an output very long"
    )
    options.add_argument(
        "--deviation-rate", type=float, default=fuzz.DEVIATION_RATE, help="share of outputs rewritten by a deviation"
    )
    options.add_argument(
        "--deviations-only", action="store_true", help="every output a deviation of a real output (and a canary)"
    )
    options.add_argument("--failures", type=Path, help="write each failing output (up to 200 a batch) as JSON lines")
    args = options.parse_args()
    for name in ("count", "workers"):
        if getattr(args, name) < 1:
            options.error(f"--{name} must be at least 1")
    for name in ("large_rate", "deviation_rate"):
        if not 0 <= getattr(args, name) <= 1:
            options.error(f"--{name.replace('_', '-')} must be between 0 and 1")
    batches = max(1, min(1000, args.count // 500))
    jobs = [
        (
            args.count // batches + (1 if n < args.count % batches else 0),
            args.seed * 100_000 + n,
            args.large_rate,
            args.deviation_rate,
            args.deviations_only,
        )
        for n in range(batches)
    ]
    start, tally = time.perf_counter(), Tally()
    print("building seeds and parsers in each worker ...", file=sys.stderr, flush=True)
    with multiprocessing.Pool(args.workers, initializer=_start_worker) as pool:
        for share in pool.imap_unordered(_share, jobs):
            tally.add(share)
            elapsed = time.perf_counter() - start
            print(
                f"\r{tally.outputs:,} of {args.count:,} outputs, {sum(tally.kinds.values())} problems, {elapsed:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - start
    print(file=sys.stderr)
    _report(tally, args.seed, elapsed)
    if args.failures:
        with args.failures.open("w", encoding="utf-8") as out:
            for failure in tally.failures:
                out.write(json.dumps(failure, ensure_ascii=True) + "\n")
    sys.exit(1 if tally.kinds else 0)


if __name__ == "__main__":
    main()
