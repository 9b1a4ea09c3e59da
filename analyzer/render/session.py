"""Renders of one template under one spelling, cached, with the model's part cut out.

The model's output for an assistant message is what the template writes for it in history, past the
point where the generation prompt ends. ``Session.output`` renders the history and cuts it against
the prompt, backing the cut off to the start of a marker so a shared ``<|`` never splits one.
"""

from __future__ import annotations

from typing import Any

from analyzer.diff import common_prefix_len, common_suffix_len
from analyzer.errors import AnalysisLimitError, RenderError
from analyzer.markers import marker_start
from analyzer.render import variants as v
from analyzer.render.conversation import Failed as Failed  # re-exported for the detectors
from analyzer.render.sandbox import CompiledTemplate


class Session:
    def __init__(self, compiled: CompiledTemplate, form: v.Spelling, *, extra: dict[str, Any] | None = None):
        self.compiled = compiled
        self.form = form
        self.extra = dict(extra or {})
        self._cache: dict[str, str | Failed] = {}
        # Some templates treat a final assistant message as a prefill and leave its calls out; then
        # calls are read from renders where a user message follows them.
        self.follow_up = False

    def with_form(self, form: v.Spelling) -> Session:
        other = Session(self.compiled, form, extra=self.extra)
        other._cache = self._cache  # keys hold everything a form changes in a render
        other.follow_up = self.follow_up
        return other

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: bool = True,
        generation_prompt: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> str | Failed:
        context_extra = {**self.extra, **(extra or {})}
        key = repr((messages, tools and self.form.tool_descriptions, generation_prompt, sorted(context_extra.items())))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            result: str | Failed = self.compiled.render(
                messages,
                tools=v.tools(self.form) if tools else None,
                add_generation_prompt=generation_prompt,
                extra=context_extra,
            )
        except AnalysisLimitError:
            raise  # the analysis as a whole is over
        except RenderError as exc:
            result = Failed(exc.message, exc.raised_by_template)
        self._cache[key] = result
        return result

    def prompt(self, *, tools: bool = True, extra: dict[str, Any] | None = None) -> str | Failed:
        return self.render(v.opening(self.form), tools=tools, generation_prompt=True, extra=extra)

    def history(self, *tail: dict[str, Any], tools: bool = True) -> str | Failed:
        return self.render([*v.opening(self.form), *tail], tools=tools)

    def output(self, message: dict[str, Any], *, tools: bool = True) -> str | Failed:
        """What the model writes for ``message``: its history render past the generation prompt."""
        prompt = self.prompt(tools=tools)
        if isinstance(prompt, Failed):
            return prompt
        if self.follow_up and message.get("tool_calls"):
            return self._output_followed(message, prompt, tools)
        full = self.history(message, tools=tools)
        if isinstance(full, Failed):
            return full
        return full[self.cut(prompt, full) :]

    def _output_followed(self, message: dict[str, Any], prompt: str, tools: bool) -> str | Failed:
        """The message's output read from a render where a user message follows it, up to where that
        user turn's header begins (the header is what the opening render writes before a user message)."""
        full = self.history(message, v.user(v.USER_TEXT2), tools=tools)
        if isinstance(full, Failed):
            return full
        output = full[self.cut(prompt, full) :]
        output = output[: output.rfind(v.USER_TEXT2)]
        opening = self.render(v.opening(self.form), tools=tools)
        if isinstance(opening, str) and v.USER_TEXT in opening:
            before_user = opening[: opening.rfind(v.USER_TEXT)]
            header = common_suffix_len(output, before_user)
            output = output[: marker_start(output, len(output) - header)]
        return output

    @staticmethod
    def cut(prompt: str, full: str) -> int:
        """Where the model's output starts in ``full``.

        Usually the prompt is a prefix of the history. Some templates insert text before the
        assistant header only in the prompt (an instruction turn); then the history goes on with the
        header itself, which the model does not write, so the longest end of the prompt that the
        history continues with is skipped too.
        """
        at = marker_start(full, common_prefix_len(prompt, full))
        extra = prompt[at:]
        for size in range(len(extra), 0, -1):
            if full.startswith(extra[-size:], at):
                return at + size
        return at
