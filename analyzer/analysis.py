"""The differential analysis: one template in, one format description out; and beside it, the evidence
a deployment should know about.

``analyze`` runs its stages in a fixed order, each reading renders through one ``Session`` and handing
typed findings on: input forms first (they decide how every later conversation is spelled), then the
turn, reasoning, calls (with their arguments), results, and the capabilities that collect what each
stage saw. ``inspect`` then renders the template as analysed (``Renderer``) for what the description
does not hold: tool definitions, context use, engine agreement, history, a sample conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analyzer.choices import DEFAULT_ENGINE
from analyzer.description import (
    SCHEMA_VERSION,
    STANDARD_SWITCH,
    CallIds,
    Calls,
    Capabilities,
    Capability,
    Field,
    FormatDescription,
    FormatName,
    JsonArguments,
    KeyValueArguments,
    Reasoning,
    TemplateRef,
    Text,
    ThinkingSwitch,
    Unknown,
)
from analyzer.detect.calls import detect_calls
from analyzer.detect.forms import content_parts, probe
from analyzer.detect.reasoning import detect_reasoning
from analyzer.detect.results import detect_results
from analyzer.detect.thinking import UNRENDERABLE, thinking_switch
from analyzer.detect.turn import detect_turn, ends_before_the_next_turn, stops_the_model_writes
from analyzer.detect.variables import own_variables
from analyzer.errors import RenderError
from analyzer.render import variants as v
from analyzer.render.conversation import Renderer
from analyzer.render.engines import compile_mutable, compile_template
from analyzer.render.sandbox import RenderLimits
from analyzer.render.session import Failed, Session
from analyzer.template import Template

if TYPE_CHECKING:
    from analyzer.evidence import Evidence


def analyze(
    template: Template, *, engine: str = DEFAULT_ENGINE, limits: RenderLimits | None = None
) -> FormatDescription:
    # One time budget for every render of the analysis: a template whose renders are each slow
    # stops with one error instead of running each to its own limit.
    limits = (limits or RenderLimits()).started()
    compiled = compile_template(template, engine, limits)
    session = Session(compiled, v.Spelling())
    warnings: list[str] = []

    session = _bind_missing_variables(template, session, warnings)
    found = probe(session)
    if isinstance(found.call_output, Failed) and not found.call_output.refused:
        # The engine, not the template's own checks, failed: try a sandbox that allows list mutation.
        fallback = Session(compile_mutable(template, limits), v.Spelling(), extra=session.extra)
        fallback_found = probe(fallback)
        if fallback_found.renders_call:
            compiled, session, found = fallback.compiled, fallback, fallback_found
            warnings.append(
                f"renders tool calls only when the template may modify lists it builds "
                f"(fails in {engine} and in transformers' sandbox)"
            )
    session = session.with_form(found.form)
    failure = _renders_nothing(session, found.call_output)
    if failure is not None and compiled.engine == "minijinja":
        # minijinja lacks a few Python string methods and filters jinja2 has (``removeprefix``): a
        # template that renders nothing there may render under jinja2 as transformers runs it.
        other = _bind_missing_variables(
            template, Session(compile_template(template, "jinja2", limits), v.Spelling()), warnings
        )
        other_found = probe(other)
        other = other.with_form(other_found.form)
        if _renders_nothing(other, other_found.call_output) is None:
            compiled, session, found = other.compiled, other, other_found
            warnings.append(f"renders only under jinja2 ({engine}: {_reason(template, failure)})")
            failure = None
    if failure is not None:
        verb = "refuses every conversation" if failure.refused else "renders no conversation"
        raise RenderError(f"{template.name}: the template {verb}: {_reason(template, failure)}")
    warnings += found.warnings

    turn = detect_turn(session, found.call_output)
    reasoning = detect_reasoning(session, turn)
    if isinstance(reasoning, Reasoning):
        turn = stops_the_model_writes(turn, (reasoning.close,))
    ids = (
        CallIds("not written", found.id_forms_accepted, found.id_forms_refused)
        if found.id_forms_accepted
        else Unknown("no id form renders a call")
    )
    finding = detect_calls(session, turn, found.call_output, ids)
    warnings += finding.warnings
    calls = finding.calls
    results = (
        detect_results(session, ends_before_the_next_turn(turn))
        if isinstance(calls, Calls)
        else Unknown("the template writes no tool calls")
    )

    capabilities = Capabilities(
        tools=_tools_capability(session),
        tool_calls=Capability("yes") if isinstance(calls, Calls) else Capability("no", calls.reason),
        parallel_calls=finding.parallel,
        system_role=found.system_role,
        object_arguments=found.object_arguments,
        string_arguments=found.string_arguments,
        content_none=found.content_none,
        thinking_toggle=_thinking_capability(session, reasoning),
        content_parts=content_parts(session),
    )
    return FormatDescription(
        schema_version=SCHEMA_VERSION,
        template=TemplateRef(template.name, template.sha256, compiled.engine),
        format=classify(calls),
        turn=turn,
        reasoning=reasoning,
        calls=calls,
        results=results,
        capabilities=capabilities,
        input_form=found.form.input_form(),
        warnings=tuple(warnings),
        bound_variables=tuple(sorted(session.extra)),
    )


def _renders_nothing(session: Session, call_output: str | Failed) -> Failed | None:
    """How the template fails when it renders no conversation at all (with or without a system
    message, tools or the generation prompt); ``None`` when something renders. Such a template has no
    format to describe, and saying ``none`` would read as "writes no calls". ``refused`` when the
    template's own checks refused every conversation."""
    if not isinstance(call_output, Failed):
        return None
    failures = []
    for system in (False, True):
        form_session = session.with_form(session.form.with_(system_role=system))
        for tools in (True, False):
            for attempt in (form_session.prompt(tools=tools), form_session.history(tools=tools)):
                if not isinstance(attempt, Failed):
                    return None
                failures.append(attempt)
    return Failed(failures[0].message, all(f.refused for f in failures))


def _reason(template: Template, failure: Failed) -> str:
    return failure.message.removeprefix(f"{template.name}: ")


def classify(calls: Calls | Unknown) -> FormatName:
    """A short class name: how the name and the arguments are written."""
    if isinstance(calls, Unknown):
        return "none"
    if calls.json_call is not None:
        return "json"
    arguments = calls.arguments
    if isinstance(arguments, JsonArguments):
        return "tag-json"
    if isinstance(arguments, KeyValueArguments):
        # Python call syntax: the name, then the arguments in parentheses: f(a='x').
        parts = calls.call
        for k, part in enumerate(parts[:-1]):
            following = parts[k + 1]
            if (
                isinstance(part, Field)
                and part.name == "name"
                and isinstance(following, Text)
                and following.text.startswith("(")
            ):
                return "python"
        return "tag-kv"
    return "unknown"


def _tools_capability(session: Session) -> Capability:
    with_tools = session.prompt(tools=True)
    without = session.prompt(tools=False)
    if isinstance(with_tools, Failed):
        return Capability("refused" if with_tools.refused else "error", with_tools.message)
    if v.FN1 in with_tools or v.DESCRIPTION1 in with_tools:
        return Capability("yes")
    if isinstance(without, str) and without == with_tools:
        return Capability("no", "tools do not change the prompt")
    return Capability("dropped", "tool definitions are not written")


def _thinking_capability(session: Session, reasoning: Reasoning | Unknown) -> Capability:
    """Whether a request can switch thinking: the switch the reasoning detection found, else a probe
    of the prompt (a template may switch a block that history never writes)."""
    switch = reasoning.toggle if isinstance(reasoning, Reasoning) else thinking_switch(session)
    if isinstance(switch, ThinkingSwitch):
        return Capability("yes", "" if switch == STANDARD_SWITCH else f"switched by {switch.variable}")
    return Capability("unknown" if switch.reason == UNRENDERABLE else "no", switch.reason)


def _bind_missing_variables(template: Template, session: Session, warnings: list[str]) -> Session:
    """Templates that read variables of their own (``functions``, ``datetime``) get empty strings for them,
    so that the rest of the template can be analysed; the warning says which."""
    prompt = session.prompt()
    if not isinstance(prompt, Failed) or "undefined" not in prompt.message:
        return session
    missing = own_variables(template)
    if not missing:
        return session
    bound = Session(session.compiled, session.form, extra={**session.extra, **{n: "" for n in missing}})
    if isinstance(bound.prompt(), Failed):
        return session
    warnings.append(f"the template reads variables of its own, bound to empty strings: {', '.join(missing)}")
    return bound


def inspect(
    template: Template,
    description: FormatDescription,
    *,
    tools: list[dict[str, Any]] | None = None,
    engine: str | None = None,
    limits: RenderLimits | None = None,
) -> Evidence:
    """What a deployment of ``template`` should know beyond ``description`` (its analysis), each fact
    with the render excerpt it rests on. ``tools`` are the caller's, measured instead of the analysis's
    sentinel tools and offered in the sample conversation instead of its weather tool; ``engine``
    defaults to the one the analysis used."""
    # Imported here: analyze() needs none of them, and the evidence's classes take a while to build.
    from analyzer.detect.context import PROBES as CONTEXT_PROBES
    from analyzer.detect.context import detect_context
    from analyzer.detect.engines import detect_engine_agreement
    from analyzer.detect.history import detect_history
    from analyzer.detect.sample import detect_sample
    from analyzer.detect.tools import detect_tool_definitions
    from analyzer.evidence import Evidence, Probe

    limits = (limits or RenderLimits()).started()
    renderer = Renderer.for_template(template, description, engine=engine, limits=limits)
    return Evidence(
        engine=renderer.engine,
        tools=detect_tool_definitions(renderer, template, description, tools),
        context=detect_context(renderer, template),
        engines=detect_engine_agreement(template, description, limits),
        history=detect_history(renderer, description),
        sample=detect_sample(renderer, description, tools),
        probes=tuple(Probe(text, meaning) for text, meaning in (*v.PROBES, *CONTEXT_PROBES)),
    )
