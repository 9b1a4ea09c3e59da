"""Fixtures of the end-to-end tests: the llama-server binary, and one tiny model and server per family.

The family fixture is session-scoped so that every e2e module uses the same server for a family
(pytest groups the tests by family, so one server runs at a time). Reports the modules write are
listed in pytest's terminal summary, so a CI log shows them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzer.analysis import analyze
from analyzer.llama_server import ChatRequest, prepare
from analyzer.sources import load_template
from tests.e2e.server import (
    ASKED,
    FAMILIES,
    REPORTS,
    TOOLS,
    Family,
    Server,
    llama_server_binary,
    special_pieces,
    vocab_gguf,
)
from tests.e2e.tiny_model import build_model
from tests.helpers.built import required_binary


@pytest.fixture(scope="session")
def server_binary() -> Path:
    return required_binary(llama_server_binary(), "llama-server", "run .ci/build-llama-server")


@pytest.fixture(scope="session", params=FAMILIES)
def family(request, server_binary: Path, corpus_dir: Path, tmp_path_factory) -> Iterator[Family]:
    name = request.param
    template_path = corpus_dir / f"{name}.jinja"
    template = load_template(str(template_path))
    description = analyze(template)
    body = prepare(template, description, ChatRequest(ASKED, TOOLS)).body
    vocab = vocab_gguf(server_binary)
    if vocab is None:
        pytest.fail(f"no ggml-vocab-qwen2.gguf beside {server_binary}")
    folder = tmp_path_factory.mktemp(name)
    token_ids = build_model(vocab, folder / "model.gguf", special_pieces(body["preserved_tokens"]), template.source)
    server = Server(server_binary, folder / "model.gguf", template_path, folder / "server.log")
    try:
        yield Family(name, template, template_path, description, server, token_ids)
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter, config) -> None:
    for title, path, text in config.stash.get(REPORTS, []):
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(f"written to {path}")
        terminalreporter.write_line(text)
