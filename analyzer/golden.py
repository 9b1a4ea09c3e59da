"""The golden files: the reviewed analysis of every corpus template, and checking or rewriting them.

Each template has two: ``<name>.json``, its format description, and ``audit/<name>.json``, its audit
(as ``audit --json`` prints it) beside its row of the ``compare`` table (as ``compare --json`` gives
it), so that a change in what the audit or the comparison says shows in a reviewed diff as a change in
the analysis does. The files live in ``golden/`` of a source checkout. An installed copy of the package has none beside
it, and rewriting them there would write into site-packages, so outside a checkout the folder must be
named. An empty corpus folder or a missing golden folder is an error, never "0 of 0" or "70 of 70
differ".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.analysis import analyze, inspect
from analyzer.backends.audit import audit
from analyzer.backends.compare import compare_row, rows_to_dict
from analyzer.corpus import corpus_templates
from analyzer.description import FormatDescription, dumps
from analyzer.errors import InputError
from analyzer.sources import load_template
from analyzer.template import Template

_CHECKOUT = Path(__file__).resolve().parent.parent
CHECKOUT_GOLDEN = _CHECKOUT / "golden"
# The audit files' folder inside the golden folder: beside, not among, the descriptions (*.json).
AUDIT_FOLDER = "audit"


def default_golden_dir() -> Path:
    """``golden/`` of the source checkout this package runs from; an error for an installed copy."""
    if not (_CHECKOUT / "pyproject.toml").is_file():
        raise InputError("this is an installed copy of template-analyzer, with no golden/ beside it: give --golden-dir")
    return CHECKOUT_GOLDEN


@dataclass(frozen=True, slots=True)
class GoldenResult:
    golden_dir: Path
    checked: tuple[str, ...]
    changed: tuple[str, ...]
    updated: bool

    def summary(self) -> str:
        verb = "rewrote" if self.updated else "differ"
        names = ": " + ", ".join(self.changed) if self.changed else ""
        return f"{len(self.changed)} of {len(self.checked)} golden files {verb}{names}"

    def to_dict(self) -> dict[str, Any]:
        """``{"golden_dir", "checked": [names], "changed": [names], "updated": bool}``."""
        return {
            "golden_dir": str(self.golden_dir),
            "checked": list(self.checked),
            "changed": list(self.changed),
            "updated": self.updated,
        }


def corpus_paths(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    paths = corpus_templates(folder)
    if not paths:
        raise InputError(f"{folder}: no corpus templates (*.jinja) in this folder")
    return paths


def check_golden_dir(golden_dir: Path, update: bool) -> None:
    if update:
        if golden_dir.exists() and not golden_dir.is_dir():
            raise InputError(f"{golden_dir}: not a folder")
        return
    if not golden_dir.is_dir():
        raise InputError(f"{golden_dir}: no such folder (--update writes it)")
    if not any(golden_dir.glob("*.json")):
        raise InputError(f"{golden_dir}: no golden files (*.json) in this folder (--update writes them)")


def golden_texts(path: Path) -> dict[str, str]:
    """The golden files of one corpus template, by their path inside the golden folder."""
    template = load_template(str(path))
    description = analyze(template)
    return {
        f"{path.stem}.json": dumps(description),
        f"{AUDIT_FOLDER}/{path.stem}.json": audit_text(template, description),
    }


def audit_text(template: Template, description: FormatDescription) -> str:
    """``{"audit": the audit as ``audit --json`` prints it, "compare": the template's row of ``compare --json``}``."""
    report = audit(description, inspect(template, description))
    row = rows_to_dict([compare_row(description, report)])["templates"][0]
    return json.dumps({"audit": report.to_dict(), "compare": row}, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def run_golden(
    paths: list[Path], golden_dir: Path, *, update: bool, progress: Callable[[Iterable[Path]], Iterable[Path]] = iter
) -> GoldenResult:
    """Analyse and audit each corpus template and compare with (or, with ``update``, rewrite) its golden
    files; a template whose description or audit differs is changed."""
    check_golden_dir(golden_dir, update)
    changed = []
    for path in progress(paths):
        stale = {
            name: text
            for name, text in golden_texts(path).items()
            if not (golden_dir / name).exists() or (golden_dir / name).read_text(encoding="utf-8") != text
        }
        if stale:
            changed.append(path.stem)
        if update:
            for name, text in stale.items():
                target = golden_dir / name
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                except OSError as exc:
                    raise InputError(f"{target}: cannot write the golden file: {exc.strerror or exc}") from None
    return GoldenResult(golden_dir, tuple(p.stem for p in paths), tuple(changed), update)
