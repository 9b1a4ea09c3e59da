"""Median analysis time per corpus template and the total, beside llama.cpp's autoparser.

llama.cpp's figures (template load + analysis + grammar build, in process, C++, commit 0c1e57098) were
measured on this machine type by the team: median 16 ms per template, 1.2 s for the 70 templates. Our aim
is at most half of that. What we time: load the template from disk, compile it, and analyse it, each
template in a fresh process state (no render cache carried between templates).

Start-up, as a user meets it: a fresh `template-analyzer --version` and a fresh `template-analyzer analyze`
of one corpus template (median wall time of --runs processes), beside a bare `python3 -c pass` measured in
the same run, the three commands taking turns. Targets: under 80 ms and 120 ms.

Usage: python3 benchmarks/analysis_speed.py [--engine minijinja|jinja2] [--rounds N] [--runs N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from analyzer import corpus
from analyzer.analysis import analyze
from analyzer.sources import load_template

LLAMA_CPP_MEDIAN_MS = 16.0
LLAMA_CPP_TOTAL_S = 1.2
VERSION_TARGET_MS, ANALYZE_TARGET_MS = 80.0, 120.0
START_UP_TEMPLATE = "Qwen-Qwen3-0.6B"


def fresh_process_ms(commands: list[list[str]], runs: int) -> list[float]:
    """Median wall time of ``runs`` fresh processes of each command, the commands taking turns so that
    a change in the machine's load slows each alike (one warm-up of each first, so the disk cache is hot
    and the bytecode is written). A user's install keeps compiled bytecode; an environment that sets
    PYTHONDONTWRITEBYTECODE (this team's machines do) would otherwise time compiling every module."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    for argv in commands:
        subprocess.run(argv, capture_output=True, check=True, env=env)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for argv, taken in zip(commands, times, strict=True):
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env=env)
            taken.append(time.perf_counter() - t0)
    return [statistics.median(taken) * 1000 for taken in times]


def print_start_up(paths: list[Path], runs: int) -> None:
    template = next((p for p in paths if p.stem == START_UP_TEMPLATE), paths[0])
    command = [sys.executable, "-m", "analyzer"]
    bare, version, analyse = fresh_process_ms(
        [[sys.executable, "-c", "pass"], [*command, "--version"], [*command, "analyze", str(template)]], runs
    )
    print(f"start-up, median of {runs} fresh processes each, taking turns (python3 -c pass: {bare:.0f} ms)")
    print(f"{'':28} {'ms':>8} {'target':>8} {'less python':>12}")
    print(f"{'--version':28} {version:8.0f} {VERSION_TARGET_MS:8.0f} {version - bare:12.0f}")
    print(f"{'analyze ' + template.stem:28} {analyse:8.0f} {ANALYZE_TARGET_MS:8.0f} {analyse - bare:12.0f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="minijinja")
    parser.add_argument("--rounds", type=int, default=3, help="repeat the corpus; the best round counts")
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per start-up figure")
    args = parser.parse_args()
    paths = corpus.corpus_templates(corpus.fetch(progress=lambda line: print(line, file=sys.stderr)))
    print_start_up(paths, args.runs)

    best_total, best_times = float("inf"), []
    for round_ in range(args.rounds):
        gc.collect()
        times = []
        started = time.perf_counter()
        for i, path in enumerate(paths, 1):
            t0 = time.perf_counter()
            analyze(load_template(str(path)), engine=args.engine)
            times.append(time.perf_counter() - t0)
            print(f"\rround {round_ + 1}/{args.rounds}: {i}/{len(paths)}", end="", file=sys.stderr)
        total = time.perf_counter() - started
        print(file=sys.stderr)
        if total < best_total:
            best_total, best_times = total, times

    median_ms = statistics.median(best_times) * 1000
    slowest = sorted(zip(best_times, (p.stem for p in paths), strict=True), reverse=True)[:5]
    print(f"engine: {args.engine}; templates: {len(paths)}; best of {args.rounds} rounds")
    print(f"{'':28} {'template-analyzer':>18} {'llama.cpp':>10} {'ratio':>7}")
    print(
        f"{'median per template (ms)':28} {median_ms:18.1f} {LLAMA_CPP_MEDIAN_MS:10.1f} "
        f"{median_ms / LLAMA_CPP_MEDIAN_MS:7.2f}"
    )
    print(
        f"{'total for the corpus (s)':28} {best_total:18.2f} {LLAMA_CPP_TOTAL_S:10.2f} "
        f"{best_total / LLAMA_CPP_TOTAL_S:7.2f}"
    )
    print("target: ratio <= 0.50 on both lines")
    print("slowest: " + ", ".join(f"{name} {t * 1000:.0f} ms" for t, name in slowest))


if __name__ == "__main__":
    main()
