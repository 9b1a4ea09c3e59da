"""A local stand-in for llama-server's /completion endpoint (the ``stand_in`` fixture of
tests/conftest.py), and its /tokenize (one token per character): it answers in llama-server's
reply shape, batch or streamed, from the script a test sets, and records every request. It checks our
half of the protocol; it is not a llama-server, so it proves nothing about what a real server accepts.

``scripts``, a list of scripts, answers the next requests one each before ``script`` answers the rest;
``headers`` holds the headers of every request, in the order of ``requests``; ``stopping_word`` is
the stop string the last event names (llama-server's field; set it with a ``"word"`` stop type).

Besides the script, a test can make it misbehave: ``raw`` (bytes written as the whole answer, then
the connection closed), ``delay`` (seconds before answering) and ``pace`` (seconds between streamed
events, written one at a time; ``disconnected`` is set when the client has gone away)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = {"id": "stand-in", "object": "model", "created": 0, "owned_by": "llamacpp"}


class _StandIn(BaseHTTPRequestHandler):
    """Answers POST /completion the way llama-server does, from ``server.script``."""

    def log_message(self, *_: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append((self.path, None))  # type: ignore[attr-defined]
        self.server.headers.append(dict(self.headers))  # type: ignore[attr-defined]
        if self.path == "/v1/models":
            self._send(200, "application/json", json.dumps({"object": "list", "data": [MODEL]}))
        elif self.path == "/health":
            self._send(200, "application/json", json.dumps({"status": "ok"}))
        else:
            self._send(404, "application/json", json.dumps({"error": {"code": 404, "message": "File Not Found"}}))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))  # type: ignore[attr-defined]
        self.server.headers.append(dict(self.headers))  # type: ignore[attr-defined]
        if self.path == "/tokenize":  # one token per character, and a BOS with add_special
            tokens = [1] * (len(body["content"]) + bool(body.get("add_special")))
            self._send(200, "application/json", json.dumps({"tokens": tokens}))
            return
        scripts = self.server.scripts  # type: ignore[attr-defined]
        status, content, stop_type = scripts.pop(0) if scripts else self.server.script  # type: ignore[attr-defined]
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.in_flight += 1  # type: ignore[attr-defined]
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)  # type: ignore[attr-defined]
        try:
            if self._client_left(self.server.delay):  # type: ignore[attr-defined]
                self.server.disconnected.set()  # type: ignore[attr-defined]
                return
            self._answer(body, status, content, stop_type)
        finally:
            with self.server.lock:  # type: ignore[attr-defined]
                self.server.in_flight -= 1  # type: ignore[attr-defined]

    def _client_left(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if the client closes its connection (it then reads as empty)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                return True
        return False

    def _answer(self, body: dict[str, Any], status: int, content: str, stop_type: str) -> None:
        if self.server.raw is not None:  # type: ignore[attr-defined]
            self.wfile.write(self.server.raw)  # type: ignore[attr-defined]
            self.close_connection = True
            return
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
            "stopping_word": self.server.stopping_word,  # type: ignore[attr-defined]
        }
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps({**final, "content": content}))
            return
        events = [{"content": ch, "stop": False} for ch in content] + [final]
        if not self.server.pace:  # type: ignore[attr-defined]
            self._send(200, "text/event-stream", "".join(f"data: {json.dumps(e)}\n\n" for e in events))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(self.server.pace)  # type: ignore[attr-defined]
        except OSError:  # the client closed the connection: what a cancelled request looks like here
            self.server.disconnected.set()  # type: ignore[attr-defined]
        self.close_connection = True

    def _send(self, status: int, kind: str, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:  # the client stopped waiting (a test of its timeout)
            self.server.disconnected.set()  # type: ignore[attr-defined]


@contextmanager
def serving() -> Iterator[ThreadingHTTPServer]:
    """A stand-in on a free local port; set ``server.script = (status, content, stop_type)``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    server.requests = []  # type: ignore[attr-defined]
    server.headers = []  # type: ignore[attr-defined]
    server.script = (200, "", "eos")  # type: ignore[attr-defined]
    server.stopping_word = ""  # type: ignore[attr-defined]
    server.scripts = []  # type: ignore[attr-defined]
    server.raw = None  # type: ignore[attr-defined]
    server.delay = 0.0  # type: ignore[attr-defined]
    server.pace = 0.0  # type: ignore[attr-defined]
    server.disconnected = threading.Event()  # type: ignore[attr-defined]
    server.lock = threading.Lock()  # type: ignore[attr-defined]
    server.in_flight = 0  # type: ignore[attr-defined]
    server.most_in_flight = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"
