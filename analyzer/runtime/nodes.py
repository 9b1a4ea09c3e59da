"""Frozen dataclass trees to plain JSON values and back, checked against their type hints.

Every node class has a ``kind`` class attribute naming it; ``node_to_dict`` writes it beside the
fields, ``node_from_dict`` re-creates only the classes it is given (lark's ``Serialize`` way), and
refuses a field whose value does not have the declared type, ``typing.Literal`` values included.
Tuples become lists and come back as tuples, so trees hash and compare after a round trip.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union


class NodeError(ValueError):
    """Data that is not a tree of the given node kinds."""


def node_to_dict(node: Any) -> Any:
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        out: dict[str, Any] = {"kind": type(node).kind}  # type: ignore[attr-defined]  # each node class has a kind
        for item in dataclasses.fields(node):
            out[item.name] = node_to_dict(getattr(node, item.name))
        return out
    if isinstance(node, tuple):
        return [node_to_dict(item) for item in node]
    return node


def node_from_dict(data: Any, kinds: dict[str, type]) -> Any:
    if isinstance(data, dict):
        kind = data.get("kind")
        cls = kinds.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise NodeError(f"unknown node kind {kind!r}")
        names = {item.name for item in dataclasses.fields(cls)}
        extra = set(data) - names - {"kind"}
        if extra:
            raise NodeError(f"unexpected field(s) {sorted(extra)} in {kind!r} node")
        try:
            node = cls(**{key: node_from_dict(value, kinds) for key, value in data.items() if key != "kind"})
        except TypeError as exc:
            raise NodeError(f"malformed {kind!r} node: {exc}") from None
        hints = _node_hints(cls)
        for item in dataclasses.fields(cls):
            value = getattr(node, item.name)
            if not _node_conforms(value, hints[item.name]):
                raise NodeError(f"field {item.name!r} of {kind!r} node has the wrong type: {value!r:.60}")
        return node
    if isinstance(data, list):
        return tuple(node_from_dict(item, kinds) for item in data)
    return data


_NODE_HINTS: dict[type, dict[str, Any]] = {}


def _node_hints(cls: type) -> dict[str, Any]:
    if cls not in _NODE_HINTS:
        _NODE_HINTS[cls] = typing.get_type_hints(cls)
    return _NODE_HINTS[cls]


def _node_conforms(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON has the type a node field declares."""
    origin = typing.get_origin(hint)
    if origin is Union or isinstance(hint, types.UnionType):
        return any(_node_conforms(value, option) for option in typing.get_args(hint))
    if origin is typing.Literal:
        return any(value == option and type(value) is type(option) for option in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_node_conforms(item, args[0]) for item in value)
        return len(args) == len(value) and all(_node_conforms(v, a) for v, a in zip(value, args, strict=True))
    if hint is type(None):
        return value is None
    if hint is int:
        return type(value) is int
    if hint is bool:
        return type(value) is bool
    if hint is Any:
        return True
    return isinstance(value, hint)
