"""Whether jinja2 (as transformers sets it up) and minijinja render the template alike, on the
conversations the analysis reads: the prompt with tools, a call and its result, two parallel calls."""

from __future__ import annotations

from typing import Any

from analyzer.description import FormatDescription
from analyzer.diff import common_prefix_len
from analyzer.errors import AnalysisLimitError, AnalyzerError
from analyzer.evidence import EngineAgreement, EngineCase, excerpt
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer, Spelling
from analyzer.render.engines import compile_template
from analyzer.render.sandbox import RenderLimits
from analyzer.template import Template

ENGINE_CONTEXT = 40  # characters of each engine's render around their first difference


def _conversations(form: Spelling) -> list[tuple[str, list[dict[str, Any]], bool, bool]]:
    """(label, messages, with tools, generation prompt)."""
    opening = v.opening(form)
    one = v.assistant(form, calls=(v.CALL1,))
    return [
        ("prompt with tools", opening, True, True),
        ("one call and its result", [*opening, one, v.tool_result(v.CALL1, v.RESULT_TEXT, form)], True, True),
        ("two parallel calls", [*opening, v.assistant(form, calls=(v.CALL1, v.CALL2))], True, False),
    ]


def detect_engine_agreement(
    template: Template, description: FormatDescription, limits: RenderLimits | None = None
) -> EngineAgreement:
    renderers: dict[str, Renderer | Failed] = {}
    for name in ("jinja2", "minijinja"):
        try:
            renderers[name] = Renderer(compile_template(template, name, limits), description)
        except AnalysisLimitError:
            raise
        except AnalyzerError as exc:  # a syntax error in one engine is the finding
            renderers[name] = Failed(exc.message, False)
    form = Spelling.from_description(description)
    tools = v.tools(form)
    cases = []
    for label, messages, with_tools, prompt in _conversations(form):
        out = {
            name: r
            if isinstance(r, Failed)
            else r.attempt(messages, tools=tools if with_tools else None, generation_prompt=prompt)
            for name, r in renderers.items()
        }
        j, m = out["jinja2"], out["minijinja"]
        if isinstance(j, str) and isinstance(m, str):
            if j == m:
                cases.append(EngineCase(label, "agree", None, "", ""))
                continue
            at = common_prefix_len(j, m)
            cases.append(
                EngineCase(
                    label,
                    "differ",
                    at,
                    excerpt(j, at, width=ENGINE_CONTEXT, whole=v.PROBE_TEXTS),
                    excerpt(m, at, width=ENGINE_CONTEXT, whole=v.PROBE_TEXTS),
                )
            )
        elif isinstance(j, Failed) and isinstance(m, Failed):
            cases.append(
                EngineCase(label, "agree" if j.message == m.message else "both raise", None, j.message, m.message)
            )
        else:
            cases.append(
                EngineCase(
                    label,
                    "only jinja2 raises" if isinstance(j, Failed) else "only minijinja raises",
                    None,
                    j.message if isinstance(j, Failed) else "",
                    m.message if isinstance(m, Failed) else "",
                )
            )
    return EngineAgreement(tuple(cases))
