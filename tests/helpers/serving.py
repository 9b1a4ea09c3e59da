"""``serve``'s app run by uvicorn in a background thread, on a free local port, for the length of a
``with`` block: the real server and sockets, so that streaming, timeouts and disconnects are real.
And the ``serve`` command run as a process, with the URL it announces."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from analyzer.analysis import analyze
from analyzer.description import FormatDescription
from analyzer.serve import ServeConfig, listen, server
from analyzer.sources import load_template
from analyzer.template import Template


@contextmanager
def running(config: ServeConfig) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of the app serving ``config``."""
    sock = listen("127.0.0.1", 0)
    uvicorn_server = server(config, log_level="warning")
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uvicorn_server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the serve app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        uvicorn_server.should_exit = True
        thread.join(timeout=30)
        sock.close()


ROOT = Path(__file__).resolve().parent.parent.parent


def serve_command(arguments: list[str], log: IO[str]) -> subprocess.Popen[bytes]:
    """``template-analyzer serve ARGUMENTS --port 0`` from this checkout, its stderr to ``log``."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, "-m", "analyzer", "serve", *arguments, "--port", "0"], stderr=log, cwd=ROOT, env=environment
    )


def announced_url(log: IO[str], process: subprocess.Popen[bytes]) -> str:
    """The URL the command says it serves at (its line on stderr), once its /health answers 200."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        for line in text.splitlines():
            if line.startswith("serving ") and " at http://" in line:
                base = str(line.split(" at ")[1].split()[0]).removesuffix("/v1")
                try:
                    if httpx.get(base + "/health", timeout=5).status_code == 200:
                        return base
                except httpx.HTTPError:
                    pass
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}: {text}")
        time.sleep(0.1)
    raise AssertionError("serve did not start")


def analysed_templates(corpus_dir: Path, names: tuple[str, ...]) -> dict[str, tuple[Template, FormatDescription]]:
    """The corpus templates ``names``, each with its analysis, for a module's serve tests to share."""
    found = {}
    for name in names:
        template = load_template(str(corpus_dir / f"{name}.jinja"))
        found[name] = (template, analyze(template))
    return found
