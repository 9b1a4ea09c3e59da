"""Fixtures of the end-to-end tests: the llama-server binary, and one tiny model and server per family.

The family fixture is session-scoped so that every e2e module uses the same server for a family
(pytest groups the tests by family, so one server runs at a time). Reports the modules write are
listed in pytest's terminal summary, so a CI log shows them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import FAMILIES, REPORTS, Family, family_server, llama_server_binary
from tests.helpers.built import required_binary


@pytest.fixture(scope="session")
def server_binary() -> Path:
    return required_binary(llama_server_binary(), "llama-server", "run .ci/build-llama-server")


@pytest.fixture(scope="session", params=FAMILIES)
def family(request, server_binary: Path, corpus_dir: Path, tmp_path_factory) -> Iterator[Family]:
    with family_server(request.param, server_binary, corpus_dir, tmp_path_factory.mktemp(request.param)) as found:
        yield found


def pytest_terminal_summary(terminalreporter, config) -> None:
    for title, path, text in config.stash.get(REPORTS, []):
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(f"written to {path}")
        terminalreporter.write_line(text)
