"""The export, end to end against a real llama-server: the server accepts each exported request,
and what a random model writes under our grammar is read back by our parser as valid calls.

The server is built by ``.ci/build-llama-server`` from the pinned sdist; the model is made at test
time (tests/e2e/tiny_model.py). Without the binary the tests skip, unless
TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER=1 (as .ci/run sets) makes that a failure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest

from analyzer import corpus
from analyzer.analysis import analyze
from analyzer.backends.export import completion_request, send, stream_chunks
from analyzer.backends.gbnf import special_word
from analyzer.backends.parser import Parser
from analyzer.backends.parser.message import Delta, Message, apply
from analyzer.sources import load_template

from tests.e2e.tiny_model import build_model

# One template per format family: markers around JSON, a bare-JSON array, prefixed names,
# a namespaced id, key/value XML, and a recipient header.
FAMILIES = [
    "Qwen-Qwen2.5-7B-Instruct",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "meetkai-functionary-medium-v3.2",
    "deepseek-ai-DeepSeek-V3.1",
    "Qwen3-Coder",
    "GLM-4.6",
    "moonshotai-Kimi-K2",
    "meta-llama-Llama-3.1-8B-Instruct",
]
UNIT = {"type": "function", "function": {
    "name": "set_unit", "description": "Choose the temperature unit",
    "parameters": {"type": "object", "properties": {"unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
                   "required": ["unit"]}}}
LIGHT = {"type": "function", "function": {
    "name": "switch_light", "description": "Turn the light on or off",
    "parameters": {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]}}}
TOOLS = [UNIT, LIGHT]
ASKED = [{"role": "user", "content": "Use kelvin please."}]
SAMPLING = {"temperature": 0.0, "seed": 7, "n_predict": 400}


def _binary() -> Path | None:
    named = os.environ.get("LLAMA_SERVER")
    if named:
        return Path(named)
    cached = corpus.default_cache_dir() / "corpus" / "llama-cpp-python-0.3.36" / "llama-server" / "bin" / "llama-server"
    return cached if cached.exists() else None


@pytest.fixture(scope="module")
def server_binary() -> Path:
    binary = _binary()
    if binary is None or not binary.exists():
        if os.environ.get("TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER") == "1":
            pytest.fail("llama-server is required but missing: run .ci/build-llama-server")
        pytest.skip("no llama-server binary (run .ci/build-llama-server)")
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary: Path, model: Path, log: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [str(binary), "-m", str(model), "--port", str(self.port), "--host", "127.0.0.1", "-c", "4096",
             "-np", "1", "-t", "2", "--no-webui"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}: see {log}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama-server did not become healthy: see {log}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _vocab(binary: Path) -> Path:
    for folder in (binary.parent.parent / "vocab", binary.parent.parent / "models"):
        if (folder / "ggml-vocab-qwen2.gguf").exists():
            return folder / "ggml-vocab-qwen2.gguf"
    pytest.fail(f"no ggml-vocab-qwen2.gguf beside {binary}")


def _special_pieces(markers: list[str]) -> list[str]:
    """The bracketed words markers start with (``<tool_call>``, ``[TOOL_CALLS]``, ``<|im_end|>``): what a
    real vocabulary makes special tokens. Punctuation markers such as "," stay ordinary text."""
    return list(dict.fromkeys(word for word in map(special_word, markers) if word))


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, server_binary: Path, corpus_dir: Path, tmp_path_factory) -> Iterator[dict[str, Any]]:
    name = request.param
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    description = analyze(template)
    body = completion_request(template, description, ASKED, TOOLS)
    folder = tmp_path_factory.mktemp(name)
    ids = build_model(_vocab(server_binary), folder / "model.gguf", _special_pieces(body["preserved_tokens"]),
                      template.source)
    server = Server(server_binary, folder / "model.gguf", folder / "server.log")
    try:
        yield {"name": name, "template": template, "description": description, "server": server, "ids": ids}
    finally:
        server.stop()


def _request(family: dict[str, Any], **options: Any) -> dict[str, Any]:
    # thinking off: a random model that opens reasoning never closes it
    body = completion_request(family["template"], family["description"], ASKED, TOOLS, thinking=False, **options)
    return {**body, **SAMPLING}


def _valid_calls(completion: dict[str, Any]) -> list[dict[str, Any]]:
    message = completion["choices"][0]["message"]
    assert not message.get("errors"), message
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for call in message.get("tool_calls") or []:
        jsonschema.validate(json.loads(call["function"]["arguments"]), schemas[call["function"]["name"]])
    return message.get("tool_calls") or []


def test_required_gives_a_valid_call(family: dict[str, Any]) -> None:
    parser = Parser(family["description"], TOOLS, thinking=False)
    # one call: a random model under a parallel grammar adds calls until n_predict cuts it
    completion = send(family["server"].url, _request(family, tool_choice="required", parallel=False), parser)
    calls = _valid_calls(completion)
    assert len(calls) == 1 and completion["choices"][0]["finish_reason"] == "tool_calls"


def test_named_tool_and_no_parallel_hold(family: dict[str, Any]) -> None:
    parser = Parser(family["description"], TOOLS, thinking=False)
    completion = send(family["server"].url, _request(family, tool_choice="switch_light", parallel=False), parser)
    calls = _valid_calls(completion)
    assert [c["function"]["name"] for c in calls] == ["switch_light"]


def test_lazy_grammar_takes_over_after_a_forced_trigger(family: dict[str, Any]) -> None:
    parser = Parser(family["description"], TOOLS, thinking=False)
    body = _request(family, parallel=False)
    plain = send(family["server"].url, body, parser)
    assert not plain["choices"][0]["message"].get("tool_calls")
    words = [t["value"] for t in body["grammar_triggers"] if t["type"] == 1 and t["value"] in family["ids"]]
    if not words:
        pytest.skip(f"{family['name']}: its trigger is not one special token a logit bias can force")
    forced = send(family["server"].url, {**body, "logit_bias": [[family["ids"][words[0]], 100.0]]}, parser)
    assert _valid_calls(forced)


def test_streaming_gives_the_batch_message(family: dict[str, Any]) -> None:
    parser = Parser(family["description"], TOOLS, thinking=False)
    body = _request(family, tool_choice="required", parallel=False)
    batch = send(family["server"].url, body, parser)["choices"][0]["message"]
    folded = Message()
    for chunk in stream_chunks(family["server"].url, body, parser):
        delta = chunk["choices"][0]["delta"]
        for call in delta.get("tool_calls") or [{}]:
            function = call.get("function", {})
            apply(folded, Delta(content=delta.get("content", ""), reasoning_content=delta.get("reasoning_content", ""),
                                call_index=call.get("index"), call_id=call.get("id"), call_name=function.get("name"),
                                arguments=function.get("arguments", "")))
    streamed = [(c.name, c.arguments) for c in folded.tool_calls]
    assert streamed == [(c["function"]["name"], c["function"]["arguments"]) for c in batch.get("tool_calls") or []]
    assert folded.content == (batch.get("content") or "")
