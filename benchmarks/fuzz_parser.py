"""Fuzz the parser with mutated model outputs over every corpus template with calls, and count what
went wrong: exceptions, streams that differ from the batch, text lost, output that is not strict UTF-8
JSON (the properties and mutations are in tests/helpers/fuzz.py).

Usage: python3 benchmarks/fuzz_parser.py [--count 1000000] [--seed 0] [--workers 2] [--no-large]
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


def _share(job: tuple[int, int, bool]) -> tuple[int, collections.Counter, list[str]]:
    count, seed, large = job
    kinds: collections.Counter = collections.Counter()
    examples: list[str] = []
    for item, text, problems in fuzz.run(corpus.fetch(), count, seed, large=large):
        for problem in problems:
            kind = problem.split(":")[0]
            kinds[kind] += 1
            if len(examples) < 20:
                examples.append(f"{item.template}: {problem}: {text[:300]!a}")
    return count, kinds, examples


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=1_000_000)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--workers", type=int, default=2)
    options.add_argument("--no-large", action="store_true", help="leave out the megabyte-long outputs")
    args = options.parse_args()
    batches = 200
    jobs = [
        (args.count // batches + (1 if n < args.count % batches else 0), args.seed * 100_000 + n, not args.no_large)
        for n in range(batches)
    ]
    start, done, kinds, examples = time.perf_counter(), 0, collections.Counter(), []
    with multiprocessing.Pool(args.workers) as pool:
        for count, found, seen in pool.imap_unordered(_share, jobs):
            done += count
            kinds.update(found)
            examples += seen[: 20 - len(examples)]
            print(
                f"\r{done:,} outputs, {sum(kinds.values())} problems, {time.perf_counter() - start:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
    print(file=sys.stderr)
    print(f"outputs: {done:,} (seed {args.seed}) in {time.perf_counter() - start:.0f} s")
    for kind in ("batch parse raised", "stream", "canary", "message is not strict UTF-8 JSON"):
        print(f"  {kind:36} {sum(n for k, n in kinds.items() if k.startswith(kind))}")
    for example in examples:
        print("  e.g.", example)
    sys.exit(1 if kinds else 0)


if __name__ == "__main__":
    main()
