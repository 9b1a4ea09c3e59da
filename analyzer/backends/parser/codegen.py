"""A standalone parser module for one template: ``template-analyzer parser TEMPLATE -o FILE.py``.

The module is the parser's runtime (``analyzer/runtime``) copied as written, module after module,
followed by the template's output shape and the default tools as JSON data: lark's standalone way,
runtime plus data. The runtime imports only the standard library and its own modules, through
single-line relative imports; those lines and the ``from __future__`` ones go (one stays on top),
nothing else changes. Generation fails, naming the file, if a runtime module imports anything else
or two of them define the same top-level name, since one namespace holds them all.

Generated API: ``SHAPE``, ``TOOLS``, ``THINKING``; ``parse(text, tools=None, *, thinking=THINKING,
strict=False, continuing=None) -> dict`` (the message); ``StreamParser(tools=None, *, thinking=THINKING,
strict=False, continuing=None)`` with ``feed(chunk)`` and ``finish()`` returning delta dicts and
``message``; and a command line (``python FILE.py [--stream | --jsonl] [--tools FILE] [--thinking |
--no-thinking] [--strict] [--continue FILE] < output``) that prints what ``template-analyzer parse`` prints.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path
from typing import Any

from analyzer.description import FormatDescription
from analyzer.errors import CodegenError, InputError
from analyzer.lower import lower
from analyzer.runtime.shape import OutputShape, shape_to_dict
from analyzer.version import __version__

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


@functools.cache
def runtime_modules(folder: Path = RUNTIME) -> tuple[str, ...]:
    """The runtime's modules (every ``*.py`` of ``folder`` but ``__init__``) in an order in which each
    comes after the ones its top-level statements import, by name where the imports leave a choice: one
    namespace holds them all, so a name must be defined before a later module's top level uses it. Read
    when a module is first generated (parsing the runtime takes about 0.1 s), not when this one is imported."""
    needs = {path.stem: _relative_imports(path) for path in sorted(folder.glob("*.py")) if path.stem != "__init__"}
    order: list[str] = []
    while len(order) < len(needs):
        ready = [module for module, used in needs.items() if module not in order and used <= set(order)]
        if not ready:
            left = sorted(set(needs) - set(order))
            raise CodegenError(f"{folder}: these runtime modules import each other in a cycle: {', '.join(left)}")
        order.append(ready[0])
    return tuple(order)


def _relative_imports(path: Path) -> set[str]:
    """The runtime modules ``path``'s top-level statements import (``from .x import ...``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


_API = '''

SHAPE = shape_from_dict(json.loads({shape}))
TOOLS = json.loads({tools})
THINKING = {thinking}


class StreamParser:
    """This template's parser, fed model output in chunks of any size. ``feed`` and ``finish`` return
    OpenAI-style deltas (dicts); ``message`` is the message so far, final after ``finish``.
    ``continuing``: the partial assistant message the prompt ends inside, which the output continues
    (``message`` is then the whole message; the deltas carry only the output's text)."""

    def __init__(self, tools=None, *, thinking=THINKING, strict=False, inline_reasoning=False, continuing=None):
        tools = TOOLS if tools is None else tools
        self._stream = Parser(
            SHAPE, tools, thinking=thinking, strict=strict, inline_reasoning=inline_reasoning, continuing=continuing
        ).stream()

    def feed(self, chunk):
        return [delta.to_dict() for delta in self._stream.feed(chunk)]

    def finish(self):
        return [delta.to_dict() for delta in self._stream.finish()]

    @property
    def message(self):
        return self._stream.message.to_dict()


def parse(text, tools=None, *, thinking=THINKING, strict=False, inline_reasoning=False, continuing=None):
    """The OpenAI-style assistant message (a dict) in a whole model output; ``strict``: read only what
    the template writes (no tolerance for what models write otherwise); ``inline_reasoning``: leave
    reasoning in content, markers included; ``continuing``: the partial assistant message the prompt
    ends inside, which the output continues (the whole message is returned)."""
    tools = TOOLS if tools is None else tools
    parser = Parser(
        SHAPE, tools, thinking=thinking, strict=strict, inline_reasoning=inline_reasoning, continuing=continuing
    )
    return parser.parse(text).to_dict()


if __name__ == "__main__":
    sys.exit(main(SHAPE, TOOLS, THINKING))
'''


def runtime_source() -> str:
    """The runtime's modules one after another, as written, less their relative and future imports."""
    pieces: list[str] = []
    defined: dict[str, str] = {}
    for module in runtime_modules():
        path = RUNTIME / f"{module}.py"
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        dropped: set[int] = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__"):
                # Every line of it, as ruff format splits a long import over several.
                dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    if name.split(".")[0] not in sys.stdlib_module_names:
                        raise CodegenError(f"{path}: imports {name!r}, which is not in the standard library")
            for name in _defined_names(node):
                if defined.get(name, path.name) != path.name:
                    raise CodegenError(
                        f"{path}: {name!r} is also defined in {defined[name]}: one namespace holds every runtime module"
                    )
                defined[name] = path.name
        lines = text.splitlines()
        kept = [line for number, line in enumerate(lines, 1) if number not in dropped]
        pieces.append(f"# {'-' * 70} runtime/{module}.py\n" + "\n".join(kept).strip("\n"))
    return "\n\n\n".join(pieces)


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, (ast.AnnAssign, ast.AugAssign))
        else []
    )
    return [name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)]


def generate_parser_module(
    description: FormatDescription | OutputShape,
    tools: list[dict[str, Any]] | None = None,
    *,
    thinking: bool | None = None,
) -> str:
    """The module's source. ``tools``: its default tools; ``thinking``: whether its prompts have thinking
    switched on by default (None: the template's own)."""
    shape = description if isinstance(description, OutputShape) else lower(description)
    try:
        tools_text = json.dumps(tools or [], allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"tools cannot be written as JSON: {exc}") from None
    version = __version__
    header = (
        f'"""Parser for {shape.template} model output, generated by template-analyzer {version}.\n\n'
        "Standard library only: the parser's runtime (analyzer/runtime, copied as written) and this\n"
        "template's output shape as data. Regenerate it rather than edit it.\n\n"
        "    import this_module\n"
        "    this_module.parse(text)                  # an OpenAI-style message, as a dict\n"
        "    stream = this_module.StreamParser()      # or chunk by chunk: feed(chunk), finish()\n"
        "    python this_module.py [--stream] < output\n"
        '"""\n\nfrom __future__ import annotations\n\n'
    )
    # ASCII JSON in a Python literal: the file reads the same in any encoding.
    api = _API.format(
        shape=repr(json.dumps(shape_to_dict(shape), sort_keys=True)), tools=repr(tools_text), thinking=repr(thinking)
    )
    return header + runtime_source() + "\n" + api


__all__ = ["generate_parser_module", "runtime_modules", "runtime_source"]
