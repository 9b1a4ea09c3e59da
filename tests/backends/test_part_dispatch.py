"""Every backend handles every kind of call part, through its one dispatch on the part's kind.

Each backend turns a call part into its output in one place, a ``match`` on the part with an
``assert_never`` default (mypy strict proves the cases exhaustive): the grammar's ``_Builder.part``,
the response_template's ``_Builder.part`` (a part around the arguments, as regex) and
``_Builder.arguments`` (the arguments part, as a content parser), and the trigger ``lower`` derives
from the part a call opens with; and the parts of an argument form (``ArgPart``): the grammar's
``_Builder.argument`` and the response_template's ``_tag_pattern``.

Here every kind of ``Part`` and of ``ArgPart``, as ``typing.get_args`` lists the union, is sent through
each of them: every such part of a corpus template's lowered golden shape (and of the prompted
format's), in that shape's context. A kind added to a union fails here until a shape has one and every
backend handles it; a case dropped from a backend fails here (its part reaches ``assert_never``) as it
fails mypy; a case that refuses every part of its kind fails here too.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest
from helpers.golden import golden_descriptions
from helpers.grammar import TOOLS, WEATHER_TOOL

from analyzer.backends import response_template
from analyzer.backends.gbnf import grammar as gbnf
from analyzer.backends.prompted.format import STYLES, prompted_format, prompted_shape
from analyzer.lower import lower, trigger_for
from analyzer.runtime.shape import ArgPart, ArgumentShape, KeyValueArgs, OutputShape, Part, Trigger
from analyzer.tools import declared_tools

PART_KINDS: tuple[type, ...] = typing.get_args(Part)
ARGUMENT_KINDS: tuple[type, ...] = typing.get_args(response_template.CallArguments)
ARG_PART_KINDS: tuple[type, ...] = typing.get_args(ArgPart)
WEATHER = declared_tools([WEATHER_TOOL])[0]


@dataclass(frozen=True)
class Sample:
    """A call part where a shape writes it: the shape's call pattern holds it at ``position``."""

    where: str
    shape: OutputShape
    position: int

    @property
    def part(self) -> Part:
        assert self.shape.calls is not None
        return self.shape.calls.call[self.position]


@dataclass(frozen=True)
class FormSample:
    """An argument form holding a part of the kind tested, in the arguments part at ``sample``."""

    sample: Sample
    form: ArgumentShape

    @property
    def where(self) -> str:
        return f"{self.sample.where} ({self.form.json_type})"

    @property
    def arguments(self) -> KeyValueArgs:
        assert isinstance(self.sample.part, KeyValueArgs)
        return self.sample.part


@cache
def shapes() -> list[tuple[str, OutputShape]]:
    """The golden shapes by template name, and the prompted formats'."""
    found = [(d.template.name, lower(d)) for d in golden_descriptions(with_calls=True)]
    return found + [(f"prompted {style}", prompted_shape(prompted_format(TOOLS, style=style))) for style in STYLES]


@cache
def samples() -> dict[type, list[Sample]]:
    """Every call part of the shapes, by kind."""
    found: dict[type, list[Sample]] = {}
    for where, shape in shapes():
        assert shape.calls is not None
        for k, part in enumerate(shape.calls.call):
            found.setdefault(type(part), []).append(Sample(where, shape, k))
    return found


@cache
def form_samples() -> dict[type, list[FormSample]]:
    """Every argument form of the shapes, by the kinds of part it holds."""
    found: dict[type, list[FormSample]] = {}
    for s in samples().get(KeyValueArgs, []):
        assert isinstance(s.part, KeyValueArgs)
        for form in s.part.forms:
            for kind in dict.fromkeys(type(part) for part in form.parts):
                found.setdefault(kind, []).append(FormSample(s, form))
    return found


def samples_of(kind: type, by_kind: dict[type, list[Sample]] | dict[type, list[FormSample]]) -> list[typing.Any]:
    found = by_kind.get(kind)
    assert found, f"no corpus template nor prompted format writes a {kind.__name__} part to test with"
    return found


# --------------------------------------------------------------------------- each backend's dispatch
# Each sends a part through one dispatch and checks what its case made: True when it wrote the part,
# False when it refused it with a reason (a response_template cannot say everything a shape can).


def grammar_part(s: Sample) -> bool:
    calls = s.shape.calls
    assert calls is not None
    for whitespace in (gbnf._ExactBuilder, gbnf._FlexibleBuilder):
        builder = whitespace(s.shape, calls)
        piece = builder.part(s.part, WEATHER, builder.facts.call.value_stops(s.position))
        assert isinstance(piece, gbnf._Piece) and piece.expr, f"{s.part.kind} wrote no grammar"
    return True


def response_template_part(s: Sample) -> bool:
    """Around the arguments, a part is regex; an arguments part there is refused: a content parser reads
    the arguments."""
    builder = response_template._Builder(s.shape)
    if isinstance(s.part, response_template.CallArguments):
        with pytest.raises(response_template._Cannot, match="besides the arguments"):
            builder.part(s.part, None, "")
        return False
    re.compile(builder.part(s.part, None, ""))
    return True


def response_template_arguments(s: Sample) -> bool:
    """An arguments part becomes a content parser, or is refused (arguments written as a JSON string,
    which the json parser decodes to a string only)."""
    assert isinstance(s.part, response_template.CallArguments)
    try:
        reading = response_template._Builder(s.shape).arguments(s.part, s.position, braced=False)
    except response_template._Cannot as refused:
        assert refused.reason
        return False
    assert reading.content in ("json", "xml-inline") and "function" in reading.transform
    return True


def trigger(s: Sample) -> bool:
    assert isinstance(trigger_for((), (s.part,)), Trigger)
    return True


@dataclass(frozen=True)
class Dispatch:
    """A backend's dispatch: the kinds it takes, and those it writes for some corpus part (the others
    it refuses by design)."""

    handle: Callable[[Sample], bool]
    takes: tuple[type, ...]
    writes: tuple[type, ...]


DISPATCHES = {
    "grammar part": Dispatch(grammar_part, PART_KINDS, PART_KINDS),
    "response_template part": Dispatch(
        response_template_part, PART_KINDS, tuple(k for k in PART_KINDS if k not in ARGUMENT_KINDS)
    ),
    "response_template arguments": Dispatch(response_template_arguments, ARGUMENT_KINDS, ARGUMENT_KINDS),
    "lower trigger": Dispatch(trigger, PART_KINDS, PART_KINDS),
}


@pytest.mark.parametrize(
    ("dispatch", "kind"),
    [(name, kind) for name, dispatch in DISPATCHES.items() for kind in dispatch.takes],
    ids=lambda value: getattr(value, "kind", value),
)
def test_every_backend_handles_every_kind(dispatch: str, kind: type) -> None:
    """Every corpus part of the kind reaches its case, which writes it or refuses it with a reason; the
    kinds the dispatch writes, it writes for some part."""
    handler = DISPATCHES[dispatch]
    written = [s.where for s in samples_of(kind, samples()) if handler.handle(s)]
    assert bool(written) == (kind in handler.writes), f"{dispatch} wrote {kind.kind} for {written[:3]}"


# --------------------------------------------------------------------------- the parts of an argument form


def grammar_argument(s: FormSample) -> bool:
    calls = s.sample.shape.calls
    assert calls is not None
    for whitespace in (gbnf._ExactBuilder, gbnf._FlexibleBuilder):
        builder = whitespace(s.sample.shape, calls)
        stops = builder.facts.call.value_stops(s.sample.position)
        assert builder.argument(s.form, "location", {"type": s.form.json_type}, "location", stops)
    return True


def response_template_tag(s: FormSample) -> bool:
    """A form is a tag pattern, or none where nothing literal ends its value."""
    pattern = response_template._tag_pattern(s.form, s.arguments.string_wrapper)
    if pattern is None:
        return False
    # Not compiled: a form that writes its key twice (MiniMax-M3's <KEY>value</KEY>) names the group
    # twice, which Python's re refuses; what transformers reads is test_response_template's to check.
    assert "(?P<key>" in pattern and "(?P<value>" in pattern
    return True


ARGUMENT_DISPATCHES: dict[str, Callable[[FormSample], bool]] = {
    "grammar argument": grammar_argument,
    "response_template tag pattern": response_template_tag,
}


@pytest.mark.parametrize(
    ("dispatch", "kind"),
    [(name, kind) for name in ARGUMENT_DISPATCHES for kind in ARG_PART_KINDS],
    ids=lambda value: getattr(value, "kind", value),
)
def test_every_backend_handles_every_argument_part(dispatch: str, kind: type) -> None:
    """Every corpus argument form holding a part of the kind goes through the dispatch, which writes
    some of them."""
    written = [s.where for s in samples_of(kind, form_samples()) if ARGUMENT_DISPATCHES[dispatch](s)]
    assert written, f"{dispatch} wrote no form holding a {kind.kind} part"


def test_the_part_kinds() -> None:
    """The union lists each part class once, each with its own kind name (at least the seven there are
    now: ``get_args`` of something that is no union would leave nothing to test), and the arguments parts
    are some of them (the rest are what a region's opener and closer read)."""
    kinds = [cls.kind for cls in PART_KINDS]
    assert len(PART_KINDS) >= 7 and len(set(kinds)) == len(kinds)
    assert set(ARGUMENT_KINDS) < set(PART_KINDS)
    assert len({cls.kind for cls in ARG_PART_KINDS}) == len(ARG_PART_KINDS) >= 3
