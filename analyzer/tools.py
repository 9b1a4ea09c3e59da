"""The tools a client declares, read once for every backend that needs them (grammars, the prompted
format): the OpenAI form (``{"type": "function", "function": {...}}``) or bare ``{name, parameters}``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from analyzer.errors import InputError


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # the JSON schema of the arguments; {} when the tool gives none

    @property
    def properties(self) -> dict[str, Any]:
        found = self.parameters.get("properties")
        return found if isinstance(found, dict) else {}

    @property
    def arguments_schema(self) -> dict[str, Any]:
        """A call's arguments are a JSON object, also where the tool's schema leaves the type out."""
        kind = self.parameters.get("type", "object")
        return {**self.parameters, "type": "object"} if kind == "object" else {"type": "object"}


def declared_tools(tools: list[dict[str, Any]]) -> tuple[Tool, ...]:
    """Every declared tool; a tool without a name or with parameters that are not a schema object, or
    no tool at all, is the caller's mistake."""
    found = []
    for number, tool in enumerate(tools, 1):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise InputError(f"tool {number} has no name: {json.dumps(tool)[:80]}")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise InputError(f"tool {name!r}: parameters must be a JSON schema object")
        description = function.get("description")
        found.append(Tool(name, description.strip() if isinstance(description, str) else "", parameters or {}))
    if not found:
        raise InputError("no tool is declared")
    return tuple(found)


def chosen_tools(declared: tuple[Tool, ...], tool_choice: str) -> tuple[Tool, ...]:
    """The tools a reply may call under ``tool_choice``: all for auto/required, none for none, or the
    one named."""
    if tool_choice in ("auto", "required"):
        return declared
    if tool_choice == "none":
        return ()
    chosen = tuple(tool for tool in declared if tool.name == tool_choice)
    if not chosen:
        names = ", ".join(tool.name for tool in declared)
        raise InputError(f"tool_choice {tool_choice!r} is none of the declared tools ({names})")
    return chosen
