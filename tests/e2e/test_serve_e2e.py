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
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from analyzer.lower import lower
from analyzer.runtime.call_forms import id_pattern
from analyzer.serve import ServeConfig
from tests.e2e.server import ASKED, FAMILIES, REPORTS, SAMPLING, SCHEMAS, TOOLS, Family, family_server
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


def _ask(
    client: openai.OpenAI,
    tool_choice: Any,
    logit_bias: list[list[float]] | None = None,
    *,
    parallel: bool = False,
    **options: Any,
) -> Any:
    """The comparison's request (thinking off: a random model that opens reasoning never closes it)."""
    return client.chat.completions.create(
        model="tiny",
        messages=ASKED,
        tools=TOOLS,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
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
        # The same calls; each reply's ids are fresh ones of the template's form.
        assert [call[1:] for call in _calls(folded.message)] == [call[1:] for call in _calls(batch.message)], case
        ids = [call[0] for call in (*_calls(folded.message), *_calls(batch.message))]
        assert len(set(ids)) == len(ids) and all(_id_form(family).fullmatch(i) for i in ids), (case, ids)
        for _id, name, arguments in _calls(batch.message):
            jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def _id_form(family: Family) -> re.Pattern[str]:
    """The ids serve makes for the family's template: of the first id form the template takes."""
    return re.compile(id_pattern(lower(family.description).id_form))


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


# --------------------------------------------------------------------------- clients' habits (issue 26)


def _as_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in messages]


def test_content_parts_give_what_strings_give(family: Family, served: openai.OpenAI) -> None:
    """The openai library's habit: content as a list of text parts. The same prompt as strings, so at
    temperature 0 the same reply and the same count of prompt tokens."""
    replies = []
    for messages in (ASKED, _as_parts(ASKED)):
        replies.append(
            served.chat.completions.create(
                model="tiny",
                messages=messages,  # type: ignore[arg-type]
                tools=TOOLS,  # type: ignore[arg-type]
                tool_choice="required",
                temperature=0.0,
                seed=SAMPLING["seed"],
                max_tokens=SAMPLING["n_predict"],
                extra_body={"chat_template_kwargs": {"enable_thinking": False}},
            )
        )
    by_strings, by_parts = replies
    assert by_parts.usage is not None and by_strings.usage is not None
    assert by_parts.usage.prompt_tokens == by_strings.usage.prompt_tokens
    assert by_parts.choices[0].message.content == by_strings.choices[0].message.content
    assert [c[1:] for c in _calls(by_parts.choices[0].message)] == [
        c[1:] for c in _calls(by_strings.choices[0].message)
    ]


def test_call_ids_differ_across_identical_requests(family: Family, served: openai.OpenAI) -> None:
    """The same request four times (twice streamed), parallel calls allowed: every id is its own, of
    the template's form. (Mistral's model writes an id itself, the same one at the same seed: replaced.)"""
    ids = []
    for stream in (False, False, True, True):
        if stream:
            state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
            for chunk in _ask(served, "required", stream=True, parallel=True):
                state.handle_chunk(chunk)
            message: Any = state.current_completion_snapshot.choices[0].message
        else:
            message = _ask(served, "required", parallel=True).choices[0].message
        assert message.tool_calls, message
        ids += [call.id for call in message.tool_calls]
    assert len(set(ids)) == len(ids) and all(_id_form(family).fullmatch(i) for i in ids), ids


REASONING_FAMILIES = ["MiniMax-M2", "Qwen-Qwen3-0.6B"]  # a prompt that always opens reasoning; a model that does
BUDGET = 8


@pytest.fixture(scope="module", params=REASONING_FAMILIES)
def reasoning_family(
    request: pytest.FixtureRequest, server_binary: Path, corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Family]:
    with family_server(request.param, server_binary, corpus_dir, tmp_path_factory.mktemp(request.param)) as found:
        yield found


def _thinking_required(client: openai.OpenAI, stream: bool, **extra: Any) -> tuple[Any, str | None]:
    """``tool_choice="required"`` with thinking on: the message (folded when streamed) and its finish reason."""
    options: dict[str, Any] = {
        "model": "tiny",
        "messages": ASKED,
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "temperature": SAMPLING["temperature"],
        "seed": SAMPLING["seed"],
        "max_tokens": SAMPLING["n_predict"],
        "extra_body": {"chat_template_kwargs": {"enable_thinking": True}, **extra},
    }
    if not stream:
        choice = client.chat.completions.create(**options).choices[0]
        return choice.message, choice.finish_reason
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(**options, stream=True):
        state.handle_chunk(chunk)
    folded = state.current_completion_snapshot.choices[0]
    return folded.message, folded.finish_reason


def _one_valid_call(message: Any, finish_reason: str | None) -> None:
    (call,) = message.tool_calls or []
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    assert finish_reason == "tool_calls" and not getattr(message, "errors", None), message


@pytest.mark.parametrize("stream", [False, True])
def test_a_reasoning_budget_ends_required_in_a_call(family: Family, served: openai.OpenAI, stream: bool) -> None:
    """Every e2e family that has reasoning: thinking on, tool_choice required, a budget of 8 tokens."""
    reasoning = lower(family.description).reasoning
    if reasoning is None:
        pytest.skip(f"{family.name}: the template writes no reasoning block")
    message, finish_reason = _thinking_required(served, stream, thinking_token_budget=BUDGET)
    _one_valid_call(message, finish_reason)
    if reasoning.opened_by_prompt(True):  # the model reasoned (DeepSeek V3.1): the budget cut its block
        assert getattr(message, "reasoning_content", None), message


@pytest.mark.parametrize("stream", [False, True])
def test_a_reasoning_budget_ends_required_in_a_call_where_the_prompt_opens_reasoning(
    reasoning_family: Family, stream: bool
) -> None:
    """MiniMax-M2 (its prompt always opens the block) and Qwen3 (its model opens one), with the budget
    the server's default (--reasoning-budget). Without a budget either random model reasons to the
    token limit and no call comes: what the issue saw."""
    config = ServeConfig(
        reasoning_family.template,
        reasoning_family.description,
        reasoning_family.server.url,
        timeout=600.0,
        reasoning_budget=BUDGET,
    )
    with running(config) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=600.0)
        message, finish_reason = _thinking_required(client, stream)
        _one_valid_call(message, finish_reason)
        assert getattr(message, "reasoning_content", None), message  # the budget cut a block it had begun
        unbudgeted, cut = _thinking_required(client, stream, thinking_token_budget=-1)
        assert cut == "length" and not unbudgeted.tool_calls, unbudgeted


# --------------------------------------------------------------------------- arguments as they arrive (issue 26)

# A long string the grammar holds the model to (an enum of one): a random model writes any string to
# the token limit in formats whose strings are raw text, whose length no grammar bounds.
LONG = 'Line one of the note, written slowly: "quoted" words, commas, and more words until it is long.'
NOTE = {
    "type": "function",
    "function": {
        "name": "write_note",
        "description": "Write a note to a file",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "enum": [LONG]}},
            "required": ["text"],
        },
    },
}
NOTE_ASKED = [{"role": "user", "content": "Write a long note."}]


def _note(client: openai.OpenAI, **options: Any) -> Any:
    return client.chat.completions.create(
        model="tiny",
        messages=NOTE_ASKED,  # type: ignore[arg-type]
        tools=[NOTE],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": "write_note"}},
        parallel_tool_calls=False,
        temperature=0.0,
        seed=SAMPLING["seed"],
        max_tokens=400,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        **options,
    )


def test_a_long_string_argument_streams_in_many_argument_deltas(family: Family, served: openai.OpenAI) -> None:
    """A named call with a long string: streamed, its arguments come in many deltas while the string
    is written, whose concatenation is the folded call's arguments, valid JSON holding the string,
    and the same arguments the unstreamed request gives (temperature 0, one seed). On every family:
    a call object that carries an id (Mistral Nemo) streams too, since serve makes ids of its own."""
    batch = _note(served).choices[0]
    (batch_call,) = batch.message.tool_calls or []
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    fragments: list[str] = []
    for chunk in _note(served, stream=True):
        state.handle_chunk(chunk)
        for choice in chunk.choices:
            fragments += [
                c.function.arguments for c in choice.delta.tool_calls or [] if c.function and c.function.arguments
            ]
    folded = state.current_completion_snapshot.choices[0]
    (call,) = folded.message.tool_calls or []
    assert folded.finish_reason == batch.finish_reason == "tool_calls", (folded, batch)
    assert "".join(fragments) == call.function.arguments
    assert json.loads(call.function.arguments) == {"text": LONG}
    assert call.function.name == batch_call.function.name == "write_note"
    assert call.function.arguments == batch_call.function.arguments
    # Many deltas: the model writes the string token by token, a few characters each.
    assert len(fragments) > len(LONG) // 8, (len(fragments), fragments)
