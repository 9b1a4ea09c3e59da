"""What the parser returns: an OpenAI-style assistant message, and the deltas a stream emits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(slots=True)
class ToolCall:
    """One call in a message, OpenAI style."""

    id: str
    name: str
    arguments: str  # a JSON object, as text

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True, slots=True)
class ParseError:
    """Something in the model's output that is not a well-formed call. ``text`` is the output text it
    covers (nothing is dropped: text that is neither content, reasoning nor a call is kept here)."""

    kind: str  # "malformed_call" | "unterminated_call" | "unknown_tool" | "invalid_arguments" | ...
    message: str
    text: str = ""
    call_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.text:
            out["text"] = self.text
        if self.call_index is not None:
            out["call_index"] = self.call_index
        return out


@dataclass(frozen=True, slots=True)
class ParseWarning:
    """A way the output differs from what the template writes that was read anyway (a tolerance:
    ``tolerance.py`` lists the kinds). ``offset``: where in the output, in characters; ``text``: the
    model's text there that the message leaves out, where the tolerance leaves some out (a token in a
    call's header the template never writes), so that none is lost."""

    kind: str
    message: str
    offset: int
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message, "offset": self.offset}
        if self.text:
            out["text"] = self.text
        return out


class Message:
    """The assistant message so far. Text arrives in pieces (one per delta), kept as lists and joined
    when read, so that folding a long stream in costs linear time."""

    __slots__ = ("_content", "_reasoning", "errors", "tool_calls", "warnings")

    def __init__(
        self,
        content: str = "",
        reasoning_content: str = "",
        tool_calls: list[ToolCall] | None = None,
        errors: list[ParseError] | None = None,
        warnings: list[ParseWarning] | None = None,
    ) -> None:
        self._content = [content] if content else []
        self._reasoning = [reasoning_content] if reasoning_content else []
        self.tool_calls: list[ToolCall] = tool_calls if tool_calls is not None else []
        self.errors: list[ParseError] = errors if errors is not None else []
        self.warnings: list[ParseWarning] = warnings if warnings is not None else []

    @property
    def content(self) -> str:
        return _joined(self._content)

    @content.setter
    def content(self, text: str) -> None:
        self._content = [text] if text else []

    @property
    def reasoning_content(self) -> str:
        return _joined(self._reasoning)

    @reasoning_content.setter
    def reasoning_content(self, text: str) -> None:
        self._reasoning = [text] if text else []

    @property
    def has_reasoning(self) -> bool:
        return bool(self._reasoning)

    def add_text(self, content: str, reasoning: str) -> None:
        if content:
            self._content.append(content)
        if reasoning:
            self._reasoning.append(reasoning)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and (
            self.content,
            self.reasoning_content,
            self.tool_calls,
            self.errors,
            self.warnings,
        ) == (other.content, other.reasoning_content, other.tool_calls, other.errors, other.warnings)

    def __repr__(self) -> str:
        return (
            f"Message(content={self.content!r}, reasoning_content={self.reasoning_content!r}, "
            f"tool_calls={self.tool_calls!r}, errors={self.errors!r}, warnings={self.warnings!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        content = self.content
        out: dict[str, Any] = {"role": "assistant", "content": content if content or not self.tool_calls else None}
        reasoning = self.reasoning_content
        if reasoning:
            out["reasoning_content"] = reasoning
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        out["errors"] = [error.to_dict() for error in self.errors]
        if self.warnings:
            # Only where a tolerance was applied: output as the template writes it gives none.
            out["warnings"] = [warning.to_dict() for warning in self.warnings]
        return out


def _joined(parts: list[str]) -> str:
    """The parts as one text; the list keeps that one text, so reading again costs nothing."""
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


class Delta(NamedTuple):
    """One streamed change, OpenAI style. Text fields are appended; a call delta names its ``index``
    and carries ``id`` and ``name`` the first time, then ``arguments`` fragments. A named tuple: as
    immutable as a frozen dataclass and three times quicker to make, which a stream does per token."""

    content: str = ""
    reasoning_content: str = ""
    call_index: int | None = None
    call_id: str | None = None
    call_name: str | None = None
    arguments: str = ""
    error: ParseError | None = None
    warning: ParseWarning | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.content:
            out["content"] = self.content
        if self.reasoning_content:
            out["reasoning_content"] = self.reasoning_content
        if self.call_index is not None:
            function: dict[str, Any] = {}
            if self.call_name is not None:
                function["name"] = self.call_name
            if self.arguments or self.call_name is not None:
                function["arguments"] = self.arguments
            call: dict[str, Any] = {"index": self.call_index, "function": function}
            if self.call_id is not None:
                call["id"] = self.call_id
                call["type"] = "function"
            out["tool_calls"] = [call]
        if self.error is not None:
            out["error"] = self.error.to_dict()
        if self.warning is not None:
            out["warning"] = self.warning.to_dict()
        return out


def apply(message: Message, delta: Delta) -> None:
    """Fold a delta into a message: how a client rebuilds the message from a stream."""
    if delta.content or delta.reasoning_content:
        message.add_text(delta.content, delta.reasoning_content)
    if delta.call_index is not None:
        while len(message.tool_calls) <= delta.call_index:
            message.tool_calls.append(ToolCall("", "", ""))
        call = message.tool_calls[delta.call_index]
        if delta.call_id is not None:
            call.id = delta.call_id
        if delta.call_name is not None:
            call.name = delta.call_name
        call.arguments += delta.arguments
    if delta.error is not None:
        message.errors.append(delta.error)
    if delta.warning is not None:
        message.warnings.append(delta.warning)


class PrefillError(ValueError):
    """A message to continue that is no partial assistant message; the text says what is wrong."""


class Prefill(NamedTuple):
    """A partial assistant message the prompt ends inside (``continue_final_message``, a prefill):
    the model's output continues its content when it has any, else its reasoning (the block the prompt
    left open), else it starts a message as usual."""

    content: str = ""
    reasoning_content: str = ""


def prefill_of(message: Mapping[str, Any] | Prefill) -> Prefill:
    """The text of an OpenAI-style partial assistant message: ``content`` (a string or a list of text
    parts) and ``reasoning_content`` (or ``reasoning``). Raises ``PrefillError`` for a message of
    another role, one with tool calls (a message is continued inside its text), or fields of other types."""
    if isinstance(message, Prefill):
        return message
    if not isinstance(message, Mapping):
        raise PrefillError(f"the message to continue must be an object, not {type(message).__name__}")
    role = message.get("role", "assistant")
    if role != "assistant":
        raise PrefillError(f"the message to continue has role {role!r}: only an assistant message is continued")
    if message.get("tool_calls"):
        raise PrefillError(
            "the message to continue holds tool_calls: the output continues a message's text, not its calls"
        )
    content = _prefill_content(message.get("content"))
    reasoning = _prefill_text(message, "reasoning_content")
    alias = _prefill_text(message, "reasoning")  # vLLM's later name for the field
    if reasoning and alias and reasoning != alias:
        raise PrefillError("the message to continue holds both reasoning_content and reasoning, and they differ")
    return Prefill(content, reasoning or alias)


def _prefill_content(content: Any) -> str:
    if content is None or isinstance(content, str):
        return _valid_text(content or "", "content")
    if not isinstance(content, list):
        raise PrefillError(f"the message to continue has content of type {type(content).__name__}: expected text")
    texts = []
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind != "text" or not isinstance(part.get("text"), str):
            what = f"of type {kind!r}" if isinstance(kind, str) else "not a text part"
            raise PrefillError(f"content part {number} of the message to continue is {what}: only text is continued")
        texts.append(part["text"])
    return _valid_text("".join(texts), "content")


def _prefill_text(message: Mapping[str, Any], key: str) -> str:
    text = message.get(key)
    if text is None:
        return ""
    if not isinstance(text, str):
        raise PrefillError(f"the message to continue has {key} of type {type(text).__name__}: expected a string")
    return _valid_text(text, key)


def _valid_text(text: str, field: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PrefillError(
            f"the message to continue has a lone surrogate in its {field} (character {exc.start}): not UTF-8 text"
        ) from None
    return text
