"""Every backend handles every kind of call part, through its one dispatch on the part's kind.

Each backend turns a call part into its output in one place, a ``match`` on the part with an
``assert_never`` default (mypy strict proves the cases exhaustive): the grammar's ``_Builder.part``,
the response_template's ``_Builder.part`` (a part around the arguments, as regex) and
``_Builder.arguments`` (the arguments part, as a content parser), and the trigger ``lower`` derives
from the part a call opens with. Here every kind of ``Part``, as ``typing.get_args`` lists the
union, is sent through each of them, each a real part of a corpus template's lowered golden shape
(or of the prompted format's), in that shape's context. A kind added to the union fails here until
a shape has one and every backend handles it; a case dropped from a backend fails here (its part
reaches ``assert_never``) as it fails mypy.
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

from analyzer.backends import gbnf, response_template
from analyzer.backends.prompted.format import STYLES, prompted_format, prompted_shape
from analyzer.lower import lower, trigger_for
from analyzer.runtime.shape import OutputShape, Part, Trigger
from analyzer.tools import declared_tools

PART_KINDS: tuple[type, ...] = typing.get_args(Part)
ARGUMENT_KINDS: tuple[type, ...] = typing.get_args(response_template.CallArguments)
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


@cache
def samples() -> dict[type, Sample]:
    """The first part of each kind in the golden shapes (by template name), then the prompted format's."""
    shapes = [(d.template.name, lower(d)) for d in golden_descriptions(with_calls=True)]
    shapes += [(f"prompted {style}", prompted_shape(prompted_format(TOOLS, style=style))) for style in STYLES]
    found: dict[type, Sample] = {}
    for where, shape in shapes:
        assert shape.calls is not None
        for k, part in enumerate(shape.calls.call):
            found.setdefault(type(part), Sample(where, shape, k))
    return found


def sample(kind: type) -> Sample:
    found = samples().get(kind)
    assert found is not None, f"no corpus template nor prompted format writes a {kind.__name__} part to test with"
    return found


# --------------------------------------------------------------------------- each backend's dispatch


def grammar_part(s: Sample) -> None:
    calls = s.shape.calls
    assert calls is not None
    for exact in (True, False):
        builder = gbnf._Builder(s.shape, calls, exact=exact)
        piece = builder.part(s.part, WEATHER, builder.facts.call.value_stops(s.position))
        assert isinstance(piece, gbnf._Piece) and piece.expr, f"{s.part.kind} wrote no grammar"


def response_template_part(s: Sample) -> None:
    """Around the arguments, a part is regex; an arguments part there is refused (a content parser reads
    the arguments), with its reason."""
    builder = response_template._Builder(s.shape)
    if isinstance(s.part, response_template.CallArguments):
        with pytest.raises(response_template._Cannot, match="besides the arguments"):
            builder.part(s.part, None, "")
        return
    pattern = builder.part(s.part, None, "")
    assert isinstance(pattern, str)
    re.compile(pattern)


def response_template_arguments(s: Sample) -> None:
    """An arguments part becomes a content parser, or is refused with a reason (a JSON string of the
    arguments, which the json parser decodes to a string only)."""
    assert isinstance(s.part, response_template.CallArguments)
    try:
        content, _, transform = response_template._Builder(s.shape).arguments(s.part, braced=False)
    except response_template._Cannot as refused:
        assert refused.reason
        return
    assert content in ("json", "xml-inline") and "function" in transform


def trigger(s: Sample) -> None:
    assert isinstance(trigger_for((), (s.part,)), Trigger)


DISPATCHES: dict[str, tuple[Callable[[Sample], None], tuple[type, ...]]] = {
    "grammar part": (grammar_part, PART_KINDS),
    "response_template part": (response_template_part, PART_KINDS),
    "response_template arguments": (response_template_arguments, ARGUMENT_KINDS),
    "lower trigger": (trigger, PART_KINDS),
}


@pytest.mark.parametrize(
    ("dispatch", "kind"),
    [(name, kind) for name, (_, kinds) in DISPATCHES.items() for kind in kinds],
    ids=lambda value: getattr(value, "kind", value),
)
def test_every_backend_handles_every_kind(dispatch: str, kind: type) -> None:
    handle, _ = DISPATCHES[dispatch]
    handle(sample(kind))


def test_the_part_kinds() -> None:
    """The union lists each part class once, each with its own kind name, and the arguments parts are
    some of them (the rest are what a region's opener and closer read)."""
    kinds = [cls.kind for cls in PART_KINDS]
    assert len(PART_KINDS) >= 7 and len(set(kinds)) == len(kinds)
    assert set(ARGUMENT_KINDS) < set(PART_KINDS)
