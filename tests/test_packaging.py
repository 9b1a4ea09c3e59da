"""The package as a new user gets it: `pip wheel .`, the sdist, and the wheel installed into fresh venvs.

Slow (minutes: builds, venvs, the dependencies installed from the index, a golden run per venv), so
marked ``slow``: ``pytest -m 'not slow'`` leaves them out. The build backend and the dependencies come
from the configured package index (pip's and uv's caches make a second run quick); everything else is
offline: the corpus download in the venvs is served on the loopback interface from the cached sdist.

Both venvs have no pip (`python -m venv --without-pip`, and uv's), as in issue 28's report: the wheel
goes in with this interpreter's pip (`--python`) or with uv, and `corpus fetch` must download without a
pip of its own, or say in one line what to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.index_server import index_server

from analyzer import corpus

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT = 600


# The suite runs with PYTHONPATH at a checkout; a venv's Python must see only what was installed in it.
_CLEAN_ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def _run(command: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", _CLEAN_ENVIRONMENT)
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        **kwargs,  # type: ignore[call-overload]
    )


def _package_files() -> set[str]:
    """The package's files in the checkout, as paths from its root (what the wheel and sdist must hold)."""
    folder = REPOSITORY / "analyzer"
    return {
        str(path.relative_to(REPOSITORY))
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`pip wheel .` of the checkout, verbose so the build backend's warnings are in the log."""
    out = tmp_path_factory.mktemp("wheel")
    # A copy, so no build/ or egg-info folder lands in the checkout (and none left there is reused).
    source = out / "source"
    shutil.copytree(REPOSITORY, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", out / "dist", source])
    log = built.stdout + built.stderr
    assert built.returncode == 0, log[-3000:]
    (wheel,) = (out / "dist").glob("template_analyzer-*.whl")
    return wheel, log


def test_pip_wheel_builds_without_a_deprecation_warning(wheel_build: tuple[Path, str]) -> None:
    _, log = wheel_build
    assert "Building wheel for template-analyzer" in log  # the backend's own output is in the log
    assert [line for line in log.splitlines() if "deprecat" in line.lower()] == []


def test_the_wheel_holds_the_license_and_its_metadata(wheel_build: tuple[Path, str]) -> None:
    wheel, _ = wheel_build
    with zipfile.ZipFile(wheel) as archive:
        (license_name,) = [name for name in archive.namelist() if name.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license_name) == (REPOSITORY / "LICENSE").read_bytes()
        (metadata_name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        metadata = archive.read(metadata_name).decode("utf-8").split("\n\n", 1)[0].splitlines()
        packaged = {name for name in archive.namelist() if name.startswith("analyzer/")}
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
    assert not any(line.startswith("License:") or line.startswith("Classifier: License ::") for line in metadata)
    assert sum(line.startswith("Classifier: ") for line in metadata) >= 5
    assert any(line.startswith("Keywords: ") for line in metadata)
    assert packaged == _package_files()


def test_the_sdist_holds_the_package_and_leaves_the_tests_out(tmp_path: Path) -> None:
    """The tests need the whole checkout (helpers, golden/, templates/, .ci/, benchmarks/, README.md) and
    the corpus download, so they are run from a clone; an sdist that held only some of them would offer
    tests that cannot run (issue 28). The sdist must still build the same package."""
    source = tmp_path / "source"
    shutil.copytree(REPOSITORY, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
    built = _run([sys.executable, "-m", "build", "--sdist", "--outdir", tmp_path / "dist", source])
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    assert [line for line in (built.stdout + built.stderr).splitlines() if "deprecat" in line.lower()] == []
    (sdist,) = (tmp_path / "dist").glob("template_analyzer-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    top = {name.split("/", 1)[0] for name in members}
    assert top == {
        "LICENSE",
        "MANIFEST.in",
        "PKG-INFO",
        "README.md",
        "analyzer",
        "pyproject.toml",
        "setup.cfg",
        "template_analyzer.egg-info",
    }
    with tarfile.open(sdist) as archive:
        files = {member.name.split("/", 1)[1] for member in archive.getmembers() if member.isfile()}
    assert {name for name in files if name.startswith("analyzer/")} == _package_files()
    rebuilt = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "from-sdist", sdist])
    assert rebuilt.returncode == 0, (rebuilt.stdout + rebuilt.stderr)[-3000:]
    (wheel,) = (tmp_path / "from-sdist").glob("template_analyzer-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in archive.namelist())


# --------------------------------------------------------------------------------------------------
# The wheel installed into fresh venvs without pip


def _uv() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv  # type: ignore[import-not-found]  # the test extra's uv, as a Python package
    except ImportError:
        return None
    return str(uv.find_uv_bin())


def _pip_made(wheel: Path, folder: Path) -> Path:
    made = _run([sys.executable, "-m", "venv", "--without-pip", folder])
    assert made.returncode == 0, made.stderr
    installed = _run([sys.executable, "-m", "pip", "--python", folder / "bin" / "python", "install", "-q", wheel])
    assert installed.returncode == 0, installed.stderr[-3000:]
    return folder


def _uv_made(wheel: Path, folder: Path) -> Path:
    uv = _uv()
    if uv is None:
        pytest.skip("uv is not installed (the test extra installs it)")
    made = _run([uv, "venv", "--quiet", "--python", sys.executable, folder])
    assert made.returncode == 0, made.stderr
    installed = _run([uv, "pip", "install", "--quiet", "--python", folder / "bin" / "python", wheel])
    assert installed.returncode == 0, installed.stderr[-3000:]
    return folder


@pytest.fixture(scope="module", params=["venv --without-pip", "uv venv"])
def venv(
    request: pytest.FixtureRequest, wheel_build: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    folder = tmp_path_factory.mktemp("venv") / "v"
    make = _pip_made if request.param == "venv --without-pip" else _uv_made
    made = make(wheel_build[0], folder)
    assert _run([made / "bin" / "python", "-c", "import pip"]).returncode != 0  # no pip of its own
    return made


def _environment(venv: Path, home: Path, **extra: str) -> dict[str, str]:
    """Only the venv on PATH (no other pip to find), no pip configuration, a home of its own."""
    home.mkdir(exist_ok=True)
    return {"PATH": str(venv / "bin"), "HOME": str(home), "PIP_CONFIG_FILE": os.devnull, "LANG": "C.UTF-8", **extra}


@pytest.fixture(scope="module")
def fetched(venv: Path, corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """`corpus fetch --dest` in the venv, from an index on the loopback interface: (folder, stderr)."""
    dest = tmp_path_factory.mktemp("fetched")
    with index_server(corpus.CORPUS_PACKAGE, {corpus.SDIST_NAME: corpus_dir.parent / corpus.SDIST_NAME}) as served:
        env = _environment(venv, dest / "home", PIP_INDEX_URL=served.url)
        done = _run([venv / "bin" / "template-analyzer", "corpus", "fetch", "--dest", dest / "x"], env=env)
    assert done.returncode == 0, done.stderr
    yield Path(done.stdout.strip()), done.stderr


def test_corpus_fetch_without_pip_reads_the_configured_index(fetched: tuple[Path, str], corpus_dir: Path) -> None:
    folder, stderr = fetched
    assert corpus.read_manifest(folder) == corpus.read_manifest(corpus_dir)
    assert "this Python has no pip" in stderr


def test_corpus_fetch_with_nothing_to_download_with_is_one_line(venv: Path, tmp_path: Path) -> None:
    done = _run(
        [venv / "bin" / "template-analyzer", "corpus", "fetch", "--dest", tmp_path / "x"],
        env=_environment(venv, tmp_path / "home"),
    )
    assert (done.returncode, done.stdout) == (1, "")
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot download llama-cpp-python==0.3.36: "), done.stderr
    assert f"`{venv / 'bin' / 'python'} -m ensurepip`" in lines[0]


def test_analyze_parser_serve_help_and_golden_work_in_the_venv(
    venv: Path, fetched: tuple[Path, str], tmp_path: Path
) -> None:
    folder, _ = fetched
    command = venv / "bin" / "template-analyzer"
    env = _environment(venv, tmp_path / "home")
    template = folder / "Qwen-Qwen2.5-7B-Instruct.jinja"

    analysed = _run([command, "analyze", template], env=env)
    assert analysed.returncode == 0 and "format: json" in analysed.stdout, analysed.stderr

    module = tmp_path / "qwen_parser.py"
    written = _run([command, "parser", template, "-o", module], env=env)
    assert written.returncode == 0, written.stderr
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    parsed = _run([venv / "bin" / "python", module], env=env, input=output)
    assert parsed.returncode == 0 and '"name": "get_weather"' in parsed.stdout, parsed.stderr

    helped = _run([command, "serve", "--help"], env=env)
    assert helped.returncode == 0 and "--upstream" in helped.stdout, helped.stderr

    golden = _run([command, "golden", "--golden-dir", REPOSITORY / "golden", "--corpus-dir", folder], env=env)
    assert golden.returncode == 0, golden.stdout + golden.stderr[-2000:]
    assert golden.stdout == "0 of 70 golden files differ\n"
