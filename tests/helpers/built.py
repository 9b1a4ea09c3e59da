"""The binaries .ci/build-llama-server builds (llama-server, llama.cpp's test-gbnf-validator, the
benchmarks' reference harness): a test that needs one skips without it, except where
TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER=1 (CI, the README's test command), where a missing binary must
fail the run instead of hiding a broken build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REQUIRE_ENV = "TEMPLATE_ANALYZER_REQUIRE_LLAMA_SERVER"


def required_binary(binary: Path | None, what: str, remedy: str) -> Path:
    """``binary`` when it exists; otherwise a skip, or a failure where the build is required."""
    if binary is not None and binary.exists():
        return binary
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{what} is required but missing ({remedy})")
    pytest.skip(f"no {what} ({remedy})")
