"""The jinja2 engine, set up the way Hugging Face transformers renders chat templates, in a sandbox
that checks a time budget and sizes what a template builds (see ``analyzer.render.sandbox``).

A module of its own so that jinja2 is imported only when a template is rendered with it: the default
engine is minijinja, and importing jinja2 takes longer than analysing a template with minijinja.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

from analyzer.errors import RenderError, RenderLimitError, TemplateSyntaxError
from analyzer.render.sandbox import (
    IndentedJsonMemo,
    RenderLimits,
    TemplateRaised,
    base_context,
    check_source,
    cpu_seconds,
    first_line,
    out_of_memory,
    raise_exception,
    strftime_now,
)
from analyzer.template import Template


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` marks assistant text for training masks; it renders its body."""

    tags = {"generation"}  # noqa: RUF012 - jinja2.ext.Extension declares tags a plain set[str], not a ClassVar

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


class _Deadline:
    """Raises once the render has run past its time budget; checked from sandbox hooks."""

    __slots__ = ("until",)

    def __init__(self) -> None:
        self.until = float("inf")

    def check(self) -> None:
        if cpu_seconds() > self.until:
            raise _OutOfTime()


class _OutOfTime(Exception):
    pass


class _TooBig(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


_SIZED = (str, list, tuple)
# A width or precision in a %-format: "%900000000s" builds a string that large.
_PERCENT_WIDTH = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d*)(?:\.(\d+))?")


def _result_size(operator: str, left: Any, right: Any) -> int:
    """How large the value ``left <operator> right`` would be, without making it (0: not a sequence)."""
    if operator == "*":
        if isinstance(left, _SIZED) and isinstance(right, int):
            return len(left) * max(right, 0)
        if isinstance(right, _SIZED) and isinstance(left, int):
            return len(right) * max(left, 0)
    elif operator == "+":
        if isinstance(left, _SIZED) and isinstance(right, _SIZED):
            return len(left) + len(right)
    elif operator == "%" and isinstance(left, str):
        widths = [int(w or 0) + int(p or 0) for w, p in _PERCENT_WIDTH.findall(left)]
        return len(left) + max(widths, default=0)
    elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        return left.bit_length() * right // 8  # the digits of a huge power
    return 0


class _DeadlineChecks(jinja2.sandbox.SandboxedEnvironment):
    """Checks the deadline on every call, attribute and item access and every operator that can
    build a large value, and sizes those values before they are built."""

    deadline: _Deadline
    max_chars: int
    intercepted_binops = frozenset({"*", "+", "%", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "+":  # by far the most common, in every template: the short way
            if isinstance(left, _SIZED) and isinstance(right, _SIZED) and len(left) + len(right) > self.max_chars:
                raise _TooBig(len(left) + len(right))
            return left + right
        size = _result_size(operator, left, right)
        if size > self.max_chars:
            raise _TooBig(size)
        return super().call_binop(context, operator, left, right)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        self.deadline.check()
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.deadline.check()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.deadline.check()
        return super().getitem(obj, argument)


class _BudgetedSandbox(_DeadlineChecks, jinja2.sandbox.ImmutableSandboxedEnvironment):
    """transformers' sandbox: templates cannot modify any list or dict, even their own."""


class _BudgetedMutableSandbox(_DeadlineChecks, jinja2.sandbox.SandboxedEnvironment):
    """A sandbox that lets a template append to lists it built itself (llama.cpp's engine allows it).

    Used only as a fallback for templates that transformers cannot render; the context is a deep
    copy, so the caller's data stays untouched either way.
    """


class Jinja2Template:
    engine = "jinja2"

    def __init__(self, template: Template, limits: RenderLimits, *, mutable: bool = False) -> None:
        check_source(template, limits)
        self.template = template
        self.limits = limits
        self._deadline = _Deadline()
        if mutable:
            self.engine = "jinja2-mutable"
        env = (_BudgetedMutableSandbox if mutable else _BudgetedSandbox)(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[jinja2.ext.loopcontrols, _GenerationTag],
        )
        env.deadline = self._deadline
        env.max_chars = limits.max_chars
        env.filters["tojson"] = IndentedJsonMemo()
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        limits.check_budget(template.name)
        seconds = self._time_left()
        try:
            with _alarm(seconds):
                self._compiled = env.from_string(template.source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateSyntaxError(
                f"{template.origin}: Jinja syntax error at line {exc.lineno}: {exc.message}"
            ) from None
        except _OutOfTime:
            if limits.deadline is not None and cpu_seconds() + 0.05 >= limits.deadline:
                raise limits.out_of_budget(template.name) from None
            raise RenderLimitError(f"{template.origin}: compiling ran past the {seconds:g} s time limit") from None
        except RecursionError:
            raise TemplateSyntaxError(f"{template.origin}: the template nests too deeply to compile") from None
        except MemoryError:
            raise out_of_memory(template.name) from None

    def _time_left(self) -> float:
        """Seconds this render may take: its own limit, or less when the budget ends sooner."""
        seconds = self.limits.seconds
        if self.limits.deadline is not None:
            seconds = min(seconds, self.limits.deadline - cpu_seconds())
        return max(seconds, 0.001)

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        self.limits.check_budget(self.template.name)
        context = base_context(self.template, messages, tools, add_generation_prompt, extra)
        seconds = self._time_left()
        self._deadline.until = cpu_seconds() + seconds
        try:
            # The timer is the backstop for loops that neither call nor print; the deadline checks
            # usually stop a render first.
            with _alarm(seconds * 2):
                return _collect(self._compiled.generate(context), self.limits, self._deadline, self.template)
        except TemplateRaised as exc:
            raise RenderError(f"{self.template.name}: template raised: {exc}", raised_by_template=True) from None
        except _OutOfTime:
            if self.limits.deadline is not None and cpu_seconds() + 0.05 >= self.limits.deadline:
                raise self.limits.out_of_budget(self.template.name) from None
            raise RenderLimitError(
                f"{self.template.name}: render ran past the {self.limits.seconds:g} s time limit"
            ) from None
        except _TooBig as exc:
            raise RenderLimitError(
                f"{self.template.name}: the template builds a value of {exc.size} characters or items, "
                f"past the {self.limits.max_chars} limit"
            ) from None
        except RenderError:
            raise
        except RecursionError:
            raise RenderLimitError(f"{self.template.name}: render recursed too deeply") from None
        except MemoryError:
            raise out_of_memory(self.template.name) from None
        except Exception as exc:
            raise RenderError(f"{self.template.name}: {type(exc).__name__}: {first_line(exc)}") from None
        finally:
            self._deadline.until = float("inf")


def _collect(chunks: Iterable[str], limits: RenderLimits, deadline: _Deadline, template: Template) -> str:
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limits.max_chars:
            raise RenderLimitError(f"{template.name}: render output passed the {limits.max_chars} character limit")
        deadline.check()
        parts.append(chunk)
    return "".join(parts)


class _alarm:
    """Backstop for loops that neither call nor print: a timer signal, only usable on the main thread."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")

    def __enter__(self) -> None:
        if self.active:
            self.previous = signal.signal(signal.SIGPROF, self._fire)
            signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self.previous)

    @staticmethod
    def _fire(signum: int, frame: object) -> None:
        raise _OutOfTime()
