"""A transformers ``response_template`` checked against the chat template it is meant to read.

The application layer over the library for ``response-template --check`` and ``--into`` (which
writes a template into a tokenizer_config.json, every other key kept). The check renders
conversations through the template as analysed (an answer, one call, parallel calls, content before
a call, reasoning, a call with an argument of each JSON type), cuts out the model's part the way a
server sees it, runs transformers' own parser on it (``parse_response`` with the prompt as
``prefix``, and ``ResponseParser`` fed one character at a time), and reports, per case, where the
message it gives differs from what the template wrote. Nothing here derives anything about the
format; transformers is needed only here, and only when a check runs.

    report = check(template, description, response_template)
    print(render_text(report))
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.backends.response_template import CONFIG_KEY, into_tokenizer_config
from analyzer.description import CONTENT_KEPT, Calls, FormatDescription, Reasoning, ThinkingSwitch
from analyzer.errors import InputError, MissingDependency, RenderError
from analyzer.lower import escapes
from analyzer.render.conversation import Renderer
from analyzer.render.session import Session
from analyzer.runtime.shape import escape_name
from analyzer.template import Template

# The transformers releases whose response_template schema and parser the checks pass on (pyproject's
# transformers extra; tests/test_transformers_range.py runs both ends).
TRANSFORMERS_REQUIREMENT = "transformers>=5.16,<5.25"


def _tool(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    # Every parameter has a description: some templates write it without checking it is there.
    described = {key: {**schema, "description": key.capitalize()} for key, schema in properties.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": described, "required": list(required)},
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool(
        "get_weather",
        "Current weather for a place",
        {"location": {"type": "string"}, "days": {"type": "integer"}},
        ("location",),
    ),
    _tool("search", "Search documents", {"query": {"type": "string"}, "filters": {"type": "object"}}, ("query",)),
    _tool("list_files", "List files", {}),
    _tool(
        "configure",
        "Set options",
        {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "enabled": {"type": "boolean"},
            "note": {"type": ["string", "null"]},
            "options": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    ),
    _tool("météo", "Le temps qu'il fait", {"ville": {"type": "string"}, "ключ": {"type": "string"}}, ("ville",)),
    _tool('q"uote', "A name with a quote", {'a"b': {"type": "string"}}),
    _tool(
        "write_file",
        "Write a file",
        {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "mode": {"type": "string", "enum": ["create", "append"]},
        },
        ("path", "content"),
    ),
]
USER = {"role": "user", "content": "What is the weather?"}
# The fields transformers serve takes reasoning from, in its order.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
REASONING = "The user wants the weather, so I look it up."
ANSWER = "It is sunny in Paris."


@dataclass(frozen=True)
class Case:
    """An assistant turn: its content, reasoning and calls ((name, arguments), in order)."""

    content: str | None = None
    reasoning: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


CASES: dict[str, Case] = {
    "answer": Case(content=ANSWER),
    "one call": Case(calls=(("get_weather", {"location": "Paris, France", "days": 3}),)),
    "parallel calls": Case(calls=(("get_weather", {"location": "Paris"}), ("search", {"query": "weather in Lyon"}))),
    "content before a call": Case(content="Let me check that.", calls=(("get_weather", {"location": "Tokyo"}),)),
    "unicode and multi-line": Case(calls=(("search", {"query": 'línea 1\nline "2" <b>&'}),)),
    "nested object": Case(calls=(("search", {"query": "q", "filters": {"tags": ["a", "b"], "year": 2024}}),)),
    "no arguments": Case(calls=(("list_files", {}),)),
    "non-ASCII names": Case(calls=(("météo", {"ville": "Paris", "ключ": "v"}),)),
    "quotes in names": Case(calls=(('q"uote', {'a"b': "1"}),)),
    "raw strings with commas and newlines": Case(
        calls=(("write_file", {"path": "notes/a.txt", "content": "line1, x=2)\nline2", "mode": "append"}),)
    ),
    "reasoning and answer": Case(content=ANSWER, reasoning=REASONING),
    "reasoning and a call": Case(reasoning=REASONING, calls=(("get_weather", {"location": "Oslo"}),)),
    "string argument": Case(calls=(("configure", {"text": "Paris, France"}),)),
    "integer argument": Case(calls=(("configure", {"count": 42}),)),
    "number argument": Case(calls=(("configure", {"ratio": 2.5}),)),
    "boolean argument": Case(calls=(("configure", {"enabled": False}),)),
    "null argument": Case(calls=(("configure", {"note": None}),)),
    "object argument": Case(calls=(("configure", {"options": {"lang": "fr", "depth": 2}}),)),
    "array argument": Case(calls=(("configure", {"tags": ["a", "b"]}),)),
}
_IDS = ("call_Qz7Wk3Jx1abc", "call_Jm4Tp8Rb2xyz")


@dataclass(frozen=True)
class CaseResult:
    """``status``: "agrees", "disagrees" or "n/a"; ``details``: the differences, or why n/a."""

    case: str
    status: str
    details: tuple[str, ...] = ()
    output: str = ""


@dataclass(frozen=True)
class CheckReport:
    template: str
    results: tuple[CaseResult, ...] = field(default=())

    @property
    def disagreements(self) -> tuple[CaseResult, ...]:
        return tuple(result for result in self.results if result.status == "disagrees")

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "results": [
                {"case": r.case, "status": r.status, "details": list(r.details), "output": r.output}
                for r in self.results
            ],
        }


# --------------------------------------------------------------------------- tokenizer configs


def config_path(spec: str) -> Path:
    """The tokenizer_config.json a model folder or a path names."""
    path = Path(spec)
    if path.is_dir():
        return path / "tokenizer_config.json"
    if path.suffix.lower() == ".json":
        return path
    raise InputError(f"{spec}: give a model folder or a tokenizer_config.json")


def write_into(spec: str, response_template: dict[str, Any]) -> Path:
    """``response_template`` written into the tokenizer_config.json ``spec`` names, every other key kept."""
    path = config_path(spec)
    try:
        text = path.read_text(encoding="utf-8")
        path.write_text(into_tokenizer_config(text, response_template, str(path)), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot update: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return path


def shipped_response_template(spec: str) -> dict[str, Any]:
    """The response_template a model folder or tokenizer_config.json ships."""
    path = Path(spec)
    if not path.is_dir() and path.suffix.lower() != ".json":
        raise InputError(
            f"{spec}: a lone template ships no {CONFIG_KEY} (a model folder or tokenizer_config.json "
            "may); give one with --against FILE"
        )
    return read_response_template(config_path(spec), shipped=True)


def read_response_template(path: Path, *, shipped: bool = False) -> dict[str, Any]:
    """The response_template in ``path``: a JSON file holding one, or a tokenizer_config.json holding one
    under its key. ``shipped``: the file is the model's own config (the message says so)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc})") from None
    if isinstance(data, dict) and isinstance(config := data.get(CONFIG_KEY), dict):
        return config
    if isinstance(data, dict) and "fields" in data and not shipped:
        return data
    if shipped:
        raise InputError(f"{path}: the model ships no {CONFIG_KEY}; give one with --against FILE")
    raise InputError(f'{path}: holds no {CONFIG_KEY} (a JSON object with "fields", or a tokenizer config with the key)')


def _transformers() -> Any:
    # Imported without torch, transformers advises on stderr that models are unavailable: true, and
    # nothing to do with reading responses, so a check's output would carry a line that misleads.
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        from transformers.utils import chat_parsing
        from transformers.utils.chat_parsing import response_templates
    except ImportError:
        raise MissingDependency(
            f"checking a response_template needs transformers: pip install '{TRANSFORMERS_REQUIREMENT}'"
        ) from None
    # transformers says where its parser falls back (an anchor missing from the prompt) through logging.
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return chat_parsing, response_templates


def validate(response_template: dict[str, Any], where: str) -> None:
    """transformers' own loader, which checks the schema; a refusal is the user's input error."""
    _, loader = _transformers()
    try:
        loader.load_response_template(response_template)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}: not a valid response_template: {exc}") from None


# --------------------------------------------------------------------------- the check


def check(
    template: Template,
    description: FormatDescription,
    response_template: dict[str, Any],
    *,
    engine: str | None = None,
    cases: tuple[str, ...] = tuple(CASES),
) -> CheckReport:
    """Each case rendered through the template, parsed by transformers with ``response_template``,
    compared with what the template wrote."""
    validate(response_template, description.template.name)
    renderer = Renderer.for_template(template, description, engine=engine)
    results = tuple(_check_case(renderer, description, response_template, name, CASES[name]) for name in cases)
    return CheckReport(description.template.name, results)


def _check_case(
    renderer: Renderer, description: FormatDescription, response_template: dict[str, Any], name: str, case: Case
) -> CaseResult:
    reason = _not_written(description, case)
    if reason:
        return CaseResult(name, "n/a", (reason,))
    try:
        prompt, output = model_output(renderer, description, case)
    except RenderError as exc:
        why = "refuses it" if exc.raised_by_template else "fails to render it"
        return CaseResult(name, "n/a", (f"the template {why}: {exc.message}",))
    wrote = _what_the_template_wrote(output, case, description)
    if isinstance(wrote, str):
        return CaseResult(name, "n/a", (wrote,), output)
    chat_parsing, _ = _transformers()
    try:
        batch = chat_parsing.parse_response(output, response_template, prefix=prompt, tools=TOOLS)
    except Exception as exc:
        return CaseResult(name, "disagrees", (f"transformers raised {type(exc).__name__}: {_first_line(exc)}",), output)
    differences = _differences(wrote, read_message(batch))
    streamed = _streamed(chat_parsing, response_template, prompt, output)
    if streamed != batch:
        differences.append(f"fed one character at a time, transformers gives {_brief(streamed)}, not {_brief(batch)}")
    return CaseResult(name, "disagrees" if differences else "agrees", tuple(differences), output)


def _not_written(description: FormatDescription, case: Case) -> str:
    calls = description.calls
    if case.calls and not isinstance(calls, Calls):
        return "the template writes no tool calls"
    if isinstance(calls, Calls):
        if len(case.calls) > 1 and description.capabilities.parallel_calls.status != "yes":
            return f"parallel calls are not written ({description.capabilities.parallel_calls.status})"
        if case.calls and case.content and calls.content_before_calls not in CONTENT_KEPT:
            return f"content beside calls is not written ({calls.content_before_calls})"
    if case.reasoning and not isinstance(description.reasoning, Reasoning):
        return "the template writes no reasoning"
    return ""


def model_output(renderer: Renderer, description: FormatDescription, case: Case) -> tuple[str, str]:
    """The prompt, and what the model writes for ``case`` after it: the history render past the
    generation prompt, up to the turn's stop (what a template appends after a final message is not
    the model's)."""
    tools = TOOLS
    turn: dict[str, Any] = {"role": "assistant", "content": case.content}
    if case.calls:
        turn["tool_calls"] = [
            {"id": _IDS[i % 2], "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(case.calls)
        ]
    if case.reasoning:
        turn["reasoning_content"] = case.reasoning
    # A client that wants reasoning turns it on where the template has the switch.
    switch = isinstance(description.reasoning, Reasoning) and isinstance(description.reasoning.toggle, ThinkingSwitch)
    thinking = True if case.reasoning and switch else None
    prompt = renderer.render([USER], tools=tools, generation_prompt=True, thinking=thinking)
    full = renderer.render([USER, turn], tools=tools, thinking=thinking)
    output = full[Session.cut(prompt, full) :]
    last = max([output.rfind(text) for text in _written_texts(case, description)] + [0])
    ends = [at + len(stop) for stop in description.turn.stop if stop and (at := output.find(stop, last)) != -1]
    return prompt, output[: min(ends)] if ends else output


def _written_texts(case: Case, description: FormatDescription) -> list[str]:
    names = [written for name, _ in case.calls for written in _written_names(name, description)]
    return [text for text in (case.content, *names) if text]


def _written_names(name: str, description: FormatDescription | None) -> list[str]:
    """The ways the template may write a call's name: as is, JSON-escaped, or escaped as the
    description records it."""
    found = [name, json.dumps(name)[1:-1]]
    if description is not None and isinstance(description.calls, Calls):
        found.append(escape_name(name, escapes(description.calls.name_escaping)))
    return found


def _what_the_template_wrote(
    output: str, case: Case, description: FormatDescription | None = None
) -> dict[str, Any] | str:
    """The message the template's render holds, or why the case cannot be checked (a part of the turn
    that the template leaves out of its render, or a render that is itself broken)."""
    if case.reasoning and case.reasoning not in output:
        return "the template does not write this turn's reasoning"
    if case.content and case.content not in output:
        return "the template does not write this turn's content"
    if any(all(written not in output for written in _written_names(name, description)) for name, _ in case.calls):
        return "the template does not write this turn's calls"
    if description is not None and isinstance(description.calls, Calls) and description.calls.json_call is not None:
        for name, _ in case.calls:
            if '"' in name and f'"{name}"' in output and json.dumps(name) not in output:
                return f"the template writes the name {name!r} into JSON without escaping it, which is no JSON"
    return {
        "content": case.content or "",
        "reasoning_content": case.reasoning or "",
        "tool_calls": [[name, arguments] for name, arguments in case.calls],
    }


def read_message(message: Any) -> dict[str, Any]:
    """transformers' message in the same terms: text stripped, each call as [name, JSON value]."""
    if not isinstance(message, dict):
        return {"content": message, "reasoning_content": "", "tool_calls": []}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            calls.append(["?", call])
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        calls.append([function.get("name"), arguments])
    reasoning = next((message[key] for key in _REASONING_FIELDS if message.get(key) is not None), None)
    return {"content": _text(message.get("content")), "reasoning_content": _text(reasoning), "tool_calls": calls}


def _text(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else ("" if value is None else value)


def _differences(wrote: dict[str, Any], got: dict[str, Any]) -> list[str]:
    found = []
    for key in ("content", "reasoning_content"):
        if got[key] != wrote[key].strip():
            found.append(f"{key}: the template wrote {_brief(wrote[key])}, transformers gives {_brief(got[key])}")
    if got["tool_calls"] != wrote["tool_calls"]:
        found.append(
            f"tool_calls: the template wrote {_brief(wrote['tool_calls'])}, "
            f"transformers gives {_brief(got['tool_calls'])}"
        )
    return found


def _streamed(chat_parsing: Any, response_template: dict[str, Any], prompt: str, output: str) -> Any:
    try:
        parser = chat_parsing.ResponseParser(response_template, prefix=prompt, tools=TOOLS)
        for character in output:
            parser.feed(character)
        return parser.finalize()[0]
    except Exception as exc:
        return f"an error ({type(exc).__name__}: {_first_line(exc)})"


def _brief(value: Any, width: int = 160) -> str:
    text = value if isinstance(value, str) and value.startswith("an error") else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def render_text(report: CheckReport) -> str:
    width = max(len(name) for name in CASES) + 2
    lines = [
        f"{report.template}: {len(report.disagreements)} of "
        f"{sum(r.status != 'n/a' for r in report.results)} cases disagree with what the template wrote"
    ]
    for result in report.results:
        lines.append(f"  {result.case:<{width}}{result.status}")
        lines += [f"      {detail}" for detail in result.details]
    return "\n".join(lines)


__all__ = [
    "CASES",
    "TOOLS",
    "TRANSFORMERS_REQUIREMENT",
    "Case",
    "CaseResult",
    "CheckReport",
    "check",
    "config_path",
    "model_output",
    "read_message",
    "read_response_template",
    "render_text",
    "shipped_response_template",
    "validate",
    "write_into",
]
