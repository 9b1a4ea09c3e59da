"""Anthropic's Messages API (``POST /v1/messages``) as a translation onto ``serve``'s chat path.

A request is read into the OpenAI chat body it means (system and turns into chat messages, blocks
into content, ``tool_calls``, tool messages and ``reasoning_content``; tools, tool choice, stops and
the thinking switch into their chat fields) and that body goes through ``read_chat_request``, so the
prompt, grammar, parser and every check are the chat endpoint's own. The reply goes the other way: the
``chat.completion`` our parser made becomes a ``message`` (thinking, text and ``tool_use`` blocks),
and a stream's chunks become Anthropic's events (``MessageEvents``).

What a text prompt cannot hold (images, documents, server tools, redacted thinking) is refused with a
400 naming the block, as the chat endpoint refuses a non-text part; ``cache_control`` and
``metadata`` change nothing in a local reply and are ignored. ``is_error`` on a tool result has no
place in OpenAI's tool message (nor in a template), so the result's content is all the model sees.

Call ids are the ones the chat path makes, in the form the template takes (``call_...``, Mistral's
nine letters), not Anthropic's ``toolu_...``: a client sends them back as ``tool_use_id`` and the
template renders them in the next prompt."""

from __future__ import annotations

import json
import uuid
from typing import Any

from analyzer.chat_api import LLAMA_SERVER_FIELDS, ChatCall, read_chat_request
from analyzer.errors import AnalyzerError, RequestError
from analyzer.llama_server import NO_BUDGET, ChunkStream

# Anthropic's request fields read below; the llama-server sampling fields and chat_template_kwargs
# pass to the chat path as the chat endpoint takes them.
READ_FIELDS = frozenset(
    {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "stop_sequences",
        "temperature",
        "top_p",
        "top_k",
        "stream",
        "thinking",
        "chat_template_kwargs",
    }
)
# Fields that change nothing in a local reply.
IGNORED_FIELDS = frozenset({"metadata", "service_tier"})
# What a block that a text prompt cannot hold is refused with.
_NOT_SERVED = {
    "image": "images are not served: llama-server's /completion is sent a text prompt",
    "document": "documents are not served: llama-server's /completion is sent a text prompt",
    "redacted_thinking": "redacted thinking cannot be rendered: its text is encrypted",
    "search_result": "search result blocks are not served",
    "server_tool_use": "server tools are not served",
    "web_search_tool_result": "server tools are not served",
    "container_upload": "container uploads are not served",
}
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def read_messages_request(
    body: object,
    *,
    tool_format: str = "auto",
    default_template_kwargs: dict[str, Any] | None = None,
    reasoning_budget: int = NO_BUDGET,
    counting: bool = False,
) -> ChatCall:
    """The Messages request ``body`` as the chat call ``serve`` runs (see ``read_chat_request``);
    ``counting``: a ``count_tokens`` body, which has no ``max_tokens`` (nor ``stream``)."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    for key in body:
        if key not in READ_FIELDS and key not in IGNORED_FIELDS and key not in LLAMA_SERVER_FIELDS:
            raise RequestError(
                f"unknown field {key!r}: serve takes the Messages API's fields and llama-server's sampling fields",
                param=key,
            )
    for key in ("max_tokens", "stream") if counting else ():
        if key in body:
            raise RequestError(f"{key}: count_tokens counts the prompt; it takes no {key}", param=key)
    if body.get("max_tokens") is None and not counting:
        raise RequestError("max_tokens is required", param="max_tokens")
    chat: dict[str, Any] = {
        key: body[key]
        for key in ("model", "max_tokens", "temperature", "top_p", "stream", *LLAMA_SERVER_FIELDS)
        if key in body
    }
    chat["messages"] = [*_system(body.get("system")), *_turns(body.get("messages"))]
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    chat.update(_tool_choice(body.get("tool_choice")))
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(stop, str) and stop for stop in stops):
            raise RequestError("stop_sequences must be a list of non-empty strings", param="stop_sequences")
        chat["stop"] = stops
    own = body.get("chat_template_kwargs")
    if own is not None:
        chat["chat_template_kwargs"] = own
    thinking = _thinking(body.get("thinking"))
    if thinking:
        if own is not None and not isinstance(own, dict):
            raise RequestError("chat_template_kwargs must be an object", param="chat_template_kwargs")
        # The thinking field is the switch: it wins over a chat_template_kwargs.enable_thinking.
        chat["chat_template_kwargs"] = {**(own or {}), **thinking.pop("kwargs")}
        chat.update(thinking)
    return read_chat_request(
        chat,
        tool_format=tool_format,
        default_template_kwargs=default_template_kwargs,
        reasoning_budget=reasoning_budget,
    )


# --------------------------------------------------------------------------- the request's parts


def _system(system: object) -> list[dict[str, Any]]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list):
        raise RequestError("system must be a string or a list of text blocks", param="system")
    texts = [_text(block, f"system[{number}]", allowed=()) for number, block in enumerate(system)]
    return [{"role": "system", "content": _content(texts)}] if texts else []


def _turns(messages: object) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list of message objects", param="messages")
    turns: list[dict[str, Any]] = []
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise RequestError(f'{where}: a message must be an object with "role" user or assistant', param="messages")
        content = message.get("content")
        if isinstance(content, str):
            turns.append({"role": message["role"], "content": content})
            continue
        if not isinstance(content, list):
            raise RequestError(f"{where}: content must be a string or a list of blocks", param="messages")
        blocks = [(f"{where}.content[{index}]", block) for index, block in enumerate(content)]
        turns.extend(_user_turn(blocks) if message["role"] == "user" else [_assistant_turn(blocks)])
    return turns


def _user_turn(blocks: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """A user turn's blocks as chat messages, in order: each run of text blocks one user message, each
    tool result a tool message."""
    turns: list[dict[str, Any]] = []
    texts: list[str] = []
    for where, block in blocks:
        if _kind(block, where) == "tool_result":
            if texts:
                turns.append({"role": "user", "content": _content(texts)})
                texts = []
            turns.append(_tool_result(block, where))
        else:
            texts.append(_text(block, where, allowed=("tool_result",)))
    if texts or not turns:
        turns.append({"role": "user", "content": _content(texts)})
    return turns


def _assistant_turn(blocks: list[tuple[str, Any]]) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for where, block in blocks:
        kind = _kind(block, where)
        if kind == "thinking":
            thought = block.get("thinking")
            if not isinstance(thought, str):
                raise RequestError(f"{where}: a thinking block needs thinking as a string", param="messages")
            reasoning.append(thought)
        elif kind == "tool_use":
            calls.append(_tool_use(block, where))
        else:
            texts.append(_text(block, where, allowed=("thinking", "tool_use")))
    turn: dict[str, Any] = {"role": "assistant", "content": _content(texts)}
    if reasoning:
        turn["reasoning_content"] = "\n".join(reasoning)
    if calls:
        turn["tool_calls"] = calls
    return turn


def _tool_use(block: dict[str, Any], where: str) -> dict[str, Any]:
    identifier, name, value = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(identifier, str) or not identifier or not isinstance(name, str) or not name:
        raise RequestError(f"{where}: a tool_use block needs an id and a name", param="messages")
    if not isinstance(value, dict):
        raise RequestError(f"{where}: a tool_use block's input must be an object", param="messages")
    arguments = json.dumps(value, ensure_ascii=False)
    return {"id": identifier, "type": "function", "function": {"name": name, "arguments": arguments}}


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    identifier = block.get("tool_use_id")
    if not isinstance(identifier, str) or not identifier:
        raise RequestError(f"{where}: a tool_result block needs a tool_use_id", param="messages")
    content = block.get("content")
    if content is None or isinstance(content, str):
        text: str | list[dict[str, str]] = content or ""
    elif isinstance(content, list):
        text = _content([_text(part, f"{where}.content[{index}]", allowed=()) for index, part in enumerate(content)])
    else:
        raise RequestError(f"{where}: a tool_result's content must be a string or a list of blocks", param="messages")
    return {"role": "tool", "tool_call_id": identifier, "content": text}


def _kind(block: object, where: str) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str) or not kind:
        raise RequestError(f'{where}: a block must be an object with a "type"', param="messages")
    return kind


def _text(block: object, where: str, *, allowed: tuple[str, ...]) -> str:
    """The text of a text block; any other block, where only text (or the ``allowed`` kinds, read by
    the caller) may stand, is refused naming it."""
    kind = _kind(block, where)
    assert isinstance(block, dict)
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise RequestError(f"{where}: a text block needs text as a string", param="messages")
        return text
    if kind in _NOT_SERVED:
        raise RequestError(f"{where}: {kind} block: {_NOT_SERVED[kind]}", param="messages")
    takes = ", ".join(("text", *allowed))
    raise RequestError(f"{where}: a {kind} block cannot stand here (this takes {takes} blocks)", param="messages")


def _content(texts: list[str]) -> str | list[dict[str, str]]:
    """Text blocks as chat content: one as a string, as a chat client writes it; several as text
    parts, which the template gets as the chat endpoint gives them (as parts, or joined)."""
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": text} for text in texts] if texts else ""


def _tools(tools: object) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise RequestError("tools must be a list of tool objects", param="tools")
    functions = []
    for number, tool in enumerate(tools):
        kind = tool.get("type", "custom")
        if kind != "custom":
            raise RequestError(f"tools[{number}]: {kind!r}: server tools are not served", param="tools")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise RequestError(f"tools[{number}]: input_schema must be a JSON Schema object", param="tools")
        # In the order OpenAI's clients write them: a template that writes the tools as JSON keeps it.
        function: dict[str, Any] = {"name": tool.get("name")}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        function["parameters"] = schema
        functions.append({"type": "function", "function": function})
    return functions


def _tool_choice(choice: object) -> dict[str, Any]:
    if choice is None:
        return {}
    kind = choice.get("type") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or (kind not in _TOOL_CHOICES and kind != "tool"):
        raise RequestError(
            'tool_choice must be {"type": "auto"}, {"type": "any"}, {"type": "none"} or {"type": "tool", "name": ...}',
            param="tool_choice",
        )
    fields: dict[str, Any] = {}
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError('tool_choice {"type": "tool"} needs the tool\'s name', param="tool_choice")
        fields["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        fields["tool_choice"] = _TOOL_CHOICES[str(kind)]
    single = choice.get("disable_parallel_tool_use")
    if single is not None:
        if not isinstance(single, bool):
            raise RequestError("tool_choice.disable_parallel_tool_use must be true or false", param="tool_choice")
        fields["parallel_tool_calls"] = not single
    return fields


def _thinking(thinking: object) -> dict[str, Any]:
    """The chat fields ``thinking`` sets: the template's thinking switch (under ``kwargs``) and, with a
    ``budget_tokens``, the reasoning budget."""
    if thinking is None:
        return {}
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if not isinstance(thinking, dict) or kind not in ("enabled", "disabled"):
        raise RequestError(
            'thinking must be {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}', param="thinking"
        )
    if kind == "disabled":
        return {"kwargs": {"enable_thinking": False}}
    fields: dict[str, Any] = {"kwargs": {"enable_thinking": True}}
    budget = thinking.get("budget_tokens")
    if budget is not None:
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            raise RequestError("thinking.budget_tokens must be a whole number of tokens", param="thinking")
        fields["thinking_token_budget"] = budget
    return fields


# --------------------------------------------------------------------------- the reply


def stop_reason(
    finish_reason: str, upstream: dict[str, Any], stop_sequences: tuple[str, ...]
) -> tuple[str, str | None]:
    """Anthropic's stop reason and stop sequence for a chat finish reason, given the upstream's last
    reply or event (where llama-server says which stop string ended the text)."""
    if finish_reason == "tool_calls":
        return "tool_use", None
    if finish_reason == "length":
        return "max_tokens", None
    word = upstream.get("stopping_word")
    if upstream.get("stop_type") == "word" and isinstance(word, str) and word in stop_sequences:
        return "stop_sequence", word
    return "end_turn", None


def tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments (our parser's JSON text) as a tool_use block's input object."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def message_object(chat: dict[str, Any], upstream: dict[str, Any], stop_sequences: tuple[str, ...]) -> dict[str, Any]:
    """The Messages API reply for the ``chat.completion`` ``chat``; ``upstream``: llama-server's reply."""
    choice = chat["choices"][0]
    message = choice["message"]
    content: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        content.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": ""})
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        content.append(
            {"type": "tool_use", "id": call["id"], "name": function["name"], "input": tool_input(function["arguments"])}
        )
    reason, sequence = stop_reason(choice["finish_reason"], upstream, stop_sequences)
    usage = chat.get("usage") or {}
    reply = {
        "id": "msg_" + uuid.uuid4().hex,
        "type": "message",
        "role": "assistant",
        "model": chat["model"],
        "content": content,
        "stop_reason": reason,
        "stop_sequence": sequence,
        "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)},
    }
    if message.get("errors"):
        # Text the parser could not read as a call is in no block: kept here, as the chat reply keeps it.
        reply["errors"] = message["errors"]
    return reply


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error object for an HTTP status."""
    kinds = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}
    kind = kinds.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class MessageEvents:
    """A chat stream's chunks (``ChunkStream``'s) as Anthropic's server-sent events: ``message_start``
    before the first, one content block per reasoning run (thinking), content run (text) and call
    (tool_use, its arguments as ``input_json_delta`` fragments however many the chunks carry them in),
    each stopped when the next starts, then ``message_delta`` (stop reason, usage, and the parse
    errors, if any, as ``errors``) and ``message_stop`` from ``finish``. The usage and the stop
    sequence are read from ``chunks``, the stream the chunks come from (its prompt tokens, and
    llama-server's last event)."""

    def __init__(self, model: str, stop_sequences: tuple[str, ...], chunks: ChunkStream) -> None:
        self.id = "msg_" + uuid.uuid4().hex
        self.model = model
        self.stop_sequences = stop_sequences
        self._chunks = chunks
        self._started = False
        self._blocks = 0  # content blocks started
        self._open: tuple[str, int | None] | None = None  # the open block: kind, call index
        self._call_blocks: dict[int, int] = {}  # call index -> block index
        self._finish_reason = "stop"
        self._errors: list[dict[str, Any]] = []

    def chunk(self, chunk: dict[str, Any]) -> list[str]:
        events = self._start()
        if not chunk.get("choices"):  # the usage chunk, when the chat stream was asked for one
            return events
        choice = chunk["choices"][0]
        delta = choice.get("delta") or {}
        if delta.get("reasoning_content"):
            events += self._text_block("thinking", delta["reasoning_content"])
        if delta.get("content"):
            events += self._text_block("text", delta["content"])
        for call in delta.get("tool_calls") or []:
            events += self._call(call)
        if delta.get("errors"):  # on the chat stream's last chunk
            self._errors = delta["errors"]
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
        return events

    def finish(self) -> list[str]:
        events = self._start() + self._stop()
        reason, sequence = stop_reason(self._finish_reason, self._chunks.last, self.stop_sequences)
        counted = self._chunks.usage()
        usage = {"input_tokens": counted["prompt_tokens"], "output_tokens": counted["completion_tokens"]}
        ending: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": usage,
        }
        if self._errors:
            ending["errors"] = self._errors  # as the batch reply's ``errors``
        events.append(sse("message_delta", ending))
        events.append(sse("message_stop", {"type": "message_stop"}))
        return events

    def error(self, exc: AnalyzerError) -> str:
        """The event a failure once the stream has started is (its status is sent): Anthropic's
        ``error`` event, an ``api_error`` whatever the cause."""
        return sse("error", error_body(500, exc.message))

    def _start(self) -> list[str]:
        if self._started:
            return []
        self._started = True
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self._chunks.usage()["prompt_tokens"], "output_tokens": 0},
        }
        return [sse("message_start", {"type": "message_start", "message": message})]

    def _text_block(self, kind: str, text: str) -> list[str]:
        events = []
        if self._open != (kind, None):
            block = (
                {"type": "thinking", "thinking": "", "signature": ""}
                if kind == "thinking"
                else {"type": "text", "text": ""}
            )
            events = self._begin(kind, None, block)
        field = "thinking" if kind == "thinking" else "text"
        delta = {"type": f"{field}_delta", field: text}
        events.append(
            sse("content_block_delta", {"type": "content_block_delta", "index": self._blocks - 1, "delta": delta})
        )
        return events

    def _call(self, call: dict[str, Any]) -> list[str]:
        index = call["index"]
        function = call.get("function") or {}
        events = []
        if index not in self._call_blocks:
            block = {"type": "tool_use", "id": call.get("id", ""), "name": function.get("name", ""), "input": {}}
            events = self._begin("tool_use", index, block)
            self._call_blocks[index] = self._blocks - 1
        fragment = function.get("arguments")
        if fragment:
            # A fragment of a call whose block is no longer the open one still names its own block.
            delta = {"type": "input_json_delta", "partial_json": fragment}
            payload = {"type": "content_block_delta", "index": self._call_blocks[index], "delta": delta}
            events.append(sse("content_block_delta", payload))
        return events

    def _begin(self, kind: str, call: int | None, block: dict[str, Any]) -> list[str]:
        events = self._stop()
        self._open = (kind, call)
        payload = {"type": "content_block_start", "index": self._blocks, "content_block": block}
        self._blocks += 1
        return [*events, sse("content_block_start", payload)]

    def _stop(self) -> list[str]:
        if self._open is None:
            return []
        self._open = None
        return [sse("content_block_stop", {"type": "content_block_stop", "index": self._blocks - 1})]


__all__ = [
    "IGNORED_FIELDS",
    "READ_FIELDS",
    "MessageEvents",
    "error_body",
    "message_object",
    "read_messages_request",
    "sse",
    "stop_reason",
    "tool_input",
]
