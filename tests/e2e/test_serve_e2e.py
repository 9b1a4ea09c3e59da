"""``serve`` end to end: the real llama-server (tests/e2e/conftest.py: one per family, with the tiny
model) behind our OpenAI-compatible endpoint, driven by the official ``openai`` client.

Each case of the comparison (tests/e2e/test_llama_server_compare.py: required, a named tool, auto,
auto with its trigger forced) is asked through ``serve`` and, beside it, through llama-server's own
``/v1/chat/completions``, with the same client, messages, tools and sampling; both are judged by the
comparison's rules and reported side by side (llama-server's outcomes are asserted there, not here).
Ours must pass every case. Then, per family: ``tool_choice="none"`` gives text, and every case streamed
(stream=True), folded as the client library folds chunks, gives the message the same request gives
unstreamed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from analyzer.serve import ServeConfig
from tests.e2e.server import ASKED, FAMILIES, REPORTS, SAMPLING, SCHEMAS, TOOLS, Family
from tests.e2e.test_llama_server_compare import (
    CASES,
    FORCED,
    NAMED_TOOL,
    NOT_APPLICABLE,
    Measurement,
    Reply,
    ask_llama_server,
    llama_server_trigger_token,
    measure_side,
    our_trigger_token,
    report_table,
)
from tests.helpers.serving import announced_url, running, serve_command

NAMED_CHOICE = {"type": "function", "function": {"name": NAMED_TOOL}}


@pytest.fixture(scope="session")
def served(family: Family) -> Iterator[openai.OpenAI]:
    """An openai client of ``serve`` running for the family's template in front of its llama-server."""
    config = ServeConfig(family.template, family.description, family.server.url, timeout=600.0)
    with running(config) as base:
        yield openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=600.0)


def _ask(client: openai.OpenAI, tool_choice: Any, logit_bias: list[list[float]] | None = None, **options: Any) -> Any:
    """The comparison's request (thinking off: a random model that opens reasoning never closes it)."""
    return client.chat.completions.create(
        model="tiny",
        messages=ASKED,
        tools=TOOLS,
        tool_choice=tool_choice,
        parallel_tool_calls=False,
        temperature=SAMPLING["temperature"],
        seed=SAMPLING["seed"],
        max_tokens=SAMPLING["n_predict"],
        logit_bias={str(int(token)): int(bias) for token, bias in logit_bias} if logit_bias else openai.omit,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        **options,
    )


def ask_serve(client: openai.OpenAI) -> Any:
    def ask(family: Family, case: str, tool_choice: Any, logit_bias: list[list[float]] | None = None) -> Reply:
        try:
            completion = _ask(client, tool_choice, logit_bias)
        except openai.APIStatusError as error:
            return Reply(case, http_error=f"HTTP {error.status_code}: {error.message}")
        return Reply(case, completion.model_dump())

    return ask


@pytest.fixture(scope="session")
def serve_report(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Measurement]]:
    measurements: list[Measurement] = []
    yield measurements
    if not measurements:
        return
    folder = Path(os.environ.get("TEMPLATE_ANALYZER_REPORT_DIR") or tmp_path_factory.getbasetemp())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "serve-vs-llama-server.md"
    text = "\n".join(
        [
            "# `template-analyzer serve` vs llama-server's /v1/chat/completions, through the openai client",
            "",
            f"Same llama-server, tiny random model, template, messages and tools per family; temperature "
            f"{SAMPLING['temperature']}, seed {SAMPLING['seed']}, max_tokens {SAMPLING['n_predict']}, thinking off, "
            "parallel_tool_calls false. 'ours' is serve (our prompt, grammar and parser on /completion).",
            "",
            report_table(sorted(measurements, key=lambda m: FAMILIES.index(m.family))),
            "",
        ]
    )
    path.write_text(text, encoding="utf-8")
    request.config.stash.setdefault(REPORTS, []).append(("serve vs llama-server's own chat path", path, text))


@pytest.fixture(scope="session")
def measured(family: Family, served: openai.OpenAI, serve_report: list[Measurement]) -> Measurement:
    ours = measure_side(family, ask_serve(served), NAMED_CHOICE, lambda _unforced: our_trigger_token(family))
    theirs = measure_side(
        family, ask_llama_server, NAMED_CHOICE, lambda unforced: llama_server_trigger_token(unforced, family)
    )
    measurement = Measurement(family.name, ours, theirs, "n/a")
    serve_report.append(measurement)
    return measurement


def test_serve_passes_every_case(measured: Measurement) -> None:
    """required and a named tool give one schema-valid call (parallel_tool_calls false: one), auto
    gives plain content, auto with the trigger forced gives a valid call; every request answered."""
    failed = {
        case: outcome
        for case, outcome in measured.ours.items()
        if not outcome.ok and not (case == FORCED and outcome.verdict == NOT_APPLICABLE)
    }
    assert not failed, failed
    assert set(measured.ours) == set(CASES)


def test_tool_choice_none_gives_text(family: Family, served: openai.OpenAI) -> None:
    message = _ask(served, "none").choices[0].message
    assert not message.tool_calls and not getattr(message, "errors", None), message
    assert isinstance(message.content, str) and message.content


def _cases(family: Family) -> dict[str, tuple[Any, list[list[float]] | None]]:
    token, _why = our_trigger_token(family)
    cases: dict[str, tuple[Any, list[list[float]] | None]] = {
        "required": ("required", None),
        "named": (NAMED_CHOICE, None),
        "auto": ("auto", None),
        "none": ("none", None),
    }
    if token is not None:
        cases["forced"] = ("auto", [[token, 100.0]])
    return cases


def test_streamed_chunks_fold_into_the_message(family: Family, served: openai.OpenAI) -> None:
    for case, (tool_choice, bias) in _cases(family).items():
        batch = _ask(served, tool_choice, bias).choices[0]
        state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
        for chunk in _ask(served, tool_choice, bias, stream=True):
            state.handle_chunk(chunk)
        folded = state.current_completion_snapshot.choices[0]
        assert folded.finish_reason == batch.finish_reason, case
        assert _same_text(folded.message.content, batch.message.content, batch.finish_reason), case
        assert _calls(folded.message) == _calls(batch.message), case
        for _id, name, arguments in _calls(batch.message):
            jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def _same_text(streamed: str | None, batch: str | None, finish_reason: str) -> bool:
    """The same content, but for what llama-server itself sends differently. Cut at the token limit in
    the middle of a character's UTF-8 bytes, its batch reply ends with those bytes as U+FFFD, where its
    stream holds back the last token (measured: ' \xe7...', a space and the character's first byte)
    until the character is complete, so never sends it."""
    if streamed == batch:
        return True
    if finish_reason != "length" or streamed is None or batch is None or not batch.startswith(streamed):
        return False
    tail = batch[len(streamed) :]
    return "\ufffd" in tail and not tail.replace("\ufffd", "").strip()


def _calls(message: Any) -> list[tuple[str, str, str]]:
    return [(call.id, call.function.name, call.function.arguments) for call in message.tool_calls or []]


def test_the_command_serves_the_gguf_the_server_loaded(family: Family, tmp_path: Path) -> None:
    """As the README says to run it: the template read from the model file llama-server loaded."""
    model = family.server.log_path.parent / "model.gguf"  # where conftest.py builds the family's model
    with (tmp_path / "serve.log").open("w+") as log:
        process = serve_command([str(model), "--upstream", family.server.url], log)
        try:
            client = openai.OpenAI(base_url=announced_url(log, process) + "/v1", api_key="unused", max_retries=0)
            choice = _ask(client, "required").choices[0]
        finally:
            process.terminate()
            process.wait(30)
    (call,) = choice.message.tool_calls or []
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    assert choice.finish_reason == "tool_calls"
