"""``serve``'s ``/v1/messages`` (Anthropic's Messages API) end to end: the real llama-server of each
family (tests/e2e/conftest.py, the tiny model) behind it, by raw HTTP (the anthropic library's models
and stream accumulator are tried in tests/test_messages_api.py). At temperature 0 a Messages request
and its chat-completions twin give the same prompt, so the same calls; a conversation with a
tool_use/tool_result history counts the same prompt tokens as its twin; streamed events fold into the
batch message; count_tokens counts what the upstream evaluates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from analyzer.serve import ServeConfig
from tests.e2e.server import SAMPLING, SCHEMAS, TOOLS, Family
from tests.helpers.serving import running

ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]


@pytest.fixture(scope="session")
def served_base(family: Family) -> Iterator[str]:
    config = ServeConfig(family.template, family.description, family.server.url, timeout=600.0)
    with running(config) as base:
        yield base


def _messages(base: str, **fields: Any) -> httpx.Response:
    return httpx.post(base + "/v1/messages", json=_request(**fields), timeout=600)


def _request(**fields: Any) -> dict[str, Any]:
    return {
        "model": "tiny",
        "max_tokens": SAMPLING["n_predict"],
        "temperature": SAMPLING["temperature"],
        "messages": [{"role": "user", "content": "Use kelvin please."}],
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "disabled"},
        **fields,
    }


def _chat(base: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "model": "tiny",
        "max_tokens": SAMPLING["n_predict"],
        "temperature": SAMPLING["temperature"],
        "messages": messages,
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    response = httpx.post(base + "/v1/chat/completions", json=body, timeout=600)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _fold(text: str) -> dict[str, Any]:
    """The message Anthropic's events make (as the anthropic SDK folds them), the events in order."""
    message: dict[str, Any] = {}
    partials: dict[int, str] = {}
    names = []
    for block in filter(str.strip, text.split("\n\n")):
        name_line, data_line = block.split("\n")
        name, data = name_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))
        assert name == data["type"], block
        names.append(name)
        if name == "message_start":
            message = data["message"]
        elif name == "content_block_start":
            message["content"].append(dict(data["content_block"]))
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "input_json_delta":
                partials[data["index"]] = partials.get(data["index"], "") + delta["partial_json"]
            else:
                field = {"text_delta": "text", "thinking_delta": "thinking"}[delta["type"]]
                message["content"][data["index"]][field] += delta[field]
        elif name == "message_delta":
            message.update(data["delta"])
            message["usage"] = data["usage"]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"], names
    for index, partial in partials.items():
        message["content"][index]["input"] = json.loads(partial)
    return message


def _uses(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(block["name"], block["input"]) for block in message["content"] if block["type"] == "tool_use"]


def test_any_gives_the_call_the_chat_endpoint_gives(family: Family, served_base: str) -> None:
    response = _messages(served_base)
    assert response.status_code == 200, response.text
    reply = response.json()
    ((name, value),) = _uses(reply)
    jsonschema.validate(value, SCHEMAS[name])
    assert reply["stop_reason"] == "tool_use"
    chat = _chat(served_base, [{"role": "user", "content": "Use kelvin please."}])
    (call,) = chat["choices"][0]["message"]["tool_calls"]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (name, value)
    assert reply["usage"]["input_tokens"] == chat["usage"]["prompt_tokens"]


def test_streamed_events_fold_into_the_batch_message(family: Family, served_base: str) -> None:
    batch = _messages(served_base).json()
    streamed = _messages(served_base, stream=True)
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    folded = _fold(streamed.text)
    assert _uses(folded) == _uses(batch) and folded["stop_reason"] == batch["stop_reason"]
    texts = [(b["type"], b.get("text", b.get("thinking"))) for b in folded["content"] if b["type"] != "tool_use"]
    assert texts == [(b["type"], b.get("text", b.get("thinking"))) for b in batch["content"] if b["type"] != "tool_use"]
    assert folded["usage"] == batch["usage"]


def test_a_tool_result_history_counts_the_prompt_its_chat_twin_counts(family: Family, served_base: str) -> None:
    """The first reply's call, its result and the next turn, sent back both ways: the same prompt, as
    llama-server counts its tokens, and (temperature 0) the same next call."""
    first = _messages(served_base).json()
    ((name, value),) = _uses(first)
    (use,) = [block for block in first["content"] if block["type"] == "tool_use"]
    anthropic_history = [
        {"role": "user", "content": "Use kelvin please."},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "done"}]},
    ]
    reply = _messages(served_base, messages=anthropic_history)
    assert reply.status_code == 200, reply.text
    call = {"id": use["id"], "type": "function", "function": {"name": name, "arguments": json.dumps(value)}}
    chat = _chat(
        served_base,
        [
            {"role": "user", "content": "Use kelvin please."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": use["id"], "content": "done"},
        ],
    )
    assert reply.json()["usage"]["input_tokens"] == chat["usage"]["prompt_tokens"]
    (next_call,) = chat["choices"][0]["message"]["tool_calls"]
    assert _uses(reply.json()) == [(next_call["function"]["name"], json.loads(next_call["function"]["arguments"]))]


def test_count_tokens_counts_what_the_upstream_counts_for_the_request(family: Family, served_base: str) -> None:
    """llama-server's /tokenize (with the BOS /completion adds) counts what its /completion evaluates."""
    reply = _messages(served_base).json()
    body = {key: value for key, value in _request().items() if key != "max_tokens"}
    counted = httpx.post(served_base + "/v1/messages/count_tokens", json=body, timeout=600)
    assert counted.status_code == 200, counted.text
    assert counted.json() == {"input_tokens": reply["usage"]["input_tokens"]}
