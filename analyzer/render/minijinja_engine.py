"""The minijinja engine, configured to render as transformers' jinja2 does (``analyzer.render.engines``
says why it is the default), under the limits of ``analyzer.render.sandbox``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import minijinja

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
        env.add_filter("tojson", IndentedJsonMemo())
        env.add_filter("indent", _indent)
        env.add_test("iterable", _is_iterable)
        env.add_function("raise_exception", raise_exception)  # type: ignore[attr-defined]  # in minijinja, not its stubs
        env.add_function("strftime_now", strftime_now)  # type: ignore[attr-defined]  # in minijinja, not its stubs
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
        context = base_context(self.template, messages, tools, add_generation_prompt, extra)
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
            raise RenderError(f"{self.template.name}: {first_line(exc)}") from None
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
