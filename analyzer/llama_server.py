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

import http.client
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
from analyzer.backends.parser import Parser
from analyzer.backends.prompted import prompted
from analyzer.choices import DEFAULT_N_PREDICT, TOOL_FORMATS
from analyzer.description import FormatDescription
from analyzer.errors import (
    ConversationError,
    InputError,
    ServerRefused,
    ServerReplyError,
    ServerTimeout,
    ServerUnreachable,
)
from analyzer.lower import lowered
from analyzer.render.conversation import Renderer, Spelling, check_conversation, non_text_part
from analyzer.render.sandbox import DEFAULT_BOS
from analyzer.runtime.call_forms import IdForm
from analyzer.runtime.message import Delta, Message
from analyzer.runtime.shape import OutputShape
from analyzer.template import Template

# A reasoning budget of no limit (llama-server's --reasoning-budget -1).
NO_BUDGET = -1


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
    # the client's stop strings, added to the format's own
    stop: tuple[str, ...] = ()
    # /completion fields passed as they are (temperature, top_p, seed, logit_bias)
    sampling: dict[str, Any] = field(default_factory=dict)
    # template variables besides enable_thinking (OpenAI's chat_template_kwargs): the template's own
    # thinking switch may be one of them
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    whitespace: str = "exact"  # the grammar's: "exact" (the template's own) or "flexible"
    # tokens of reasoning before the block is closed for the model (NO_BUDGET: no limit); see ReasoningBudget
    reasoning_budget: int = NO_BUDGET


# The fields of a /completion body that apply a grammar (what a continuation replaces).
_GRAMMAR_FIELDS = ("grammar", "grammar_lazy", "grammar_triggers", "unenforced")


@dataclass(frozen=True)
class ReasoningBudget:
    """How a reply's reasoning is cut at ``tokens`` tokens. The generation runs until then; if the
    model is still inside its reasoning block, the request is stopped and asked again with the text so
    far and the close of the block (as the template writes it, and what every turn writes after it)
    appended to the prompt, under ``fields``: the grammar for what follows a closed block (the calls
    the tool choice asks for, with no room for another block). So a required or named tool choice
    ends in a call however long the model would have reasoned.

    Whether the block is open is read from the text: from its start when the prompt opened it
    (``opened_by_prompt``), else once the output opens with the ``opener``, until the ``closer``."""

    tokens: int
    opened_by_prompt: bool
    opener: str
    closer: str
    lead: str  # the whitespace the template writes before the closer
    after: str  # what it writes after the closer's text: the rest of the close and of every turn's start
    fields: dict[str, Any]

    def is_open(self, text: str) -> bool:
        """Whether the reasoning block is open at the end of the output ``text``."""
        start = 0
        if not self.opened_by_prompt:
            stripped = text.lstrip()
            if not stripped.startswith(self.opener):
                return False
            start = len(text) - len(stripped) + len(self.opener)
        return self.closer not in text[start:]

    def spent(self, text: str, tokens: int) -> bool:
        """Whether the budget is spent inside the block after ``text`` (``tokens`` tokens). Not while
        the text ends with the start of the closer: the model may be closing the block itself (where
        the closer is no single token)."""
        if tokens < self.tokens or not self.is_open(text):
            return False
        return not any(text.endswith(self.closer[:size]) for size in range(1, len(self.closer)))

    def closing(self, text: str) -> str:
        """What is written after ``text`` to close its block: the closer, after the whitespace the
        template writes before it unless the text ends with some, then what follows it."""
        lead = "" if text[-1:].isspace() else self.lead
        return lead + self.closer + self.after

    def continuation(self, body: dict[str, Any], text: str, spent: int) -> dict[str, Any]:
        """The /completion body that goes on from ``text`` (``spent`` tokens) with the block closed."""
        rest = {key: value for key, value in body.items() if key not in _GRAMMAR_FIELDS}
        # The body's stops (the client's among them) and preserved tokens (the block's markers too) stay.
        fields = {key: value for key, value in self.fields.items() if key not in ("stop", "preserved_tokens")}
        limit = body.get("n_predict", NO_BUDGET)
        return {
            **rest,
            **fields,
            "prompt": body["prompt"] + text + self.closing(text),
            "n_predict": limit - spent if isinstance(limit, int) and limit > 0 else limit,
        }


@dataclass(frozen=True)
class Completion:
    """A request ready to send: the ``/completion`` body, the parser for its reply, the tool format
    used, what a user should be told about that choice, and the reasoning budget where one applies."""

    body: dict[str, Any]
    parser: Parser
    tool_format: str
    notes: tuple[str, ...] = ()
    budget: ReasoningBudget | None = None


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
    messages = check_conversation(request.messages)
    where = non_text_part(messages)
    if where is not None and (tool_format != "native" or Spelling.from_description(description).content_parts):
        # A template that does not read parts says so itself when the conversation is spelled for it.
        raise ConversationError(
            f"{where}: llama-server's /completion is sent a text prompt, so only text parts are served"
        )
    if tool_format != "native":
        if not request.tools:
            raise InputError(f"the prompted {tool_format} format needs tools")
        if request.template_kwargs:
            names = ", ".join(sorted(request.template_kwargs))
            raise InputError(f"template variables ({names}) cannot be set with the prompted {tool_format} format")
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
        fields = llama_server_fields(setup.grammar, preserved_tokens(setup.shape), setup.shape.stops)
        body = _body(request, server_prompt(template, setup.prompt.text), fields)
        warnings = setup.grammar.warnings() if setup.grammar is not None else ()
        budget = reasoning_budget(setup.shape, request, setup.format.thinking)
        return Completion(body, setup.parser, tool_format, (*notes, *warnings), budget)
    renderer = Renderer.for_template(template, description, engine=engine)
    thinking = request.thinking
    if thinking is None and renderer.switch.variable in request.template_kwargs:
        # The client set the template's own switch (thinking_mode="disabled"): the grammar and the
        # parser must know which way, as if it had asked for enable_thinking.
        value = request.template_kwargs[renderer.switch.variable]
        thinking = True if value == renderer.switch.on else False if value == renderer.switch.off else None
    rendered = renderer.render(
        messages,
        tools=request.tools or None,
        generation_prompt=True,
        thinking=thinking,
        extra=request.template_kwargs or None,
    )
    shape = lowered(description)
    grammar = (
        to_grammar(
            shape,
            request.tools,
            tool_choice=request.tool_choice,
            parallel=request.parallel,
            thinking=thinking,
            whitespace=request.whitespace,
        )
        if request.tools
        else None
    )
    body = _body(
        request, server_prompt(template, rendered), llama_server_fields(grammar, preserved_tokens(shape), shape.stops)
    )
    warnings = grammar.warnings() if grammar is not None else ()
    # Every call gets a fresh id (FreshIds), so a call whose model-written id follows its arguments
    # streams them as they arrive.
    parser = Parser(shape, request.tools, thinking=thinking, fresh_ids=True)
    return Completion(body, parser, "native", (*notes, *warnings), reasoning_budget(shape, request, thinking))


def reasoning_budget(shape: OutputShape, request: ChatRequest, thinking: bool | None) -> ReasoningBudget | None:
    """The request's reasoning budget in ``shape``'s format; None without one, or where the model
    cannot reason (the format has no reasoning block, or the request switched it off)."""
    reasoning = shape.reasoning
    if request.reasoning_budget < 0 or reasoning is None or reasoning.switched_off(thinking):
        return None
    if not reasoning.close or not reasoning.open:
        return None
    # What follows a closed block: the calls alone, as they follow a block in the first request's grammar.
    closed = replace(shape, reasoning=None, prefix=())
    grammar = (
        to_grammar(
            closed,
            request.tools,
            tool_choice=request.tool_choice,
            parallel=request.parallel,
            whitespace=request.whitespace,
        )
        if request.tools
        else None
    )
    close = reasoning.close
    after = close[0].trail + "".join(m.written for m in close[1:]) + "".join(m.written for m in reasoning.after)
    return ReasoningBudget(
        tokens=request.reasoning_budget,
        opened_by_prompt=reasoning.opened_by_prompt(thinking),
        opener=reasoning.open[0].text,
        closer=close[0].text,
        lead=close[0].lead,
        after=after,
        fields=llama_server_fields(grammar, preserved_tokens(shape), shape.stops),
    )


def _body(request: ChatRequest, prompt: str, fields: dict[str, Any]) -> dict[str, Any]:
    body = {**request.sampling, "prompt": prompt, "n_predict": request.n_predict, **fields}
    if request.stop:
        body["stop"] = list(dict.fromkeys([*body.get("stop", []), *request.stop]))
    return body


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


def server_url(url: str) -> str:
    """The server's base URL (``http(s)://HOST[:PORT][/PATH]``, a trailing ``/completion`` taken off);
    anything else is the user's mistake."""
    parts = urllib.parse.urlsplit(url.strip())
    try:
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        raise InputError(f"{url}: the port is not a number from 0 to 65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{url}: not a server URL (expected http://HOST:PORT)")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/completion")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def completion_url(url: str) -> str:
    return server_url(url) + "/completion"


def error_text(data: bytes, fallback: str = "") -> str:
    """The message of an error body llama-server (or any OpenAI-style server) sends, else its text."""
    text = data.decode("utf-8", "replace").strip()
    try:
        error = json.loads(text).get("error", {})
    except (json.JSONDecodeError, AttributeError):
        return glimpse(text) or fallback
    return _error_message(error)


def _error_message(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message", json.dumps(error)))
    return str(error)


def glimpse(text: str | bytes, size: int = 80) -> str:
    """The start of a body on one line, for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 3] + "..."


def read_reply(where: str, data: bytes) -> dict[str, Any]:
    """llama-server's /completion reply (streaming off) from the body's bytes."""
    try:
        reply = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ServerReplyError(f"{where}: the reply is not JSON: {glimpse(data) or 'an empty body'}") from None
    reply = _checked(where, reply)
    if "content" not in reply:
        raise ServerReplyError(f"{where}: the reply has no content: {glimpse(json.dumps(reply))}")
    return reply


def _checked(where: str, reply: object) -> dict[str, Any]:
    """A reply or streamed event that is an object with text content; an error it carries is raised."""
    if not isinstance(reply, dict):
        raise ServerReplyError(f"{where}: the reply is not a JSON object: {glimpse(json.dumps(reply))}")
    if "error" in reply:
        raise ServerRefused(f"{where}: {_error_message(reply['error'])}")
    content = reply.get("content", "")
    if not isinstance(content, str):
        raise ServerReplyError(f"{where}: the reply's content is {json.dumps(content)[:40]}, not text")
    return reply


def _finish_reason(reply: dict[str, Any], message: Message) -> str:
    if reply.get("stop_type") == "limit":
        return "length"
    return "tool_calls" if message.tool_calls else "stop"


def _usage(reply: dict[str, Any]) -> dict[str, int]:
    prompt = _count(reply.get("tokens_evaluated"))
    completion = _count(reply.get("tokens_predicted"))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


_ID_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class FreshIds:
    """A fresh random id of ``form`` (the one the template takes: OpenAI's ``call_...``, Mistral's nine
    letters and digits) for each call of one reply, made the first time the call is seen, so that a
    stream's deltas and its folded message carry the same one.

    Neither the parser's own ids nor the model's are kept: the parser makes an id from the call's
    text (a parse of the same output reads the same), and a model that writes ids writes the same
    ones for the same prompt and seed, so both repeat whenever a call does, across turns and
    requests, and clients that key calls by id take two such calls for one."""

    def __init__(self, form: IdForm) -> None:
        self.form = form
        self._ids: dict[int, str] = {}

    def __call__(self, index: int) -> str:
        if index not in self._ids:
            letters = "".join(secrets.choice(_ID_LETTERS) for _ in range(self.form.generated_length))
            self._ids[index] = self.form.prefix + letters
        return self._ids[index]


def chat_completion(completion: Completion, reply: dict[str, Any], *, model: str = "") -> dict[str, Any]:
    """The OpenAI ``chat.completion`` our parser makes of a /completion reply (see ``read_reply``)."""
    message = completion.parser.parse(reply["content"])
    fields = message.to_dict()
    ids = FreshIds(completion.parser.shape.id_form)
    for index, call in enumerate(fields.get("tool_calls", [])):
        call["id"] = ids(index)
    name = model or str(reply.get("model", ""))
    return _completion_object(
        "chatcmpl-" + uuid.uuid4().hex, name, fields, _finish_reason(reply, message), _usage(reply)
    )


def _completion_object(
    identifier: str, model: str, message: dict[str, Any], finish_reason: str, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": identifier,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    }


class ChunkStream:
    """llama-server's streamed /completion reply, read line by line, made into OpenAI
    ``chat.completion.chunk`` objects: what each ``line`` gives (content, reasoning and call deltas as
    the parser finds them), then ``closing`` (the last deltas, the finish reason, and the usage if
    asked for). ``ended`` turns true at the server's last event; a stream that stops before it is
    cut, and ``closing`` says so. ``text`` is the output read so far, ``tokens`` the tokens it took
    (the server's count where its events carry one, else one per event).

    A reply may be written by two requests (a reasoning budget's: ``ReasoningBudget``): ``go_on``
    reads the text written between them, and the lines of the second request follow; the usage
    counts the first request's prompt and the tokens of both.

    As OpenAI's streams do, the first chunk names the role, with ``content`` null when the reply
    starts with something else (a call): folded together as a client does, the chunks give the
    message ``completion`` gives. Parse errors, not part of OpenAI's shape, come as one ``errors``
    list on the last chunk: clients fold a list given once, not a list that grows."""

    def __init__(self, where: str, completion: Completion, *, model: str = "", include_usage: bool = False) -> None:
        self.where = where
        self.id = "chatcmpl-" + uuid.uuid4().hex
        self.created = int(time.time())
        self.model = model
        self.include_usage = include_usage
        self.session = completion.parser.stream()
        self.ids = FreshIds(completion.parser.shape.id_form)
        self.last: dict[str, Any] = {}
        self.ended = False
        self.text = ""
        self.tokens = 0
        self._before = 0  # the tokens of the request before the one streaming now
        self._prompt_tokens: int | None = None
        self._opened = False
        self._errors: list[dict[str, Any]] = []

    def line(self, text: str) -> list[dict[str, Any]]:
        """The chunks one line of the server's event stream gives (none for a blank or comment line)."""
        text = text.strip()
        if self.ended or not text.startswith("data:"):
            return []
        payload = text[len("data:") :].strip()
        if payload == "[DONE]":
            self.ended = True
            return []
        try:
            event = _checked(self.where, json.loads(payload))
        except json.JSONDecodeError:
            raise ServerReplyError(f"{self.where}: a streamed event is not JSON: {glimpse(payload)}") from None
        self.last = event
        self.ended = event.get("stop") is True
        predicted = event.get("tokens_predicted")
        if isinstance(predicted, int) and not isinstance(predicted, bool):
            self.tokens = self._before + predicted
        elif not self.ended:
            self.tokens += 1
        evaluated = event.get("tokens_evaluated")
        if self._prompt_tokens is None and isinstance(evaluated, int) and not isinstance(evaluated, bool):
            self._prompt_tokens = evaluated
        return self._read(event.get("content") or "")

    def go_on(self, text: str) -> list[dict[str, Any]]:
        """The chunks ``text`` gives, written into the reply between two requests; the next lines are
        the next request's."""
        self.ended = False
        self._before = self.tokens
        return self._read(text)

    def closing(self) -> list[dict[str, Any]]:
        if not self.ended:
            raise ServerReplyError(f"{self.where}: the stream ended before the server's last event: the reply is cut")
        chunks = self._deltas(self.session.finish())
        final: dict[str, Any] = {} if self._opened else {"role": "assistant", "content": ""}
        if self._errors:
            final["errors"] = self._errors
        chunks.append(self._chunk(final, finish_reason=_finish_reason(self.last, self.session.message)))
        if self.include_usage:
            usage = self._chunk({})
            usage["choices"] = []
            usage["usage"] = self.usage()
            chunks.append(usage)
        return chunks

    def usage(self) -> dict[str, int]:
        prompt = self._prompt_tokens if self._prompt_tokens is not None else 0
        return {"prompt_tokens": prompt, "completion_tokens": self.tokens, "total_tokens": prompt + self.tokens}

    def completion(self) -> dict[str, Any]:
        """The ``chat.completion`` the whole stream makes (after ``closing``): the message its chunks fold into."""
        message = self.session.message
        fields = message.to_dict()
        for index, call in enumerate(fields.get("tool_calls", [])):
            call["id"] = self.ids(index)
        return _completion_object(self.id, self.model, fields, _finish_reason(self.last, message), self.usage())

    def _read(self, text: str) -> list[dict[str, Any]]:
        self.text += text
        return self._deltas(self.session.feed(text))

    def _deltas(self, deltas: list[Delta]) -> list[dict[str, Any]]:
        chunks = []
        for delta in deltas:
            fields = delta.to_dict()
            if "error" in fields:
                self._errors.append(fields.pop("error"))
                if not fields:
                    continue
            for call in fields.get("tool_calls", []):
                if "id" in call:
                    call["id"] = self.ids(call["index"])
            if not self._opened:
                self._opened = True
                fields = {"role": "assistant", "content": None, **fields}
            chunks.append(self._chunk(fields))
        return chunks

    def _chunk(self, delta: dict[str, Any], *, finish_reason: str | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model or str(self.last.get("model", "")),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            chunk["usage"] = None  # OpenAI's shape: every chunk has it, null until the last
        return chunk


# --------------------------------------------------------------------------- a blocking client (the CLI's)


def _post(url: str, body: dict[str, Any], timeout: float) -> http.client.HTTPResponse:
    target = completion_url(url)
    request = urllib.request.Request(
        target, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise ServerRefused(
            f"{target}: HTTP {exc.code}: {error_text(exc.read(), str(exc.reason))}", status=exc.code
        ) from None
    except TimeoutError:
        raise ServerTimeout(f"{target}: no answer within {timeout:g} s") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise ServerTimeout(f"{target}: no answer within {timeout:g} s") from None
        raise ServerUnreachable(f"{target}: no llama-server answered: {reason}") from None
    except http.client.HTTPException as exc:
        raise ServerReplyError(f"{target}: the answer is not HTTP: {type(exc).__name__} {exc}".strip()) from None
    return response


@contextmanager
def _reading(target: str, timeout: float) -> Iterator[None]:
    """What can go wrong while a reply's body arrives, as the errors the command line reports."""
    try:
        yield
    except http.client.IncompleteRead as exc:
        raise ServerReplyError(
            f"{target}: the connection closed after {len(exc.partial)} bytes, before the reply's end"
        ) from None
    except TimeoutError:
        raise ServerTimeout(f"{target}: the reply stalled for more than {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise ServerReplyError(f"{target}: the reply broke off: {exc or type(exc).__name__}") from None


def send(url: str, completion: Completion, *, timeout: float = 600.0) -> dict[str, Any]:
    """Post the request and return the OpenAI ``chat.completion`` our parser makes of the reply."""
    target = completion_url(url)
    with _post(url, {**completion.body, "stream": False}, timeout) as response, _reading(target, timeout):
        data = response.read()
    return chat_completion(completion, read_reply(target, data))


def stream_chunks(
    url: str, completion: Completion, *, timeout: float = 600.0, include_usage: bool = True
) -> Iterator[dict[str, Any]]:
    """Post the request with streaming on and yield OpenAI ``chat.completion.chunk`` objects as the
    server's tokens arrive: the deltas (the first naming the role), the finish reason, then
    (``include_usage``) the usage."""
    target = completion_url(url)
    chunks = ChunkStream(target, completion, include_usage=include_usage)
    with _post(url, {**completion.body, "stream": True}, timeout) as response, _reading(target, timeout):
        for raw in response:
            yield from chunks.line(raw.decode("utf-8", "replace"))
            if chunks.ended:
                break
    yield from chunks.closing()


__all__ = [
    "DEFAULT_N_PREDICT",
    "NO_BUDGET",
    "TOOL_FORMATS",
    "ChatRequest",
    "ChunkStream",
    "Completion",
    "FreshIds",
    "ReasoningBudget",
    "chat_completion",
    "completion_url",
    "error_text",
    "glimpse",
    "prepare",
    "read_reply",
    "send",
    "server_prompt",
    "server_url",
    "stream_chunks",
    "tool_format_for",
]
