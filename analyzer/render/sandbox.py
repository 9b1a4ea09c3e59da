"""What a sandboxed render needs, whichever engine runs it: its limits, the context it is given, and the
callbacks a template may call.

Templates are untrusted code. Both engines run sandboxed (jinja2's immutable sandbox; minijinja has
no access to Python beyond the plain values and the few callbacks we hand it), under a time budget
(minijinja's fuel, jinja2's deadline checks plus a timer signal on the main thread) and an output-size
limit. Values a jinja2 template builds with ``*``, ``+`` and ``%`` are sized before they are made
(minijinja's fuel already grows with the size of what it builds); anything else that grows past the
process's memory limit (``analyzer.limits``) is a MemoryError, reported as such. An analysis gives
all its renders one time budget together (``RenderLimits.started``), so a template whose every render
is slow stops with one error instead of running each render to its own limit. Every context is
deep-copied before a render so that a template cannot mutate the caller's messages through the
minijinja binding, which exposes public methods of Python objects.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import marshal
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from analyzer.errors import AnalysisLimitError, SourceError
from analyzer.limits import MAX_TEMPLATE_CHARS, memory_limit_text
from analyzer.template import Template

# Processor time of this process: what a runaway template spends, whatever else the machine is doing.
cpu_seconds = time.process_time

# A fixed clock: templates that print today's date must render the same on every run.
FIXED_NOW = _dt.datetime(2025, 1, 15, 9, 30, 0)
DEFAULT_BOS = "<s>"
DEFAULT_EOS = "</s>"


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Budget for one render. ``fuel`` is minijinja's instruction budget; ``max_chars`` bounds the
    output and every string or list a jinja2 template builds with an operator.

    ``budget_seconds`` is for all the renders of one piece of work together (an analysis); it runs
    from ``started()``, which sets ``deadline`` (a ``cpu_seconds()`` value). Limits that were never
    started bound each render alone, which is what a long-lived renderer (a server) needs.

    Every limit counts the processor time this process spends, not the time on the wall: a hostile
    template burns processor time, and a busy machine must not make a sound one run out of time.
    """

    seconds: float = 2.0
    max_chars: int = 2_000_000
    fuel: int = 5_000_000
    budget_seconds: float = 6.0
    max_source_chars: int = MAX_TEMPLATE_CHARS
    deadline: float | None = None

    def started(self) -> RenderLimits:
        """These limits with the budget running from now (unchanged if it already runs)."""
        return self if self.deadline is not None else replace(self, deadline=cpu_seconds() + self.budget_seconds)

    def out_of_budget(self, name: str) -> AnalysisLimitError:
        return AnalysisLimitError(f"{name}: the analysis ran past its {self.budget_seconds:g} s time budget")

    def check_budget(self, name: str) -> None:
        if self.deadline is not None and cpu_seconds() > self.deadline:
            raise self.out_of_budget(name)


def out_of_memory(name: str) -> AnalysisLimitError:
    return AnalysisLimitError(f"{name}: the template needed more memory than allowed{memory_limit_text()}")


def check_source(template: Template, limits: RenderLimits) -> None:
    if len(template.source) > limits.max_source_chars:
        raise SourceError(
            f"{template.origin}: the template is {len(template.source)} characters long; "
            f"the limit is {limits.max_source_chars}"
        )


class TemplateRaised(Exception):
    """Raised by the template's own ``raise_exception(...)``: the template refuses this input."""


class CompiledTemplate(Protocol):
    engine: str

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> str: ...


class Engine(Protocol):
    name: str

    def compile(self, template: Template, limits: RenderLimits | None = None) -> CompiledTemplate: ...


def tojson(
    value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    # transformers' own tojson: no HTML escaping, unicode kept, json.dumps keyword arguments passed on.
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        default=_json_default,
    )


class IndentedJsonMemo:
    """``tojson`` for one compiled template, remembering the indented JSON it writes. Analysis renders
    the same tools in dozens of conversations, and Python's json writes indented text in Python (only
    compact text is written in C): compact text, written in C, names what the indented text will be
    (the same value, key order and escaping), so each distinct value is indented once. Bounded, so
    that a template cannot grow it without limit."""

    KEPT, LONGEST = 64, 16_384  # entries, and the longest compact text remembered

    def __init__(self) -> None:
        self._written: dict[tuple[Any, ...], str] = {}

    def __call__(
        self,
        value: Any,
        ensure_ascii: bool = False,
        indent: Any = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        if indent is None:
            return tojson(value, ensure_ascii, indent, separators, sort_keys)
        compact = json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys, default=_json_default)
        try:
            key = (compact, ensure_ascii, indent, tuple(separators) if separators is not None else None)
            hash(key)
        except TypeError:
            return tojson(value, ensure_ascii, indent, separators, sort_keys)  # arguments json will refuse
        written = self._written.get(key)
        if written is None:
            written = tojson(value, ensure_ascii, indent, separators, sort_keys)
            if len(compact) <= self.LONGEST and len(self._written) < self.KEPT:
                self._written[key] = written
        return written


def _json_default(value: Any) -> Any:
    # jinja2 hands lazy generators (map(), select()) to tojson; transformers fails on them too, so we
    # fail the same way, but with a message that says what happened.
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def raise_exception(message: Any = "") -> None:
    raise TemplateRaised(str(message))


def strftime_now(fmt: str) -> str:
    return FIXED_NOW.strftime(fmt)


def base_context(
    template: Template,
    messages: list[dict[str, Any]],
    tools: Any,
    add_generation_prompt: bool,
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    context: dict[str, Any] = {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "bos_token": template.bos_token if template.bos_token is not None else DEFAULT_BOS,
        "eos_token": template.eos_token if template.eos_token is not None else DEFAULT_EOS,
    }
    if extra:
        context.update(extra)
    # A fresh copy per render: the template may mutate what it is given. A marshal round trip is the
    # fastest exact deep copy of plain data (keys keep their types); anything else is copied in Python.
    copied: dict[str, Any]
    try:
        copied = marshal.loads(marshal.dumps(context))
    except ValueError:
        copied = _copy_plain(context)
    return copied


def _copy_plain(value: Any) -> Any:
    """Deep copy of JSON-like data, several times faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: _copy_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return copy.deepcopy(value)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
