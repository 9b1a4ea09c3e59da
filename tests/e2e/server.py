"""What the end-to-end tests share: the families, tools and sampling they run, and a llama-server
process started on a free port for one tiny model.

The server is started with ``--jinja --chat-template-file`` (the template the family's model carries),
so the same process serves both paths the tests compare: our export on the raw ``/completion``
endpoint (which ignores the chat template) and llama-server's own ``/v1/chat/completions``."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.built import llama_server_binary as llama_server_binary

from analyzer.analysis import analyze
from analyzer.description import FormatDescription
from analyzer.llama_server import ChatRequest, prepare
from analyzer.markers import special_word
from analyzer.sources import load_template
from analyzer.template import Template

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
UNIT = {
    "type": "function",
    "function": {
        "name": "set_unit",
        "description": "Choose the temperature unit",
        "parameters": {
            "type": "object",
            "properties": {"unit": {"type": "string", "enum": ["celsius", "kelvin"]}},
            "required": ["unit"],
        },
    },
}
LIGHT = {
    "type": "function",
    "function": {
        "name": "switch_light",
        "description": "Turn the light on or off",
        "parameters": {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]},
    },
}
TOOLS = [UNIT, LIGHT]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
ASKED = [{"role": "user", "content": "Use kelvin please."}]
SAMPLING = {"temperature": 0.0, "seed": 7, "n_predict": 400}

# Reports e2e modules write, as (title, path, text); tests/e2e/conftest.py prints them in the summary.
REPORTS = pytest.StashKey[list[tuple[str, Path, str]]]()


def vocab_gguf(binary: Path) -> Path | None:
    """The vocab-only GGUF the build copies beside the binary (the tiny models' tokenizer)."""
    for folder in (binary.parent.parent / "vocab", binary.parent.parent / "models"):
        if (folder / "ggml-vocab-qwen2.gguf").exists():
            return folder / "ggml-vocab-qwen2.gguf"
    return None


def special_pieces(markers: list[str]) -> list[str]:
    """The bracketed words markers start with (``<tool_call>``, ``[TOOL_CALLS]``, ``<|im_end|>``): what a
    real vocabulary makes special tokens. Punctuation markers such as "," stay ordinary text."""
    return list(dict.fromkeys(word for word in map(special_word, markers) if word))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A llama-server process for one model, healthy when the constructor returns; ``stop`` ends it."""

    def __init__(self, binary: Path, model: Path, chat_template: Path, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [
                str(binary),
                "-m",
                str(model),
                "--port",
                str(self.port),
                "--host",
                "127.0.0.1",
                "-c",
                "4096",
                "-np",
                "1",
                "-t",
                "2",
                "--no-webui",
                "--jinja",
                "--chat-template-file",
                str(chat_template),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.close()
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


@dataclass(frozen=True)
class Family:
    """One family's template, its analysis, and the server running its tiny model."""

    name: str
    template: Template
    template_path: Path
    description: FormatDescription
    server: Server
    token_ids: dict[str, int]  # the model's special tokens (the template's marker words) and their ids


@contextmanager
def family_server(name: str, binary: Path, corpus_dir: Path, folder: Path) -> Iterator[Family]:
    """The tiny model for the corpus template ``name``, built in ``folder``, served by llama-server."""
    from tests.e2e.tiny_model import build_model  # numpy and gguf: only where a model is built

    template_path = corpus_dir / f"{name}.jinja"
    template = load_template(str(template_path))
    description = analyze(template)
    body = prepare(template, description, ChatRequest(ASKED, TOOLS)).body
    vocab = vocab_gguf(binary)
    if vocab is None:
        pytest.fail(f"no ggml-vocab-qwen2.gguf beside {binary}")
    token_ids = build_model(vocab, folder / "model.gguf", special_pieces(body["preserved_tokens"]), template.source)
    server = Server(binary, folder / "model.gguf", template_path, folder / "server.log")
    try:
        yield Family(name, template, template_path, description, server, token_ids)
    finally:
        server.stop()
