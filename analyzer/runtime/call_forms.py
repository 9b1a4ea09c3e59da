"""How a template writes two parts of a call that the format description records as they are: the
call id and a call written as one JSON object. The output shape (``shape.py``) is built of them too.

Call ids are data: ``ID_FORMS`` names each id shape a template may insist on, with the characters it
is made of, its length, how we generate one and two examples to probe templates with.

A module of its own so that the analysis, which needs only these, does not build the shape's classes.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class IdForm:
    """A shape of call id. An id is ``min_length`` to ``max_length`` (0: no limit) characters from
    ``chars``, or from any but ``chars`` when ``excluded``; ids we make are ``prefix`` and
    ``generated_length`` letters and digits."""

    kind: ClassVar[str] = "id_form"
    name: str
    chars: str
    excluded: bool
    min_length: int
    max_length: int
    prefix: str
    generated_length: int
    examples: tuple[str, str]  # two ids of this form, for the two calls of a probe conversation
    label: str  # what people call it, in reports


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

ID_FORMS: dict[str, IdForm] = {
    form.name: form
    for form in (
        # What OpenAI clients send: call_ and letters; a template that takes these takes any token.
        IdForm(
            "openai",
            " \t\n\r<>[]\"'",
            True,
            1,
            0,
            "call_",
            24,
            ("call_Qz7Wk3Jx1abc", "call_Jm4Tp8Rb2xyz"),
            "OpenAI-style ids (call_...)",
        ),
        # Mistral's templates insist on exactly nine letters and digits.
        IdForm("alnum9", _ALNUM, False, 9, 9, "", 9, ("Qz7Wk3Jx1", "Jm4Tp8Rb2"), "9-character alphanumeric ids"),
    )
}


def id_pattern(form: IdForm) -> str:
    """A regular expression for one id of ``form``."""
    escaped = "".join("\\" + ch if ch in "\\]^-[" else ch for ch in form.chars)
    chars = f"[{'^' if form.excluded else ''}{escaped}]".replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    count = f"{{{form.min_length},{form.max_length or ''}}}"
    return chars + ("+" if count == "{1,}" else count)


@dataclass(frozen=True, slots=True)
class JsonCall:
    """A call written as one JSON object. Paths are key paths from the object's root. The format
    description records it as is (``analyzer.description`` re-uses this class)."""

    kind: ClassVar[str] = "json_call"
    name_path: tuple[str, ...]  # () when the name is the object's only key
    name_is_key: bool
    arguments_path: tuple[str, ...]
    arguments_encoding: typing.Literal["object", "string"]
    id_path: tuple[str, ...] | None
    index_path: tuple[str, ...] | None
    index_base: int
    constants: tuple[tuple[tuple[str, ...], str], ...]  # (path, JSON text) written the same in every call
    key_order: tuple[str, ...]
