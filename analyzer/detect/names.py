"""How names are written: as is, or escaped.

A template may pass a function or argument name through an escaping before it writes it (an XML
attribute's ``&quot;`` and ``&amp;``, a JSON string's ``\\"``). A call is rendered whose name holds
each character escapings change (``variants.ESCAPED_CHARS``) between sentinel pieces; what stands
between two pieces in the render is what the template writes for the character between them.
"""

from __future__ import annotations

from analyzer.description import Escaping, NameEscaping, Unknown
from analyzer.diff import find_all
from analyzer.render import variants as v
from analyzer.render.session import Failed, Session

# The longest text an escaping writes for one character (``&#x00027;``), with room to spare: a longer
# gap between two pieces is not one character's escape.
_MAX_ESCAPE = 12


def detect_name_escaping(session: Session) -> NameEscaping:
    """How the template writes a function name, from a call named ``variants.TRICKY_NAME``."""
    call = v.Call(v.TRICKY_NAME, dict(v.CALL1.arguments), 0)
    return _escaping(session, call, v.NAME_PIECES, "function name")


def detect_key_escaping(session: Session) -> NameEscaping:
    """How the template writes an argument name, from an argument named ``variants.TRICKY_KEY``."""
    call = v.Call(v.FN1, {v.TRICKY_KEY: v.STR1}, 0)
    return _escaping(session, call, v.KEY_PIECES, "argument name")


def _escaping(session: Session, call: v.Call, pieces: tuple[str, ...], what: str) -> NameEscaping:
    output = session.output(v.assistant(session.form, calls=(call,)))
    if isinstance(output, Failed):
        return Unknown(f"a {what} with quotes, '&', '<', '>' and a backslash does not render: {output.message}")
    found = {tuple(chars) for at in find_all(output, pieces[0]) if (chars := _written_chars(output, at, pieces))}
    if not found:
        return Unknown(f"a {what} with quotes, '&', '<', '>' and a backslash is not written recognisably")
    if len(found) > 1:
        return Unknown(f"a {what} is written with different escapings in different places")
    (written,) = found
    replaced = tuple((ch, text) for ch, text in zip(v.ESCAPED_CHARS, written, strict=True) if text != ch)
    return Escaping(replaced) if replaced else "none"


def _written_chars(output: str, at: int, pieces: tuple[str, ...]) -> list[str] | None:
    """What the name written at ``at`` holds between each two of its pieces; None when the pieces
    do not follow one another there."""
    written: list[str] = []
    end = at + len(pieces[0])
    for piece in pieces[1:]:
        start = output.find(piece, end, end + _MAX_ESCAPE + len(piece))
        if start == -1:
            return None
        written.append(output[end:start])
        end = start + len(piece)
    return written
