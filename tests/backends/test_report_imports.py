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
