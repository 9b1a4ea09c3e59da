"""Fixtures shared by the backend tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_SCREENSHOTS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def screenshot_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the HTML audit tests write each page and its screenshot, for a reviewer to open:
    TEMPLATE_ANALYZER_REPORT_DIR/html-audit, else pytest's temporary folder; printed at the end."""
    folder = Path(os.environ.get("TEMPLATE_ANALYZER_REPORT_DIR") or tmp_path_factory.getbasetemp()) / "html-audit"
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[_SCREENSHOTS] = folder
    return folder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    folder = config.stash.get(_SCREENSHOTS, None)
    if folder is not None:
        shots = sorted(folder.glob("*.png"))
        terminalreporter.write_sep("=", "HTML audit pages and screenshots")
        terminalreporter.write_line(f"{len(shots)} screenshots in {folder}")
