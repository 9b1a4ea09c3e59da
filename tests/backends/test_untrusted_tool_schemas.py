"""Tool schemas are untrusted input: nothing in them makes us read a file or open a connection.

A ``$ref`` that leaves the tool's own schema, one that points to nothing in it, and a schema that is
not valid are each reported once as a problem with that tool (``invalid_schema``), never raised. What
we watch is what the process does, through Python's audit hooks (every ``open`` and every socket
connection), and what a local HTTP server receives.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.watch import watching

from analyzer import Parser, analyze, load_template
from analyzer.backends.prompted import PromptedParser
from analyzer.backends.prompted.format import prompted_format
from analyzer.cli import cli


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, list[str]]]:
    """A local server that would answer any schema request; it records every path asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = json.dumps({"type": "integer"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def qwen(corpus_dir: Path):
    return analyze(load_template(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"))


def _tools(parameters: dict) -> list[dict]:
    return [{"type": "function", "function": {"name": "lookup", "parameters": parameters}}]


def _two_calls(value: object) -> str:
    call = json.dumps({"name": "lookup", "arguments": {"q": value}})
    return f"<tool_call>\n{call}\n</tool_call>\n<tool_call>\n{call}\n</tool_call>"


def test_a_file_reference_is_never_opened(qwen, tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    target.write_text(json.dumps({"type": "object", "properties": {"q": {"type": "integer"}}}))
    with watching() as watched:
        message = Parser(qwen, _tools({"$ref": target.as_uri()})).parse(_two_calls("text"))
    assert [call.name for call in message.tool_calls] == ["lookup", "lookup"]
    assert [(e.kind, e.call_index) for e in message.errors] == [("invalid_schema", 0)]
    assert "points outside the schema's own document" in message.errors[0].message
    assert not [path for event, path in watched if event == "open" and "schema.json" in path]


def test_a_url_reference_is_never_fetched(qwen, http_server) -> None:
    base, asked = http_server
    parameters = {"type": "object", "properties": {"q": {"$ref": f"{base}/integer.json"}}}
    with watching() as watched:
        message = Parser(qwen, _tools(parameters)).parse(_two_calls("text"))
    assert [(e.kind, e.call_index) for e in message.errors] == [("invalid_schema", 0)]
    assert asked == []
    assert not [event for event, _ in watched if event in ("socket.connect", "urllib.Request")]


@pytest.mark.parametrize(
    "parameters, problem",
    [
        ({"type": "object", "properties": {"q": {"$ref": "#/$defs/nope"}}}, "points to nothing in the schema"),
        ({"type": "object", "properties": {"q": {"type": "strnig"}}}, "'type' at /properties/q must be one of"),
        (
            {"$id": "http://127.0.0.1:9/root.json", "type": "object", "properties": {"q": {"$ref": "other.json"}}},
            "points outside the schema's own document",
        ),
        (
            {"type": "object", "properties": {"q": {"$dynamicRef": "http://127.0.0.1:9/meta#x"}}},
            "points outside the schema's own document",
        ),
    ],
    ids=["pointer to nowhere", "unknown type", "relative to a remote $id", "dynamic reference"],
)
def test_an_unusable_schema_is_reported_once_never_raised(qwen, parameters, problem) -> None:
    with watching() as watched:
        message = Parser(qwen, _tools(parameters)).parse(_two_calls(1))
    assert len(message.tool_calls) == 2
    assert [(e.kind, e.call_index) for e in message.errors] == [("invalid_schema", 0)]
    assert problem in message.errors[0].message and "lookup" in message.errors[0].message
    assert not [event for event, _ in watched if event in ("socket.connect", "urllib.Request")]


def test_references_inside_the_tool_still_check_arguments(qwen) -> None:
    """Local references keep working: a ``$defs`` pointer and an ``$anchor``."""
    for ref, defs in (
        ("#/$defs/count", {"count": {"type": "integer", "minimum": 0}}),
        ("#count", {"count": {"$anchor": "count", "type": "integer", "minimum": 0}}),
    ):
        parameters = {"type": "object", "properties": {"q": {"$ref": ref}}, "$defs": defs}
        message = Parser(qwen, _tools(parameters)).parse(_two_calls(-1))
        assert [e.kind for e in message.errors] == ["invalid_arguments", "invalid_arguments"], ref
        assert "minimum" in message.errors[0].message


def test_prompted_parser_refuses_remote_references_too(http_server) -> None:
    base, asked = http_server
    tools = _tools({"type": "object", "properties": {"q": {"$ref": f"{base}/integer.json"}}})
    parser = PromptedParser(prompted_format(tools), tools)
    message = parser.parse(json.dumps({"tool": "lookup", "arguments": {"q": "text"}}))
    assert [e.kind for e in message.errors] == ["invalid_schema"]
    assert asked == []


def test_cli_parse_reports_the_schema_and_reads_nothing(corpus_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "integer"}')
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(_tools({"type": "object", "properties": {"q": {"$ref": secret.as_uri()}}})))
    with watching() as watched:
        result = CliRunner().invoke(
            cli,
            ["parse", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"), "--tools", str(tools)],
            input=_two_calls("x"),
        )
    assert result.exit_code == 0, result.output
    errors = json.loads(result.output)["errors"]
    assert [e["kind"] for e in errors] == ["invalid_schema"]
    assert not [path for event, path in watched if event == "open" and "secret.json" in path]
