"""The package's modules import one way: no cycle (imports inside functions and under TYPE_CHECKING
count: a lazy import is still a dependency), and no module imports a package it lives in (``analyzer``'s
``__init__`` is the library's front, which imports everything below it). Read from the source with ast,
so a test that imports nothing cannot miss an import that has not run yet."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from analyzer.backends.parser import codegen
from analyzer.errors import CodegenError

PACKAGE = Path(__file__).resolve().parent.parent / "analyzer"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(module: str, path: Path) -> set[str]:
    """The package's modules ``module`` imports, anywhere in its source (``from a import b`` counts
    as ``a.b`` where that is a module, else as ``a``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            while name not in MODULES and "." in name:
                name = name.rpartition(".")[0]
            if name in MODULES and name != module:
                found.add(name)
    return found


GRAPH = {module: _imported(module, path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return groups


def test_the_reader_sees_imports_of_every_kind() -> None:
    """The graph holds a top-level, a lazy (in a function) and a relative import the source has."""
    assert "analyzer.render.sandbox" in GRAPH["analyzer.render.jinja2_engine"]
    assert "analyzer.render.jinja2_engine" in GRAPH["analyzer.render.engines"]  # imported on first use
    assert "analyzer.runtime.values" in GRAPH["analyzer.runtime.stream"]  # from .values import ...
    assert "analyzer.backends.parser.codegen" in GRAPH["analyzer"]  # under TYPE_CHECKING


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({**graph, "c": set()}) == []


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(GRAPH) == []


def test_no_module_imports_a_package_it_is_in() -> None:
    upward = [
        f"{module} imports {used}"
        for module, used_ones in GRAPH.items()
        for used in used_ones
        if module.startswith(used + ".")
    ]
    assert upward == []


def test_the_runtime_imports_nothing_of_the_package_outside_it() -> None:
    outside = {
        module: sorted(used for used in used_ones if not used.startswith("analyzer.runtime"))
        for module, used_ones in GRAPH.items()
        if module.startswith("analyzer.runtime")
    }
    assert {module: used for module, used in outside.items() if used} == {}


def test_the_generated_modules_order_follows_the_runtimes_imports() -> None:
    """codegen copies every runtime module, each after the ones it imports at its top level."""
    order = codegen.runtime_modules()
    assert sorted(order) == sorted(m.rpartition(".")[2] for m in MODULES if m.startswith("analyzer.runtime."))
    for position, module in enumerate(order):
        tree = ast.parse((PACKAGE / "runtime" / f"{module}.py").read_text(encoding="utf-8"))
        needed = {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1}
        assert needed <= set(order[:position]), module


def test_a_runtime_import_cycle_stops_generation_naming_the_modules(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "first.py").write_text("from .second import B\nA = 1\n")
    (tmp_path / "second.py").write_text("from .first import A\nB = 2\n")
    (tmp_path / "third.py").write_text("X = 3\n")
    with pytest.raises(CodegenError, match=r"import each other in a cycle: first, second$"):
        codegen.runtime_modules(tmp_path)
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    for path in tmp_path.glob("*.py"):
        (fixed / path.name).write_text(path.read_text())
    (fixed / "second.py").write_text("B = 2\n")
    assert codegen.runtime_modules(fixed) == ("second", "first", "third")


def test_the_readme_names_every_module_where_it_tells_how_the_analysis_works() -> None:
    """README's "How the analysis works" is the map of the package: each module is named there, by its
    file name, so that a reader finds where each job lives (a new module without its line fails)."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("## How the analysis works")
    section = readme[start : readme.index("\n## ", start + 1)]
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    assert modules
    # Modules of one file name in several folders (tools.py, engines.py) are each named once at least.
    alike = Counter(p.name for p in modules)
    unnamed = sorted({p.name for p in modules if len(re.findall(rf"\b{re.escape(p.name)}\b", section)) < alike[p.name]})
    assert not unnamed, f"README's 'How the analysis works' names too few of: {', '.join(unnamed)}"
