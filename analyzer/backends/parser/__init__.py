"""Parse model output into an OpenAI-style assistant message, batch or streamed.

    parser = Parser(description, tools)
    message = parser.parse(text)            # whole output at once
    stream = parser.stream()                # or chunk by chunk
    deltas = stream.feed(chunk) ... stream.finish()

The parser itself is the runtime's (``analyzer.runtime``); this facade lowers a description first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.description import FormatDescription
from analyzer.lower import lower
from analyzer.runtime import stream as _runtime
from analyzer.runtime.message import Delta, Message, ParseError, ParseWarning, Prefill, PrefillError, ToolCall, apply
from analyzer.runtime.shape import OutputShape
from analyzer.runtime.stream import Stream

StreamParser = Stream  # the name the library has always exported


class Parser(_runtime.Parser):
    """A parser for one template's output format and a set of tools (to validate calls and to type
    key/value arguments). ``thinking``: whether the prompt was rendered with thinking switched on (None:
    the template's default). ``strict``: read only what the template writes. ``continuing``: the
    partial assistant message the prompt ends inside (``continue_final_message``), which the output
    continues; a parse then returns the whole message, a stream's deltas only the new text. ``fresh_ids``:
    the caller gives calls ids of its own, so none the model writes is waited for (see the runtime's
    ``Parser``)."""

    def __init__(
        self,
        description: FormatDescription | OutputShape,
        tools: list[dict[str, Any]] | None = None,
        *,
        thinking: bool | None = None,
        strict: bool = False,
        inline_reasoning: bool = False,
        continuing: Mapping[str, Any] | Prefill | None = None,
        fresh_ids: bool = False,
    ):
        shape = description if isinstance(description, OutputShape) else lower(description)
        super().__init__(
            shape,
            tools,
            thinking=thinking,
            strict=strict,
            inline_reasoning=inline_reasoning,
            continuing=continuing,
            fresh_ids=fresh_ids,
        )


__all__ = [
    "Delta",
    "Message",
    "ParseError",
    "ParseWarning",
    "Parser",
    "Prefill",
    "PrefillError",
    "Stream",
    "StreamParser",
    "ToolCall",
    "apply",
]
