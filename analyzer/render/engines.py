"""Two sandboxed Jinja engines behind one interface.

``jinja2`` is set up the way Hugging Face transformers renders chat templates (and so vLLM and
SGLang); ``minijinja`` is configured to match it as closely as its Python binding allows (the
settings come from measuring both on the 70 corpus templates, see docs in the README). minijinja is
the default: it agrees with jinja2 on every case of 65 of the 70 corpus templates, compiles about
150x faster and renders about 3.5x faster, which is what makes analysing a folder of models quick.

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
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import minijinja

from analyzer.choices import DEFAULT_ENGINE
from analyzer.errors import AnalysisLimitError, RenderError, RenderLimitError, SourceError, TemplateSyntaxError
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


def _tojson(
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


def _json_default(value: Any) -> Any:
    # jinja2 hands lazy generators (map(), select()) to tojson; transformers fails on them too, so we
    # fail the same way, but with a message that says what happened.
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _raise_exception(message: Any = "") -> None:
    raise TemplateRaised(str(message))


def _strftime_now(fmt: str) -> str:
    return FIXED_NOW.strftime(fmt)


def _base_context(
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


# --------------------------------------------------------------------------- jinja2


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


def _indent(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> str:
    """jinja2's ``indent`` filter, for minijinja, whose built-in drops a trailing newline."""
    text = str(s)
    pad = " " * width if isinstance(width, int) else str(width)
    newline = "\n"
    text += newline  # keep a trailing newline the way jinja2 does
    if blank:
        rv = (newline + pad).join(text.splitlines())
    else:
        lines = text.splitlines()
        rv = lines.pop(0) if lines else ""
        if lines:
            rv += newline + newline.join(pad + line if line else line for line in lines)
    if first:
        rv = pad + rv
    return rv


def _is_iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


_GENERATION_OPEN = re.compile(r"\{%(-?)\s*generation\s*(-?)%\}")
_GENERATION_CLOSE = re.compile(r"\{%(-?)\s*endgeneration\s*(-?)%\}")


def rewrite_generation_tags(source: str) -> str:
    """minijinja has no ``generation`` tag; an always-true ``if`` renders the body the same way."""
    source = _GENERATION_OPEN.sub(r"{%\1 if true \2%}", source)
    return _GENERATION_CLOSE.sub(r"{%\1 endif \2%}", source)


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
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
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
        context = _base_context(self.template, messages, tools, add_generation_prompt, extra)
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
            raise RenderError(f"{self.template.name}: {type(exc).__name__}: {_first_line(exc)}") from None
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


# --------------------------------------------------------------------------- minijinja


class MiniJinjaTemplate:
    engine = "minijinja"

    def __init__(self, template: Template, limits: RenderLimits) -> None:
        check_source(template, limits)
        limits.check_budget(template.name)
        self.template = template
        self.limits = limits
        env = minijinja.Environment(
            trim_blocks=True,
            lstrip_blocks=True,
            undefined_behavior="lenient",
            pycompat=True,
            auto_escape_callback=lambda name: False,
            fuel=limits.fuel,
        )
        env.add_filter("tojson", _tojson)
        env.add_filter("indent", _indent)
        env.add_test("iterable", _is_iterable)
        env.add_function("raise_exception", _raise_exception)  # type: ignore[attr-defined]  # in minijinja, not its stubs
        env.add_function("strftime_now", _strftime_now)  # type: ignore[attr-defined]  # in minijinja, not its stubs
        try:
            env.add_template("chat", rewrite_generation_tags(template.source))
        except minijinja.TemplateError as exc:
            line = getattr(exc, "line", None)
            where = f" at line {line}" if line else ""
            detail = getattr(exc, "detail", None) or str(exc).splitlines()[0]
            raise TemplateSyntaxError(f"{template.origin}: Jinja syntax error{where}: {detail}") from None
        self._env = env

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        self.limits.check_budget(self.template.name)
        context = _base_context(self.template, messages, tools, add_generation_prompt, extra)
        started = cpu_seconds()
        try:
            output = self._env.render_template("chat", **context)
        except MemoryError:
            raise out_of_memory(self.template.name) from None
        except TemplateRaised as exc:
            raise RenderError(f"{self.template.name}: template raised: {exc}", raised_by_template=True) from None
        except minijinja.TemplateError as exc:
            if "recursion limit" in str(exc):
                raise RenderLimitError(f"{self.template.name}: render recursed too deeply") from None
            if "out of fuel" in str(exc):
                raise RenderLimitError(
                    f"{self.template.name}: render ran past its instruction budget ({self.limits.fuel} fuel)"
                ) from None
            raise RenderError(f"{self.template.name}: {_first_line(exc)}") from None
        except Exception as exc:
            raise RenderError(f"{self.template.name}: {type(exc).__name__}: {exc}") from None
        # fuel bounds one render; the budget can only be checked once it is done.
        self.limits.check_budget(self.template.name)
        if len(output) > self.limits.max_chars:
            raise RenderLimitError(
                f"{self.template.name}: render output passed the {self.limits.max_chars} character limit"
            )
        if cpu_seconds() - started > self.limits.seconds:
            raise RenderLimitError(f"{self.template.name}: render ran past the {self.limits.seconds:g} s time limit")
        return output


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- registry


class _EngineFactory:
    def __init__(self, name: str, make: Callable[[Template, RenderLimits], CompiledTemplate]) -> None:
        self.name = name
        self._make = make

    def compile(self, template: Template, limits: RenderLimits | None = None) -> CompiledTemplate:
        return self._make(template, limits or RenderLimits())


ENGINES: dict[str, Engine] = {
    "minijinja": _EngineFactory("minijinja", MiniJinjaTemplate),
    "jinja2": _EngineFactory("jinja2", Jinja2Template),
}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise RenderError(f"unknown engine {name!r}; choose one of {', '.join(sorted(ENGINES))}") from None


def compile_mutable(template: Template, limits: RenderLimits | None = None) -> CompiledTemplate:
    """jinja2 with list mutation allowed: the fallback for templates that build lists with ``append``."""
    return Jinja2Template(template, limits or RenderLimits(), mutable=True)


def compile_template(
    template: Template, engine: str = DEFAULT_ENGINE, limits: RenderLimits | None = None
) -> CompiledTemplate:
    return get_engine(engine).compile(template, limits)
