"""``serve``'s app run by uvicorn in a background thread, on a free local port, for the length of a
``with`` block: the real server and sockets, so that streaming, timeouts and disconnects are real."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from analyzer.serve import ServeConfig, listen, server


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
