"""Conversation variants with sentinel values, and the input forms a template accepts.

Every name and value planted in a conversation is a sentinel: a string no real template contains,
so that finding it in a render says exactly where the template wrote it. Sentinels of one kind share
no first or last character (``qzxfind`` / ``jwvlist``), so that a common prefix or suffix of two
renders never swallows part of one.

Real templates expect different inputs for the same conversation (content ``""`` or ``None``,
arguments as an object or a JSON string, ids of a given shape). A ``Spelling``
(``analyzer.render.conversation``) names one choice of each; the probing stage tries the spellings a
client would send and keeps the first that renders, and every conversation here is built with one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.description import JsonType
from analyzer.render.conversation import Spelling as Spelling  # re-exported: callers write v.Spelling
from analyzer.render.conversation import put_reasoning
from analyzer.runtime.call_forms import ID_FORMS as RUNTIME_ID_FORMS

# Function names, argument names and values. Two of each kind, sharing no first or last character.
FN1, FN2 = "qzxfind", "jwvlist"
ARG1, ARG2 = "kzqpath", "mwvmode"
STR1, STR2 = "Vqz red", "Wjk blue"
NUM1, NUM2 = 7301, 4402
USER_TEXT = "Uqz user asks"
USER_TEXT2 = "Uwj user again"
SYSTEM_TEXT = "Sqz system says"
CONTENT_TEXT = "Kqz answer"
CONTENT_TEXT2 = "Kwj second answer"
REASONING_TEXT = "Rqz thinking"
RESULT_TEXT = "Tqz result one"
RESULT_TEXT2 = "Twj result two"
RESULT_JSON = {"Jqz": "ok"}
DESCRIPTION1, DESCRIPTION2 = "Dqz finds things", "Dwj lists things"
ARG_DESCRIPTION1, ARG_DESCRIPTION2 = "Pqz where", "Pwj how"
# A string that shows how a template escapes what it writes: quote, backslash, newline, tag characters.
TRICKY_STRING = 'Eqz "q" \\ <x>\nline2'
# Characters that escapings change (XML attributes, HTML, JSON, Python strings), and a function name
# and an argument name holding each between sentinel pieces: how the template writes the name shows,
# character by character, what it writes for each (``"`` as ``&quot;`` or ``\\"``, or as is).
ESCAPED_CHARS = ('"', "&", "<", ">", "'", "\\")
NAME_PIECES = ("Nqz", "Nqb", "Nqc", "Nqd", "Nqe", "Nqf", "Nqg")
KEY_PIECES = ("Mwz", "Mwb", "Mwc", "Mwd", "Mwe", "Mwf", "Mwg")


def spelled_with_escaped_chars(pieces: tuple[str, ...]) -> str:
    """The pieces with one of ``ESCAPED_CHARS`` between each two."""
    return pieces[0] + "".join(ch + piece for ch, piece in zip(ESCAPED_CHARS, pieces[1:], strict=True))


TRICKY_NAME = spelled_with_escaped_chars(NAME_PIECES)
TRICKY_KEY = spelled_with_escaped_chars(KEY_PIECES)
OBJECT_KEY, ARRAY_ITEM = "Oqz", "Aqz"
# Typed values for one argument: how each JSON type is written tells the argument encoding.
TYPED_VALUES: dict[JsonType, Any] = {
    "integer": NUM1,
    "number": 2.5,
    "boolean": True,
    "null": None,
    "object": {OBJECT_KEY: 1},
    "array": [1, ARRAY_ITEM],
}

# Id forms a client's ids may take (the runtime's registry, where each form lists two examples for
# the two parallel calls), tried in order: OpenAI's style first.
ID_FORMS = tuple(RUNTIME_ID_FORMS)


def tool(name: str, description: str, *, with_descriptions: bool = True) -> dict[str, Any]:
    def prop(kind: str, text: str) -> dict[str, Any]:
        return {"type": kind, "description": text} if with_descriptions else {"type": kind}

    function: dict[str, Any] = {
        "name": name,
        "parameters": {
            "type": "object",
            "properties": {ARG1: prop("string", ARG_DESCRIPTION1), ARG2: prop("string", ARG_DESCRIPTION2)},
            "required": [ARG1],
        },
    }
    if with_descriptions:
        function["description"] = description
    return {"type": "function", "function": function}


def tools(form: Spelling) -> list[dict[str, Any]]:
    return [
        tool(FN1, DESCRIPTION1, with_descriptions=form.tool_descriptions),
        tool(FN2, DESCRIPTION2, with_descriptions=form.tool_descriptions),
    ]


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: dict[str, Any]
    index: int = 0  # which of the form's ids to use


def ids(form: Spelling) -> tuple[str, str]:
    """The two sentinel ids of the spelling's id form."""
    return RUNTIME_ID_FORMS[form.id_form].examples


def call_message(call: Call, form: Spelling) -> dict[str, Any]:
    return {
        "id": ids(form)[call.index],
        "type": "function",
        "function": {"name": call.name, "arguments": form.arguments(call.arguments)},
    }


def user(text: str = USER_TEXT) -> dict[str, Any]:
    return {"role": "user", "content": text}


def system(text: str = SYSTEM_TEXT) -> dict[str, Any]:
    return {"role": "system", "content": text}


def assistant(
    form: Spelling, *, content: str | None = None, calls: tuple[Call, ...] = (), reasoning: str | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if calls:
        message["content"] = form.content_with_calls if content is None else content
        message["tool_calls"] = [call_message(c, form) for c in calls]
    else:
        message["content"] = content if content is not None else ""
    if reasoning is not None:
        put_reasoning(message, form.reasoning_key, reasoning)
    return message


def tool_result(call: Call, content: str, form: Spelling) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": ids(form)[call.index], "name": call.name, "content": content}


def opening(form: Spelling) -> list[dict[str, Any]]:
    """The messages every variant starts with."""
    return [system(), user()] if form.system_role else [user()]


def _probe_values() -> tuple[tuple[str, str], ...]:
    values = [
        (SYSTEM_TEXT, "the system message"),
        (USER_TEXT, "the user's message"),
        (USER_TEXT2, "a second user message"),
        (CONTENT_TEXT, "the assistant's answer"),
        (CONTENT_TEXT2, "a second assistant answer"),
        (REASONING_TEXT, "the assistant's reasoning"),
        (RESULT_TEXT, "a tool result"),
        (RESULT_TEXT2, "a second tool result"),
        (FN1, "a tool's name"),
        (FN2, "a second tool's name"),
        (DESCRIPTION1, "a tool's description"),
        (DESCRIPTION2, "a second tool's description"),
        (ARG1, "an argument's name"),
        (ARG2, "a second argument's name"),
        (ARG_DESCRIPTION1, "an argument's description"),
        (ARG_DESCRIPTION2, "a second argument's description"),
        (STR1, "an argument's value"),
        (STR2, "a second argument's value"),
        (str(NUM1), "a number argument"),
        (str(NUM2), "a second number argument"),
        (TRICKY_STRING, "a string with characters that need escaping"),
        (TRICKY_NAME, "a tool name with characters that need escaping"),
        (TRICKY_KEY, "an argument name with characters that need escaping"),
        *((piece, "a piece of a tool name with characters that need escaping") for piece in NAME_PIECES),
        *((piece, "a piece of an argument name with characters that need escaping") for piece in KEY_PIECES),
        *((key, "a key of a JSON tool result") for key in RESULT_JSON),
        (OBJECT_KEY, "a key of an object argument"),
        (ARRAY_ITEM, "an item of an array argument"),
    ]
    for form in RUNTIME_ID_FORMS.values():
        values += [(example, f"a tool call id ({form.label})") for example in form.examples]
    return tuple(values)


# Every sentinel above that a render may show, with what it stands for in plain words: reports quote
# real renders of these conversations and explain the sentinels they hold; excerpts never cut one.
PROBES = _probe_values()
PROBE_TEXTS = tuple(text for text, _ in PROBES)


CALL1 = Call(FN1, {ARG1: STR1}, 0)
CALL2 = Call(FN2, {ARG1: STR2}, 1)
