"""The pinned corpus: its content, its cache, and its refusal of anything that is not the pinned sdist.

Only the session fixture may touch the network (once per machine); every test here that exercises
downloading replaces pip, and fails loudly if pip is run when it should not be.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run
from helpers.index_server import index_server

from analyzer import corpus
from analyzer.errors import CorpusError
from analyzer.sources import load_template


def cached_sdist(corpus_dir: Path) -> Path:
    return corpus_dir.parent / corpus.SDIST_NAME


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any attempt to run pip (the only network path) fail the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"unexpected subprocess: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)


def fake_pip(
    monkeypatch: pytest.MonkeyPatch, *, returncode: int = 0, stderr: str = "", payload: bytes | None = None
) -> list[list[str]]:
    """Stand in for ``pip download``: optionally save ``payload`` as the sdist in its ``--dest``."""
    calls: list[list[str]] = []

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if payload is not None:
            dest = Path(command[command.index("--dest") + 1])
            (dest / corpus.SDIST_NAME).write_bytes(payload)
        return subprocess.CompletedProcess(command, returncode, stdout="", stderr=stderr)

    monkeypatch.setattr(subprocess, "run", run)
    return calls


# --------------------------------------------------------------------------------------------------
# The corpus itself


def test_corpus_has_all_templates(corpus_paths: list[Path]) -> None:
    assert len(corpus_paths) == corpus.TEMPLATE_COUNT == 70
    assert all(path.suffix == ".jinja" and path.is_file() for path in corpus_paths)


def test_corpus_names_are_unique(corpus_paths: list[Path]) -> None:
    stems = [path.stem for path in corpus_paths]
    assert len(set(stems)) == len(stems)
    assert corpus_paths == sorted(corpus_paths)


def test_manifest_matches_files(corpus_dir: Path, corpus_paths: list[Path]) -> None:
    manifest = corpus.read_manifest(corpus_dir)
    assert set(manifest) == {path.name for path in corpus_paths}
    for path in corpus_paths:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == manifest[path.name], path.name


REPOSITORY = Path(__file__).resolve().parents[1]


def test_committed_manifest_is_the_corpus(corpus_dir: Path) -> None:
    """templates/corpus-manifest.json is the reviewed list of the corpus: the pin the code fetches and
    each template's hash, as extraction records them; golden/ holds one description per template."""
    committed = json.loads((REPOSITORY / "templates" / "corpus-manifest.json").read_text(encoding="utf-8"))
    assert (committed["package"], committed["version"]) == (corpus.CORPUS_PACKAGE, corpus.CORPUS_VERSION)
    assert (committed["sdist"], committed["sdist_sha256"]) == (corpus.SDIST_NAME, corpus.SDIST_SHA256)
    assert len(committed["files"]) == corpus.TEMPLATE_COUNT
    assert committed["files"] == corpus.read_manifest(corpus_dir)
    golden_names = {path.stem for path in (REPOSITORY / "golden").glob("*.json")}
    assert golden_names == {Path(name).stem for name in committed["files"]}


def test_every_corpus_template_loads(corpus_paths: list[Path]) -> None:
    for path in corpus_paths:
        assert load_template(str(path)).source.strip(), path.name


def test_cached_sdist_is_the_pinned_one(corpus_dir: Path) -> None:
    digest = hashlib.sha256(cached_sdist(corpus_dir).read_bytes()).hexdigest()
    assert digest == corpus.SDIST_SHA256


def test_second_fetch_needs_no_network(corpus_dir: Path, no_pip: None) -> None:
    assert corpus.fetch() == corpus_dir


# --------------------------------------------------------------------------------------------------
# Extraction from a given or cached sdist


def test_extract_from_given_sdist(corpus_dir: Path, tmp_path: Path, no_pip: None) -> None:
    lines: list[str] = []
    templates = corpus.fetch(tmp_path, progress=lines.append, sdist=cached_sdist(corpus_dir))
    assert templates == tmp_path / "corpus" / "llama-cpp-python-0.3.36" / "templates"
    assert corpus.read_manifest(templates) == corpus.read_manifest(corpus_dir)
    assert [path.name for path in corpus.corpus_templates(templates)] == [
        path.name for path in corpus.corpus_templates(corpus_dir)
    ]
    assert any(line.startswith("verifying") for line in lines)
    assert any(line.startswith("extracting") for line in lines)
    assert (templates.parent / corpus.SDIST_NAME).is_file()  # kept for later re-extracts
    assert not [p for p in templates.parent.iterdir() if p.name.startswith(".")]  # no scratch left

    # A damaged corpus is rebuilt from the cached sdist, still without network.
    victim = corpus.corpus_templates(templates)[0]
    victim.write_text("edited", encoding="utf-8")
    (templates / "stray.jinja").write_text("{{ x }}", encoding="utf-8")
    assert corpus.fetch(tmp_path) == templates
    assert victim.read_bytes() == (corpus_dir / victim.name).read_bytes()
    assert not (templates / "stray.jinja").exists()


def test_tampered_sdist_is_rejected(corpus_dir: Path, tmp_path: Path, no_pip: None) -> None:
    tampered = tmp_path / corpus.SDIST_NAME
    shutil.copyfile(cached_sdist(corpus_dir), tampered)
    with open(tampered, "r+b") as handle:
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 0x01]))
    with pytest.raises(CorpusError) as info:
        corpus.fetch(tmp_path / "cache", sdist=tampered)
    message = str(info.value)
    assert "sha256" in message and corpus.SDIST_SHA256 in message and str(tampered) in message
    assert "\n" not in message
    assert not (tmp_path / "cache" / "corpus" / "llama-cpp-python-0.3.36" / "templates").exists()


def test_fake_sdist_is_rejected(tmp_path: Path, no_pip: None) -> None:
    fake = tmp_path / "fake.tar.gz"
    fake.write_bytes(b"not an sdist")
    with pytest.raises(CorpusError, match="sha256"):
        corpus.fetch(tmp_path / "cache", sdist=fake)


def test_missing_given_sdist(tmp_path: Path, no_pip: None) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        corpus.fetch(tmp_path / "cache", sdist=tmp_path / "absent.tar.gz")


# --------------------------------------------------------------------------------------------------
# Downloading (pip replaced)


def test_corrupt_cached_sdist_is_downloaded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "corpus" / "llama-cpp-python-0.3.36"
    root.mkdir(parents=True)
    (root / corpus.SDIST_NAME).write_bytes(b"damaged")
    calls = fake_pip(monkeypatch, payload=b"still wrong")
    pattern = r"^downloaded llama_cpp_python-0.3.36.tar.gz has sha256 [0-9a-f]{64}, expected [0-9a-f]{64}$"
    with pytest.raises(CorpusError, match=pattern):
        corpus.fetch(tmp_path)
    assert len(calls) == 1
    assert not (root / corpus.SDIST_NAME).exists()
    assert [p.name for p in root.iterdir()] == []  # the scratch download folder is gone too


def test_pip_command_uses_the_configured_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pip(monkeypatch, payload=b"x")
    with pytest.raises(CorpusError):
        corpus.fetch(tmp_path)
    (command,) = calls
    assert command[1:4] == ["-m", "pip", "download"]
    assert "llama-cpp-python==0.3.36" in command
    assert not any("://" in part for part in command)  # no index or URL of our own


def test_pip_failure_reports_pips_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = (
        "Looking in indexes: somewhere\n"
        "ERROR: No matching distribution found for llama-cpp-python==0.3.36\n"
        "note: something generic\n"
    )
    fake_pip(monkeypatch, returncode=1, stderr=stderr)
    with pytest.raises(CorpusError) as info:
        corpus.fetch(tmp_path)
    assert str(info.value) == (
        "pip download llama-cpp-python==0.3.36 failed: "
        "ERROR: No matching distribution found for llama-cpp-python==0.3.36"
    )


def test_pip_missing_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pip(monkeypatch)
    with pytest.raises(CorpusError, match=r"did not produce llama_cpp_python-0\.3\.36\.tar\.gz"):
        corpus.fetch(tmp_path)


# --------------------------------------------------------------------------------------------------
# Downloading without pip in this Python (a venv made --without-pip, or by uv)


@pytest.fixture
def pipless(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This Python has no pip, no index is configured and no pip is on PATH, until a test sets one."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real_find_spec(name, *a)
    )
    for variable in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_CERT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))


def test_without_pip_the_configured_index_is_read_through_its_json_api(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipless: None, no_pip: None
) -> None:
    with index_server("llama-cpp-python", {corpus.SDIST_NAME: cached_sdist(corpus_dir)}) as served:
        monkeypatch.setenv("PIP_INDEX_URL", served.url)
        lines: list[str] = []
        templates = corpus.fetch(tmp_path / "cache", progress=lines.append)
    assert corpus.read_manifest(templates) == corpus.read_manifest(corpus_dir)
    assert [path for path, _ in served.requests] == ["/simple/llama-cpp-python/", f"/files/{corpus.SDIST_NAME}"]
    assert "application/vnd.pypi.simple.v1+json" in served.requests[0][1]["Accept"]
    assert lines[0] == (
        f"downloading {corpus.SDIST_NAME} (about 77 MB) from {served.url} (PIP_INDEX_URL; this Python has no pip)"
    )


def test_without_pip_an_html_index_from_pip_conf_with_credentials(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipless: None, no_pip: None
) -> None:
    """pip.conf's [download] index-url wins over [global]; credentials go to the index's host as basic
    auth and never into a message; relative links on an HTML page are read against the page."""
    with index_server("llama-cpp-python", {corpus.SDIST_NAME: cached_sdist(corpus_dir)}, html=True) as served:
        with_credentials = served.url.replace("http://", "http://reader:s%40cret@")
        config = tmp_path / "pip.conf"
        config.write_text(
            f"[global]\nindex-url = http://127.0.0.1:9/nowhere\n[download]\nindex-url = {with_credentials}\n"
        )
        monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
        lines: list[str] = []
        templates = corpus.fetch(tmp_path / "cache", progress=lines.append)
    assert corpus.read_manifest(templates) == corpus.read_manifest(corpus_dir)
    expected = "Basic " + base64.b64encode(b"reader:s@cret").decode()
    assert [headers.get("Authorization") for _, headers in served.requests] == [expected, expected]
    assert not any("cret" in line for line in lines) and f"({config}; " in lines[0]


def test_without_pip_an_index_without_the_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipless: None, no_pip: None
) -> None:
    other = tmp_path / "other.tar.gz"
    other.write_bytes(b"x")
    with index_server("llama-cpp-python", {"llama_cpp_python-0.3.35.tar.gz": other}) as served:
        monkeypatch.setenv("PIP_INDEX_URL", served.url)
        with pytest.raises(CorpusError) as info:
            corpus.fetch(tmp_path / "cache")
    assert str(info.value) == (
        f"downloading {corpus.SDIST_NAME} without pip failed: "
        f"{served.url}llama-cpp-python/ lists no {corpus.SDIST_NAME}"
    )


def test_without_pip_a_file_the_index_changed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipless: None, no_pip: None
) -> None:
    forged = tmp_path / "forged.tar.gz"
    forged.write_bytes(b"not the pinned sdist")
    with index_server("llama-cpp-python", {corpus.SDIST_NAME: forged}) as served:
        monkeypatch.setenv("PIP_INDEX_URL", served.url)
        with pytest.raises(
            CorpusError, match=r"^downloaded llama_cpp_python-0\.3\.36\.tar\.gz has sha256 [0-9a-f]{64}, "
        ):
            corpus.fetch(tmp_path / "cache")
    root = tmp_path / "cache" / "corpus" / "llama-cpp-python-0.3.36"
    assert list(root.iterdir()) == []


def test_without_pip_or_an_index_a_pip_on_path_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipless: None
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip3").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "pip3").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    calls = fake_pip(monkeypatch, payload=b"x")
    with pytest.raises(CorpusError, match="sha256"):
        corpus.fetch(tmp_path / "cache")
    (command,) = calls
    assert command[:2] == [str(bin_dir / "pip3"), "download"] and "llama-cpp-python==0.3.36" in command


def test_with_nothing_to_download_with_the_one_line_says_what_to_run(
    tmp_path: Path, pipless: None, no_pip: None
) -> None:
    with pytest.raises(CorpusError) as info:
        corpus.fetch(tmp_path / "cache")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot download llama-cpp-python==0.3.36: this Python (")
    assert f"`{sys.executable} -m ensurepip`" in message
    assert "`pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36 -d DIR`" in message
    assert message.endswith("`template-analyzer corpus fetch --sdist DIR/llama_cpp_python-0.3.36.tar.gz`")


def test_fetch_sdist_option_extracts_a_file_downloaded_elsewhere(
    corpus_dir: Path, tmp_path: Path, no_pip: None
) -> None:
    code, out, err = run(["corpus", "fetch", "--dest", str(tmp_path), "--sdist", str(cached_sdist(corpus_dir))])
    assert code == 0, err
    assert corpus.read_manifest(Path(out.strip())) == corpus.read_manifest(corpus_dir)


# --------------------------------------------------------------------------------------------------
# Archive safety


def test_extraction_keeps_only_direct_template_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None
) -> None:
    prefix = corpus.MEMBER_PREFIX
    archive = tmp_path / "crafted.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:

        def add(name: str, data: bytes = b"{{ x }}", kind: bytes = tarfile.REGTYPE) -> None:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        add(prefix + "good-a.jinja")
        add(prefix + "good-b.jinja")
        add(prefix + "../../../escape.jinja")
        add(prefix + "nested/deeper.jinja")
        add(prefix + "README.md")
        add(prefix + "link.jinja", kind=tarfile.SYMTYPE)
        add("other/models/templates/elsewhere.jinja")
    monkeypatch.setattr(corpus, "SDIST_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    monkeypatch.setattr(corpus, "TEMPLATE_COUNT", 2)

    templates = corpus.fetch(tmp_path / "cache", sdist=archive)
    assert sorted(os.listdir(templates)) == ["MANIFEST.json", "good-a.jinja", "good-b.jinja"]
    assert not list(tmp_path.rglob("escape.jinja"))


def test_wrong_template_count_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    archive = tmp_path / "small.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo(corpus.MEMBER_PREFIX + "only.jinja")
        tar.addfile(info, io.BytesIO(b""))
    monkeypatch.setattr(corpus, "SDIST_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    with pytest.raises(CorpusError, match=r"holds 1 templates .* expected 70"):
        corpus.fetch(tmp_path / "cache", sdist=archive)


def test_broken_archive_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(b"\x1f\x8b" + b"\x00" * 64)
    monkeypatch.setattr(corpus, "SDIST_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    with pytest.raises(CorpusError, match="cannot extract"):
        corpus.fetch(tmp_path / "cache", sdist=archive)


# --------------------------------------------------------------------------------------------------
# Cache location


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEMPLATE_ANALYZER_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert corpus.default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TEMPLATE_ANALYZER_CACHE")
    assert corpus.default_cache_dir() == tmp_path / "xdg" / "template-analyzer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert corpus.default_cache_dir() == tmp_path / "home" / ".cache" / "template-analyzer"
