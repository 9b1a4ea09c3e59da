"""GBNF grammar for a model's tool calls, from the output shape, with what llama-server needs to apply it.

``to_grammar(shape, tools, tool_choice=..., parallel=...)`` prints the calls section of the shape
for the declared tools: the section opener, one call (the tools as alternatives, each part of a call
by its own method, ``_Builder.part`` dispatching on the part's kind), further calls after the
separator when parallel calls are allowed, and the section closer.

- ``tool_choice="auto"``: a lazy grammar. The model writes freely until the trigger (the first
  marker of the calls, or a regex when calls open with bare JSON or with the tool's name); the
  grammar holds from there.
- ``"required"`` or a tool's name: an eager grammar from the first byte of the output: what every
  turn starts with (the shape's prefix) and a reasoning block, each optional, then the calls section
  (only that tool's calls for a name).
- ``"none"``: no grammar.

Exact by default: the template's own whitespace around markers, its JSON separators, and the number
it gives each of the first calls where it counts them (``:0``, ``:1``). With ``whitespace="flexible"``
a marker may have whitespace before/after it where the template wrote some (required only between two
word characters), a JSON value may have it around it, and a call's number is any. Raw argument text (written
as is, up to the literal that ends it) is one rule that takes that literal in, so it cannot end early
nor run past it. Like the schema rules (see ``json_schema``), the structure of calls is written
inline and only tokens are named rules, so GBNF readers that lex (llguidance) read it as llama.cpp does.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, replace
from typing import Any, assert_never

from analyzer.backends.gbnf.json_schema import PythonRules, SchemaRules
from analyzer.backends.gbnf.text import Rules, char_class, choice, group, literal, optional, ordered, seq
from analyzer.backends.gbnf.words import text_until, text_without
from analyzer.choices import WHITESPACE_MODES
from analyzer.errors import InputError, UnsupportedFormat
from analyzer.markers import special_word
from analyzer.runtime.shape import (
    ArgKey,
    ArgPart,
    ArgumentShape,
    ArgValue,
    CallId,
    CallsShape,
    IdForm,
    Index,
    JsonArgs,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Markers,
    Name,
    OutputShape,
    Part,
    ReasoningShape,
    escape_name,
)
from analyzer.runtime.shape_analysis import FormFacts, TagFrame, analysis, form_tag_frame
from analyzer.tools import Tool, chosen_tools, declared_tools

# llama-server's grammar trigger types. A token trigger (type 0) needs the token's id, which only the
# server knows; it makes one itself of a word that is a single token.
TRIGGER_WORD, TRIGGER_PATTERN, TRIGGER_PATTERN_FULL = 1, 2, 3

_DIGITS = "[0-9]{1,9}"
_JSON_DIGITS = '( "0" | [1-9] [0-9]{0,8} )'  # a JSON number has no leading zero
_ID_SAMPLE = "<id>"
_SPACES = re.compile(r"\s+")
_QUOTED_DIGITS = re.compile(r'"([0-9]+)"')


@dataclass(frozen=True, slots=True)
class GrammarTrigger:
    """Where a lazy grammar starts: ``type`` 1, a literal word anywhere in the output; 2, a regex
    anywhere; 3, a regex the whole output so far must match. The grammar holds from the word, the
    regex's first capturing group, or else the start of its match."""

    type: int
    value: str


@dataclass(frozen=True, slots=True)
class Grammar:
    text: str  # GBNF
    lazy: bool
    triggers: tuple[GrammarTrigger, ...]  # empty when not lazy
    preserved_tokens: tuple[str, ...]  # the shape's markers: the model may write them as special tokens
    stops: tuple[str, ...]
    # Schema constraints the grammar does not hold ("where: keyword"): it takes more than they allow.
    unenforced: tuple[str, ...] = ()

    def to_llama_server(self) -> dict[str, Any]:
        """The fields of a llama-server completion request that apply this grammar, and the schema
        constraints it does not hold, where there are some (the server ignores that field)."""
        fields: dict[str, Any] = {
            "grammar": self.text,
            "grammar_lazy": self.lazy,
            "grammar_triggers": [{"type": t.type, "value": t.value} for t in self.triggers],
            "preserved_tokens": list(self.preserved_tokens),
            "stop": list(self.stops),
        }
        if self.unenforced:
            fields["unenforced"] = list(self.unenforced)
        return fields

    def warnings(self) -> tuple[str, ...]:
        """One line per constraint the grammar does not hold, to show a user."""
        return tuple(f"warning: the grammar does not enforce {item}" for item in self.unenforced)


def llama_server_fields(grammar: Grammar | None, preserved: tuple[str, ...], stops: tuple[str, ...]) -> dict[str, Any]:
    """A request's grammar fields; with no grammar (tool_choice none) only what the server still needs:
    the preserved tokens, which keep the model's special tokens as text, and the stop strings."""
    if grammar is not None:
        return grammar.to_llama_server()
    return {"preserved_tokens": list(preserved), "stop": list(stops)}


# Calls of a section the grammar writes with their own number where the template numbers them;
# after these, any number.
_NUMBERED_CALLS = 8


def to_grammar(
    shape: OutputShape,
    tools: list[dict[str, Any]],
    *,
    tool_choice: str = "auto",
    parallel: bool = True,
    thinking: bool | None = None,
    whitespace: str = "exact",
) -> Grammar | None:
    """The grammar for calls of ``tools`` in ``shape``'s format; None for ``tool_choice="none"``.
    ``thinking``: whether the prompt was rendered with thinking switched on (None: the template's default).
    ``whitespace``: "exact" (the template's own whitespace and JSON separators, nothing else) or
    "flexible" (bounded whitespace wherever the template writes some, and between JSON tokens).

    Where every reply is JSON (the shape has an answer key), the grammar is eager: a call, or for
    ``auto`` and ``none`` the answer object."""
    if whitespace not in WHITESPACE_MODES:
        raise InputError(f"whitespace {whitespace!r} is none of {', '.join(WHITESPACE_MODES)}")
    answers = bool(shape.answer_key)
    if tool_choice == "none" and not answers:
        return None
    if shape.calls is None:
        raise UnsupportedFormat(f"{shape.template}: the template writes no tool calls, so no grammar constrains them")
    declared = chosen_tools(declared_tools(tools), tool_choice)
    builder = (_ExactBuilder if whitespace == "exact" else _FlexibleBuilder)(shape, shape.calls, thinking)
    lazy = tool_choice == "auto" and not answers
    sections = [builder.section(declared, parallel, lazy=lazy)] if declared else []
    replies = [section.expr for section in sections]
    if lazy:
        return Grammar(
            builder.rules.text(replies[0]),
            True,
            _triggers(shape, shape.calls, declared),
            preserved_tokens(shape),
            analysis(shape).server_stops,
            tuple(builder.rules.unenforced),
        )
    if answers and tool_choice in ("auto", "none"):
        replies.append(builder.answer())
    lead = sections[0].lead if sections and len(replies) == 1 else ""
    text = builder.rules.text(builder.eager(choice(replies), lead))
    stops = analysis(shape).server_stops
    return Grammar(text, False, (), preserved_tokens(shape), stops, tuple(builder.rules.unenforced))


def preserved_tokens(shape: OutputShape) -> tuple[str, ...]:
    """The texts a server should keep when the model writes them as special tokens: every marker, and
    the bracketed word a marker starts with when the marker is longer (``[TOOL_CALLS]`` of
    ``[TOOL_CALLS][``, ``<|tool_call_begin|>`` of ``<|tool_call_begin|>functions.``). A vocabulary
    holds such words as single special tokens; llama-server skips entries that are not one token, so
    listing the longer marker too costs nothing, and without the word the server would drop its text."""
    found: list[str] = []
    for marker in shape.markers():
        for text in (marker, special_word(marker)):
            if text and text not in found:
                found.append(text)
    return tuple(found)


def _triggers(shape: OutputShape, calls: CallsShape, tools: tuple[Tool, ...]) -> tuple[GrammarTrigger, ...]:
    """Where a lazy grammar starts. Calls that open with a tool's name at the start of the output come
    after content behind the separator's first marker (``>>>get_weather``), as every later call does:
    the grammar holds from the name there too."""
    first = _trigger(shape, calls, tools)
    if not (calls.trigger.tool_name and calls.separator and calls.separator[0].text):
        return (first,)
    names = _names_pattern(calls, tools)
    behind = r"\s*".join(re.escape(marker.text) for marker in calls.separator if marker.text)
    return first, GrammarTrigger(TRIGGER_PATTERN, rf"{behind}\s*((?:{names})[\s\S]*)")


def _trigger(shape: OutputShape, calls: CallsShape, tools: tuple[Tool, ...]) -> GrammarTrigger:
    trigger = calls.trigger
    if trigger.word:
        return GrammarTrigger(TRIGGER_WORD, trigger.wake_word)
    if trigger.pattern:
        return GrammarTrigger(TRIGGER_PATTERN, trigger.pattern)
    if trigger.tool_name:
        # The output opens with a tool's name, after what every turn starts with if the model wrote
        # that: the grammar holds from the name on.
        names = _names_pattern(calls, tools)
        prefix = r"\s*".join(re.escape(m.text) for m in shape.prefix)
        head = rf"(?:{prefix}\s*)?" if prefix else ""
        return GrammarTrigger(TRIGGER_PATTERN_FULL, rf"\s*{head}((?:{names})[\s\S]*)")
    raise UnsupportedFormat("the calls open with nothing a lazy grammar can be triggered by")


def _names_pattern(calls: CallsShape, tools: tuple[Tool, ...]) -> str:
    """A regex for the tools' names, as the call's first part (its name) writes them."""
    first = calls.call[0] if calls.call else None
    escapes = first.escapes if isinstance(first, Name) else ()
    return "|".join(re.escape(escape_name(tool.name, escapes)) for tool in tools)


# --------------------------------------------------------------------------- pieces of a sequence


# What the parser skips as whitespace (str.isspace), which may stand before the next argument's key.
_SPACE_CHARACTERS = frozenset(ch for ch in map(chr, range(0x3001)) if ch.isspace())


@dataclass(frozen=True, slots=True)
class _NextArgument:
    """How the argument after a raw value starts: ``separator`` (one character), then whitespace, a
    declared key as the form writes it (``keys``) and ``after_key``, the text after a key."""

    separator: str
    keys: tuple[str, ...]
    after_key: str


def _next_argument(form: ArgumentShape, separator: Markers, properties: tuple[str, ...]) -> _NextArgument | None:
    """The next argument's start, for a form that starts with its key and writes text after it and
    a separator of one character; None otherwise."""
    parts = [part for part in form.parts if not (isinstance(part, Marker) and not part.text)]
    texts = [marker.text for marker in separator if marker.text]
    if len(parts) < 2 or not isinstance(parts[0], ArgKey) or not isinstance(parts[1], Marker):
        return None
    if len(texts) != 1 or len(texts[0]) != 1:
        return None
    return _NextArgument(texts[0], tuple(escape_name(key, parts[0].escapes) for key in properties), parts[1].text)


@dataclass(frozen=True, slots=True)
class _Piece:
    """A GBNF expression in a sequence, with what may stand around it: ``lead``/``trail``, the
    whitespace the template writes before/after it ("" for none; flexible whitespace is allowed
    wherever it writes some); ``first``/``last`` are its literal ends ("" when not literal),
    to tell where whitespace must separate two words. ``sample``: what it writes for a call without
    arguments, whitespace left out, to tell whether the no-argument pattern adds anything."""

    expr: str
    lead: str = ""
    trail: str = ""
    first: str = ""
    last: str = ""
    sample: str = ""
    # ``sample`` with the whitespace the exact grammar writes ("": ``sample`` itself; None: not known,
    # as for JSON, whose whitespace its rules write).
    spaced: str | None = ""


def needs_space(before: str, after: str) -> bool:
    """Whitespace between two literals is required only where it separates two words."""
    return (
        bool(before)
        and bool(after)
        and (before[-1].isalnum() or before[-1] == "_")
        and (after[0].isalnum() or after[0] == "_")
    )


def _common(texts: list[str]) -> str:
    return texts[0] if all(text == texts[0] for text in texts) else ""


class _Builder:
    """The grammar of one shape's calls, part by part. Where whitespace goes is the subclass's: the
    exact builder writes the template's own, the flexible one bounded whitespace wherever the template
    writes some (and where a model may write it: around values)."""

    # What may stand around a value the template writes whitespace around or not.
    value_space = ""

    def __init__(self, shape: OutputShape, calls: CallsShape, thinking: bool | None = None) -> None:
        self.shape = shape
        self.calls = calls
        facts = analysis(shape).calls
        assert facts is not None and facts.calls is calls
        self.facts = facts
        self.thinking = thinking
        self.rules = Rules()
        separators = self.json_separators()
        self.json = SchemaRules(self.rules, separators, calls.json_indent)
        self.python = PythonRules(self.rules, separators)
        # Which call of the section is being written (0 for the first), where the template counts
        # calls in their text; None once past the calls written out one by one.
        self.position: int | None = 0
        # A call written with at least one argument (its no-argument spelling is another pattern).
        self.some_arguments = False

    # ------------------------------------------------------------------ the whitespace policy (per subclass)

    def json_separators(self) -> tuple[str, ...]:
        """The separators JSON values are written with (none: bounded whitespace between tokens)."""
        raise NotImplementedError

    def space(self, written: str) -> str:
        """Whitespace where the template wrote ``written`` (nothing where it wrote none)."""
        raise NotImplementedError

    def gap(self, before: _Piece, after: _Piece) -> str:
        """Whitespace between two pieces either of which allows some."""
        raise NotImplementedError

    def calls_gap(self) -> str:
        """What stands between two calls where the template writes whitespace or nothing there."""
        raise NotImplementedError

    def section_tail(self, after: str) -> str:
        """What follows the section up to the turn's stop, where the template writes ``after`` there."""
        raise NotImplementedError

    def content_text(self, text: str, words: tuple[str, ...]) -> str:
        """Content after the calls, ``text`` being text that holds none of ``words``."""
        raise NotImplementedError

    def counts_calls(self) -> bool:
        """Whether the first calls are written each with its own number, where the template counts them."""
        return False

    def eager(self, section: str, lead: str = "") -> str:
        """From the first byte of the output: what every turn starts with (the shape's prefix) and a
        reasoning block, each optional, then the calls. When the prompt opened reasoning, the output
        starts inside it, and the prefix is what follows its close marker (Kimi-K3: the close, then
        ``<|open|>response<|sep|>``). A block that is a message of its own is followed by the next
        message's prefix (muse-glimmer: `` to=`` after ``<|eom|><|start|>assistant``). ``lead``: the
        whitespace the template writes before the calls."""
        raise NotImplementedError

    def call_without_parameters(self, call: _Piece, bare: _Piece) -> _Piece:
        """A call of a tool without parameters, where the no-argument pattern writes what the call
        pattern writes with no arguments (``bare``)."""
        return call

    def call_with_optional_arguments(self, tool: Tool, call: _Piece) -> _Piece:
        """A call of a tool none of whose parameters is required."""
        return call

    def whitespace_marker(self, part: Marker) -> _Piece | None:
        """A marker of whitespace alone between two fields (None: read as any marker)."""
        return None

    def written_number(self, part: Index) -> _Piece | None:
        """The number of the call being written, where it is written exactly (None: any digits)."""
        return None

    def form_parts(self, form: ArgumentShape) -> list[ArgPart]:
        """An argument form's parts as the grammar writes them."""
        raise NotImplementedError

    def raw_stop(self, ends: Markers, pieces: list[_Piece]) -> str:
        """The text a raw value runs up to, ``ends`` being the markers after it (``pieces``' last may
        give up its trailing whitespace to the value)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ sequences

    def tokens(self, pieces: list[_Piece]) -> list[str]:
        """The pieces' expressions with whitespace between two where either allows it (required
        between two words); empty pieces left out."""
        kept = [piece for piece in pieces if piece.expr]
        out: list[str] = []
        for before, after in zip([None, *kept], kept, strict=False):  # each piece with the one before it
            if before is not None and (before.trail or after.lead):
                out.append(self.gap(before, after))
            out.append(after.expr)
        return out

    def join(self, pieces: list[_Piece]) -> _Piece:
        """One piece for a sequence: its ends are the ends of its first and last pieces."""
        kept = [piece for piece in pieces if piece.expr]
        if not kept:
            return _Piece("")
        spaced: list[str | None] = [kept[0].spaced if kept[0].spaced != "" else kept[0].sample]
        for before, after in itertools.pairwise(kept):
            spaced += [before.trail or after.lead, after.spaced if after.spaced != "" else after.sample]
        return _Piece(
            seq(*self.tokens(kept)),
            kept[0].lead,
            kept[-1].trail,
            kept[0].first,
            kept[-1].last,
            "".join(piece.sample for piece in pieces),
            None if None in spaced else "".join(text for text in spaced if text),
        )

    def choice(self, options: list[_Piece]) -> _Piece:
        """Alternatives: whitespace may stand around them if it may around any of them."""
        return _Piece(
            choice(option.expr for option in options),
            next((o.lead for o in options if o.lead), ""),
            next((o.trail for o in options if o.trail), ""),
            _common([o.first for o in options]),
            _common([o.last for o in options]),
        )

    def markers(self, markers: tuple[Marker, ...]) -> list[_Piece]:
        return [self.marker(m) for m in markers]

    # ------------------------------------------------------------------ the calls section and the root

    def section(self, tools: tuple[Tool, ...], parallel: bool, *, lazy: bool) -> _Piece:
        """Section opener, one call or (parallel) several joined by the separator, section closer,
        then what the template writes after them up to the turn's stop (whitespace: a model's turn
        ends where the template's does, and the stop itself is the end-of-generation token, which a
        grammar never matches as text). ``lead``: the whitespace the template writes before the
        section, which an eager grammar asks for (a lazy one starts at the trigger, after it)."""
        call = self.calls_at(tools, 0)
        calls = call
        if parallel and self.calls.separator is not None:
            if self.calls.separator:
                between = self.tokens([call, *self.markers(self.calls.separator), call])[1:-1]
            else:  # whitespace or nothing between calls
                between = [self.calls_gap()]
            # Right recursion, not a repetition: a rule that refers to itself is parsed, never lexed
            # as one terminal, which could not tell one more call from the section closer after it.
            any_call = self.calls_at(tools, None)
            rest = self.rules.recursive("calls", lambda name: seq(any_call.expr, optional(seq(*between, name))))
            if self.counts_calls():
                # The template numbers its calls: the first few are written out, each with its number.
                for position in reversed(range(_NUMBERED_CALLS)):
                    numbered = self.calls_at(tools, position).expr
                    rest = self.rules.add(f"calls-{position}", seq(numbered, optional(seq(*between, rest))))
            calls = replace(call, expr=rest)
            if self.calls.close_from > 1:
                # The closer comes only after several calls: one call alone, or two and more, then it.
                closer = self.join(self.markers(self.calls.section_close))
                several = seq(call.expr, *between, rest, closer.expr)
                calls = replace(call, expr=choice([several, call.expr]), trail=closer.trail)
        elif self.calls.close_from > 1:
            calls = call  # one call: the template writes no closer after it
        closing = self.calls.section_close if self.calls.close_from <= 1 else ()
        whole = self.join([*self.markers(self.calls.section_open), calls, *self.markers(closing)])
        after = self.calls.close_space + whole.trail
        tail = self.section_tail(after) if after else ""
        lead = "" if lazy else self.calls.open_space + whole.lead
        return _Piece(seq(whole.expr, self.content_after(), tail), lead, "", whole.first, "", whole.sample)

    def content_after(self) -> str:
        """Where the template writes a message's content after its calls (the shape analysis' follow set
        of the section holds content): text that opens no call, up to the turn's end."""
        if not self.facts.content_after:
            return ""
        words = tuple(dict.fromkeys(word for word in (self.calls.trigger.word, *self.shape.stops) if word))
        return self.content_text(text_without(self.rules, "content-after", words), words)

    def calls_at(self, tools: tuple[Tool, ...], position: int | None) -> _Piece:
        """One call of any of ``tools``, as the call at ``position`` of the section is written."""
        self.position = position
        try:
            return self.choice([self.call(tool) for tool in tools])
        finally:
            self.position = 0

    def answer(self) -> str:
        """An answer written as a one-member JSON object holding it as a string; inline, as a call
        object is, so that a lexing reader does not take its "{" for the start of one token."""
        member = self.json.member(self.json.key(self.shape.answer_key), self.json.string())
        return seq(literal("{"), self.json.space(), member, literal("}"))

    def reasoning(self, after: tuple[str, ...] = ()) -> str:
        """Open marker (absent when the prompt opened the block), text, close marker. The text may not
        hold the calls' first marker, nor ``after`` (what may follow a skipped block): once the model
        writes one, the block is over or was never written. (A text that could go on over them would
        keep a lexing GBNF reader from ever seeing them.)"""
        reasoning = self.shape.reasoning
        assert reasoning is not None
        close = reasoning.close
        text = text_until(self.rules, "reasoning-text", close[0].text, (self.calls.trigger.word, *after))
        opening = [] if reasoning.opened_by_prompt(self.thinking) else self.markers(reasoning.open)
        if opening:  # the text takes the whitespace after the open marker in
            opening[-1] = replace(opening[-1], trail="")
        body = _Piece(text, trail=close[0].trail, last=close[0].text)
        return self.join([*opening, body, *self.markers(close[1:])]).expr

    def call(self, tool: Tool) -> _Piece:
        """One call of ``tool``: the call pattern, or for a tool without parameters the no-argument
        pattern, where it writes something else than the call pattern does with no arguments. (Where
        it writes the same, it would only be a second spelling of the same call, which a lexing GBNF
        reader can take the wrong way: its markers are longer tokens than the call pattern's.)"""
        # Local $refs of the tool's schemas point into its parameters.
        self.json.root = self.python.root = tool.arguments_schema
        call = self.sequence(self.facts.call, tool)
        if not tool.properties:
            if self.facts.no_arguments is None:
                return call
            bare = self.sequence(self.facts.no_arguments, tool)
            if _same_call(bare.sample, call.sample):
                # Exact: the template's own whitespace, which the call pattern with its arguments left
                # out may not write (GLM's ``list_files\n</tool_call>``, where the pattern keeps a
                # newline on each side of the absent arguments).
                return self.call_without_parameters(call, bare)
            return self.choice([call, bare])
        if set(tool.parameters.get("required") or ()) & set(tool.properties):
            return call
        return self.call_with_optional_arguments(tool, call)

    def sequence(self, form: FormFacts, tool: Tool) -> _Piece:
        return self.join([self.part(part, tool, form.value_stops(k)) for k, part in enumerate(form.parts)])

    # ------------------------------------------------------------------ one method per part kind

    def part(self, part: Part, tool: Tool, stops: str) -> _Piece:
        """The one place a call part becomes grammar: each kind by its own method. ``stops``: the first
        characters of what may follow an argument, before which argument text of unknown syntax stops
        (the shape analysis' ``value_stops``)."""
        match part:
            case Marker():
                return self.marker(part)
            case Name():
                return self.name(part, tool)
            case CallId():
                return self.call_id(part)
            case Index():
                return self.index(part)
            case JsonArgs():
                return self.json_args(part, tool)
            case KeyValueArgs():
                return self.key_value_args(part, tool, stops)
            case JsonCallObject():
                return self.json_call_object(part, tool)
            case _:
                # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
                assert_never(part)

    def marker(self, part: Marker) -> _Piece:
        if not part.text and (spaced := self.whitespace_marker(part)) is not None:
            return spaced
        return _Piece(literal(part.text), part.lead, part.trail, part.text, part.text, part.text, part.text)

    def name(self, part: Name, tool: Tool) -> _Piece:
        written = escape_name(tool.name, part.escapes)
        return _Piece(literal(written), first=written, last=written, sample=written)

    def call_id(self, part: CallId) -> _Piece:
        return _Piece(self.rules.add("call-id", _id_chars(part.form)), sample=_ID_SAMPLE)

    def index(self, part: Index) -> _Piece:
        """The call's number, counted from ``part.base``: written exactly for the first calls (any
        digits past them, or where whitespace is flexible)."""
        return self.written_number(part) or _Piece(self.rules.add("index", _DIGITS), sample=str(part.base))

    def json_args(self, part: JsonArgs, tool: Tool) -> _Piece:
        if part.encoding == "string":
            expr = self.json.string()
        elif part.encoding == "python":
            expr = self.python.value(tool.arguments_schema, f"{tool.name}-args")
        else:
            expr = self.json.value(tool.arguments_schema, f"{tool.name}-args")
        # A JSON text may have whitespace around it, where it is not written exactly.
        space = self.value_space
        return _Piece(expr, lead=space, trail=space, sample='"{}"' if part.encoding == "string" else "{}", spaced=None)

    def key_value_args(self, part: KeyValueArgs, tool: Tool, stops: str) -> _Piece:
        forms = {form.json_type: form for form in part.forms}
        required = set(tool.parameters.get("required") or ())
        members = []
        properties = sorted(tool.properties.items()) if part.sorted_names else tool.properties.items()
        for key, schema in properties:
            # A value of several types (a type list, anyOf, a $ref, no type at all) may be written
            # by any of their forms: one alternative per form, each with the schema of its types.
            by_form: dict[int, tuple[ArgumentShape, list[str]]] = {}
            for kind in _json_types(self.json.resolved(schema), forms):
                form = forms.get(kind) or forms.get("string")
                if form is None:
                    raise UnsupportedFormat(f"no form for {kind} arguments ({tool.name}.{key})")
                by_form.setdefault(id(form), (form, []))[1].append(kind)
            hint = f"{tool.name}-{key}"
            options = [
                self.argument(
                    form,
                    key,
                    schema if len(by_form) == 1 else _narrowed(schema, kinds),
                    hint,
                    stops,
                    _next_argument(form, part.separator, tuple(tool.properties)),
                )
                for form, kinds in by_form.values()
            ]
            members.append((choice(options), key in required))
        return _Piece(ordered(members, self.separator(part.separator), empty=not self.some_arguments))

    def json_call_object(self, part: JsonCallObject, tool: Tool) -> _Piece:
        layout = part.layout
        if layout.arguments_encoding == "string":
            arguments = self.json.string()
        else:
            # The arguments stand as deep in the call object as their key's path is long.
            with self.json.nested(1 if layout.name_is_key else len(layout.arguments_path)):
                arguments = self.json.value(tool.arguments_schema, f"{tool.name}-args")
        empty: Any = "{}" if layout.arguments_encoding == "string" else {}
        if layout.name_is_key:
            sample = json.dumps({tool.name: empty}, separators=(",", ":"))
            space = self.value_space
            return _Piece(self.json_object({tool.name: arguments}, [tool.name]), space, space, "{", "}", sample, None)
        if not layout.name_path or not layout.arguments_path:
            raise UnsupportedFormat("a JSON call without a name or arguments key")
        tree: dict[str, Any] = {}
        written: dict[str, Any] = {}  # the same object as a call without arguments writes it
        _put(tree, written, layout.name_path, self.json.constant(tool.name), tool.name)
        _put(tree, written, layout.arguments_path, arguments, empty)
        if layout.id_path:
            form = self.shape.id_form
            # An id of a form made of listed characters needs no escaping inside a JSON string.
            _put(
                tree,
                written,
                layout.id_path,
                self.json.string()
                if form.excluded
                else self.rules.add("json-call-id", f'"\\"" {_id_chars(form)} "\\""'),
                _ID_SAMPLE,
            )
        if layout.index_path:
            # The layout does not say whether the index is a number or a string of digits ("0"):
            # templates write both.
            _put(
                tree,
                written,
                layout.index_path,
                self.rules.add("json-index", f'{_JSON_DIGITS} | "\\"" {_DIGITS} "\\""'),
                layout.index_base,
            )
        for path, text in layout.constants:
            _put(tree, written, path, literal(text), json.loads(text))
        order = [key for key in layout.key_order if key in tree] + [key for key in tree if key not in layout.key_order]
        sample = json.dumps({key: written[key] for key in order}, separators=(",", ":"))
        return _Piece(self.json_object(tree, order), self.value_space, self.value_space, "{", "}", sample, None)

    # ------------------------------------------------------------------ helpers of the part methods

    def json_object(self, tree: dict[str, Any], order: list[str]) -> str:
        """An object with exactly these keys in this order (nested objects: in the order they were
        put), written inline: its members are the call's, not a token."""
        members = []
        for key in order:
            with self.json.nested():
                value = self.json_object(tree[key], list(tree[key])) if isinstance(tree[key], dict) else tree[key]
            members.append((self.json.member(self.json.key(key), value), True))
        return self.json.bracketed("{", ordered(members, self.json.comma()), "}", empty=False)

    def separator(self, markers: Markers) -> str:
        """Between two arguments: the separator's markers, or whitespace when it is only that."""
        if not markers:
            return ""
        if not any(marker.text for marker in markers):
            return self.space("".join(marker.lead + marker.trail for marker in markers) or " ")
        return seq(
            self.space(markers[0].lead), self.join(self.markers(tuple(markers))).expr, self.space(markers[-1].trail)
        )

    def argument(
        self,
        form: ArgumentShape,
        key: str,
        schema: Any,
        hint: str,
        stops: str,
        next_argument: _NextArgument | None = None,
    ) -> str:
        """One argument by its form's parts, each by its kind. ``stops``: the first characters of what
        may follow the argument, before which a value that ends the form stops when its syntax is not
        known; ``next_argument``: how the next argument starts, where a raw string with nothing after
        it runs up to it."""
        pieces: list[_Piece] = []
        parts = self.form_parts(form)
        i = 0
        while i < len(parts):
            item = parts[i]
            match item:
                case Marker():
                    pieces.append(self.marker(item))
                    i += 1
                case ArgKey():
                    written = escape_name(key, item.escapes)
                    pieces.append(_Piece(literal(written), first=written, last=written))
                    i += 1
                case ArgValue():
                    i = self.argument_value(form, parts, i, pieces, schema, hint, stops, next_argument)
                case _:
                    # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
                    assert_never(item)
        return self.join(pieces).expr

    def argument_value(
        self,
        form: ArgumentShape,
        parts: list[ArgPart],
        i: int,
        pieces: list[_Piece],
        schema: Any,
        hint: str,
        stops: str,
        next_argument: _NextArgument | None = None,
    ) -> int:
        """The value at ``parts[i]``, added to ``pieces`` (whose last piece may give up the whitespace
        after it to the value); returns where the parts after it go on: raw text takes the markers
        that end it in."""
        ends = _run(parts, i + 1, 1)
        if form.syntax == "raw" and ends and _string_choices(schema):
            # A raw string with an enum (or const): one of its values, not any text, so a model
            # cannot write a value the schema refuses.
            # The whitespace around it is written exactly as the template does: the parser takes
            # the template's own whitespace off a raw value and keeps any other.
            opened = _run(parts, i - 1, -1)
            if pieces:
                pieces[-1] = replace(pieces[-1], trail="")
            values = choice(literal(value) for value in _string_choices(schema))
            pieces.append(
                _Piece(
                    seq(
                        literal(opened[-1].trail) if opened and opened[-1].trail else "",
                        values,
                        literal(ends[0].lead) if ends[0].lead else "",
                    )
                )
            )
            pieces.append(replace(self.marker(ends[0]), lead=""))
            pieces.extend(self.markers(ends[1:]))
            return i + 1 + len(ends)
        if form.syntax == "raw" and ends:
            self.unchecked(schema, hint, "a value written as raw text")
            # Raw text runs to the next marker and takes it in; whitespace around it is the text's.
            stop = self.raw_stop(ends, pieces)
            pieces.append(_Piece(text_until(self.rules, "raw-text", stop), trail=ends[0].trail, last=ends[0].text))
            pieces.extend(self.markers(ends[1:]))
            return i + 1 + len(ends)  # the markers after it are taken
        if form.syntax in ("json", "python"):
            rules = self.json if form.syntax == "json" else self.python
            pieces.append(_Piece(rules.value(schema, hint), lead=self.value_space, trail=self.value_space))
            return i + 1
        if (tag := form_tag_frame(form)) is not None and (nested := self.tag_value(tag, schema, hint)) is not None:
            # An object or array written as nested tags in the argument form (MiniMax-M3).
            pieces.append(_Piece(nested))
            return i + 1
        if form.syntax == "raw" and _string_choices(schema):
            # A raw string with nothing written after it (f(unit=kelvin)): still one of its values.
            pieces.append(_Piece(choice(literal(value) for value in _string_choices(schema))))
            return i + 1
        if form.syntax == "raw" and not ends and next_argument is not None and next_argument.separator in stops:
            self.unchecked(schema, hint, "a value written as raw text")
            # A raw string with nothing written after it (f(path=notes/a.txt, n=2)): it runs, as the
            # parser reads it, to the next argument (the separator, then a declared key and what
            # follows keys) or to the end of the call.
            pieces.append(_Piece(self.raw_string(stops, next_argument)))
            return i + 1
        self.unchecked(schema, hint, "a value written in the template's own notation")
        # Unknown syntax (or raw text with no marker after it): text up to the next marker,
        # brackets balanced so a nested object or list may hold that marker's first character.
        pieces.append(_Piece(self.loose(ends[0].text[0] if ends else stops)))
        return i + 1

    def tag_value(self, tag: TagFrame, schema: Any, hint: str) -> str | None:
        """An object's members or an array's items as tags in the argument form, nested; None for a
        schema that does not list what they are (a free-form object). The marker a template writes
        between two arguments it writes before the first member too, and not after the last (the
        value's closing marker starts with it)."""
        opening, middle, closing, end = tag.opening, tag.middle, tag.closing, tag.end
        between = tag.between_arguments
        kind = _json_type(schema)
        if kind == "object":
            properties = schema.get("properties") if isinstance(schema, dict) else None
            if not isinstance(properties, dict) or not properties:
                return None
            required = set(schema.get("required") or ())
            members = []
            for key, member in properties.items():
                value = self.tag_member_value(tag, member, f"{hint}-{key}")
                if value is None:
                    return None
                body, closed = value
                members.append(
                    (
                        seq(
                            literal(between + opening + key + middle),
                            body,
                            literal(closed + key + end[: len(end) - len(between)]),
                        ),
                        key in required,
                    )
                )
            return ordered(members, "")
        if kind == "array":
            items = schema.get("items", {}) if isinstance(schema, dict) else {}
            value = self.tag_member_value(tag, items, f"{hint}-item")
            if value is None:
                return None
            body, closed = value
            # The template names each item with a tag of its own choosing, which the shape does not keep.
            name = self.rules.add(
                "tag-name", char_class(set(middle[:1]) | set(closing[:1]) | set(" \t\n\r"), negated=True) + "+"
            )
            item = seq(
                literal(between + opening),
                name,
                literal(middle),
                body,
                literal(closed),
                name,
                literal(end[: len(end) - len(between)]),
            )
            return group(item) + "*"
        return None

    def tag_member_value(self, tag: TagFrame, schema: Any, hint: str) -> tuple[str, str] | None:
        """A member's value and the part of the closing marker left to write after it (a string's text
        takes the closing marker in)."""
        closing = tag.closing
        kind = _json_type(schema)
        if kind in ("object", "array"):
            nested = self.tag_value(tag, schema, hint)
            return None if nested is None else (nested, closing)
        if kind == "string":
            choices = _string_choices(schema)
            if choices:
                return choice(literal(value) for value in choices), closing
            return text_until(self.rules, "tag-text", closing), ""
        return self.json.value(schema, hint), closing

    def unchecked(self, schema: Any, hint: str, how: str) -> None:
        """Report the constraints of a value the grammar takes as text (all but its type)."""
        if isinstance(schema, dict):
            for keyword in schema:
                if keyword not in ("type", "description", "title", "default", "examples"):
                    self.rules.note(hint, f"{keyword} ({how})")

    def raw_string(self, stops: str, next_argument: _NextArgument) -> str:
        """Raw text as the parser reads it where nothing is written after it: brackets balanced, the
        characters of ``stops`` only inside them but for the separator followed by anything that does
        not start the next argument (whitespace, then a declared key, whitespace and the text after
        keys), and no whitespace at its ends (the parser trims it off)."""
        brackets = {"(": ")", "{": "}", "[": "]"}
        special = set(brackets) | set(brackets.values())
        spaces = _SPACE_CHARACTERS
        keys, after_key = next_argument.keys, next_argument.after_key

        def groups(inner: str) -> str:
            return "( " + " | ".join(f"{literal(o)} {inner} {literal(c)}" for o, c in brackets.items()) + " )"

        inner = self.rules.recursive(
            "raw-inner", lambda name: f"( {char_class(special, negated=True)} | {groups(name)} )*"
        )
        top = set(stops) | special
        space = char_class(spaces)
        item = self.rules.add("raw-item", f"{char_class(top | spaces, negated=True)} | {groups(inner)}")
        rest = self.rules.add("raw-rest", f"( {space}* {item} )*")  # (whitespace only before more text)

        def node(prefix: str) -> str:
            """Text after the separator's whitespace that has gone as far as ``prefix`` along a key."""
            children = sorted({key[len(prefix)] for key in keys if key.startswith(prefix) and len(key) > len(prefix)})
            options = [f"{literal(ch)} {node(prefix + ch)}" for ch in children]
            taken = top | spaces | set(children)
            if prefix in keys:
                # A whole key: the text after keys may not come next, after whitespace or not.
                taken |= {after_key[0]}
                after_spaces = char_class(taken - set(children), negated=True)
                options.append(f"{space}+ ( {after_spaces} | {groups(inner)} ) {rest}")
            elif prefix:
                options.append(f"{space}+ {item} {rest}")
            options.append(f"{char_class(taken, negated=True)} {rest}")
            options.append(f"{groups(inner)} {rest}")
            body = " | ".join(options)
            return self.rules.add("raw-after-key" if prefix else "raw-next", f"( {body} ){'?' if prefix else ''}")

        after_separator = f"{literal(next_argument.separator)} {space}* {node('')}"
        more = f"( {space}* {after_separator} )*"
        # (a value that starts with the separator starts without whitespace too)
        return self.rules.add("raw-string", f"( {item} {rest} {more} | {after_separator} {more} )?")

    def loose(self, stops: str) -> str:
        """Any text with balanced ``{}``/``[]`` that holds the characters of ``stops`` only inside brackets."""
        inner = self.rules.recursive(
            "loose-inner", lambda name: f'( {char_class("{}[]", negated=True)} | "{{" {name} "}}" | "[" {name} "]" )*'
        )
        outer = char_class(set("{}[]") | set(stops), negated=True)
        return self.rules.add("loose", f'( {outer} | "{{" {inner} "}}" | "[" {inner} "]" )*')


class _ExactBuilder(_Builder):
    """The template's own whitespace, wherever it writes some (the default ``exact`` mode)."""

    def json_separators(self) -> tuple[str, ...]:
        # Exact JSON needs the template's separators (and its indentation, where it indents); where the
        # renders did not show them, the JSON keeps bounded whitespace between tokens.
        return self.calls.json_separators

    def space(self, written: str) -> str:
        return literal(written) if written else ""

    def gap(self, before: _Piece, after: _Piece) -> str:
        return literal(before.trail or after.lead)  # two markers split at whitespace both hold it: it stands once

    def calls_gap(self) -> str:
        return self.space(self.calls.separator_space)

    def section_tail(self, after: str) -> str:
        return literal(after)

    def content_text(self, text: str, words: tuple[str, ...]) -> str:
        return optional(text)

    def counts_calls(self) -> bool:
        return any(isinstance(part, Index) for part in self.calls.call)

    def eager(self, section: str, lead: str = "") -> str:
        """The eager grammar, each part with the whitespace the template writes around it."""
        reasoning = self.shape.reasoning
        prefix = self.join(self.markers(self.shape.prefix))
        switched_off = reasoning is None or reasoning.switched_off(self.thinking)

        def before_calls(piece: _Piece) -> str:
            """An optional reasoning block right before the calls, then whitespace up to them; without
            it, the calls' own whitespace. What a template writes between a block's close and the calls
            is not in the shape (the block's close is read from content turns, the calls' whitespace
            from turns without a block), so there the whitespace is bounded, not exact."""
            if not piece.expr:
                return self.space(lead)
            return choice([seq(piece.expr, self.rules.ws()), self.space(lead) or '""'])

        # Every turn's start, and what every turn starts with (the prefix, read before the calls'
        # region, so its whitespace and theirs follow each other).
        written_first = optional(seq(prefix.expr, self.space(prefix.trail))) if prefix.expr else ""
        start = seq(self.space(prefix.lead), written_first)
        if switched_off:
            return seq(start, self.space(lead), section)
        assert reasoning is not None
        close_trail = reasoning.close[-1].trail if reasoning.close else ""
        after = self.join(self.markers(reasoning.after))
        if not reasoning.opened_by_prompt(self.thinking):
            # What follows the block (the next message's prefix, where the block is a message of its own).
            block = self.join([_Piece(self.reasoning(), trail=close_trail), after])
            if _empty_block(self.shape.prefix, reasoning):
                # What every turn starts with is an empty block (Qwen3's ``<think>\n\n</think>``): it is a
                # reasoning block, the one a turn may hold, not a second spelling before it (two
                # alternatives starting alike, which a lexing reader cannot tell apart: it takes the
                # longest and never gives it back).
                return seq(self.space(prefix.lead), before_calls(block), section)
            return seq(start, before_calls(block), section)
        block = _Piece(self.reasoning(tuple(m.text for m in reasoning.after[:1])), trail=close_trail)
        if not after.expr:
            if _closes_block(self.shape.prefix, reasoning):
                # Every turn closes the block the prompt opened before anything else (Nemotron-3-Nano's
                # ``</think>``): the calls come after its close, never in it. (Calls at once would start
                # like the block's text, ``\n<tool_call``, which a lexing reader cannot tell apart.)
                return seq(block.expr, self.rules.ws(), section)
            return seq(before_calls(block), section)
        # What follows the block is the rest of every turn's prefix: its whitespace and the calls' follow
        # each other, as the prefix's do.
        rest = choice([seq(after.expr, self.space(after.trail), self.space(lead)), self.space(lead) or '""'])
        return seq(optional(seq(block.expr, self.rules.ws())), rest, section)

    def call_without_parameters(self, call: _Piece, bare: _Piece) -> _Piece:
        # The template's own whitespace, which the call pattern with its arguments left out may not write
        # (GLM's ``list_files\n</tool_call>``, where the pattern keeps a newline on each side of the
        # absent arguments).
        return bare if _respaced(bare, call) else call

    def call_with_optional_arguments(self, tool: Tool, call: _Piece) -> _Piece:
        # Arguments that may all be left out: a call without any is written as the template writes one
        # (its no-argument pattern, or the call pattern with the arguments left out where that is the
        # same) where the call pattern with none keeps the whitespace on both sides of them (Qwen3-Coder:
        # ``>\n</function>``, not ``>\n\n</function>``); with some, by the call pattern.
        bare_form = self.facts.without_arguments
        if bare_form is None:
            return call
        bare = self.sequence(bare_form, tool)
        if not (_same_call(bare.sample, call.sample) and _respaced(bare, call)):
            return call
        self.some_arguments = True
        try:
            some = self.sequence(self.facts.call, tool)
        finally:
            self.some_arguments = False
        return self.choice([some, bare])

    def whitespace_marker(self, part: Marker) -> _Piece | None:
        return _Piece(literal(part.lead + part.trail), spaced=part.lead + part.trail)

    def written_number(self, part: Index) -> _Piece | None:
        if self.position is None:
            return None
        number = str(part.base + self.position)
        return _Piece(literal(number), first=number, last=number, sample=number)

    def form_parts(self, form: ArgumentShape) -> list[ArgPart]:
        return _space_into_markers(form.parts)

    def raw_stop(self, ends: Markers, pieces: list[_Piece]) -> str:
        return ends[0].lead + ends[0].text  # the template's own whitespace, written before the marker


class _FlexibleBuilder(_Builder):
    """Bounded whitespace wherever the template writes some, and around values (``flexible`` mode)."""

    value_space = " "

    def json_separators(self) -> tuple[str, ...]:
        return ()

    def space(self, written: str) -> str:
        return self.rules.ws() if written else ""

    def gap(self, before: _Piece, after: _Piece) -> str:
        return self.rules.ws_required() if needs_space(before.last, after.first) else self.rules.ws()

    def calls_gap(self) -> str:
        return self.rules.ws()

    def section_tail(self, after: str) -> str:
        return optional(self.rules.ws())

    def content_text(self, text: str, words: tuple[str, ...]) -> str:
        # Flexible whitespace may stand between two calls: text that starts with it, or with a watched
        # word's first character, would start like one more call, which a lexing reader (taking the
        # longest run and never giving it back) could not tell from the text.
        first = char_class({" ", "\t", "\n", "\r"} | {word[0] for word in words}, negated=True)
        return optional(seq(first, text))

    def eager(self, section: str, lead: str = "") -> str:
        """The eager grammar, with bounded whitespace around each part."""
        reasoning = self.shape.reasoning
        prefix = self.join(self.markers(self.shape.prefix))
        switched_off = reasoning is None or reasoning.switched_off(self.thinking)
        ws = self.rules.ws()
        written_first = optional(seq(prefix.expr, ws)) if prefix.expr else ""
        if switched_off:
            return seq(ws, written_first, section)
        assert reasoning is not None
        rest = self.join(self.markers(reasoning.after)).expr
        if not reasoning.opened_by_prompt(self.thinking):
            closed = seq(self.reasoning(), ws, seq(rest, ws) if rest else "")
            if _empty_block(self.shape.prefix, reasoning):  # as the exact grammar does
                return seq(ws, optional(closed), section)
            return seq(ws, written_first, optional(closed), section)
        reasoning_block = self.reasoning(tuple(m.text for m in reasoning.after[:1]))
        if _closes_block(self.shape.prefix, reasoning) and not rest:  # as the exact grammar does
            return seq(ws, reasoning_block, ws, section)
        return seq(ws, optional(seq(reasoning_block, ws)), optional(seq(rest, ws)), section)

    def form_parts(self, form: ArgumentShape) -> list[ArgPart]:
        # Whitespace alone around a key or value is theirs: the parser trims what the template wrote.
        return [part for part in form.parts if not (isinstance(part, Marker) and not part.text)]

    def raw_stop(self, ends: Markers, pieces: list[_Piece]) -> str:
        if pieces:
            pieces[-1] = replace(pieces[-1], trail="")  # the whitespace before the marker is the text's
        return ends[0].text


def _space_into_markers(parts: tuple[ArgPart, ...]) -> list[ArgPart]:
    """Whitespace alone between two parts, held by the marker before it (as its ``trail``) or after it
    (``lead``), so that it is written exactly where the template writes it; kept on its own between
    a key and a value."""
    out: list[ArgPart] = []
    pending = ""
    for part in parts:
        if isinstance(part, Marker) and not part.text:
            written = part.lead + part.trail
            if out and isinstance(out[-1], Marker) and out[-1].text:
                out[-1] = replace(out[-1], trail=out[-1].trail + written)
            else:
                pending += written
            continue
        if pending:
            if isinstance(part, Marker):
                part = replace(part, lead=pending + part.lead)
            else:
                out.append(Marker("", pending, ""))
            pending = ""
        out.append(part)
    if pending:
        out.append(Marker("", pending, ""))
    return out


def _run(parts: list[ArgPart], start: int, step: int) -> Markers:
    """The markers from ``start`` on, going by ``step`` (-1: backwards), up to the next key or value,
    in their written order."""
    found: list[Marker] = []
    i = start
    while 0 <= i < len(parts) and isinstance(part := parts[i], Marker):
        found.append(part)
        i += step
    return tuple(found if step > 0 else reversed(found))


def _id_chars(form: IdForm) -> str:
    """GBNF for one id of ``form``."""
    repeat = (
        "+"
        if (form.min_length, form.max_length) == (1, 0)
        else f"{{{form.min_length},{form.max_length or ''}}}"
        if form.min_length != form.max_length
        else f"{{{form.min_length}}}"
    )
    return char_class(form.chars, negated=form.excluded) + repeat


def _put(tree: dict[str, Any], written: dict[str, Any], path: tuple[str, ...], expr: str, value: Any) -> None:
    """Put a member's grammar in ``tree`` and its value for a call without arguments in ``written``."""
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
        written = written.setdefault(key, {})
    tree[path[-1]] = expr
    written[path[-1]] = value


def _empty_block(prefix: Markers, reasoning: ReasoningShape) -> bool:
    """Whether what every turn starts with is a reasoning block with no text: its open and close markers."""
    written = "".join(marker.text for marker in prefix)
    opening, closing = "".join(m.text for m in reasoning.open), "".join(m.text for m in reasoning.close)
    return bool(opening and closing) and written == opening + closing


def _closes_block(prefix: Markers, reasoning: ReasoningShape) -> bool:
    """Whether what every turn starts with is the reasoning block's close marker (the prompt opened it)."""
    closing = "".join(m.text for m in reasoning.close)
    return bool(closing) and "".join(marker.text for marker in prefix) == closing


def _respaced(one: _Piece, other: _Piece) -> bool:
    """Whether two pieces the exact grammar writes differ in their whitespace (known for both)."""
    return one.spaced is not None and other.spaced is not None and one.spaced != other.spaced


def _same_call(one: str, other: str) -> bool:
    """Whether two calls without arguments write the same, whitespace aside, and an index quoted or
    not aside (the grammar takes both)."""

    def norm(text: str) -> str:
        return _QUOTED_DIGITS.sub(r"\1", _SPACES.sub("", text))

    return norm(one) == norm(other)


def _string_choices(schema: Any) -> list[str]:
    """The values a string argument may take when its schema lists them (enum or const), else []."""
    if not isinstance(schema, dict):
        return []
    values = schema.get("enum") or ([schema["const"]] if "const" in schema else [])
    return list(values) if values and all(isinstance(value, str) for value in values) else []


_ALL_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")


def _json_types(schema: Any, forms: dict[str, ArgumentShape]) -> list[str]:
    """The JSON types a value of ``schema`` may have (each picks an argument form): the one it gives,
    those of a type list or of anyOf/oneOf options, or, where the schema says nothing, every type the
    template has a form for."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, list):
            return [k for k in kind if isinstance(k, str)] or list(forms)
        if isinstance(kind, str):
            return [kind]
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options:
                found = [t for option in options for t in _json_types({**schema, combinator: [], **option}, forms)]
                return list(dict.fromkeys(found))
        if any(key in schema for key in ("enum", "const", "properties", "items")):
            return [_json_type(schema)]
    return [kind for kind in _ALL_TYPES if kind in forms] or ["string"]


def _narrowed(schema: Any, kinds: list[str]) -> Any:
    """``schema`` for values of ``kinds`` only: the anyOf/oneOf options of those types, or the type
    list cut to them."""
    if not isinstance(schema, dict):
        return {"type": kinds}
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            base = {k: v for k, v in schema.items() if k != combinator}
            kept = [
                o for o in options if set(_json_types({**base, **o} if isinstance(o, dict) else o, {})) & set(kinds)
            ]
            return {**base, combinator: kept} if kept else {**base, "type": kinds}
    return {**schema, "type": kinds[0] if len(kinds) == 1 else kinds}


def _json_type(schema: Any) -> str:
    """The JSON type an argument's schema gives, to pick its argument form."""
    if not isinstance(schema, dict):
        return "string"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    values = schema.get("enum") or ([schema["const"]] if "const" in schema else [])
    if values:
        return {
            bool: "boolean",
            int: "integer",
            float: "number",
            str: "string",
            type(None): "null",
            dict: "object",
            list: "array",
        }.get(type(values[0]), "string")
    return "object" if "properties" in schema else "array" if "items" in schema else "string"
