"""``serve``'s ``/v1/messages`` (Anthropic's Messages API, analyzer/messages_api.py) against the stand-in
upstream (tests/helpers/stand_in.py), by raw HTTP and with the anthropic library: a conversation asks
the upstream exactly what its chat-completions twin asks; replies, stop reasons and streamed events
have Anthropic's shapes; bad requests and failures are Anthropic's error objects."""

from __future__ import annotations

import json
import re
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from helpers.serving import analysed_templates, running
from helpers.stand_in import url

from analyzer.llama_server import ChatRequest, ChunkStream, prepare
from analyzer.messages_api import MessageEvents
from analyzer.serve import ServeConfig

QWEN3 = "Qwen-Qwen3-0.6B"  # reasoning and tools
QWEN = "Qwen-Qwen2.5-7B-Instruct"
MISTRAL = "mistralai-Mistral-Nemo-Instruct-2407"  # nine-character call ids
KEY = "sk-local-test"

WEATHER_TOOL: Any = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEATHER_FUNCTION: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": WEATHER_TOOL["input_schema"],
    },
}
ASKED: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
QWEN3_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
REASONED_CALLS = (
    "<think>\nThe user wants the weather.\n</think>\n\nLet me check."
    + QWEN3_CALL
    + '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo, \\"Norway\\""}}\n</tool_call>'
)


@pytest.fixture(scope="module")
def analysed(corpus_dir: Path) -> dict[str, tuple[Any, Any]]:
    return analysed_templates(corpus_dir, (QWEN3, QWEN, MISTRAL))


def _serving(analysed: dict[str, tuple[Any, Any]], name: str, stand_in: ThreadingHTTPServer, **options: Any) -> Any:
    template, description = analysed[name]
    return running(ServeConfig(template, description, url(stand_in), timeout=10.0, **options))


def _post(base: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(base + "/v1/messages", json=body, headers=headers, timeout=30.0)


def _asked(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 200, "messages": ASKED, "tools": [WEATHER_TOOL], **fields}


def _sse(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """Each server-sent event as (its event name, its data)."""
    assert response.headers["content-type"].startswith("text/event-stream")
    found = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        name_line, data_line = block.split("\n")
        assert name_line.startswith("event: ") and data_line.startswith("data: "), block
        found.append((name_line[len("event: ") :], json.loads(data_line[len("data: ") :])))
    return found


def _fold(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The message the events make, folded as the anthropic SDK folds them (tool input from the
    concatenated partial JSON)."""
    message: dict[str, Any] = {}
    partials: dict[int, str] = {}
    for name, data in events:
        if name == "message_start":
            message = data["message"]
        elif name == "content_block_start":
            assert data["index"] == len(message["content"])
            message["content"].append(dict(data["content_block"]))
        elif name == "content_block_delta":
            block, delta = message["content"][data["index"]], data["delta"]
            if delta["type"] == "input_json_delta":
                partials[data["index"]] = partials.get(data["index"], "") + delta["partial_json"]
            else:
                field = {"text_delta": "text", "thinking_delta": "thinking"}[delta["type"]]
                block[field] += delta[field]
        elif name == "message_delta":
            message.update(data["delta"])
            message["usage"] = {**message["usage"], **data["usage"]}
    for index, text in partials.items():
        message["content"][index]["input"] = json.loads(text)
    return message


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["type"] == "error" and set(body) == {"type", "error"}, body
    error: dict[str, Any] = body["error"]
    assert "\n" not in error["message"] and "Traceback" not in error["message"]
    return error


# --------------------------------------------------------------------------- the request


def _history(call_id: str, follow_up: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """A conversation with a call and its result (and a question after it, with ``follow_up``), as a
    Messages request and as its chat twin."""
    messages = {
        "model": "m",
        "max_tokens": 120,
        "system": [
            {"type": "text", "text": "Answer briefly."},
            {"type": "text", "text": "Use tools.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "The user wants Paris.", "signature": "sig"},
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": "18 C"}]},
                    {"type": "text", "text": "And in Rome?"},
                ],
            },
        ],
        "tools": [{**WEATHER_TOOL, "cache_control": {"type": "ephemeral"}}],
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
        "thinking": {"type": "disabled"},
        "metadata": {"user_id": "u1"},
    }
    chat = {
        "model": "m",
        "max_tokens": 120,
        "messages": [
            {
                "role": "system",
                "content": [{"type": "text", "text": "Answer briefly."}, {"type": "text", "text": "Use tools."}],
            },
            {"role": "user", "content": "What is the weather in Paris?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "The user wants Paris.",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "18 C"},
            {"role": "user", "content": "And in Rome?"},
        ],
        "tools": [WEATHER_FUNCTION],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": False,
        "stop": ["END"],
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    if not follow_up:
        del messages["messages"][2]["content"][1], chat["messages"][4]
    return messages, chat


@pytest.mark.parametrize(
    ("name", "call_id", "follow_up"),
    # Mistral's template refuses a user turn after a tool result (roles must alternate)
    [(QWEN3, "call_abc", True), (QWEN, "call_abc", True), (MISTRAL, "abcdefghi", False)],
)
def test_a_tools_conversation_asks_the_upstream_what_its_chat_twin_asks(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer, name: str, call_id: str, follow_up: bool
) -> None:
    """The whole /completion body (prompt, grammar, stops, sampling) is the same for the two endpoints;
    the history's call and result are in the prompt."""
    messages, chat = _history(call_id, follow_up)
    with _serving(analysed, name, stand_in) as base:
        assert _post(base, messages).status_code == 200
        assert httpx.post(base + "/v1/chat/completions", json=chat, timeout=30).status_code == 200
    (_, by_messages), (_, by_chat) = stand_in.requests  # type: ignore[attr-defined]
    assert by_messages == by_chat
    prompt = by_messages["prompt"]
    assert "18 C" in prompt and '"Paris"' in prompt and ("And in Rome?" in prompt) == follow_up
    assert by_messages["top_k"] == 5 and "END" in by_messages["stop"] and by_messages["n_predict"] == 120
    assert "grammar" in by_messages


def test_the_history_s_reasoning_is_rendered_where_the_template_keeps_it(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    # Qwen3 keeps the reasoning of the turns after the last user query: a tool result is not one.
    body = {**_history("call_abc")[0], "thinking": {"type": "enabled"}}
    body["messages"][2]["content"] = body["messages"][2]["content"][:1]
    with _serving(analysed, QWEN3, stand_in) as base:
        assert _post(base, body).status_code == 200
    assert "<think>\nThe user wants Paris.\n</think>" in stand_in.requests[0][1]["prompt"]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the reply


def test_a_call_is_a_tool_use_block_with_its_parsed_input(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    stand_in.script = (200, REASONED_CALLS, "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN3, stand_in, served_model_name="local") as base:
        response = _post(base, _asked())
    assert response.status_code == 200
    reply = response.json()
    assert re.fullmatch("msg_[0-9a-f]{32}", reply["id"])
    assert (reply["type"], reply["role"], reply["model"]) == ("message", "assistant", "local")
    thinking, text, first, second = reply["content"]
    assert thinking == {"type": "thinking", "thinking": "The user wants the weather.", "signature": ""}
    assert text == {"type": "text", "text": "Let me check."}
    assert first["type"] == second["type"] == "tool_use" and first["name"] == "get_weather"
    assert first["input"] == {"city": "Rome"} and second["input"] == {"city": 'Oslo, "Norway"'}
    assert re.fullmatch("call_[A-Za-z0-9]{24}", first["id"]) and first["id"] != second["id"]
    assert reply["stop_reason"] == "tool_use" and reply["stop_sequence"] is None
    assert reply["usage"] == {"input_tokens": 17, "output_tokens": 9}
    assert "errors" not in reply  # only where the parser met text it could not read


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("stop_type", "word", "reason", "sequence"),
    [
        ("eos", "", "end_turn", None),
        ("limit", "", "max_tokens", None),
        ("word", "END", "stop_sequence", "END"),
        ("word", "<|im_end|>", "end_turn", None),  # the format's own stop, not the client's
    ],
)
def test_the_stop_reason_says_why_the_text_ended(
    analysed: dict[str, tuple[Any, Any]],
    stand_in: ThreadingHTTPServer,
    stream: bool,
    stop_type: str,
    word: str,
    reason: str,
    sequence: str | None,
) -> None:
    stand_in.script = (200, "Sunny.", stop_type)  # type: ignore[attr-defined]
    stand_in.stopping_word = word  # type: ignore[attr-defined]
    with _serving(analysed, QWEN, stand_in) as base:
        response = _post(base, _asked(stop_sequences=["END"], stream=stream))
    reply = _fold(_sse(response)) if stream else response.json()
    assert (reply["stop_reason"], reply["stop_sequence"]) == (reason, sequence)
    assert reply["content"] == [{"type": "text", "text": "Sunny."}]


def test_streamed_events_come_in_order_and_fold_into_the_batch_message(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    stand_in.script = (200, REASONED_CALLS, "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN3, stand_in) as base:
        batch = _post(base, _asked()).json()
        events = _sse(_post(base, _asked(stream=True)))
    assert all(name == data["type"] for name, data in events)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    # Blocks one after the other: each started, given its deltas, stopped before the next starts.
    blocks = [(data["index"], name) for name, data in events if name.startswith("content_block")]
    open_index = None
    for index, name in blocks:
        if name == "content_block_start":
            assert open_index is None
            open_index = index
        else:
            assert index == open_index
            if name == "content_block_stop":
                open_index = None
    assert open_index is None and [i for i, n in blocks if n == "content_block_start"] == [0, 1, 2, 3]
    starts = [data["content_block"]["type"] for name, data in events if name == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use", "tool_use"]
    folded = _fold(events)
    assert folded["stop_reason"] == "tool_use" and folded["usage"] == {"input_tokens": 17, "output_tokens": 9}
    without_ids = [{k: v for k, v in b.items() if k != "id"} for b in folded["content"]]
    assert without_ids == [{k: v for k, v in b.items() if k != "id"} for b in batch["content"]]
    partials = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 3]
    assert json.loads("".join(partials)) == {"city": 'Oslo, "Norway"'}


@pytest.mark.parametrize("stream", [False, True])
def test_text_the_parser_could_not_read_is_kept_in_errors(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer, stream: bool
) -> None:
    """As on the chat endpoint, where no block can hold it: on the message, or on the stream's
    message_delta. The call's beginning was streamed as it arrived (its name once its arguments
    opened), so it stays as sent, streamed or not, and the error names it (call_index)."""
    cut = 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": \n</tool_call>'
    stand_in.script = (200, cut, "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN, stand_in) as base:
        response = _post(base, _asked(stream=stream))
    if stream:
        events = _sse(response)
        (ending,) = [data for name, data in events if name == "message_delta"]
        # (folded without reading the tool's input: what was sent of it is JSON cut short)
        errors, content = (
            ending["errors"],
            _fold([(n, d) for n, d in events if n != "content_block_delta" or d["index"] == 0])["content"],
        )
        partial = "".join(d["delta"].get("partial_json", "") for n, d in events if n == "content_block_delta")
        assert partial == '{"city": '
    else:
        errors, content = response.json()["errors"], response.json()["content"]
    assert content[0] == {"type": "text", "text": "Sure."}
    assert [(block["type"], block["name"]) for block in content[1:]] == [("tool_use", "get_weather")]
    ((error),) = errors
    assert error["kind"] == "unterminated_call" and error["text"].startswith("<tool_call>")
    assert error["call_index"] == 0


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


@pytest.mark.parametrize("pieces", [1, 3, 40])
def test_arguments_in_any_number_of_fragments_make_one_input_json(
    analysed: dict[str, tuple[Any, Any]], pieces: int
) -> None:
    """The translator does not care how the chat stream cuts a call's arguments (the stream sends them
    as they arrive: one delta or many, as the text came)."""
    template, description = analysed[QWEN3]
    completion = prepare(template, description, ChatRequest(ASKED, [WEATHER_FUNCTION]))
    writer = MessageEvents("m", (), ChunkStream("stand-in", completion))
    arguments = json.dumps({"city": "Rome", "notes": "line 1\nline 2 " * 5})
    size = -(-len(arguments) // pieces)
    fragments = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    header = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    chunks = [_chunk({"role": "assistant", "content": "Checking."}), _chunk({"tool_calls": [header]})]
    chunks += [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    chunks.append(_chunk({}, "tool_calls"))
    text = "".join(event for chunk in chunks for event in writer.chunk(chunk)) + "".join(writer.finish())
    events = _sse(httpx.Response(200, text=text, headers={"content-type": "text/event-stream"}))
    partials = [
        data["delta"]["partial_json"] for name, data in events if name == "content_block_delta" and data["index"] == 1
    ]
    assert len(partials) == len(fragments) and "".join(partials) == arguments
    folded = _fold(events)
    assert folded["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "get_weather",
        "input": json.loads(arguments),
    }
    assert folded["stop_reason"] == "tool_use"


# --------------------------------------------------------------------------- the thinking switch and budget


def test_thinking_enabled_with_a_budget_closes_the_reasoning_and_calls(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    """budget_tokens is the reasoning budget: spent (11 tokens, one per streamed character here), serve
    closes the block and asks again under the call grammar; tool_choice any is a required call."""
    endless = "<think>\nLet me think about the weather in Paris, " + "and more " * 60
    stand_in.scripts = [(200, endless, "limit"), (200, QWEN3_CALL, "eos")]  # type: ignore[attr-defined]
    with _serving(analysed, QWEN3, stand_in) as base:
        body = _asked(tool_choice={"type": "any"}, thinking={"type": "enabled", "budget_tokens": 11})
        reply = _post(base, body).json()
    thinking, call = reply["content"]
    assert thinking["thinking"] == "Let" and call["input"] == {"city": "Rome"} and reply["stop_reason"] == "tool_use"
    first, second = (sent for _, sent in stand_in.requests)  # type: ignore[attr-defined]
    assert second["prompt"] == first["prompt"] + "<think>\nLet" + "\n</think>\n\n"


def test_thinking_disabled_switches_the_template_s_thinking_off(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    with _serving(analysed, QWEN3, stand_in) as base:
        _post(base, _asked(thinking={"type": "disabled"}))
        _post(base, _asked())
    (_, off), (_, default) = stand_in.requests  # type: ignore[attr-defined]
    assert off["prompt"].endswith("<think>\n\n</think>\n\n") and not default["prompt"].endswith("</think>\n\n")


# --------------------------------------------------------------------------- errors


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
BAD_REQUESTS: dict[str, tuple[dict[str, Any], str]] = {
    "no max_tokens": ({"model": "m", "messages": ASKED}, "max_tokens is required"),
    "an image": (
        {**_asked(), "messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, IMAGE]}]},
        "messages[0].content[1]: image block: images are not served",
    ),
    "an unknown tool_choice": (_asked(tool_choice={"type": "sometimes"}), "tool_choice must be"),
    "a tool_choice naming no tool": (_asked(tool_choice={"type": "tool", "name": "nope"}), "tool_choice names 'nope'"),
    "an unknown field": (_asked(frobnicate=1), "unknown field 'frobnicate'"),
    "a server tool": (
        _asked(tools=[{"type": "web_search_20250305", "name": "web_search"}]),
        "server tools are not served",
    ),
    "a tool_use in a user turn": (
        {
            **_asked(),
            "messages": [
                {"role": "user", "content": [{"type": "tool_use", "id": "x", "name": "get_weather", "input": {}}]}
            ],
        },
        "messages[0].content[0]: a tool_use block cannot stand here",
    ),
    "a system turn": (
        {**_asked(), "messages": [{"role": "system", "content": "hi"}]},
        "messages[0]: a message must be",
    ),
    "a bad thinking": (_asked(thinking={"type": "sometimes"}), "thinking must be"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_a_bad_request_is_a_400_in_anthropic_s_error_shape(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer, case: str
) -> None:
    body, message = BAD_REQUESTS[case]
    with _serving(analysed, QWEN3, stand_in) as base:
        response = _post(base, body)
    assert response.status_code == 400
    error = _error(response)
    assert error["type"] == "invalid_request_error" and message in error["message"], error
    assert stand_in.requests == []  # type: ignore[attr-defined]


def test_a_body_that_is_not_json_is_a_400_in_anthropic_s_shape(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    with _serving(analysed, QWEN, stand_in) as base:
        response = httpx.post(base + "/v1/messages", content=b"{nope", timeout=30)
    assert response.status_code == 400 and _error(response)["message"].startswith("the request body is not JSON")


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_failure_is_an_api_error(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer, stream: bool
) -> None:
    stand_in.script = (500, "", "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN, stand_in) as base:
        response = _post(base, _asked(stream=stream))
    error = _error(response)
    assert response.status_code == 502 and error["type"] == "api_error" and "HTTP 500" in error["message"]


def test_a_stream_cut_mid_way_ends_with_an_error_event(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    stand_in.raw = (
        b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {"content": "Sun", "stop": false}\n\n'  # type: ignore[attr-defined]
    )
    with _serving(analysed, QWEN, stand_in) as base:
        events = _sse(_post(base, _asked(stream=True)))
    name, data = events[-1]
    assert name == "error" and data["error"]["type"] == "api_error" and "cut" in data["error"]["message"]


def test_an_unexpected_failure_is_a_500_api_error_not_a_traceback(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.messages_api

    def broken(*_: Any, **__: Any) -> dict[str, Any]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(analyzer.messages_api, "message_object", broken)
    with _serving(analysed, QWEN, stand_in) as base:
        response = _post(base, _asked())
    error = _error(response)
    assert response.status_code == 500 and error == {
        "type": "api_error",
        "message": "internal error: RuntimeError: a bug",
    }


def test_the_api_key_is_taken_as_x_api_key_and_refused_in_anthropic_s_shape(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    stand_in.script = (200, "Sunny.", "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN, stand_in, api_key=KEY) as base:
        for headers in ({}, {"x-api-key": "wrong"}, {"Authorization": "Bearer wrong"}):
            response = _post(base, _asked(), **headers)
            error = _error(response)
            assert response.status_code == 401 and error["type"] == "authentication_error", headers
        assert "x-api-key" in _error(_post(base, _asked()))["message"]
        assert stand_in.requests == []  # type: ignore[attr-defined]
        for headers in ({"x-api-key": KEY}, {"Authorization": f"Bearer {KEY}"}):
            response = _post(base, _asked(), **headers, **{"anthropic-version": "2023-06-01"})
            assert response.status_code == 200 and response.json()["content"][0]["text"] == "Sunny."
        # The chat endpoint's 401 stays OpenAI's.
        chat = httpx.post(base + "/v1/chat/completions", json={"messages": ASKED}, timeout=30).json()
        assert chat["error"]["code"] == "invalid_api_key"


# --------------------------------------------------------------------------- count_tokens


def test_count_tokens_counts_the_prompt_the_request_would_send(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    """The prompt is the one /v1/messages sends; the upstream's /tokenize counts it with the BOS
    /completion adds (the stand-in: one token per character, and one for the BOS)."""
    body = {key: value for key, value in _history("call_abc")[0].items() if key != "max_tokens"}
    with _serving(analysed, QWEN3, stand_in) as base:
        counted = httpx.post(base + "/v1/messages/count_tokens", json=body, timeout=30)
        assert _post(base, {**body, "max_tokens": 120}).status_code == 200
    assert counted.status_code == 200
    (_, tokenized), (_, completed) = stand_in.requests  # type: ignore[attr-defined]
    assert tokenized == {"content": completed["prompt"], "add_special": True}
    assert counted.json() == {"input_tokens": len(completed["prompt"]) + 1}


def test_count_tokens_refuses_what_it_does_not_take(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    with _serving(analysed, QWEN3, stand_in) as base:
        with_max = httpx.post(base + "/v1/messages/count_tokens", json=_asked(), timeout=30)
        with_image = httpx.post(
            base + "/v1/messages/count_tokens",
            json={"model": "m", "messages": [{"role": "user", "content": [IMAGE]}]},
            timeout=30,
        )
    assert with_max.status_code == 400 and "takes no max_tokens" in _error(with_max)["message"]
    assert with_image.status_code == 400 and "image block" in _error(with_image)["message"]
    assert stand_in.requests == []  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the anthropic library


def _anthropic(base: str, key: str = "unused") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)


def test_the_anthropic_library_reads_the_reply_and_folds_the_stream_into_it(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    """The official client's own models and its stream accumulator (partial JSON included) take our
    reply and events."""
    stand_in.script = (200, REASONED_CALLS, "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN3, stand_in) as base:
        client = _anthropic(base)
        asked: Any = {"model": "m", "max_tokens": 200, "messages": ASKED, "tools": [WEATHER_TOOL]}
        batch = client.messages.create(**asked, tool_choice={"type": "any"})
        with client.messages.stream(**asked) as stream:
            kinds = [event.type for event in stream]
            folded = stream.get_final_message()
        counted = client.messages.count_tokens(model="m", messages=ASKED, tools=[WEATHER_TOOL])
    assert [block.type for block in batch.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert isinstance(batch.content[2], anthropic.types.ToolUseBlock) and batch.content[2].input == {"city": "Rome"}
    assert batch.stop_reason == "tool_use" and batch.usage.output_tokens == 9
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    for streamed, whole in zip(folded.content, batch.content, strict=True):
        assert streamed.model_dump(exclude={"id"}) == whole.model_dump(exclude={"id"})
    assert folded.stop_reason == "tool_use" and folded.usage.input_tokens == 17
    assert counted.input_tokens > 0


def test_the_anthropic_library_raises_our_errors_as_its_own(
    analysed: dict[str, tuple[Any, Any]], stand_in: ThreadingHTTPServer
) -> None:
    stand_in.script = (200, "Sunny.", "eos")  # type: ignore[attr-defined]
    with _serving(analysed, QWEN3, stand_in, api_key=KEY) as base:
        with pytest.raises(anthropic.AuthenticationError):
            _anthropic(base, "wrong").messages.create(model="m", max_tokens=20, messages=ASKED)
        client = _anthropic(base, KEY)  # sent as x-api-key
        image: Any = [{"role": "user", "content": [IMAGE]}]
        with pytest.raises(anthropic.BadRequestError, match="image block"):
            client.messages.create(model="m", max_tokens=20, messages=image)
        reply = client.messages.create(model="m", max_tokens=20, messages=ASKED)
    assert isinstance(reply.content[0], anthropic.types.TextBlock) and reply.content[0].text == "Sunny."
    assert reply.stop_reason == "end_turn"
