"""The other ways a model writes a call's header, read off the shape's own headers.

Some templates write a call as a message header: a marker token, a word (the channel), maybe more
words, a second token, then the arguments (``to=functions.NAME<|channel|>commentary json<|message|>``),
and they write the same two tokens with one word between them for their other messages (the content
wrapper ``<|channel|>final<|message|>``, the reasoning opener ``<|channel|>analysis<|message|>``). A
model trained on such headers writes them as it writes its other messages' headers:

- with another of the words the template writes between the two tokens, or the first word alone
  (``<|channel|>analysis<|message|>`` after the name; tolerance ``header_word``);
- and, where the template's other headers start with the first token, with that channel part first
  and the part that names the call after it (``<|channel|>commentary to=functions.NAME<|message|>``;
  tolerance ``header_order``);
- with a token of the header's own bracketing before the words after the channel, one the template
  never writes (``<|channel|>commentary <|constrain|>json<|message|>``, a format's type annotation;
  tolerance ``header_token``), in any of these orders and in the template's own, and in the content
  wrapper's header (``<|channel|>final <|constrain|>json<|message|>``);
- begun and begun again: the first token and a channel word, then the first token again
  (``<|channel|>commentary to=assistant<|channel|>analysis``; tolerance ``abandoned_header``).

``shape_headers(shape)`` works all of them out once.

Every variant is made of the template's own texts: nothing here is keyed on a template or a token's
spelling, and a shape whose headers do not have this form has no variants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shape import JsonArgs, JsonCallObject, KeyValueArgs, Marker, Markers, Name, OutputShape, Part
from .tolerance import HEADER_ORDER, HEADER_WORD

# A marker token: bracketed, no whitespace or nested bracket inside (``<|channel|>``, ``[SEP]``).
_HEADER_TOKEN = r"<[^<>\s]+>|\[[^\[\]\s]+\]"
_HEADER_WORD_TEXT = r"[^\s<>\[\]{}\"']+"
# Two tokens with words between them, the whole text.
_HEADER_FORM = re.compile(
    rf"({_HEADER_TOKEN})[ \t]*({_HEADER_WORD_TEXT}(?:[ \t]+{_HEADER_WORD_TEXT})*)[ \t]*({_HEADER_TOKEN})"
)


@dataclass(frozen=True, slots=True)
class HeaderVariant:
    """A call form the template does not write: ``parts`` and the tolerances reading it applies.
    ``reordered``: it starts with the channel part (``first``), not with the call's own opener."""

    parts: tuple[Part, ...]
    kinds: tuple[str, ...]
    reordered: bool
    opening: Markers  # the markers up to the name: a call in this form is known by them
    # (where in ``parts`` the marker stands that a header token may come before, the token's regex)
    token_slot: tuple[int, HeaderToken] | None = None


@dataclass(frozen=True, slots=True)
class ContentHeader:
    """The content wrapper's opener with another channel word the template writes (``<|channel|>
    commentary<|message|>`` for ``<|channel|>final<|message|>``), which is read as that opener."""

    text: str


def _header_text(markers: Markers) -> str:
    return "".join(marker.written for marker in markers).strip()


def _channel_words(shape: OutputShape, first: str, second: str) -> list[str]:
    """The first words the template writes between the tokens ``first`` and ``second`` in the
    headers of its other messages (the content wrapper, the reasoning opener)."""
    words: list[str] = []
    for literal in (shape.content_open, shape.reasoning.open if shape.reasoning else ()):
        m = _HEADER_FORM.fullmatch(_header_text(literal)) if literal else None
        if m and m.group(1) == first and m.group(3) == second:
            words.append(m.group(2).split()[0])
    return words


def _begun(text: str, shortest: int = 0) -> str:
    """A regex of ``text`` begun but not whole: each of its beginnings of at least ``shortest`` characters."""
    return "|".join(re.escape(text[:k]) for k in range(shortest, len(text)))


def _call_header_form(shape: OutputShape) -> re.Match[str] | None:
    """The call header (the markers between a call's name and its arguments) as two tokens with words
    between them; None where the calls have a section opener or the header is not of that form."""
    calls = shape.calls
    if calls is None or calls.section_open:
        return None
    where = _call_header(calls.call)
    if where is None:
        return None
    return _HEADER_FORM.fullmatch(_header_text(_markers_of(calls.call[where[0] : where[1]])))


def _content_wrapper_form(shape: OutputShape) -> tuple[re.Match[str], re.Match[str]] | None:
    """The content wrapper's opener as a header of the call header's two tokens with one word between,
    and the call header's form; None otherwise."""
    if shape.calls is None or len(shape.content_open) != 1:
        return None
    wrapper = _HEADER_FORM.fullmatch(_header_text(shape.content_open))
    where = _call_header(shape.calls.call)
    if wrapper is None or where is None or len(wrapper.group(2).split()) != 1:
        return None
    call = _HEADER_FORM.fullmatch(_header_text(_markers_of(shape.calls.call[where[0] : where[1]])))
    if call is None or (call.group(1), call.group(3)) != (wrapper.group(1), wrapper.group(3)):
        return None
    return wrapper, call


def _call_header(parts: tuple[Part, ...]) -> tuple[int, int] | None:
    """Where the markers between a call's name and its arguments are: (first, end), when all that
    stands there is markers; None otherwise."""
    names = [k for k, part in enumerate(parts) if isinstance(part, Name)]
    if len(names) != 1:
        return None
    start = names[0] + 1
    end = start
    while end < len(parts) and isinstance(parts[end], Marker):
        end += 1
    if end == start or end == len(parts):
        return None
    if not isinstance(parts[end], JsonArgs | KeyValueArgs | JsonCallObject):
        return None
    if not all(isinstance(part, Marker) for part in parts[: names[0]]) or names[0] == 0:
        return None  # the name's own segment: the markers before it, then the name
    return start, end


@dataclass(frozen=True, slots=True)
class HeaderToken:
    """A token bracketed as a header's two tokens are, neither of them (``<|constrain|>`` for
    ``<|channel|>`` and ``<|message|>``): ``opening`` and ``closing`` the brackets, ``own`` the two."""

    opening: str
    closing: str
    own: tuple[str, str]

    @property
    def whole(self) -> str:
        """The token's regex."""
        own = "|".join(re.escape(token) for token in self.own)
        return rf"(?!{own}){re.escape(self.opening)}\w+{re.escape(self.closing)}"

    @property
    def beginning(self) -> str:
        """The regex of the text the token may have begun as at the end of the output so far."""
        opening_begun = _begun(self.opening, 1)
        begun = f"{opening_begun}|" if opening_begun else ""
        return rf"(?:{begun}{re.escape(self.opening)}\w*(?:{_begun(self.closing)}))"


def _common_start(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _header_token(first: str, second: str) -> HeaderToken | None:
    """The token of the header tokens' bracketing; None where they share no bracketing."""
    prefix = _common_start(first, second)
    suffix = _common_start(first[::-1], second[::-1])[::-1]
    if not prefix or not suffix or len(prefix) + len(suffix) >= min(len(first), len(second)):
        return None
    return HeaderToken(prefix, suffix, (first, second))


def call_variants(shape: OutputShape) -> tuple[HeaderVariant, ...]:
    """The call forms a model writes with its header as the template's other headers are written, each
    with its tolerances; () where the shape's call header is not of that form."""
    m = _call_header_form(shape)
    if m is None or shape.calls is None:
        return ()
    parts = shape.calls.call
    where = _call_header(parts)
    assert where is not None  # (the header's form was read there)
    start, end = where
    first, words, second = m.group(1), m.group(2).split(), m.group(3)
    others = _channel_words(shape, first, second)
    if not others:
        return ()  # no other header of the template writes the two tokens with a word between
    head, name, after = parts[: start - 1], parts[start - 1], parts[end:]
    assert all(isinstance(part, Marker) for part in head)
    token = _header_token(first, second)
    found: list[HeaderVariant] = []
    for channel in dict.fromkeys((words[0], *others)):
        for rest in dict.fromkeys((" ".join(words[1:]), "")):
            changed = channel != words[0] or rest != " ".join(words[1:])
            lead = Marker(first + channel, trail=" ")
            closing = Marker(rest + second, lead=" ") if rest else Marker(second)
            # A token before the words after the channel (never before the second token alone): the
            # closing marker stands at the same place in both orders.
            slot = (len(head) + 2, token) if rest and token else None
            if changed or slot:
                found.append(
                    HeaderVariant(
                        (*head, name, lead, closing, *after),
                        (HEADER_WORD,) if changed else (),
                        False,
                        _markers_of(head),
                        slot,
                    )
                )
            kinds = (HEADER_ORDER, HEADER_WORD) if changed else (HEADER_ORDER,)
            found.append(
                HeaderVariant((lead, *head, name, closing, *after), kinds, True, (lead, *_markers_of(head)), slot)
            )
    return tuple(found)


def _markers_of(parts: tuple[Part, ...]) -> Markers:
    return tuple(part for part in parts if isinstance(part, Marker))


def content_headers(shape: OutputShape) -> tuple[ContentHeader, ...]:
    """The content wrapper's opener with each other channel word the call header writes, where the
    wrapper is a header of the call header's two tokens (and no other message's opener is so written)."""
    forms = _content_wrapper_form(shape)
    if forms is None:
        return ()
    wrapper, call = forms
    taken = set(_channel_words(shape, wrapper.group(1), wrapper.group(3)))
    channel = call.group(2).split()[0]
    if channel in taken:
        return ()
    return (ContentHeader(wrapper.group(1) + channel + wrapper.group(3)),)


@dataclass(frozen=True, slots=True)
class DetailedContentHeader:
    """The content wrapper's opener with a header token and words before its second token (``<|channel|>
    final <|constrain|>json<|message|>``, a reply in a declared format): ``lead`` the text up to its
    words (watched for), ``whole`` the regex of the header (group ``left_out``: the token and words,
    which the message leaves out), ``beginning`` that of the text it may have begun as at the end of
    the output so far."""

    lead: str
    whole: re.Pattern[str]
    beginning: re.Pattern[str]


def detailed_content_header(shape: OutputShape) -> DetailedContentHeader | None:
    """The content wrapper's opener written with a header token before words, where the wrapper is a
    header of two tokens with one word between them and a call header of the same tokens writes more
    words after its channel (the template's evidence that words follow the channel); None otherwise."""
    forms = _content_wrapper_form(shape)
    if forms is None or len(forms[1].group(2).split()) < 2:
        return None
    wrapper, _ = forms
    first, second = wrapper.group(1), wrapper.group(3)
    token = _header_token(first, second)
    if token is None:
        return None
    lead = first + wrapper.group(2)
    words = rf"(?:{_HEADER_WORD_TEXT})?"
    return DetailedContentHeader(
        lead,
        re.compile(rf"{re.escape(lead)}[ \t]+(?P<left_out>{token.whole}[ \t]*{words})[ \t]*{re.escape(second)}"),
        re.compile(
            rf"{re.escape(lead)}[ \t]*(?:{token.beginning}|{token.whole}[ \t]*{words}[ \t]*(?:{_begun(second)}))?"
        ),
    )


# A header's words are few: a longer run after a header's start is no header begun again.
_ABANDONED_LONGEST = 64


@dataclass(frozen=True, slots=True)
class AbandonedHeader:
    """A header begun and begun again: the first token and a channel word the template writes there,
    maybe one more word, and then the first token again with no second token between (``<|channel|>
    commentary to=assistant<|channel|>analysis<|message|>``). ``leads``: the first token with each
    channel word (watched for); ``whole``: the regex of the text dropped, up to the token again;
    ``beginning``: that of the text it may have begun as at the end of the output so far."""

    leads: frozenset[str]
    whole: re.Pattern[str]
    beginning: re.Pattern[str]

    def waits(self, text: str) -> bool:
        """Whether ``text`` (which starts with a lead) may still turn out to be a header begun again."""
        return len(text) <= _ABANDONED_LONGEST and self.beginning.fullmatch(text) is not None


def abandoned_header(shape: OutputShape) -> AbandonedHeader | None:
    """The headers of the call header's tokens begun again, where the template writes those tokens
    with a channel word between them in its headers; None otherwise."""
    call = _call_header_form(shape)
    if call is None:
        return None
    first, second = call.group(1), call.group(3)
    channels = dict.fromkeys((call.group(2).split()[0], *_channel_words(shape, first, second)))
    if len(channels) < 2:
        return None  # no other header of the template writes the two tokens with a word between
    leads = frozenset(first + channel for channel in channels)
    lead = "|".join(re.escape(text) for text in sorted(leads, key=len, reverse=True))
    # At most one word after the channel, of the characters header words are made of (a recipient:
    # ``to=assistant``): prose before the token is no header.
    words = r"(?:[ \t]+[\w.=:/-]+)?[ \t]*"
    return AbandonedHeader(
        leads,
        re.compile(rf"(?:{lead}){words}(?={re.escape(first)})"),
        re.compile(rf"(?:{lead}){words}(?:{_begun(first)})"),
    )


@dataclass(frozen=True, slots=True)
class ShapeHeaders:
    """Every other way a shape's headers are written that the parser reads: the call header's variants,
    the content wrapper's openers with another channel word, with a token and words, and headers
    begun again."""

    variants: tuple[HeaderVariant, ...] = ()
    content_headers: frozenset[str] = frozenset()
    detailed_content_header: DetailedContentHeader | None = None
    abandoned_header: AbandonedHeader | None = None


def shape_headers(shape: OutputShape) -> ShapeHeaders:
    return ShapeHeaders(
        call_variants(shape),
        frozenset(header.text for header in content_headers(shape)),
        detailed_content_header(shape),
        abandoned_header(shape),
    )
