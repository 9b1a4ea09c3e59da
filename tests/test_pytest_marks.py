"""The marks tests/conftest.py puts on tests from what they use, and the dev hypothesis profile: the
developer's loop (``-m "not slow and not e2e"``, README "Developer loop") leaves out what it says and
keeps the rest. Collection only, in a subprocess (one for the marks of every test of a few files, one for
what ``-m`` selects from them), so that this stays a few seconds of the loop."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent


FILES = (
    "tests/e2e/test_serve_e2e.py",
    "tests/backends/test_gbnf_llama_validator.py",
    "tests/backends/test_html_report.py",
    "tests/test_reference_bench.py",
    "tests/test_packaging.py",
    "tests/test_golden.py",
    "tests/runtime/test_stream_waits.py",
)
# A plugin printing each collected test's marks, as pytest sees them after collection.
MARKS_PLUGIN = """
def pytest_collection_finish(session):
    for item in session.items:
        print("MARKS\t" + item.nodeid + "\t" + ",".join(sorted({mark.name for mark in item.iter_markers()})))
"""


def _pytest(*args: str, cwd: Path = REPOSITORY, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    environment.pop("HYPOTHESIS_PROFILE", None)  # the run's own profile is not the one under test
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def marks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Each test of FILES by its id, with the names of its marks."""
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "marks_dump.py").write_text(MARKS_PLUGIN, encoding="utf-8")
    done = _pytest(
        "--collect-only", "-q", "-p", "marks_dump", *FILES, env={"PYTHONPATH": f"{REPOSITORY}{os.pathsep}{folder}"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = {}
    for line in done.stdout.splitlines():
        if line.startswith("MARKS\t"):
            _, test, names = line.split("\t", 2)
            found[test] = set(names.split(",")) - {""}
    assert len(found) > 50
    return found


@cache
def _selected(marks: str) -> frozenset[str]:
    done = _pytest("--collect-only", "-q", "-m", marks, *FILES)
    assert done.returncode == 0, done.stdout + done.stderr
    return frozenset(line for line in done.stdout.splitlines() if "::" in line)


def _with(marks: dict[str, set[str]], name: str) -> set[str]:
    return {test for test, names in marks.items() if name in names}


def test_e2e_marks_the_e2e_folder_the_binaries_and_chromium(marks: dict[str, set[str]]) -> None:
    e2e = _with(marks, "e2e")
    assert {test for test in marks if test.startswith("tests/e2e/")} <= e2e
    assert any(test.startswith("tests/e2e/test_serve_e2e.py::") for test in e2e)
    # the validator fixture, the reference harness fixture, the needs_chromium decorator
    validator = "tests/backends/test_gbnf_llama_validator.py::"
    assert f"{validator}test_the_validator_accepts_refuses_and_reports_a_broken_grammar" in e2e
    assert f"{validator}test_every_llama_xfail_names_a_corpus_check" not in e2e
    assert {test for test in marks if test.startswith("tests/test_reference_bench.py::")} <= e2e
    html = {test for test in marks if test.startswith("tests/backends/test_html_report.py::")}
    assert html & e2e and html - e2e


def test_corpus_marks_the_tests_that_use_the_corpus(marks: dict[str, set[str]]) -> None:
    corpus = _with(marks, "corpus")
    assert "tests/test_golden.py::test_golden_analysis" in corpus
    assert "tests/test_golden.py::test_golden_audit_and_compare" in corpus
    assert "tests/runtime/test_stream_waits.py::test_a_call_with_closing_text_is_emitted_as_that_text_arrives" in corpus
    loads_back = {test for test in marks if test.startswith("tests/test_golden.py::test_golden_files_load_back")}
    assert loads_back and not loads_back & corpus  # golden/ only: no corpus


def test_the_developer_loop_selects_by_the_marks(marks: dict[str, set[str]]) -> None:
    """-m sees the marks conftest.py adds (they are added before it deselects)."""
    left_out = _with(marks, "slow") | _with(marks, "e2e")
    assert _with(marks, "slow") and _with(marks, "e2e")
    assert _selected("not slow and not e2e") == set(marks) - left_out
    assert not any(
        test.startswith(("tests/e2e/", "tests/test_packaging.py")) for test in _selected("not slow and not e2e")
    )
    assert _selected("corpus") == _with(marks, "corpus")


def test_the_dev_profile_cuts_a_tests_own_example_count(tmp_path: Path) -> None:
    """A property test asking for 500 examples runs 500 under the default profile (CI's) and at most
    the dev profile's count under HYPOTHESIS_PROFILE=dev."""
    shutil.copy(REPOSITORY / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_count.py").write_text(
        "from hypothesis import given, settings, strategies as st\n"
        "SEEN = []\n"
        "@settings(max_examples=500, database=None)\n"
        "@given(st.integers())\n"
        "def test_draws(n):\n"
        "    SEEN.append(n)\n"
        "def test_count():\n"
        "    print('EXAMPLES', len(SEEN), settings.default.max_examples)\n",
        encoding="utf-8",
    )

    def examples(env: dict[str, str]) -> tuple[int, int]:
        """(examples run, the profile's own max_examples)"""
        done = _pytest("-q", "-s", "test_count.py", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        [line] = [line for line in done.stdout.splitlines() if "EXAMPLES" in line]
        run, profile = line.split("EXAMPLES")[1].split()
        return int(run), int(profile)

    assert examples({})[0] == 500
    run, profile = examples({"HYPOTHESIS_PROFILE": "dev"})
    assert 0 < run <= profile < 500
