"""Parse model output into an OpenAI-style assistant message, batch or streamed.

    parser = Parser(description, tools)
    message = parser.parse(text)            # whole output at once
    stream = parser.stream()                # or chunk by chunk
    deltas = stream.feed(chunk) ... stream.finish()
"""

from __future__ import annotations

from typing import Any

from analyzer.backends.parser.message import Delta, Message, ParseError, ToolCall, apply
from analyzer.backends.parser.stream import StreamParser
from analyzer.description import FormatDescription
from analyzer.lower import OutputShape, lower


class Parser:
    """A parser for one template's output format, for a given set of tools (used to validate calls
    and to type key/value arguments)."""

    def __init__(self, description: FormatDescription | OutputShape, tools: list[dict[str, Any]] | None = None,
                 *, thinking: bool | None = None):
        self.shape = description if isinstance(description, OutputShape) else lower(description, thinking=thinking)
        self.tools = tools or []

    def stream(self) -> StreamParser:
        return StreamParser(self.shape, self.tools)

    def parse(self, text: str) -> Message:
        stream = self.stream()
        stream.feed(text)
        stream.finish()
        return stream.message


__all__ = ["Parser", "StreamParser", "Message", "ToolCall", "ParseError", "Delta", "apply"]
