"""The export, end to end against a real llama-server: the server accepts each exported request,
and what a random model writes under our grammar is read back by our parser as valid calls.

The server is built by ``.ci/build-llama-server`` from the pinned sdist; the model is made at test
time (tests/e2e/tiny_model.py). Without the binary the tests skip, unless
TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER=1 (as .ci/run sets) makes that a failure. The server and model
fixtures (tests/e2e/conftest.py) are shared with test_llama_server_compare.py, which runs the same cases
through llama-server's own /v1/chat/completions."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import replace
from typing import Any

import jsonschema
import pytest

from analyzer.backends.parser import Delta, Message, Parser, apply
from analyzer.llama_server import ChatRequest, Completion, completion_url, prepare, read_reply, send, stream_chunks
from analyzer.render.conversation import Renderer
from analyzer.render.session import Session
from tests.e2e.server import ASKED, SAMPLING, SCHEMAS, TOOLS, Family


def _request(family: Family, **options: Any) -> Completion:
    # thinking off: a random model that opens reasoning never closes it
    completion = prepare(family.template, family.description, ChatRequest(ASKED, TOOLS, thinking=False, **options))
    return _with(completion, **SAMPLING)


def _with(completion: Completion, **fields: Any) -> Completion:
    return replace(completion, body={**completion.body, **fields})


def _valid_calls(completion: dict[str, Any]) -> list[dict[str, Any]]:
    message = completion["choices"][0]["message"]
    assert not message.get("errors"), message
    for call in message.get("tool_calls") or []:
        jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    return message.get("tool_calls") or []


def test_required_gives_a_valid_call(family: Family) -> None:
    # one call: a random model under a parallel grammar adds calls until n_predict cuts it
    completion = send(family.server.url, _request(family, tool_choice="required", parallel=False))
    calls = _valid_calls(completion)
    assert len(calls) == 1 and completion["choices"][0]["finish_reason"] == "tool_calls"


def test_named_tool_and_no_parallel_hold(family: Family) -> None:
    completion = send(family.server.url, _request(family, tool_choice="switch_light", parallel=False))
    calls = _valid_calls(completion)
    assert [c["function"]["name"] for c in calls] == ["switch_light"]


def test_lazy_grammar_takes_over_after_a_forced_trigger(family: Family) -> None:
    request = _request(family, parallel=False)
    plain = send(family.server.url, request)
    assert not plain["choices"][0]["message"].get("tool_calls")
    words = [t["value"] for t in request.body["grammar_triggers"] if t["type"] == 1 and t["value"] in family.token_ids]
    if not words:
        pytest.skip(f"{family.name}: its trigger is not one special token a logit bias can force")
    forced = send(family.server.url, _with(request, logit_bias=[[family.token_ids[words[0]], 100.0]]))
    assert _valid_calls(forced)


def test_streaming_gives_the_batch_message(family: Family) -> None:
    request = _request(family, tool_choice="required", parallel=False)
    batch = send(family.server.url, request)["choices"][0]["message"]
    folded = Message()
    for chunk in stream_chunks(family.server.url, request, include_usage=False):
        delta = chunk["choices"][0]["delta"]
        for call in delta.get("tool_calls") or [{}]:
            function = call.get("function", {})
            apply(
                folded,
                Delta(
                    content=delta.get("content", ""),
                    reasoning_content=delta.get("reasoning_content", ""),
                    call_index=call.get("index"),
                    call_id=call.get("id"),
                    call_name=function.get("name"),
                    arguments=function.get("arguments", ""),
                ),
            )
    streamed = [(c.name, c.arguments) for c in folded.tool_calls]
    assert streamed == [(c["function"]["name"], c["function"]["arguments"]) for c in batch.get("tool_calls") or []]
    assert folded.content == (batch.get("content") or "")


def test_parallel_calls_each_validate(family: Family) -> None:
    """With parallel calls allowed a random model keeps adding calls until n_predict cuts it: every call
    it finished must validate, and the one cut off must be reported as cut: the last, named by its
    error's call_index (a call whose beginning was read stays in tool_calls as far as it went, as a
    stream has sent it)."""
    completion = send(family.server.url, _with(_request(family, tool_choice="required", parallel=True), n_predict=160))
    choice = completion["choices"][0]
    message = choice["message"]
    calls = message.get("tool_calls") or []
    assert calls, message
    cut = [error.get("call_index") for error in message["errors"] if error["kind"] == "unterminated_call"]
    for index, call in enumerate(calls):
        if index not in cut:
            jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    if choice["finish_reason"] == "length":
        assert [error["kind"] for error in message["errors"]] in ([], ["unterminated_call"]), message["errors"]
        assert cut in ([], [None], [len(calls) - 1]), (cut, len(calls))
    else:
        assert not message["errors"], message["errors"]


def _raw_reply(url: str, completion: Completion) -> dict[str, Any]:
    """llama-server's own /completion reply: the text the model wrote, and why it stopped."""
    body = json.dumps({**completion.body, "stream": False}).encode()
    request = urllib.request.Request(completion_url(url), body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return read_reply(completion_url(url), response.read())


def test_the_template_writes_back_what_the_model_wrote(family: Family) -> None:
    """Byte for byte: given back the call our parser read, the template writes exactly the text the
    model wrote under our grammar, whitespace and separators included, up to the turn's stop; the
    model ended its turn itself (an end-of-generation token), and that is a tool_calls finish."""
    request = _request(family, tool_choice="required", parallel=False)
    reply = _raw_reply(family.server.url, request)
    # The library's default parser, which keeps the ids the model writes (serve's gives fresh ones).
    served = request.parser
    message = Parser(served.shape, served.tools, thinking=served.thinking).parse(reply["content"])
    assert message.tool_calls and not message.errors, message.to_dict()
    assert reply.get("stop_type") in ("eos", "word"), reply.get("stop_type")
    assert send(family.server.url, request)["choices"][0]["finish_reason"] == "tool_calls"
    form = family.description.input_form
    turn = {
        "role": "assistant",
        "content": form.content_with_calls,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if form.arguments_as_string else json.loads(call.arguments),
                },
            }
            for call in message.tool_calls
        ],
    }
    renderer = Renderer.for_template(family.template, family.description)
    prompt = renderer.render(ASKED, tools=TOOLS, generation_prompt=True, thinking=False)
    history = renderer.render([*ASKED, turn], tools=TOOLS, thinking=False)
    written = history[Session.cut(prompt, history) :]
    stops = [at for stop in family.description.turn.stop if (at := written.find(stop)) != -1]
    written = written[: min(stops)] if stops else written
    assert reply["content"] == written, (reply["content"], written)
