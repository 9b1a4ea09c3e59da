"""Fuzz the parser with mutated model outputs over every corpus template with calls, and count what
went wrong: exceptions, streams that differ from the batch, text lost, output that is not strict UTF-8
JSON (the properties and mutations are in tests/helpers/fuzz.py).

Usage: python3 benchmarks/fuzz_parser.py [--count 1000000] [--seed 0] [--workers 2] [--large-rate 0.001]

A megabyte-long output takes seconds to parse and to stream, a short one about a millisecond: at the
tests' rate (3% of mutation steps) a million outputs would take a day, so the long run makes them
rarer and prints how many it made.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import fuzz

from analyzer import corpus

LONG = 100_000  # characters: an output at least this long counts as a long one

_fuzzer: fuzz.Fuzzer | None = None
_failed_to_start = ""


def _start_worker() -> None:
    # A pool replaces a worker whose initializer raised, forever: keep the error for the first job instead.
    global _fuzzer, _failed_to_start
    try:
        _fuzzer = fuzz.Fuzzer(corpus.fetch())
    except Exception as exc:
        _failed_to_start = f"{type(exc).__name__}: {exc}"


def _share(job: tuple[int, int, float]) -> tuple[int, int, collections.Counter, list[str]]:
    count, seed, large_rate = job
    if _fuzzer is None:
        raise RuntimeError(f"could not build the seeds and parsers: {_failed_to_start}")
    kinds: collections.Counter = collections.Counter()
    examples: list[str] = []
    long_outputs = 0
    for item, text, problems in _fuzzer.run(count, seed, large_rate=large_rate):
        long_outputs += len(text) >= LONG
        for problem in problems:
            kinds[problem.split(":")[0]] += 1
            if len(examples) < 20:
                examples.append(f"{item.template}: {problem}: {text[:300]!a}")
    return count, long_outputs, kinds, examples


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=1_000_000)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--workers", type=int, default=2)
    options.add_argument(
        "--large-rate", type=float, default=0.001, help="share of mutation steps that make an output very long"
    )
    args = options.parse_args()
    batches = max(1, min(1000, args.count // 500))
    jobs = [
        (args.count // batches + (1 if n < args.count % batches else 0), args.seed * 100_000 + n, args.large_rate)
        for n in range(batches)
    ]
    start, done, long_outputs, kinds, examples = time.perf_counter(), 0, 0, collections.Counter(), []
    print("building seeds and parsers in each worker ...", file=sys.stderr, flush=True)
    with multiprocessing.Pool(args.workers, initializer=_start_worker) as pool:
        for count, long_count, found, seen in pool.imap_unordered(_share, jobs):
            done += count
            long_outputs += long_count
            kinds.update(found)
            examples += seen[: 20 - len(examples)]
            elapsed = time.perf_counter() - start
            print(
                f"\r{done:,} of {args.count:,} outputs, {sum(kinds.values())} problems, {elapsed:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - start
    print(file=sys.stderr)
    print(f"outputs: {done:,} (seed {args.seed}), {long_outputs:,} of them {LONG:,}+ characters, in {elapsed:.0f} s")
    for kind in ("batch parse raised", "stream", "canary", "message is not strict UTF-8 JSON"):
        print(f"  {kind:36} {sum(n for k, n in kinds.items() if k.startswith(kind))}")
    for example in examples:
        print("  e.g.", example)
    sys.exit(1 if kinds else 0)


if __name__ == "__main__":
    main()
