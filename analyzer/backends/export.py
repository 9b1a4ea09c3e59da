"""Export to llama-server: a complete ``/completion`` request built from a template's format
description, and the OpenAI ``chat.completion`` made from the server's raw reply by our parser.

The prompt, the grammar and the parser all come from the same description, so a template whose
format llama-server's own autoparser misses still gets working tool calls through the raw endpoint.

    body = completion_request(template, description, messages, tools)
    reply = send(url, body, Parser(description, tools))          # or stream_chunks(...)
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

from analyzer.analysis import bound_context, compile_as_analysed
from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
from analyzer.backends.parser import Parser
from analyzer.backends.parser.message import Delta, Message
from analyzer.backends.parser.stream import generated_id
from analyzer.description import FormatDescription, Unknown
from analyzer.errors import AnalyzerError, InputError
from analyzer.lower import lower
from analyzer.render.engines import DEFAULT_BOS, DEFAULT_ENGINE
from analyzer.template import Template

DEFAULT_N_PREDICT = 512


class MessagesError(InputError):
    """The conversation given for the prompt is malformed."""


class ServerUnreachable(AnalyzerError):
    """No llama-server answered at the URL (refused connection, unknown host, timeout)."""

    exit_code = 3


class ServerRefused(AnalyzerError):
    """The server answered with an HTTP error; the message carries llama-server's own text."""

    exit_code = 4


class ReplyCut(AnalyzerError):
    """The reply stopped at n_predict: the completion is printed, and the exit code says it is cut."""

    exit_code = 5


# --------------------------------------------------------------------------- the request


def check_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise MessagesError("messages must be a non-empty JSON list of message objects")
    for number, message in enumerate(messages, 1):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise MessagesError(f"message {number} is not an object with a \"role\"")
    return messages


def spell_for_template(messages: list[dict[str, Any]], description: FormatDescription) -> list[dict[str, Any]]:
    """The conversation spelled the way the analysis found the template takes it: arguments as an
    object or a JSON string, reasoning under the template's own key, the content of a turn with calls,
    and call ids in the accepted form (results keep pointing at their call)."""
    form = description.input_form
    reasoning = description.reasoning
    reasoning_key = None if isinstance(reasoning, Unknown) else reasoning.field
    renamed_ids: dict[str, str] = {}
    spelled = []
    for message in messages:
        message = dict(message)
        if message["role"] == "assistant":
            if reasoning_key and reasoning_key != "reasoning_content" and "reasoning_content" in message:
                message[reasoning_key] = message.pop("reasoning_content")
            if message.get("tool_calls"):
                if not message.get("content"):
                    message["content"] = form.content_with_calls
                message["tool_calls"] = [_spell_call(call, form.arguments_as_string, form.id_form, renamed_ids)
                                         for call in message["tool_calls"]]
        elif message["role"] == "tool" and message.get("tool_call_id") in renamed_ids:
            message["tool_call_id"] = renamed_ids[message["tool_call_id"]]
        spelled.append(message)
    return spelled


def _spell_call(call: Any, as_string: bool, id_form: str, renamed_ids: dict[str, str]) -> Any:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    call = {**call, "function": dict(call["function"])}
    if as_string and not isinstance(call["function"].get("arguments"), str):
        call["function"]["arguments"] = json.dumps(arguments_value(call["function"]), ensure_ascii=False)
    elif not as_string:
        call["function"]["arguments"] = arguments_value(call["function"])
    old = call.get("id")
    if id_form == "alnum9" and isinstance(old, str) and not (len(old) == 9 and old.isalnum()):
        renamed_ids[old] = renamed_ids.get(old) or generated_id("alnum9", len(renamed_ids), "", old)
        call["id"] = renamed_ids[old]
    return call


def arguments_value(function: dict[str, Any]) -> Any:
    """A call's arguments as a JSON value, whether the client sent a JSON string or the value itself."""
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        raise MessagesError(f"call to {function.get('name')!r}: arguments are not valid JSON") from None


def completion_request(template: Template, description: FormatDescription, messages: Any,
                       tools: list[dict[str, Any]] | None, *, tool_choice: str = "auto", parallel: bool = True,
                       n_predict: int = DEFAULT_N_PREDICT, thinking: bool | None = None,
                       engine: str = DEFAULT_ENGINE) -> dict[str, Any]:
    """A llama-server ``/completion`` body: the prompt with its generation prompt, the grammar fields
    for ``tool_choice`` and the stop strings that end the assistant turn."""
    spelled = spell_for_template(check_messages(messages), description)
    extra = bound_context(description)
    if thinking is not None:
        extra["enable_thinking"] = thinking
    compiled = compile_as_analysed(template, description, engine)
    prompt = server_prompt(template, compiled.render(spelled, tools=tools or None, add_generation_prompt=True,
                                                     extra=extra))
    shape = lower(description, thinking=thinking)
    grammar = to_grammar(shape, tools, tool_choice=tool_choice, parallel=parallel) if tools else None
    fields = llama_server_fields(grammar, preserved_tokens(shape), shape.stops)
    return {"prompt": prompt, "n_predict": n_predict, **fields}


def server_prompt(template: Template, rendered: str) -> str:
    """The rendered prompt without the template's leading BOS text. llama-server's /completion adds the
    model's BOS token itself when the vocabulary asks for one, and its own chat path strips the
    template's for that reason: left in, it would be a second BOS (and for a bare .jinja file, whose
    BOS is only a placeholder, text the model never saw). Kept only where the source says the
    tokenizer adds none (``add_bos_token`` false)."""
    bos = template.bos_token if template.bos_token is not None else DEFAULT_BOS
    if template.add_bos is False or not bos or not rendered.startswith(bos):
        return rendered
    return rendered[len(bos):]


# --------------------------------------------------------------------------- the reply


def completion_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/completion") else url + "/completion"


def _post(url: str, body: dict[str, Any], timeout: float):
    request = urllib.request.Request(completion_url(url), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - the user names the server
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


def send(url: str, body: dict[str, Any], parser: Parser, *, timeout: float = 600.0) -> dict[str, Any]:
    """Post ``body`` and return the OpenAI ``chat.completion`` our parser makes of the reply."""
    with _post(url, {**body, "stream": False}, timeout) as response:
        reply = json.loads(response.read().decode("utf-8"))
    message = parser.parse(reply.get("content", ""))
    completion = _envelope("chat.completion", "chatcmpl-" + uuid.uuid4().hex, str(reply.get("model", "")))
    completion["choices"] = [{"index": 0, "message": message.to_dict(),
                              "finish_reason": _finish_reason(reply, message)}]
    completion["usage"] = _usage(reply)
    return completion


def stream_chunks(url: str, body: dict[str, Any], parser: Parser, *, timeout: float = 600.0) -> Iterator[dict[str, Any]]:
    """Post ``body`` with streaming on and yield OpenAI ``chat.completion.chunk`` objects as the
    server's tokens arrive; the last chunk carries the finish reason and the usage."""
    completion_id = "chatcmpl-" + uuid.uuid4().hex
    session = parser.stream()
    last: dict[str, Any] = {}
    with _post(url, {**body, "stream": True}, timeout) as response:
        for raw in response:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            payload = line[len("data:"):].strip()
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


__all__ = ["completion_request", "spell_for_template", "server_prompt", "check_messages", "arguments_value", "send", "stream_chunks",
           "ServerUnreachable", "ServerRefused", "ReplyCut", "MessagesError", "DEFAULT_N_PREDICT"]
