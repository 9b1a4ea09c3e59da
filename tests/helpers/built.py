"""The binaries .ci/build-llama-server builds (llama-server, llama.cpp's test-gbnf-validator, the
benchmarks' reference harness), side by side in one folder found through ``llama_server_binary``: a
test that needs one skips without it, except where
TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER=1 (CI, the README's test command), where a missing binary must
fail the run instead of hiding a broken build."""

from __future__ import annotations

import os
from pathlib import Path

from analyzer import corpus

REQUIRE_ENV = "TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER"


def llama_server_binary() -> Path | None:
    """``LLAMA_SERVER`` if set, else the build .ci/build-llama-server caches beside the corpus."""
    named = os.environ.get("LLAMA_SERVER")
    if named:
        return Path(named)
    cached = corpus.default_cache_dir() / "corpus" / "llama-cpp-python-0.3.36" / "llama-server" / "bin" / "llama-server"
    return cached if cached.exists() else None


def required_binary(binary: Path | None, what: str, remedy: str) -> Path:
    """``binary`` when it exists; otherwise a skip, or a failure where the build is required."""
    import pytest  # here: the benchmarks find binaries through this module without a test run

    if binary is not None and binary.exists():
        return binary
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{what} is required but missing ({remedy})")
    pytest.skip(f"no {what} ({remedy})")
