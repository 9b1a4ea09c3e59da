"""The pinned test corpus: llama.cpp's ``models/templates/*.jinja`` as vendored in one llama-cpp-python sdist.

The sdist is fetched with pip rather than by URL so the machine's configured index (a mirror, a proxy)
is honoured and no host name lives in our code (without pip: from that configured index's simple API,
``analyzer.package_index``); it is pinned by sha256 so every run, on every machine,
analyses exactly the same 70 templates. Both the sdist and the extracted templates are cached, and a
``MANIFEST.json`` beside the templates lets a later run trust the folder without any network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

from analyzer import package_index
from analyzer.errors import CorpusError

__all__ = [
    "CORPUS_PACKAGE",
    "CORPUS_VERSION",
    "SDIST_NAME",
    "SDIST_SHA256",
    "TEMPLATE_COUNT",
    "corpus_templates",
    "default_cache_dir",
    "fetch",
    "read_manifest",
]

CORPUS_PACKAGE = "llama-cpp-python"
CORPUS_VERSION = "0.3.36"
SDIST_NAME = "llama_cpp_python-0.3.36.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
MEMBER_PREFIX = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
TEMPLATE_COUNT = 70
MANIFEST_NAME = "MANIFEST.json"

# pip prepares the sdist's metadata even for a plain download, which for this package means setting
# up scikit-build-core and, on a machine without CMake, a CMake wheel: give it time, but not forever.
_PIP_TIMEOUT_SECONDS = 30 * 60

Progress = Callable[[str], None]


def default_cache_dir() -> Path:
    """Where downloads are kept between runs; ``$TEMPLATE_ANALYZER_CACHE`` lets CI and tests redirect it."""
    explicit = os.environ.get("TEMPLATE_ANALYZER_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "template-analyzer"
    return Path.home() / ".cache" / "template-analyzer"


def fetch(dest: Path | None = None, *, progress: Progress | None = None, sdist: Path | None = None) -> Path:
    """Return the folder holding the corpus templates, downloading and extracting only what is missing.

    ``dest`` is the cache root (default ``default_cache_dir()``); the templates land in
    ``<dest>/corpus/llama-cpp-python-0.3.36/templates`` and the sdist beside that folder. ``sdist``
    names an sdist file already on disk to extract from instead of downloading (offline machines);
    like a download, it must match the pinned sha256.
    """
    report = progress or (lambda _line: None)
    root = (dest if dest is not None else default_cache_dir()) / "corpus" / f"{CORPUS_PACKAGE}-{CORPUS_VERSION}"
    templates_dir = root / "templates"
    if _manifest_matches(templates_dir):
        return templates_dir

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CorpusError(f"cannot create corpus cache folder {root}: {_os_reason(exc)}") from None

    archive = root / SDIST_NAME
    if sdist is not None and Path(sdist).resolve() != archive.resolve():
        _verify(Path(sdist), report)
        _copy_into_cache(Path(sdist), archive)  # so a later re-extract needs neither network nor the file
    elif archive.is_file():
        try:
            _verify(archive, report)
        except CorpusError as exc:
            # A cached file that no longer matches is damaged or tampered with; a fresh download,
            # verified in turn, is the remedy, and the download path reports any real mismatch.
            report(f"discarding cached sdist: {exc}")
            _remove(archive)
    if not archive.is_file():
        _download(root, archive, report)

    _extract(archive, templates_dir, report)
    return templates_dir


def corpus_templates(dir: Path) -> list[Path]:
    """The corpus template files in a stable order, so results and reports compare across runs."""
    return sorted(path for path in Path(dir).glob("*.jinja") if path.is_file())


# --------------------------------------------------------------------------------------------------
# Manifest


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest_matches(templates_dir: Path) -> bool:
    """True when the folder holds exactly the files its manifest lists, with the listed hashes.

    Hashing 70 small files costs milliseconds and catches a hand-edited or half-deleted corpus, which
    would otherwise silently change every corpus-wide result.
    """
    try:
        manifest = json.loads((templates_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        files = manifest["files"]
        if manifest.get("sdist_sha256") != SDIST_SHA256 or not isinstance(files, dict):
            return False
        present = {path.name for path in templates_dir.glob("*.jinja")}
        if len(files) != TEMPLATE_COUNT or present != set(files):
            return False
        return all(_sha256_file(templates_dir / name) == digest for name, digest in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def read_manifest(templates_dir: Path) -> dict[str, str]:
    """File name -> sha256 as recorded at extraction time."""
    try:
        manifest = json.loads((Path(templates_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))
        return {str(name): str(digest) for name, digest in manifest["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorpusError(f"{templates_dir}: cannot read {MANIFEST_NAME} ({exc})") from None


# --------------------------------------------------------------------------------------------------
# Download and verification


def _verify(archive: Path, report: Progress, label: str | None = None) -> None:
    """Check the pinned hash; ``label`` names the file in messages when its path is a scratch one."""
    label = label or f"sdist {archive}"
    report(f"verifying sha256 of {label}")
    try:
        actual = _sha256_file(archive)
    except OSError as exc:
        raise CorpusError(f"cannot read {label}: {_os_reason(exc)}") from None
    if actual != SDIST_SHA256:
        raise CorpusError(f"{label} has sha256 {actual}, expected {SDIST_SHA256}")


def _download(root: Path, archive: Path, report: Progress) -> None:
    """Download the sdist into a scratch folder, verify it, then move it into the cache.

    With this Python's own pip when it has one; else (a venv made ``--without-pip`` or by uv) straight
    from the index the machine is configured with, through its simple API; else with a pip found on
    PATH. The pinned hash makes all three equally safe.
    """
    scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=root))
    try:
        downloaded = scratch / SDIST_NAME
        own_pip = importlib.util.find_spec("pip") is not None
        index = None if own_pip else package_index.configured_index()
        path_pip = None if own_pip or index is not None else (shutil.which("pip3") or shutil.which("pip"))
        if own_pip:
            _pip_download([sys.executable, "-m", "pip"], scratch, report, "")
        elif index is not None:
            report(f"downloading {SDIST_NAME} (about 77 MB) from {index.url} ({index.source}; this Python has no pip)")
            try:
                package_index.download(index, CORPUS_PACKAGE, SDIST_NAME, downloaded)
            except package_index.PackageIndexError as exc:
                raise CorpusError(f"downloading {SDIST_NAME} without pip failed: {exc}") from None
        elif path_pip is not None:
            _pip_download([path_pip], scratch, report, f" at {path_pip} (this Python has none)")
        else:
            raise CorpusError(_no_downloader())
        if not downloaded.is_file():
            found = ", ".join(sorted(path.name for path in scratch.iterdir())) or "nothing"
            raise CorpusError(f"pip download {_REQUIREMENT} did not produce {SDIST_NAME} (got: {found})")
        _verify(downloaded, report, f"downloaded {SDIST_NAME}")
        try:
            os.replace(downloaded, archive)
        except OSError as exc:
            raise CorpusError(f"cannot move the sdist into the cache at {archive}: {_os_reason(exc)}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_REQUIREMENT = f"{CORPUS_PACKAGE}=={CORPUS_VERSION}"


def _pip_download(pip: list[str], scratch: Path, report: Progress, which: str) -> None:
    report(f"downloading {_REQUIREMENT} sdist with pip{which} (about 77 MB; pip also prepares its metadata) ...")
    command = [
        *pip,
        "download",
        "--no-deps",
        # Only our package as source: ":all:" would also force pip's build requirements (CMake when
        # the machine has none) to be built from source, which fails on a plain machine.
        "--no-binary",
        CORPUS_PACKAGE,
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--dest",
        str(scratch),
        _REQUIREMENT,
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=_PIP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise CorpusError(f"pip download {_REQUIREMENT} took longer than {_PIP_TIMEOUT_SECONDS} s") from None
    except OSError as exc:
        raise CorpusError(f"cannot run pip{which}: {_os_reason(exc)}") from None
    if result.returncode != 0:
        raise CorpusError(f"pip download {_REQUIREMENT} failed: {_pip_reason(result.stderr, result.stdout)}")


def _no_downloader() -> str:
    """The one line for a machine with nothing to download with: what to run instead, exactly."""
    return (
        f"cannot download {_REQUIREMENT}: this Python ({sys.executable}) has no pip, no index is configured "
        f"(PIP_INDEX_URL, or index-url in pip.conf) and no pip is on PATH; run `{sys.executable} -m ensurepip` "
        f"and fetch again, or download it with any pip (`pip download --no-deps --no-binary {CORPUS_PACKAGE} "
        f"{_REQUIREMENT} -d DIR`) and run `template-analyzer corpus fetch --sdist DIR/{SDIST_NAME}`"
    )


# --------------------------------------------------------------------------------------------------
# Extraction


def _extract(archive: Path, templates_dir: Path, report: Progress) -> None:
    """Write the corpus templates into ``templates_dir`` all at once, or not at all.

    Members are read as bytes and written under their base name only, so no member name, link or mode
    in the archive can place a file outside the folder. Files go to a scratch folder that is renamed
    into place, so an interrupted run never leaves a half corpus that looks complete.
    """
    report(f"extracting templates from {archive.name}")
    scratch = Path(tempfile.mkdtemp(prefix=".extract-", dir=templates_dir.parent))
    try:
        files: dict[str, str] = {}
        try:
            with tarfile.open(archive, "r|gz") as tar:
                for member in tar:
                    name = _template_name(member)
                    if name is None:
                        continue
                    if name in files:
                        raise CorpusError(f"sdist {archive} holds the template {name} twice")
                    handle = tar.extractfile(member)
                    if handle is None:
                        continue
                    data = handle.read()
                    (scratch / name).write_bytes(data)
                    files[name] = hashlib.sha256(data).hexdigest()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise CorpusError(f"cannot extract sdist {archive}: {exc}") from None

        if len(files) != TEMPLATE_COUNT:
            raise CorpusError(
                f"sdist {archive} holds {len(files)} templates under {MEMBER_PREFIX}, expected {TEMPLATE_COUNT}"
            )
        manifest = {
            "package": CORPUS_PACKAGE,
            "version": CORPUS_VERSION,
            "sdist": SDIST_NAME,
            "sdist_sha256": SDIST_SHA256,
            "files": dict(sorted(files.items())),
        }
        (scratch / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        scratch.chmod(0o755)  # mkdtemp makes it private; the cached corpus is plain readable data
        _install(scratch, templates_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _template_name(member: tarfile.TarInfo) -> str | None:
    """The file name to store a corpus member under, or ``None`` for members that are not templates."""
    if not member.isfile() or not member.name.startswith(MEMBER_PREFIX):
        return None
    rest = member.name[len(MEMBER_PREFIX) :]
    name = os.path.basename(rest)
    if "/" in rest or not name.endswith(".jinja") or name.startswith("."):
        return None
    return name


def _install(scratch: Path, templates_dir: Path) -> None:
    """Put the freshly extracted folder in place of whatever stale copy was there."""
    if templates_dir.exists():
        # Move the old copy aside first: a rename cannot replace a non-empty folder.
        stale = templates_dir.with_name(f".stale-{os.getpid()}-{templates_dir.name}")
        try:
            os.replace(templates_dir, stale)
        except OSError:
            pass  # the final rename below reports what is wrong
        else:
            shutil.rmtree(stale, ignore_errors=True)
    try:
        os.replace(scratch, templates_dir)
    except OSError as exc:
        # Another process may have installed the same corpus meanwhile; its copy is as good as ours.
        if _manifest_matches(templates_dir):
            return
        raise CorpusError(f"cannot install corpus into {templates_dir}: {_os_reason(exc)}") from None


def _copy_into_cache(source: Path, archive: Path) -> None:
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, archive)
    except OSError as exc:
        raise CorpusError(f"cannot copy {source} into the cache at {archive}: {_os_reason(exc)}") from None
    finally:
        partial.unlink(missing_ok=True)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CorpusError(f"cannot remove {path}: {_os_reason(exc)}") from None


def _pip_reason(stderr: str, stdout: str) -> str:
    """The line of pip's output that says what went wrong.

    pip often ends with a generic "note: This error originates from a subprocess" after the line
    that matters, so its own ``ERROR:`` line, or the ``×`` headline of a failed build step, wins
    over the plain last line.
    """
    for output in (stderr, stdout):
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        for marker in ("ERROR:", "×"):
            marked = [line for line in lines if line.startswith(marker)]
            if marked:
                return marked[-1].lstrip("× ").strip()
        if lines:
            return lines[-1]
    return "pip printed nothing"


def _os_reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
