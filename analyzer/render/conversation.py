"""Rendering a conversation through a template the way it was analysed: the one rendering API.

Real templates expect different inputs for the same conversation (content ``""`` or ``None`` beside
tool calls, arguments as an object or a JSON string, reasoning under a key of their own, ids of a
given shape). A ``Spelling`` names one choice of each; the analysis probes for the one the template
takes and records it in the description, and everything after the analysis spells conversations
with ``Spelling.from_description``: the sentinel conversations of ``variants`` are built with it, and
``Spelling.spell`` rewrites a client's conversation into it.

``Renderer`` is the template as analysed: the engine the analysis used (jinja2 with list mutation
where the analysis had to fall back to it), the variables the analysis had to bind, and the
description's spelling. Everything after the analysis renders through it::

    renderer = Renderer.for_template(template, description)
    prompt = renderer.render(messages, tools=tools, generation_prompt=True, thinking=True)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from analyzer.description import STANDARD_SWITCH, FormatDescription, InputForm, Reasoning, ThinkingSwitch
from analyzer.errors import AnalysisLimitError, ConversationError, RenderError
from analyzer.render.engines import compile_mutable, compile_template
from analyzer.render.sandbox import CompiledTemplate, RenderLimits
from analyzer.runtime.call_forms import ID_FORMS, id_pattern
from analyzer.template import Template

# The key OpenAI-style clients send reasoning under.
CLIENT_REASONING_KEY = "reasoning_content"
# Reasoning may instead be a part of the message's content ({"type": "thinking", "thinking": ...}, as
# Mistral's templates read it): its field is then spelled ``content[type=thinking].thinking``.
_REASONING_PART = re.compile(r"content\[type=(?P<type>[\w-]+)\]\.(?P<key>[\w-]+)")


def reasoning_part_field(part_type: str, key: str) -> str:
    """The reasoning field of a template that reads reasoning as a content part of this type and key."""
    return f"content[type={part_type}].{key}"


def put_reasoning(message: dict[str, Any], field: str, reasoning: Any) -> None:
    """Set ``message``'s reasoning under ``field``: a key of its own, or a content part before its text."""
    part = _REASONING_PART.fullmatch(field)
    if part is None:
        message[field] = reasoning
        return
    content = message.get("content")
    text = [{"type": "text", "text": content}] if content else []
    message["content"] = [
        {"type": part["type"], part["key"]: reasoning},
        *(content if isinstance(content, list) else text),
    ]


# (a client's call id, how many ids were rewritten before it) -> the id to write instead, or None to
# keep it.
RenameId = Callable[[str, int], "str | None"]


def fit_id_form(form_name: str) -> RenameId:
    """Ids rewritten into the form a template takes (Mistral's nine letters and digits), made from the
    client's id so the same id always becomes the same one; ids already of the form are kept."""
    # Imported here: it brings the parser's schema checks, which no analysis needs.
    from analyzer.runtime.calls import generated_id

    form = ID_FORMS[form_name]
    pattern = re.compile(id_pattern(form))

    def rename(old: str, count: int) -> str | None:
        return None if pattern.fullmatch(old) else generated_id(form, count, "", old)

    return rename


@dataclass(frozen=True, slots=True)
class Failed:
    """A render that raised; ``refused`` when the template's own raise_exception did it."""

    message: str
    refused: bool

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Spelling:
    """How a conversation is spelled for the template."""

    content_with_calls: str | None = ""  # content of an assistant message that carries tool calls
    arguments_as_string: bool = False
    id_form: str = "openai"
    reasoning_key: str = CLIENT_REASONING_KEY
    system_role: bool = False  # whether the analysis's conversations open with a system message
    tool_descriptions: bool = True
    content_parts: bool = False  # content given as a list of parts is passed as is (else its text)

    @classmethod
    def from_description(cls, description: FormatDescription) -> Spelling:
        """The spelling the analysis found the template takes, reasoning under the template's own key.
        Conversations open as the analysis's did (no system message)."""
        form = description.input_form
        reasoning = description.reasoning
        key = reasoning.field if isinstance(reasoning, Reasoning) and reasoning.field else CLIENT_REASONING_KEY
        return cls(
            content_with_calls=form.content_with_calls,
            arguments_as_string=form.arguments_as_string,
            id_form=form.id_form,
            reasoning_key=key,
            tool_descriptions=form.tool_descriptions,
            content_parts=description.capabilities.content_parts.status == "yes",
        )

    def input_form(self) -> InputForm:
        """What the description records of this spelling."""
        return InputForm(self.content_with_calls, self.arguments_as_string, self.id_form, self.tool_descriptions)

    def with_(self, **changes: Any) -> Spelling:
        return replace(self, **changes)

    def arguments(self, value: Any) -> Any:
        """Call arguments (a JSON value) as the template takes them: the value, or its JSON text."""
        return json.dumps(value, ensure_ascii=False) if self.arguments_as_string else value

    def spell(self, messages: list[dict[str, Any]], rename_id: RenameId | None = None) -> list[dict[str, Any]]:
        """``messages`` (OpenAI style) spelled this way, as new messages: content given as parts passed
        as is or as its text (``content_as_taken``), reasoning under the template's key, the content of
        a turn with calls, arguments as object or JSON string, and, with ``rename_id``, call ids
        rewritten with the results pointing at their call's new id. Spelling a spelled conversation
        changes nothing."""
        renamed: dict[str, str] = {}
        spelled = []
        for number, message in enumerate(messages, 1):
            if not isinstance(message, dict):
                raise ConversationError(f"message {number} is not an object")
            message = content_as_taken(message, number, parts=self.content_parts)
            if message.get("role") == "assistant":
                if self.reasoning_key != CLIENT_REASONING_KEY and CLIENT_REASONING_KEY in message:
                    put_reasoning(message, self.reasoning_key, message.pop(CLIENT_REASONING_KEY))
                if message.get("tool_calls"):
                    if not message.get("content"):
                        message["content"] = self.content_with_calls
                    message["tool_calls"] = [self._call(call, rename_id, renamed) for call in message["tool_calls"]]
            elif message.get("role") == "tool" and message.get("tool_call_id") in renamed:
                message["tool_call_id"] = renamed[message["tool_call_id"]]
            spelled.append(message)
        return spelled

    def _call(self, call: Any, rename_id: RenameId | None, renamed: dict[str, str]) -> Any:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            return call
        function = dict(call["function"])
        arguments = function.get("arguments")
        if not (self.arguments_as_string and isinstance(arguments, str)):
            function["arguments"] = self.arguments(arguments_value(function))
        call = {**call, "function": function}
        old = call.get("id")
        if rename_id is not None and isinstance(old, str):
            if old not in renamed:
                new = rename_id(old, len(renamed))
                if new is None:
                    return call
                renamed[old] = new
            call["id"] = renamed[old]
        return call


# The content part that holds text, in OpenAI's chat API; every other kind (image_url, input_audio,
# file, refusal) holds something a text prompt cannot.
TEXT_PART = "text"


def content_as_taken(message: dict[str, Any], number: int, *, parts: bool) -> dict[str, Any]:
    """``message`` (the ``number``-th) as a new message whose content the template takes: a list of
    parts as is where the analysis found that the template reads parts (``parts``), else the text of
    its parts joined by newlines (what llama-server and vLLM give such templates). A part other than
    text is then an error naming it: the template would write it as nonsense or not at all."""
    message = dict(message)
    content = message.get("content")
    if parts or not isinstance(content, list):
        return message
    texts = []
    for index, part in enumerate(content, 1):
        text = part.get("text") if isinstance(part, dict) and part.get("type") == TEXT_PART else None
        if not isinstance(text, str):
            raise ConversationError(
                f"message {number}, content part {index}: {_part_kind(part)}: the template takes text only "
                f"(it does not read content parts), so only text parts can be given"
            )
        texts.append(text)
    message["content"] = "\n".join(texts)
    return message


def non_text_part(messages: list[dict[str, Any]]) -> str | None:
    """Where the first content part that is not text is (``message 2, content part 1: an image_url
    part``), or None."""
    for number, message in enumerate(messages, 1):
        content = message.get("content") if isinstance(message, dict) else None
        for index, part in enumerate(content if isinstance(content, list) else [], 1):
            if not isinstance(part, dict) or part.get("type") != TEXT_PART:
                return f"message {number}, content part {index}: {_part_kind(part)}"
    return None


def _part_kind(part: Any) -> str:
    kind = part.get("type") if isinstance(part, dict) else None
    return f"an {kind} part" if isinstance(kind, str) and kind[:1] in "aeiou" else f"a {kind} part"


def check_conversation(messages: Any, *, empty: bool = False) -> list[dict[str, Any]]:
    """A client's conversation: a list of message objects, each with a role, content that is text, a
    list of parts or null, and tool calls that are a list of call objects with a function name;
    non-empty unless ``empty``. A template given anything else renders nonsense (a string's letters
    as calls) or fails deep inside, so each is refused here with what is wrong and where."""
    if not isinstance(messages, list) or not (messages or empty):
        raise ConversationError("messages must be a non-empty JSON list of message objects")
    for number, message in enumerate(messages, 1):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ConversationError(f'message {number} is not an object with a "role"')
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise ConversationError(
                f"message {number}: content must be text, a list of parts or null, not {_json_kind(content)}"
            )
        for index, part in enumerate(content if isinstance(content, list) else [], 1):
            _check_part(part, f"message {number}, content part {index}")
        calls = message.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise ConversationError(
                f"message {number}: tool_calls must be a list of call objects, not {_json_kind(calls)}"
            )
        for index, call in enumerate(calls, 1):
            _check_call(call, f"message {number}, call {index}")
    return messages


def _check_part(part: Any, where: str) -> None:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str) or not part["type"]:
        raise ConversationError(f'{where}: a part must be an object with a "type", not {_json_kind(part)}')
    if part["type"] == TEXT_PART and not isinstance(part.get("text"), str):
        raise ConversationError(f'{where}: a text part needs "text" as a string, not {_json_kind(part.get("text"))}')


def _check_call(call: Any, where: str) -> None:
    if not isinstance(call, dict):
        raise ConversationError(f"{where}: a call must be an object, not {_json_kind(call)}")
    function = call.get("function")
    if not isinstance(function, dict):
        raise ConversationError(f'{where}: "function" must be an object with a name, not {_json_kind(function)}')
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ConversationError(f"{where}: function.name must be a non-empty string, not {_json_kind(name)}")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, (str, dict)):
        raise ConversationError(
            f"{where}: arguments of {name!r} must be an object or a JSON string, not {_json_kind(arguments)}"
        )


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {str: "a string", dict: "an object", list: "a list", int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


def arguments_value(function: dict[str, Any]) -> Any:
    """A call's arguments as a JSON value, whether the client sent a JSON string or the value itself."""
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        raise ConversationError(f"call to {function.get('name')!r}: arguments are not valid JSON") from None


def compile_as_analysed(
    template: Template, description: FormatDescription, engine: str | None = None, limits: RenderLimits | None = None
) -> CompiledTemplate:
    """The template compiled for rendering beside its description: ``engine`` (by default the one the
    analysis used), unless the analysis had to fall back to jinja2 with list mutation, which the
    template then needs."""
    if description.template.engine == "jinja2-mutable":
        return compile_mutable(template, limits)
    return compile_template(template, engine or description.template.engine, limits)


def bound_context(description: FormatDescription) -> dict[str, Any]:
    """The variables the analysis bound so the template renders at all (each to "")."""
    return {name: "" for name in description.bound_variables}


def thinking_switch_of(description: FormatDescription) -> ThinkingSwitch:
    """The variable and values that switch thinking in ``description``'s template: the one the analysis
    found, else ``enable_thinking`` (which a template that reads no switch ignores)."""
    reasoning = description.reasoning
    if isinstance(reasoning, Reasoning) and isinstance(reasoning.toggle, ThinkingSwitch):
        return reasoning.toggle
    return STANDARD_SWITCH


class Renderer:
    """A template as analysed: renders OpenAI-style conversations spelled the way it takes them, call
    ids rewritten into the form it takes unless ``rename_id`` says otherwise."""

    def __init__(
        self, compiled: CompiledTemplate, description: FormatDescription, *, rename_id: RenameId | None = None
    ) -> None:
        self.compiled = compiled
        self.spelling = Spelling.from_description(description)
        self.context = bound_context(description)
        self.switch = thinking_switch_of(description)
        self.rename_id = rename_id if rename_id is not None else fit_id_form(self.spelling.id_form)

    @classmethod
    def for_template(
        cls,
        template: Template,
        description: FormatDescription,
        *,
        engine: str | None = None,
        limits: RenderLimits | None = None,
        rename_id: RenameId | None = None,
    ) -> Renderer:
        """``template`` compiled as analysed (``engine`` defaults to the one the analysis used)."""
        return cls(compile_as_analysed(template, description, engine, limits), description, rename_id=rename_id)

    @property
    def engine(self) -> str:
        return self.compiled.engine

    def spell(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.spelling.spell(messages, self.rename_id)

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        generation_prompt: bool = False,
        thinking: bool | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """The text the template renders for ``messages`` (spelled first); raises ``RenderError``.
        ``thinking`` sets the template's thinking switch; ``extra`` adds or overrides context variables."""
        context = {**self.context, **(extra or {}), **(self.switch.context(thinking) if thinking is not None else {})}
        return self.compiled.render(
            self.spell(messages), tools=tools, add_generation_prompt=generation_prompt, extra=context
        )

    def attempt(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        generation_prompt: bool = False,
        thinking: bool | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str | Failed:
        """``render``, with a failed render returned as ``Failed`` (a finding, not an error)."""
        try:
            return self.render(
                messages, tools=tools, generation_prompt=generation_prompt, thinking=thinking, extra=extra
            )
        except AnalysisLimitError:
            raise  # the work as a whole is over, not this one render
        except RenderError as exc:
            return Failed(exc.message, exc.raised_by_template)


__all__ = [
    "Failed",
    "RenameId",
    "Renderer",
    "Spelling",
    "arguments_value",
    "bound_context",
    "check_conversation",
    "compile_as_analysed",
    "content_as_taken",
    "fit_id_form",
    "non_text_part",
]
