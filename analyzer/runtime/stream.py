"""The parser: a state machine over the model's output, fed in chunks of any size.

States follow the output shape: optional reasoning, content, and call sections. In content and
reasoning the scanner looks for the next marker and emits the text before it, holding back a tail
that may be the start of a marker, so a half-written ``<tool_`` never shows up as content. A call is
matched once the text that can close it has arrived, so each call is matched a bounded number of
times, not once per chunk. A batch parse is one feed and a finish: the same code, so streaming and
batch results are equal by construction, and the tests check it for every split.

Nothing is lost: each character of output ends up in content, reasoning, a call, or an error.

The machine reads its tables (which markers each state watches for, the matchers of each way a call is
written, the buffers a state waits on) from the plan, built once per parser (``stream_plan.py``), and
searches its buffer with the scanners (``scanners.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .arguments_stream import ASLEEP, JsonArgumentsReader
from .calls import ToolSchemas, generated_id
from .match import CallMatch, CallMatcher, KeyValuesReader
from .message import Delta, Message, ParseError, ParseWarning, Prefill, ToolCall, apply, prefill_of
from .scanners import (
    NO_MATCH,
    json_string_text,
    loose_literal,
    marker_before,
    match_closer,
    may_open_member,
    partial_suffix,
    pending_start,
    string_body,
)
from .shape import Name, OutputShape
from .steps import NEED, Mismatch, Need, Step, match_literal, skip_ws
from .stream_plan import (
    AFTER_CALL,
    AFTER_REASONING,
    ANSWER,
    CALL,
    CONTENT,
    FENCE,
    REASONING,
    SECTION,
    START,
    STATE_COUNT,
    CallForm,
    StreamPlan,
)
from .tolerance import (
    ABANDONED_HEADER,
    CALL_LIST,
    CALL_SEPARATOR,
    CODE_FENCE,
    HEADER_TOKEN,
    HEADER_WORD,
    MARKER_WHITESPACE,
    MISSING_CLOSER,
    MISSING_OPENER,
    REPEATED_PROMPT_MARKER,
    REPEATED_REASONING_OPENER,
    STRAY_REASONING_MARKER,
    TOLERANCES,
    UNOPENED_REASONING,
)
from .values import INCOMPLETE, INVALID, Memo, finite, json_text, readable, value_end

# A markdown code fence opening a line: models wrap JSON in one where the format asks for bare JSON. Only
# a fence that says nothing or JSON is dropped: another language's (```python) is the model's content.
_FENCE_OPENING = re.compile(r"```([\w-]*)[ \t]*(?:\r?\n)?\s*")
_FENCE_LANGUAGES = frozenset(("", "json"))
# The last character of a call that has no closing text of its own (a JSON or Python value's end).
_MAY_END_A_CALL = '}])"'
# How a call opens where its name or its JSON object comes first (``_opens_call``).
_NAME_START = re.compile(r"[A-Za-z_]")
_OBJECT_WITH_KEY = re.compile(r'\{\s*"')
_PIECE = 4096  # the most text fed to the state machine at once
# The states whose step gives no delta for a buffer of whitespace alone (tests check it), and the
# longest such buffer a feed leaves to a later one.
_SPACE_WAITS = frozenset((START, CONTENT, SECTION, AFTER_CALL))
_SPACE_WAIT_LONGEST = 64
_PENDING_OPENER = 256  # how far back a "{" may still open a JSON reply once more text comes
# How far into a call its arguments may open and still be sent as they arrive: a call whose header
# runs longer (a long field before the arguments) is sent when complete, so that looking for where
# its arguments open costs a bounded amount per chunk.
_HEADER_LONGEST = 4096


class _StreamedCall:
    """A call whose name is sent and whose arguments are being sent as they arrive."""

    __slots__ = ("call_id", "closer_at", "index", "name", "reader", "scanned", "target")

    def __init__(
        self, index: int, call_id: str, name: str, reader: JsonArgumentsReader | KeyValuesReader, at: int
    ) -> None:
        self.index, self.call_id, self.name, self.reader = index, call_id, name, reader
        self.closer_at = -1  # where the first text that may close the call stands, once seen
        self.scanned = at  # where that text is looked for next (from where the arguments start)
        # The call in the message, once its name is sent: its arguments are what was sent of them.
        self.target: ToolCall | None = None


class Stream:
    """One parse in progress: feed model output with ``feed``, call ``finish`` at the end; both return
    deltas, and ``message`` is the message so far.

    ``continuing``: the partial assistant message the prompt ends inside (``continue_final_message``,
    a prefill; see ``Prefill``), which the output continues. ``message`` is then the whole message,
    the prefill's text and what the output adds; the deltas carry only what the output adds."""

    # Slots: a stream is made per parse and its state read at every step; an instance dict this
    # large is read more slowly than slots are (benchmarks/parser_speed.py).
    __slots__ = (
        "_after_reasoning_read",
        "_answer_at",
        "_answer_closed",
        "_answer_opener",
        "_buf",
        "_call_completer",
        "_call_ender",
        "_call_ender_after",
        "_call_form",
        "_call_held",
        "_call_may_end",
        "_call_opener",
        "_call_start",
        "_call_words",
        "_calls",
        "_candidate_scan",
        "_content_started",
        "_ender_scan",
        "_fed",
        "_fenced",
        "_fences",
        "_header_checked",
        "_header_from",
        "_held_at",
        "_held_reasoning_ws",
        "_held_ws",
        "_inline",
        "_inline_opener",
        "_json_opener",
        "_listless",
        "_longest",
        "_matcher",
        "_memo",
        "_named_after",
        "_no_stream",
        "_opened_by_prompt",
        "_opener_checked",
        "_plan",
        "_prefix_read",
        "_reasoned",
        "_reasoned_block",
        "_reasoning_longest",
        "_reasoning_watch",
        "_retry_length",
        "_scan_from",
        "_schemas_reported",
        "_state",
        "_streamed_to",
        "_streaming",
        "_surrogates",
        "_turn_end",
        "_waiting_call",
        "_waiting_word",
        "_waits_longest",
        "_wake",
        "_watch",
        "message",
        "shape",
        "strict",
        "tools",
        "validate",
    )

    def __init__(
        self,
        shape: OutputShape,
        tools: list[dict[str, Any]] | ToolSchemas | None = None,
        *,
        thinking: bool | None = None,
        validate: bool = True,
        strict: bool = False,
        inline_reasoning: bool = False,
        plan: StreamPlan | None = None,
        continuing: Mapping[str, Any] | Prefill | None = None,
        fresh_ids: bool = False,
    ):
        self._waiting_word = ""  # reasoning: the word a call under way starts with
        self._call_held = False  # reasoning: a complete call at the buffer's start, in a block not closed yet
        self._opener_checked = False  # the start of reasoning (or of the output) was read for a marker
        self._reasoned = False  # some reasoning text was read
        self._reasoned_block = False  # a reasoning block was closed
        self._header_checked = False  # the start of the output was read for the prompt's last marker again
        self._listless = False  # a JSON list section was opened without its bracket
        self._inline = False  # reasoning is left inline, as content
        self._inline_opener = ""  # the opener the prompt wrote, still to be written inline
        self._streaming: _StreamedCall | None = None  # the call whose arguments are being sent as they arrive
        self._no_stream = False  # the call being read is sent when complete
        self._header_from = 0  # where a character that may open the call's arguments is looked for next
        # The characters one of which must arrive before the call's arguments may send more: None, any;
        # ASLEEP, none (not streamed, or read to their end).
        self._wake: re.Pattern[str] | None = None
        # Where the text the arguments' reader may not read yet starts, while it may begin a closing text
        # (-1: none held): until it no longer does, the reader has nothing new.
        self._held_at = -1
        self._streamed_to = -1  # how long the buffer was when the arguments were last read
        if inline_reasoning:
            # Reasoning left inline: it and its markers are content, the opener the prompt wrote first.
            self._inline = True
            self._inline_opener = _prompt_opener(shape, thinking)
        self.shape = shape
        self.strict = strict  # read only what the template writes: no tolerance (tolerance.py)
        self.tools = tools if isinstance(tools, ToolSchemas) else ToolSchemas(tools)
        self.validate = validate and bool(self.tools)
        # Whether the prompt opened reasoning depends on the request's thinking switch.
        self._opened_by_prompt = shape.reasoning is not None and shape.reasoning.opened_by_prompt(thinking)
        self._schemas_reported: set[str] = set()  # tools whose unusable schema is already reported
        self._fed = 0  # characters fed so far
        self._prefix_read = False
        self._after_reasoning_read = False
        self._candidate_scan = 0  # reasoning: where the next possible call is looked for
        self._waiting_call = -1  # reasoning: where a call under way starts
        self._ender_scan = 0  # reasoning: where the text ending that call is looked for
        self._retry_length = 0  # reasoning: the buffer's length at which that call is matched again
        self._surrogates: list[ParseError] = []
        self.message = Message()
        self._buf = ""
        self._state = START
        self._content_started = False  # leading whitespace of content is the markers'
        self._held_ws = ""  # trailing whitespace of content, emitted only if more content follows
        self._held_reasoning_ws = ""
        self._scan_from = 0
        self._call_start = 0
        self._calls = shape.calls
        self._memo: Memo = {}  # how far values in the buffer were scanned; cleared when it is consumed
        self._plan = plan = plan or StreamPlan(shape, self.tools, strict=strict, fresh_ids=fresh_ids)
        self._matcher = plan.matcher
        if not plan.streams_arguments:
            self._wake = ASLEEP
        self._call_form = plan.whole  # how the call being read is written (its opener left out: headless)
        self._call_ender, self._call_completer, self._call_opener = (
            plan.call_ender,
            plan.call_completer,
            plan.call_opener,
        )
        self._call_ender_after = plan.call_ender_after
        self._json_opener, self._answer_opener, self._fences = plan.json_opener, plan.answer_opener, plan.fences
        self._watch, self._longest, self._call_words = plan.watch, plan.longest, plan.call_words
        self._named_after = plan.named_after
        self._call_may_end = plan.call_may_end
        self._waits_longest = plan.waits_longest
        self._turn_end = plan.turn_end
        self._reasoning_watch, self._reasoning_longest = plan.reasoning_watch, plan.reasoning_longest
        self._answer_at = 0  # where the answer's undecoded text starts in the buffer
        self._answer_closed = -1  # where its closing quote is, once seen
        self._fenced = False  # the call or answer being read opened a fence
        if continuing is not None:
            self._start_inside(prefill_of(continuing))

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Delta]:
        if len(chunk) > _PIECE:
            return self._feed_pieces(chunk)
        if not chunk.isascii():  # a flag CPython keeps: ASCII text holds no surrogate, at no cost
            chunk = self._readable(chunk)
        self._fed += len(chunk)
        state = self._state
        if not self._buf and chunk:
            # Nothing is pending and nothing in the chunk may start a marker: it is content or
            # reasoning as it stands, as the state machine would find, without running it for every
            # token (the state's whitespace rule still applies: trailing whitespace waits).
            if state == CONTENT and self._content_started and self._plan.marker_start(chunk) is None:
                body = chunk.rstrip()
                if not body:
                    self._held_ws += chunk
                    return []
                delta = Delta(self._held_ws + body)
                self._held_ws = chunk[len(body) :]
                self.message.add_text(delta.content, "")
                return [delta]
            if (
                state == REASONING
                and self._waiting_call < 0
                and self.message.has_reasoning
                and self._plan.reasoning_marker_start(chunk) is None
            ):
                body = chunk.rstrip()
                if not body:
                    self._held_reasoning_ws += chunk
                    return []
                delta = Delta("", self._held_reasoning_ws + body)  # (content, reasoning): keywords cost a third more
                self._held_reasoning_ws = chunk[len(body) :]
                self.message.add_text("", delta.reasoning_content)
                return [delta]
        buf = self._buf
        self._buf = ""
        buf += chunk  # a sole reference, so CPython appends in place
        self._buf = buf
        if state == CALL:
            streamed: list[Delta] = []
            wake = self._wake
            if (
                wake is not ASLEEP
                and (wake is None or wake.search(chunk) is not None)
                and (self._held_at < 0 or self._plan.call_cut_prefixes.fullmatch(buf, self._held_at) is None)
            ):
                call = self._streaming
                plain = (
                    call.reader.plain(buf, chunk, self._plan.call_cut_unspaced)
                    if call is not None and call.closer_at < 0 and self._plan.call_cut_starts.search(chunk) is None
                    else None
                )
                if plain is not None:
                    self._streamed_to = len(buf)
                    if plain:
                        assert call is not None
                        self._send_arguments(streamed, call, plain)
                else:
                    self._stream_arguments(streamed)  # what the arguments hold so far, sent before the call ends
            # What _could_be_complete would say, without running the state machine.
            if self._call_completer:
                if self._call_completer not in chunk:
                    return streamed  # a call can only end with that character
                ender = self._call_ender
                if ender and buf.find(ender, len(buf) - len(chunk) - len(ender) + 1) == -1:
                    return streamed  # nor unless its closing text arrives whole (each is looked at once, as it ends)
            elif self._call_may_end is not None:
                if self._call_may_end(chunk) is None:
                    return streamed  # nor without a character some form of a call ends with
            elif chunk and chunk[-1] not in _MAY_END_A_CALL and not chunk[-1].isspace():
                return streamed
            return streamed + self._run(final=False) if streamed else self._run(final=False)
        # A marker still arriving: the state machine would wait for more. (Only a buffer shorter than
        # the longest marker is looked up: hashing a long one would cost its length.)
        if len(buf) < self._waits_longest and buf in self._plan.waits[state] and not self._fenced:
            if state == REASONING:
                # Before any reasoning, also what follows a reasoning block the model skipped.
                if not self._reasoned or buf in self._plan.reasoning_waits:
                    return []
            elif not (
                (state == START and self._prefix_read) or (state == AFTER_REASONING and self._after_reasoning_read)
            ):
                return []  # (a turn's prefix and what follows reasoning are read once: waited on before)
        # Whitespace alone where the state machine only drops or holds it (around markers, before
        # content, between calls): read with what follows it. (A short run: a long one is read now,
        # so that no feed scans a long buffer again.)
        if len(buf) < _SPACE_WAIT_LONGEST and buf.isspace() and state in _SPACE_WAITS and not self._fenced:
            return []
        return self._run(final=False)

    def _feed_pieces(self, chunk: str) -> list[Delta]:
        """A long chunk read in pieces: what is read is cut off the front of the buffer, a copy of what
        remains, so a buffer kept short keeps a long output (a million calls) linear."""
        deltas: list[Delta] = []
        for at in range(0, len(chunk), _PIECE):
            deltas += self.feed(chunk[at : at + _PIECE])
        return deltas

    def finish_with(self, text: str) -> list[Delta]:
        """``feed(text)`` then ``finish()``, in one pass where nothing was fed before: the state
        machine then reads the whole output knowing it is whole (a batch parse)."""
        if self._fed or len(text) > _PIECE:
            return self.feed(text) + self.finish()
        self._buf = text if text.isascii() else self._readable(text)
        self._fed = len(self._buf)
        return self.finish()

    def finish(self) -> list[Delta]:
        deltas = self._run(final=True)
        # Reported last, in batch and stream alike, so that both give the same message.
        for error in self._surrogates:
            self._error(deltas, error)
        return deltas

    def _readable(self, chunk: str) -> str:
        """Non-ASCII text as it is, or without its lone surrogates (reported)."""
        try:
            chunk.encode("utf-8")
        except UnicodeEncodeError:
            return self._without_surrogates(chunk)
        return chunk

    def _without_surrogates(self, chunk: str) -> str:
        """Text handed to us with lone surrogates (no UTF-8 holds them): each becomes U+FFFD, and
        where it was is reported, so that the message always encodes as UTF-8."""
        clean = readable(chunk)
        for at, (old, new) in enumerate(zip(chunk, clean, strict=True)):  # one character for one
            if old != new:
                self._surrogates.append(
                    ParseError(
                        "invalid_utf8",
                        f"output character {self._fed + at} is a lone surrogate: replaced by U+FFFD",
                        "\ufffd",
                    )
                )
        return clean

    def report(self, error: ParseError) -> list[Delta]:
        """An error found outside the parse (input that is not UTF-8), added to the message."""
        deltas: list[Delta] = []
        self._error(deltas, error)
        return deltas

    # ------------------------------------------------------------------ machinery

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
        tail = text[len(body) :]
        if body:
            self._emit(deltas, Delta(self._held_ws + body))
            self._held_ws = tail
        else:
            self._held_ws += tail
        if closing:
            self._held_ws = ""

    def _consume(self, n: int) -> None:
        self._buf = self._buf[n:]
        self._scan_from = 0
        self._header_from = 0
        self._held_at = -1
        self._streamed_to = -1
        if self._wake is not ASLEEP:
            self._wake = None  # (positions moved: looked at afresh)
        if self._memo:
            self._memo.clear()
        # Positions in reasoning searched already move with the text (conditionals: no max() calls
        # on this path, which runs several times in every parse).
        if self._candidate_scan:
            self._candidate_scan = self._candidate_scan - n if self._candidate_scan > n else 0
        if self._ender_scan:
            self._ender_scan = self._ender_scan - n if self._ender_scan > n else 0
        if self._waiting_call >= 0:
            self._waiting_call = self._waiting_call - n if self._waiting_call >= n else -1
        if self._retry_length:
            self._retry_length = self._retry_length - n if self._retry_length > n else 0

    def _run(self, final: bool) -> list[Delta]:
        deltas: list[Delta] = []
        states = _STATES
        while True:
            state, length = self._state, len(self._buf)
            states[state](self, deltas, final)
            # Done when a step changed nothing, or read all the text and stayed where it was: the same
            # step on no text gives nothing (it would only drop whitespace it holds back).
            if self._state == state and (len(self._buf) == length or not self._buf):
                break
        return deltas

    # ------------------------------------------------------------------ states

    def _start_inside(self, prefill: Prefill) -> None:
        """The state a continuation starts in, decided once: the prompt holds the message up to the end
        of its text (the turn's prefix, a closed reasoning block, a content opener), so the output goes
        on with the part that continues, as if that text had just been read. Nothing is stripped where
        the two meet: the prefill's last character and the output's first stand as written."""
        self.message = Message(prefill.content, prefill.reasoning_content)
        if self._inline:
            self.message = Message(self._inline_prefill(prefill))
        self._reasoned = bool(prefill.reasoning_content)
        self._prefix_read = True
        if prefill.content or (prefill.reasoning_content and self.shape.reasoning is None):
            # Content continues (a shape without reasoning keeps the message's reasoning as given).
            self._opened_by_prompt = False  # the prompt closed any reasoning block before the content
            self._opener_checked = True  # the output goes on with text: no marker starts it
            if prefill.content:
                self._content_started = True
                self._state = CONTENT
        elif prefill.reasoning_content:
            self._opened_by_prompt = True  # inside the block the prompt left open
            self._opener_checked = True
            self._state = REASONING
        else:
            self._prefix_read = False  # nothing to continue: a plain start

    def _inline_prefill(self, prefill: Prefill) -> str:
        """The prefill as content where reasoning is inline: its reasoning in the template's markers
        before its content, as the prompt wrote them (a template without reasoning wrote none)."""
        reasoning = self.shape.reasoning
        if reasoning is None or not prefill.reasoning_content:
            return prefill.content
        self._inline_opener = ""
        opened = "".join(marker.written for marker in reasoning.open).lstrip() + prefill.reasoning_content
        if not prefill.content:
            return opened  # the block goes on
        return opened + "".join(marker.written for marker in reasoning.close) + prefill.content

    def _start(self, deltas: list[Delta], final: bool) -> None:
        shape = self.shape
        if self._opened_by_prompt:
            # The prompt opened reasoning; what history writes first closes it (an empty block).
            self._state = REASONING
            return
        buf = self._buf
        if shape.prefix and not self._prefix_read:
            step = match_literal(buf, 0, shape.prefix, final)
            if step is NEED:
                return
            self._prefix_read = True  # once: a second copy of it is the model's text
            if isinstance(step, int):
                self._consume(step)
        header = self._plan.prompt_header
        if header and not self._header_checked:
            # The generation prompt's last marker written again (``<|CHATBOT_TOKEN|>``).
            at = self._leading(header, final)
            if at is NEED:
                return
            self._header_checked = True
            if isinstance(at, int):
                self._warn(deltas, REPEATED_PROMPT_MARKER, at)
                self._consume(at + len(header))
        if shape.reasoning is not None and not self.strict and not self._opener_checked:
            # A reasoning closer first, with no opener: the prompt may have opened the block.
            close = shape.reasoning.close
            at = self._leading(close[0].text, final)
            closed: Step | None = match_literal(self._buf, at, close, final) if isinstance(at, int) else at
            if closed is NEED:
                return  # the closer, or the start of the output, still to come
            self._opener_checked = True
            if isinstance(closed, int):
                assert isinstance(at, int)
                self._warn(deltas, UNOPENED_REASONING, at)
                self._inline_text(deltas, closed)
                self._consume(closed)
                self._block_closed()
                self._state = AFTER_REASONING
                return
        self._content_or_named_call(final)

    def _leading(self, word: str, final: bool) -> int | Need | None:
        """Where ``word`` stands at the buffer's start, after whitespace; NEED while the buffer may still
        become it; None when it is not there (a plain test: this runs at the start of every output)."""
        buf = self._buf
        head = skip_ws(buf, 0) if buf[:1].isspace() else 0
        if buf.startswith(word, head):
            return head
        if not final and len(buf) - head < len(word) and word.startswith(buf[head:]):
            return NEED
        return None

    def _content_or_named_call(self, final: bool) -> None:
        """At the start of the output, or of the message after a reasoning message: a call that opens
        with a tool's name, else content (left as is while the text may still become a name)."""
        buf = self._buf
        if self._calls is not None and self._calls.trigger.tool_name:
            head = skip_ws(buf, 0)
            if buf.startswith(self.tools.name_tuple, head):
                self._call_start = head
                self._state = CALL
                return
            if not final and any(name.startswith(buf[head:]) for name in self.tools.name_tuple):
                return
        self._state = CONTENT

    def _reasoning(self, deltas: list[Delta], final: bool) -> None:
        assert self.shape.reasoning is not None
        if not self._opener_checked:
            # The opener written again at the block's start (after the prompt opened it).
            head = skip_ws(self._buf, 0)
            step = match_literal(self._buf, head, self.shape.reasoning.open, final) if not self.strict else None
            if step is NEED:
                return
            self._opener_checked = True
            if isinstance(step, int):
                self._warn(deltas, REPEATED_REASONING_OPENER, head)
                self._inline_text(deltas, step)
                self._consume(step)
        if not self._reasoned:
            # A prompt that opens reasoning, and a model that skips it: the output starts with what
            # follows reasoning (the rest of the turn's prefix, a content wrapper, a call).
            head = skip_ws(self._buf, 0)
            words = self._plan.after_reasoning_words
            if self._buf.startswith(words, head):
                self._consume(head)
                self._inline_opener = ""  # a block skipped is none, inline too
                self._state = AFTER_REASONING
                return
            if not final and any(word.startswith(self._buf[head:]) for word in words):
                return
        close = self.shape.reasoning.close
        word = close[0].text
        at = self._buf.find(word, self._scan_from)
        if self._call_held:
            # A call stands at the buffer's start inside a block that had not closed: it is reasoning
            # text if the block closes after it, and a call ending the block if the output ends first.
            if at == -1:
                self._scan_from = max(0, len(self._buf) - len(word) + 1)
                if final:
                    self._call_held = False
                    self._end_reasoning_at_call(deltas)
                return
            self._call_held = False
        # Inside a block that closes, markup is reasoning text: only a block not closed may hold a call.
        call_at = self._call_in_reasoning(at, final) if at == -1 else None
        if call_at is NEED:
            # A call may be under way: what comes before it is reasoning either way.
            start = self._waiting_call
            if start > 0:
                self._emit_reasoning(deltas, self._buf[:start])
                self._consume(start)
            if final:
                # The output ends inside that call, the block never closed: read where calls are read
                # (reported there as cut short), so that its text is not lost.
                self._waiting_call = -1
                self._end_reasoning_at_call(deltas)
                return
            # The close marker is looked for past here; one already seen stays in sight, for when the
            # call turns out to be none.
            self._scan_from = at - max(start, 0) if at != -1 else max(0, len(self._buf) - len(word))
            return
        if isinstance(call_at, int):
            if call_at:
                self._emit_reasoning(deltas, self._buf[:call_at])
                self._consume(call_at)
            if final:
                self._end_reasoning_at_call(deltas)
            else:
                # Held until the block closes or the output ends, which only later text can tell.
                self._call_held = True
                self._scan_from = max(0, len(self._buf) - len(word) + 1)
            return
        if at == -1:
            keep = 0 if final else partial_suffix(self._buf, self._reasoning_watch)
            text = self._buf[: len(self._buf) - keep]
            if text:
                self._emit_reasoning(deltas, text, closing=final)
                self._consume(len(text))
            self._scan_from = max(0, len(self._buf) - self._reasoning_longest)
            return
        step = match_literal(self._buf, at, close, final)
        if step is NEED:
            if at:
                self._emit_reasoning(deltas, self._buf[:at])
                self._consume(at)
            return
        end = step if isinstance(step, int) else at + len(word)
        self._emit_reasoning(deltas, self._buf[:at], closing=True)
        self._consume(at)
        self._inline_text(deltas, end - at)
        self._consume(end - at)
        self._block_closed()
        self._state = AFTER_REASONING

    def _block_closed(self) -> None:
        """After a reasoning block: content starts anew (its leading whitespace is the markers'), unless
        reasoning is inline, where content goes on."""
        self._reasoned_block = True
        if not self._inline:
            self._content_started = False

    def _inline_text(self, deltas: list[Delta], end: int) -> None:
        """A reasoning marker at the buffer's start, up to ``end``: content where reasoning is inline."""
        if self._inline:
            self._emit_inline(deltas, self._buf[:end])

    def _emit_inline(self, deltas: list[Delta], text: str) -> None:
        """Reasoning's text or markers as content; the block the prompt opened starts with its opener
        (written only once the model writes in the block: a block it skips is none)."""
        if self._inline_opener and text:
            text, self._inline_opener = self._inline_opener + text, ""
        self._emit_content(deltas, text)

    def _end_reasoning_at_call(self, deltas: list[Delta]) -> None:
        """A call at the buffer's start ends reasoning the model never closed."""
        self._emit_reasoning(deltas, "", closing=True)
        self._block_closed()
        self._scan_from = 0
        self._state = CONTENT

    def _call_in_reasoning(self, close_at: int, final: bool) -> int | Need | None:
        """Where a complete call starts inside reasoning, before any close marker; NEED while a call
        that has started may still complete; None when there is none. Each place the trigger word
        stands is looked at once, and a call under way is matched again only once the text that
        ends a call has arrived, so reasoning that keeps mentioning the word costs linear time."""
        calls, plan = self._calls, self._plan
        if calls is None or plan.reasoning_calls is None or plan.whole is None:
            return None
        ender = self._call_ender
        while True:
            if self._waiting_call >= 0:
                at, word = self._waiting_call, self._waiting_word
            else:
                found = plan.reasoning_calls.search(self._buf, self._candidate_scan)
                if found is None:
                    self._candidate_scan = max(self._candidate_scan, len(self._buf) - plan.reasoning_longest + 1, 0)
                    return None
                at, word = found.start(), found.group()
            if close_at != -1 and at > close_at:
                # Past the end of this reasoning: looked at again only if reasoning goes on there (a
                # later block in the same text), so the search resumes at this word, not beyond it.
                self._candidate_scan = at
                return None
            if at == self._waiting_call and not final and len(self._buf) < self._retry_length:
                # Matched again once the text that ends a call arrives, or the text has doubled (so a
                # mention that is no call is let go soon, and a long call costs linear time).
                ender_at = self._buf.find(ender, self._ender_scan) if ender else -1
                if ender_at == -1:
                    self._ender_scan = max(self._ender_scan, len(self._buf) - len(ender) + 1)
                    return NEED
            i, form = at, plan.headless if word == plan.headless_word else plan.whole
            if calls.section_open and word == calls.trigger.word:
                step = match_literal(self._buf, i, calls.section_open, final)
                if step is NEED:
                    self._waiting_call, self._waiting_word = at, word
                    return NEED
                i = step if isinstance(step, int) else i
            assert form is not None
            outcome = self._read_call(form, i, final)
            if outcome is NEED:
                if self._waiting_call != at:
                    self._waiting_call, self._waiting_word, self._ender_scan = at, word, at
                self._retry_length = 2 * len(self._buf) + 64
                return NEED
            self._waiting_call = -1
            if isinstance(outcome, tuple):
                return at
            self._candidate_scan = at + 1

    def _emit_reasoning(self, deltas: list[Delta], text: str, *, closing: bool = False) -> None:
        """Reasoning with trailing whitespace held back: the whitespace before a close marker is the marker's."""
        if self._inline:
            self._reasoned = self._reasoned or bool(text.strip())
            self._emit_inline(deltas, text)  # as written: the markers around it are content too
            return
        body = text.rstrip()
        tail = text[len(body) :]
        if body:
            held = self._held_reasoning_ws
            if not self._reasoned:
                body, held = body.lstrip(), ""  # whitespace before the first text is the open marker's
                self._reasoned = True
            self._emit(deltas, Delta("", held + body))
            self._held_reasoning_ws = tail
        else:
            self._held_reasoning_ws += tail
        if closing:
            self._held_reasoning_ws = ""

    def _after_reasoning(self, deltas: list[Delta], final: bool) -> None:
        """What every turn starts with, after a reasoning block (``<|open|>response<|sep|>``)."""
        assert self.shape.reasoning is not None
        rest = self.shape.reasoning.after
        if rest and not self._after_reasoning_read:
            step = match_literal(self._buf, 0, rest, final)
            if step is NEED:
                return
            self._after_reasoning_read = True  # once, as the prefix: a call's name may be still to come
            if isinstance(step, int):
                self._consume(step)
        self._content_or_named_call(final)

    def _content(self, deltas: list[Delta], final: bool) -> None:
        buf = self._buf
        found = self._plan.earliest_watched(buf, self._scan_from)
        # Most formats open calls and answers with markers only: then there is no pattern to search.
        json_at = self._json_trigger(buf) if self._json_opener is not None else None
        if json_at is not None and (found is None or json_at < found[0]):
            found = (json_at, "")
        answer_at = self._answer_trigger(buf) if self._answer_opener is not None else None
        if answer_at is not None and (found is None or answer_at <= found[0]):
            self._emit_content(deltas, buf[:answer_at])
            self._consume(answer_at)
            self._open_answer()
            return
        if (
            not final
            and json_at is not None
            and found == (json_at, "")
            and self._answer_opener is not None
            and may_open_member(buf[json_at:], self.shape.answer_key)
        ):
            # An object that opens like a call may still turn out to be the answer: wait and see.
            self._emit_content(deltas, buf[:json_at])
            self._consume(json_at)
            return
        if found is None:
            keep = 0 if final else partial_suffix(buf, self._watch)
            json_pending = not final and self._fences and self._json_trigger_pending(buf)
            if json_pending:
                keep = max(keep, len(buf) - buf.rfind("{"))
            text = buf[: len(buf) - keep]
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
        pending = None if final else pending_start(buf, self._watch, at, self._longest)
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
        """The last content. An output that ends on the start of a call's opening marker (a reply cut
        at n_predict inside ``<tool_call``) ends inside a call: that text is reported, not content."""
        cut = partial_suffix(text, self._call_words) if text and self._call_words else 0
        if cut >= 2:
            self._emit_content(deltas, text[:-cut], closing=True)
            self._error(
                deltas,
                ParseError(
                    "unterminated_call",
                    "the output ends inside a call's opening marker",
                    text[-cut:],
                    len(self.message.tool_calls),
                ),
            )
            return
        self._emit_content(deltas, text, closing=True)

    def _dispatch_marker(self, deltas: list[Delta], word: str, final: bool) -> None:
        """The buffer starts with ``word`` (or a bare JSON call when ``word`` is empty)."""
        shape = self.shape
        buf = self._buf
        calls = self._calls
        if calls is not None and word == "":
            self._call_start, self._state = 0, CALL
            return
        if word == FENCE and self._fences:
            fence = self._fence(deltas, final)
            if fence is NEED:
                return
            if fence:
                return
        if shape.reasoning and word == shape.reasoning.open[0].text:
            step = match_literal(buf, 0, shape.reasoning.open, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._inline_text(deltas, step)
                self._consume(step)
                self._state = REASONING
                return
        if calls is not None and calls.section_open and word == calls.section_open[0].text:
            step = match_literal(buf, 0, calls.section_open, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
                self._state = SECTION
                return
        if calls is not None and word and word == self._plan.section_wake:
            # The section opener's special word, with whitespace before the rest of the opener.
            step = loose_literal(buf, calls.section_open)
            if step is NEED and not final:
                return
            if isinstance(step, int):
                self._warn(deltas, MARKER_WHITESPACE, len(word))
                self._consume(step)
                self._state = SECTION
                return
            j = skip_ws(buf, len(word))
            if self._plan.listless_close is not None and buf.startswith("{", j):
                # A JSON list section's one call written as an object, without the list's brackets.
                self._warn(deltas, CALL_LIST, j)
                self._consume(j)
                self._listless = True
                self._call_start = 0
                self._state = CALL
                return
        if word in shape.stops and not buf[len(word) :].strip():
            # A turn's stop string that also opens a call (a call written as a new message): with
            # nothing after it, it ends the turn.
            if final:
                self._consume(len(buf))
            return
        if calls is not None and self._call_opener == word:
            if calls.section_open:
                self._warn(deltas, MISSING_OPENER, 0)
            self._call_start = 0
            self._state = CALL
            return
        opening = self._plan.reordered.get(word) if calls is not None else None
        if opening is not None:
            # A call header written with its channel part first (headers.py): a call once the part
            # that names it follows.
            step = match_literal(buf, 0, opening, final)
            if step is NEED:
                return
            if isinstance(step, int):
                self._call_form = self._plan.reordered_form(word)
                self._call_start = 0
                self._state = CALL
                return
        abandoned = self._plan.abandoned_header
        if abandoned is not None and word in abandoned.leads:
            # A header begun and begun again (headers.py): the first is dropped.
            m = abandoned.whole.match(buf)
            if m is not None:
                self._warn(deltas, ABANDONED_HEADER, 0, m.group())
                self._consume(m.end())
                return
            if not final and abandoned.waits(buf):
                return
        if word in self._plan.content_headers:
            # The content wrapper's opener with another channel word the template writes (headers.py).
            self._warn(deltas, HEADER_WORD, 0)
            self._consume(len(word))
            return
        detailed = self._plan.detailed_content_header
        if detailed is not None and word == detailed.lead:
            # The content wrapper's opener with a header token and words before its second token.
            m = detailed.whole.match(buf)
            if m is not None:
                self._warn(deltas, HEADER_TOKEN, m.start("left_out"), m.group("left_out").rstrip(" \t"))
                self._consume(m.end())
                return
            if not final and detailed.beginning.fullmatch(buf):
                return
        if calls is not None and word and word == self._plan.headless_word:
            # A call's later opening marker without the first (``<function=`` with no ``<tool_call>``).
            self._warn(deltas, MISSING_OPENER, 0)
            self._call_form = self._plan.headless
            self._call_start = 0
            self._state = CALL
            return
        if calls is not None and calls.separator and word == self._named_after and self.tools.name_tuple:
            # Calls that open with a name where the output starts: after content, a call stands behind
            # the separator, as every call but the first does (a declared name, as at the start).
            step = match_literal(buf, 0, calls.separator, final)
            opens = self._opens_call(buf, step, final) if isinstance(step, int) else step
            if opens is NEED:
                return
            if opens is True and isinstance(step, int):
                self._consume(step)
                self._call_start = 0
                self._state = CALL
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
        if word == self._turn_end and self._ends_turn(buf[len(word) :], final):
            # What the template writes to close a turn before its stop (Kimi-K3's
            # <|close|>response<|sep|><|close|>message<|sep|>): a marker, not content.
            if final or buf[len(word) :].strip():
                self._consume(len(word))
            return
        if shape.reasoning and word == shape.reasoning.close[0].text and self._reasoned_block and not self.strict:
            # A reasoning closer where no block is open, after one closed: a stray marker, not content.
            step = match_literal(buf, 0, shape.reasoning.close, final)
            if step is NEED:
                return
            self._warn(deltas, STRAY_REASONING_MARKER, 0)
            self._consume(step if isinstance(step, int) else len(word))
            return
        # Looked like a marker but is not one: it is content.
        self._emit_content(deltas, word)
        self._consume(len(word))

    def _ends_turn(self, rest: str, final: bool) -> bool:
        """Whether the turn's end text, followed by ``rest``, closes the turn: nothing or a stop follows
        (or, still streaming, may follow: the text waits)."""
        rest = rest.lstrip()
        stops = [stop for stop in self.shape.stops if stop]
        if not rest:
            return True
        if any(rest.startswith(stop) for stop in stops):
            return True
        return not final and any(stop.startswith(rest) for stop in stops)

    def _json_trigger(self, buf: str) -> int | None:
        if self._json_opener is None:
            return None
        m = self._json_opener.search(buf, self._scan_from)
        return m.start() if m else None

    def _json_trigger_pending(self, buf: str) -> bool:
        """Whether the last "{" may still open a bare JSON call or an answer object."""
        at = buf.rfind("{")
        if at == -1 or len(buf) - at > _PENDING_OPENER:
            return False
        if self._json_opener is not None and '"' not in buf[at + 1 :].strip()[1:]:
            return True
        return self._answer_opener is not None and may_open_member(buf[at:], self.shape.answer_key)

    def _answer_trigger(self, buf: str) -> int | None:
        if self._answer_opener is None:
            return None
        m = self._answer_opener.search(buf, self._scan_from)
        return m.start() if m else None

    def _fence(self, deltas: list[Delta], final: bool) -> bool | Need:
        """The buffer starts with a code fence: when a bare JSON call or an answer object follows it,
        drop the fence and read that (True); NEED while that cannot be told yet; else False."""
        buf = self._buf
        m = _FENCE_OPENING.match(buf)
        end = m.end() if m else len(FENCE)
        rest = buf[end:]
        if not rest or (m and m.end() == len(buf)):
            return False if final else NEED
        if m and m.group(1).lower() not in _FENCE_LANGUAGES:
            return False
        opens_call = not self.strict and self._json_opener is not None and self._json_opener.match(buf, end) is not None
        opens_answer = self._answer_opener is not None and self._answer_opener.match(buf, end) is not None
        if (
            opens_call
            and not opens_answer
            and not final
            and self._answer_opener is not None
            and may_open_member(buf[end:], self.shape.answer_key)
        ):
            return NEED  # an object that opens like a call may still turn out to be the answer
        if opens_call or opens_answer:
            if opens_call:
                self._warn(deltas, CODE_FENCE, 0)
            self._consume(end)
            self._fenced = True
            if opens_answer:
                self._open_answer()
            else:
                self._call_start, self._state = 0, CALL
            return True
        if not final and rest.startswith("{") and self._json_trigger_pending(buf[end:]):
            return NEED
        return False

    def _close_fence(self, final: bool) -> bool | Need:
        """After a fenced call or answer: its closing fence, and the newline that ends its line; NEED
        while the text may still be one."""
        if not self._fenced:
            return True
        buf = self._buf
        j = skip_ws(buf, 0)
        if buf.startswith(FENCE, j):
            end = j + len(FENCE)
            if end == len(buf) and not final:
                return NEED  # a longer fence, or the newline after it, may follow
            if buf.startswith("\r\n", end):
                end += 2
            elif buf.startswith("\n", end):
                end += 1
            self._consume(end)
        elif not final and (j == len(buf) or FENCE.startswith(buf[j:])):
            return NEED
        self._fenced = False
        return True

    # ------------------------------------------------------------------ an answer object

    def _open_answer(self) -> None:
        m = self._answer_opener.match(self._buf)  # type: ignore[union-attr]  # called only once it matched
        assert m is not None
        self._answer_at = m.end()
        self._answer_closed = -1
        self._state = ANSWER

    def _answer(self, deltas: list[Delta], final: bool) -> None:
        """Inside ``{"answer": "...``: the string's text goes out as content as it arrives; the object
        must close right after it, else what follows is reported with the object's text."""
        buf = self._buf
        if self._answer_closed < 0:
            closed, safe = string_body(buf, self._answer_at)
            end = closed if closed >= 0 else (len(buf) if final else safe)
            if end > self._answer_at:
                self._emit_content(deltas, json_string_text(buf[self._answer_at : end]))
                self._answer_at = end
            if closed < 0:
                if final:
                    self._error(
                        deltas, ParseError("unterminated_call", "the output ends inside the answer object", buf)
                    )
                    self._leave_answer(len(buf))
                return
            self._answer_closed = closed
        j = skip_ws(buf, self._answer_closed + 1)
        if j == len(buf) and not final:
            return
        if buf.startswith("}", j):
            self._leave_answer(j + 1)
            return
        end = value_end(buf, 0)
        if end < 0:
            if final or end == INVALID:
                self._error(
                    deltas,
                    ParseError(
                        "unterminated_call" if end == INCOMPLETE else "malformed_call",
                        "the answer object is not closed",
                        buf,
                    ),
                )
                self._leave_answer(len(buf))
            return
        self._error(
            deltas,
            ParseError("malformed_call", f"the answer object holds more than {self.shape.answer_key!r}", buf[:end]),
        )
        self._leave_answer(end)

    def _leave_answer(self, end: int) -> None:
        self._consume(end)
        self._answer_at, self._answer_closed = 0, -1
        self._state = AFTER_CALL

    def _section(self, deltas: list[Delta], final: bool) -> None:
        # Right after the section opener: a call, or (an empty section) its closer.
        calls = self._calls
        assert calls is not None
        j = skip_ws(self._buf, 0)
        if calls.section_close:
            step = match_literal(self._buf, 0, calls.section_close, final)
            if step is NEED and j < len(self._buf):
                return  # an empty section's closer, still arriving
            if isinstance(step, int):
                self._consume(step)
                self._state = CONTENT
                return
        if j == len(self._buf) and not final:
            return
        self._call_start = 0
        self._state = CALL

    def _call(self, deltas: list[Delta], final: bool) -> None:
        form = self._call_form
        assert form is not None
        if not final and not self._no_stream and self._plan.streams_arguments and self._streamed_to != len(self._buf):
            self._stream_arguments(deltas)  # (unless feed just did, with this text)
        if not final and not self._could_be_complete():
            return
        outcome = self._read_call(form, self._call_start, final)
        if isinstance(outcome, tuple):
            match, end = outcome
            self._emit_call(deltas, match)
            self._consume(end)
            self._call_form = self._plan.whole
            self._state = AFTER_CALL
            return
        if outcome is NEED:
            if final:
                error = ParseError(
                    "unterminated_call", "the output ends inside a tool call", self._buf[self._call_start :]
                )
                self._call_error(deltas, error)
                self._consume(len(self._buf))
                self._state = CONTENT
            return
        if isinstance(outcome, Mismatch):
            # In a format whose every reply is a JSON object, an object that is no call is no reply.
            kind = outcome.kind if self.shape.answer_key else "malformed_call"
            self._malformed(deltas, outcome.reason, final, kind)
            return

    def _read_call(self, form: CallForm, start: int, final: bool) -> tuple[CallMatch, int] | Need | Mismatch:
        """The call written in ``form`` at ``start``, and where it ends; NEED while the text cannot tell."""
        buf, memo = self._buf, self._memo
        outcome = form.matcher.match(buf, start, final, memo)
        if final and isinstance(outcome, Mismatch) and form.matcher.match(buf, start, False, memo) is NEED:
            outcome = NEED  # it is a call, cut off by the end of the output
        if isinstance(outcome, Mismatch) and form.alt is not None:
            alternative = form.alt.match(buf, start, final, memo)
            if not isinstance(alternative, Mismatch):
                outcome = alternative
        if isinstance(outcome, Mismatch) and form.variants:
            outcome = _variant_match(form.variants, buf, start, final, memo, outcome)
        if isinstance(outcome, CallMatch):
            return outcome, outcome.end
        if (isinstance(outcome, Mismatch) or final) and form.may_lack_closer:
            # The call's closing text left out where the output ends or the next call begins.
            closed = self._closerless_call(form, start, final)
            if closed is NEED:
                return NEED
            if isinstance(closed, tuple):
                closed[0].tolerated.append((MISSING_CLOSER, closed[0].end, ""))
                return closed
        return outcome

    def _closerless_call(self, form: CallForm, start: int, final: bool) -> tuple[CallMatch, int] | Need | None:
        """A call read without its closing text, and where it ends: where the output ends after it (or
        after the start of that text), or where what may follow a call stands (the next call's opener,
        a separator, the section's closer, a stop). NEED while the text cannot tell yet."""
        buf, memo, followers = self._buf, self._memo, self._plan.followers
        for matcher in form.closerless:
            got = matcher.match(buf, start, final, memo)
            if got is NEED:
                return NEED if not final else None
            if not isinstance(got, CallMatch):
                continue
            j = skip_ws(buf, got.end)
            rest = buf[j:]
            if rest.startswith(followers):
                return got, got.end
            closing = loose_literal(rest, self._plan.closing) if rest else NEED
            if final and (closing is NEED or not rest):
                return got, len(buf)  # the closing text cut short, or not written, where the output ends
            if not final and (not rest or closing is NEED or any(f.startswith(rest) for f in followers)):
                return NEED
        return None

    def _could_be_complete(self) -> bool:
        """Cheap test before a full match: the text that ends a call has arrived."""
        text = self._call_ender
        buf = self._buf
        if text:
            start, scanned = self._call_start, self._scan_from
            found = buf.find(text, scanned if scanned > start else start)
            before = self._call_ender_after
            # A call ends with its last two markers together (``[</invoke>`` ``]<]minimax[>``), where
            # the last alone may also stand after each argument.
            while found != -1 and before and not marker_before(buf, found, before, start):
                found = buf.find(text, found + 1)
            scanned = len(buf) - len(text)
            self._scan_from = scanned if scanned > start else start
            return found != -1
        if self._call_may_end is not None:
            # Such a character may have text after it in the same chunk.
            return self._call_may_end(buf, self._call_start) is not None
        if len(buf) > self._call_start and buf[-1] == "\n":
            return True
        # The last character that is not whitespace, found from the end (rstrip would copy the buffer).
        at = len(buf) - 1
        while at >= 0 and buf[at].isspace():
            at -= 1
        return at >= 0 and buf[at] in _MAY_END_A_CALL

    def _after_call(self, deltas: list[Delta], final: bool) -> None:
        if self._fenced and self._close_fence(final) is NEED:
            return
        calls = self._calls
        if calls is None:  # after an answer object, in a shape without calls
            self._state = CONTENT
            return
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
                    self._state = CALL
                    return
                if separator and self._call_opener and buf.startswith(self._call_opener, skip_ws(buf, step)):
                    self._consume(step)  # a call that will turn out malformed: reported as such
                    self._call_start = 0
                    self._state = CALL
                    return
            # Another call behind another separator than the template's (";", ",", none): looked
            # for only where that is not where the template's was just looked for.
            k = skip_ws(buf, j + 1) if buf.startswith((";", ","), j) else j
            if not self.strict and k != step:
                opens = self._opens_call(buf, k, final) if k < len(buf) or final else NEED
                if opens is NEED:
                    return
                if opens:
                    self._warn(deltas, CALL_SEPARATOR, j)
                    self._consume(k)
                    self._call_start = 0
                    self._state = CALL
                    return
        if calls.section_close:
            # Closed even when its opener was left out: models drop openers more than closers. A list
            # section opened without its bracket closes without it.
            closer = self._plan.listless_close if self._listless else calls.section_close
            step = match_closer(buf, closer, final) if closer else Mismatch("no closer")
            if step is NEED:
                return
            if isinstance(step, int):
                self._consume(step)
        self._state = CONTENT

    def _opens_call(self, buf: str, i: int, final: bool) -> bool | Need:
        """Whether a call starts at ``i``, judged by its opening alone (its leading markers, a tool
        name, or a JSON object's first key), so that waiting for the next call costs nothing per chunk."""
        assert self._calls is not None
        j = skip_ws(buf, i)
        if self._plan.call_opening:
            step = match_literal(buf, j, self._plan.call_opening, final)
            return NEED if step is NEED else isinstance(step, int)
        first = self._calls.call[0] if self._calls.call else None
        if isinstance(first, Name):
            names = self.tools.name_tuple
            rest = buf[j : j + 64]
            if rest.startswith(names):
                return True
            if not final and any(name.startswith(rest) for name in names) and len(rest) < 64:
                return NEED
            if not names:
                return bool(_NAME_START.match(rest)) if rest else (NEED if not final else False)
            return False
        if j >= len(buf):
            return NEED if not final else False
        if buf[j] != "{":
            return False
        head = buf[j : j + 40]
        if _OBJECT_WITH_KEY.match(head):
            return True
        return NEED if not final and len(head.strip()) < 3 else False

    # ------------------------------------------------------------------ calls and errors

    def _emit_call(self, deltas: list[Delta], match: CallMatch) -> None:
        streamed = self._call_over()
        index = streamed.index if streamed is not None else len(self.message.tool_calls)
        name = readable(match.name)
        call_id = self._call_id(match, index, name)
        arguments, numbers = finite(match.arguments if match.arguments is not None else {})
        text = match.arguments_text or json_text(arguments)
        # (content, reasoning_content, call_index, call_id, call_name, arguments): made with keywords,
        # a named tuple costs half as much again
        if streamed is None:
            self._emit(deltas, Delta("", "", index, call_id, name))
            self._emit(deltas, Delta("", "", index, None, None, text))
        else:
            self._finish_streamed(deltas, streamed, name, call_id, text)
        for kind, at, left_out in match.tolerated:
            self._warn(deltas, kind, at, left_out)
        for path, number in numbers:
            where = "/".join(str(step) for step in path)
            self._error(
                deltas,
                ParseError(
                    "invalid_arguments",
                    f"call {index} to {name}: {where}: {number} is no JSON number; kept as a string",
                    call_index=index,
                ),
            )
        for key, member in match.unread:
            self._error(
                deltas,
                ParseError(
                    "unknown_call_field",
                    f"call {index} to {name}: {key!r} is no field of a call in this format",
                    member,
                    index,
                ),
            )
        if self.validate:
            for problem in self.tools.check(name, arguments, index, self._schemas_reported):
                self._error(deltas, problem)
        for listed in match.more:  # the other calls of one JSON list
            self._emit_call(deltas, listed)

    def _call_id(self, match: CallMatch, index: int, name: str) -> str:
        """The id the model wrote, else (and always under ``fresh_ids``) one made of what is known once
        the name is, so that a call sent as it arrives has it first."""
        if match.call_id and not self._plan.fresh_ids:
            return readable(match.call_id)
        return generated_id(self.shape.id_form, index, name, "")

    def _stream_arguments(self, deltas: list[Delta], force: bool = False) -> None:
        """The call being read, sent as it arrives: its index, id and name once its arguments open,
        then their text as far as it is certain (``arguments_stream.py``), never past the first text
        that may close the call (where a malformed call's error is cut)."""
        buf, call = self._buf, self._streaming
        self._held_at = -1
        self._streamed_to = len(buf)
        if call is None:
            form = self._call_form
            assert form is not None
            gate = form.matcher.arguments_gate()
            if gate is not None and not force:
                # Where the arguments open can only be found once a character that may open them came.
                looked = max(self._call_start, self._header_from)
                self._header_from = len(buf)
                if gate.search(buf, looked) is None:
                    self._wake = gate
                    return
            found = form.matcher.arguments_start(buf, self._call_start, self._memo, self._plan.fresh_ids)
            if found is NEED:
                if len(buf) - self._call_start > _HEADER_LONGEST:
                    self._sent_when_complete()
                elif gate is not None:
                    self._wake = gate  # (looked for up to here)
                return
            if not isinstance(found, tuple) or found[2] - self._call_start > _HEADER_LONGEST:
                self._sent_when_complete()
                return
            match, reader, at = found
            if isinstance(reader, KeyValuesReader) and reader.writes_any(self._plan.call_cut_words):
                self._sent_when_complete()
                return
            if match.name not in self.tools.schemas:
                # An undeclared name may read otherwise once the call is whole (a tolerance may take
                # more text as the name): such a call is sent when complete.
                self._sent_when_complete()
                return
            index = len(self.message.tool_calls)
            name = readable(match.name)
            call_id = self._call_id(match, index, name)
            call = self._streaming = _StreamedCall(index, call_id, name, reader, at)
            self._emit(deltas, Delta("", "", index, call_id, name))
            call.target = self.message.tool_calls[index]
        limit = self._stream_limit(buf, call)
        if not force and call.reader.stalled(limit):
            # It reads as far as before: the text held back may yet close the call. While that text
            # still begins a closing text, nothing changes.
            if limit < len(buf) and call.closer_at < 0 and self._plan.call_cut_prefixes is not NO_MATCH:
                self._held_at = limit
            return
        more = call.reader.more(buf, limit, self._memo, force)
        if more:
            self._send_arguments(deltas, call, more)
        # Until one of these characters comes, feeding more text leaves the reader as it is.
        self._wake = call.reader.wake(buf)

    def _send_arguments(self, deltas: list[Delta], call: _StreamedCall, text: str) -> None:
        """An argument fragment: ``_emit`` less the look at which fields the delta holds."""
        # (content, reasoning_content, call_index, call_id, call_name, arguments): made with keywords,
        # a named tuple costs half as much again
        deltas.append(Delta("", "", call.index, None, None, text))
        target = call.target
        assert target is not None
        target.arguments += text  # (what was sent: only a stream's argument deltas write it)

    def _sent_when_complete(self) -> None:
        self._no_stream = True
        self._wake = ASLEEP

    def _call_over(self) -> _StreamedCall | None:
        """The call being read is over (read, or an error): the next one is read afresh."""
        streamed, self._streaming, self._no_stream = self._streaming, None, False
        self._header_from = 0
        self._held_at = -1
        self._streamed_to = -1
        self._wake = None if self._plan.streams_arguments else ASLEEP
        return streamed

    def _stream_limit(self, buf: str, call: _StreamedCall) -> int:
        """How far the arguments of a call still arriving may be read: up to the first text that may
        close the call, and short of an end of the buffer that may be the start of one."""
        if call.closer_at >= 0:
            return call.closer_at
        words = self._plan.call_cut_words
        if not words:
            return len(buf)
        start = call.scanned
        found = [at for word in words if (at := buf.find(word, start)) != -1]
        if found:
            call.closer_at = min(found)
            return call.closer_at
        call.scanned = max(start, len(buf) - self._plan.call_cut_longest + 1)
        return len(buf) - partial_suffix(buf, words)

    def _call_error(self, deltas: list[Delta], error: ParseError) -> None:
        """A call that turns out unterminated or malformed: an error keeping its text, as when none of
        it was sent. Where its beginning was sent (its name, and the certain part of its arguments), a
        client has it and cannot take it back, so the message keeps it too, as sent, and the error names
        its index. (A batch parse sends here what a stream would have, so that both read the same.)"""
        if not self._no_stream and self._plan.streams_arguments:
            self._stream_arguments(deltas, force=True)  # with no shortcut: what a batch parse sends
        streamed = self._call_over()
        self._error(deltas, error if streamed is None else replace(error, call_index=streamed.index))

    def _finish_streamed(
        self, deltas: list[Delta], streamed: _StreamedCall, name: str, call_id: str, text: str
    ) -> None:
        """The rest of a call whose beginning was sent. What was sent is certain (``arguments_stream``):
        should the call read otherwise all the same, an error says so, since a client cannot take text back."""
        index = streamed.index
        sent = streamed.target.arguments if streamed.target is not None else ""
        if name == streamed.name and call_id == streamed.call_id and text.startswith(sent):
            if len(text) > len(sent):
                self._emit(deltas, Delta("", "", index, None, None, text[len(sent) :]))
            return
        self._error(
            deltas,
            ParseError(
                "streamed_call_differs",
                f"call {index}: the call reads as {name}({text}) after {streamed.name}({sent}... was sent",
                call_index=index,
            ),
        )

    def _malformed(self, deltas: list[Delta], reason: str, final: bool, kind: str = "malformed_call") -> None:
        """Text that starts like a call but is not one: reported with its text, up to where calls end.
        Content goes on after it, with the whitespace the model wrote."""
        calls = self._calls
        assert calls is not None
        ends = [literal[0].text for literal in (calls.section_close,) if literal]
        if self._call_ender:
            ends.append(self._call_ender)
        # A call's end is looked for past its opener, which may begin with the same text (``` fences).
        start = self._call_start
        if self._call_opener and self._buf.startswith(self._call_opener, start):
            start += len(self._call_opener)
        cut = None
        for end in ends:
            at = self._buf.find(end, start)
            if at != -1:
                cut = at + len(end) if cut is None else min(cut, at + len(end))
        if cut is None:
            if not final:
                return
            cut = len(self._buf)
        self._call_error(deltas, ParseError(kind, reason, self._buf[:cut]))
        self._consume(cut)
        self._state = CONTENT

    def _error(self, deltas: list[Delta], error: ParseError) -> None:
        self._emit(deltas, Delta(error=error))

    def _warn(self, deltas: list[Delta], kind: str, at: int, left_out: str = "") -> None:
        """A tolerance applied at ``at`` in the buffer (one of ``TOLERANCES``), and the text it left out."""
        offset = self._fed - len(self._buf) + at
        self._emit(deltas, Delta(warning=ParseWarning(kind, TOLERANCES[kind], offset, left_out)))


# Each state's step, in the order of the state numbers (a table: the loop runs several times a parse).
_STATES = (
    Stream._start,
    Stream._reasoning,
    Stream._content,
    Stream._section,
    Stream._call,
    Stream._after_call,
    Stream._after_reasoning,
    Stream._answer,
)
assert len(_STATES) == STATE_COUNT  # the plan's rows of waits, one for each state


def _variant_match(
    variants: tuple[CallMatcher, ...], buf: str, start: int, final: bool, memo: Memo, mismatch: Mismatch
) -> CallMatch | Need | Mismatch:
    """The first of ``variants`` that reads a call at ``start``, in their order (a stream waits while
    an earlier one may still, so it reads what a batch parse reads); NEED then, or where the output
    ends inside one (a call cut short); else ``mismatch``."""
    cut = False
    for matcher in variants:
        got = matcher.match(buf, start, final, memo)
        if isinstance(got, CallMatch) or got is NEED:
            return got
        cut = cut or (final and matcher.match(buf, start, False, memo) is NEED)
    return NEED if cut else mismatch


def _prompt_opener(shape: OutputShape, thinking: bool | None) -> str:
    """The reasoning opener the prompt wrote, where it opened the block (as the template writes it)."""
    reasoning = shape.reasoning
    if reasoning is None or not reasoning.opened_by_prompt(thinking):
        return ""
    return "".join(marker.written for marker in reasoning.open).lstrip()


class Parser:
    """A parser for one output shape and a set of tools (to validate calls and to type key/value
    arguments). ``thinking``: whether the prompt was rendered with thinking switched on (None: the
    template's default), which decides whether the prompt opened a reasoning block. ``strict``: read
    only what the template writes, applying none of the tolerances of ``tolerance.py``.
    ``inline_reasoning``: leave reasoning in content, its markers included and the opener the prompt
    wrote first (as llama-server's ``--reasoning-format none``; clients such as Open WebUI read it there).

    ``continuing``: the OpenAI-style partial assistant message the prompt ends inside (vLLM's and
    transformers' ``continue_final_message``, llama-server's prefill): ``content`` (text or text parts)
    and ``reasoning_content``. The output continues its content when it has any, else its reasoning,
    inside the block the prompt left open (a shape without reasoning keeps it as given, and content
    continues). The message a parse returns is the whole message, prefill and continuation; a
    stream's deltas carry only the output's text. Raises ``PrefillError`` for a message of another
    role or one with tool calls.

    ``fresh_ids``: the caller gives every call an id of its own (as ``serve`` does: ids a model writes
    repeat across requests), so the ids the model writes are not read, and a call whose id or count
    the model writes after its arguments (Mistral Nemo, Command R7B) streams its arguments as they
    arrive instead of at its end. Each call's id is then the one the parser makes of its index and name."""

    def __init__(
        self,
        shape: OutputShape,
        tools: list[dict[str, Any]] | None = None,
        *,
        thinking: bool | None = None,
        strict: bool = False,
        inline_reasoning: bool = False,
        continuing: Mapping[str, Any] | Prefill | None = None,
        fresh_ids: bool = False,
    ) -> None:
        self.shape = shape
        self.tools = tools or []
        self.thinking = thinking
        self._schemas = ToolSchemas(self.tools)  # read, and each schema checked, once for every parse
        self.strict = strict
        self.inline_reasoning = inline_reasoning
        self.continuing = prefill_of(continuing) if continuing is not None else None
        self.fresh_ids = fresh_ids
        self._plan = StreamPlan(shape, self._schemas, strict=strict, fresh_ids=fresh_ids)

    def stream(self) -> Stream:
        return Stream(
            self.shape,
            self._schemas,
            thinking=self.thinking,
            strict=self.strict,
            inline_reasoning=self.inline_reasoning,
            plan=self._plan,
            continuing=self.continuing,
        )

    def parse(self, text: str) -> Message:
        stream = self.stream()
        stream.finish_with(text)
        return stream.message
