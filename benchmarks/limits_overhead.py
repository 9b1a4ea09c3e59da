"""What the limits on hostile templates cost a normal analysis.

Two measurements, each against the same code with the limit turned off, interleaved so that load on the
machine falls on both alike:

- jinja2's sized operators (``*``, ``+``, ``%``, ``**`` go through the sandbox's ``call_binop``): the
  analysis of every corpus template under jinja2, with and without the interception;
- the command line's supervisor (a forked child under a memory cap): ``analyze`` of one template as a
  process, with ``TEMPLATE_ANALYZER_MEMORY_MB`` at its default and at 0 (no child).

Usage: python3 benchmarks/limits_overhead.py [--rounds 3] [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from analyzer import corpus
from analyzer.analysis import analyze
from analyzer.render import jinja2_engine
from analyzer.sources import load_template

ROOT = Path(__file__).resolve().parent.parent


def _analyse_all(paths: list[Path], intercept: bool) -> float:
    saved = jinja2_engine._DeadlineChecks.intercepted_binops
    if not intercept:
        jinja2_engine._DeadlineChecks.intercepted_binops = frozenset()
    try:
        templates = [load_template(str(p)) for p in paths]
        start = time.perf_counter()
        for template in templates:
            analyze(template, engine="jinja2")
        return time.perf_counter() - start
    finally:
        jinja2_engine._DeadlineChecks.intercepted_binops = saved


def _command(path: Path, memory: str) -> float:
    env = {**os.environ, "TEMPLATE_ANALYZER_MEMORY_MB": memory, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", str(path)], env=env, check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=3, help="analyses of the whole corpus, each way")
    options.add_argument("--runs", type=int, default=10, help="command-line runs, each way")
    args = options.parse_args()
    paths = corpus.corpus_templates(corpus.fetch())
    _analyse_all(paths, True)  # warm caches and imports
    timed: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for intercept in (True, False):
            timed[intercept].append(_analyse_all(paths, intercept))
    on, off = min(timed[True]), min(timed[False])
    change = on / off - 1
    print(f"jinja2 analysis of {len(paths)} templates: {on:.2f} s sized operators, {off:.2f} s without ({change:+.1%})")

    sample = next(p for p in paths if p.stem == "Qwen3-Coder")
    runs: dict[str, list[float]] = {"400": [], "0": []}
    for _ in range(args.runs):
        for memory in runs:
            runs[memory].append(_command(sample, memory))
    with_child, without = statistics.median(runs["400"]), statistics.median(runs["0"])
    print(
        f"`analyze {sample.name}` as a command: {with_child * 1000:.0f} ms under the supervisor, "
        f"{without * 1000:.0f} ms without ({(with_child - without) * 1000:+.0f} ms)"
    )


if __name__ == "__main__":
    main()
