"""The audit's text, JSON and HTML only format a description and its evidence: their modules import
nothing that renders or detects (read with ast, so an import inside a function counts too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import analyzer

PACKAGE = Path(analyzer.__file__).parent
FORBIDDEN = ("analyzer.analysis", "analyzer.detect", "analyzer.render", "minijinja", "jinja2", "difflib")


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("module", ["backends/audit.py", "backends/html_report.py", "backends/compare.py"])
def test_report_modules_only_format(module: str) -> None:
    imported = imported_modules(PACKAGE / module)
    assert "analyzer.evidence" in imported or module.endswith("compare.py")
    bad = sorted(name for name in imported for prefix in FORBIDDEN if name == prefix or name.startswith(prefix + "."))
    assert bad == [], f"{module} imports {bad}"


def test_the_check_sees_imports() -> None:
    """The reader finds both import forms, so an empty result above means no import, not a blind check."""
    found = imported_modules(PACKAGE / "analysis.py")
    assert "analyzer.render.conversation.Renderer" in found and "analyzer.detect.tools" in found


BACKENDS = sorted(path for path in (PACKAGE / "backends").rglob("*.py"))
# What a backend may take from the front half: the description, its lowered shape, and the one
# rendering API (for the prompted format's prompt), never the analysis or its detectors.
BACKEND_FORBIDDEN = (
    "analyzer.analysis",
    "analyzer.detect",
    "analyzer.diff",
    "analyzer.render.session",
    "analyzer.render.variants",
    "analyzer.render.engines",
    "analyzer.lower.split_markers",
)


@pytest.mark.parametrize("path", BACKENDS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_backends_read_the_description_and_its_shape_only(path: Path) -> None:
    imported = imported_modules(path)
    bad = sorted(
        name for name in imported for prefix in BACKEND_FORBIDDEN if name == prefix or name.startswith(prefix + ".")
    )
    assert bad == [], f"{path.name} imports {bad}"
    assert "split_markers" not in path.read_text(encoding="utf-8"), "markers are split once, in lower.py"


def test_the_runtime_imports_nothing_of_the_project() -> None:
    for path in sorted((PACKAGE / "runtime").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not (node.module or "").startswith("analyzer"), f"{path.name}: {node.module}"
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("analyzer") for alias in node.names), path.name
