"""transformers' ``response_template`` (version 1) from the output shape.

A response_template (transformers 5.23, ``transformers/utils/chat_parsing/``) describes a message as
regions of text: each field of the message opens and closes on a literal or a regular expression,
its text goes through one content parser (``text``, ``json``, ``xml-inline``, ...), and a
``transform`` shapes the value; named groups of a field's opener reach the value through the
transform. Text outside every region goes to the one field without an opener (here ``content``), or
is dropped when no field lacks one. The parser sees the prompt too: ``start_anchor`` marks where the
message starts in it, so what the prompt pre-writes (an opened ``<think>``) is read as the model's.

``to_response_template(shape)`` writes the shape in those terms, a call's parts by their kind (the
parts around the arguments as regex by ``_Builder.part``, the arguments as a content parser by
``_Builder.arguments``, each one ``match`` over the kinds):

- ``thinking``: the reasoning block, from its open to its close marker, or to a call or the content's
  opener where the model skips the close;
- ``tool_calls``: one region per call, opened by what the call writes before its arguments (its
  name, id and index caught by named groups; the section opener or the separator before it), its
  arguments read by ``json`` (a JSON value, a JSON call object) or ``xml-inline`` (arguments written
  one by one, typed by the tools' schemas as transformers casts them), closed by what follows them.
  A section that is a JSON array of calls is one region read as a list;
- ``content``: the rest, up to the turn's end; text after the stop is not the model's.

``thinking`` and ``content`` are plain text fields, which every reader serves (vLLM refuses them
with a ``join`` or a transform). The cost: where a model writes content on both sides of a call,
transformers keeps the last piece, as it does for its own templates.

Whitespace around markers is free, as the parser (``analyzer.runtime``) takes it. Where the language
cannot say something the shape says, the part is named with the reason (``LeftOut``): it raises
``Inexpressible``, or with ``partial=True`` the rest is written and the parts are listed. Nothing is
approximated without saying so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, assert_never

from analyzer.errors import Inexpressible, InputError
from analyzer.runtime.key_values import form_groups
from analyzer.runtime.shape import (
    ArgKey,
    ArgumentShape,
    ArgValue,
    CallId,
    CallsShape,
    Escapes,
    Index,
    JsonArgs,
    JsonCall,
    JsonCallObject,
    KeyValueArgs,
    Marker,
    Markers,
    Name,
    OutputShape,
    Part,
    id_pattern,
)
from analyzer.runtime.shape_analysis import analysis, leading_markers

VERSION = 1
# The key tokenizer_config.json holds it under, which tokenizers load as ``tokenizer.response_template``.
CONFIG_KEY = "response_template"
# A function or argument name with no marker after it: word characters of any script, dots, dashes.
_NAME = r"[\w.\-]+"
# One a marker follows: written as is, up to that marker (a quote, any script), as the runtime reads it.
_NAME_BEFORE_MARKER = r"\S+?"
_NAME_BEFORE_SPACE = r"[^\s{\[]+"
# A transform placeholder reaches into a value by keys made of word characters only.
_PLACEHOLDER_KEY = re.compile(r"\w+")
# The field reasoning goes to. transformers serve reads "reasoning_content", "thinking" or "reasoning";
# vLLM's response_template parser serves "thinking", "content" and "tool_calls" only.
REASONING_FIELD = "thinking"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A part of the format the response_template does not express, and why."""

    part: str
    reason: str

    def __str__(self) -> str:
        return f"{self.part}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ResponseTemplate:
    """The ``response_template`` JSON object, and the parts it leaves out (empty unless partial)."""

    template: dict[str, Any]
    left_out: tuple[LeftOut, ...] = ()

    def to_json(self) -> str:
        return json.dumps(self.template, ensure_ascii=False, indent=2) + "\n"


class _Cannot(Exception):
    """A part cannot be written; caught where the part is built, and recorded as left out."""

    def __init__(self, reason: str, part: str = "tool calls") -> None:
        super().__init__(reason)
        self.part, self.reason = part, reason


def to_response_template(shape: OutputShape, *, partial: bool = False) -> ResponseTemplate:
    """The response_template for ``shape``. Raises ``Inexpressible`` naming the first part it cannot
    write; with ``partial``, writes the rest and lists those parts instead."""
    builder = _Builder(shape)
    template = builder.build()
    if builder.left_out and not partial:
        raise Inexpressible(shape.template, [(item.part, item.reason) for item in builder.left_out])
    return ResponseTemplate(template, tuple(builder.left_out))


def into_tokenizer_config(text: str, template: dict[str, Any], where: str = "tokenizer_config.json") -> str:
    """``text`` (a tokenizer_config.json) with ``template`` under ``response_template``: every other key
    is kept, in its order, with its value."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(config, dict):
        raise InputError(f"{where}: a tokenizer_config.json must hold a JSON object")
    config[CONFIG_KEY] = template
    return json.dumps(config, ensure_ascii=False, indent=2) + "\n"


# --------------------------------------------------------------------------- regular expressions


def _flex(markers: Markers) -> str:
    """Markers as a regex: their texts, any whitespace between them (the runtime's leniency)."""
    return r"\s*".join(re.escape(m.text) for m in markers if m.text)


def _either(options: list[str]) -> str:
    kept = list(dict.fromkeys(option for option in options if option))
    if len(kept) <= 1:
        return "".join(kept)
    return "(?:" + "|".join(kept) + ")"


def _spaces(text: str) -> str:
    """Whitespace as a regex a reader can see (``\n``, not an escaped line break)."""
    return "".join({"\n": r"\n", "\t": r"\t", "\r": r"\r", " ": " "}.get(ch, re.escape(ch)) for ch in text)


def _delimiter(key: str, pattern: str, literal: str | None = None) -> dict[str, str]:
    """``open``/``close`` as a literal where one will do (transformers commits a literal at once, a
    regex only when the next character shows it cannot go on), else ``open_pattern``/``close_pattern``."""
    return {key: literal} if literal else {f"{key}_pattern": pattern}


# The parts that hold a call's arguments, which a region's content parser reads; the other parts of a
# call are read by its opener and closer.
CallArguments = JsonArgs | KeyValueArgs | JsonCallObject


def _arguments_part(call: tuple[Part, ...]) -> tuple[int, CallArguments] | None:
    """Where the call's first arguments part stands, and that part."""
    for k, part in enumerate(call):
        if isinstance(part, CallArguments):
            return k, part
    return None


@dataclass(frozen=True, slots=True)
class _Edges:
    """What a call's opener and closer need to know of the arguments between them."""

    # The characters they may start with: a name right before them reads up to one of these.
    starts: str = "{["
    # A lookbehind for what they end with, where a call that ends with its arguments closes at what
    # follows it: inside valid JSON, '}' is never followed by whitespace and the next call's opener.
    ends_after: str = ""
    # They are a JSON value written after the name: with nothing literal before them, a call opens only
    # where such a value starts (the name alone is any word).
    json_after_name: bool = False
    # Where they are the whole call as one JSON object, its layout: a call without markers opens with
    # its first key.
    json_call: JsonCall | None = None


# Arguments read as one JSON object: a JSON value that ends with '}'.
_JSON_OBJECT = _Edges(ends_after=r"(?<=\})", json_after_name=True)


@dataclass(frozen=True, slots=True)
class _Reading:
    """How a call's region reads its arguments part: the ``content`` parser with ``content_args``, the
    ``transform`` that makes a call of what it read, the ``edges`` its opener and closer meet, and
    whether the '{' and '}' the call writes around them belong to them (``in_braces``: read as one
    object in the template's notation)."""

    content: str
    content_args: dict[str, Any]
    transform: dict[str, Any]
    edges: _Edges
    in_braces: bool = False


def _prompt_text_in_block(shape: OutputShape) -> str:
    """The text the generation prompt writes inside the block it opens, after the open marker
    (Apriel: "Here are my reasoning steps:"), whitespace around it left out; "" when none."""
    reasoning, prompt = shape.reasoning, shape.generation_prompt
    if reasoning is None or not reasoning.forced_open or reasoning.open[0].text not in prompt:
        return ""
    rest = prompt[prompt.rindex(reasoning.open[0].text) + len(reasoning.open[0].text) :]
    for marker in reasoning.open[1:]:
        rest = rest.lstrip()
        rest = rest[len(marker.text) :] if rest.startswith(marker.text) else rest
    return rest.strip()


# --------------------------------------------------------------------------- the builder


class _Builder:
    def __init__(self, shape: OutputShape) -> None:
        self.shape = shape
        self.left_out: list[LeftOut] = []
        self.prompt_text_in_block = _prompt_text_in_block(shape)
        self.anchor, self.remainder = self._start_anchor()

    def unsupported(self, part: str, reason: str) -> None:
        if all(item.part != part for item in self.left_out):  # one reason per part: the first found
            self.left_out.append(LeftOut(part, reason))

    def build(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        reasoning = self.reasoning()
        if reasoning is not None:
            fields[REASONING_FIELD] = reasoning
        calls = None
        if self.shape.calls is not None:
            try:
                calls = self.calls(self.shape.calls)
            except _Cannot as exc:
                self.unsupported(exc.part, exc.reason)
        if calls is not None:
            fields["tool_calls"] = calls
        fields["content"] = self.content()
        return {"version": VERSION, "defaults": {"role": "assistant"}, **self.anchor, "fields": fields}

    # ------------------------------------------------------------------ where the message starts

    def _start_anchor(self) -> tuple[dict[str, str], bool]:
        """Where the assistant's message starts in the prompt: after the generation prompt, less the
        reasoning opener the prompt writes, which the parser must read as the model's. Where the
        request's thinking switch makes the prompt open reasoning and the default does not, the
        message may also start right before an opener that ends the prompt. Also returns whether the
        parser reads something of the prompt before the model's output (the opener), so that "the
        start of the output" is not the start of what it reads."""
        shape, reasoning = self.shape, self.shape.reasoning
        written = shape.generation_prompt
        opener = reasoning.open[0].text if reasoning is not None else ""
        remainder = False
        from_opener = ""
        if reasoning is not None and reasoning.forced_open and opener in written:
            at = written.rindex(opener)
            written, from_opener = written[:at], written[at:]
            remainder = True
        options = [re.escape(written) if written else r"\Z"]
        if self.prompt_text_in_block:
            # The prompt goes on past the opener, where its start may recur ("\n"): only the start
            # right before the opener and the rest of the prompt will do.
            options = [rf"{re.escape(written)}(?={re.escape(from_opener)}\Z)"]
        if reasoning is not None and reasoning.toggle and reasoning.opened_when_thinking and not reasoning.forced_open:
            options.append(rf"(?={_flex(reasoning.open)}\s*\Z)")
            remainder = True
        if options == [re.escape(written)] and written:
            return {"start_anchor": written}, remainder
        return {"start_anchor_pattern": "|".join(options)}, remainder

    # ------------------------------------------------------------------ reasoning and content

    def reasoning(self) -> dict[str, Any] | None:
        reasoning = self.shape.reasoning
        if reasoning is None:
            return None
        # A call or the content's opener ends the block too: a model may skip the close marker (where
        # the prompt opened the block), and neither is reasoning.
        closers = [rf"\s*{_flex(reasoning.close)}"]
        if self.shape.calls is not None and self.shape.calls.trigger.word:
            closers.append(rf"(?=\s*{re.escape(self.shape.calls.trigger.word)})")
        if self.shape.content_open:
            closers.append(rf"(?=\s*{_flex(self.shape.content_open)})")
        single = reasoning.open[0].text if len(reasoning.open) == 1 else None
        opening = _delimiter("open", _flex(reasoning.open), single)
        if self.prompt_text_in_block:
            # The prompt's words after the opener are not the model's reasoning.
            words = rf"(?:\s*{re.escape(self.prompt_text_in_block)})?"
            opening = {"open_pattern": _flex(reasoning.open) + words}
        return {**opening, "close_pattern": _either(closers), "content": "text"}

    def turn_end(self) -> str:
        """The turn's end through its stop, or a stop alone (the model may stop there); not where a
        call starts with the stop (a template that writes a call as a new message opened by it)."""
        shape = self.shape
        options = []
        written = "".join(m.text for m in shape.end)
        for stop in shape.stops:
            at = written.find(stop)
            if at == -1:
                continue
            upto, kept = at + len(stop), []
            for marker in shape.end:
                if upto <= 0:
                    break
                kept.append(Marker(marker.text[:upto]))
                upto -= len(marker.text)
            options.append(_flex(tuple(kept)) + self._not_a_call(stop))
        options += [re.escape(stop) + self._not_a_call(stop) for stop in shape.stops if stop]
        return _either(options)

    def _not_a_call(self, stop: str) -> str:
        """A negative lookahead for the rest of a call opener that starts with ``stop``."""
        calls = self.shape.calls
        if calls is None:
            return ""
        for opener in (calls.section_open, leading_markers(calls.call)):
            if opener and opener[0].text.startswith(stop):
                rest = (Marker(opener[0].text[len(stop) :]), *opener[1:])
                return rf"(?!\s*{_flex(rest)})" if _flex(rest) else ""
        return ""

    def content(self) -> dict[str, Any]:
        """Everything else, up to the turn's end. Text after the stop is not the model's: the close
        takes it in (it can only end with the output). The markers no field ends with (the section
        closer after the last call, what follows a reasoning block) close it too, which takes them
        in: a regex close cannot end with an optional marker, transformers commits it without."""
        shape = self.shape
        end = self.turn_end()
        field: dict[str, Any] = {"content": "text"}
        if not shape.content_open:
            closers = [rf"{end}[\s\S]*"] if end else []
            if shape.calls is not None and shape.calls.section_close and not _json_array_section(shape.calls):
                closers.append(_flex(shape.calls.section_close))
            if shape.reasoning is not None and shape.reasoning.after:
                closers.append(_flex(shape.reasoning.after))
            leftover = _flex(self._prefix_no_field_takes())
            if leftover:
                # What every turn starts with, at the start of the output: what the parser reads first.
                closers.append(rf"\A{leftover}")
            if closers:
                field["close_pattern"] = rf"\s*{_either(closers)}"
            return field
        # Content has a marker of its own: it opens there; text outside every region is dropped.
        closers = [_flex(shape.content_close)] if shape.content_close else []
        if end:
            closers.append(end)
        starts = self._call_starts()
        if starts:
            closers.append(f"(?={_either(starts)})")
        field["open_pattern"] = rf"\s*{_flex(shape.content_open)}"
        if closers:
            field["close_pattern"] = rf"\s*{_either(closers)}"
        return field

    def _prefix_no_field_takes(self) -> Markers:
        """What every turn starts with (the shape's prefix) unless a field reads it: an empty reasoning
        block is the thinking field's, and a close marker is too where the prompt opened the block."""
        prefix, reasoning = self.shape.prefix, self.shape.reasoning
        if not _flex(prefix) or reasoning is None:
            return prefix if _flex(prefix) else ()
        written = "".join(m.text for m in prefix)
        if written.startswith("".join(m.text for m in reasoning.open)):
            return ()
        if self.remainder and written.startswith("".join(m.text for m in reasoning.close)):
            # Where the prompt opens the block only with thinking switched on, the default output
            # starts with the close marker as its prefix, and the field takes it only after an opener.
            return () if reasoning.forced_open else prefix
        if self.remainder:
            self.unsupported(
                "what every turn starts with",
                "it is no reasoning block, and the parser reads the "
                "prompt's reasoning opener before it, so no anchor says "
                "where the output starts",
            )
            return ()
        return prefix

    def _call_starts(self) -> list[str]:
        calls = self.shape.calls
        if calls is None:
            return []
        words = [calls.section_open[:1], leading_markers(calls.call)[:1], (calls.separator or ())[:1]]
        return [re.escape(word[0].text) for word in words if word and word[0].text]

    # ------------------------------------------------------------------ calls

    def calls(self, calls: CallsShape) -> dict[str, Any]:
        for part in calls.call:
            if isinstance(part, Name):
                self.escaped_names("function names", part.escapes)
        if _json_array_section(calls) and isinstance(first := calls.call[0], JsonCallObject):
            return self.array_section(calls, first)
        found = _arguments_part(calls.call)
        if found is None:
            raise _Cannot("a call has no arguments part")
        at, body = found
        head, tail = calls.call[:at], calls.call[at + 1 :]
        later = next((part for part in tail if isinstance(part, (Name, CallId))), None)
        if later is not None:
            what = "name" if isinstance(later, Name) else "id"
            raise _Cannot(
                f"the call's {what} is written after its arguments, and transformers takes named groups "
                "from a field's opener only"
            )
        region: dict[str, Any] = {}
        braced = (
            bool(head)
            and isinstance(head[-1], Marker)
            and head[-1].text.endswith("{")
            and bool(tail)
            and isinstance(tail[0], Marker)
            and tail[0].text.startswith("}")
        )
        reading = self.arguments(body, at, braced)
        transform = reading.transform
        if reading.in_braces:
            opener, closer = self._inside_braces(calls, head, tail)
        else:
            opener, closer = self.opener(calls, head, reading.edges), self.closer(calls, tail, reading.edges)
        region.update(opener)
        region.update(closer)
        region.update({"repeats": True, "content": reading.content})
        if reading.content_args:
            region["content_args"] = reading.content_args
        if any(isinstance(part, CallId) for part in head) and "id" not in transform:
            transform = {"id": "{id}", **transform}
        region["transform"] = transform
        return region

    def opener(self, calls: CallsShape, head: tuple[Part, ...], edges: _Edges) -> dict[str, str]:
        """What a call writes before its arguments, after the section opener or the separator."""
        before = [_flex(calls.section_open), _flex(calls.separator or ())]
        pattern = self.sequence(head, edges.starts)
        literal_first = bool(head) and isinstance(head[0], Marker) and bool(head[0].text)
        if literal_first:
            lead = _either(before)
            return {"open_pattern": rf"\s*(?:{lead}\s*)?{pattern}" if lead else rf"\s*{pattern}"}
        # Nothing literal opens the call: it opens after the section opener or the separator, or at
        # the start of the output (after what every turn starts with) where calls may start it.
        starts = [option for option in before if option]
        if calls.trigger.at_start or calls.trigger.tool_name:
            if self.remainder:
                raise _Cannot(
                    "a call opens with its name at the start of the output, and the parser reads the "
                    "prompt's reasoning opener before it, so no anchor says where the output starts"
                )
            prefix = _flex(self.shape.prefix)
            starts.append(rf"\A\s*(?:{prefix})?" if prefix else r"\A")
        if edges.json_call is not None and not head:
            first = _json_call_lookahead(edges.json_call)
            return {"open_pattern": rf"\s*(?:{_either(starts)}\s*)?{first}" if starts else rf"\s*{first}"}
        if not starts:
            raise _Cannot(
                "a call opens with its name, and neither a section opener nor a separator marks where one starts"
            )
        if edges.json_after_name and not any(isinstance(p, Marker) and p.text for p in head):
            pattern += r"\s*(?=[\[{])"  # the name alone is any word: a call is a name then its JSON
        return {"open_pattern": rf"\s*{_either(starts)}\s*{pattern}"}

    def closer(self, calls: CallsShape, tail: tuple[Part, ...], edges: _Edges) -> dict[str, str]:
        """What a call writes after its arguments, with the section closer after it; a call that ends
        with its arguments closes where what may follow it begins."""
        written = self.sequence(tail)
        if written:
            single = tail[0].text if len(tail) == 1 and isinstance(tail[0], Marker) else None
            return _delimiter("close", rf"\s*{written}", single)
        facts = analysis(self.shape).calls
        assert facts is not None
        follow = [re.escape(text) for text in facts.followers if text]
        if edges.json_call is not None and not any(isinstance(p, Marker) and p.text for p in calls.call):
            follow.append(_json_call_lookahead(edges.json_call)[3:-1])  # the next call, bare JSON too
        if not follow:
            return {}
        return {"close_pattern": rf"{edges.ends_after}(?=\s*{_either(follow)})"}

    def _inside_braces(
        self, calls: CallsShape, head: tuple[Part, ...], tail: tuple[Part, ...]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Opener and closer for arguments written as one object in the template's notation: the call's
        markers less the braces, which the json parser must see."""
        last, first = head[-1], tail[0]
        assert isinstance(last, Marker) and isinstance(first, Marker)
        head = (*head[:-1], Marker(last.text[:-1], last.lead)) if last.text[:-1] else head[:-1]
        tail = (Marker(first.text[1:], "", first.trail), *tail[1:]) if first.text[1:] else tail[1:]
        opener = self.opener(calls, head, _JSON_OBJECT)["open_pattern"] + r"(?=\{)"
        closer = self.closer(calls, tail, _JSON_OBJECT)
        pattern = closer.get("close_pattern") or re.escape(closer.get("close", ""))
        return {"open_pattern": opener}, {"close_pattern": r"(?<=\})" + pattern}

    def array_section(self, calls: CallsShape, call: JsonCallObject) -> dict[str, Any]:
        """A section that is a JSON array of call objects: one region, read as a list, each item
        shaped by the transform."""
        opening, closing = list(calls.section_open), list(calls.section_close)
        opening[-1] = Marker(opening[-1].text[:-1], opening[-1].lead)
        closing[0] = Marker(closing[0].text[1:], "", closing[0].trail)
        before, after = _flex(tuple(opening)), _flex(tuple(closing))
        if not before:
            raise _Cannot("the calls are a bare JSON array: nothing before its '[' tells it from content")
        region: dict[str, Any] = {"open_pattern": rf"\s*{before}(?=\s*\[)"}
        if after:
            region["close_pattern"] = rf"(?<=\])\s*{after}"
        elif self.shape.stops:
            region["close_pattern"] = rf"(?<=\])(?=\s*{_either([re.escape(s) for s in self.shape.stops])})"
        region.update({"content": "json", "transform": _json_call_transform(call.layout, ""), "transform_each": True})
        return region

    # ------------------------------------------------------------------ one method per part kind

    def sequence(self, parts: tuple[Part, ...], ends: str = "") -> str:
        """Markers and the fields around the arguments as one regex, whitespace free between them.
        ``ends``: the characters what follows the last part may start with."""
        pieces = [self.part(part, parts[k + 1] if k + 1 < len(parts) else None, ends) for k, part in enumerate(parts)]
        return r"\s*".join(piece for piece in pieces if piece)

    def escaped_names(self, what: str, escapes: Escapes) -> None:
        """Names the template writes escaped: transformers takes a name as written, and neither its
        content parsers nor its transforms read an escape back."""
        if escapes:
            written = ", ".join(f"{ch!r} as {text!r}" for ch, text in escapes)
            self.unsupported(
                what,
                f"written escaped ({written}), which transformers does not read back: a name holding "
                "those characters would come back as written",
            )

    def part(self, part: Part, after: Part | None, ends: str) -> str:
        """The one place a call part becomes regex in a region's opener or closer. ``after``: the part
        that follows it; ``ends``: the characters what follows the last part may start with. An
        arguments part here is a second one: a region's content parser (``arguments``) reads one only."""
        match part:
            case Marker():
                return re.escape(part.text)
            case Name():
                return self.name(after, ends)
            case CallId():
                return rf"(?P<id>{id_pattern(part.form)})"
            case Index():
                return r"\d+"
            case JsonArgs() | KeyValueArgs() | JsonCallObject():
                raise _Cannot(f"a {part.kind} part besides the arguments is not read by any content parser")
            case _:
                # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
                assert_never(part)

    def name(self, after: Part | None, ends: str) -> str:
        """The function name as a named group, reaching as far as the runtime reads it: up to what follows."""
        if isinstance(after, Marker):
            # Up to the marker after it, or, where whitespace is written after it, up to that.
            return rf"(?P<name>{_NAME_BEFORE_MARKER if after.text else _NAME_BEFORE_SPACE})"
        if after is None and ends:
            # The runtime reads a name up to what may follow it.
            return rf"(?P<name>[^\s{''.join(re.escape(ch) for ch in sorted(set(ends)))}]+)"
        return rf"(?P<name>{_NAME})"

    def arguments(self, part: CallArguments, at: int, braced: bool) -> _Reading:
        """The one place a call's arguments part becomes a content parser, with what the call's opener
        and closer need to know of it. ``at``: where the call writes it; ``braced``: the call writes '{'
        and '}' right around it."""
        match part:
            case JsonArgs():
                return self.json_args(part)
            case JsonCallObject():
                edges = _Edges(ends_after=_JSON_OBJECT.ends_after, json_call=part.layout)
                return _Reading("json", {}, _json_call_transform(part.layout, "content."), edges)
            case KeyValueArgs():
                return self.key_value_args(part, at, braced)
            case _:
                # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
                assert_never(part)

    def json_args(self, part: JsonArgs) -> _Reading:
        if part.encoding == "string":
            raise _Cannot(
                "the arguments are written as a JSON string holding the object, which the json "
                "content parser decodes once, to a string"
            )
        if part.encoding == "python":
            raise _Cannot("the arguments are written as a Python dict, which the json content parser does not read")
        return _Reading("json", {}, _call_transform("{name}", "{content}"), _JSON_OBJECT)

    def key_value_args(self, part: KeyValueArgs, at: int, braced: bool) -> _Reading:
        if part.string_escaping != "none":
            raise _Cannot(
                f"string values are written with {part.string_escaping} escapes but no quotes, and "
                "xml-inline keeps a value's text as written"
            )
        notation = _object_notation(part) if braced else None
        if notation is not None:
            for form in part.forms:
                if form.json_type in ("boolean", "null", "integer", "number") and form.syntax not in ("json", "raw"):
                    self.unsupported(
                        f"{form.json_type} argument values",
                        f"written in {form.syntax.capitalize()} notation inside the call's object "
                        "notation, which the json content parser does not read (such a call fails "
                        "to parse)",
                    )
            return _Reading("json", notation, _call_transform("{name}", "{content}"), _JSON_OBJECT, in_braces=True)
        forms = [group.forms for group in form_groups(part.forms)]  # in the order the runtime tries them
        for form in part.forms:
            for item in form.parts:
                if isinstance(item, ArgKey):
                    self.escaped_names("argument names", item.escapes)
        for form in part.forms:
            if form.json_type in ("object", "array") and form.syntax == "python":
                self.unsupported(
                    f"{form.json_type} argument values",
                    "written as Python literals ({'a': 1}), and transformers casts object and array "
                    "values with json.loads only; they come back as text",
                )
            elif form.syntax == "unknown":
                self.unsupported(
                    f"{form.json_type} argument values",
                    "the renders do not show how they are written; they come back as whatever text "
                    "the tag pattern takes",
                )
        alternatives = []
        for group in forms:
            alternative = _tag_pattern(group[0], part.string_wrapper)
            if alternative is None:
                self.unsupported(
                    f"{'/'.join(form.json_type for form in group)} argument values",
                    "written with nothing literal around them, so no tag pattern finds where they end",
                )
            else:
                alternatives.append(alternative)
        if not alternatives:
            raise _Cannot("no argument form has a tag pattern")
        args = {
            "tag_pattern": alternatives[0]
            if len(alternatives) == 1
            else "|".join(f"(?:{alternative})" for alternative in alternatives)
        }
        facts = analysis(self.shape).calls
        assert facts is not None
        # What follows them where there may be none: a name before them reads up to that too.
        edges = _Edges(starts=facts.call.arguments_start(at))
        return _Reading("xml-inline", args, _call_transform("{name}", "{content}"), edges)


# --------------------------------------------------------------------------- helpers


def _call_transform(name: str, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    call: dict[str, Any] = {"type": "function", "function": function}
    return {"id": call_id, **call} if call_id else call


def _json_call_transform(layout: JsonCall, root: str) -> dict[str, Any]:
    """The transform reading a JSON call object's name, arguments and id at their key paths."""
    if layout.name_is_key:
        raise _Cannot(
            "a call is written as {NAME: ARGUMENTS}: the name is an object key, and a transform reads "
            "values at fixed keys only"
        )
    if layout.arguments_encoding == "string":
        raise _Cannot(
            "the arguments are written as a JSON string holding the object, which the json content "
            "parser decodes once, to a string"
        )
    paths = {"name": layout.name_path, "arguments": layout.arguments_path, "id": layout.id_path or ()}
    for what, path in paths.items():
        if any(not _PLACEHOLDER_KEY.fullmatch(key) for key in path):
            raise _Cannot(
                f"the call's {what} sits at the key path {list(path)}, which a transform placeholder "
                "cannot name (word characters only)"
            )

    def at(path: tuple[str, ...]) -> str:
        return "{" + root + ".".join(path) + "}" if path else "{" + root.rstrip(".") + "}"

    return _call_transform(
        at(layout.name_path), at(layout.arguments_path), at(layout.id_path) if layout.id_path else None
    )


def _json_call_lookahead(layout: JsonCall) -> str:
    """A call written as bare JSON opens with its first key, the same in every call."""
    if layout.name_is_key or not layout.key_order:
        raise _Cannot("a call is written as bare JSON whose first key varies, so nothing tells a call from content")
    return r'(?=\{\s*"' + re.escape(layout.key_order[0]) + '")'


def _json_array_section(calls: CallsShape) -> bool:
    """The section is a JSON array of call objects: '[' ends its opener, ']' starts its closer, ','
    separates the calls."""
    return (
        len(calls.call) == 1
        and isinstance(calls.call[0], JsonCallObject)
        and bool(calls.section_open)
        and calls.section_open[-1].text.endswith("[")
        and bool(calls.section_close)
        and calls.section_close[0].text.startswith("]")
        and calls.separator is not None
        and [m.text for m in calls.separator] == [","]
    )


def _tag_pattern(form: ArgumentShape, wrapper: tuple[str, str]) -> str | None:
    """One argument form as xml-inline's tag pattern (named groups key and value). The value runs to
    the literal after it, less exactly the whitespace the template writes around it (a value's own
    trailing newline survives), as the runtime reads it; None when no literal ends the value."""
    parts = form.parts
    at = next((k for k, p in enumerate(parts) if isinstance(p, ArgValue)), None)
    if (
        at is None
        or not any(isinstance(p, ArgKey) for p in parts[:at])
        or not any(isinstance(p, Marker) and p.text for p in parts[at + 1 :])
    ):
        return None
    before, after = _written(parts[:at], last=True), _written(parts[at + 1 :], last=False)
    value = r"(?P<value>.*?)"
    if wrapper[0]:
        value = rf"(?:{re.escape(wrapper[0])}{value}{re.escape(wrapper[1])}|{value})"
    pattern = ""
    for k, part in enumerate(parts):
        match part:
            case ArgKey():
                following = parts[k + 1] if k + 1 < len(parts) else None
                marked = isinstance(following, Marker) and bool(following.text)
                pattern += rf"(?P<key>{_NAME_BEFORE_MARKER if marked else _NAME})"
            case ArgValue():
                pattern += (
                    (f"(?:{_spaces(before)})?" if before else "") + value + (f"(?:{_spaces(after)})?" if after else "")
                )
            case Marker():
                if not part.text:
                    continue  # whitespace alone: no text to match; the whitespace next to a marker takes it
                # Whitespace before a marker is free, except right after the value, where it was trimmed.
                if k and not isinstance(parts[k - 1], ArgValue):
                    pattern += r"\s*"
                pattern += re.escape(part.text)
            case _:
                # mypy proves no kind is left out; tests/backends/test_part_dispatch.py sends each one here.
                assert_never(part)
    return pattern


def _written(parts: tuple[object, ...], *, last: bool) -> str:
    """The whitespace the template writes between a value and the markers next to it."""
    markers = [p for p in parts if isinstance(p, Marker)]
    if not markers:
        return ""
    edge = markers[-1] if last else markers[0]
    return edge.trail if last else edge.lead


def _object_notation(part: KeyValueArgs) -> dict[str, Any] | None:
    """Content arguments for json when the arguments, with the braces the call writes around them,
    read as one object in a JSON dialect: ``key:value`` pairs joined by ',', keys bare, strings
    between the template's own quotes (Gemma 4's ``{city:<|"|>Paris<|"|>,days:3}``); None otherwise."""
    quotes = part.string_quotes
    if not quotes[0] or [m.written for m in part.separator] != [","]:
        return None
    for form in part.forms:
        texts = [p.text if isinstance(p, Marker) else p.kind for p in form.parts]
        bare = texts == ["argument_key", ":", "argument_value"]
        quoted = texts == ["argument_key", ":" + quotes[0], "argument_value", quotes[1]]
        if not (quoted if form.json_type == "string" else bare):
            return None
        if any(p.lead or p.trail for p in form.parts if isinstance(p, Marker)):
            return None
    return {"unquoted_keys": True, "string_delims": [list(quotes)]}


__all__ = ["CONFIG_KEY", "VERSION", "LeftOut", "ResponseTemplate", "into_tokenizer_config", "to_response_template"]
