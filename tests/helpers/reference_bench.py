"""llama.cpp as the benchmarks' reference, measured in the same run on the same machine: the harness in
benchmarks/reference/ (our own C++ against llama.cpp's common library), built beside llama-server by
``bash .ci/build-llama-server template-analyzer-reference-bench``.

A job is one template with the request's tools and messages and the model outputs to parse; the
harness answers one JSON line per job with llama.cpp's timings and what it read from each output, so a
figure is only taken from an output llama.cpp read right (see ``read_right``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from helpers.built import llama_server_binary

TARGET = "template-analyzer-reference-bench"
BUILD_COMMAND = f"bash .ci/build-llama-server {TARGET}"


def default_binary() -> Path | None:
    """Beside llama-server (``LLAMA_SERVER`` or the build .ci/build-llama-server caches), where the
    other built binaries are looked for; None when that has no llama-server."""
    server = llama_server_binary()
    return server.parent / TARGET if server is not None else None


def add_reference_option(options: argparse.ArgumentParser) -> None:
    """The benchmarks' ``--reference BINARY``: a name that is no file is a usage error up front."""
    options.add_argument(
        "--reference", metavar="BINARY", type=_existing_file, help=f"llama.cpp's {TARGET} (default: the cached build)"
    )


def _existing_file(named: str) -> Path:
    if not Path(named).is_file():
        raise argparse.ArgumentTypeError(f"{named}: no such file")
    return Path(named)


def reference_binary(named: Path | None = None) -> Path | None:
    """``named`` (the --reference option) if given, else ``default_binary()`` when it exists, else None."""
    if named is not None:
        return named
    found = default_binary()
    return found if found is not None and found.is_file() else None


def missing_line() -> str:
    """The one line a benchmark prints where the harness is not built."""
    return (
        f"llama.cpp not measured in this run: no {TARGET} beside llama-server; build it with `{BUILD_COMMAND}` "
        "(or name one with --reference)"
    )


def as_generated(output: str, stops: Iterable[str]) -> str:
    """The round-trip output as llama-server hands it to its parser: the turn's stop string that ends
    it is the end-of-generation token or a stop string, neither of which reaches the text."""
    for stop in sorted(stops, key=len, reverse=True):
        if stop and output.endswith(stop):
            return output[: -len(stop)]
    return output


def run_reference(binary: Path, jobs: list[dict[str, Any]], timeout: float = 600) -> list[dict[str, Any]]:
    """llama.cpp's answer to each job, in order (a job it failed on carries an ``error``)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as file:
        json.dump(jobs, file, ensure_ascii=False)
    try:
        done = subprocess.run(
            [str(binary), file.name], capture_output=True, text=True, timeout=timeout, encoding="utf-8"
        )
    finally:
        os.unlink(file.name)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(answers) != len(jobs):
        raise RuntimeError(f"{binary} answered {len(answers)} of {len(jobs)} jobs: {done.stderr.strip()[-500:]}")
    return answers


def match_thinking(binary: Path, jobs: list[dict[str, Any]], prompts: list[str], user_text: str) -> None:
    """Set each job's ``enable_thinking`` to the value under which llama.cpp renders the prompt the
    outputs were written after (``prompts``, our render with the template's defaults): llama.cpp always
    passes the switch, so a template whose switch defaults off would otherwise open reasoning that the
    outputs never close. Compared is what follows the user's message (a date or a BOS token before it
    differs between the two renders). On (llama-server's default) where it renders that prompt, else
    off: our render leaves the switch undefined, which a template reads as off unless it tests for that
    (MiniCPM5 then writes no reasoning block at all, where llama.cpp's off writes an empty, closed one,
    so neither matches exactly and off is the nearer)."""
    probes = [{**job, "outputs": [], "repeat": 1, "enable_thinking": True} for job in jobs]
    for job, prompt, answer in zip(jobs, prompts, run_reference(binary, probes), strict=True):
        on = answer.get("prompt", "")
        job["enable_thinking"] = on[on.rfind(user_text) :] == prompt[prompt.rfind(user_text) :]


def read_right(answer: dict[str, Any], content: str | None, calls: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Why llama.cpp's reading of one output is not the message the output holds; None when it is: the
    same calls in order (names, and arguments equal as JSON) and the same content, spacing aside."""
    if "error" in answer:
        return f"error: {answer['error']}"
    got = answer["tool_calls"]
    if [call["name"] for call in got] != [name for name, _ in calls]:
        return f"calls {[call['name'] for call in got]} instead of {[name for name, _ in calls]}"
    for call, (name, arguments) in zip(got, calls, strict=True):
        try:
            read = json.loads(call["arguments"]) if call["arguments"] else {}
        except json.JSONDecodeError:
            return f"arguments of {name} are not JSON: {call['arguments'][:80]!r}"
        if read != arguments:
            return f"arguments of {name} read as {read!r}"
    if answer["content"].strip() != (content or "").strip():
        return f"content {answer['content'][:80]!r}"
    return None
