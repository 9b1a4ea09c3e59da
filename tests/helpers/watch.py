"""What the process does inside a block: files opened, connections attempted, modules imported,
processes started, through Python's audit hooks (checked by tests/runtime/test_schema.py)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

WATCHED_EVENTS = ("open", "socket.connect", "socket.getaddrinfo", "urllib.Request", "import", "subprocess.Popen")
# Audit hooks cannot be removed: one for the session, recording only while a block watches.
_WATCHING: list[list[tuple[str, str]]] = []


def _audit(event: str, args: tuple) -> None:
    if _WATCHING and event in WATCHED_EVENTS:
        _WATCHING[-1].append((event, repr(args)[:200]))


sys.addaudithook(_audit)


@contextlib.contextmanager
def watching() -> Iterator[list[tuple[str, str]]]:
    """(event, its arguments as text) for each watched event inside the block."""
    seen: list[tuple[str, str]] = []
    _WATCHING.append(seen)
    try:
        yield seen
    finally:
        _WATCHING.pop()
