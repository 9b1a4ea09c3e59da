"""The parser runtime of an earlier git revision, loaded beside ours in one process, so that a benchmark
can time the two on the same outputs in turns (benchmarks/parser_speed.py --baseline REV).

The revision's tree is exported (``git archive``) into a temporary folder. A subprocess with that tree
first on its path lowers the revision's own golden descriptions with the revision's own
``analyzer.lower`` and answers the shapes as ``shape_to_dict`` JSON; this process then loads the
revision's ``analyzer/runtime/*.py`` as a package of another name (the runtime imports only the standard
library and, inside itself, relatively) and builds its parsers from those dicts with its own
``shape_from_dict``. The temporary tree is removed before ``load`` returns.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[2]
# What a revision's tree must hold for its runtime to be loaded and its shapes made.
NEEDED = (
    "analyzer/runtime/__init__.py",
    "analyzer/runtime/shape.py",
    "analyzer/runtime/stream.py",
    "analyzer/lower.py",
)

# Run in the revision's tree: its own description loader, lowering and shape serialiser, on its own
# golden files. Names to lower arrive on stdin (null: all of them); one JSON object answers on stdout.
_LOWER_SCRIPT = """
import json, sys
from pathlib import Path
tree = Path.cwd().resolve()
import analyzer
if not Path(analyzer.__file__).resolve().is_relative_to(tree):
    sys.exit(f"imported analyzer from {analyzer.__file__}, not from the revision's tree {tree}")
from analyzer.description import loads
from analyzer.lower import lower
from analyzer.runtime.shape import shape_to_dict
wanted = json.load(sys.stdin)
shapes, failed = {}, {}
for path in sorted((tree / "golden").glob("*.json")):
    if wanted is not None and path.stem not in wanted:
        continue
    try:
        shapes[path.stem] = shape_to_dict(lower(loads(path.read_text(encoding="utf-8"))))
    except Exception as exc:
        failed[path.stem] = f"{type(exc).__name__}: {exc}"
json.dump({"shapes": shapes, "failed": failed}, sys.stdout)
"""


class BaselineError(Exception):
    """A revision that cannot serve as the baseline; the message is one line naming it."""


@dataclass
class Baseline:
    """The runtime of ``commit`` as a package beside ours, and the shapes its lowering made."""

    commit: str
    runtime: types.ModuleType  # the revision's analyzer.runtime, as a package of its own name
    shapes: dict[str, dict[str, Any]]  # golden file stem -> the revision's shape_to_dict of its lowering
    failed: dict[str, str] = field(default_factory=dict)  # golden file stem -> why the revision could not lower it

    def shape(self, name: str) -> Any:
        return self.runtime.shape.shape_from_dict(self.shapes[name])

    def parser(self, shape: Any, tools: list[dict[str, Any]]) -> Any:
        return self.runtime.stream.Parser(shape, tools)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=120, check=False)
    except FileNotFoundError:
        raise BaselineError("git is not installed") from None


def resolve(revision: str, repo: Path = CHECKOUT) -> str:
    """The commit ``revision`` names in ``repo``, once its tree is checked to hold a runtime to load."""
    if not revision or revision.startswith("-"):  # no option to git, nor the empty name
        raise BaselineError(f"{revision!r}: not a git revision of {repo}")
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if found.returncode != 0:
        raise BaselineError(f"{revision!r}: not a git revision of {repo}")
    commit = found.stdout.decode().strip()
    listed = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", "analyzer", "golden")
    paths = set(listed.stdout.decode().splitlines())
    missing = [path for path in NEEDED if path not in paths]
    if missing:
        raise BaselineError(f"{revision!r} ({commit[:9]}): its tree has no {', '.join(missing)}")
    if not any(path.startswith("golden/") and path.endswith(".json") for path in paths):
        raise BaselineError(f"{revision!r} ({commit[:9]}): its tree has no golden/*.json descriptions")
    return commit


def load(revision: str, names: list[str] | None = None, repo: Path = CHECKOUT) -> Baseline:
    """The runtime of ``revision`` loaded beside ours, and its shapes for the golden files ``names``
    (None: every golden file of the revision)."""
    commit = resolve(revision, repo)
    archive = _git(repo, "archive", "--format=tar", commit, "analyzer", "golden")
    if archive.returncode != 0:
        raise BaselineError(f"{revision!r}: git archive failed: {_last_line(archive.stderr)}")
    with tempfile.TemporaryDirectory(prefix="parser-baseline-") as folder:
        tree = Path(folder)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            # (The archive is this repository's own; the filter, where this Python has it, keeps
            # every path inside the folder all the same.)
            tar.extractall(tree, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        lowered = subprocess.run(
            [sys.executable, "-c", _LOWER_SCRIPT],
            input=json.dumps(names).encode(),
            capture_output=True,
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"},
            timeout=600,
            check=False,
        )
        if lowered.returncode != 0:
            raise BaselineError(
                f"{revision!r}: its analyzer could not lower its golden descriptions: {_last_line(lowered.stderr)}"
            )
        answer = json.loads(lowered.stdout)
        runtime = _load_package(f"baseline_runtime_{commit[:12]}", tree / "analyzer" / "runtime")
    return Baseline(commit, runtime, answer["shapes"], answer["failed"])


def _load_package(name: str, folder: Path) -> types.ModuleType:
    """Every module of ``folder`` imported as the package ``name``. All of them now, while the files
    exist: a relative import inside a function then finds its module in ``sys.modules``."""
    if name in sys.modules:  # the same revision loaded before in this process
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses and typing look modules up by name while classes are made.
    sys.modules[name] = package
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(package)
        for module in sorted(folder.glob("*.py")):
            if module.stem != "__init__":
                importlib.import_module(f"{name}.{module.stem}")
    except BaseException:
        for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
            del sys.modules[loaded]
        raise
    finally:
        sys.dont_write_bytecode = dont_write
    return package


def _last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no message)"


def summary(message: Any) -> tuple[str, str, tuple[tuple[str, Any], ...], tuple[str, ...]]:
    """What two runtimes' messages are compared on: content, reasoning, each call's name and arguments
    (read as JSON where they are, so spacing and key order do not count), and the errors' kinds. Ids
    and warnings are left out: the ids a parser makes changed form, and warnings are newer than the
    runtime they would be compared with."""
    calls = []
    for call in message.tool_calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        calls.append((call.name, arguments))
    return (
        message.content,
        message.reasoning_content,
        tuple(calls),
        tuple(error.kind for error in message.errors),
    )


def difference(ours: Any, theirs: Any) -> str | None:
    """The first of the compared parts on which two messages differ, both sides shortened; None when
    they agree."""
    parts = ("content", "reasoning", "calls", "error kinds")
    for label, mine, other in zip(parts, summary(ours), summary(theirs), strict=True):
        if mine != other:
            return f"{label}: current {_short(mine)} | baseline {_short(other)}"
    return None


def _short(value: Any, limit: int = 70) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
