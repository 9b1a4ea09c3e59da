"""A local stand-in for llama-server's /completion endpoint (the ``stand_in`` fixture of
tests/backends/conftest.py): it answers in llama-server's reply shape, batch or streamed, from the
script a test sets, and records every request. It checks our half of the protocol; it is not a
llama-server, so it proves nothing about what a real server accepts."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _StandIn(BaseHTTPRequestHandler):
    """Answers POST /completion the way llama-server does, from ``server.script``."""

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))  # type: ignore[attr-defined]
        status, content, stop_type = self.server.script  # type: ignore[attr-defined]
        if status != 200:
            self._send(
                status,
                "application/json",
                json.dumps(
                    {"error": {"code": status, "message": "the grammar is not valid", "type": "invalid_request_error"}}
                ),
            )
            return
        final = {
            "content": "",
            "stop": True,
            "stop_type": stop_type,
            "tokens_evaluated": 17,
            "tokens_predicted": 9,
            "model": "stand-in",
        }
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps({**final, "content": content}))
            return
        events = [{"content": ch, "stop": False} for ch in content] + [final]
        self._send(200, "text/event-stream", "".join(f"data: {json.dumps(e)}\n\n" for e in events))

    def _send(self, status: int, kind: str, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serving() -> Iterator[ThreadingHTTPServer]:
    """A stand-in on a free local port; set ``server.script = (status, content, stop_type)``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    server.requests = []  # type: ignore[attr-defined]
    server.script = (200, "", "eos")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"
