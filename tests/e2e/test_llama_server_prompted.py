"""The prompted tool format, end to end against the real llama-server: templates with no tool format
of their own get calls through the raw /completion endpoint, constrained by our grammar and read back
by our parser (issue: tool calling for templates that have no native tool support).

The same llama-server binary (tests/e2e/conftest.py) and kind of tiny random model as the export tests;
the template's turn-end words are the model's special tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from analyzer.analysis import analyze
from analyzer.llama_server import ChatRequest, prepare, send
from analyzer.sources import load_template
from tests.e2e.server import ASKED, SCHEMAS, TOOLS, Server, special_pieces, vocab_gguf
from tests.e2e.tiny_model import build_model

# One template that refuses a system role (the tool text goes in the first user turn) and one that
# takes it; both write no tool calls of their own.
TEMPLATES = ["google-gemma-2-2b-it", "microsoft-Phi-3.5-mini-instruct"]
SAMPLING = {"temperature": 0.0, "seed": 7}
N_PREDICT = 600  # a random model spends many tokens on the whitespace the grammar allows


@pytest.fixture(scope="module", params=TEMPLATES)
def served(request, server_binary: Path, corpus_dir: Path, tmp_path_factory) -> Iterator[dict[str, Any]]:
    path = corpus_dir / f"{request.param}.jinja"
    template = load_template(str(path))
    description = analyze(template)
    assert description.format == "none"
    folder = tmp_path_factory.mktemp(request.param)
    vocab = vocab_gguf(server_binary)
    assert vocab is not None, f"no ggml-vocab-qwen2.gguf beside {server_binary}"
    build_model(vocab, folder / "model.gguf", special_pieces(list(description.turn.stop)), template.source)
    server = Server(server_binary, folder / "model.gguf", path, folder / "server.log")
    try:
        yield {"template": template, "description": description, "server": server}
    finally:
        server.stop()


def _call(served: dict[str, Any], style: str, tool_choice: str) -> dict[str, Any]:
    request = prepare(
        served["template"],
        served["description"],
        ChatRequest(
            ASKED,
            TOOLS,
            tool_choice=tool_choice,
            parallel=False,
            thinking=False,
            n_predict=N_PREDICT,
            tool_format=style,
        ),
    )
    completion = send(served["server"].url, replace(request, body={**request.body, **SAMPLING}))
    message = completion["choices"][0]["message"]
    assert not message["errors"], message
    for call in message.get("tool_calls") or []:
        jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    assert completion["choices"][0]["finish_reason"] == "tool_calls", completion
    return message


@pytest.mark.parametrize("style", ["json", "fenced"])
def test_required_gives_one_valid_call(served: dict[str, Any], style: str) -> None:
    message = _call(served, style, "required")
    assert len(message["tool_calls"]) == 1 and message["tool_calls"][0]["function"]["name"] in SCHEMAS


@pytest.mark.parametrize("style", ["json", "fenced"])
def test_a_named_tool_holds(served: dict[str, Any], style: str) -> None:
    message = _call(served, style, "switch_light")
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["switch_light"]
