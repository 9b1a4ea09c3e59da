"""The stream's plan: what a stream reads off its output shape before any text, the same for every
parse of one parser (immutable once built): the matchers of each way a call is written, the searches
for the markers each state watches for, and the buffers on which each state waits for more text.

The state machine (``stream.py``) reads these tables and derives nothing from the shape itself; the
facts they are built from (what follows what, closing texts) come from ``shape_analysis``.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Sequence

from .calls import ToolSchemas
from .headers import HeaderVariant, ShapeHeaders, shape_headers
from .match import CallMatcher, VariantMatcher
from .scanners import cached_words_search, cut_patterns, first_of
from .shape import CallsShape, JsonArgs, JsonCallObject, KeyValueArgs, Marker, Markers, OutputShape, Part
from .shape_analysis import ByIdentity, analysis, closing_markers, leading_markers

# The stream's states: each one's step is a method of Stream, and the plan keeps a row of waits for each.
START, REASONING, CONTENT, SECTION, CALL, AFTER_CALL, AFTER_REASONING, ANSWER = range(8)
STATE_COUNT = ANSWER + 1
# A markdown code fence, which models write around bare JSON where the format asks for none.
FENCE = "```"


def turn_end_before_stop(shape: OutputShape) -> str:
    """The text the template writes to close a turn before its stop, less whitespace ("" when none)."""
    written = "".join(marker.written for marker in shape.end)
    at = min((at for stop in shape.stops if stop and (at := written.find(stop)) >= 0), default=-1)
    return written[:at].strip() if at > 0 else ""


class StreamPlan:
    """What a stream reads off its shape before any text: the same for every parse of one parser."""

    # Slots: a stream reads its plan at every step (see Stream's).
    __slots__ = (
        "_headless",
        "_make_headless",
        "_reordered_forms",
        "_variant_matcher",
        "_variants",
        "_watched",
        "abandoned_header",
        "after_reasoning_words",
        "alt_matcher",
        "answer_opener",
        "call_completer",
        "call_cut_longest",
        "call_cut_prefixes",
        "call_cut_starts",
        "call_cut_unspaced",
        "call_cut_words",
        "call_ender",
        "call_ender_after",
        "call_may_end",
        "call_opener",
        "call_opening",
        "call_words",
        "closing",
        "content_headers",
        "detailed_content_header",
        "fences",
        "followers",
        "fresh_ids",
        "headless_word",
        "json_opener",
        "listless_close",
        "longest",
        "marker_start",
        "matcher",
        "named_after",
        "prompt_header",
        "reasoning_calls",
        "reasoning_longest",
        "reasoning_marker_start",
        "reasoning_waits",
        "reasoning_watch",
        "reordered",
        "section_wake",
        "streams_arguments",
        "strict",
        "turn_end",
        "waits",
        "waits_longest",
        "watch",
        "whole",
    )

    def __init__(
        self, shape: OutputShape, tools: ToolSchemas, *, strict: bool = False, fresh_ids: bool = False
    ) -> None:
        calls = shape.calls
        facts = analysis(shape).calls  # what follows what in the calls (shape_analysis)
        self.strict = strict
        self.fresh_ids = fresh_ids
        # A section opener that joins a special word and punctuation (``[TOOL_CALLS][``): a model may
        # write whitespace between the two, so content watches the special word alone.
        trigger = calls.trigger if calls else None
        opener = calls.section_open[0].text if calls and calls.section_open else ""
        self.section_wake = (
            trigger.wake_word
            if trigger and not strict and trigger.wake_word != opener and opener.startswith(trigger.wake_word)
            else ""
        )
        # The marker the generation prompt ends with (the assistant header's, ``<|CHATBOT_TOKEN|>``),
        # which a model may write again first.
        self.prompt_header = "" if strict else _last_marker(shape.generation_prompt)
        # A section that is a JSON list (``[TOOL_CALLS][`` ... ``]``): its closer less the bracket, for a
        # single call a model writes as an object after the special word; None where there is no such list.
        self.listless_close = (
            _less_bracket(calls.section_close)
            if calls
            and self.section_wake
            and opener.endswith("[")
            and calls.section_close[:1]
            and calls.section_close[0].text.startswith("]")
            else None
        )
        # The text that ends a call.
        self.call_ender = facts.closing if facts else ""
        # Where a call's text is cut when it is malformed (``Stream._malformed``): its arguments are
        # sent as they arrive no further. Nor past the next call's opener where a call may lack its
        # closing text (a tolerance): the call may turn out to end there.
        next_opener = facts.opener[0].text if facts and facts.opener and self.call_ender and not strict else ""
        self.call_cut_words = (
            [
                w
                for w in ((calls.section_close[0].text if calls.section_close else ""), self.call_ender, next_opener)
                if w
            ]
            if calls
            else []
        )
        self.call_cut_longest = max(map(len, self.call_cut_words), default=0)
        self.call_cut_starts, self.call_cut_prefixes = cut_patterns(tuple(self.call_cut_words))
        self.call_cut_unspaced = not any(w[0].isspace() for w in self.call_cut_words)
        self.streams_arguments = bool(calls) and any(
            isinstance(part, (JsonArgs, JsonCallObject, KeyValueArgs)) for part in (calls.call if calls else ())
        )
        self.call_ender_after = facts.before_closing if facts and self.call_ender else ""
        self.call_opening = facts.opener if facts else ()
        self.call_opener = self.call_opening[0].text if self.call_opening else ""
        # Without closing text of its own, a call whose every form ends with a JSON object or a marker
        # can only end with one of their last characters ("" where a form ends otherwise).
        last = facts.last_characters if facts and not self.call_ender else ""
        self.call_may_end = first_of(set(last)) if last else None
        # The one character a chunk that completes a call must hold, where there is one (the last of
        # the call's closing text, or what every form ends with): ``in`` finds it quicker than a search.
        self.call_completer = self.call_ender[-1:] or (last[0] if len(set(last)) == 1 else "")
        # Between two calls, and what a call opens with: where a raw value may end with its call.
        separator = calls.separator[0].text if calls and calls.separator else ""
        opens = (self.call_opener,) if self.call_opener else tools.name_tuple

        def matcher_of(parts: tuple[Part, ...] | None) -> CallMatcher | None:
            if facts is None or not parts:
                return None
            return CallMatcher(
                parts, tools.schemas, facts.followers, call_separator=separator, next_call=opens, strict=strict
            )

        self.whole = CallForm(calls.call, calls.no_arguments, 0, strict, matcher_of) if calls else None
        # A call header written as the template's other headers are (headers.py): in the call's own
        # order, tried where the call is no call as written; channel part first, known by its first
        # word. Their matchers are made when first needed (most outputs never need them).
        headers = (
            _SHAPE_HEADERS.get(shape, shape_headers, shape) if calls is not None and not strict else ShapeHeaders()
        )
        self._variants, self.content_headers = headers.variants, headers.content_headers
        self.detailed_content_header, self.abandoned_header = headers.detailed_content_header, headers.abandoned_header
        # The first word of a header written channel part first, and the markers up to the name.
        self.reordered = {v.opening[0].text: v.opening for v in self._variants if v.reordered}
        self._reordered_forms: dict[str, CallForm] = {}

        def variant_matcher(variant: HeaderVariant) -> CallMatcher:
            return VariantMatcher(
                variant.parts,
                variant.kinds,
                tools.schemas,
                facts.followers if facts else (),
                call_separator=separator,
                next_call=opens,
                strict=strict,
                token_slot=variant.token_slot,
            )

        self._variant_matcher = variant_matcher
        if self.whole is not None and self._variants:
            in_order = tuple(v for v in self._variants if not v.reordered)
            self.whole.make_variants = lambda: tuple(map(variant_matcher, in_order))
        self.matcher = self.whole.matcher if self.whole else None
        self.alt_matcher = self.whole.alt if self.whole else None
        # A call whose opener is several markers, the later one distinctive (``<tool_call>`` then
        # ``<function=``): models sometimes leave the first out, and content watches the later one too.
        skip = _headless_start(calls) if calls and not strict else 0
        self._headless: CallForm | None = None  # made when first needed (most outputs never do)
        self._make_headless = (
            (lambda: CallForm(calls.call, calls.no_arguments, skip, strict, matcher_of)) if calls and skip else None
        )
        first = calls.call[skip] if calls and skip else None
        self.headless_word = first.text if isinstance(first, Marker) else ""
        # A call's closing text, which may be cut short or left out where the output ends, and what
        # may follow a call (where a call without that text ends).
        self.closing = closing_markers(calls.call) if calls else ()
        self.followers = (
            tuple(text for text in dict.fromkeys((*facts.followers, self.call_opener, self.headless_word)) if text)
            if facts
            else ()
        )
        # Calls that open with a tool's name at the start of the output come behind the separator's
        # first marker after content (functionary: ``all\nsome text>>>get_weather\n{...}``).
        self.named_after = calls.separator[0].text if calls and calls.trigger.tool_name and calls.separator else ""
        # Calls that open with bare JSON have no marker to watch for, only this pattern.
        self.json_opener = re.compile(calls.trigger.pattern) if calls is not None and calls.trigger.pattern else None
        # An answer written as a JSON object ({"answer": "..."}): its text streams as content.
        self.answer_opener = (
            re.compile(r'\{\s*"' + re.escape(shape.answer_key) + r'"\s*:\s*"') if shape.answer_key else None
        )
        # Bare JSON may come in a code fence, which is dropped around it.
        self.fences = self.json_opener is not None or self.answer_opener is not None
        self.turn_end = turn_end_before_stop(shape)
        self.watch = self._content_markers(shape)
        self.longest = max((len(word) for word in self.watch), default=1)
        self._watched = cached_words_search(tuple(self.watch))
        self.reasoning_watch: list[str] = []
        # Where a call may start in reasoning: the trigger word, and (not strict) a call's own opener
        # without the section's, and its later opener without its first.
        call_words = [calls.trigger.word] if calls is not None and calls.trigger.word else []
        if calls is not None and call_words and not strict:
            call_words += [self.call_opener] if calls.section_open else []
            call_words += [self.headless_word]
        call_words = [word for word in dict.fromkeys(call_words) if word]
        self.reasoning_calls = cached_words_search(tuple(call_words))
        if shape.reasoning:
            self.reasoning_watch = [shape.reasoning.close[0].text, *call_words]
        self.reasoning_longest = max((len(word) for word in self.reasoning_watch), default=1)
        self.after_reasoning_words = self._after_reasoning_words(shape)
        # The words a call opens with, which an output cut short may end inside.
        self.call_words = (
            [
                word
                for word in dict.fromkeys(
                    (
                        calls.trigger.word,
                        # (a call's opener without the section's is read only where tolerated)
                        "" if strict and calls.section_open else self.call_opener,
                        *(m.text for m in calls.section_open[:1]),
                    )
                )
                if word
            ]
            if calls
            else []
        )
        # The characters content must be watched at: where a marker, a call or a bare JSON object
        # (its pattern opens with "{") may start; and those of reasoning.
        firsts = {word[0] for word in (*self.watch, *self.call_words)}
        if self.json_opener is not None or self.answer_opener is not None:
            firsts.add("{")
        self.marker_start = first_of(firsts)
        self.reasoning_marker_start = first_of({word[0] for word in self.reasoning_watch})
        # The waits depend on the shape alone (the other arguments are read off it), and a server
        # makes a parser per request: worked out once per shape.
        self.waits, self.reasoning_waits, self.waits_longest = _SHAPE_WAITS.get(
            shape, _waits_of, shape, self.watch, self.reasoning_watch, self.after_reasoning_words
        )

    def reordered_form(self, lead: str) -> CallForm:
        """The form of a call whose header starts with its channel part ``lead`` (one of ``reordered``)."""
        form = self._reordered_forms.get(lead)
        if form is None:
            matchers = [self._variant_matcher(v) for v in self._variants if v.reordered and v.opening[0].text == lead]
            # (no closerless form: it would not record the header's tolerance)
            form = CallForm(matchers[0].parts, None, 0, True, functools.partial(_only, matchers[0]))
            form.make_variants = lambda: tuple(matchers[1:])
            self._reordered_forms[lead] = form
        return form

    @property
    def headless(self) -> CallForm | None:
        """The form of a call written without its first marker, where its second is distinctive."""
        if self._headless is None and self._make_headless is not None:
            self._headless = self._make_headless()
        return self._headless

    @staticmethod
    def _after_reasoning_words(shape: OutputShape) -> tuple[str, ...]:
        """What may follow a reasoning block the model skipped: a call, a content wrapper, the rest of
        the turn's prefix (a tuple, for one ``startswith``)."""
        words = []
        if shape.calls is not None and shape.calls.trigger.word:
            words.append(shape.calls.trigger.word)
        if shape.content_open:
            words.append(shape.content_open[0].text)
        if shape.reasoning is not None and shape.reasoning.after:
            words.append(shape.reasoning.after[0].text)
        return tuple(words)

    def earliest_watched(self, buf: str, start: int) -> tuple[int, str] | None:
        """Where the first watched word from ``start`` stands, and which (the longest of those there)."""
        m = self._watched.search(buf, start) if self._watched is not None else None
        return (m.start(), m.group()) if m else None

    def _content_markers(self, shape: OutputShape) -> list[str]:
        """What content is watched for: markers that open reasoning, calls, content wrappers, stops."""
        calls = shape.calls
        watch: list[str] = []
        if shape.reasoning:
            watch.append(shape.reasoning.open[0].text)
            if not self.strict:
                watch.append(shape.reasoning.close[0].text)  # a stray closer, after a block
        if calls is not None:
            if calls.trigger.word:
                watch.append(calls.trigger.word)
            if self.call_opener and not (self.strict and calls.section_open):
                watch.append(self.call_opener)  # a call without its section opener, where there is one
            if self.named_after:
                watch.append(self.named_after)
            if self.section_wake:
                watch.append(self.section_wake)
            if self.headless_word:
                watch.append(self.headless_word)
        for literal in (shape.content_open, shape.content_close):
            if literal:
                watch.append(literal[0].text)
        watch += [*self.reordered, *self.content_headers]
        if self.detailed_content_header is not None:
            watch.append(self.detailed_content_header.lead)
        if self.abandoned_header is not None:
            watch += sorted(self.abandoned_header.leads)
        if calls is not None and calls.section_close and len(calls.section_close[0].text) > 2:
            # A closer some templates write after content (not a bare "]", which is only JSON syntax).
            watch.append(calls.section_close[0].text)
        watch += [stop for stop in shape.stops if stop]
        watch.append(self.turn_end)
        if self.fences:
            watch.append(FENCE)
        return [word for word in dict.fromkeys(watch) if word]


class CallForm:
    """The matchers of one way a call is written: whole (and its form without arguments), and without
    its closing markers, for a call whose closing text the model left out (those made when first
    needed: a server makes a parser per request, and most outputs never need them)."""

    __slots__ = ("_closerless", "_made", "_matcher_of", "_open_parts", "_variants", "alt", "make_variants", "matcher")

    def __init__(
        self,
        call: tuple[Part, ...],
        no_arguments: tuple[Part, ...] | None,
        skip: int,
        strict: bool,
        matcher_of: Callable[[tuple[Part, ...] | None], CallMatcher | None],
    ) -> None:
        """The form of ``call`` (and ``no_arguments``) from part ``skip`` on."""
        parts, alt = call[skip:], no_arguments[skip:] if no_arguments and skip < len(no_arguments) else None
        whole = matcher_of(parts)
        assert whole is not None
        self.matcher, self.alt = whole, matcher_of(alt)
        self._matcher_of = matcher_of
        self._open_parts = () if strict else tuple(_less_closing(p) for p in (parts, alt) if p)
        self._made = False
        self._closerless: tuple[CallMatcher, ...] = ()
        # Forms the template does not write, tried where this one is no call (headers.py), made when
        # first needed by ``make_variants``.
        self._variants: tuple[CallMatcher, ...] = ()
        self.make_variants: Callable[[], tuple[CallMatcher, ...]] | None = None

    @property
    def variants(self) -> tuple[CallMatcher, ...]:
        if self.make_variants is not None:
            self._variants, self.make_variants = self.make_variants(), None
        return self._variants

    @property
    def closerless(self) -> tuple[CallMatcher, ...]:
        """The matchers of the call without its closing markers (none where it has none, or strict)."""
        if not self._made:
            self._closerless = tuple(m for p in self._open_parts if p and (m := self._matcher_of(p)) is not None)
            self._made = True
        return self._closerless

    @property
    def may_lack_closer(self) -> bool:
        return any(self._open_parts)


def _only(matcher: CallMatcher, parts: tuple[Part, ...] | None) -> CallMatcher | None:
    """``matcher`` for a form's parts, none for a form without them (a call form of one matcher)."""
    return matcher if parts else None


def _less_closing(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """A call's parts without the markers it ends with; () where it ends with none, or they are all it has."""
    closing = len(closing_markers(parts))
    return parts[:-closing] if closing and closing < len(parts) else ()


def _last_marker(text: str) -> str:
    """The marker ``text`` ends with (``<|...|>``, ``<...>``, ``[...]`` with no space inside), or ""."""
    text = text.rstrip()
    if not text or text[-1] not in ">]":
        return ""
    start = text.rfind("[" if text[-1] == "]" else "<")
    marker = text[start:] if start != -1 else ""
    return marker if len(marker) >= 3 and not any(ch.isspace() for ch in marker) else ""


def _less_bracket(close: Markers) -> Markers:
    """A JSON list section's closer without the list's closing bracket it starts with."""
    first = close[0]
    rest = first.text[1:].lstrip()
    return ((Marker(rest, "", first.trail),) if rest else ()) + close[1:]


def _headless_start(calls: CallsShape) -> int:
    """Where a call's parts go on after its first marker, when the call opens with several markers and
    the next one is distinctive by itself (a tag: ``<function=``), so a call written without the first
    is still known; else 0."""
    if (
        len(leading_markers(calls.call)) < 2
        or calls.section_open
        or not calls.call
        or not isinstance(calls.call[0], Marker)
    ):
        return 0
    second = calls.call[1]
    if not isinstance(second, Marker):
        return 0
    text = second.text
    return 1 if len(text) >= 3 and text[0] in "<[" and any(ch.isalpha() for ch in text) else 0


def _arriving(words: list[str]) -> frozenset[str]:
    """The beginnings of ``words`` that hold none of them whole: text that may yet become one."""
    return frozenset(start for start in _short_of_whole(words) if not any(word in start for word in words))


def _short_of_whole(texts: Iterable[str]) -> frozenset[str]:
    """Every beginning of ``texts``, each short of the whole text."""
    return frozenset(text[:k] for text in texts for k in range(1, len(text)))


def _waits_of(
    shape: OutputShape, watch: list[str], reasoning_watch: list[str], after_reasoning: tuple[str, ...]
) -> tuple[tuple[frozenset[str], ...], frozenset[str], int]:
    """Whole buffers that are a marker still arriving, on which a state's step waits for more, for
    each state; those of reasoning after some reasoning was read; and one more than the longest.

    A feed that leaves one of these skips the state machine. A step skipped is taken at a later feed
    or at the finish on the longer text, which the machine reads alike however it is cut into chunks:
    these only spare work, and each is one the machine itself waits on (tests check both)."""
    calls = shape.calls
    waits: list[frozenset[str]] = [frozenset()] * STATE_COUNT
    waits[START] = _beginnings([shape.prefix])
    reasoning_waits = _arriving(reasoning_watch)
    if shape.reasoning is not None:
        # Reasoning's closer of several markers is read whole. Before any reasoning, what follows a
        # reasoning block the model skipped is waited on too.
        reasoning_waits |= _beginnings([shape.reasoning.close])
        first = [(Marker(word),) for word in after_reasoning]
        waits[REASONING] = reasoning_waits | _beginnings(first)
        waits[AFTER_REASONING] = _beginnings([shape.reasoning.after])
    content = _arriving(watch)
    if calls is not None:
        # Content waits while a section's opener arrives whole, and a first call's opener after it
        # (or alone). Right after the section's opener, a call's opener or the section's closer;
        # after a call, a separator and the next call's opener, or that closer.
        opener, close, between = leading_markers(calls.call), calls.section_close, calls.separator or ()
        content |= _beginnings([calls.section_open, (*calls.section_open, *opener)])
        space = calls.section_open[-1].trail if calls.section_open else ""
        waits[SECTION] = _beginnings([opener, close], space)
        waits[AFTER_CALL] = _beginnings([(*between, *opener), between, close])
    # A bare JSON object or an answer opens with "{": text without one is no such opening, and a
    # bare JSON call's opening is waited on up to its first key.
    waits[CONTENT] = frozenset(word for word in content if "{" not in word) | _json_call_openings(calls)
    longest = max((max(map(len, words), default=0) for words in waits), default=0)
    return tuple(waits), reasoning_waits, longest + 1


def _beginnings(literals: Sequence[Markers], space: str = "") -> frozenset[str]:
    """The beginnings of ``literals``, short of the whole: each as its markers' text alone and as the
    template writes it (its whitespace between and around the markers, and ``space``, the whitespace
    written before where it stands, in front)."""
    texts = set()
    for markers in literals:
        if not markers:
            continue
        plain = "".join(marker.text for marker in markers)
        spaced = markers[0].text + "".join(
            (before.trail or after.lead) + after.text for before, after in itertools.pairwise(markers)
        )
        for text in (plain, spaced):
            for lead in {"", markers[0].lead, space}:
                for trail in {"", markers[-1].trail}:
                    texts.add(lead + text + trail)
    return _short_of_whole(texts)


def _json_call_openings(calls: CallsShape | None) -> frozenset[str]:
    """The beginnings of a bare JSON call up to its first key, as written with and without space."""
    if calls is None or not calls.trigger.pattern or not calls.call:
        return frozenset()  # calls behind a marker
    first = calls.call[0]
    if not isinstance(first, JsonCallObject):
        return frozenset()
    layout = first.layout
    key = "" if layout.name_is_key or not layout.key_order else json.dumps(layout.key_order[0])
    return _short_of_whole("{" + space + (key or '"') for space in ("", " ", "\n"))


_SHAPE_HEADERS: ByIdentity[OutputShape, ShapeHeaders] = ByIdentity()


_SHAPE_WAITS: ByIdentity[OutputShape, tuple[tuple[frozenset[str], ...], frozenset[str], int]] = ByIdentity()
