"""A standalone parser module for one template: ``template-analyzer parser TEMPLATE -o FILE.py``.

The generated module is the library's own parser, assembled from its source so it cannot drift from
it: the streaming core (``stream.py``) and every top-level definition it reaches, through ``match.py``,
``values.py``, ``message.py``, ``lower.py`` and ``description.py``, found with ``ast`` from the names
each definition reads when it runs, copied as written, in the order importing the library runs them.
Types named only in annotations (lazy under ``from __future__ import annotations``) come along where
they are standalone too, so every name is defined. The ``from analyzer`` imports go; the
standard-library imports stay; nothing else may be imported, anywhere, or generation fails naming the
definition. Two definitions with one name (or one taken by the generated API) are told apart by a
``__module`` suffix, renamed token by token and checked against the syntax tree. The one piece
swapped out is ``stream._schema_problems``, which uses jsonschema: the module gets a small built-in checker
instead (``_VALIDATOR``, same parameters, same error kinds and wording for the keywords it checks).

The template's output shape is embedded as data (a Python literal of plain values, one dict per node
named by ``__class__``) and rebuilt into the same frozen dataclasses when the module is imported.

Generated API: ``TOOLS``, ``parse(text, tools=None) -> dict`` (``Message.to_dict()``), ``StreamParser``
with ``feed(chunk)``/``finish()`` returning ``Delta.to_dict()`` dicts and ``message``, and a command line
(``python FILE.py [--stream] [--tools FILE] < output``).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import io
import json
import pprint
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.description import FormatDescription
from analyzer.errors import AnalyzerError, InputError
from analyzer.lower import OutputShape, lower

PACKAGE = "analyzer"
DISTRIBUTION = "template-analyzer"

# What the generated module is grown from: the streaming parser and the results it returns.
_ROOTS = (
    ("analyzer.backends.parser.stream", "StreamParser"),
    ("analyzer.backends.parser.message", "Message"),
    ("analyzer.backends.parser.message", "Delta"),
)
# The one place the library leans on a dependency outside the standard library: calls are validated
# with jsonschema. The generated module gets ``_VALIDATOR`` in its place (same signature).
_VALIDATE = ("analyzer.backends.parser.stream", "_schema_problems")


class CodegenError(AnalyzerError):
    """The parser's source cannot be assembled into a standalone module (a non-standard-library import,
    a top-level statement that is not a definition, a name that cannot be renamed safely...)."""


# --------------------------------------------------------------------------- generated source text

# Replaces ``stream._schema_problems``: what the library reports with jsonschema, with no dependency. Checked
# keywords: type (integer is not number, a boolean is neither), enum, const, required, properties,
# items/prefixItems, allOf/anyOf/oneOf, boolean schemas; messages worded as jsonschema words them.
# Other keywords (minimum, pattern, $ref...) are not checked.
_VALIDATOR = '''
def _schema_problems(schema, name, arguments, index):
    """What the tool's JSON schema says about the arguments, without jsonschema: type, enum, const,
    required, properties, items, allOf, anyOf, oneOf; other schema keywords are not checked."""
    problems = []
    found = []
    _schema_errors(schema, arguments, (), found)
    found.sort(key=lambda item: [(isinstance(step, int), step) for step in item[0]])
    for path, text in found:
        where = "/".join(str(step) for step in path) or "arguments"
        problems.append(ParseError("invalid_arguments", f"call {index} to {name}: {where}: {text}",
                                   call_index=index))
    return problems


def _schema_errors(schema, value, path, found):
    """Append (path, message) for each way ``value`` breaks ``schema``, keyword by keyword in schema order."""
    if schema is False:
        found.append((path, f"False schema does not allow {value!r}"))
        return
    if not isinstance(schema, dict):
        return
    for keyword, expected in schema.items():
        if keyword == "type":
            names = [expected] if isinstance(expected, str) else expected if isinstance(expected, list) else []
            if names and not any(_is_json_type(value, type_name) for type_name in names):
                found.append((path, f"{value!r} is not of type {', '.join(repr(type_name) for type_name in names)}"))
        elif keyword == "enum" and isinstance(expected, list):
            if not any(_json_equal(option, value) for option in expected):
                found.append((path, f"{value!r} is not one of {expected!r}"))
        elif keyword == "const":
            if not _json_equal(expected, value):
                found.append((path, f"{expected!r} was expected"))
        elif keyword == "required" and isinstance(expected, list) and isinstance(value, dict):
            for key in expected:
                if key not in value:
                    found.append((path, f"{key!r} is a required property"))
        elif keyword == "properties" and isinstance(expected, dict) and isinstance(value, dict):
            for key, subschema in expected.items():
                if key in value:
                    _schema_errors(subschema, value[key], path + (key,), found)
        elif keyword == "prefixItems" and isinstance(expected, list) and isinstance(value, list):
            for position, (subschema, item) in enumerate(zip(expected, value)):
                _schema_errors(subschema, item, path + (position,), found)
        elif keyword == "items" and isinstance(expected, (dict, bool)) and isinstance(value, list):
            skip = schema.get("prefixItems")
            start = len(skip) if isinstance(skip, list) else 0
            for position in range(start, len(value)):
                _schema_errors(expected, value[position], path + (position,), found)
        elif keyword == "allOf" and isinstance(expected, list):
            for subschema in expected:
                _schema_errors(subschema, value, path, found)
        elif keyword in ("anyOf", "oneOf") and isinstance(expected, list):
            valid = 0
            for subschema in expected:
                errors = []
                _schema_errors(subschema, value, path, errors)
                valid += not errors
            if not valid:
                found.append((path, f"{value!r} is not valid under any of the given schemas"))
            elif keyword == "oneOf" and valid > 1:
                found.append((path, f"{value!r} is valid under more than one of the given schemas"))


def _is_json_type(value, type_name):
    if type_name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "null":
        return value is None
    return True  # a type name this validator does not know is not checked


def _json_equal(one, two):
    """JSON equality: true is not 1, 1 is 1.0, containers compared item by item."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_json_equal(one[key], two[key]) for key in one)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_json_equal(a, b) for a, b in zip(one, two))
    return one == two
'''

# The public face of the generated module. Placeholders (valid names, so the text parses as it is):
# __TEMPLATE__, __TOOLS__, __SHAPE_DATA__, __SHAPE_CLASSES__, __CORE__ (the library's StreamParser).
_WRAPPER = '''
import argparse
import codecs
import json
import sys

__all__ = ["TEMPLATE", "TOOLS", "SHAPE", "StreamParser", "parse"]

TEMPLATE = __TEMPLATE__

# The tools given at generation: calls are validated against them and key/value arguments typed by
# their schemas. Pass ``tools=`` to ``parse``/``StreamParser`` (or ``--tools FILE``) to use others.
TOOLS = __TOOLS__

# The template's output shape: one dict per node, named by "__class__"; lists stand for tuples.
_SHAPE_DATA = __SHAPE_DATA__

_SHAPE_CLASSES = __SHAPE_CLASSES__


def _rebuild(data):
    if isinstance(data, dict):
        node_class = _SHAPE_CLASSES[data["__class__"]]
        return node_class(**{key: _rebuild(value) for key, value in data.items() if key != "__class__"})
    if isinstance(data, list):
        return tuple(_rebuild(item) for item in data)
    return data


SHAPE = _rebuild(_SHAPE_DATA)


class StreamParser:
    """This template's parser, fed model output in chunks of any size. ``feed`` and ``finish`` return
    OpenAI-style deltas (dicts); ``message`` is the message so far, final after ``finish``."""

    def __init__(self, tools=None):
        self._parser = __CORE__(SHAPE, TOOLS if tools is None else tools)

    def feed(self, chunk):
        return [delta.to_dict() for delta in self._parser.feed(chunk)]

    def finish(self):
        return [delta.to_dict() for delta in self._parser.finish()]

    @property
    def message(self):
        return self._parser.message.to_dict()


def parse(text, tools=None):
    """The OpenAI-style assistant message (a dict) in a whole model output."""
    stream = StreamParser(tools)
    stream.feed(text)
    stream.finish()
    return stream.message


def _main(argv=None):
    options = argparse.ArgumentParser(description=f"Parse {TEMPLATE} model output (stdin) into an "
                                                  "OpenAI-style assistant message (JSON).")
    options.add_argument("--stream", action="store_true",
                         help="parse stdin as it arrives and print one delta per line")
    options.add_argument("--tools", metavar="FILE",
                         help="JSON file with the tools list (default: the tools given at generation)")
    args = options.parse_args(argv)
    tools = None
    if args.tools:
        try:
            with open(args.tools, encoding="utf-8") as handle:
                tools = json.load(handle)
        except (OSError, ValueError) as exc:
            print(f"Error: {args.tools}: cannot read tools: {exc}", file=sys.stderr)
            return 2
        if isinstance(tools, dict) and "tools" in tools:
            tools = tools["tools"]
        if not isinstance(tools, list):
            print(f"Error: {args.tools}: tools must be a JSON list of tool objects", file=sys.stderr)
            return 2
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    source = sys.stdin.buffer
    try:
        if not args.stream:
            print(json.dumps(parse(source.read().decode("utf-8"), tools), ensure_ascii=False, indent=2))
            return 0
        decoder = codecs.getincrementaldecoder("utf-8")()
        stream = StreamParser(tools)
        read = getattr(source, "read1", source.read)
        while True:
            data = read(65536)
            for delta in stream.feed(decoder.decode(data, final=not data)):
                print(json.dumps(delta, ensure_ascii=False), flush=True)
            if not data:
                break
        for delta in stream.finish():
            print(json.dumps(delta, ensure_ascii=False), flush=True)
    except UnicodeDecodeError as exc:
        print(f"Error: the input is not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 2
    return 0
'''

_MAIN_GUARD = '''
if __name__ == "__main__":
    sys.exit(_main())
'''


# --------------------------------------------------------------------------- reading the library


@dataclass(frozen=True, slots=True)
class _Import:
    """A standard-library import binding one name: ``import module [as name]`` (``member`` None)
    or ``from module import member [as name]``."""

    module: str
    member: str | None
    name: str

    def text(self) -> str:
        """``import module [as name]``, or ``member [as name]`` for a ``from module import`` line."""
        if self.member is None:
            return f"import {self.module}" + (f" as {self.name}" if self.name != self.module.split(".")[0] else "")
        return self.member + (f" as {self.name}" if self.name != self.member else "")


@dataclass(slots=True)
class _Definition:
    """One top-level statement of a module that binds names (a def, a class, an assignment)."""

    module: str
    position: float
    names: tuple[str, ...]
    text: str
    node: ast.stmt
    loads: frozenset[str]  # global names read when it runs
    annotation_loads: frozenset[str]  # names read only in annotations
    gap: int = 2  # blank lines between it and the statement before it, in the source
    nested_imports: tuple[tuple[int, str], ...] = ()  # (line, module) of imports inside it


@dataclass(slots=True)
class _Module:
    name: str
    display: str  # its path in the source tree, e.g. analyzer/lower.py
    definitions: list[_Definition] = field(default_factory=list)
    defined: dict[str, _Definition] = field(default_factory=dict)
    analyzer_imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, member)
    imports: dict[str, _Import] = field(default_factory=dict)  # standard-library bindings
    foreign: dict[str, str] = field(default_factory=dict)  # name -> module outside the standard library
    module_order: list[str] = field(default_factory=list)  # analyzer modules imported, in order

    def add(self, definition: _Definition) -> None:
        for name in definition.names:
            if name in self.defined or name in self.analyzer_imports or name in self.imports or name in self.foreign:
                raise CodegenError(f"{self.display}: {name!r} is bound twice at the top level")
            self.defined[name] = definition
        self.definitions.append(definition)


def _is_stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _is_analyzer(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _read_module(name: str) -> _Module:
    module = importlib.import_module(name)
    path = Path(module.__file__ or "")
    if path.suffix != ".py":
        raise CodegenError(f"{name}: no Python source to assemble ({path})")
    display = name.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _parse_module(name, display, path.read_text(encoding="utf-8"), package)


def _parse_module(name: str, display: str, source: str, package: str) -> _Module:
    """A module's imports and top-level definitions (a fresh copy: callers may change it)."""
    parsed = _parse_source(name, display, source, package)
    return dataclasses.replace(parsed, definitions=list(parsed.definitions), defined=dict(parsed.defined),
                               analyzer_imports=dict(parsed.analyzer_imports), imports=dict(parsed.imports),
                               foreign=dict(parsed.foreign), module_order=list(parsed.module_order))


@functools.lru_cache(maxsize=64)
def _parse_source(name: str, display: str, source: str, package: str) -> _Module:
    tree = ast.parse(source, filename=display)
    lines = source.splitlines()
    result = _Module(name, display)
    for position, node in enumerate(tree.body):
        where = f"{display}:{node.lineno}"
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring, or a string standing as a comment
        if isinstance(node, ast.ImportFrom):
            target = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else node.module or ""
            if target == "__future__":
                continue  # the generated module starts with ``from __future__ import annotations``
            for alias in node.names:
                if alias.name == "*":
                    raise CodegenError(f"{where}: 'from {target} import *' cannot be assembled")
                bound = alias.asname or alias.name
                if _is_analyzer(target):
                    result.analyzer_imports[bound] = (target, alias.name)
                    if target not in result.module_order:
                        result.module_order.append(target)
                elif _is_stdlib(target):
                    result.imports[bound] = _Import(target, alias.name, bound)
                else:
                    result.foreign[bound] = target
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if _is_analyzer(alias.name):
                    raise CodegenError(f"{where}: 'import {alias.name}' cannot be assembled; import names from it")
                if _is_stdlib(alias.name):
                    result.imports[bound] = _Import(alias.name, None, bound)
                else:
                    result.foreign[bound] = alias.name
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names: tuple[str, ...] = (node.name,)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = tuple(_target_names(targets, where))
            if names == ("__all__",) or node.value is None:
                continue
        else:
            raise CodegenError(f"{where}: a top-level {type(node).__name__} statement cannot be assembled "
                               "(only imports, definitions and assignments)")
        result.add(_definition(name, position, names, node, lines))
    return result


def _target_names(targets: list[ast.expr], where: str) -> list[str]:
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            names += _target_names(list(target.elts), where)
        else:
            raise CodegenError(f"{where}: a top-level assignment to {ast.unparse(target)!r} cannot be assembled")
    return names


def _definition(module: str, position: int, names: tuple[str, ...], node: ast.stmt, lines: list[str]) -> _Definition:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    while first > 1 and lines[first - 2].startswith("#"):
        first -= 1  # the comment lines right above it travel with it
    text = "\n".join(lines[first - 1:node.end_lineno])
    gap = 0
    while first - 2 - gap >= 0 and not lines[first - 2 - gap].strip():
        gap += 1
    names_read = _Names()
    names_read.visit(node)
    nested: list[tuple[int, str]] = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import):
            nested += [(inner.lineno, alias.name) for alias in inner.names]
        elif isinstance(inner, ast.ImportFrom):
            nested.append((inner.lineno, "." if inner.level else inner.module or ""))
    return _Definition(module, position, names, text, node, frozenset(names_read.loads),
                       frozenset(names_read.annotations), gap, tuple(nested))


class _Names(ast.NodeVisitor):
    """The global names a top-level statement reads when it runs. Names bound in a function (or a
    class body, or a comprehension) are local there; annotations are collected apart, since under
    ``from __future__ import annotations`` they are never evaluated. Where this is unsure it errs
    towards a global read, which can only add a definition, never miss one."""

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.annotations: set[str] = set()
        self._scopes: list[tuple[str, set[str]]] = []  # (kind, names), innermost last

    def _read(self, name: str) -> None:
        for depth, (kind, names) in enumerate(reversed(self._scopes)):
            if kind == "class" and depth:
                continue  # a class body's names are not visible in its methods
            if name in names:
                return
        self.loads.add(name)

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None:
            self.annotations.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        args = node.args
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        parameters = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        for arg in parameters:
            self._annotation(arg.annotation)
        self._annotation(node.returns)
        self._scopes.append(("function", {a.arg for a in parameters} | _bindings(node.body)))
        for statement in node.body:
            self.visit(statement)
        self._scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        args = node.args
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        parameters = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        self._scopes.append(("function", {a.arg for a in parameters}))
        self.visit(node.body)
        self._scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(expression)
        self._scopes.append(("class", _bindings(node.body)))
        for statement in node.body:
            self.visit(statement)
        self._scopes.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        self.visit(node.generators[0].iter)  # evaluated in the enclosing scope
        targets = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self._scopes.append(("function", targets))
        for k, generator in enumerate(node.generators):
            if k:
                self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self._scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _bindings(body: list[ast.stmt]) -> set[str]:
    """Names a scope binds (its locals), not looking into nested scopes."""
    names: set[str] = set()
    declared_global: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names - declared_global


# --------------------------------------------------------------------------- assembling


Key = tuple[str, str]  # (module, name) of a top-level definition


class _Library:
    """The library's modules as read from their source, with ``_schema_problems`` replaced."""

    def __init__(self) -> None:
        self.modules: dict[str, _Module] = {}

    def module(self, name: str) -> _Module:
        if name not in self.modules:
            module = _read_module(name)
            if name == _VALIDATE[0]:
                _replace(module, _VALIDATE[1], _VALIDATOR)
            self.modules[name] = module
        return self.modules[name]

    def resolve(self, module_name: str, name: str) -> tuple[str, Any]:
        """What ``name`` is in a module: ("definition", key), ("import", _Import), ("foreign", module)
        or ("unbound", None) (a builtin, or a name the library never binds)."""
        seen: set[Key] = set()
        while True:
            module = self.module(module_name)
            if name in module.defined:
                return "definition", (module_name, name)
            if name in module.analyzer_imports:
                if (module_name, name) in seen:
                    raise CodegenError(f"{module.display}: {name!r} is imported in a cycle")
                seen.add((module_name, name))
                module_name, name = module.analyzer_imports[name]
                continue
            if name in module.imports:
                return "import", module.imports[name]
            if name in module.foreign:
                return "foreign", module.foreign[name]
            return "unbound", None

    def definition(self, key: Key) -> _Definition:
        found = self.module(key[0]).defined.get(key[1])
        if found is None:
            raise CodegenError(f"{self.module(key[0]).display}: no top-level definition of {key[1]!r}")
        return found

    def execution_order(self, roots: list[str]) -> list[str]:
        """Modules in the order importing the roots runs them: each after the modules it imports."""
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str) -> None:
            if name in order or name in visiting:
                return
            visiting.add(name)
            for imported in self.module(name).module_order:
                visit(imported)
            visiting.discard(name)
            order.append(name)

        for root in roots:
            visit(root)
        return order


def _replace(module: _Module, name: str, source: str) -> None:
    """Swap a module's top-level function for source text of ours (same parameters)."""
    original = module.defined.get(name)
    if original is None or not isinstance(original.node, ast.FunctionDef):
        raise CodegenError(f"{module.display}: no function {name!r} to replace with the built-in validator; "
                           "update analyzer/backends/parser/codegen.py")
    replacement = _parse_module(module.name, module.display, source, module.name.rpartition(".")[0])
    new = replacement.defined.get(name)
    if new is None or not isinstance(new.node, ast.FunctionDef) or replacement.imports or replacement.foreign:
        raise CodegenError(f"the built-in replacement of {name!r} must be a function with no imports")
    if _parameters(new.node) != _parameters(original.node):
        raise CodegenError(f"{module.display}: {name}{_parameters(original.node)} changed its parameters; "
                           f"the built-in replacement takes {_parameters(new.node)}: update codegen.py")
    del module.defined[name]
    module.definitions.remove(original)
    for offset, definition in enumerate(replacement.definitions):
        # In the replaced function's place, in their own order.
        module.add(dataclasses.replace(definition, position=original.position + offset / len(replacement.definitions),
                                       gap=original.gap if offset == 0 else definition.gap))
    module.definitions.sort(key=lambda d: d.position)


def _parameters(node: ast.FunctionDef) -> tuple[str, ...]:
    args = node.args
    return tuple(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)


def _closure(library: _Library, roots: list[Key], included: dict[Key, _Definition] | None = None,
             imports: dict[str, _Import] | None = None) -> tuple[dict[Key, _Definition], dict[str, _Import]]:
    """Every definition the roots reach when they run, and the standard-library imports they name
    (added to copies of ``included`` and ``imports``)."""
    included = dict(included or {})
    imports = dict(imports or {})
    work = list(reversed(roots))
    while work:
        key = work.pop()
        if key in included:
            continue
        definition = library.definition(key)
        for name in definition.names:
            included[(definition.module, name)] = definition
        display = library.module(definition.module).display
        _check_nested_imports(definition, display)
        for name in sorted(definition.loads):
            kind, value = library.resolve(definition.module, name)
            if kind == "definition":
                work.append(value)
            elif kind == "import":
                _add_import(imports, value)
            elif kind == "foreign":
                raise CodegenError(f"{display}: {definition.names[0]} uses {name!r} from {value!r}, which is "
                                   "not in the standard library: a generated parser cannot import it")
        for name in sorted(definition.annotation_loads):
            kind, value = library.resolve(definition.module, name)
            if kind == "import":
                _add_import(imports, value)  # dataclasses read ClassVar (and InitVar) by name
    return included, imports


def _with_annotation_types(library: _Library, included: dict[Key, _Definition],
                           imports: dict[str, _Import]) -> tuple[dict[Key, _Definition], dict[str, _Import]]:
    """Add the definitions annotations name (type aliases such as ``Literal``, classes), so every name
    in the module is defined; one that cannot be made standalone is left out (annotations are never
    evaluated, so nothing breaks)."""
    tried: set[Key] = set()
    while True:
        wanted: set[Key] = set()
        for definition in included.values():
            for name in definition.annotation_loads:
                kind, value = library.resolve(definition.module, name)
                if kind == "definition" and value not in included and value not in tried:
                    wanted.add(value)
        if not wanted:
            return included, imports
        for key in sorted(wanted):
            tried.add(key)
            try:
                included, imports = _closure(library, [key], included, imports)
            except CodegenError:
                pass


def _check_nested_imports(definition: _Definition, display: str) -> None:
    for lineno, module in definition.nested_imports:
        if module == "." or not _is_stdlib(module):
            raise CodegenError(f"{display}:{lineno}: {definition.names[0]} imports {module!r} inside "
                               "a function: a generated parser can only import the standard library")


def _add_import(imports: dict[str, _Import], found: _Import) -> None:
    known = imports.setdefault(found.name, found)
    if known != found:
        raise CodegenError(f"{found.name!r} is imported from two places ({known.module} and {found.module})")


def _import_lines(imports: dict[str, _Import]) -> list[str]:
    plain = sorted({i.text() for i in imports.values() if i.member is None})
    members: dict[str, list[str]] = {}
    for found in imports.values():
        if found.member is not None:
            members.setdefault(found.module, []).append(found.text())
    return ["from __future__ import annotations", ""] + plain + [
        f"from {module} import {', '.join(sorted(names))}" for module, names in sorted(members.items())]


def _final_names(ordered: list[_Definition], taken: set[str]) -> dict[Key, str]:
    """The name each definition has in the generated module: its own, unless another binding (the
    generated API, an import, a same-named definition of another module) has it already. Modules
    nearer the parser choose first, so the parser's own text changes least."""
    final: dict[Key, str] = {}
    for definition in reversed(ordered):
        short = definition.module.rpartition(".")[2]
        for name in definition.names:
            chosen = name if name not in taken else f"{name}__{short}"
            suffix = 2
            while chosen in taken:
                chosen, suffix = f"{name}__{short}{suffix}", suffix + 1
            taken.add(chosen)
            final[(definition.module, name)] = chosen
    return final


def _renames_for(library: _Library, module_name: str, names: set[str], final: dict[Key, str]) -> dict[str, str]:
    """In one module's text: which names to rewrite, so each reads the definition it read in the library."""
    renames: dict[str, str] = {}
    for name in sorted(names):
        kind, value = library.resolve(module_name, name)
        if kind == "definition" and value in final and final[value] != name:
            renames[name] = final[value]
    return renames


def _rename(text: str, renames: dict[str, str], where: str) -> str:
    """Rewrite names in source text, token by token (never inside strings or comments, never after a
    dot); refused unless the syntax tree changes exactly as renaming those variables would."""
    if not any(name in text for name in renames):
        return text
    return _renamed(text, tuple(sorted(renames.items())), where)


@functools.lru_cache(maxsize=256)
def _renamed(text: str, rename_items: tuple[tuple[str, str], ...], where: str) -> str:
    renames = dict(rename_items)
    lines = text.splitlines(keepends=True)
    edits = []
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and token.string in renames and not (
                previous is not None and previous.type == tokenize.OP and previous.string == "."):
            edits.append(token)
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token
    for token in reversed(edits):
        (row, start), (_, end) = token.start, token.end
        line = lines[row - 1]
        lines[row - 1] = line[:start] + renames[token.string] + line[end:]
    renamed = "".join(lines)

    class Expected(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = renames.get(node.id, node.id)
            return node

        def _definition(self, node: Any) -> Any:
            node.name = renames.get(node.name, node.name)
            self.generic_visit(node)
            return node

        visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    expected = Expected().visit(ast.parse(text))
    if ast.dump(expected) != ast.dump(ast.parse(renamed)):
        raise CodegenError(f"{where}: cannot rename {sorted(renames)} safely (a parameter, keyword or f-string "
                           "uses the name)")
    return renamed


# --------------------------------------------------------------------------- the shape as data


def _shape_data(shape: OutputShape) -> tuple[Any, list[Key]]:
    """The shape as plain values (nodes as dicts named by ``__class__``, tuples as lists), and the
    node classes it uses."""
    classes: dict[Key, type] = {}

    def encode(node: Any) -> Any:
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            cls = type(node)
            module = sys.modules.get(cls.__module__)
            if not _is_analyzer(cls.__module__) or getattr(module, cls.__name__, None) is not cls:
                raise CodegenError(f"the output shape holds a {cls.__qualname__}, not a top-level analyzer class")
            classes[(cls.__module__, cls.__name__)] = cls
            out: dict[str, Any] = {"__class__": cls.__name__}
            for f in dataclasses.fields(node):
                if not f.init:
                    raise CodegenError(f"{cls.__name__}.{f.name} cannot be rebuilt (init=False)")
                out[f.name] = encode(getattr(node, f.name))
            return out
        if isinstance(node, tuple):
            return [encode(item) for item in node]
        if node is None or isinstance(node, (str, bool, int)):
            return node
        raise CodegenError(f"the output shape holds a {type(node).__name__}, which cannot be embedded")

    data = encode(shape)
    by_name = {cls.__name__: cls for cls in classes.values()}
    if len(by_name) != len(classes):
        raise CodegenError("two node classes of the output shape have the same name")

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            return by_name[value["__class__"]](**{k: decode(v) for k, v in value.items() if k != "__class__"})
        if isinstance(value, list):
            return tuple(decode(item) for item in value)
        return value

    if decode(data) != shape:
        raise CodegenError("the output shape does not survive its own serialisation")
    return data, sorted(classes)


def _literal(value: Any) -> str:
    """A Python literal of plain values, in ASCII (other characters escaped inside their strings), so
    the module reads the same whatever encoding a file is saved or read in."""
    text = pprint.pformat(value, width=96, sort_dicts=False).encode("ascii", "backslashreplace").decode("ascii")
    if ast.literal_eval(text) != value:
        raise CodegenError("a value does not survive as a Python literal")
    return text


def _tools_data(tools: list | None) -> list:
    try:
        data = json.loads(json.dumps(tools or [], allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InputError(f"tools must be JSON values: {exc}") from None
    if not isinstance(data, list):
        raise InputError("tools must be a JSON list of tool objects")
    return data


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _docstring(template: str, version: str, sources: list[str]) -> str:
    name = ascii(template).replace("\\", "\\\\").replace('"', '\\"')
    listed = textwrap.fill(", ".join(sources), width=100, break_on_hyphens=False)
    return f'''"""Tool-call parser for the chat template {name}, generated by template-analyzer {version}.

Generated file: do not edit, generate it again (template-analyzer parser TEMPLATE -o FILE.py).
Standard library only (Python 3.11+). The code is template-analyzer's own parser, assembled from
{listed},
with a built-in call validator in place of jsonschema, and this template's output shape as data.

    message = parse(text)                  # the OpenAI-style assistant message, a dict
    stream = StreamParser()                # or chunk by chunk:
    deltas = stream.feed(chunk)            # OpenAI-style deltas (dicts), then
    deltas = stream.finish()               # and stream.message, the message

    python THIS_FILE.py < output.txt             # prints the message as JSON
    python THIS_FILE.py --stream < output.txt    # prints one delta per line
"""'''


# --------------------------------------------------------------------------- entry point


def generate_parser_module(description: FormatDescription | OutputShape, tools: list | None = None, *,
                           thinking: bool | None = None) -> str:
    """The source of a standalone Python module (standard library only) that parses this template's
    model output exactly as ``Parser(description, tools, thinking=thinking)`` does, batch and streaming.
    ``tools`` become the module's ``TOOLS`` (the default tools its parser validates against).
    The same arguments always give the same text."""
    shape = description if isinstance(description, OutputShape) else lower(description, thinking=thinking)
    library = _Library()
    shape_data, shape_classes = _shape_data(shape)
    roots = list(_ROOTS) + shape_classes
    included, imports = _with_annotation_types(library, *_closure(library, roots))

    wrapper = _parse_module("<generated>", "<generated>", _WRAPPER, "")
    for found in wrapper.imports.values():
        _add_import(imports, found)
    if wrapper.foreign or wrapper.analyzer_imports:
        raise CodegenError("the generated API may only import the standard library")

    order = library.execution_order(list(dict.fromkeys(key[0] for key in roots)))
    rank = {name: k for k, name in enumerate(order)}
    ordered = sorted({id(d): d for d in included.values()}.values(), key=lambda d: (rank[d.module], d.position))
    final = _final_names(ordered, set(wrapper.defined) | set(imports) | set(dir(builtins)))

    sections: list[str] = []
    sources: list[str] = []
    for module_name in order:
        definitions = [d for d in ordered if d.module == module_name]
        if not definitions:
            continue
        module = library.module(module_name)
        sources.append(module.display)
        names = set().union(*(d.loads | d.annotation_loads | set(d.names) for d in definitions))
        renames = _renames_for(library, module_name, names, final)
        text = ""
        for k, definition in enumerate(definitions):
            if k:
                # Neighbours in the source keep the blank lines between them; others get two.
                adjacent = definition.position == definitions[k - 1].position + 1
                text += "\n" * (1 + (definition.gap if adjacent else 2))
            text += _rename(definition.text, renames, f"{module.display}:{definition.node.lineno}")
        sections.append(f"# {'-' * 75} {module.display}\n\n\n" + text)

    classes = "{\n" + "".join(f"    {name!r}: {name},\n" for name in sorted(final[key] for key in shape_classes)) + "}"
    filled = {
        "__TEMPLATE__": ascii(shape.template),
        "__TOOLS__": _literal(_tools_data(tools)),
        "__SHAPE_DATA__": _literal(_rename_classes(shape_data, final, shape_classes)),
        "__SHAPE_CLASSES__": classes,
        "__CORE__": final[_ROOTS[0]],
    }
    body = _wrapper_body()

    def fill(found: re.Match[str]) -> str:
        # Continuation lines line up under the first (the text put in is brackets and quoted strings).
        column = found.start() - body.rfind("\n", 0, found.start()) - 1
        return filled[found.group()].replace("\n", "\n" + " " * column)

    # One pass, so no placeholder is looked for inside the text put in (a tool description may say anything).
    api = re.sub("|".join(filled), fill, body)
    parts = [
        _docstring(shape.template, _version(), sources),
        "\n".join(_import_lines(imports)),
        *sections,
        f"# {'-' * 75} this template\n\n" + api,
        _MAIN_GUARD.strip("\n"),
    ]
    source = "\n\n\n".join(parts) + "\n"
    try:
        compile(source, f"<parser for {shape.template}>", "exec")
    except SyntaxError as exc:  # pragma: no cover - a bug here, not in the input
        raise CodegenError(f"the generated module does not compile: {exc}") from None
    return source


def _wrapper_body() -> str:
    """The generated API without its imports (they join the module's own, at the top)."""
    tree = ast.parse(_WRAPPER)
    last = max(node.end_lineno or 0 for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    return "\n".join(_WRAPPER.splitlines()[last:]).strip("\n")


def _rename_classes(data: Any, final: dict[Key, str], classes: list[Key]) -> Any:
    """Shape data with each node named by its class's name in the generated module."""
    names = {key[1]: final[key] for key in classes}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (names[v] if k == "__class__" else walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(data)


__all__ = ["generate_parser_module", "CodegenError"]
