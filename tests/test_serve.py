"""``serve`` against a stand-in upstream (tests/helpers/stand_in.py, llama-server's /completion reply
shape), driven by the official ``openai`` client and by raw HTTP: what is sent upstream, the reply
and chunk shapes, every error status, disconnects and concurrency. The real llama-server behind
``serve`` is in tests/e2e/test_serve_e2e.py."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from helpers.cli import run
from helpers.serving import announced_url, running, serve_command
from helpers.stand_in import serving, url
from openai.lib.streaming.chat import ChatCompletionStreamState

from analyzer.analysis import analyze
from analyzer.llama_server import ChatRequest, prepare
from analyzer.serve import ServeConfig
from analyzer.sources import load_template
from analyzer.template import Template

QWEN = "Qwen-Qwen2.5-7B-Instruct"
MISTRAL = "mistralai-Mistral-Nemo-Instruct-2407"
# Any: the openai client types its parameters as TypedDicts these plain literals stand for
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ASKED: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
CALL_TEXT = 'Let me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'


@pytest.fixture(scope="module")
def analysed(corpus_dir: Path) -> dict[str, tuple[Template, Any]]:
    found = {}
    for name in (QWEN, MISTRAL):
        template = load_template(str(corpus_dir / f"{name}.jinja"))
        found[name] = (template, analyze(template))
    return found


@pytest.fixture
def stand_in() -> Iterator[ThreadingHTTPServer]:
    with serving() as server:
        yield server


@pytest.fixture
def serve_url(analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer) -> Iterator[str]:
    template, description = analysed[QWEN]
    with running(ServeConfig(template, description, url(stand_in), timeout=5.0)) as base:
        yield base


def _client(base: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, **options)


def _post(base: str, body: dict[str, Any], timeout: float = 30.0) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", json=body, timeout=timeout)


def _events(response: httpx.Response) -> list[Any]:
    """The data of each server-sent event, JSON-decoded except the closing ``[DONE]``."""
    found: list[Any] = []
    for block in response.text.split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            data = block[len("data: ") :]
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


# --------------------------------------------------------------------------- what is asked upstream


def test_the_upstream_gets_our_prompt_grammar_and_the_sampling_fields(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer, serve_url: str
) -> None:
    template, description = analysed[QWEN]
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    _client(serve_url).chat.completions.create(
        model="any",
        messages=ASKED,
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
        max_completion_tokens=77,
        temperature=0.5,
        top_p=0.9,
        seed=3,
        stop=["END"],
        logit_bias={"151657": 100},
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    path, sent = stand_in.requests[-1]  # type: ignore[attr-defined]
    expected = prepare(
        template,
        description,
        ChatRequest(ASKED, [WEATHER], tool_choice="get_weather", parallel=False, n_predict=77, thinking=False),
    ).body
    assert path == "/completion" and sent["stream"] is False
    assert sent["prompt"] == expected["prompt"] and sent["grammar"] == expected["grammar"]
    assert sent["grammar_lazy"] is False and sent["n_predict"] == 77
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.5, 0.9, 3)
    assert sent["stop"] == [*expected["stop"], "END"] and sent["logit_bias"] == [[151657, 100]]


def test_without_max_tokens_the_upstream_sets_the_limit(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    _client(serve_url).chat.completions.create(model="any", messages=ASKED)
    sent = stand_in.requests[-1][1]  # type: ignore[attr-defined]
    assert sent["n_predict"] == -1 and "grammar" not in sent and "temperature" not in sent


# --------------------------------------------------------------------------- the reply


def test_a_call_comes_back_as_a_chat_completion(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    reply = _client(serve_url).chat.completions.create(model="mine", messages=ASKED, tools=[WEATHER])
    choice = reply.choices[0]
    assert reply.object == "chat.completion" and reply.model == "mine" and choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check."
    (call,) = choice.message.tool_calls or []
    assert call.type == "function" and call.id.startswith("call_")
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Rome"})
    assert reply.usage is not None and (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (17, 9)


# Calls the parser reports: a tool nobody declared, and arguments the schema refuses (twice).
FAULTY_CALLS = (
    '<tool_call>\n{"name": "fly", "arguments": {}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"town": 1}}\n</tool_call>'
)


@pytest.mark.parametrize(
    ("text", "stop_type", "finish"),
    [
        (CALL_TEXT, "word", "tool_calls"),
        ("Sunny, 21 degrees.", "eos", "stop"),
        ("Sunny, 2", "limit", "length"),
        (FAULTY_CALLS, "eos", "tool_calls"),
    ],
)
def test_streamed_chunks_fold_into_the_batch_message(
    stand_in: ThreadingHTTPServer, serve_url: str, text: str, stop_type: str, finish: str
) -> None:
    stand_in.script = (200, text, stop_type)  # type: ignore[attr-defined]
    client = _client(serve_url)
    batch = client.chat.completions.create(model="m", messages=ASKED, tools=[WEATHER])
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    chunks = list(client.chat.completions.create(model="m", messages=ASKED, tools=[WEATHER], stream=True))
    for chunk in chunks:
        state.handle_chunk(chunk)
    folded = state.current_completion_snapshot.choices[0]  # the client's fold (its final check refuses length)
    assert folded.finish_reason == batch.choices[0].finish_reason == finish
    assert folded.message.content == batch.choices[0].message.content
    assert [(c.id, c.function.name, c.function.arguments) for c in folded.message.tool_calls or []] == [
        (c.id, c.function.name, c.function.arguments)  # type: ignore[union-attr]
        for c in batch.choices[0].message.tool_calls or []
    ]
    errors = batch.choices[0].message.errors  # type: ignore[attr-defined]  # ours, beside OpenAI's fields
    assert getattr(folded.message, "errors", []) == errors and (len(errors) >= 2) == (text == FAULTY_CALLS)
    assert all(chunk.usage is None for chunk in chunks)  # no include_usage: no usage


def test_chunks_have_openai_s_shape(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    body = {
        "model": "m",
        "messages": ASKED,
        "tools": [WEATHER],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    response = _post(serve_url, body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = _events(response)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert len({(c["id"], c["created"], c["model"], c["object"]) for c in chunks}) == 1
    assert chunks[0]["object"] == "chat.completion.chunk" and all("usage" in c for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    assert deltas[0] == {"role": "assistant", "content": None, **deltas[0]} and deltas[0]["content"]
    assert all("role" not in d for d in deltas[1:])
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    first, *rest = calls
    assert set(first) == {"index", "id", "type", "function"} and first["type"] == "function"
    assert first["function"]["name"] == "get_weather"
    assert all(set(c) == {"index", "function"} and set(c["function"]) == {"arguments"} for c in rest)
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"city": "Rome"}
    assert "".join(d.get("content") or "" for d in deltas) == "Let me check."
    assert chunks[-2]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
    assert chunks[-2]["usage"] is None
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {
        "prompt_tokens": 17,
        "completion_tokens": 9,
        "total_tokens": 26,
    }


def test_models_and_health(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    assert [model.id for model in _client(serve_url).models.list()] == ["stand-in"]
    health = httpx.get(serve_url + "/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"


# --------------------------------------------------------------------------- bad requests: 400


def _error(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    return error


BAD_REQUESTS: dict[str, tuple[dict[str, Any], str, str]] = {
    "no messages": ({"model": "m"}, "messages", "messages must be a non-empty list"),
    "unknown tool in tool_choice": (
        {"messages": ASKED, "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "fly"}}},
        "tool_choice",
        "tool_choice names 'fly', which is not a declared tool (get_weather)",
    ),
    "a tool_choice of no kind": (
        {"messages": ASKED, "tools": [WEATHER], "tool_choice": "always"},
        "tool_choice",
        "tool_choice 'always' is none of auto, required, none",
    ),
    "a bad tools schema": (
        {
            "messages": ASKED,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}],
        },
        "tools",
        "tools[0] 'f': parameters: 'type' must be one of",
    ),
    "a tool without a name": (
        {"messages": ASKED, "tools": [{"type": "function", "function": {"parameters": {}}}]},
        "tools",
        "tools: tool 1 has no name",
    ),
    "max_tokens of zero": ({"messages": ASKED, "max_tokens": 0}, "max_tokens", "max_tokens must be a whole number"),
    "a temperature out of range": ({"messages": ASKED, "temperature": 9}, "temperature", "temperature must be"),
    "template variables standing in for the request": (
        {"messages": ASKED, "chat_template_kwargs": {"messages": [], "enable_thinking": True}},
        "chat_template_kwargs",
        "chat_template_kwargs cannot set messages",
    ),
    "several choices": ({"messages": ASKED, "n": 2}, "n", "only one choice per request"),
    "a json_schema response_format": (
        {"messages": ASKED, "response_format": {"type": "json_object"}},
        "response_format",
        "only text replies",
    ),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_a_bad_request_is_a_400_naming_the_field(case: str, stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    body, param, said = BAD_REQUESTS[case]
    response = _post(serve_url, body)
    error = _error(response)
    assert response.status_code == 400 and error["type"] == "invalid_request_error"
    assert error["param"] == param and said in error["message"], error
    assert stand_in.requests == []  # type: ignore[attr-defined]


def test_a_body_that_is_not_json_is_a_400(serve_url: str) -> None:
    response = httpx.post(serve_url + "/v1/chat/completions", content=b"{nope", timeout=10)
    assert response.status_code == 400 and _error(response)["message"].startswith("the request body is not JSON")


def test_messages_the_template_refuses_get_its_own_message(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer
) -> None:
    template, description = analysed[MISTRAL]
    with (
        running(ServeConfig(template, description, url(stand_in))) as base,
        pytest.raises(openai.BadRequestError) as refused,
    ):
        _client(base).chat.completions.create(model="m", messages=[*ASKED, *ASKED])
    assert refused.value.status_code == 400
    assert "conversation roles must alternate user/assistant/user/assistant" in str(refused.value.message)
    assert stand_in.requests == []  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- upstream failures: 502, 504


def test_an_upstream_that_is_down_is_a_502(analysed: dict[str, tuple[Template, Any]]) -> None:
    template, description = analysed[QWEN]
    with serving() as gone:
        port = gone.server_address[1]
    with running(ServeConfig(template, description, f"http://127.0.0.1:{port}")) as base:
        for stream in (False, True):
            response = _post(base, {"messages": ASKED, "stream": stream})
            error = _error(response)
            assert response.status_code == 502 and error["code"] == "upstream_unreachable"
            assert error["message"].startswith(f"http://127.0.0.1:{port}/completion: no llama-server answered")
        health = httpx.get(base + "/health")
        assert health.status_code == 503 and _error(health)["code"] == "upstream_unreachable"
        assert httpx.get(base + "/v1/models").status_code == 502


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_http_error_is_a_502_with_its_message(
    stand_in: ThreadingHTTPServer, serve_url: str, stream: bool
) -> None:
    stand_in.script = (500, "", "eos")  # type: ignore[attr-defined]
    response = _post(serve_url, {"messages": ASKED, "stream": stream})
    error = _error(response)
    assert response.status_code == 502 and error["code"] == "upstream_error"
    assert error["message"].endswith("/completion: HTTP 500: the grammar is not valid")


def test_an_upstream_4xx_is_the_client_s_and_passed_on(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    stand_in.script = (400, "", "eos")  # type: ignore[attr-defined]
    with pytest.raises(openai.BadRequestError, match="HTTP 400: the grammar is not valid"):
        _client(serve_url).chat.completions.create(model="m", messages=ASKED)


def test_an_upstream_reply_that_is_not_llama_server_s_is_a_502(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    page = b"<html>It works!</html>"
    stand_in.raw = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page)  # type: ignore[attr-defined]
    response = _post(serve_url, {"messages": ASKED})
    assert response.status_code == 502 and _error(response)["message"].endswith(
        "the reply is not JSON: " + page.decode()
    )


def test_a_body_cut_mid_way_is_a_502(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    stand_in.raw = b'HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n{"content": "Sun'  # type: ignore[attr-defined]
    response = _post(serve_url, {"messages": ASKED})
    error = _error(response)
    assert response.status_code == 502 and error["code"] == "bad_upstream_reply"
    assert "/completion: the reply broke off" in error["message"]


def test_a_stream_cut_mid_way_ends_with_an_error_event(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    events = b"".join(b"data: %s\n\n" % json.dumps({"content": t, "stop": False}).encode() for t in ("Sun", "ny"))
    stand_in.raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + events  # type: ignore[attr-defined]
    response = _post(serve_url, {"messages": ASKED, "stream": True})
    assert response.status_code == 200  # sent before the cut
    *chunks, last = _events(response)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Sunny"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    assert last["error"]["code"] == "bad_upstream_reply" and last["error"]["message"].endswith("the reply is cut")
    with pytest.raises(openai.APIError, match="the reply is cut"):
        list(_client(serve_url).chat.completions.create(model="m", messages=ASKED, stream=True))


def test_an_upstream_error_event_reaches_the_client(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    events = b'data: {"content": "Sun", "stop": false}\n\ndata: {"error": {"code": 500, "message": "slot gone"}}\n\n'
    stand_in.raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + events  # type: ignore[attr-defined]
    with pytest.raises(openai.APIError, match="/completion: slot gone"):
        list(_client(serve_url).chat.completions.create(model="m", messages=ASKED, stream=True))


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_slower_than_the_timeout_is_a_504(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer, stream: bool
) -> None:
    template, description = analysed[QWEN]
    stand_in.delay = 5.0  # type: ignore[attr-defined]
    with running(ServeConfig(template, description, url(stand_in), timeout=0.3)) as base:
        response = _post(base, {"messages": ASKED, "stream": stream})
    error = _error(response)
    assert response.status_code == 504 and error["code"] == "upstream_timeout"
    assert error["message"].endswith("/completion: no answer within 0.3 s")


# --------------------------------------------------------------------------- disconnects and concurrency


def test_a_client_that_leaves_a_stream_cancels_the_upstream_request(
    stand_in: ThreadingHTTPServer, serve_url: str
) -> None:
    stand_in.script = (200, "word " * 200, "eos")  # type: ignore[attr-defined]
    stand_in.pace = 0.05  # type: ignore[attr-defined]  # 1000 events: 50 s if nobody stops it
    with httpx.stream("POST", serve_url + "/v1/chat/completions", json={"messages": ASKED, "stream": True}) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
    assert stand_in.disconnected.wait(10)  # type: ignore[attr-defined]


def test_a_client_that_leaves_a_batch_request_cancels_the_upstream_request(
    stand_in: ThreadingHTTPServer, serve_url: str
) -> None:
    stand_in.delay = 30.0  # type: ignore[attr-defined]
    with pytest.raises(httpx.ReadTimeout):
        _post(serve_url, {"messages": ASKED}, timeout=0.5)
    assert stand_in.disconnected.wait(10)  # type: ignore[attr-defined]


def test_requests_are_served_concurrently(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    stand_in.script = (200, "Sunny.", "eos")  # type: ignore[attr-defined]
    stand_in.delay = 1.0  # type: ignore[attr-defined]
    replies: list[str | None] = []

    def ask() -> None:
        reply = _client(serve_url).chat.completions.create(model="m", messages=ASKED)
        replies.append(reply.choices[0].message.content)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert replies == ["Sunny."] * 4
    assert stand_in.most_in_flight == 4  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the command


def test_serve_command_rejects_bad_options_in_one_line(corpus_dir: Path) -> None:
    template = str(corpus_dir / f"{QWEN}.jinja")
    code, _, err = run(["serve", template, "--upstream", "notaurl"])
    assert code == 2 and err == "Error: notaurl: not a server URL (expected http://HOST:PORT)\n"
    with serving() as busy:
        port = busy.server_address[1]
        code, _, err = run(["serve", template, "--upstream", url(busy), "--port", str(port)])
    assert code == 2 and err.startswith(f"Error: 127.0.0.1:{port}: cannot listen: ") and err.count("\n") == 1


def test_serve_command_without_its_packages_says_what_to_install(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer

    monkeypatch.delitem(sys.modules, "analyzer.serve")
    monkeypatch.delattr(analyzer, "serve")
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    code, _, err = run(["serve", str(corpus_dir / f"{QWEN}.jinja"), "--upstream", "http://127.0.0.1:8080"])
    assert code == 1 and err == "Error: serve needs uvicorn: pip install 'template-analyzer[serve]'\n"


def test_serve_command_serves(corpus_dir: Path, stand_in: ThreadingHTTPServer, tmp_path: Path) -> None:
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    log = (tmp_path / "serve.log").open("w+")
    process = serve_command([str(corpus_dir / f"{QWEN}.jinja"), "--upstream", url(stand_in)], log)
    try:
        base = announced_url(log, process)
        reply = _client(base).chat.completions.create(model="m", messages=ASKED, tools=[WEATHER])
        assert reply.choices[0].message.tool_calls and reply.choices[0].finish_reason == "tool_calls"
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def test_chat_template_kwargs_reach_the_template(tmp_template: Any, stand_in: ThreadingHTTPServer) -> None:
    template = load_template(
        str(tmp_template("{% for m in messages %}[{{ m.content }}]{% endfor %}{{ greeting }}/{{ enable_thinking }}"))
    )
    with running(ServeConfig(template, analyze(template), url(stand_in))) as base:
        _client(base).chat.completions.create(
            model="m",
            messages=ASKED,
            extra_body={"chat_template_kwargs": {"greeting": "hello", "enable_thinking": False}},
        )
    assert stand_in.requests[-1][1]["prompt"] == f"[{ASKED[0]['content']}]hello/False"  # type: ignore[attr-defined]


def test_an_unexpected_failure_is_a_500_error_object_not_a_traceback(
    stand_in: ThreadingHTTPServer, serve_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.serve

    def broken(*_: Any, **__: Any) -> dict[str, Any]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(analyzer.serve, "chat_completion", broken)
    response = _post(serve_url, {"messages": ASKED})
    error = _error(response)
    assert response.status_code == 500 and error["message"] == "internal error: RuntimeError: a bug"
    assert "Traceback" not in response.text
