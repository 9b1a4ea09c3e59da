"""The tools a parse checks calls against, and the ids of calls the model wrote without one."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .call_forms import IdForm
from .message import ParseError
from .schema import schema_acceptor, schema_problem, validate

_ID_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_ID_TABLE = bytes(ord(_ID_LETTERS[byte % len(_ID_LETTERS)]) for byte in range(256))  # a byte to a letter


class ToolSchemas:
    """The declared tools by name, each with its parameter schema; a schema that cannot check
    arguments is reported once per parse, on the first call to that tool, never raised."""

    def __init__(self, tools: list[dict[str, Any]] | None) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        for tool in tools or []:
            function = tool.get("function", tool) if isinstance(tool, dict) else {}
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str):
                parameters = function.get("parameters") or {"type": "object", "properties": {}}
                self.schemas[name] = parameters if isinstance(parameters, dict) else {}
        self._problems: dict[str, str] = {}
        self._acceptors: dict[str, Callable[[object], bool] | None] = {}
        self.name_tuple = tuple(self.schemas)  # the declared names, for one ``startswith`` test

    def __bool__(self) -> bool:
        return bool(self.schemas)

    def properties(self, name: str) -> dict[str, Any]:
        properties = self.schemas.get(name, {}).get("properties")
        return properties if isinstance(properties, dict) else {}

    def problem(self, name: str) -> str:
        if name not in self._problems:
            self._problems[name] = schema_problem(self.schemas[name])
        return self._problems[name]

    def check(self, name: str, arguments: dict[str, Any], index: int, reported: set[str]) -> list[ParseError]:
        """What is wrong with one call: an undeclared tool, an unknown argument, arguments the schema
        refuses. ``reported``: the tools whose unusable schema this parse has already reported."""
        if name not in self.schemas:
            return [ParseError("unknown_tool", f"call {index}: {name!r} is not a declared tool", call_index=index)]
        problem = self.problem(name)
        if problem:
            if name in reported:
                return []
            reported.add(name)
            return [ParseError("invalid_schema", f"tool {name}: {problem}", call_index=index)]
        problems = []
        properties = self.properties(name)
        for key in arguments:
            if properties and key not in properties:
                problems.append(
                    ParseError(
                        "unknown_argument", f"call {index} to {name}: unknown argument {key!r}", call_index=index
                    )
                )
        if name not in self._acceptors:
            self._acceptors[name] = schema_acceptor(self.schemas[name])
        accept = self._acceptors[name]
        if accept is not None and accept(arguments):
            return problems  # the schema's quick test: validate would find nothing
        for violation in validate(self.schemas[name], arguments):
            if violation.keyword == "additionalProperties" and len(violation.path) == 1:
                continue  # an undeclared argument: reported as an unknown argument above
            where = "/".join(str(step) for step in violation.path) or "arguments"
            problems.append(
                ParseError(
                    "invalid_arguments", f"call {index} to {name}: {where}: {violation.message}", call_index=index
                )
            )
        return problems


def generated_id(form: IdForm, index: int, name: str, text: str) -> str:
    """An id of ``form`` made from the call's own text: distinct calls get distinct ids, and a batch
    parse and a stream agree."""
    digest = hashlib.sha256(f"{index}:{name}:{text}".encode("utf-8", "surrogatepass")).digest()
    letters = digest.translate(_ID_TABLE).decode("ascii")
    while len(letters) < form.generated_length:
        letters += letters
    return form.prefix + letters[: form.generated_length]
