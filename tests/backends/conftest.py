"""Fixtures shared by the backend tests."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
from helpers.stand_in import serving


@pytest.fixture
def stand_in() -> Iterator[ThreadingHTTPServer]:
    """A local stand-in for llama-server's /completion endpoint (see helpers/stand_in.py)."""
    with serving() as server:
        yield server
