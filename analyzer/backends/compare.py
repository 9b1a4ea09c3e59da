"""Several templates side by side, and what changed between two versions of one.

``compare_rows`` gives one row per template (format, markers, tool cost, result role, id handling,
requirements, engine agreement) from its description and audit; ``render_table`` lays them out.
``diff_descriptions`` walks two descriptions and lists what changed in behaviour, field by field:
markers, requirements, capabilities; not a text diff of the template sources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analyzer.backends.audit import AuditReport
from analyzer.backends.summary import visible
from analyzer.description import CallIds, Calls, FormatDescription, Results, pattern_text, to_dict

COLUMNS = ("template", "format", "call", "section", "tool cost", "results", "ids", "refuses", "engines")


@dataclass(frozen=True, slots=True)
class Row:
    cells: tuple[str, ...]


def compare_row(description: FormatDescription, report: AuditReport) -> Row:
    calls = description.calls
    call = visible(pattern_text(calls.call)) if isinstance(calls, Calls) else "-"
    section = "-"
    if isinstance(calls, Calls) and (calls.section_open.strip() or calls.section_close.strip()):
        section = visible(f"{calls.section_open.strip()} … {calls.section_close.strip()}")
    cost = report.tool_section
    tool_cost = (
        f"{cost.fixed_chars}+{cost.per_tool_chars}/tool"
        if cost.fixed_chars is not None and cost.per_tool_chars is not None
        else "-"
    )
    results = description.results
    result_text = f"{results.rendered_as}, by {results.linked_by}" if isinstance(results, Results) else "-"
    ids = "-"
    if isinstance(calls, Calls) and isinstance(calls.ids, CallIds):
        ids = f"{calls.ids.written}; {'/'.join(calls.ids.accepted) or 'none accepted'}"
    caps = description.capabilities
    refused = [
        name.replace("_", " ")
        for name in ("system_role", "parallel_calls", "object_arguments", "string_arguments", "content_none")
        if getattr(caps, name).status in ("refused", "error", "dropped")
    ]
    engines = "differ" if any(f.code in ("engines-differ", "engine-raises") for f in report.findings) else "agree"
    return Row(
        (
            description.template.name,
            description.format,
            call,
            section,
            tool_cost,
            result_text,
            ids,
            ", ".join(refused) or "-",
            engines,
        )
    )


def render_table(rows: list[Row], style: Callable[..., str] = lambda text, **_: text, width: int = 48) -> str:
    """A plain-text table; long cells are cut to ``width`` characters."""
    cells = [COLUMNS] + [tuple(_cut(c, width) for c in row.cells) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    lines = []
    for n, row in enumerate(cells):
        text = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        lines.append(style(text, bold=True) if n == 0 else text)
    return "\n".join(lines)


def rows_to_dict(rows: list[Row]) -> dict[str, Any]:
    """The table as JSON: ``{"columns": [...], "templates": [{column: cell}]}``, cells uncut; a column's
    key is its heading with spaces as underscores (``tool_cost``)."""
    keys = [column.replace(" ", "_") for column in COLUMNS]
    return {"columns": keys, "templates": [dict(zip(keys, row.cells, strict=True)) for row in rows]}


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    old: Any
    new: Any


# Fields that identify a template rather than describe how it behaves.
_IDENTITY = {"template"}


def diff_descriptions(old: FormatDescription, new: FormatDescription) -> list[Change]:
    """What changed in behaviour between two descriptions: one change per differing field. Messages
    that name the template (a render error) name it as ``<template>``, so that the same source under
    two file names shows no change."""
    changes: list[Change] = []
    _walk(_anonymous(to_dict(old), old.template.name), _anonymous(to_dict(new), new.template.name), "", changes)
    return [c for c in changes if c.path.split(".")[0] not in _IDENTITY]


def _anonymous(value: Any, name: str) -> Any:
    """``value`` with the template's name, where a message starts with it (``name: ...``), as ``<template>``."""
    if isinstance(value, str):
        return re.sub(rf"(?<![\w.-]){re.escape(name)}(?=: )", "<template>", value) if name else value
    if isinstance(value, dict):
        return {key: _anonymous(item, name) for key, item in value.items()}
    if isinstance(value, list):
        return [_anonymous(item, name) for item in value]
    return value


def _walk(old: Any, new: Any, path: str, changes: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and old.get("kind") == new.get("kind"):
        if old.get("kind") in ("text", "field"):
            if old != new:
                changes.append(Change(path, old, new))
            return
        for key in sorted(set(old) | set(new)):
            if key == "kind":
                continue
            _walk(old.get(key), new.get(key), f"{path}.{key}" if path else key, changes)
        return
    if isinstance(old, list) and isinstance(new, list) and _is_pattern(old) and _is_pattern(new):
        if old != new:
            changes.append(Change(path, _pattern(old), _pattern(new)))
        return
    if old != new:
        changes.append(Change(path, old, new))


def _is_pattern(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and i.get("kind") in ("text", "field") for i in items)


def _pattern(items: list[Any]) -> str:
    return "".join(i["text"] if i["kind"] == "text" else "{" + i["name"] + "}" for i in items)


def changes_to_dict(old: str, new: str, changes: list[Change]) -> dict[str, Any]:
    """``{"old": name, "new": name, "changes": [{"path", "old", "new"}]}``, values as in the description's JSON."""
    return {"old": old, "new": new, "changes": [{"path": c.path, "old": c.old, "new": c.new} for c in changes]}


# A changed value longer than this is cut in the text output; --json has it whole.
SHOW_CHARS = 100


def render_changes(changes: list[Change]) -> str:
    if not changes:
        return "no change in behaviour"
    return "\n".join(f"{c.path}: {_show(c.old)} -> {_show(c.new)}" for c in changes)


def _show(value: Any) -> str:
    if isinstance(value, dict) and value.get("kind") == "unknown":
        text = f"unknown ({value.get('reason')})"
    elif isinstance(value, str):
        text = "'" + visible(value) + "'"
    elif value is None or isinstance(value, (bool, int, float)):
        text = json.dumps(value)
    else:  # a part of the description as its JSON, not a Python repr
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > SHOW_CHARS:
        text = text[: SHOW_CHARS - 1] + f"… ({len(text)} characters; --json shows all)"
    return text
