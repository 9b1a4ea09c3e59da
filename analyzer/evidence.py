"""How we know: what the detectors saw beyond the format description, each fact with the render
excerpt it rests on.

The format description says what a template does to the model's side of a conversation; the evidence
record says what a deployment should know besides: where tool definitions go and what they cost,
whether the prompt reads the clock or variables of its own, whether the two engines agree, how
earlier turns are written back, and one sample conversation with the markers the analysis found in
it; and the probe values its excerpts hold (the sentinels the analysis writes into its conversations),
each with what it stands for, so that a report can explain them. ``analysis.inspect`` gathers it;
the audit and its HTML page only format it with the description. It travels beside the description,
never inside it (golden files hold descriptions only).

Types are frozen dataclasses of plain values; a field that can say ``"unknown"`` does so when the
renders gave no evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from analyzer.markers import BRACKETED, MAX_INSIDE, marker_end, marker_start

CONTEXT = 60  # characters of evidence either side of a finding's position
# A word up to this long is not cut at an excerpt's edge; a longer run of letters is data, cut where the width ends.
LONGEST_WORD = 24

Placement = Literal["system turn", "user turn", "own block", "not written", "error"]
DefinitionForm = Literal["as given", "re-indented", "function only", "rewritten", "not written", "unknown"]
Descriptions = Literal["written", "dropped", "none given", "unknown"]
DateUse = Literal["uses the date", "deterministic", "unknown"]
EngineOutcome = Literal["agree", "differ", "both raise", "only jinja2 raises", "only minijinja raises"]
ReasoningWriteBack = Literal["kept", "dropped on earlier turns", "not written", "unknown"]
ConsecutiveUsers = Literal["written", "raises", "second dropped"]

_WORD = re.compile(r"\w+")
_HEADER = re.compile(rf"(?:{BRACKETED.pattern})\Z")


def excerpt(text: str, start: int, end: int | None = None, width: int = CONTEXT, whole: Iterable[str] = ()) -> str:
    """At most ``width`` characters either side of ``text[start:end]`` (of ``start`` when ``end`` is
    None), the middle cut short when it is long. Every cut falls where it splits no marker (nor a
    marker from the word glued after it, ``<|im_start|>user``), no word and none of the ``whole``
    strings (the probe values), so an excerpt never opens with the tail of ``<|im_start|>``; a cut
    inside one moves towards the middle, so the excerpt only gets shorter."""
    end = start if end is None else end
    keep = tuple(w for w in whole if w)
    left = min(start, _forward(text, max(0, start - width), keep))
    right = max(end, _backward(text, min(len(text), end + width), keep))
    if end - start <= 2 * width:
        return text[left:right]
    head_end = max(start, _backward(text, start + width, keep))
    tail_start = min(end, _forward(text, end - width, keep))
    return text[left:head_end] + " ... " + text[tail_start:right]


def _split(text: str, at: int, keep: tuple[str, ...]) -> tuple[int, int] | None:
    """The unit (marker, header, short word or ``keep`` string) that a cut at ``at`` would split, if any."""
    if marker_start(text, at) != at:
        return marker_start(text, at), marker_end(text, at)
    # A marker and the word glued after it are one header (``<|im_start|>user``): an excerpt that
    # opens with "user" reads as if the word were the template's text.
    glued = _WORD.match(text, at) if at > 0 else None
    header = _HEADER.search(text, max(0, at - MAX_INSIDE - 2), at) if glued else None
    if glued and header:
        return header.start(), glued.end()
    if 0 < at < len(text) and _WORD.fullmatch(text, at - 1, at + 1):
        found = next(m for m in _WORD.finditer(text, max(0, at - LONGEST_WORD - 1)) if m.end() >= at)
        if found.start() < at < found.end() and len(found.group()) <= LONGEST_WORD:
            return found.start(), found.end()
    for piece in keep:
        found_at = text.find(piece, max(0, at - len(piece) + 1))
        if 0 <= found_at < at < found_at + len(piece):
            return found_at, found_at + len(piece)
    return None


def _forward(text: str, at: int, keep: tuple[str, ...]) -> int:
    """``at``, or past the units it would split."""
    while (unit := _split(text, at, keep)) is not None:
        at = unit[1]
    return at


def _backward(text: str, at: int, keep: tuple[str, ...]) -> int:
    """``at``, or back before the units it would split."""
    while (unit := _split(text, at, keep)) is not None:
        at = unit[0]
    return at


@dataclass(frozen=True, slots=True)
class Probe:
    """A value the analysis planted in its conversations (``render.variants``' sentinels), and what it
    stands for: evidence excerpts are real renders of those conversations, so they hold these."""

    text: str
    meaning: str


# --------------------------------------------------------------------------- tool definitions


@dataclass(frozen=True, slots=True)
class ToolPlacement:
    """Where tool definitions go in a conversation that opens with ``opening`` ("system, user" or "user");
    ``evidence`` is the excerpt around them, or the error when the prompt does not render with tools."""

    opening: str
    placement: Placement
    evidence: str


@dataclass(frozen=True, slots=True)
class ToolDefinitions:
    """What tool definitions add to the prompt and how they are written.

    Costs are what the prompt grows by: ``fixed`` with no tool in the section, ``per_tool`` for each
    tool; None where the prompts did not render. Tokens are counted only with the model's own
    tokenizer (a tokenizer.json beside the template), never estimated.
    """

    placements: tuple[ToolPlacement, ...]
    fixed_chars: int | None
    per_tool_chars: int | None
    fixed_tokens: int | None
    per_tool_tokens: int | None
    form: DefinitionForm
    form_evidence: str
    descriptions: Descriptions
    descriptions_evidence: str

    @property
    def written(self) -> bool:
        return any(p.placement not in ("error", "not written") for p in self.placements)


# --------------------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class VariableUse:
    """A variable of the template's own that changes the prompt when a caller sets it."""

    name: str
    evidence: str


@dataclass(frozen=True, slots=True)
class ContextUse:
    """What the prompt reads besides the conversation: the clock (``strftime_now``) and the
    template's own variables. ``date_evidence`` is the excerpt where another date changes the prompt,
    or the error when the prompt does not render; each variable's evidence is the prompt with it set
    to ``variable_value``."""

    date: DateUse
    date_evidence: str
    variables: tuple[VariableUse, ...]
    variable_value: str


# --------------------------------------------------------------------------- engines


@dataclass(frozen=True, slots=True)
class EngineCase:
    """One conversation rendered by jinja2 and by minijinja. Where the renders differ, ``position`` is
    their first difference and each side is an excerpt around it; where an engine raises, its side is
    the message."""

    label: str
    outcome: EngineOutcome
    position: int | None
    jinja2: str
    minijinja: str


@dataclass(frozen=True, slots=True)
class EngineAgreement:
    cases: tuple[EngineCase, ...]

    @property
    def agree(self) -> bool:
        return all(case.outcome == "agree" for case in self.cases)


# --------------------------------------------------------------------------- history


@dataclass(frozen=True, slots=True)
class History:
    """How earlier turns are written back.

    ``reasoning``: whether the reasoning of an answer stays once a later user turn follows;
    ``call_turn``: an excerpt of a turn with content and a call, followed by a user turn;
    ``consecutive_users``: what two user turns in a row give (``users_evidence``: the error, or the render).
    """

    reasoning: ReasoningWriteBack
    reasoning_evidence: str
    call_turn: str
    consecutive_users: ConsecutiveUsers
    users_evidence: str


# --------------------------------------------------------------------------- the sample conversation


@dataclass(frozen=True, slots=True)
class Mark:
    """A marker the analysis found at ``text[start:end]``, and what it is ("call marker", ...)."""

    start: int
    end: int
    label: str


@dataclass(frozen=True, slots=True)
class Sample:
    """A sample conversation (a user asks, the assistant calls a tool, the result comes back) with the
    markers at the places the description puts them, and the model's output for a plain answer and
    for a call, with the spans where each differs from the other (compared marker by marker and word
    by word). A conversation that does not render holds the reason instead, with no marks.
    ``tools`` names the tools it offers (the caller's, or a sample weather tool), ``called`` the one
    the call output calls; ``calls_tool`` says whether the conversation holds that call and its result
    (a template that writes no calls gets a question and an answer)."""

    conversation: str
    marks: tuple[Mark, ...]
    answer: str
    call: str
    answer_changes: tuple[tuple[int, int], ...]
    call_changes: tuple[tuple[int, int], ...]
    tools: tuple[str, ...]
    called: str
    calls_tool: bool


@dataclass(frozen=True, slots=True)
class Evidence:
    engine: str  # the engine the renders used
    tools: ToolDefinitions
    context: ContextUse
    engines: EngineAgreement
    history: History
    sample: Sample
    probes: tuple[Probe, ...]  # the probe values the excerpts and the sample may hold
