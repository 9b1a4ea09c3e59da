"""``serve`` against a stand-in upstream (tests/helpers/stand_in.py, llama-server's /completion reply
shape), driven by the official ``openai`` client and by raw HTTP: what is sent upstream, the reply
and chunk shapes, every error status, disconnects and concurrency. The real llama-server behind
``serve`` is in tests/e2e/test_serve_e2e.py."""

from __future__ import annotations

import contextlib
import functools
import json
import re
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
from helpers.serving import analysed_templates, announced_url, running, serve_command
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
OPENAI_ID = re.compile("call_[A-Za-z0-9]{24}")  # the ids made for a template that takes OpenAI's
CALL_TEXT = 'Let me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'


@pytest.fixture(scope="module")
def analysed(corpus_dir: Path) -> dict[str, tuple[Template, Any]]:
    return analysed_templates(corpus_dir, (QWEN, MISTRAL))


@pytest.fixture
def serve_url(analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer) -> Iterator[str]:
    template, description = analysed[QWEN]
    with running(ServeConfig(template, description, url(stand_in), timeout=5.0)) as base:
        yield base


def test_requests_share_one_lowered_shape(analysed: dict[str, tuple[Template, Any]]) -> None:
    """A server's description is lowered once: the parser's tables are kept by the shape's identity."""
    template, description = analysed[QWEN]
    first, second = (prepare(template, description, ChatRequest(ASKED, [WEATHER])) for _ in range(2))
    assert first.parser.shape is second.parser.shape


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
    # Each reply's ids are its own (fresh ones): the calls are the same, the ids of the same form.
    assert [(c.function.name, c.function.arguments) for c in folded.message.tool_calls or []] == [
        (c.function.name, c.function.arguments)  # type: ignore[union-attr]
        for c in batch.choices[0].message.tool_calls or []
    ]
    ids = [c.id for c in [*(folded.message.tool_calls or []), *(batch.choices[0].message.tool_calls or [])]]
    assert all(OPENAI_ID.fullmatch(i) for i in ids) and len(set(ids)) == len(ids)
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


# --------------------------------------------------------------------------- more templates


@functools.cache
def _corpus_template(path: str) -> tuple[Template, Any]:
    template = load_template(path)
    return template, analyze(template)


@contextlib.contextmanager
def _serving(
    corpus_dir: Path, name: str, stand_in: ThreadingHTTPServer, **options: Any
) -> Iterator[tuple[str, Template, Any]]:
    template, description = _corpus_template(str(corpus_dir / f"{name}.jinja"))
    with running(ServeConfig(template, description, url(stand_in), timeout=10.0, **options)) as base:
        yield base, template, description


# --------------------------------------------------------------------------- content given as parts

PARTS_TEMPLATES = [
    "Qwen-Qwen3-0.6B",  # fails on a list (a 400 before)
    MISTRAL,  # fails on a list
    "meta-llama-Llama-3.1-8B-Instruct",  # writes the list's Python text
    "moonshotai-Kimi-K2",  # reads parts
]
AS_STRINGS: Any = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the weather in Paris?"},
]
AS_PARTS: Any = [
    {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
    {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
]


@pytest.mark.parametrize("name", PARTS_TEMPLATES)
def test_content_parts_give_the_prompt_strings_give(corpus_dir: Path, stand_in: ThreadingHTTPServer, name: str) -> None:
    stand_in.script = (200, "Sunny.", "eos")  # type: ignore[attr-defined]
    with _serving(corpus_dir, name, stand_in) as (base, _, _):
        for messages in (AS_STRINGS, AS_PARTS):
            reply = _client(base).chat.completions.create(model="m", messages=messages)
            assert reply.choices[0].message.content == "Sunny."
    (_, by_strings), (_, by_parts) = stand_in.requests  # type: ignore[attr-defined]
    assert by_parts["prompt"] == by_strings["prompt"] and "What is the weather in Paris?" in by_parts["prompt"]
    assert "'type'" not in by_parts["prompt"]


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B", "moonshotai-Kimi-K2"])
def test_an_image_part_is_a_400_naming_the_message_and_the_part(
    corpus_dir: Path, stand_in: ThreadingHTTPServer, name: str
) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [AS_PARTS[0], {"role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}]
    with _serving(corpus_dir, name, stand_in) as (base, _, _):
        response = _post(base, {"messages": messages})
    assert response.status_code == 400
    assert _error(response)["message"].startswith("message 2, content part 2: an image_url part: ")
    assert stand_in.requests == []  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- call ids

MISTRAL_CALLS = (
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "abcdefghi"}, '
    '{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "abcdefghi"}]'
)
QWEN_CALLS = CALL_TEXT + '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("name", "text", "form"),
    [(QWEN, QWEN_CALLS, OPENAI_ID), (MISTRAL, MISTRAL_CALLS, re.compile("[A-Za-z0-9]{9}"))],
)
def test_call_ids_are_fresh_for_every_call_and_of_the_template_s_form(
    corpus_dir: Path, stand_in: ThreadingHTTPServer, name: str, text: str, form: re.Pattern[str]
) -> None:
    """Two identical requests, two parallel calls in each, streamed and not: every id differs, each of
    the form the template takes (Mistral's nine letters and digits, not the id the model wrote twice)."""
    stand_in.script = (200, text, "eos")  # type: ignore[attr-defined]
    ids = []
    with _serving(corpus_dir, name, stand_in) as (base, _, _):
        client = _client(base)
        for _ in range(2):
            reply = client.chat.completions.create(model="m", messages=ASKED, tools=[WEATHER])
            ids += [call.id for call in reply.choices[0].message.tool_calls or []]
            state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
            for chunk in client.chat.completions.create(model="m", messages=ASKED, tools=[WEATHER], stream=True):
                state.handle_chunk(chunk)
            ids += [call.id for call in state.current_completion_snapshot.choices[0].message.tool_calls or []]
    assert len(ids) == 8 and len(set(ids)) == 8 and all(form.fullmatch(i) for i in ids), ids
    assert "abcdefghi" not in ids


def test_a_streamed_call_s_id_is_the_same_in_its_delta_and_the_folded_message(
    stand_in: ThreadingHTTPServer, serve_url: str
) -> None:
    stand_in.script = (200, QWEN_CALLS, "eos")  # type: ignore[attr-defined]
    events = _events(_post(serve_url, {"messages": ASKED, "tools": [WEATHER], "stream": True}))
    named = [c for e in events[:-1] for c in e["choices"][0]["delta"].get("tool_calls", []) if "id" in c]
    assert [c["index"] for c in named] == [0, 1] and named[0]["id"] != named[1]["id"]
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    for chunk in _client(serve_url).chat.completions.create(model="m", messages=ASKED, tools=[WEATHER], stream=True):
        state.handle_chunk(chunk)
        for delta_call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            if delta_call.id is not None:
                folded = state.current_completion_snapshot.choices[0].message.tool_calls or []
                assert folded[delta_call.index].id == delta_call.id


# --------------------------------------------------------------------------- the controls of a served endpoint

KEY = "sk-local-test"


def test_an_api_key_is_asked_of_every_client_but_health(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer
) -> None:
    template, description = analysed[QWEN]
    stand_in.script = (200, "Sunny.", "eos")  # type: ignore[attr-defined]
    with running(ServeConfig(template, description, url(stand_in), api_key=KEY)) as base:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            response = httpx.post(base + "/v1/chat/completions", json={"messages": ASKED}, headers=headers)
            error = _error(response)
            assert response.status_code == 401 and error["code"] == "invalid_api_key", headers
            assert error["type"] == "invalid_request_error" and response.headers["www-authenticate"] == "Bearer"
        assert httpx.get(base + "/v1/models").status_code == 401
        assert stand_in.requests == []  # type: ignore[attr-defined]
        with pytest.raises(openai.AuthenticationError):
            _client(base).chat.completions.create(model="m", messages=ASKED)
        reply = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0).chat.completions.create(
            model="m", messages=ASKED
        )
        assert reply.choices[0].message.content == "Sunny."
        assert httpx.get(base + "/v1/models", headers={"x-api-key": KEY}).status_code == 200
        assert httpx.get(base + "/health").status_code == 200  # open, for supervisors


def test_the_upstream_key_is_sent_upstream(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer
) -> None:
    template, description = analysed[QWEN]
    with running(ServeConfig(template, description, url(stand_in), upstream_api_key="up-key")) as base:
        _client(base).chat.completions.create(model="m", messages=ASKED)
        _client(base).chat.completions.create(model="m", messages=ASKED, stream=True)
        httpx.get(base + "/health")
        httpx.get(base + "/v1/models")
    paths = [path for path, _ in stand_in.requests]  # type: ignore[attr-defined]
    assert paths == ["/completion", "/completion", "/health", "/v1/models"]
    assert [h.get("Authorization") for h in stand_in.headers] == ["Bearer up-key"] * 4  # type: ignore[attr-defined]


def test_without_an_upstream_key_no_authorization_is_sent(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    _client(serve_url).chat.completions.create(model="m", messages=ASKED)
    assert "Authorization" not in stand_in.headers[-1]  # type: ignore[attr-defined]


def test_llama_server_s_sampling_fields_reach_the_upstream(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    fields = {
        "top_k": 5,
        "min_p": 0.05,
        "typical_p": 0.9,
        "repeat_penalty": 1.1,
        "repeat_last_n": 64,
        "dry_multiplier": 0.8,
        "dry_sequence_breakers": ["\n", ":"],
        "xtc_probability": 0.5,
        "mirostat": 2,
        "mirostat_tau": 5.0,
        "samplers": ["top_k", "temperature"],
        "cache_prompt": True,
    }
    _client(serve_url).chat.completions.create(model="m", messages=ASKED, extra_body=fields)
    sent = stand_in.requests[-1][1]  # type: ignore[attr-defined]
    assert {key: sent.get(key) for key in fields} == fields


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("top_kk", 5, "unknown field 'top_kk'"),
        (
            "repetition_penalty",
            1.1,
            "unknown field 'repetition_penalty'",
        ),  # vLLM's name; llama-server's is repeat_penalty
        ("grammar", "root ::= x", "unknown field 'grammar'"),  # serve writes the grammar
        ("top_k", 2.5, "top_k must be a whole number, not 2.5"),
        ("dry_sequence_breakers", "\n", "dry_sequence_breakers must be a list of strings"),
        ("functions", [{"name": "f"}], "functions: the deprecated functions are not served"),
        ("thinking_token_budget", -2, "thinking_token_budget must be a whole number of tokens"),
    ],
)
def test_an_unknown_or_bad_field_is_a_400_naming_it(
    stand_in: ThreadingHTTPServer, serve_url: str, field: str, value: Any, said: str
) -> None:
    response = _post(serve_url, {"messages": ASKED, field: value})
    error = _error(response)
    assert response.status_code == 400 and error["param"] == field and error["message"].startswith(said), error
    assert stand_in.requests == []  # type: ignore[attr-defined]


def test_ignored_openai_fields_are_served(stand_in: ThreadingHTTPServer, serve_url: str) -> None:
    body = {"messages": ASKED, "user": "u1", "store": False, "metadata": {"a": "b"}, "service_tier": "auto", "n": 1}
    assert _post(serve_url, body).status_code == 200


def test_a_preflight_from_an_allowed_origin_gets_the_cors_headers(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer
) -> None:
    template, description = analysed[QWEN]
    origin = "http://localhost:3000"
    config = ServeConfig(template, description, url(stand_in), api_key=KEY, allowed_origins=(origin,))
    preflight = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    with running(config) as base:
        allowed = httpx.options(base + "/v1/chat/completions", headers=preflight)
        refused = httpx.options(base + "/v1/chat/completions", headers={**preflight, "Origin": "http://evil.test"})
        reply = httpx.post(
            base + "/v1/chat/completions",
            json={"messages": ASKED},
            headers={"Origin": origin, "Authorization": f"Bearer {KEY}"},
        )
        unauthorised = httpx.get(base + "/v1/models", headers={"Origin": origin})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == origin
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == origin
    # A 401 a browser can read: the CORS headers are on it too.
    assert unauthorised.status_code == 401 and unauthorised.headers["access-control-allow-origin"] == origin


def test_without_allowed_origins_a_preflight_is_not_answered(serve_url: str) -> None:
    response = httpx.options(
        serve_url + "/v1/chat/completions",
        headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 405 and "access-control-allow-origin" not in response.headers


def test_the_served_model_name_is_listed_and_in_every_reply_and_chunk(
    analysed: dict[str, tuple[Template, Any]], stand_in: ThreadingHTTPServer
) -> None:
    template, description = analysed[QWEN]
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    with running(ServeConfig(template, description, url(stand_in), served_model_name="qwen-local")) as base:
        client = _client(base)
        assert [model.id for model in client.models.list()] == ["qwen-local"]
        reply = client.chat.completions.create(model="gpt-4o", messages=ASKED, tools=[WEATHER])
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o", messages=ASKED, tools=[WEATHER], stream=True, stream_options={"include_usage": True}
            )
        )
    assert reply.model == "qwen-local"
    assert len(chunks) > 3 and {chunk.model for chunk in chunks} == {"qwen-local"}
    assert stand_in.requests[0][0] == "/completion"  # type: ignore[attr-defined]  # /v1/models was not asked upstream


def test_without_a_served_name_every_chunk_names_the_request_s_model(
    stand_in: ThreadingHTTPServer, serve_url: str
) -> None:
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    chunks = _events(_post(serve_url, {"model": "mine", "messages": ASKED, "stream": True}))[:-1]
    assert {chunk["model"] for chunk in chunks} == {"mine"}


def test_default_template_kwargs_are_overridden_by_the_request_s(
    tmp_template: Any, stand_in: ThreadingHTTPServer
) -> None:
    template = load_template(
        str(tmp_template("{% for m in messages %}[{{ m.content }}]{% endfor %}{{ greeting }}/{{ enable_thinking }}"))
    )
    defaults = {"greeting": "hi", "enable_thinking": False}
    with running(ServeConfig(template, analyze(template), url(stand_in), default_template_kwargs=defaults)) as base:
        client = _client(base)
        client.chat.completions.create(model="m", messages=ASKED)
        client.chat.completions.create(
            model="m", messages=ASKED, extra_body={"chat_template_kwargs": {"greeting": "hello"}}
        )
        client.chat.completions.create(
            model="m", messages=ASKED, extra_body={"chat_template_kwargs": {"enable_thinking": True}}
        )
    prompts = [body["prompt"].split("]")[-1] for _, body in stand_in.requests]  # type: ignore[attr-defined]
    assert prompts == ["hi/False", "hello/False", "hi/True"]


def test_serve_command_takes_the_controls(corpus_dir: Path, stand_in: ThreadingHTTPServer, tmp_path: Path) -> None:
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    log = (tmp_path / "serve.log").open("w+")
    options = [
        *("--upstream", url(stand_in), "--api-key", KEY, "--upstream-api-key", "up-key"),
        *("--served-model-name", "qwen-local", "--allowed-origins", "http://a.test,http://b.test"),
        *("--default-chat-template-kwargs", '{"enable_thinking": false}', "--reasoning-budget", "64"),
    ]
    process = serve_command([str(corpus_dir / f"{QWEN}.jinja"), *options], log)
    try:
        base = announced_url(log, process)
        assert httpx.post(base + "/v1/chat/completions", json={"messages": ASKED}).status_code == 401
        client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0)
        reply = client.chat.completions.create(model="m", messages=ASKED, tools=[WEATHER])
        preflight = httpx.options(
            base + "/v1/models", headers={"Origin": "http://b.test", "Access-Control-Request-Method": "GET"}
        )
    finally:
        process.terminate()
        process.wait(30)
        log.close()
    assert reply.model == "qwen-local" and reply.choices[0].finish_reason == "tool_calls"
    assert preflight.headers["access-control-allow-origin"] == "http://b.test"
    assert stand_in.headers[-1]["Authorization"] == "Bearer up-key"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the reasoning budget

QWEN3 = "Qwen-Qwen3-0.6B"
QWEN3_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
ENDLESS_REASONING = "<think>\nLet me think about the weather in Paris, " + "and more " * 60  # never closed


def _budgeted(stream: bool, **fields: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": ASKED,
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_tokens": 300,
        "stream": stream,
        "chat_template_kwargs": {"enable_thinking": True},
        **fields,
    }


@pytest.mark.parametrize("stream", [False, True])
def test_a_spent_budget_closes_the_reasoning_and_goes_on_under_the_call_grammar(
    corpus_dir: Path, stand_in: ThreadingHTTPServer, stream: bool
) -> None:
    """The upstream would reason on (the first script); at 12 tokens serve stops it, writes the
    template's closer after the reasoning so far and asks again under the grammar of the calls alone.
    (11 tokens: one per streamed character here, so the reasoning so far is "Let".)"""
    stand_in.scripts = [(200, ENDLESS_REASONING, "limit"), (200, QWEN3_CALL, "eos")]  # type: ignore[attr-defined]
    with _serving(corpus_dir, QWEN3, stand_in, reasoning_budget=11) as (base, template, description):
        response = _post(base, _budgeted(stream))
    assert response.status_code == 200
    if stream:
        state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
        for event in _events(response)[:-1]:
            state.handle_chunk(openai.types.chat.ChatCompletionChunk.model_validate(event))
        message: Any = state.current_completion_snapshot.choices[0].message
        finish = state.current_completion_snapshot.choices[0].finish_reason
    else:
        message = openai.types.chat.ChatCompletion.model_validate(response.json()).choices[0].message
        finish = response.json()["choices"][0]["finish_reason"]
        assert response.json()["usage"] == {"prompt_tokens": 17, "completion_tokens": 11 + 9, "total_tokens": 37}
    (call,) = message.tool_calls
    assert finish == "tool_calls" and json.loads(call.function.arguments) == {"city": "Rome"}
    assert message.reasoning_content == "Let"  # type: ignore[attr-defined]

    (_, first), (_, second) = stand_in.requests  # type: ignore[attr-defined]
    request = ChatRequest(ASKED, [WEATHER], tool_choice="required", n_predict=300, thinking=True)
    expected = prepare(template, description, request).body
    assert first["stream"] is True and first["prompt"] == expected["prompt"] and first["grammar"] == expected["grammar"]
    assert "reasoning-text" in first["grammar"]  # the first request's grammar lets the model reason
    assert second["prompt"] == first["prompt"] + "<think>\nLet" + "\n</think>\n\n"  # Qwen3's closer, as it writes it
    assert "reasoning-text" not in second["grammar"] and "<tool_call>" in second["grammar"]
    assert second["grammar_lazy"] is False and second["n_predict"] == 300 - 11
    assert second["stop"] == first["stop"] and second["preserved_tokens"] == first["preserved_tokens"]


def test_a_request_s_own_budget_wins_over_the_server_s(corpus_dir: Path, stand_in: ThreadingHTTPServer) -> None:
    stand_in.scripts = [(200, ENDLESS_REASONING, "limit"), (200, QWEN3_CALL, "eos")]  # type: ignore[attr-defined]
    with _serving(corpus_dir, QWEN3, stand_in, reasoning_budget=10_000) as (base, _, _):
        reply = _post(base, _budgeted(False, thinking_token_budget=19)).json()
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    (_, first), (_, second) = stand_in.requests  # type: ignore[attr-defined]
    assert second["prompt"] == first["prompt"] + ENDLESS_REASONING[:19] + "\n</think>\n\n"


def test_reasoning_closed_within_the_budget_is_one_request(corpus_dir: Path, stand_in: ThreadingHTTPServer) -> None:
    text = "<think>\nShort.\n</think>\n\n" + QWEN3_CALL
    stand_in.script = (200, text, "eos")  # type: ignore[attr-defined]
    with _serving(corpus_dir, QWEN3, stand_in, reasoning_budget=20) as (base, _, _):
        reply = _post(base, _budgeted(False)).json()
        events = _events(_post(base, _budgeted(True)))
    assert reply["choices"][0]["message"]["reasoning_content"] == "Short."
    assert reply["choices"][0]["finish_reason"] == "tool_calls" and events[-1] == "[DONE]"
    assert len(stand_in.requests) == 2  # type: ignore[attr-defined]  # one each, no continuation


def test_no_budget_where_thinking_is_off(corpus_dir: Path, stand_in: ThreadingHTTPServer) -> None:
    stand_in.script = (200, QWEN3_CALL, "eos")  # type: ignore[attr-defined]
    with _serving(corpus_dir, QWEN3, stand_in, reasoning_budget=5) as (base, _, _):
        body = _budgeted(False, chat_template_kwargs={"enable_thinking": False})
        assert _post(base, body).json()["choices"][0]["finish_reason"] == "tool_calls"
    ((_, sent),) = stand_in.requests  # type: ignore[attr-defined]
    assert sent["stream"] is False  # read whole: nothing to stop


def test_a_budget_of_zero_on_a_prompt_that_opens_the_block_starts_closed(
    corpus_dir: Path, stand_in: ThreadingHTTPServer
) -> None:
    """MiniMax-M2's prompt always opens reasoning: with no budget the first request already has it closed."""
    call = '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Rome</parameter>\n</invoke>\n'
    stand_in.script = (200, call + "</minimax:tool_call>", "eos")  # type: ignore[attr-defined]
    with _serving(corpus_dir, "MiniMax-M2", stand_in, reasoning_budget=0) as (base, template, description):
        reply = _post(base, _budgeted(False)).json()
    ((_, sent),) = stand_in.requests  # type: ignore[attr-defined]
    prompt = prepare(template, description, ChatRequest(ASKED, [WEATHER], tool_choice="required")).body["prompt"]
    assert prompt.endswith("<think>\n") and sent["prompt"] == prompt + "\n</think>\n"
    assert "reasoning-text" not in sent["grammar"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls", reply


@pytest.mark.parametrize(
    "description_format, tool_format, label",
    [
        ("tag-json", "auto", "tag-json tool calls"),
        ("none", "auto", "no tool format of its own: prompted json tool calls"),
        ("none", "native", "no tool format of its own: prompted json tool calls"),
        ("json", "fenced", "prompted fenced tool calls"),
    ],
)
def test_the_start_up_line_says_how_calls_are_written(description_format, tool_format, label) -> None:
    from analyzer.serve import tool_calls_label

    assert tool_calls_label(description_format, tool_format) == label
    assert "none tool calls" not in tool_calls_label(description_format, tool_format)


# --------------------------------------------------------------------------- arguments streamed as they arrive

WRITE_FILE: Any = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
FILE_TEXT = "".join(f'line {k}: "quoted", x=[{k}] & <b>\n' for k in range(1, 30))
WRITE_CALL = (
    "<tool_call>\n"
    + json.dumps({"name": "write_file", "arguments": {"path": "a.txt", "content": FILE_TEXT}}, ensure_ascii=False)
    + "\n</tool_call>"
)


# Qwen3-Coder writes arguments one by one: they stream as the JSON built as values arrive.
CODER_CALL = (
    "<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n"
    f"<parameter=content>\n{FILE_TEXT}\n</parameter>\n</function>\n</tool_call>"
)


@pytest.mark.parametrize(("name", "text"), [("Qwen-Qwen3-0.6B", WRITE_CALL), ("Qwen3-Coder", CODER_CALL)])
def test_a_long_string_argument_arrives_in_several_argument_chunks(
    corpus_dir: Path, stand_in: ThreadingHTTPServer, name: str, text: str
) -> None:
    """A coding agent writing a file sees its text as it comes: the first chunk of the call carries its
    id, type and name; then argument fragments, concatenated equal to the unstreamed arguments."""
    stand_in.script = (200, text, "eos")  # type: ignore[attr-defined]
    asked: Any = [{"role": "user", "content": "Write a.txt"}]
    with _serving(corpus_dir, name, stand_in) as (base, _, _):
        client = _client(base)
        whole = client.chat.completions.create(model="m", messages=asked, tools=[WRITE_FILE])
        (call,) = whole.choices[0].message.tool_calls or []
        calls = []
        for chunk in client.chat.completions.create(model="m", messages=asked, tools=[WRITE_FILE], stream=True):
            calls += [c for c in (chunk.choices[0].delta.tool_calls or [] if chunk.choices else [])]
    assert calls[0].id and calls[0].type == "function" and calls[0].function
    assert calls[0].function.name == "write_file" and not calls[0].function.arguments
    fragments = [c.function.arguments for c in calls[1:] if c.function and c.function.arguments]
    assert all(c.index == 0 and c.id is None for c in calls[1:])
    assert len(fragments) > 100, len(fragments)  # one character at a time from the stand-in
    assert "".join(fragments) == call.function.arguments
    assert json.loads(call.function.arguments) == {"path": "a.txt", "content": FILE_TEXT}
