"""llama-server: a conversation and its tools to one ``/completion`` request, and the reply to OpenAI
``chat.completion`` objects. The application layer over the library, for the command line (``export``)
and anything that serves the OpenAI chat API.

``prepare`` chooses the tool format (the template's own, or the prompted format for a template that
has none), renders the prompt through the template as analysed, and takes the grammar fields, stops
and parser from the one output shape; ``send`` and ``stream_chunks`` post the body and read the reply
with that parser. Nothing here derives anything about the format: it calls the library and speaks
HTTP and OpenAI's object shapes.

    completion = prepare(template, description, ChatRequest(messages, tools))
    reply = send(url, completion)                  # or stream_chunks(url, completion)
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
from analyzer.backends.parser import Parser
from analyzer.backends.prompted import STYLES, prompted
from analyzer.description import FormatDescription
from analyzer.errors import InputError, ServerRefused, ServerUnreachable
from analyzer.lower import lower
from analyzer.render.conversation import Renderer, check_conversation
from analyzer.render.engines import DEFAULT_BOS
from analyzer.runtime.message import Delta, Message
from analyzer.template import Template

DEFAULT_N_PREDICT = 512
TOOL_FORMATS = ("auto", "native", *STYLES)


@dataclass(frozen=True)
class ChatRequest:
    """What a client asks for, as the OpenAI chat API says it. ``tool_format``: "native" (the
    template's own), "json"/"fenced" (the prompted format), or "auto" (native when the template
    writes calls)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str = "auto"
    parallel: bool = True
    n_predict: int = DEFAULT_N_PREDICT
    thinking: bool | None = None
    tool_format: str = "auto"
    whitespace: str = "exact"  # the grammar's: "exact" (the template's own) or "flexible"


@dataclass(frozen=True)
class Completion:
    """A request ready to send: the ``/completion`` body, the parser for its reply, the tool format
    used, and what a user should be told about that choice."""

    body: dict[str, Any]
    parser: Parser
    tool_format: str
    notes: tuple[str, ...] = ()


def tool_format_for(description: FormatDescription, request: ChatRequest) -> tuple[str, tuple[str, ...]]:
    """The tool format a request gets, and a note when it was chosen for the user."""
    if request.tool_format not in TOOL_FORMATS:
        raise InputError(f"tool format {request.tool_format!r} is none of {', '.join(TOOL_FORMATS)}")
    if request.tool_format != "auto":
        return request.tool_format, ()
    if description.format != "none" or not request.tools:
        return "native", ()
    return "json", (f"{description.template.name}: the template writes no tool calls: using the prompted json format",)


def prepare(
    template: Template, description: FormatDescription, request: ChatRequest, *, engine: str | None = None
) -> Completion:
    tool_format, notes = tool_format_for(description, request)
    if tool_format != "native":
        if not request.tools:
            raise InputError(f"the prompted {tool_format} format needs tools")
        setup = prompted(
            template,
            description,
            request.messages,
            request.tools,
            style=tool_format,
            tool_choice=request.tool_choice,
            parallel=request.parallel,
            thinking=request.thinking,
            engine=engine,
            whitespace=request.whitespace,
        )
        body = {
            "prompt": server_prompt(template, setup.prompt.text),
            "n_predict": request.n_predict,
            **llama_server_fields(setup.grammar, preserved_tokens(setup.shape), setup.shape.stops),
        }
        warnings = setup.grammar.warnings() if setup.grammar is not None else ()
        return Completion(body, setup.parser, tool_format, (*notes, *warnings))
    renderer = Renderer.for_template(template, description, engine=engine)
    rendered = renderer.render(
        check_conversation(request.messages),
        tools=request.tools or None,
        generation_prompt=True,
        thinking=request.thinking,
    )
    shape = lower(description)
    grammar = (
        to_grammar(
            shape,
            request.tools,
            tool_choice=request.tool_choice,
            parallel=request.parallel,
            thinking=request.thinking,
            whitespace=request.whitespace,
        )
        if request.tools
        else None
    )
    body = {
        "prompt": server_prompt(template, rendered),
        "n_predict": request.n_predict,
        **llama_server_fields(grammar, preserved_tokens(shape), shape.stops),
    }
    warnings = grammar.warnings() if grammar is not None else ()
    return Completion(body, Parser(shape, request.tools, thinking=request.thinking), "native", (*notes, *warnings))


def server_prompt(template: Template, rendered: str) -> str:
    """The rendered prompt without the template's leading BOS text. llama-server's /completion adds the
    model's BOS token itself when the vocabulary asks for one, and its own chat path strips the
    template's for that reason: left in, it would be a second BOS (and for a bare .jinja file, whose
    BOS is only a placeholder, text the model never saw). Kept only where the source says the
    tokenizer adds none (``add_bos_token`` false)."""
    bos = template.bos_token if template.bos_token is not None else DEFAULT_BOS
    if template.add_bos is False or not bos or not rendered.startswith(bos):
        return rendered
    return rendered[len(bos) :]


# --------------------------------------------------------------------------- the reply


def completion_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/completion") else url + "/completion"


def _post(url: str, body: dict[str, Any], timeout: float):
    request = urllib.request.Request(
        completion_url(url), data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise ServerRefused(f"{completion_url(url)}: HTTP {exc.code}: {_server_message(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ServerUnreachable(f"{completion_url(url)}: no llama-server answered: {reason}") from None


def _server_message(exc: urllib.error.HTTPError) -> str:
    text = exc.read().decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error", {})
        return str(error.get("message", text)) if isinstance(error, dict) else str(error)
    except (json.JSONDecodeError, AttributeError):
        return text.strip() or exc.reason


def _finish_reason(reply: dict[str, Any], message: Message) -> str:
    if reply.get("stop_type") == "limit":
        return "length"
    return "tool_calls" if message.tool_calls else "stop"


def _usage(reply: dict[str, Any]) -> dict[str, int]:
    prompt = int(reply.get("tokens_evaluated") or 0)
    completion = int(reply.get("tokens_predicted") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _envelope(kind: str, completion_id: str, model: str) -> dict[str, Any]:
    return {"id": completion_id, "object": kind, "created": int(time.time()), "model": model}


def send(url: str, completion: Completion, *, timeout: float = 600.0) -> dict[str, Any]:
    """Post the request and return the OpenAI ``chat.completion`` our parser makes of the reply."""
    with _post(url, {**completion.body, "stream": False}, timeout) as response:
        reply = json.loads(response.read().decode("utf-8"))
    message = completion.parser.parse(reply.get("content", ""))
    result = _envelope("chat.completion", "chatcmpl-" + uuid.uuid4().hex, str(reply.get("model", "")))
    result["choices"] = [{"index": 0, "message": message.to_dict(), "finish_reason": _finish_reason(reply, message)}]
    result["usage"] = _usage(reply)
    return result


def stream_chunks(url: str, completion: Completion, *, timeout: float = 600.0) -> Iterator[dict[str, Any]]:
    """Post the request with streaming on and yield OpenAI ``chat.completion.chunk`` objects as the
    server's tokens arrive; the last chunk carries the finish reason and the usage."""
    completion_id = "chatcmpl-" + uuid.uuid4().hex
    session = completion.parser.stream()
    last: dict[str, Any] = {}
    with _post(url, {**completion.body, "stream": True}, timeout) as response:
        for raw in response:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            payload = line[len("data:") :].strip()
            if payload == "[DONE]":
                break
            event = json.loads(payload)
            if "error" in event:
                raise ServerRefused(f"{completion_url(url)}: {event['error'].get('message', event['error'])}")
            last = event
            for delta in session.feed(event.get("content", "")):
                yield _chunk(completion_id, last, delta)
    for delta in session.finish():
        yield _chunk(completion_id, last, delta)
    final = _envelope("chat.completion.chunk", completion_id, str(last.get("model", "")))
    final["choices"] = [{"index": 0, "delta": {}, "finish_reason": _finish_reason(last, session.message)}]
    final["usage"] = _usage(last)
    yield final


def _chunk(completion_id: str, event: dict[str, Any], delta: Delta) -> dict[str, Any]:
    chunk = _envelope("chat.completion.chunk", completion_id, str(event.get("model", "")))
    chunk["choices"] = [{"index": 0, "delta": delta.to_dict(), "finish_reason": None}]
    return chunk


__all__ = [
    "DEFAULT_N_PREDICT",
    "TOOL_FORMATS",
    "ChatRequest",
    "Completion",
    "completion_url",
    "prepare",
    "send",
    "server_prompt",
    "stream_chunks",
    "tool_format_for",
]
