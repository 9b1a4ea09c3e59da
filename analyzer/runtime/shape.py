"""The output shape: what a model writes after the generation prompt, as data.

``analyzer.lower`` makes it from a format description; the parser (``stream.py``, ``match.py``) and
the grammar (``analyzer.backends.gbnf``) read it and derive nothing more from the description, so
the two agree on what a call looks like. It is complete: every marker is split into ``Marker``s
with the whitespace the template wrote around them, every argument form into parts, every trigger
and every text that may follow a call is spelled out. It serialises to plain JSON
(``shape_to_dict``/``shape_from_dict``), which is how a generated parser module carries it.

The id forms (``IdForm``, ``ID_FORMS``) and the layout of a call written as one JSON object
(``JsonCall``) are in ``call_forms.py``, which the format description and the analysis use too.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

# Re-exported: the shape is built of them, and its users take every part from here.
from .call_forms import ID_FORMS as ID_FORMS
from .call_forms import IdForm as IdForm
from .call_forms import JsonCall as JsonCall
from .call_forms import id_pattern as id_pattern
from .nodes import NodeError, node_from_dict, node_to_dict

SHAPE_VERSION = 2


# --------------------------------------------------------------------------- text and ids


@dataclass(frozen=True, slots=True)
class Marker:
    """Literal text. ``lead``/``trail``: the whitespace the template wrote before/after it, where a
    model may write other whitespace; ``text`` itself holds none at its ends. An empty ``text``
    stands for whitespace alone (between two fields)."""

    kind: ClassVar[str] = "marker"
    text: str
    lead: str = ""
    trail: str = ""

    @property
    def written(self) -> str:
        return self.lead + self.text + self.trail


Markers = tuple[Marker, ...]


# --------------------------------------------------------------------------- call parts


# How a name is written where the template escapes it: (character, what it writes for it); () as is.
Escapes = tuple[tuple[str, str], ...]


def escape_name(name: str, escapes: Escapes) -> str:
    """``name`` as the template writes it."""
    if not escapes:
        return name
    return name.translate(_escape_table(escapes))


@functools.lru_cache(maxsize=256)
def _escape_table(escapes: Escapes) -> dict[int, str]:
    return {ord(ch): text for ch, text in escapes if len(ch) == 1}  # as a name is read: one character at a time


@functools.lru_cache(maxsize=256)
def _longest_escape_first(escapes: Escapes) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(((ch, text) for ch, text in escapes if text), key=lambda item: -len(item[1])))


def unescape_name(written: str, escapes: Escapes) -> str:
    """The name a template wrote as ``written``: read left to right, as it was written (``&amp;quot;``
    is ``&`` and ``quot;``), the longest escape that matches first."""
    if not escapes:
        return written
    ordered = _longest_escape_first(escapes)
    if not any(text in written for _, text in ordered):
        return written  # nothing escaped in it: most names
    out: list[str] = []
    i = 0
    while i < len(written):
        for ch, text in ordered:
            if written.startswith(text, i):
                out.append(ch)
                i += len(text)
                break
        else:
            out.append(written[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Name:
    """The function name: one of the declared tools, written with ``escapes``."""

    kind: ClassVar[str] = "name"
    escapes: Escapes = ()


@dataclass(frozen=True, slots=True)
class CallId:
    """The call's id, written in ``form``."""

    kind: ClassVar[str] = "call_id"
    form: IdForm


@dataclass(frozen=True, slots=True)
class Index:
    """A number that counts calls, from ``base``. ``id_prefix``: where the template writes a call's name
    and count as its id (Kimi's ``functions.NAME:0``), the text the id starts with before the name
    ("" when the name starts it); None where the count is no id."""

    kind: ClassVar[str] = "index"
    base: int
    id_prefix: str | None = None


@dataclass(frozen=True, slots=True)
class JsonArgs:
    """Arguments as one value: a JSON object, a JSON string holding one, or a Python dict."""

    kind: ClassVar[str] = "json_args"
    encoding: typing.Literal["object", "string", "python"]


@dataclass(frozen=True, slots=True)
class ArgKey:
    """An argument's name, inside an argument form, written with ``escapes``."""

    kind: ClassVar[str] = "argument_key"
    escapes: Escapes = ()


@dataclass(frozen=True, slots=True)
class ArgValue:
    """An argument's value, inside an argument form; how it is written is the form's ``syntax``."""

    kind: ClassVar[str] = "argument_value"


ArgPart = Marker | ArgKey | ArgValue


@dataclass(frozen=True, slots=True)
class ArgumentShape:
    """How one argument of a JSON type is written. ``syntax`` of the value: "raw" (as is, up to the
    marker after it), "json", "python", or "unknown" (the renders did not tell)."""

    kind: ClassVar[str] = "argument_shape"
    json_type: str
    parts: tuple[ArgPart, ...]
    syntax: typing.Literal["raw", "json", "python", "unknown"]


@dataclass(frozen=True, slots=True)
class KeyValueArgs:
    """Arguments one by one, each by the form for its JSON type, ``separator`` between two."""

    kind: ClassVar[str] = "key_value_args"
    forms: tuple[ArgumentShape, ...]
    separator: Markers  # () when nothing; one empty-text marker when only whitespace
    string_escaping: typing.Literal["none", "json", "python"]
    sorted_names: bool  # the template writes arguments sorted by name
    string_wrapper: tuple[str, str]  # around strings with special characters (CDATA), else ("", "")
    string_quotes: tuple[str, str]  # the template's own string quotes, for nested values in its notation


@dataclass(frozen=True, slots=True)
class JsonCallObject:
    """The whole call as one JSON object laid out as ``layout`` says."""

    kind: ClassVar[str] = "json_call_object"
    layout: JsonCall


Part = Marker | Name | CallId | Index | JsonArgs | KeyValueArgs | JsonCallObject


# --------------------------------------------------------------------------- the shape


@dataclass(frozen=True, slots=True)
class Trigger:
    """Where calls start, for a lazy grammar and for the parser watching content.

    ``word``: the literal calls open with. ``wake_word``: what a lazy grammar wakes on: the special
    word ``word`` starts with when only punctuation follows it (``[TOOL_CALLS]`` of
    ``[TOOL_CALLS][``), which a model writes as one token. ``pattern``: a regex, when calls open with
    bare JSON. ``tool_name``: calls open with a declared tool's name, at the start of the output
    (after what every turn starts with). ``at_start``: a call can only start the output."""

    kind: ClassVar[str] = "trigger"
    word: str = ""
    wake_word: str = ""
    pattern: str = ""
    tool_name: bool = False
    at_start: bool = False


@dataclass(frozen=True, slots=True)
class CallsShape:
    """How calls are written: the section around them, the separator between two, the parts of one.
    What follows from these (the markers a call opens with, the text it closes with, what may follow
    it) is not stored: the shape analysis works it out (``shape_analysis.analysis``)."""

    kind: ClassVar[str] = "calls_shape"
    section_open: Markers
    section_close: Markers
    separator: Markers | None  # None: parallel calls are not written; () when only whitespace
    call: tuple[Part, ...]
    no_arguments: tuple[Part, ...] | None  # a call without arguments, where it differs from ``call``
    trigger: Trigger
    # The whitespace the template writes before the first call, between two calls and after the last
    # (up to the turn's stop) where no marker holds it as ``lead``/``trail``: a section opener,
    # separator or closer of whitespace alone. For the grammar; the parser skips whitespace there.
    open_space: str = ""
    separator_space: str = ""
    close_space: str = ""
    # How the template writes the calls' JSON: (between items, after a key); () when unknown.
    json_separators: tuple[str, ...] = ()
    # How that JSON is indented: (one level, what every line after an object's first starts with);
    # () when it is written on one line or unknown.
    json_indent: tuple[str, ...] = ()
    # How many calls a section holds before the template writes its closer (2: one call goes without).
    close_from: int = 1
    # The template writes a message's content after its calls (gemma-4): a model may write text there.
    content_after: bool = False


@dataclass(frozen=True, slots=True)
class ReasoningShape:
    """A reasoning block. Whether the prompt opened it depends on the request's thinking switch:
    ``forced_open`` is the template's default, ``opened_when_thinking`` the case of thinking on where
    ``toggle`` says the template reads the variable. ``after``: what every turn writes after the close
    marker (the rest of its prefix: ``<|open|>response<|sep|>``)."""

    kind: ClassVar[str] = "reasoning_shape"
    open: Markers
    close: Markers
    forced_open: bool
    toggle: bool = False
    opened_when_thinking: bool = False
    after: Markers = ()

    def opened_by_prompt(self, thinking: bool | None) -> bool:
        if thinking is None or not self.toggle:
            return self.forced_open
        return self.opened_when_thinking if thinking else False

    def switched_off(self, thinking: bool | None) -> bool:
        """Thinking was turned off through the template's toggle: the parser still reads a block the
        model writes anyway, but a grammar gives it no room for one."""
        return thinking is False and self.toggle


@dataclass(frozen=True, slots=True)
class OutputShape:
    """What a model writes after the generation prompt. ``stops``: where the turn ends (text after
    them is not the model's answer); the ones a server may stop generating on are the shape
    analysis' ``server_stops``."""

    kind: ClassVar[str] = "output_shape"
    template: str
    generation_prompt: str
    prefix: Markers  # what every turn starts with that the prompt did not write (an empty reasoning block)
    reasoning: ReasoningShape | None
    content_open: Markers
    content_close: Markers
    calls: CallsShape | None
    stops: tuple[str, ...]
    id_form: IdForm  # of the ids we generate for calls the model wrote without one
    # When set, an answer may be written as a JSON object whose one member of this name holds it as a
    # JSON string ({"answer": "..."}): a format in which every reply is JSON.
    answer_key: str = ""
    # What the template writes to close a turn, the stop among it (``\n<|end|>\n</s>``): text before
    # the stop that belongs to the turn's end, not to its content. () when the renders did not show it.
    end: Markers = ()

    def markers(self) -> tuple[str, ...]:
        """Every marker text, for preserved tokens and streaming hold-back."""
        found: list[str] = []

        def add(parts: tuple[object, ...]) -> None:
            for part in parts:
                if isinstance(part, Marker) and part.text and part.text not in found:
                    found.append(part.text)

        if self.reasoning:
            add(self.reasoning.open)
            add(self.reasoning.close)
        add(self.content_open)
        add(self.content_close)
        if self.calls:
            add(self.calls.section_open)
            add(self.calls.section_close)
            add(self.calls.separator or ())
            add(self.calls.call)
        add(tuple(Marker(stop) for stop in self.stops))
        return tuple(found)


# --------------------------------------------------------------------------- serialisation

_SHAPE_KINDS: dict[str, type] = {
    cls.kind: cls
    for cls in (
        Marker,
        IdForm,
        Name,
        CallId,
        Index,
        JsonArgs,
        ArgKey,
        ArgValue,
        ArgumentShape,
        KeyValueArgs,
        JsonCall,
        JsonCallObject,
        Trigger,
        CallsShape,
        ReasoningShape,
        OutputShape,
    )
}


def shape_to_dict(shape: OutputShape) -> dict[str, Any]:
    return {"shape_version": SHAPE_VERSION, **node_to_dict(shape)}


def shape_from_dict(data: Any) -> OutputShape:
    """The shape ``shape_to_dict`` wrote; ``NodeError`` when the data is not one."""
    if not isinstance(data, dict) or data.get("shape_version") != SHAPE_VERSION:
        raise NodeError(f"an output shape must have shape_version {SHAPE_VERSION}")
    node = node_from_dict({key: value for key, value in data.items() if key != "shape_version"}, _SHAPE_KINDS)
    if not isinstance(node, OutputShape):
        raise NodeError("the data holds no output shape")
    return node
