"""The benchmarks' llama.cpp reference harness (benchmarks/reference/): it must read a call llama.cpp
can read, so that a broken harness shows here rather than as a fast, wrong figure in a benchmark.

Skips without the harness (`bash .ci/build-llama-server template-analyzer-reference-bench` builds it
beside llama-server), except where the build is required (CI, which builds it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import reference_bench
from helpers.built import required_binary
from helpers.golden import compile_for, golden
from helpers.roundtrip import CASES, TOOLS, USER, case_outputs

TEMPLATE = "Qwen-Qwen2.5-7B-Instruct"


@pytest.fixture(scope="module")
def reference_harness() -> Path:
    return required_binary(
        reference_bench.reference_binary(), reference_bench.TARGET, f"build it with `{reference_bench.BUILD_COMMAND}`"
    )


def test_llama_cpp_reads_the_call_the_template_writes(reference_harness: Path, corpus_dir: Path) -> None:
    description = golden(TEMPLATE)
    [(_, output)] = case_outputs(description, compile_for(description, corpus_dir), ["one call"])
    job = {
        "template": str(corpus_dir / f"{TEMPLATE}.jinja"),
        "tools": TOOLS,
        "messages": [USER],
        "outputs": [reference_bench.as_generated(output, description.turn.stop)],
        "repeat": 2,
    }
    [answer] = reference_bench.run_reference(reference_harness, [job], timeout=30)
    assert "error" not in answer, answer["error"]
    [parsed] = answer["outputs"]
    assert "error" not in parsed, parsed["error"]
    assert [call["name"] for call in parsed["tool_calls"]] == ["get_weather"], parsed
    content, calls = CASES["one call"]
    assert reference_bench.read_right(parsed, content, calls) is None
    assert answer["analysis_us"]["best"] > 0 and parsed["parse_us"]["best"] > 0


def test_a_job_llama_cpp_cannot_run_is_reported_and_the_next_one_still_runs(
    reference_harness: Path, tmp_path: Path, corpus_dir: Path
) -> None:
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for message in messages %}{{ message.content ", encoding="utf-8")
    good = {"template": str(corpus_dir / f"{TEMPLATE}.jinja"), "tools": TOOLS, "messages": [USER]}
    answers = reference_bench.run_reference(
        reference_harness,
        [{**good, "template": str(tmp_path / "absent.jinja")}, {**good, "template": str(broken)}, good],
        timeout=30,
    )
    assert "error" in answers[0] and "error" in answers[1], json.dumps(answers[:2])
    assert "error" not in answers[2] and answers[2]["outputs"] == []
