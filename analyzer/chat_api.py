"""An OpenAI ``/v1/chat/completions`` request body, checked and read into a ``ChatRequest``.

Every field a client may send is checked here, before anything is rendered, so that a bad request
is one ``RequestError`` naming the field (an HTTP 400 for ``serve``). Fields llama-server's
``/completion`` takes under the same name (temperature, top_p, seed, penalties, and its own
samplers: top_k, min_p, dry_*, xtc_*, mirostat...) pass through as they are; fields that change what
the model is asked for and that we cannot honour (``n`` above 1, a ``response_format`` other than
text, audio) are refused rather than ignored. Fields of OpenAI's that change nothing in the reply's
content (``user``, ``metadata``, ``store``...) are ignored, as OpenAI-compatible servers do; any
other field is refused, naming it, so that a misspelt or unsupported option is never dropped in
silence."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from analyzer.errors import InputError, RequestError
from analyzer.llama_server import NO_BUDGET, ChatRequest
from analyzer.runtime.schema import schema_problem
from analyzer.tools import declared_tools

# No limit from the client: llama-server's own (-1: until the model ends, or the context is full).
UNLIMITED = -1
_NUMBERS = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}


# llama-server's own /completion fields (its request schema) that choose how tokens are sampled or
# how the request runs, passed as they are, with the JSON kind each must have. The range of each is
# llama-server's to check: it answers a 400, which is passed on.
LLAMA_SERVER_FIELDS: dict[str, str] = {
    "top_k": "int",
    "min_p": "number",
    "top_n_sigma": "number",
    "typical_p": "number",
    "xtc_probability": "number",
    "xtc_threshold": "number",
    "dynatemp_range": "number",
    "dynatemp_exponent": "number",
    "repeat_last_n": "int",
    "repeat_penalty": "number",
    "dry_multiplier": "number",
    "dry_base": "number",
    "dry_allowed_length": "int",
    "dry_penalty_last_n": "int",
    "dry_sequence_breakers": "strings",
    "mirostat": "int",
    "mirostat_tau": "number",
    "mirostat_eta": "number",
    "adaptive_target": "number",
    "adaptive_decay": "number",
    "min_keep": "int",
    "samplers": "samplers",
    "ignore_eos": "bool",
    "n_keep": "int",
    "n_cache_reuse": "int",
    "cache_prompt": "bool",
    "t_max_predict_ms": "int",
    "id_slot": "int",
    "lora": "objects",
}
# OpenAI's fields that change nothing in the reply's content: accepted and ignored.
IGNORED_FIELDS = frozenset(
    {"user", "metadata", "store", "service_tier", "prompt_cache_key", "safety_identifier", "prediction"}
)
# The fields read below (OpenAI's, vLLM's thinking_token_budget, and llama-server's chat_template_kwargs).
READ_FIELDS = frozenset(
    {
        "messages",
        "model",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "logit_bias",
        "chat_template_kwargs",
        "reasoning_effort",
        "thinking_token_budget",
        "n",
        "response_format",
        "logprobs",
        "top_logprobs",
        "modalities",
        "audio",
        "functions",
        "function_call",
        "web_search_options",
        "verbosity",
        *_NUMBERS,
    }
)

# What the request itself renders: a template variable may not stand in for it.
_RESERVED = frozenset({"messages", "tools", "add_generation_prompt"})


@dataclass(frozen=True)
class ChatCall:
    """One chat request as ``serve`` runs it: what to ask the model, and how to answer the client.
    ``model``: the model the client named ("" when none)."""

    request: ChatRequest
    model: str
    stream: bool
    include_usage: bool


def read_chat_request(
    body: object,
    *,
    tool_format: str = "auto",
    default_template_kwargs: dict[str, Any] | None = None,
    reasoning_budget: int = NO_BUDGET,
) -> ChatCall:
    """The request ``body`` as ``serve`` runs it. ``default_template_kwargs``: template variables every
    request gets unless its own ``chat_template_kwargs`` set them; ``reasoning_budget``: the tokens of
    reasoning a request gets unless its ``thinking_token_budget`` says otherwise (-1: no limit)."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    _refuse_unknown(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError("messages must be a non-empty list of message objects", param="messages")
    tools = _tools(body.get("tools"))
    tool_choice = _tool_choice(body.get("tool_choice"), tools)
    parallel = _flag(body, "parallel_tool_calls", True)
    stream = _flag(body, "stream", False)
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestError("stream_options must be an object", param="stream_options")
    include_usage = bool(options and _flag(options, "include_usage", False, where="stream_options."))
    own = body.get("chat_template_kwargs")
    if own is not None and not isinstance(own, dict):
        raise RequestError("chat_template_kwargs must be an object", param="chat_template_kwargs")
    effort = body.get("reasoning_effort")
    if effort is not None and not isinstance(effort, str):
        raise RequestError("reasoning_effort must be a string", param="reasoning_effort")
    # The template reads reasoning_effort as a variable where it has one (gpt-oss), as llama-server gives it.
    named = {"reasoning_effort": effort} if effort is not None else {}
    thinking, template_kwargs = template_kwargs_of({**(default_template_kwargs or {}), **named, **(own or {})})
    _refuse_unsupported(body)
    model = body.get("model")
    request = ChatRequest(
        messages,
        tools,
        tool_choice=tool_choice,
        parallel=parallel,
        n_predict=_max_tokens(body),
        thinking=thinking,
        tool_format=tool_format,
        stop=_stop(body.get("stop")),
        sampling=_sampling(body),
        template_kwargs=template_kwargs,
        reasoning_budget=_budget(body, reasoning_budget),
    )
    return ChatCall(request, model if isinstance(model, str) else "", stream, include_usage)


def _tools(tools: object) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise RequestError("tools must be a list of tool objects", param="tools")
    if not tools:
        return []
    for number, tool in enumerate(tools):
        if tool.get("type", "function") != "function":
            raise RequestError(f"tools[{number}]: type {tool.get('type')!r} is not 'function'", param="tools")
    try:
        declared = declared_tools(tools)
    except InputError as exc:
        raise RequestError(f"tools: {exc.message}", param="tools") from None
    names = [tool.name for tool in declared]
    for number, tool in enumerate(declared):
        problem = schema_problem(tool.parameters)
        if problem:
            raise RequestError(f"tools[{number}] {tool.name!r}: parameters: {problem}", param="tools")
        if names.count(tool.name) > 1:
            raise RequestError(f"tools: {tool.name!r} is declared twice", param="tools")
    return tools


def _tool_choice(choice: object, tools: list[dict[str, Any]]) -> str:
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice not in ("auto", "required", "none"):
            raise RequestError(f"tool_choice {choice!r} is none of auto, required, none", param="tool_choice")
        name = choice
    else:
        function = choice.get("function") if isinstance(choice, dict) else None
        named = function.get("name") if isinstance(function, dict) else None
        if (
            not isinstance(choice, dict)
            or not isinstance(named, str)
            or not named
            or choice.get("type", "function") != "function"
        ):
            raise RequestError(
                'tool_choice must be "auto", "required", "none" or {"type": "function", "function": {"name": ...}}',
                param="tool_choice",
            )
        name = named
        declared = [tool["function"]["name"] for tool in tools]
        if name not in declared:
            listed = ", ".join(declared) or "no tools"
            raise RequestError(
                f"tool_choice names {name!r}, which is not a declared tool ({listed})", param="tool_choice"
            )
    if name == "required" and not tools:
        raise RequestError("tool_choice 'required' needs tools", param="tool_choice")
    return name


def _flag(body: dict[str, Any], key: str, default: bool, *, where: str = "") -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"{where}{key} must be true or false, not {json.dumps(value)[:40]}", param=where + key)
    return value


def _max_tokens(body: dict[str, Any]) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RequestError(f"{key} must be a whole number of at least 1", param=key)
        return value
    return UNLIMITED


def _stop(stop: object) -> tuple[str, ...]:
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(word, str) and word for word in stop):
        raise RequestError("stop must be a string or a list of non-empty strings", param="stop")
    return tuple(stop)


def _sampling(body: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, (low, high) in _NUMBERS.items():
        value = body.get(key)
        if value is None:
            continue
        if not _number(value) or not low <= value <= high:
            raise RequestError(f"{key} must be a number from {low:g} to {high:g}", param=key)
        fields[key] = value
    seed = body.get("seed")
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RequestError("seed must be a whole number", param="seed")
        fields["seed"] = seed
    bias = body.get("logit_bias")
    if bias is not None:
        fields["logit_bias"] = _logit_bias(bias)
    for key, kind in LLAMA_SERVER_FIELDS.items():
        value = body.get(key)
        if value is None:
            continue
        if not _of_kind(value, kind):
            raise RequestError(f"{key} must be {_KINDS[kind]}, not {json.dumps(value)[:40]}", param=key)
        fields[key] = value
    return fields


_KINDS = {
    "number": "a number",
    "int": "a whole number",
    "bool": "true or false",
    "strings": "a list of strings",
    "samplers": "a list of sampler names or a string of sampler letters",
    "objects": "a list of objects",
}


def _of_kind(value: object, kind: str) -> bool:
    if kind == "number":
        return _number(value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "objects":
        return isinstance(value, list) and all(isinstance(item, dict) for item in value)
    if kind == "samplers" and isinstance(value, str):
        return True
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _budget(body: dict[str, Any], default: int) -> int:
    """The request's ``thinking_token_budget`` (vLLM's name): tokens of reasoning before serve closes
    the block; -1 for none; absent, the server's default."""
    value = body.get("thinking_token_budget")
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < NO_BUDGET:
        raise RequestError(
            "thinking_token_budget must be a whole number of tokens (0 or more; -1: no limit)",
            param="thinking_token_budget",
        )
    return value


def _refuse_unknown(body: dict[str, Any]) -> None:
    for key in body:
        if key not in READ_FIELDS and key not in IGNORED_FIELDS and key not in LLAMA_SERVER_FIELDS:
            raise RequestError(
                f"unknown field {key!r}: serve takes OpenAI's chat fields and llama-server's sampling fields "
                "(the prompt, grammar and length are its own)",
                param=key,
            )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _logit_bias(bias: object) -> list[list[int | float]]:
    """OpenAI's ``{"token id": bias}`` as the ``[[id, bias]]`` list llama-server reads."""
    if not isinstance(bias, dict):
        raise RequestError("logit_bias must be an object of token ids to numbers", param="logit_bias")
    pairs: list[list[int | float]] = []
    for token, value in bias.items():
        if not token.isdigit() or not _number(value) or not -100 <= value <= 100:
            raise RequestError(
                f"logit_bias: {token!r}: keys must be token ids and values numbers from -100 to 100", param="logit_bias"
            )
        pairs.append([int(token), value])
    return pairs


def template_kwargs_of(kwargs: object) -> tuple[bool | None, dict[str, Any]]:
    """``chat_template_kwargs`` read: the thinking switch it sets (``enable_thinking``), and the other
    template variables."""
    if kwargs is None:
        return None, {}
    if not isinstance(kwargs, dict):
        raise RequestError("chat_template_kwargs must be an object", param="chat_template_kwargs")
    rest = dict(kwargs)
    taken = sorted(_RESERVED & set(rest))
    if taken:
        raise RequestError(
            f"chat_template_kwargs cannot set {', '.join(taken)}: the request's own fields do",
            param="chat_template_kwargs",
        )
    thinking = rest.pop("enable_thinking", None)
    if thinking is not None and not isinstance(thinking, bool):
        raise RequestError("chat_template_kwargs.enable_thinking must be true or false", param="chat_template_kwargs")
    return thinking, rest


def _refuse_unsupported(body: dict[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        raise RequestError("n: only one choice per request is served", param="n")
    response_format = body.get("response_format")
    if response_format is not None and (
        not isinstance(response_format, dict) or response_format.get("type", "text") != "text"
    ):
        raise RequestError(
            "response_format: only text replies are served (tools give structured output)", param="response_format"
        )
    if body.get("logprobs") or body.get("top_logprobs"):
        raise RequestError("logprobs are not served", param="logprobs")
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise RequestError("modalities: only text replies are served", param="modalities")
    for key, why in (
        ("audio", "audio replies are not served"),
        ("functions", "the deprecated functions are not served: declare tools"),
        ("function_call", "the deprecated function_call is not served: use tool_choice"),
        ("web_search_options", "web search is not served"),
        ("verbosity", "verbosity is not served"),
    ):
        if body.get(key) is not None:
            raise RequestError(f"{key}: {why}", param=key)


__all__ = [
    "IGNORED_FIELDS",
    "LLAMA_SERVER_FIELDS",
    "READ_FIELDS",
    "UNLIMITED",
    "ChatCall",
    "read_chat_request",
    "template_kwargs_of",
]
