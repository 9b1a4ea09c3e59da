"""A bounded, seeded run of the parser fuzzer (tests/helpers/fuzz.py) over every corpus template with
calls: no exception, streams equal to the batch, no text lost, strict UTF-8 JSON out. The full run
(a million outputs) is ``python3 benchmarks/fuzz_parser.py``."""

from __future__ import annotations

from pathlib import Path

from helpers import fuzz


def _failures(corpus_dir: Path, count: int, seed: int, large: bool) -> list[str]:
    found = []
    for item, text, problems in fuzz.run(corpus_dir, count, seed, large=large):
        found += [f"{item.template}: {problem}: {text[:200]!a}" for problem in problems]
    return found


def test_mutated_outputs_parse_soundly(corpus_dir: Path) -> None:
    failures = _failures(corpus_dir, 4000, seed=11, large=False)
    assert not failures, "\n".join(failures[:10])


def test_very_long_outputs_parse_soundly(corpus_dir: Path) -> None:
    """A megabyte of content, or a call repeated a thousand times, in random chunks."""
    failures = _failures(corpus_dir, 40, seed=12, large=True)
    assert not failures, "\n".join(failures[:10])


def test_the_fuzzer_sees_what_it_looks_for(corpus_dir: Path) -> None:
    """The properties can fail: a parser that drops a canary, or whose stream differs, is caught."""
    import random

    from helpers.golden import golden
    from helpers.roundtrip import TOOLS

    from analyzer.backends.parser import Parser

    class Lossy(Parser):
        def parse(self, text):  # drops everything after the first canary
            return super().parse(text.split(fuzz.CANARY)[0])

    parser = Lossy(golden("Qwen-Qwen2.5-7B-Instruct"), TOOLS)
    found = fuzz.problems(parser, f"Hello {fuzz.CANARY}1 there", [f"{fuzz.CANARY}1"], random.Random(0))
    assert any("lost" in problem for problem in found) and any("differs" in problem for problem in found)
