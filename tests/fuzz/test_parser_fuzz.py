"""A bounded, seeded run of the parser fuzzer (tests/helpers/fuzz.py) over every corpus template with
calls: no exception, streams equal to the batch, no text lost, strict UTF-8 JSON out; and every
deviation class (tests/helpers/deviations.py) on every format whose shape admits it, read by a lenient
and a strict parser. The full run (a million outputs) is ``python3 benchmarks/fuzz_parser.py``."""

from __future__ import annotations

import collections
import copy
import random
import types
from pathlib import Path

import pytest
from helpers import deviations, fuzz
from helpers.golden import golden
from helpers.roundtrip import TOOLS

from analyzer.backends.parser import Parser
from analyzer.lower import lower
from analyzer.runtime.message import Prefill
from analyzer.runtime.shape import JsonCallObject

SWEEP_TIMES = 3  # outputs per deviation class and format


def _failures(outcomes: list[fuzz.Outcome]) -> list[str]:
    found = []
    for outcome in outcomes:
        applied = f" [{', '.join(outcome.deviations)}]" if outcome.deviations else ""
        found += [
            f"{outcome.seed.template}{applied}: {problem}: {outcome.text[:200]!a}" for problem in outcome.problems
        ]
    return found


@pytest.fixture(scope="module")
def fuzzer(corpus_dir: Path) -> fuzz.Fuzzer:
    return fuzz.Fuzzer(corpus_dir)


@pytest.fixture(scope="module")
def sweep(fuzzer: fuzz.Fuzzer) -> list[fuzz.Outcome]:
    return list(fuzzer.sweep(seed=13, times=SWEEP_TIMES))


def test_mutated_outputs_parse_soundly(fuzzer: fuzz.Fuzzer) -> None:
    failures = _failures(list(fuzzer.run(4000, seed=11, large_rate=0.0)))
    assert not failures, "\n".join(failures[:10])


def test_with_fresh_ids_call_objects_carrying_ids_parse_soundly(fuzzer: fuzz.Fuzzer) -> None:
    """The formats whose call objects hold an id or count (Mistral Nemo, Command R7B, Cohere2), read
    with ``fresh_ids`` as serve reads them, so their arguments stream: no exception, streams equal to
    the batch. (The model's id is not kept under fresh_ids, by design: a canary in it is not looked for.)"""
    with_ids = {
        item.template
        for item in fuzzer.pool
        if any(
            isinstance(part, JsonCallObject) and (part.layout.id_path or part.layout.index_path)
            for part in lower(item.description).calls.call
        )
    }
    assert len(with_ids) >= 3, with_ids
    fresh = copy.copy(fuzzer)
    fresh.pool = [item for item in fuzzer.pool if item.template in with_ids]
    fresh.parsers = {item.template: Parser(item.description, TOOLS, fresh_ids=True) for item in fresh.pool}
    fresh.strict_parsers = {
        item.template: Parser(item.description, TOOLS, strict=True, fresh_ids=True) for item in fresh.pool
    }
    outcomes = list(fresh.run(1500, seed=15, large_rate=0.0))
    for outcome in outcomes:
        outcome.problems[:] = [problem for problem in outcome.problems if "canary" not in problem]
    failures = _failures(outcomes)
    assert not failures, "\n".join(failures[:10])


def test_very_long_outputs_parse_soundly(fuzzer: fuzz.Fuzzer) -> None:
    """A megabyte of content, or a call repeated a thousand times, in random chunks."""
    failures = _failures(list(fuzzer.run(40, seed=12)))
    assert not failures, "\n".join(failures[:10])


def test_deviations_parse_soundly_lenient_and_strict(sweep: list[fuzz.Outcome]) -> None:
    """Every deviation class on every format it applies to: the properties hold for both parsers."""
    failures = _failures(sweep)
    assert not failures, f"{len(failures)} problems:\n" + "\n".join(failures[:10])


def test_every_deviation_class_is_applied_on_every_format_it_applies_to(
    fuzzer: fuzz.Fuzzer, sweep: list[fuzz.Outcome]
) -> None:
    """Where a format's shape admits a class, the sweep rewrote its real outputs with it: a rewrite
    that finds nothing in the outputs its shape describes fails here."""
    applied = collections.Counter((outcome.seed.template, outcome.deviations[0]) for outcome in sweep)
    expected = {
        (template, deviation.name) for template, admitted in fuzzer.deviations.items() for deviation in admitted
    }
    short = sorted(f"{t}: {name} ({applied[t, name]})" for t, name in expected if applied[t, name] < SWEEP_TIMES)
    assert not short, f"applied fewer than {SWEEP_TIMES} times:\n" + "\n".join(short)
    # Every class applies to some corpus format, and every format takes some class of each kind it can.
    for deviation in deviations.DEVIATIONS:
        assert any((t, deviation.name) in expected for t in fuzzer.deviations), deviation.name
    assert {outcome.seed.template for outcome in sweep} == set(fuzzer.layouts)


def test_the_deviation_mix_reaches_every_class(fuzzer: fuzz.Fuzzer) -> None:
    """The random run, as the long benchmark makes it, applies every class too."""
    seen = collections.Counter(name for o in fuzzer.run(3000, seed=14, deviations_only=True) for name in o.deviations)
    assert set(seen) == {deviation.name for deviation in deviations.DEVIATIONS}, seen


def _layout(template: str) -> deviations.Layout:
    return deviations.Layout.of(lower(golden(template)), fuzz.TOOL_NAMES)


def _rewritten(name: str, template: str, text: str, seed: int = 0) -> str:
    edit = deviations.BY_NAME[name].rewrite(random.Random(seed), text, _layout(template))
    assert edit is not None, f"{name} found nothing to rewrite in {text!r}"
    return edit[0]


_NEMO = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Paris"}, "id": "Ab3De6Gh9"}]'
_QWEN = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call><|im_end|>'
_KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"location": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)
_LLAMA = '{"name": "get_weather", "parameters": {"location": "Paris"}}<|eot_id|>'
_LFM2 = "<|tool_call_start|>[get_weather(location='Paris'), search(query='Lyon')]<|tool_call_end|>"


@pytest.mark.parametrize(
    ("name", "template", "text", "check"),
    [
        (
            "whitespace inside a joined marker",
            "mistralai-Mistral-Nemo-Instruct-2407",
            _NEMO,
            lambda out: out.startswith("[TOOL_CALLS]") and out[12].isspace() and out[12:].lstrip().startswith("[{"),
        ),
        ("section opener left out", "moonshotai-Kimi-K2", _KIMI, lambda out: out.startswith("<|tool_call_begin|>")),
        ("closer left out", "Qwen-Qwen2.5-7B-Instruct", _QWEN, lambda out: "</tool_call>" not in out),
        ("bare JSON in a code fence", "meta-llama-Llama-3.1-8B-Instruct", _LLAMA, lambda out: out.startswith("```")),
        ("JSON as Python literals", "Qwen-Qwen2.5-7B-Instruct", _QWEN, lambda out: "'location'" in out),
        ("Python literals as JSON", "LFM2.5-8B-A1B", _LFM2, lambda out: 'location="Paris"' in out),
        (
            "arguments re-encoded",
            "moonshotai-Kimi-K2",
            _KIMI,
            lambda out: out.split("begin|>")[-1].startswith('"{') or out.split("begin|>")[-1].startswith('"\\"{'),
        ),
        (
            "call keys respelled",
            "Qwen-Qwen2.5-7B-Instruct",
            _QWEN,
            lambda out: '"function"' in out or '"parameters"' in out,
        ),
        ("another separator between calls", "LFM2.5-8B-A1B", _LFM2, lambda out: "'), search(" not in out),
        ("calls as one list, or a list as objects", "Qwen-Qwen2.5-7B-Instruct", _QWEN, lambda out: "\n[{" in out),
        (
            "calls as one list, or a list as objects",
            "mistralai-Mistral-Nemo-Instruct-2407",
            _NEMO,
            lambda out: out.startswith('[TOOL_CALLS]{"name"') and out.endswith("}"),
        ),
        ("reasoning opener repeated", "Qwen3.5-4B", "I think.\n</think>\n\nHi", lambda out: out.startswith("<think>")),
        (
            "reasoning closer with no opener",
            "Qwen-Qwen3-0.6B",
            "<think>\n\n</think>\n\n" + _QWEN,
            lambda out: "<think>" not in out[: out.index("</think>")],
        ),
        ("empty reasoning before a call", "Qwen-Qwen3-0.6B", _QWEN, lambda out: out.startswith("<think>")),
    ],
)
def test_a_rewrite_writes_its_deviation(name: str, template: str, text: str, check) -> None:
    """Each rewrite does what its class says, on a real output of a format it applies to."""
    for seed in range(5):
        out = _rewritten(name, template, text, seed)
        assert check(out), f"{name}: {out!r}"


def test_the_fuzzer_sees_what_it_looks_for(corpus_dir: Path) -> None:
    """The properties can fail: a parser that drops a canary, or whose stream differs, is caught; a
    strict parser that records a tolerance is too."""

    class Lossy(Parser):
        def parse(self, text):  # drops everything after the first canary
            return super().parse(text.split(fuzz.CANARY)[0])

    parser = Lossy(golden("Qwen-Qwen2.5-7B-Instruct"), TOOLS)
    found = fuzz.problems(parser, f"Hello {fuzz.CANARY}1 there", [f"{fuzz.CANARY}1"], random.Random(0))
    assert any("lost" in problem for problem in found) and any("differs" in problem for problem in found)

    lenient = Parser(golden("mistralai-Mistral-Nemo-Instruct-2407"), TOOLS)
    tolerant = types.SimpleNamespace(strict=True, parse=lenient.parse, stream=lenient.stream)  # says strict, is not
    found = fuzz.problems(tolerant, _NEMO.replace("[TOOL_CALLS][", "[TOOL_CALLS] ["), [], random.Random(0))
    assert [fuzz.problem_kind(problem) for problem in found] == ["strict parse applied a tolerance"]
    # Every problem has a kind, read as continuing a prefill too; one of no kind is an error, not the
    # StopIteration that once ended benchmarks/fuzz_parser.py's pool loop after 5 of 1000 jobs.
    prefill = Prefill("x: ", "")
    assert fuzz.problem_kind(f"{fuzz.STRICT}continuing {prefill}: stream (1) differs from batch") == "stream"
    with pytest.raises(ValueError, match="no known kind"):
        fuzz.problem_kind("something else")
