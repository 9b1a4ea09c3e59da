"""The llama-server export: the request body on real corpus templates, and the client side of
``--send`` against a local stand-in that answers in llama-server's /completion reply shape.

The stand-in checks our half of the protocol (request fields, reply parsing, streaming, errors);
it is not a llama-server, so it proves nothing about what a real server accepts."""

from __future__ import annotations

import json
import re
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.cli import run
from helpers.stand_in import serving, url

from analyzer.analysis import analyze
from analyzer.backends.parser import Delta, Message, apply
from analyzer.errors import ServerTimeout
from analyzer.llama_server import ChatRequest, prepare, send, stream_chunks
from analyzer.render.conversation import Renderer
from analyzer.render.engines import compile_template
from analyzer.sources import load_template

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ASKED = [{"role": "user", "content": "What is the weather in Paris?"}]
ANSWERED = [
    *ASKED,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_abc", "content": '{"temp": 21}'},
]


def _template(corpus_dir: Path, name: str):
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    return template, analyze(template)


def test_request_is_the_template_prompt_with_grammar_fields(corpus_dir: Path) -> None:
    template, description = _template(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    body = prepare(template, description, ChatRequest(ASKED, [WEATHER])).body
    expected = compile_template(template).render(ASKED, tools=[WEATHER], add_generation_prompt=True)
    assert body["prompt"] == expected
    assert body["grammar_lazy"] is True
    assert {"type": 1, "value": "<tool_call>"} in body["grammar_triggers"]
    assert "<tool_call>" in body["preserved_tokens"] and body["stop"] == ["<|im_end|>"]
    assert "get_weather" in body["grammar"] and body["n_predict"] > 0
    eager = prepare(template, description, ChatRequest(ASKED, [WEATHER], tool_choice="required")).body
    assert eager["grammar_lazy"] is False and not eager["grammar_triggers"]
    none = prepare(template, description, ChatRequest(ASKED, [WEATHER], tool_choice="none")).body
    assert "grammar" not in none and none["stop"] == ["<|im_end|>"]


def test_ids_are_rewritten_to_the_form_the_template_accepts(corpus_dir: Path) -> None:
    # Mistral Nemo raises on OpenAI-style ids; the call and its result must keep the same new id
    template, description = _template(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407")
    spelled = Renderer.for_template(template, description).spell(ANSWERED)
    new_id = spelled[1]["tool_calls"][0]["id"]
    assert len(new_id) == 9 and new_id.isalnum() and spelled[2]["tool_call_id"] == new_id
    body = prepare(template, description, ChatRequest(ANSWERED, [WEATHER])).body
    assert body["prompt"].count(new_id) == 2 and "call_abc" not in body["prompt"]
    assert ANSWERED[1]["tool_calls"][0]["id"] == "call_abc"  # the caller's messages are not changed


def test_the_prompt_leaves_the_bos_to_the_server(corpus_dir: Path, tmp_path: Path) -> None:
    """llama-server adds the model's BOS token to a /completion prompt itself (its chat path strips the
    template's): the exported prompt must not carry a second one, placeholder or real."""
    template, description = _template(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407")
    rendered = compile_template(template).render(ASKED, tools=[WEATHER], add_generation_prompt=True)
    body = prepare(template, description, ChatRequest(ASKED, [WEATHER])).body
    assert rendered.startswith("<s>") and body["prompt"] == rendered[len("<s>") :]
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "chat_template": (corpus_dir / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(encoding="utf-8"),
                "bos_token": "<|begin_of_text|>",
                "eos_token": "<|eot_id|>",
            }
        )
    )
    llama = load_template(str(tmp_path / "tokenizer_config.json"))
    prompt = prepare(llama, analyze(llama), ChatRequest(ASKED, [WEATHER])).body["prompt"]
    assert prompt.startswith("<|start_header_id|>system") and "<|begin_of_text|>" not in prompt
    # a tokenizer that adds no BOS of its own: the template's stays, as llama-server's chat path keeps it
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "chat_template": (corpus_dir / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(encoding="utf-8"),
                "bos_token": "<|begin_of_text|>",
                "eos_token": "<|eot_id|>",
                "add_bos_token": False,
            }
        )
    )
    kept = load_template(str(tmp_path / "tokenizer_config.json"))
    assert prepare(kept, analyze(kept), ChatRequest(ASKED, [WEATHER])).body["prompt"].startswith("<|begin_of_text|>")


def test_a_marker_that_is_a_special_word_and_punctuation_triggers_on_the_word(corpus_dir: Path) -> None:
    # [TOOL_CALLS][ is two tokens; the model writes [TOOL_CALLS] as one, which a server can see
    template, description = _template(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407")
    body = prepare(template, description, ChatRequest(ASKED, [WEATHER])).body
    assert body["grammar_triggers"] == [{"type": 1, "value": "[TOOL_CALLS]"}]
    assert body["grammar"].startswith('root ::= "[TOOL_CALLS][" ')  # the grammar still holds the whole marker


def test_arguments_are_spelled_as_the_template_takes_them(corpus_dir: Path) -> None:
    for name in ("Qwen-Qwen2.5-7B-Instruct", "meetkai-functionary-medium-v3.2"):
        template, description = _template(corpus_dir, name)
        arguments = Renderer.for_template(template, description).spell(ANSWERED)[1]["tool_calls"][0]["function"][
            "arguments"
        ]
        assert isinstance(arguments, str) == description.input_form.arguments_as_string
        prompt = prepare(template, description, ChatRequest(ANSWERED, [WEATHER])).body["prompt"]
        assert "Paris" in prompt and '{\\"city' not in prompt  # never double-encoded


# --------------------------------------------------------------------------- --send against a stand-in


CALL_TEXT = 'Let me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'


def test_send_makes_a_chat_completion(corpus_dir: Path, stand_in: ThreadingHTTPServer) -> None:
    template, description = _template(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    prepared = prepare(template, description, ChatRequest(ASKED, [WEATHER]))
    body = prepared.body
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    completion = send(url(stand_in), prepared)
    path, sent = stand_in.requests[0]  # type: ignore[attr-defined]
    assert path == "/completion" and sent["stream"] is False and sent["grammar"] == body["grammar"]
    choice = completion["choices"][0]
    assert completion["object"] == "chat.completion" and choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me check."
    call = choice["message"]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Rome"}'}
    assert completion["usage"] == {"prompt_tokens": 17, "completion_tokens": 9, "total_tokens": 26}


def test_streaming_gives_the_batch_message(corpus_dir: Path, stand_in: ThreadingHTTPServer) -> None:
    template, description = _template(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    prepared = prepare(template, description, ChatRequest(ASKED, [WEATHER]))
    parser = prepared.parser
    stand_in.script = (200, CALL_TEXT, "word")  # type: ignore[attr-defined]
    chunks = list(stream_chunks(url(stand_in), prepared))
    assert stand_in.requests[0][1]["stream"] is True  # type: ignore[attr-defined]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "L"}
    folded = Message()
    for chunk in chunks[:-2]:
        delta = chunk["choices"][0]["delta"]
        call = (delta.get("tool_calls") or [{}])[0]
        apply(
            folded,
            Delta(
                content=delta.get("content", ""),
                call_index=call.get("index"),
                call_id=call.get("id"),
                call_name=call.get("function", {}).get("name"),
                arguments=call.get("function", {}).get("arguments", ""),
            ),
        )
    batch = parser.parse(CALL_TEXT)
    assert folded.content == batch.content
    assert [(c.name, c.arguments) for c in folded.tool_calls] == [(c.name, c.arguments) for c in batch.tool_calls]
    # The reply's ids are fresh ones in the form the template takes, not the parser's (made from the call's text).
    assert all(
        re.fullmatch("call_[A-Za-z0-9]{24}", ours.id) and ours.id != parsed.id
        for ours, parsed in zip(folded.tool_calls, batch.tool_calls, strict=True)
    )
    assert chunks[-2]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 26
    assert len({chunk["id"] for chunk in chunks}) == 1


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "messages.json").write_text(json.dumps(ASKED))
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER]))
    return ["--messages", str(tmp_path / "messages.json"), "--tools", str(tmp_path / "tools.json")]


def test_cli_prints_the_body_and_reports_server_errors_apart(
    corpus_dir: Path, tmp_path: Path, stand_in: ThreadingHTTPServer
) -> None:
    template = str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")
    code, out, _ = run(["export", template, *_files(tmp_path), "--n-predict", "64"])
    assert code == 0 and json.loads(out)["n_predict"] == 64
    assert "ws ::=" not in json.loads(out)["grammar"]  # exact: the template's own whitespace only
    code, out, _ = run(["export", template, *_files(tmp_path), "--whitespace", "flexible"])
    assert code == 0 and "ws ::=" in json.loads(out)["grammar"]

    stand_in.script = (200, "Sunny in", "limit")  # type: ignore[attr-defined]
    code, out, err = run(["export", template, *_files(tmp_path), "--send", url(stand_in)])
    assert code == 5 and "cut at n_predict" in err and err.count("\n") == 1
    assert json.loads(out)["choices"][0]["finish_reason"] == "length"

    stand_in.script = (400, "", "eos")  # type: ignore[attr-defined]
    code, out, err = run(["export", template, *_files(tmp_path), "--send", url(stand_in)])
    assert code == 4 and "HTTP 400: the grammar is not valid" in err and out == ""

    with serving() as closed:  # a port no server listens on any more
        port = closed.server_address[1]
    code, out, err = run(["export", template, *_files(tmp_path), "--send", f"http://127.0.0.1:{port}"])
    assert code == 3 and "no llama-server answered" in err and "Traceback" not in err


def test_cli_rejects_bad_export_input(corpus_dir: Path, tmp_path: Path) -> None:
    template = str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")
    code, _, err = run(["export", template, *_files(tmp_path), "--stream"])
    assert code == 2 and "--stream needs --send" in err
    (tmp_path / "bad.json").write_text(json.dumps({"role": "user"}))
    code, _, err = run(["export", template, "--messages", str(tmp_path / "bad.json")])
    assert code == 2 and "bad.json" in err and "must be a JSON list of objects" in err and err.count("\n") == 1


# --------------------------------------------------------------------------- --send against a misbehaving server


def _raw(status: str, kind: str, body: bytes, *, length: int | None = None) -> bytes:
    """A whole HTTP answer as bytes; ``length`` claims a Content-Length other than the body's."""
    size = len(body) if length is None else length
    head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


def _events(*events: object) -> bytes:
    return b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events)


def _send_cli(corpus_dir: Path, tmp_path: Path, target: str, *extra: str) -> tuple[int, str, str]:
    template = str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")
    return run(["export", template, *_files(tmp_path), "--send", target, *extra])


def test_send_to_something_that_is_not_a_url(corpus_dir: Path, tmp_path: Path) -> None:
    code, out, err = _send_cli(corpus_dir, tmp_path, "notaurl")
    assert code == 2 and out == "" and err == "Error: notaurl: not a server URL (expected http://HOST:PORT)\n"
    code, _, err = _send_cli(corpus_dir, tmp_path, "http://127.0.0.1:port")
    assert code == 2 and "the port is not a number" in err and err.count("\n") == 1


MISBEHAVING = {
    "a 200 with an HTML page": (
        _raw("200 OK", "text/html", b"<html><body>It works!</body></html>"),
        (),
        "the reply is not JSON: <html><body>It works!</body></html>",
    ),
    "a connection closed mid-body": (
        _raw("200 OK", "application/json", b'{"content": "Sunny', length=400),
        (),
        "the connection closed after 18 bytes, before the reply's end",
    ),
    "content null": (
        _raw("200 OK", "application/json", json.dumps({"content": None, "stop": True}).encode()),
        (),
        "the reply's content is null, not text",
    ),
    "a reply without content": (
        _raw("200 OK", "application/json", b'{"status": "ok"}'),
        (),
        'the reply has no content: {"status": "ok"}',
    ),
    "a streamed error that is a string": (
        _raw("200 OK", "text/event-stream", _events({"content": "Sun", "stop": False}, {"error": "slot gone"})),
        ("--stream",),
        "/completion: slot gone",
    ),
    "a stream cut before its last event": (
        _raw(
            "200 OK", "text/event-stream", _events({"content": "Sun", "stop": False}, {"content": "ny", "stop": False})
        ),
        ("--stream",),
        "the stream ended before the server's last event: the reply is cut",
    ),
    "a streamed event that is not JSON": (
        _raw("200 OK", "text/event-stream", b"data: {oops\n\n"),
        ("--stream",),
        "a streamed event is not JSON: {oops",
    ),
}


@pytest.mark.parametrize("case", list(MISBEHAVING))
def test_send_reports_a_misbehaving_server_in_one_line(
    case: str, corpus_dir: Path, tmp_path: Path, stand_in: ThreadingHTTPServer
) -> None:
    answer, options, said = MISBEHAVING[case]
    stand_in.raw = answer  # type: ignore[attr-defined]
    code, out, err = _send_cli(corpus_dir, tmp_path, url(stand_in), *options)
    assert code == 4, (code, err)
    assert err.startswith("Error: http://127.0.0.1:") and err.endswith(said + "\n") and err.count("\n") == 1, err
    if options:  # streamed: what arrived before the failure was printed, and no finish reason was claimed
        assert all(json.loads(line)["choices"][0]["finish_reason"] is None for line in out.splitlines())
    else:
        assert out == ""


def test_send_times_out_in_one_line(corpus_dir: Path, tmp_path: Path, stand_in: ThreadingHTTPServer) -> None:
    template, description = _template(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    prepared = prepare(template, description, ChatRequest(ASKED, [WEATHER]))
    stand_in.delay = 1.0  # type: ignore[attr-defined]
    with pytest.raises(ServerTimeout, match=r"/completion: no answer within 0.2 s$"):
        send(url(stand_in), prepared, timeout=0.2)


def test_a_template_switched_by_its_own_variable(corpus_dir: Path) -> None:
    """MiniMax-M3 reads thinking from thinking_mode ("enabled"/"disabled"), not enable_thinking: a request
    that asks for thinking either way gets the prompt that opens the block, and a parser that reads the
    model's text as reasoning."""
    template, description = _template(corpus_dir, "MiniMax-M3")
    reasoning = description.reasoning
    assert reasoning.toggle.variable == "thinking_mode"  # type: ignore[union-attr]
    opener = reasoning.open.strip()  # type: ignore[union-attr]
    asked = [
        ChatRequest(ASKED, [WEATHER], thinking=True),
        ChatRequest(ASKED, [WEATHER], template_kwargs={"thinking_mode": "enabled"}),
    ]
    for request in asked:
        prepared = prepare(template, description, request)
        assert prepared.body["prompt"].rstrip().endswith(opener), request
        message = prepared.parser.parse("Paris is in France.</mm:think>It is sunny.")
        assert (message.reasoning_content, message.content) == ("Paris is in France.", "It is sunny."), request
    off = prepare(template, description, ChatRequest(ASKED, [WEATHER], thinking=False))
    assert not off.body["prompt"].rstrip().endswith(opener)


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B", "mistralai-Mistral-Nemo-Instruct-2407", "moonshotai-Kimi-K2"])
def test_export_gives_content_parts_the_prompt_strings_give(corpus_dir: Path, tmp_path: Path, name: str) -> None:
    template = str(corpus_dir / f"{name}.jinja")
    bodies = []
    for content in ("What is the weather?", [{"type": "text", "text": "What is the weather?"}]):
        (tmp_path / "m.json").write_text(json.dumps([{"role": "user", "content": content}]))
        code, out, err = run(["export", template, "--messages", str(tmp_path / "m.json")])
        assert code == 0, err
        bodies.append(json.loads(out))
    assert bodies[0] == bodies[1]
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    (tmp_path / "m.json").write_text(json.dumps([{"role": "user", "content": [{"type": "text", "text": "?"}, image]}]))
    code, _, err = run(["export", template, "--messages", str(tmp_path / "m.json")])
    # Kimi K2 reads parts (an image too), but /completion is sent text: refused all the same.
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"Error: {tmp_path / 'm.json'}: message 1, content part 2: an image_url part: ")
