"""Fixtures shared by the whole suite; the marks each test gets from what it uses; hypothesis's profiles.

Marks (registered in pyproject.toml), applied here from the fixtures a test asks for (their whole
closure), so that a new test is marked by what it needs rather than by hand: ``corpus`` for a test that
needs the fetched corpus, ``e2e`` for one that starts llama-server or needs a built binary or Chromium
(everything under tests/e2e/; Chromium tests carry the mark from ``needs_chromium``). ``slow`` is put on
by hand. ``-n auto -m "not slow and not e2e"`` is the developer's loop (README, "Developer loop").

Hypothesis: the default profile is what CI runs, each test's own ``max_examples`` untouched.
``HYPOTHESIS_PROFILE=dev`` loads the ``dev`` profile: no deadline, and at most ``DEV_MAX_EXAMPLES``
examples per property test, cutting the tests' own counts too (a profile alone only sets the counts a
test leaves unset).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import hypothesis
import pytest

from analyzer import corpus

CORPUS_FIXTURES = frozenset({"corpus_dir", "corpus_paths"})
# llama-server and a family's server (tests/e2e/conftest.py), llama.cpp's test-gbnf-validator
# (backends/test_gbnf_llama_validator.py), the benchmarks' reference harness (test_reference_bench.py)
E2E_FIXTURES = frozenset({"server_binary", "family", "validator", "reference_harness"})
E2E_FOLDER = Path(__file__).resolve().parent / "e2e"

DEV_PROFILE = "dev"
DEV_MAX_EXAMPLES = 10
hypothesis.settings.register_profile(DEV_PROFILE, max_examples=DEV_MAX_EXAMPLES, deadline=None)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE")
if PROFILE:
    hypothesis.settings.load_profile(PROFILE)  # an unknown name is hypothesis's own error, naming the profiles


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & CORPUS_FIXTURES:
            item.add_marker(pytest.mark.corpus)
        if used & E2E_FIXTURES or E2E_FOLDER in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        if PROFILE == DEV_PROFILE:
            _cap_examples(item)


def _cap_examples(item: pytest.Item) -> None:
    """A property test's own ``@settings(max_examples=...)`` cut to the dev profile's count. Hypothesis
    reads the settings from this attribute of the wrapped test when it runs (its internal name; were it
    renamed, the dev loop would run the full counts, never fewer than CI)."""
    test = getattr(item, "obj", None)
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(own, hypothesis.settings) and own.max_examples > DEV_MAX_EXAMPLES:
        test._hypothesis_internal_use_settings = hypothesis.settings(  # type: ignore[union-attr]
            own, max_examples=DEV_MAX_EXAMPLES, deadline=None
        )


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The pinned llama.cpp template corpus; downloaded once per machine, then served from the cache."""
    return corpus.fetch()


@pytest.fixture(scope="session")
def corpus_paths(corpus_dir: Path) -> list[Path]:
    return corpus.corpus_templates(corpus_dir)


@pytest.fixture
def stand_in() -> Iterator[ThreadingHTTPServer]:
    """A local stand-in for llama-server's /completion endpoint (see helpers/stand_in.py)."""
    # Imported here: tests/test_pytest_marks.py runs this conftest alone, in a folder without helpers/.
    from helpers.stand_in import serving

    with serving() as server:
        yield server


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
