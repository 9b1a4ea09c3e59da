"""The transformers range the `transformers` extra allows, run at both ends.

The test extra pins one release (reproducible runs); the extra users install allows a range, so that a
serving stack with its own transformers pin can still have response-template --check. Each end is
installed into a throwaway venv that sees this environment's other packages, and the tests that use
transformers' response_template parser run there. Slow (the installs come from the package index).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from analyzer.response_check import TRANSFORMERS_REQUIREMENT

REPOSITORY = Path(__file__).resolve().parents[1]
# The newest release below the range's cap that installs here (5.25.0 needs kernels>=0.19.1, which the
# index does not have): the upper end that is tested.
UPPER_END = "5.24.0"
TRANSFORMERS_TESTS = ["tests/test_response_check.py", "tests/backends/test_response_template.py"]


def _extra() -> Requirement:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (requirement,) = project["optional-dependencies"]["transformers"]
    return Requirement(requirement)


def _lower_end(requirement: Requirement) -> str:
    (lower,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return lower


def test_the_extra_and_the_message_name_the_same_range() -> None:
    extra = _extra()
    assert extra == Requirement(TRANSFORMERS_REQUIREMENT)
    assert extra.specifier.contains(_lower_end(extra)) and extra.specifier.contains(UPPER_END)
    assert not extra.specifier.contains("5.15.1")  # the release before fails 20 of the checks


@pytest.mark.slow
@pytest.mark.parametrize("end", ["lower", "upper"])
def test_the_response_template_checks_pass_at_each_end_of_the_range(end: str, tmp_path: Path) -> None:
    version = _lower_end(_extra()) if end == "lower" else UPPER_END
    venv = tmp_path / "venv"
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", f"transformers=={version}"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    found = subprocess.run(
        [python, "-c", "import transformers; print(transformers.__version__)"],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert Version(found.stdout.strip()) == Version(version), found.stderr
    ran = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TRANSFORMERS_TESTS],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env={**environment, "PYTHONPATH": str(REPOSITORY)},
        timeout=1800,
    )
    assert ran.returncode == 0, ran.stdout[-4000:]
    assert " passed" in ran.stdout.splitlines()[-1] and "failed" not in ran.stdout.splitlines()[-1]
