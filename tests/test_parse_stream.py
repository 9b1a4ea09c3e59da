"""``parse --stream`` prints each delta as soon as its input arrives: fed through a pipe with pauses,
the deltas of the first part come out before the rest is written, for the command and for a
generated parser module alike."""

from __future__ import annotations

import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.golden import golden

from analyzer.backends.parser.codegen import generate_parser_module

TEMPLATE = "Qwen-Qwen2.5-7B-Instruct"
CALL = b'<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'


def _read_line(pipe, timeout: float = 20.0) -> bytes | None:
    ready, _, _ = select.select([pipe], [], [], timeout)
    return pipe.readline() if ready else None


def _stream_through(command: list[str]) -> None:
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"Hello there. ")
        process.stdin.flush()
        first = _read_line(process.stdout)
        assert first == b'{"content": "Hello there."}\n', first  # printed while stdin is still open
        time.sleep(0.3)
        process.stdin.write(CALL)
        process.stdin.flush()
        call = _read_line(process.stdout)
        assert call is not None and b'"name": "f"' in call, call
        process.stdin.close()
        rest = process.stdout.read().decode().splitlines()
        assert rest[-1].startswith('{"message": ') and process.wait(timeout=20) == 0
    finally:
        process.kill()


def test_parse_stream_prints_deltas_as_input_arrives(corpus_dir: Path) -> None:
    _stream_through([sys.executable, "-m", "analyzer", "parse", str(corpus_dir / f"{TEMPLATE}.jinja"), "--stream"])


def test_a_generated_module_streams_the_same_way(tmp_path: Path) -> None:
    module = tmp_path / "parser.py"
    module.write_text(generate_parser_module(golden(TEMPLATE)), encoding="utf-8")
    _stream_through([sys.executable, "-I", "-S", str(module), "--stream"])


@pytest.mark.parametrize("size", [1_000_000])
def test_a_long_stream_is_read_to_the_end(corpus_dir: Path, size: int) -> None:
    """A megabyte through the pipe in one go: every character comes back in the message."""
    text = ("word " * (size // 5)).encode()
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "parse", str(corpus_dir / f"{TEMPLATE}.jinja"), "--stream"],
        input=text,
        capture_output=True,
        timeout=300,
        check=True,
    )
    import json

    message = json.loads(done.stdout.decode().splitlines()[-1])["message"]
    assert message["content"] == text.decode().strip()
