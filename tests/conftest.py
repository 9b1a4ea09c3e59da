"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer import corpus


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The pinned llama.cpp template corpus; downloaded once per machine, then served from the cache."""
    return corpus.fetch()


@pytest.fixture(scope="session")
def corpus_paths(corpus_dir: Path) -> list[Path]:
    return corpus.corpus_templates(corpus_dir)


@pytest.fixture
def tmp_template(tmp_path: Path) -> Callable[..., Path]:
    """Write template text (or raw bytes) to a file under ``tmp_path`` and return its path."""

    def write(content: str | bytes, name: str = "template.jinja") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write
