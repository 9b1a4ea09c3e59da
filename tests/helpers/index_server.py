"""A package index on the loopback interface: one project page (simple API, JSON or HTML) and its files.

Stands in for the index a machine is configured with, so the corpus download without pip is tested
offline, with the real sdist from the cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Served:
    url: str  # the simple API root, ending in /
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (path, headers)


@contextmanager
def index_server(project: str, files: dict[str, Path], *, html: bool = False) -> Iterator[Served]:
    """Serve ``/simple/<project>/`` listing ``files`` (name -> file on disk) under ``/files/``."""
    served = Served("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            served.requests.append((self.path, dict(self.headers.items())))
            if self.path == f"/simple/{project}/":
                if html:
                    links = "".join(f'<a href="../../files/{name}#sha256=0">{name}</a><br>' for name in files)
                    body, kind = f"<html><body>{links}</body></html>".encode(), "text/html"
                else:
                    listing = {"files": [{"filename": name, "url": f"/files/{name}", "hashes": {}} for name in files]}
                    body, kind = json.dumps(listing).encode(), "application/vnd.pypi.simple.v1+json"
                self._send(200, kind, body)
            elif self.path.startswith("/files/") and self.path[len("/files/") :] in files:
                self._send(200, "application/octet-stream", files[self.path[len("/files/") :]].read_bytes())
            else:
                self._send(404, "text/plain", b"not found")

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
