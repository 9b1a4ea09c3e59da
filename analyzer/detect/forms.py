"""Which input forms the template takes: the probing that runs before any diff.

A client may send content ``""`` or ``None`` beside tool calls, arguments as an object or as a JSON
string, ids in OpenAI's style or 9 alphanumerics, a system message or none. We try the forms in the
order clients most often send them and keep the first under which the template writes a call; each
other form is then tried once against it, so the description can say what the template refuses and
in its own words.

Content may also come as a list of parts (``[{"type": "text", "text": ...}]``, what the openai
library and chat front ends send): ``content_parts`` renders a conversation so given beside the same
one as strings, which says whether the template reads parts or must be given their text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from analyzer.description import Capability
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session


@dataclass(frozen=True, slots=True)
class Probe:
    form: v.Spelling
    call_output: str | Failed  # the model output for one call under ``form``
    object_arguments: Capability
    string_arguments: Capability
    content_none: Capability
    system_role: Capability
    id_forms_accepted: tuple[str, ...]
    id_forms_refused: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]

    @property
    def renders_call(self) -> bool:
        return _renders_call(self.call_output)


def _renders_call(output: str | Failed) -> bool:
    return isinstance(output, str) and v.FN1 in output


def _call_output(session: Session, form: v.Spelling) -> str | Failed:
    return session.with_form(form).output(v.assistant(form, calls=(v.CALL1,)))


def _status(output: str | Failed) -> Capability:
    if isinstance(output, Failed):
        return Capability("refused" if output.refused else "error", output.message)
    if not _renders_call(output):
        return Capability("dropped", "the call is not written")
    return Capability("yes")


def as_text_parts(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its text content given as one text part, as OpenAI clients send it."""
    content = message.get("content")
    return {**message, "content": [{"type": "text", "text": content}]} if isinstance(content, str) else message


def content_parts(session: Session) -> Capability:
    """Whether the template reads content given as a list of text parts as it reads the same text given
    as a string: "yes" when a conversation (user, assistant, user) renders the same both ways; else
    what it does with the list (fails, drops the text, or writes something else, such as the list's
    Python text)."""
    tail = (v.assistant(session.form, content=v.CONTENT_TEXT), v.user(v.USER_TEXT2))
    as_strings = session.history(*tail, tools=False)
    messages = [as_text_parts(m) for m in (*v.opening(session.form), *tail)]
    as_parts = session.render(messages, tools=False)
    if isinstance(as_parts, Failed):
        return Capability("refused" if as_parts.refused else "error", as_parts.message)
    if isinstance(as_strings, Failed):
        return Capability("unknown", "the conversation does not render with text content either")
    if as_parts == as_strings:
        return Capability("yes")
    if any(text not in as_parts for text in (v.USER_TEXT, v.CONTENT_TEXT, v.USER_TEXT2)):
        return Capability("dropped", "text given as content parts is not written")
    if "'text'" in as_parts or '"text"' in as_parts:
        return Capability("differs", "content parts are written as the list itself (its Python text), not their text")
    return Capability("differs", "text given as content parts is written differently from the same text as a string")


def probe(session: Session) -> Probe:
    warnings: list[str] = []
    base = session.form
    system_form = base.with_(system_role=True)
    system_prompt = session.with_form(system_form).prompt()
    if isinstance(system_prompt, Failed):
        system_role = Capability("refused" if system_prompt.refused else "error", system_prompt.message)
    elif v.SYSTEM_TEXT in system_prompt:
        system_role = Capability("yes")
    else:
        system_role = Capability("dropped", "the system message is not written")

    chosen: v.Spelling | None = None
    chosen_output: str | Failed = Failed("no form tried", False)
    first_failure: Failed | None = None
    rendered_without_call = False
    for as_string, content, id_form, descriptions in product((False, True), ("", None), v.ID_FORMS, (True, False)):
        if (id_form, descriptions) != (base.id_form, base.tool_descriptions) and first_failure is None:
            # Ids and descriptions only matter to templates that raise; one that renders without
            # writing the call ignores them.
            continue
        form = base.with_(
            arguments_as_string=as_string, content_with_calls=content, id_form=id_form, tool_descriptions=descriptions
        )
        output = _call_output(session, form)
        if _renders_call(output):
            chosen, chosen_output = form, output
            break
        if isinstance(output, Failed) and first_failure is None:
            first_failure = output
        if isinstance(output, str):
            rendered_without_call = True
    if chosen is None and not session.follow_up and rendered_without_call:
        # Every form renders, none writes the call: the template may drop a final assistant message's
        # calls (a prefill) and write them once another message follows.
        session.follow_up = True
        followed = _call_output(session, base)
        if _renders_call(followed):
            found = probe(session)
            return replace(
                found,
                warnings=found.warnings
                + (
                    "calls are written only when another message follows them (a final assistant message is "
                    "treated as a prefill); analysed with a user message after the calls",
                ),
            )
        session.follow_up = False
    if chosen is None:
        # No form writes a call: keep the plainest form for the rest of the analysis.
        chosen = base
        chosen_output = first_failure or _call_output(session, base)
        return Probe(
            chosen,
            chosen_output,
            Capability("unknown"),
            Capability("unknown"),
            Capability("unknown"),
            system_role,
            (),
            (),
            tuple(warnings),
        )

    if not chosen.tool_descriptions:
        warnings.append("the template fails on tools without descriptions; analysed without them")

    object_output = _call_output(session, chosen.with_(arguments_as_string=False))
    string_output = _call_output(session, chosen.with_(arguments_as_string=True))
    object_arguments = _status(object_output)
    string_arguments = _status(string_output)
    if object_arguments.status == "yes" and string_arguments.status == "yes" and object_output != string_output:
        string_arguments = Capability(
            "differs",
            "arguments given as a JSON string are written differently from an object (for example quoted twice)",
        )
    none_output = _call_output(session, chosen.with_(content_with_calls=None))
    empty_output = _call_output(session, chosen.with_(content_with_calls=""))
    content_none = _status(none_output)
    if content_none.status == "yes" and isinstance(empty_output, str) and none_output != empty_output:
        written = "None" in str(none_output) and "None" not in empty_output
        content_none = Capability(
            "differs",
            "content None is written as the text 'None'" if written else 'content None is written differently from ""',
        )

    accepted, refused = [], []
    for id_form in v.ID_FORMS:
        output = _call_output(session, chosen.with_(id_form=id_form))
        if _renders_call(output):
            accepted.append(id_form)
        elif isinstance(output, Failed):
            refused.append((id_form, output.message))
    return Probe(
        chosen,
        chosen_output,
        object_arguments,
        string_arguments,
        content_none,
        system_role,
        tuple(accepted),
        tuple(refused),
        tuple(warnings),
    )
