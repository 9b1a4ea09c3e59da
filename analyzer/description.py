"""The format description: what a template does, as data.

One description per template; the parser, the grammar, the audit and the export are all generated
from it. Nodes are frozen, slotted dataclasses with a ``kind`` discriminator; sequences are tuples, so
descriptions hash and compare. ``to_dict`` writes plain JSON values with sorted keys (golden files are
byte-stable) and ``from_dict`` re-creates only the node classes registered here.

Where the renders show nothing, a field holds ``Unknown(reason)``: never ``None``, never a guess.

A call (and an argument, for key/value formats) is a ``Pattern``: literal ``Text`` and ``Field``
slots in the order the template writes them, e.g. ``<tool_call>`` ``{call JSON}`` ``</tool_call>`` or
``<|tool_call_begin|>functions.`` ``{name}`` ``:`` ``{index}`` ``<|tool_call_argument_begin|>`` ``{arguments}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from analyzer.errors import DescriptionError
from analyzer.runtime.call_forms import JsonCall as JsonCall  # a call written as one JSON object: the same in both
from analyzer.runtime.nodes import NodeError, node_from_dict, node_to_dict

# 2: the reasoning toggle is a thinking switch (variable, on, off), no longer the name enable_thinking.
SCHEMA_VERSION = 2


@dataclass(frozen=True, slots=True)
class Unknown:
    """The renders gave no evidence for this field."""

    kind: ClassVar[str] = "unknown"
    reason: str


# --------------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class Text:
    """Literal text the template writes as is."""

    kind: ClassVar[str] = "text"
    text: str


# Fields a pattern can hold. In a call: name, id, index, arguments, call (a whole JSON call object).
# In a key/value argument: key, value.
FIELD_NAMES = ("name", "id", "index", "arguments", "call", "key", "value")


@dataclass(frozen=True, slots=True)
class Field:
    """A slot filled per call or per argument. ``base`` is the first value of an ``index`` field."""

    kind: ClassVar[str] = "field"
    name: str
    base: int = 0


PatternPart = Text | Field
JsonType = Literal["string", "integer", "number", "boolean", "null", "object", "array"]
# The closed vocabularies of the fields below, named so that the detectors can type what they build.
ArgumentSyntax = Literal["raw", "json", "python", "unknown"]
StringEscaping = Literal["none", "json", "python"]
ArgumentOrder = Literal["as given", "sorted"]
IdsWritten = Literal["as given", "generated", "not written"]
# "separate turn": both are written, but as two assistant messages, the turn's stop between them.
# "after the calls": kept, and written after the calls rather than before them (gemma-4).
ContentBeforeCalls = Literal["kept", "after the calls", "dropped", "calls dropped", "separate turn"]
CONTENT_KEPT: tuple[ContentBeforeCalls, ...] = ("kept", "after the calls")
ReasoningScope = Literal["all turns", "turns with tool calls", "turns while thinking is on", "not written in history"]
ResultsJsonContent = Literal["as is", "quoted", "rewritten", "unknown"]
ResultsRenderedAs = Literal["user turn", "own turn", "inside the assistant turn"]
FormatName = Literal["json", "tag-json", "tag-kv", "python", "none", "unknown"]
Pattern = tuple[PatternPart, ...]


def pattern_text(pattern: Pattern) -> str:
    """A one-line picture of a pattern, fields in braces."""
    return "".join(p.text if isinstance(p, Text) else "{" + p.name + "}" for p in pattern)


def literals(pattern: Pattern) -> tuple[str, ...]:
    return tuple(p.text for p in pattern if isinstance(p, Text) and p.text)


# --------------------------------------------------------------------------- names


@dataclass(frozen=True, slots=True)
class Escaping:
    """How the template writes the characters of a name that it does not write as is: (character,
    what it writes for it), e.g. ``('"', "&quot;")``. Characters not listed are written as is."""

    kind: ClassVar[str] = "escaping"
    replaced: tuple[tuple[str, str], ...]


# How a tool's or an argument's name is written: "none" (as is), an ``Escaping``, or ``Unknown``.
NameEscaping = Literal["none"] | Escaping | Unknown


# --------------------------------------------------------------------------- arguments


@dataclass(frozen=True, slots=True)
class JsonArguments:
    """Arguments written as one value: a JSON object, a JSON string holding one, or a Python dict."""

    kind: ClassVar[str] = "json_arguments"
    encoding: Literal["object", "string", "python"]


@dataclass(frozen=True, slots=True)
class ArgumentForm:
    """How one argument of a JSON type is written: a pattern with ``key`` and ``value`` fields, and the
    syntax of the value text ("raw": as is up to the next literal; "json"; "python")."""

    kind: ClassVar[str] = "argument_form"
    json_type: JsonType
    pattern: Pattern
    syntax: ArgumentSyntax


@dataclass(frozen=True, slots=True)
class KeyValueArguments:
    """Arguments written one by one, each by the form for its JSON type, joined by ``separator``."""

    kind: ClassVar[str] = "key_value_arguments"
    separator: str | Unknown
    forms: tuple[ArgumentForm, ...]
    string_escaping: StringEscaping | Unknown  # "none": strings are written raw
    order: ArgumentOrder | Unknown = "as given"  # "sorted": the template sorts arguments by name
    # Text put around a string only when it holds special characters (("<![CDATA[", "]]>")), else ("", "").
    special_string_wrapper: tuple[str, str] = ("", "")
    key_escaping: NameEscaping = "none"  # how argument names are written


Arguments = JsonArguments | KeyValueArguments | Unknown


# --------------------------------------------------------------------------- calls


@dataclass(frozen=True, slots=True)
class CallIds:
    """Where a call id is written and what the template accepts."""

    kind: ClassVar[str] = "call_ids"
    written: IdsWritten  # generated: the template makes its own
    accepted: tuple[str, ...]  # id forms the template rendered: "openai" (call_...), "alnum9"
    refused: tuple[tuple[str, str], ...]  # (form, the template's message)


@dataclass(frozen=True, slots=True)
class Calls:
    """How the assistant writes tool calls.

    ``section_open``/``section_close`` wrap all calls of a turn once; ``separator`` goes between two
    calls; ``call`` is one call, markers written per call included. ``section_close_from``: how many
    calls a turn holds before the template writes ``section_close`` (2: a closer written after
    several calls only, which one call goes without).
    """

    kind: ClassVar[str] = "calls"
    section_open: str
    section_close: str
    separator: str | Unknown
    call: Pattern
    json_call: JsonCall | None
    arguments: Arguments
    ids: CallIds | Unknown
    content_before_calls: ContentBeforeCalls | Unknown  # calls dropped: content wins
    no_arguments: Pattern | Unknown  # one call with no arguments, as written (it may differ from ``call``)
    json_array: bool  # the section is a JSON array of calls: "[" ... "]" joined by ","
    # How the calls' JSON is written: (between items, after a key), as json.dumps takes them.
    json_separators: tuple[str, str] | Unknown = Unknown("not analysed")
    # How it is indented: (one level, what every line after an object's first starts with), as
    # ``json.dumps(indent=...)`` and then the template's own indenting write it; ("", "") on one line,
    # what descriptions written before the field was read meant.
    json_indent: tuple[str, str] | Unknown = ("", "")
    section_close_from: int = 1
    name_escaping: NameEscaping = "none"  # how the function name is written


# --------------------------------------------------------------------------- turn, reasoning, results


@dataclass(frozen=True, slots=True)
class Turn:
    """The assistant turn. The model's output starts right after ``generation_prompt``.

    ``history_prefix`` is what the template writes in history at the start of an assistant turn and
    the generation prompt does not (so the model writes it); ``content_open``/``content_close`` wrap
    plain content; ``end`` closes the turn; ``stop`` are the strings a server should stop on: the
    stop in ``end``, then ``call_end`` and ``final_end`` where the template writes them.

    ``call_end`` is the marker that ends a turn holding tool calls where the content turn's stop does
    not (``<|eom_id|>`` for ``<|eot_id|>``), ``final_end`` the one that ends the last assistant message
    where the others end with the stop (``<|return|>`` for ``<|end|>``); "" where they are the same.
    """

    kind: ClassVar[str] = "turn"
    generation_prompt: str | Unknown
    history_prefix: str
    content_open: str
    content_close: str
    end: str | Unknown
    stop: tuple[str, ...]
    call_end: str = ""
    final_end: str = ""


@dataclass(frozen=True, slots=True)
class ThinkingSwitch:
    """The request variable that turns thinking on and off in the prompt, with the values that do it:
    ``enable_thinking`` true/false for most templates, another name and values for some (``thinking``,
    ``thinking_mode`` "enabled"/"disabled"). ``off`` is None where no value tried turns thinking off but
    the template's default (the variable left unset) does."""

    kind: ClassVar[str] = "thinking_switch"
    variable: str
    on: bool | str
    off: bool | str | None

    def context(self, thinking: bool) -> dict[str, bool | str]:
        """The template variables that render the prompt with thinking on or off."""
        value = self.on if thinking else self.off
        return {} if value is None else {self.variable: value}


# The switch requests set where the analysis found none (or none was analysed): most templates read it.
STANDARD_SWITCH = ThinkingSwitch("enable_thinking", True, False)


@dataclass(frozen=True, slots=True)
class Reasoning:
    """How the template writes the model's reasoning: its markers, the message field history reads it
    from, and what the prompt and the thinking switch do to the block."""

    kind: ClassVar[str] = "reasoning"
    open: str
    close: str
    field: str  # the message key the template reads reasoning from ("" when history never writes it)
    forced_open: bool  # the generation prompt itself opens the reasoning block
    empty_block: str  # what history writes for a turn without reasoning ("" when nothing)
    toggle: ThinkingSwitch | Unknown  # the request variable that switches thinking in the prompt
    scope: ReasoningScope  # which final turns keep it
    opened_when_thinking: bool  # with thinking switched on, the generation prompt opens the block


@dataclass(frozen=True, slots=True)
class Results:
    """How tool results are written back."""

    kind: ClassVar[str] = "results"
    role: str  # role of the message the client sends: "tool"
    open: Pattern  # text before a result; ``name`` and ``id`` fields where the template writes them
    close: Pattern  # text after a result
    separator: str | Unknown  # between two consecutive results
    group_open: Pattern  # written once before consecutive results (one tool turn holding them all)
    group_close: Pattern  # written once after them
    carries_id: bool
    carries_name: bool
    json_content: ResultsJsonContent  # quoted: escaped into a string; rewritten: neither as is nor quoted
    linked_by: Literal["id", "name", "order"]
    rendered_as: ResultsRenderedAs


@dataclass(frozen=True, slots=True)
class Capability:
    """Whether the template takes an input: "yes", "no", "refused" (raises), "dropped" (renders
    without it), or "unknown"; ``message`` is the template's own error text when it refuses."""

    kind: ClassVar[str] = "capability"
    status: Literal["yes", "no", "refused", "dropped", "error", "differs", "unknown"]
    message: str = ""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the template can render, each with the renders that show it."""

    kind: ClassVar[str] = "capabilities"
    tools: Capability
    tool_calls: Capability
    parallel_calls: Capability
    system_role: Capability
    object_arguments: Capability
    string_arguments: Capability
    content_none: Capability
    thinking_toggle: Capability
    # Content given as a list of text parts (OpenAI clients' habit) read as the same text as a string.
    # Its default stands for descriptions written before it was probed: such content is then joined.
    content_parts: Capability = field(default=Capability("unknown", "not probed"))


@dataclass(frozen=True, slots=True)
class InputForm:
    """How conversations were spelled for the template in the analysis: the forms it takes.

    ``content_with_calls`` is the content of an assistant message that has tool calls ("" or None);
    ``id_form`` the shape of call ids ("openai": call_..., "alnum9": 9 alphanumerics).
    """

    kind: ClassVar[str] = "input_form"
    content_with_calls: str | None
    arguments_as_string: bool
    id_form: str
    tool_descriptions: bool


@dataclass(frozen=True, slots=True)
class TemplateRef:
    """Which template was analysed (its name and hash) and with which Jinja engine."""

    kind: ClassVar[str] = "template"
    name: str
    sha256: str
    engine: str


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """The one description of a template's format: every backend (parser, grammar, audit, export,
    response_template) is generated from it."""

    kind: ClassVar[str] = "format_description"
    schema_version: int
    template: TemplateRef
    format: FormatName  # none: no tool calls
    turn: Turn
    reasoning: Reasoning | Unknown
    calls: Calls | Unknown
    results: Results | Unknown
    capabilities: Capabilities
    input_form: InputForm
    warnings: tuple[str, ...] = field(default=())
    # Variables of the template's own that had to be bound (to "") for it to render at all.
    bound_variables: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- serialisation

_NODES: dict[str, type] = {
    cls.kind: cls
    for cls in (
        Unknown,
        Text,
        Field,
        Escaping,
        JsonArguments,
        ArgumentForm,
        KeyValueArguments,
        JsonCall,
        CallIds,
        Calls,
        Turn,
        ThinkingSwitch,
        Reasoning,
        Results,
        Capability,
        Capabilities,
        InputForm,
        TemplateRef,
        FormatDescription,
    )
}


def to_dict(node: Any) -> Any:
    """Plain JSON values: nodes become objects with their ``kind``, tuples become lists."""
    return node_to_dict(node)


def from_dict(data: Any) -> Any:
    """The nodes ``to_dict`` wrote; a field whose value is not of its declared type (an enumeration's
    value included) is an error naming it."""
    try:
        return node_from_dict(data, _NODES)
    except NodeError as exc:
        raise DescriptionError(str(exc)) from None


def dumps(description: FormatDescription) -> str:
    return json.dumps(to_dict(description), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def loads(text: str) -> FormatDescription:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DescriptionError(f"format description is not JSON: {exc}") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if type(version) is not int or version != SCHEMA_VERSION:
        raise DescriptionError(f"format description must have schema_version {SCHEMA_VERSION}")
    node = from_dict(data)
    if not isinstance(node, FormatDescription):
        raise DescriptionError("file holds no format description")
    return node
