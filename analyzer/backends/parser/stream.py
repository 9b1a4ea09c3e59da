"""The parser: a state machine over the model's output, fed in chunks of any size.

States follow the output shape: optional reasoning, content, and call sections. In content and
reasoning the scanner looks for the next marker and emits the text before it, holding back a tail
that may be the start of a marker, so a half-written ``<tool_`` never shows up as content. A call is
matched once the text that can close it has arrived, so each call is matched a bounded number of
times, not once per chunk. A batch parse is one feed and a finish: the same code, so streaming and
batch results are equal by construction, and the tests check it for every split.

Nothing is lost: each character of output ends up in content, reasoning, a call, or an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import jsonschema
import referencing
import referencing.exceptions

from analyzer.backends.parser.match import NEED, CallMatch, CallMatcher, Mismatch, match_literal, skip_ws
from analyzer.backends.parser.message import Delta, Message, ParseError, apply
from analyzer.lower import Literal, Name, OutputShape, split_markers

_START, _REASONING, _CONTENT, _SECTION, _CALL, _AFTER_CALL, _AFTER_REASONING = range(7)
_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class StreamParser:
    """Feed model output with ``feed``; call ``finish`` at the end. Both return deltas."""

    def __init__(self, shape: OutputShape, tools: list[dict[str, Any]] | None = None, *, validate: bool = True):
        self.shape = shape
        self.tools = tool_schemas(tools or [])
        self.validate = validate and bool(tools)
        self._schemas_reported: set[str] = set()  # tools whose unusable schema is already reported
        self.message = Message()
        self._buf = ""
        self._state = _START
        self._content_started = False  # leading whitespace of content is the markers'
        self._held_ws = ""  # trailing whitespace of content, emitted only if more content follows
        self._held_reasoning_ws = ""
        self._scan_from = 0
        self._call_start = 0
        self._calls = shape.calls
        closers = []
        if self._calls is not None:
            for literal in (self._calls.separator or (), self._calls.section_close):
                if literal:
                    closers.append(literal[0].text)
            if self._calls.call and hasattr(self._calls.call[0], "text"):
                closers.append(self._calls.call[0].text)  # type: ignore[union-attr]
        closers += list(shape.stops)
        self._matcher = CallMatcher(self._calls.call, self.tools, tuple(closers)) if self._calls else None
        self._alt_matcher = (CallMatcher(self._calls.no_arguments, self.tools, tuple(closers))
                             if self._calls and self._calls.no_arguments else None)
        last = self._calls.call[-1] if self._calls and self._calls.call else None
        ender = getattr(last, "text", "")
        # The character that completes a call: the last of its closing marker, else of a JSON value.
        self._call_ender_last = ender[-1] if ender else ""
        # Calls that open with bare JSON have no marker to watch for, only this pattern (compiled once:
        # it is searched on every chunk).
        self._json_opener = (re.compile(self._calls.trigger.pattern)
                             if self._calls is not None and self._calls.trigger.pattern else None)
        self._watch = self._content_markers()
        self._longest = max((len(w) for w in self._watch), default=1)

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Delta]:
        buf = self._buf
        self._buf = ""
        buf += chunk  # a sole reference, so CPython appends in place
        self._buf = buf
        if self._state == _CALL and self._call_ender_last and self._call_ender_last not in chunk:
            return []  # a call can only end with the last character of its closing text
        return self._run(final=False)

    def finish(self) -> list[Delta]:
        deltas = self._run(final=True)
        return deltas

    # ------------------------------------------------------------------ machinery

    def _content_markers(self) -> list[str]:
        watch: list[str] = []
        shape = self.shape
        if shape.reasoning:
            watch.append(shape.reasoning.open[0].text)
        if self._calls is not None:
            if self._calls.trigger.word:
                watch.append(self._calls.trigger.word)
            first = self._calls.call[0] if self._calls.call else None
            if first is not None and hasattr(first, "text") and first.text not in watch:
                watch.append(first.text)  # a call without its section opener
        for literal in (shape.content_open, shape.content_close):
            if literal:
                watch.append(literal[0].text)
        if self._calls is not None and self._calls.section_close and len(self._calls.section_close[0].text) > 2:
            # A closer some templates write after content (not a bare "]", which is only JSON syntax).
            watch.append(self._calls.section_close[0].text)
        watch += [s for s in shape.stops if s]
        return [w for w in dict.fromkeys(watch) if w]

    def _emit(self, deltas: list[Delta], delta: Delta) -> None:
        apply(self.message, delta)
        deltas.append(delta)

    def _emit_content(self, deltas: list[Delta], text: str, *, closing: bool = False) -> None:
        """Content with the whitespace next to markers left out: leading whitespace of the content,
        and trailing whitespace before a marker (held until more content shows it is content)."""
        if not self._content_started:
            text = text.lstrip()
            if not text:
                return
            self._content_started = True
        body = text.rstrip()
        tail = text[len(body):]
        if body:
            self._emit(deltas, Delta(content=self._held_ws + body))
            self._held_ws = tail
        else:
            self._held_ws += tail
        if closing:
            self._held_ws = ""

    def _consume(self, n: int) -> None:
        self._buf = self._buf[n:]
        self._scan_from = 0

    def _run(self, final: bool) -> list[Delta]:
        deltas: list[Delta] = []
        while True:
            before = (self._state, len(self._buf))
            if self._state == _START:
                self._start(deltas, final)
            elif self._state == _REASONING:
                self._reasoning(deltas, final)
            elif self._state == _CONTENT:
                self._content(deltas, final)
            elif self._state == _SECTION:
                self._section(deltas, final)
            elif self._state == _CALL:
                self._call(deltas, final)
            elif self._state == _AFTER_CALL:
                self._after_call(deltas, final)
            elif self._state == _AFTER_REASONING:
                self._after_reasoning(final)
            if (self._state, len(self._buf)) == before:
                break
        return deltas

    # ------------------------------------------------------------------ states

    def _start(self, deltas: list[Delta], final: bool) -> None:
        shape = self.shape
        if shape.reasoning and shape.reasoning.forced_open:
            # The prompt opened reasoning; what history writes first closes it (an empty block).
            self._state = _REASONING
            return
        buf = self._buf
        if shape.prefix:
            step = match_literal(buf, 0, shape.prefix, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
                buf = self._buf
        if self._calls is not None and self._calls.trigger.at_start and self._calls.call \
                and isinstance(self._calls.call[0], Name):
            head = skip_ws(buf, 0)
            names = list(self.tools) or []
            if any(buf.startswith(name, head) for name in names):
                self._call_start = head
                self._state = _CALL
                return
            if not final and any(name.startswith(buf[head:]) for name in names):
                return
        self._state = _CONTENT

    def _reasoning(self, deltas: list[Delta], final: bool) -> None:
        assert self.shape.reasoning is not None
        if not self.message.reasoning_content:
            # A prompt that opens reasoning, and a model that skips it: the output starts with what
            # follows reasoning (the rest of the turn's prefix, a content wrapper, a call).
            head = skip_ws(self._buf, 0)
            words = self._after_reasoning_words()
            if any(self._buf.startswith(word, head) for word in words):
                self._consume(head)
                self._state = _AFTER_REASONING
                return
            if not final and any(word.startswith(self._buf[head:]) for word in words):
                return
        close = self.shape.reasoning.close
        word = close[0].text
        at = self._buf.find(word, self._scan_from)
        call_at = self._call_in_reasoning(at, final)
        if call_at is NEED:
            return
        if isinstance(call_at, int):
            # A call ends reasoning the model never closed.
            self._emit_reasoning(deltas, self._buf[:call_at], closing=True)
            self._consume(call_at)
            self._content_started = False
            self._state = _CONTENT
            return
        if at == -1:
            keep = 0 if final else _partial_suffix(self._buf, self._reasoning_words())
            text = self._buf[:len(self._buf) - keep]
            if text:
                self._emit_reasoning(deltas, text, closing=final)
                self._consume(len(text))
            self._scan_from = max(0, len(self._buf) - max(len(w) for w in self._reasoning_words()))
            return
        step = match_literal(self._buf, at, close, final)
        if step is NEED:
            if at:
                self._emit_reasoning(deltas, self._buf[:at])
                self._consume(at)
            return
        end = step if isinstance(step, int) else at + len(word)
        self._emit_reasoning(deltas, self._buf[:at], closing=True)
        self._consume(end)
        self._content_started = False
        self._state = _AFTER_REASONING

    def _reasoning_words(self) -> list[str]:
        assert self.shape.reasoning is not None
        words = [self.shape.reasoning.close[0].text]
        if self._calls is not None and self._calls.trigger.word:
            words.append(self._calls.trigger.word)
        return words

    def _call_in_reasoning(self, close_at: int, final: bool):
        """Where a complete call starts inside reasoning, before any close marker; NEED while a call
        that has started may still complete; None when there is none."""
        calls = self._calls
        if calls is None or not calls.trigger.word or self._matcher is None:
            return None
        word = calls.trigger.word
        start = self._scan_from
        last = calls.call[-1] if calls.call else None
        ender = getattr(last, "text", None)
        if ender and not final and self._buf.find(ender, start) == -1 and self._buf.find(word, start) != -1:
            return NEED  # a call may be under way: wait for the text that ends one before matching
        while True:
            at = self._buf.find(word, start)
            if at == -1 or (close_at != -1 and at > close_at):
                return None
            i = at
            if calls.section_open:
                step = match_literal(self._buf, i, calls.section_open, final)
                if step is NEED:
                    return NEED
                i = step if isinstance(step, int) else i
            outcome = self._matcher.match(self._buf, i, final)
            if outcome is NEED:
                return NEED
            if isinstance(outcome, CallMatch):
                return at
            start = at + 1

    def _emit_reasoning(self, deltas: list[Delta], text: str, *, closing: bool = False) -> None:
        """Reasoning with trailing whitespace held back: the whitespace before a close marker is the marker's."""
        body = text.rstrip()
        tail = text[len(body):]
        if body:
            if not self.message.reasoning_content:
                body = body.lstrip()
            self._emit(deltas, Delta(reasoning_content=self._held_reasoning_ws + body))
            self._held_reasoning_ws = tail
        else:
            self._held_reasoning_ws += tail
        if closing:
            self._held_reasoning_ws = ""

    def _after_reasoning_words(self) -> list[str]:
        shape = self.shape
        words = []
        if self._calls is not None and self._calls.trigger.word:
            words.append(self._calls.trigger.word)
        if shape.content_open:
            words.append(shape.content_open[0].text)
        if shape.reasoning is not None:
            close = "".join(m.text for m in shape.reasoning.close)
            prefix = "".join(m.text for m in shape.prefix)
            if close and prefix.startswith(close) and len(prefix) > len(close):
                words.append(split_markers(prefix[len(close):])[0].text)
        return words

    def _after_reasoning(self, final: bool) -> None:
        """What every turn starts with, after a reasoning block (``<|open|>response<|sep|>``)."""
        shape = self.shape
        assert shape.reasoning is not None
        close = "".join(m.text for m in shape.reasoning.close)
        prefix = "".join(m.text for m in shape.prefix)
        rest = tuple(split_markers(prefix[len(close):])) if close and prefix.startswith(close) else ()
        if rest:
            step = match_literal(self._buf, 0, rest, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
        self._state = _CONTENT

    def _content(self, deltas: list[Delta], final: bool) -> None:
        buf = self._buf
        found = _earliest(buf, self._watch, self._scan_from)
        json_at = self._json_trigger(buf)
        if json_at is not None and (found is None or json_at < found[0]):
            found = (json_at, "")
        if found is None:
            keep = 0 if final else _partial_suffix(buf, self._watch)
            json_pending = not final and self._json_trigger_pending(buf)
            if json_pending:
                keep = max(keep, len(buf) - buf.rfind("{"))
            text = buf[:len(buf) - keep]
            if final:
                self._finish_content(deltas, text)
                self._consume(len(buf))
            elif text:
                self._emit_content(deltas, text)
                self._consume(len(text))
            # A held "{" may open a bare JSON call after any run of whitespace: search it again from its start.
            self._scan_from = 0 if json_pending else max(0, len(self._buf) - self._longest)
            return
        at, word = found
        pending = None if final else _pending_start(buf, self._watch, at)
        if pending is not None:
            # A longer marker may be starting before this one (``[TOOL_CALLS][`` around ``]``): wait.
            if pending:
                self._emit_content(deltas, buf[:pending])
                self._consume(pending)
            return
        self._emit_content(deltas, buf[:at])
        self._consume(at)
        self._dispatch_marker(deltas, word, final)

    def _finish_content(self, deltas: list[Delta], text: str) -> None:
        self._emit_content(deltas, text, closing=True)

    def _dispatch_marker(self, deltas: list[Delta], word: str, final: bool) -> None:
        """The buffer starts with ``word`` (or a bare JSON call when ``word`` is empty)."""
        shape = self.shape
        buf = self._buf
        calls = self._calls
        if calls is not None and word == "":
            self._call_start, self._state = 0, _CALL
            return
        if shape.reasoning and word == shape.reasoning.open[0].text:
            step = match_literal(buf, 0, shape.reasoning.open, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
                self._state = _REASONING
                return
        if calls is not None and calls.section_open and word == calls.section_open[0].text:
            step = match_literal(buf, 0, calls.section_open, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
                self._held_ws = ""
                self._state = _SECTION
                return
        if word in shape.stops and not buf[len(word):].strip():
            # A turn's stop string that also opens a call (a call written as a new message): with
            # nothing after it, it ends the turn.
            if final:
                self._consume(len(buf))
            return
        if calls is not None and calls.call and getattr(calls.call[0], "text", None) == word:
            self._held_ws = ""
            self._call_start = 0
            self._state = _CALL
            return
        closers = (calls.section_close,) if calls is not None and self.message.tool_calls else ()
        for literal in (shape.content_open, shape.content_close, *closers):
            if literal and word == literal[0].text:
                step = match_literal(buf, 0, literal, final)
                if step is NEED:
                    return
                if isinstance(step, int):
                    self._consume(step)
                    return
        if word in shape.stops:
            self._consume(len(word))
            rest = self._buf
            if final and not rest.strip():
                self._consume(len(rest))
            return
        # Looked like a marker but is not one: it is content.
        self._emit_content(deltas, word)
        self._consume(len(word))

    def _json_trigger(self, buf: str) -> int | None:
        if self._json_opener is None:
            return None
        m = self._json_opener.search(buf, self._scan_from)
        return m.start() if m else None

    def _json_trigger_pending(self, buf: str) -> bool:
        if self._json_opener is None:
            return False
        at = buf.rfind("{")
        return at != -1 and len(buf) - at < 32 and '"' not in buf[at + 1:].strip()[1:]

    def _section(self, deltas: list[Delta], final: bool) -> None:
        # Right after the section opener: a call, or (an empty section) its closer.
        calls = self._calls
        assert calls is not None
        j = skip_ws(self._buf, 0)
        if calls.section_close and self._buf.startswith(calls.section_close[0].text, j):
            step = match_literal(self._buf, 0, calls.section_close, final)
            if isinstance(step, int):
                self._consume(step)
                self._content_started = False
                self._state = _CONTENT
                return
        if j == len(self._buf) and not final:
            return
        self._call_start = 0
        self._state = _CALL

    def _call(self, deltas: list[Delta], final: bool) -> None:
        assert self._matcher is not None
        if not final and not self._could_be_complete():
            return
        outcome = self._matcher.match(self._buf, self._call_start, final)
        if final and isinstance(outcome, Mismatch) and self._matcher.match(self._buf, self._call_start, False) is NEED:
            outcome = NEED  # it is a call, cut off by the end of the output
        if isinstance(outcome, Mismatch) and self._alt_matcher is not None:
            alternative = self._alt_matcher.match(self._buf, self._call_start, final)
            if not isinstance(alternative, Mismatch):
                outcome = alternative
        if outcome is NEED:
            if final:
                self._error(deltas, ParseError("unterminated_call", "the output ends inside a tool call",
                                               self._buf[self._call_start:]))
                self._consume(len(self._buf))
                self._state = _CONTENT
            return
        if isinstance(outcome, Mismatch):
            self._malformed(deltas, outcome.reason, final)
            return
        assert isinstance(outcome, CallMatch)
        self._emit_call(deltas, outcome)
        self._consume(outcome.end)
        self._state = _AFTER_CALL

    def _could_be_complete(self) -> bool:
        """Cheap test before a full match: the text that ends a call has arrived."""
        last = self._calls.call[-1] if self._calls and self._calls.call else None
        text = getattr(last, "text", None)
        if text:
            found = self._buf.find(text, max(self._call_start, self._scan_from))
            self._scan_from = max(self._call_start, len(self._buf) - len(text))
            return found != -1
        return self._buf.rstrip().endswith(("}", "]", ")", '"')) or len(self._buf) - self._call_start > 0 and \
            self._buf[-1:] in "}])\"\n"

    def _after_call(self, deltas: list[Delta], final: bool) -> None:
        calls = self._calls
        assert calls is not None
        buf = self._buf
        j = skip_ws(buf, 0)
        if j == len(buf) and not final:
            return
        separator = calls.separator
        if separator is not None:
            # Another call follows if the separator does and a call can start after it.
            step = match_literal(buf, 0, separator, final) if separator else j
            if step is NEED:
                return
            if isinstance(step, int):
                opens = self._opens_call(buf, step, final)
                if opens is NEED:
                    return
                if opens:
                    self._consume(step)
                    self._call_start = 0
                    self._state = _CALL
                    return
                first = calls.call[0] if calls.call else None
                if separator and hasattr(first, "text") and buf.startswith(first.text, skip_ws(buf, step)):
                    self._consume(step)  # a call that will turn out malformed: reported as such
                    self._call_start = 0
                    self._state = _CALL
                    return
        if calls.section_close:
            # Closed even when its opener was left out: models drop openers more than closers.
            step = _match_closer(buf, calls.section_close, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
        self._content_started = False
        self._state = _CONTENT

    def _opens_call(self, buf: str, i: int, final: bool):
        """Whether a call starts at ``i``, judged by its opening alone (its leading markers, a tool
        name, or a JSON object's first key), so that waiting for the next call costs nothing per chunk."""
        assert self._calls is not None
        j = skip_ws(buf, i)
        lead = []
        for part in self._calls.call:
            if not hasattr(part, "text"):
                break
            lead.append(part)
        if lead:
            step = match_literal(buf, j, tuple(lead), final)
            return NEED if step is NEED else isinstance(step, int)
        first = self._calls.call[0] if self._calls.call else None
        if isinstance(first, Name):
            names = list(self.tools)
            rest = buf[j:j + 64]
            if any(rest.startswith(name) for name in names):
                return True
            if not final and any(name.startswith(rest) for name in names) and len(rest) < 64:
                return NEED
            if not names:
                return bool(re.match(r"[A-Za-z_]", rest)) if rest else (NEED if not final else False)
            return False
        if j >= len(buf):
            return NEED if not final else False
        if buf[j] != "{":
            return False
        head = buf[j:j + 40]
        if re.match(r'\{\s*"', head):
            return True
        return NEED if not final and len(head.strip()) < 3 else False

    # ------------------------------------------------------------------ calls and errors

    def _emit_call(self, deltas: list[Delta], match: CallMatch) -> None:
        index = len(self.message.tool_calls)
        call_id = match.call_id or generated_id(self.shape.id_form, index, match.name, self._buf[:match.end])
        arguments = match.arguments if match.arguments is not None else {}
        text = match.arguments_text or json.dumps(arguments, ensure_ascii=False)
        self._emit(deltas, Delta(call_index=index, call_id=call_id, call_name=match.name))
        self._emit(deltas, Delta(call_index=index, arguments=text))
        if self.validate:
            for problem in validate_call(self.tools, match.name, arguments, index, self._schemas_reported):
                self._error(deltas, problem)

    def _malformed(self, deltas: list[Delta], reason: str, final: bool) -> None:
        """Text that starts like a call but is not one: reported with its text, up to where calls end."""
        calls = self._calls
        assert calls is not None
        ends = [literal[0].text for literal in (calls.section_close,) if literal]
        last = calls.call[-1] if calls.call else None
        if hasattr(last, "text"):
            ends.append(last.text)  # type: ignore[union-attr]
        cut = None
        for end in ends:
            at = self._buf.find(end, self._call_start)
            if at != -1:
                cut = at + len(end) if cut is None else min(cut, at + len(end))
        if cut is None:
            if not final:
                return
            cut = len(self._buf)
        self._error(deltas, ParseError("malformed_call", reason, self._buf[:cut]))
        self._consume(cut)
        self._content_started = False
        self._state = _CONTENT

    def _error(self, deltas: list[Delta], error: ParseError) -> None:
        self._emit(deltas, Delta(error=error))


def _match_closer(buf: str, literal: Literal, final: bool):
    """A closing literal, or the part of it the output has before it ends: a model stops on the
    turn's end token, which templates sometimes write as part of the closer."""
    step = match_literal(buf, 0, literal, final)
    if isinstance(step, int) or step is NEED or not final:
        return step
    rest = buf.strip()
    whole = "".join(marker.text for marker in literal)
    if rest and whole.startswith("".join(rest.split())):
        return len(buf)  # the closer, cut short where the output ends
    return step


def _earliest(buf: str, words: list[str], start: int) -> tuple[int, str] | None:
    best: tuple[int, str] | None = None
    for word in words:
        at = buf.find(word, start)
        if at != -1 and (best is None or at < best[0] or (at == best[0] and len(word) > len(best[1]))):
            best = (at, word)
    return best


def _pending_start(buf: str, words: list[str], at: int) -> int | None:
    """Where a watched word may be starting at or before ``at`` and run past the end of ``buf``."""
    for start in range(max(0, len(buf) - max(len(w) for w in words) + 1), at + 1):
        tail = buf[start:]
        if any(len(w) > len(tail) and w.startswith(tail) for w in words):
            return start
    return None


def _partial_suffix(buf: str, words: list[str] | tuple[str, ...]) -> int:
    """Length of the longest end of ``buf`` that begins one of ``words``: it may be a marker in the making."""
    best = 0
    for word in words:
        for size in range(min(len(word) - 1, len(buf)), best, -1):
            if word.startswith(buf[len(buf) - size:]):
                best = size
                break
    return best


def tool_schemas(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            schemas[name] = parameters if isinstance(parameters, dict) else {}
    return schemas


def validate_call(tools: dict[str, dict[str, Any]], name: str, arguments: dict[str, Any], index: int,
                  reported: set[str] | None = None) -> list[ParseError]:
    """What is wrong with one call: an undeclared tool, unknown arguments, arguments the tool's schema
    refuses. A tool whose schema cannot be used is reported instead, once per tool in ``reported``."""
    if name not in tools:
        return [ParseError("unknown_tool", f"call {index}: {name!r} is not a declared tool", call_index=index)]
    schema = tools[name]
    checked = _schema_problems(schema, name, arguments, index)
    unusable = [problem for problem in checked if problem.kind == "invalid_schema"]
    if unusable:
        if reported is not None:
            if name in reported:
                return []
            reported.add(name)
        return unusable[:1]
    problems = []
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    for key in arguments:
        if isinstance(properties, dict) and properties and key not in properties:
            problems.append(ParseError("unknown_argument", f"call {index} to {name}: unknown argument {key!r}",
                                       call_index=index))
    return problems + checked


def _refuse_retrieval(uri: str) -> referencing.Resource:
    # A tool's schema is untrusted input: a reference never makes us read a file or open a connection.
    raise referencing.exceptions.NoSuchResource(ref=uri)


# The only documents a reference can reach: the tool's own schema (and the metaschemas jsonschema
# ships). Every other URI is refused without being opened.
_NOTHING_REMOTE = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def unusable_schema(schema: Any) -> str:
    """Why a tool's parameter schema cannot check arguments ("" when it can): it is not a valid JSON
    schema, or a ``$ref`` in it leaves the tool's own schema or points to nothing there."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"schema is not valid: {exc.message}"
    for ref in _references(schema):
        if not ref.startswith("#"):
            return f"$ref {ref!r} points outside the tool's own schema, which is not followed"
        if _pointed_to(schema, ref[1:]) is _NOWHERE:
            return f"$ref {ref!r} points to nothing in the tool's schema"
    return ""


def _references(schema: Any) -> list[str]:
    found: list[str] = []
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key in ("$ref", "$dynamicRef"):
                if isinstance(node.get(key), str):
                    found.append(node[key])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


_NOWHERE = object()


def _pointed_to(document: Any, fragment: str) -> Any:
    """The part of ``document`` a JSON pointer fragment names (``/$defs/a``), or ``_NOWHERE``. A plain
    name (an ``$anchor``) counts as found when some subschema declares it."""
    if fragment and not fragment.startswith("/"):
        anchors = {node.get(key) for node in _subschemas(document) for key in ("$anchor", "$dynamicAnchor")}
        return document if fragment in anchors else _NOWHERE
    node = document
    for token in fragment.split("/")[1:] if fragment else ():
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _NOWHERE
    return node


def _subschemas(schema: Any) -> list[dict[str, Any]]:
    found, pending = [], [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            found.append(node)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


def _schema_problems(schema: dict[str, Any], name: str, arguments: dict[str, Any], index: int) -> list[ParseError]:
    """What the tool's JSON schema says about the arguments (the generated standalone parser swaps this
    one function for a built-in checker, since it may not use jsonschema)."""
    unusable = unusable_schema(schema)
    if unusable:
        return [ParseError("invalid_schema", f"tool {name}: {unusable}", call_index=index)]
    problems = []
    try:
        validator = jsonschema.Draft202012Validator(schema, registry=_NOTHING_REMOTE)
        for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
            if error.validator == "additionalProperties":
                continue  # reported as unknown arguments, one by one
            where = "/".join(str(p) for p in error.path) or "arguments"
            problems.append(ParseError("invalid_arguments", f"call {index} to {name}: {where}: {error.message}",
                                       call_index=index))
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable) as exc:
        # unusable_schema() has ruled these out; kept so that a case it misses is reported, not raised.
        problems.append(ParseError("invalid_schema", f"tool {name}: schema cannot be used: {exc}",
                                   call_index=index))
    return problems


def generated_id(form: str, index: int, name: str, text: str) -> str:
    """An id in the form the template accepts, derived from the call's own text: distinct calls get
    distinct ids, and batch and stream agree."""
    digest = hashlib.sha256(f"{index}:{name}:{text}".encode()).digest()
    letters = "".join(_ID_ALPHABET[b % len(_ID_ALPHABET)] for b in digest)
    return letters[:9] if form == "alnum9" else "call_" + letters[:24]


def parse(shape: OutputShape, text: str, tools: list[dict[str, Any]] | None = None) -> Message:
    parser = StreamParser(shape, tools)
    parser.feed(text)
    parser.finish()
    return parser.message
