"""``template-analyzer serve``: an OpenAI-compatible chat endpoint in front of llama-server.

The template is analysed once, at start-up. Each ``POST /v1/chat/completions`` is then read and
checked (analyzer/chat_api.py), prepared as ``export`` prepares it (our prompt, grammar fields and
parser: analyzer/llama_server.py), posted to the upstream's ``/completion``, and its reply read by
our parser into OpenAI's objects, streamed as server-sent events or whole. ``GET /v1/models`` is the
upstream's; ``GET /health`` says whether the upstream is ready. ``POST /v1/messages`` is Anthropic's
Messages API over the same path: its request is read into a chat request and the reply written back
in Anthropic's shapes, errors included (analyzer/messages_api.py).

Errors are OpenAI error objects: 400 for a request we cannot serve (with the template's own message
when it refuses the conversation), 502 when the upstream fails or answers what is not llama-server's
reply, 504 when it does not answer in time. Once a stream has started its status is sent, so a
failure after that is an error event, as OpenAI's own streams carry them. A client that goes away
cancels its upstream request (the connection to llama-server is closed, which stops the generation).

With ``api_key`` every endpoint but ``/health`` wants ``Authorization: Bearer KEY`` and answers
OpenAI's 401 error object without it; ``upstream_api_key`` is sent to llama-server the same way.
``allowed_origins`` turns CORS on (preflight requests included) for browser clients. A reasoning
budget (``reasoning_budget``, or a request's ``thinking_token_budget``) is kept by stopping the
generation once the model has reasoned that long and asking again with the block closed: see
``llama_server.ReasoningBudget``; such a request is always streamed from the upstream, so that it
can be stopped at the budget.

The app is starlette (ASGI) run by uvicorn, with one httpx client for the upstream; a request's state
lives in its own handler call, so requests run concurrently and share nothing but the connection pool.
Rendering and grammar building are CPU work: they run in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from analyzer import messages_api
from analyzer.chat_api import ChatCall, read_chat_request
from analyzer.description import FormatDescription
from analyzer.errors import (
    AnalyzerError,
    InputError,
    RequestError,
    ServerRefused,
    ServerReplyError,
    ServerTimeout,
    ServerUnreachable,
)
from analyzer.llama_server import (
    NO_BUDGET,
    ChunkStream,
    Completion,
    chat_completion,
    error_text,
    prepare,
    read_reply,
)
from analyzer.template import Template

DEFAULT_TIMEOUT = 600.0
log = logging.getLogger("template_analyzer.serve")


@dataclass(frozen=True)
class ServeConfig:
    """What every request is served with. ``upstream``: llama-server's base URL (see
    ``llama_server.server_url``); ``timeout``: seconds allowed to connect to it, and between two
    parts of its reply (a long generation that keeps streaming is never cut). ``api_key``: the key
    clients must send (None: any client is served); ``upstream_api_key``: the key sent to the
    upstream; ``served_model_name``: the model ``/v1/models`` lists and every reply names (None:
    the upstream's list, and the model each request names, else the template's name);
    ``allowed_origins``: the origins browsers may call from ("*": any; none: no CORS headers);
    ``default_template_kwargs``: template variables a request's own ``chat_template_kwargs`` add to
    or override; ``reasoning_budget``: tokens of reasoning a request gets unless it says otherwise
    (-1: no limit)."""

    template: Template
    description: FormatDescription
    upstream: str
    engine: str | None = None
    tool_format: str = "auto"
    timeout: float = DEFAULT_TIMEOUT
    api_key: str | None = None
    upstream_api_key: str | None = None
    served_model_name: str | None = None
    allowed_origins: tuple[str, ...] = ()
    default_template_kwargs: dict[str, Any] = field(default_factory=dict)
    reasoning_budget: int = NO_BUDGET


# --------------------------------------------------------------------------- errors as OpenAI's objects


def error_body(message: str, kind: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(status: int, message: str, *, param: str | None = None, code: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(error_body(message, kind, param=param, code=code), status_code=status)


def upstream_failure(exc: AnalyzerError) -> tuple[int, str]:
    """The HTTP status and error code a failure at the upstream gets. A 4xx from llama-server is a
    request it refuses (a prompt longer than its context): the client's to fix, so passed on."""
    if isinstance(exc, ServerTimeout):
        return 504, "upstream_timeout"
    if isinstance(exc, ServerUnreachable):
        return 502, "upstream_unreachable"
    if isinstance(exc, ServerRefused) and exc.status is not None and 400 <= exc.status < 500:
        return exc.status, "upstream_refused"
    if isinstance(exc, ServerRefused):
        return 502, "upstream_error"
    return 502, "bad_upstream_reply"


def _failure_response(exc: AnalyzerError) -> JSONResponse:
    status, code = upstream_failure(exc)
    return error_response(status, exc.message, code=code)


class _KeyCheck:
    """The API key check in front of the app: a request without ``Authorization: Bearer KEY`` (or
    ``x-api-key: KEY``) gets OpenAI's 401 error object. ``/health`` stays open, for load balancers and
    supervisors, and so do CORS preflight requests, which browsers send without credentials."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.key = key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/health" or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        given = headers.get("x-api-key")
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = token.strip()
        if given is not None and secrets.compare_digest(given.encode(), self.key):
            await self.app(scope, receive, send)
            return
        anthropic = _is_messages_api(scope["path"])
        message = (
            "the API key is not this server's (--api-key)"
            if given is not None
            else "no API key: send it as 'x-api-key: KEY' or 'Authorization: Bearer KEY'"
            if anthropic
            else "no API key: send it as 'Authorization: Bearer KEY'"
        )
        body = (
            messages_api.error_body(401, message)
            if anthropic
            else error_body(message, "invalid_request_error", code="invalid_api_key")
        )
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def _anthropic_error(status: int, message: str) -> JSONResponse:
    return JSONResponse(messages_api.error_body(status, message), status_code=status)


def _anthropic_refusal(status: int, message: str, _param: str | None) -> Response:
    return _anthropic_error(status, message)  # Anthropic's error object names no parameter


def _openai_refusal(status: int, message: str, param: str | None) -> Response:
    return error_response(status, message, param=param)


def _is_messages_api(path: str) -> bool:
    """Whether ``path`` is the Anthropic Messages API's, whose errors are Anthropic's objects."""
    return path == "/v1/messages" or path.startswith("/v1/messages/")


async def _unexpected(request: Request, exc: Exception) -> Response:
    # The traceback goes to the server's log (uvicorn prints it); the client gets one line.
    message = f"internal error: {type(exc).__name__}: {exc}"
    if _is_messages_api(request.url.path):
        return _anthropic_error(500, message)
    return error_response(500, message, code="internal_error")


# --------------------------------------------------------------------------- the upstream


@contextlib.contextmanager
def _reading(target: str, timeout: float) -> Iterator[None]:
    """What can go wrong while the upstream's reply arrives, as our errors."""
    try:
        yield
    except httpx.TimeoutException:
        raise ServerTimeout(f"{target}: the reply stalled for more than {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ServerReplyError(f"{target}: the reply broke off: {exc or type(exc).__name__}") from None


class _Service:
    """The endpoints, over one config and (while the app runs) one httpx client."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.started = int(time.time())
        self._client: httpx.AsyncClient | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        timeout = httpx.Timeout(self.config.timeout)
        # No keep-alive upstream: llama-server gives each open connection one of its few HTTP threads
        # (by default its slots + 2) until the connection closes, so connections kept open by a busy
        # pool starve every request beyond them. Closed after each reply, the extra requests wait in
        # its accept queue and are served in turn.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        key = self.config.upstream_api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers) as client:
            self._client = client
            yield
        self._client = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            raise RuntimeError("the app is used outside its lifespan: no upstream client")
        return self._client

    @property
    def completion_url(self) -> str:
        return self.config.upstream + "/completion"

    # ------------------------------------------------------------------ endpoints

    async def _get_upstream(self, path: str, *, timeout_status: int, down_status: int) -> httpx.Response | Response:
        """The upstream's reply to a GET of ``path``, or the error response for its failing to answer."""
        target = self.config.upstream + path
        try:
            return await self.client.get(target)
        except httpx.TimeoutException:
            message = f"{target}: no answer within {self.config.timeout:g} s"
            return error_response(timeout_status, message, code="upstream_timeout")
        except httpx.HTTPError as exc:
            message = f"{target}: no llama-server answered: {exc}"
            return error_response(down_status, message, code="upstream_unreachable")

    async def health(self, request: Request) -> Response:
        response = await self._get_upstream("/health", timeout_status=503, down_status=503)
        if isinstance(response, Response):
            return response
        if response.status_code != 200:
            reason = error_text(response.content, response.reason_phrase)
            message = f"{response.request.url}: HTTP {response.status_code}: {reason}"
            return error_response(503, message, code="upstream_not_ready")
        return JSONResponse({"status": "ok", "template": self.config.template.name, "upstream": self.config.upstream})

    async def models(self, request: Request) -> Response:
        name = self.config.served_model_name
        if name:
            model = {"id": name, "object": "model", "created": self.started, "owned_by": "template-analyzer"}
            return JSONResponse({"object": "list", "data": [model]})
        response = await self._get_upstream("/v1/models", timeout_status=504, down_status=502)
        if isinstance(response, Response):
            return response
        try:
            listed = response.json()
        except ValueError:
            return error_response(502, f"{response.request.url}: the reply is not JSON", code="bad_upstream_reply")
        status = response.status_code if response.status_code < 500 else 502
        return JSONResponse(listed, status_code=status)

    async def chat(self, request: Request) -> Response:
        read = await self._read(request, read_chat_request, _openai_refusal)
        if isinstance(read, Response):
            return read
        call, completion = read
        model = self._model(call)
        try:
            if call.stream:
                chunks = ChunkStream(self.completion_url, completion, model=model, include_usage=call.include_usage)
                return await self._stream(completion, chunks, _ChatEvents())
            return await self._complete(request, completion, model, lambda chat, _reply: chat)
        except (ServerUnreachable, ServerRefused, ServerReplyError) as exc:
            return _failure_response(exc)

    async def _read(
        self, request: Request, read: Callable[..., ChatCall], refuse: Callable[[int, str, str | None], Response]
    ) -> tuple[ChatCall, Completion] | Response:
        """A request read (by ``read``: the chat or the Messages API's reader) and prepared, or its 400
        in the API's own error shape (``refuse``). Everything here depends only on the request and the
        one template: the client's to fix, and the message is the template's own when it refuses the
        conversation."""
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return refuse(400, f"the request body is not JSON: {exc}", None)
        config = self.config
        try:
            call = read(
                body,
                tool_format=config.tool_format,
                default_template_kwargs=config.default_template_kwargs,
                reasoning_budget=config.reasoning_budget,
            )
            return call, await self._prepare(call)
        except AnalyzerError as exc:
            return refuse(400, exc.message, exc.param if isinstance(exc, RequestError) else None)

    async def messages(self, request: Request) -> Response:
        """Anthropic's Messages API, translated onto the chat path (analyzer/messages_api.py)."""
        read = await self._read(request, messages_api.read_messages_request, _anthropic_refusal)
        if isinstance(read, Response):
            return read
        call, completion = read
        model = self._model(call)
        stops = call.request.stop
        try:
            if call.stream:
                chunks = ChunkStream(self.completion_url, completion, model=model)
                return await self._stream(completion, chunks, messages_api.MessageEvents(model, stops, chunks))
            return await self._complete(
                request, completion, model, lambda chat, reply: messages_api.message_object(chat, reply, stops)
            )
        except (ServerUnreachable, ServerRefused, ServerReplyError) as exc:
            return _anthropic_error(upstream_failure(exc)[0], exc.message)

    async def count_tokens(self, request: Request) -> Response:
        """Anthropic's ``/v1/messages/count_tokens``: the tokens of the prompt the request would send,
        as the upstream's ``/tokenize`` counts them (with the BOS ``/completion`` adds, where the
        vocabulary asks for one)."""
        read = await self._read(
            request, functools.partial(messages_api.read_messages_request, counting=True), _anthropic_refusal
        )
        if isinstance(read, Response):
            return read
        _call, completion = read
        target = self.config.upstream + "/tokenize"
        try:
            response = await self.client.post(target, json={"content": completion.body["prompt"], "add_special": True})
        except httpx.TimeoutException:
            return _anthropic_error(504, f"{target}: no answer within {self.config.timeout:g} s")
        except httpx.HTTPError as exc:
            return _anthropic_error(502, f"{target}: no llama-server answered: {exc or type(exc).__name__}")
        if response.status_code != 200:
            reason = error_text(response.content, response.reason_phrase)
            return _anthropic_error(502, f"{target}: HTTP {response.status_code}: {reason}")
        try:
            tokens = response.json().get("tokens")
        except (ValueError, AttributeError):
            tokens = None
        if not isinstance(tokens, list):
            return _anthropic_error(502, f"{target}: the reply is not llama-server's tokens")
        return JSONResponse({"input_tokens": len(tokens)})

    async def _prepare(self, call: ChatCall) -> Completion:
        config = self.config
        return await anyio.to_thread.run_sync(
            functools.partial(prepare, config.template, config.description, call.request, engine=config.engine)
        )

    def _model(self, call: ChatCall) -> str:
        """The name every reply carries, chunks included, from the first."""
        return self.config.served_model_name or call.model or self.config.template.name

    # ------------------------------------------------------------------ one request

    async def _open(self, body: dict[str, Any]) -> httpx.Response:
        """The upstream's response to ``body``, its status checked, its body not yet read."""
        target = self.completion_url
        try:
            response = await self.client.send(self.client.build_request("POST", target, json=body), stream=True)
        except httpx.TimeoutException:
            raise ServerTimeout(f"{target}: no answer within {self.config.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"{target}: no llama-server answered: {exc or type(exc).__name__}") from None
        if response.status_code != 200:
            try:
                data = await response.aread()
            except httpx.HTTPError:
                data = b""
            finally:
                await response.aclose()
            message = error_text(data, response.reason_phrase)
            raise ServerRefused(f"{target}: HTTP {response.status_code}: {message}", status=response.status_code)
        return response

    async def _fetch(self, completion: Completion, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The ``chat.completion``, and the upstream's reply (its last event, when streamed)."""
        if completion.budget is not None:
            # Read as a stream all the same: the generation must be stopped where the budget runs out.
            chunks = ChunkStream(self.completion_url, completion, model=model)
            response = await self._open(_streamed(_first_body(completion)))
            async for _chunk in self._generate(response, completion, chunks):
                pass
            return chunks.completion(), chunks.last
        response = await self._open({**completion.body, "stream": False})
        try:
            with _reading(self.completion_url, self.config.timeout):
                data = await response.aread()
        finally:
            await response.aclose()
        reply = read_reply(self.completion_url, data)
        return chat_completion(completion, reply, model=model), reply

    async def _complete(
        self,
        request: Request,
        completion: Completion,
        model: str,
        answer: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
    ) -> Response:
        """The whole reply (``answer`` of the chat completion and the upstream's reply), unless the
        client goes away first: then the upstream request is cancelled (its connection closed) and
        nobody is answered."""
        work = asyncio.ensure_future(self._fetch(completion, model))
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work, gone):
                task.cancel()
            await asyncio.gather(work, gone, return_exceptions=True)
        if work.cancelled():
            log.info("the client went away: its upstream request is cancelled")
            return Response(status_code=499)
        chat, reply = work.result()
        return JSONResponse(answer(chat, reply))

    async def _stream(self, completion: Completion, chunks: ChunkStream, writer: _EventWriter) -> Response:
        # The upstream is asked before answering, so that its failure still gets its own status.
        response = await self._open(_streamed(_first_body(completion)))
        return StreamingResponse(
            self._events(response, completion, chunks, writer),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _events(
        self, response: httpx.Response, completion: Completion, chunks: ChunkStream, writer: _EventWriter
    ) -> AsyncIterator[str]:
        """The chunks as ``writer``'s server-sent events, then its closing ones; a failure on the way
        is an error event."""
        try:
            async for chunk in self._generate(response, completion, chunks):
                for event in writer.chunk(chunk):
                    yield event
        except (ServerUnreachable, ServerRefused, ServerReplyError) as exc:
            yield writer.error(exc)
            return
        for event in writer.finish():
            yield event

    async def _generate(
        self, response: httpx.Response, completion: Completion, chunks: ChunkStream
    ) -> AsyncIterator[dict[str, Any]]:
        """The chunks of the upstream's streamed reply (``response``, open, to ``_first_body``), then
        the closing ones. Where the reasoning budget runs out inside the block, the request is stopped,
        the block's close is read into the reply, and the request that goes on from there is streamed
        in turn. Cancelled (the client went away), the upstream connection is closed all the same."""
        budget = completion.budget
        body = _first_body(completion)
        if budget is not None and body is not completion.body:  # a budget of 0 the prompt's block starts with
            for chunk in chunks.go_on(budget.closing("")):
                yield chunk
            budget = None
        limit = completion.body.get("n_predict", NO_BUDGET)
        try:
            while True:
                cut = False
                with _reading(self.completion_url, self.config.timeout):
                    async for line in response.aiter_lines():
                        for chunk in chunks.line(line):
                            yield chunk
                        if chunks.ended:
                            break
                        if (
                            budget is not None
                            and (limit < 0 or chunks.tokens < limit)
                            and budget.spent(chunks.text, chunks.tokens)
                        ):
                            cut = True
                            break
                if not cut or budget is None:
                    break
                with anyio.CancelScope(shield=True):
                    await response.aclose()  # stops the generation: the budget is spent
                log.info(
                    "reasoning budget of %d tokens spent: the block is closed and the request goes on", budget.tokens
                )
                text, spent = chunks.text, chunks.tokens
                for chunk in chunks.go_on(budget.closing(text)):
                    yield chunk
                response = await self._open(_streamed(budget.continuation(body, text, spent)))
                budget = None
            for chunk in chunks.closing():
                yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


class _EventWriter(Protocol):
    """How a stream's chunks are written as server-sent events: per chunk, at the end, on a failure."""

    def chunk(self, chunk: dict[str, Any]) -> list[str]: ...

    def finish(self) -> list[str]: ...

    def error(self, exc: AnalyzerError) -> str: ...


class _ChatEvents:
    """OpenAI's: each chunk one event, then ``[DONE]``."""

    def chunk(self, chunk: dict[str, Any]) -> list[str]:
        return [_event(chunk)]

    def finish(self) -> list[str]:
        return ["data: [DONE]\n\n"]

    def error(self, exc: AnalyzerError) -> str:
        _, code = upstream_failure(exc)
        return _event(error_body(exc.message, "server_error", code=code))


def _first_body(completion: Completion) -> dict[str, Any]:
    """The body of a reply's first request: the completion's, or where a budget of 0 meets a block the
    prompt opened, the one that starts with the block closed."""
    budget = completion.budget
    if budget is not None and budget.tokens == 0 and budget.opened_by_prompt:
        return budget.continuation(completion.body, "", 0)
    return completion.body


def _streamed(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "stream": True}


async def _disconnected(request: Request) -> None:
    """Returns when the client closes its connection (its body has been read: nothing else arrives)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


# --------------------------------------------------------------------------- the app and its server


def create_app(config: ServeConfig) -> Starlette:
    service = _Service(config)
    middleware = []
    if config.allowed_origins:
        # Outermost, so that preflight requests are answered before the key check, and every answer
        # (a 401 too) carries the headers a browser needs to read it.
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.allowed_origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["*"],
            )
        )
    if config.api_key:
        middleware.append(Middleware(_KeyCheck, key=config.api_key))
    return Starlette(
        routes=[
            Route("/v1/chat/completions", service.chat, methods=["POST"]),
            Route("/v1/messages", service.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", service.count_tokens, methods=["POST"]),
            Route("/v1/models", service.models, methods=["GET"]),
            Route("/health", service.health, methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={Exception: _unexpected},
        lifespan=service.lifespan,
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, or one line saying why there cannot be one (a port in use, a bad host).

    Made with the TCP protocol named: asyncio turns Nagle's algorithm off only on such sockets, and
    with it on, a keep-alive client waits for the delayed ACK (40 ms) between a reply's head and body."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        sock = socket.socket(family, kind, protocol)
    except OSError as exc:
        raise InputError(f"{host}:{port}: cannot listen: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InputError(f"{host}:{port}: cannot listen: {exc.strerror or exc}") from None
    return sock


def server(config: ServeConfig, *, log_level: str = "info") -> uvicorn.Server:
    """A uvicorn server for the app; ``run(sockets=[sock])`` serves until interrupted."""
    return uvicorn.Server(
        uvicorn.Config(create_app(config), log_level=log_level, timeout_graceful_shutdown=5, lifespan="on")
    )


def tool_calls_label(description_format: str, tool_format: str) -> str:
    """How a server's tool calls are written, for its start-up line."""
    if tool_format in ("json", "fenced"):
        return f"prompted {tool_format} tool calls"
    if description_format == "none":
        return "no tool format of its own: prompted json tool calls"
    return f"{description_format} tool calls"


def run(
    config: ServeConfig, host: str, port: int, *, log_level: str = "info", announce: Callable[[str], None] = print
) -> None:
    """Serve until interrupted; ``announce`` is told where, once the port is open."""
    sock = listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    announce(
        f"serving {config.template.name} ({tool_calls_label(config.description.format, config.tool_format)}) at "
        f"http://{shown}:{bound_port}/v1 in front of {config.upstream}"
    )
    server(config, log_level=log_level).run(sockets=[sock])


__all__ = ["DEFAULT_TIMEOUT", "ServeConfig", "create_app", "error_body", "listen", "run", "server", "upstream_failure"]
