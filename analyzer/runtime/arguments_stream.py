"""A call's JSON arguments read as they arrive: the beginning of their text that no later character
can change, so that a stream can send it before the call is complete.

A call's final arguments string is the model's text where that is a strict JSON object, and the
re-encoding of what was read otherwise (a tolerance: ``True``, single quotes, ``1e999``). So the text
sent early must begin both: it is the model's text as long as that is strict JSON written the way
``values.json_text`` writes it (``", "`` and ``": "`` between members, no other whitespace, strings
escaped as ``json.dumps`` escapes them, numbers as Python prints them). At the first character where
it is not, nothing more is sent until the call is complete: the rest comes with the call, whatever
it turns out to be. A key written twice also stops it there (a re-encoding keeps one of the two); a
key still arriving is sent as it comes while no key before it in its object begins the same way.

Standard library only, as all of the runtime.
"""

from __future__ import annotations

import re

# What may stand next, as the scanner walks the object.
(
    _ARG_VALUE,
    _ARG_KEY_OR_CLOSE,
    _ARG_VALUE_OR_CLOSE,
    _ARG_COLON,
    _ARG_SPACE_THEN_VALUE,
    _ARG_COMMA_OR_CLOSE,
    _ARG_SPACE_THEN_ITEM,
    _ARG_STRING_BODY,
    _ARG_KEY,
) = range(9)
# A run of string characters json.dumps(ensure_ascii=False) writes as they are.
_ARG_PLAIN = re.compile(r'[^"\\\x00-\x1f]+')
_ARG_TOKEN = re.compile(r"[-+0-9.eE]+|true|false|null|[A-Za-z]+")
_ARG_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# The escapes json.dumps writes: the short ones, and \u00XX for the other control characters.
_ARG_SHORT_ESCAPES = frozenset('"\\nrtbf')
_ARG_SHORT_FORMS = frozenset("\b\f\n\r\t")
# What a reader's ``wake`` answers when no more text can change what it sends.
ASLEEP = re.compile("(?!)")
_TOKEN_ENDS = re.compile(r"[^-+0-9.eEA-Za-z]")
_ARG_DEEPEST = 64  # deeper nesting is sent with the call: decoding refuses very deep values


class JsonArgumentsReader:
    """The certain beginning of JSON arguments that start at ``start`` in a text that only grows.
    ``feed(text, limit)`` reads up to ``limit`` (where the text that may close the call starts) and
    returns how far the text is certain; it never goes back."""

    __slots__ = ("_expect", "_keys", "_limit", "_stack", "certain", "done", "pos", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.pos = start  # how far the text is read
        self.certain = start  # how far it is certain
        self.done = False  # complete, or a point of doubt reached: nothing more is certain before the call ends
        self._limit = -1  # the limit last read to
        self._expect = _ARG_VALUE
        self._stack: list[str] = []  # the open containers' closing brackets
        self._keys: list[set[str]] = []  # for each open object, its keys so far

    def more(self, text: str, limit: int, memo: object = None, force: bool = False) -> str:
        """The text that became certain since the last call (what a stream sends next)."""
        before = self.certain
        return text[before : self.feed(text, limit)]

    def plain(self, text: str, chunk: str, spaces: bool = True) -> str | None:
        """What became certain with ``chunk``, just added to the end of ``text``, where the text before
        it was all read (the caller has made sure the chunk starts no text that may close the call, so
        the stream lets all of it be read): as it stands in the middle of a string value when it holds
        nothing a string may not hold as is, else what ``more`` would send; None where text before it
        waits, and ``more`` reads it. (``spaces`` is for the key/value reader's sake: this one holds
        no whitespace back.)"""
        at = len(text) - len(chunk)
        if self.done or self.pos != at:
            return None
        if self._expect == _ARG_STRING_BODY:
            m = _ARG_PLAIN.match(text, at)
            if m is not None and m.end() == len(text):
                self.pos = self.certain = len(text)
                return chunk
        # Read to the end before this chunk, and the stream holds none of it back: read on to the end.
        before = self.certain
        return text[before : self.feed(text, len(text))]

    def stalled(self, limit: int) -> bool:
        """Whether ``more`` would find nothing new with this ``limit``: it reads no further than its
        limit, and the text before it only grows at the end."""
        return limit == self._limit

    def wake(self, text: str) -> re.Pattern[str] | None:
        """The characters one of which must arrive before ``more`` may find anything new (ASLEEP: none
        will, the object is read to its end or doubt reached); None: any may. A literal still arriving
        is read once what ends it came (a character no number or literal goes on with); a key still
        arriving at every character, since it is sent as it comes while it can be no repeat."""
        if self.done:
            return ASLEEP
        pos = self.pos
        if self._limit != len(text) or pos >= len(text):
            return None  # (text held back by the stream, or nothing after the last token: any may matter)
        if self._expect in (_ARG_VALUE, _ARG_VALUE_OR_CLOSE) and _ARG_TOKEN.match(text, pos) is not None:
            return _TOKEN_ENDS
        return None

    def feed(self, text: str, limit: int) -> int:
        self._limit = limit
        while not self.done and self.pos < limit:
            if not self._step(text, limit):
                break  # a token still arriving
        return self.certain

    def _doubt(self) -> bool:
        self.done = True
        return False

    def _advance(self, to: int) -> bool:
        self.pos = self.certain = to
        return True

    def _step(self, text: str, limit: int) -> bool:
        """Read one token at ``pos``; False when it is still arriving or doubt was reached."""
        i, ch, expect = self.pos, text[self.pos], self._expect
        if expect == _ARG_STRING_BODY:
            return self._string_body(text, limit)
        if expect == _ARG_COLON:
            if ch != ":":
                return self._doubt()
            self._expect = _ARG_SPACE_THEN_VALUE
            return self._advance(i + 1)
        if expect in (_ARG_SPACE_THEN_VALUE, _ARG_SPACE_THEN_ITEM):
            if ch != " ":
                return self._doubt()
            if expect == _ARG_SPACE_THEN_VALUE:
                self._expect = _ARG_VALUE
                return self._advance(i + 1)
            self._expect = self._item_after_comma()
            self.pos = i + 1  # (", " is certain with the item after it: "{"a": 1, }" is read otherwise)
            return True
        if expect == _ARG_COMMA_OR_CLOSE:
            if ch == ",":
                self._expect = _ARG_SPACE_THEN_ITEM
                self.pos = i + 1
                return True
            return self._close(ch, i)
        if expect == _ARG_KEY_OR_CLOSE:
            if ch == '"':
                return self._key(text, i, limit)
            return self._close(ch, i)
        if expect == _ARG_KEY:
            return self._key(text, i, limit) if ch == '"' else self._doubt()
        if expect == _ARG_VALUE_OR_CLOSE and ch == "]":
            return self._close(ch, i)
        return self._value(text, i, limit)

    def _item_after_comma(self) -> int:
        # After ", " in an object a key comes (told by the quote), in a list a value: a bracket closing
        # there is no strict JSON ("{"a": 1, }" is read otherwise).
        return _ARG_KEY if self._stack[-1] == "}" else _ARG_VALUE

    def _close(self, ch: str, i: int) -> bool:
        if not self._stack or ch != self._stack[-1]:
            return self._doubt()
        self._stack.pop()
        if ch == "}":
            self._keys.pop()
        self._advance(i + 1)
        if not self._stack:
            self.done = True  # the whole object: the call's arguments end here
            return False
        self._expect = _ARG_COMMA_OR_CLOSE
        return True

    def _open(self, ch: str, i: int) -> bool:
        if len(self._stack) >= _ARG_DEEPEST:
            return self._doubt()
        self._stack.append("}" if ch == "{" else "]")
        if ch == "{":
            self._keys.append(set())
            self._expect = _ARG_KEY_OR_CLOSE
        else:
            self._expect = _ARG_VALUE_OR_CLOSE
        return self._advance(i + 1)

    def _value(self, text: str, i: int, limit: int) -> bool:
        ch = text[i]
        if not self._stack and ch != "{":
            return self._doubt()  # arguments are an object
        if ch in "{[":
            return self._open(ch, i)
        if ch == '"':
            self._expect = _ARG_STRING_BODY  # a string value is sent as it arrives
            return self._advance(i + 1)
        m = _ARG_TOKEN.match(text, i, limit)
        if m is None:
            return self._doubt()
        if m.end() == limit:
            return False  # the token may go on: sent once complete
        token = m.group()
        if token not in ("true", "false", "null") and not _number_written_back(token):
            return self._doubt()
        self._expect = _ARG_COMMA_OR_CLOSE
        return self._advance(m.end())

    def _key(self, text: str, i: int, limit: int) -> bool:
        """A key is sent as it arrives while no key before it in its object begins with what came of it
        (so it can be no repeat), else once whole and known to be none; an escape in it is doubt unless
        json.dumps writes it so."""
        end = _key_end(text, i + 1, limit)
        if end is None or end < 0:
            # Still arriving, or doubt inside it: either way what came of it before its first
            # character not written as is stays sent (a stream sent it while the key was arriving,
            # so the batch, which reads the doubt at once, sends it too).
            written = _plain_end(text, i + 1, limit)
            if not self._may_repeat(text[i + 1 : written]):
                self.certain = written  # (read again from its quote once more came: ``pos`` stays)
            return False if end is None else self._doubt()
        key = text[i + 1 : end - 1]  # canonical escapes only: compared as written
        if key in self._keys[-1]:
            return self._doubt()
        self._keys[-1].add(key)
        self._expect = _ARG_COLON
        return self._advance(end)

    def _may_repeat(self, begun: str) -> bool:
        """Whether a key that begins with ``begun`` may be one its object already holds."""
        return any(key.startswith(begun) for key in self._keys[-1])

    def _string_body(self, text: str, limit: int) -> bool:
        """A string value's text, certain as it arrives; an escape only once whole."""
        j = self.pos
        while j < limit:
            m = _ARG_PLAIN.match(text, j, limit)
            if m is not None:
                j = m.end()
                continue
            ch = text[j]
            if ch == '"':
                self._expect = _ARG_COMMA_OR_CLOSE
                return self._advance(j + 1)
            if ch != "\\":
                return self._held_then_doubt(j)  # a control character written raw: not strict JSON
            escape = _escape_written(text, j, limit)
            if escape is None:
                self._advance(j)
                return False
            if escape < 0:
                return self._held_then_doubt(j)
            j += escape
        self._advance(j)
        return False

    def _held_then_doubt(self, j: int) -> bool:
        self._advance(j)
        return self._doubt()


def _escape_written(text: str, j: int, limit: int) -> int | None:
    """The length of the escape at ``j`` when json.dumps writes it so; None while it is arriving, -1
    when it is another (``\\/``, ``\\u00e9``: valid, but a re-encoding writes them otherwise)."""
    if j + 1 >= limit:
        return None
    ch = text[j + 1]
    if ch in _ARG_SHORT_ESCAPES:
        return 2
    if ch != "u":
        return -1
    if j + 6 > limit:
        return None
    code = text[j + 2 : j + 6]
    if not re.fullmatch(r"00[01][0-9a-f]", code):
        return -1
    return 6 if chr(int(code, 16)) not in _ARG_SHORT_FORMS else -1


def _plain_end(text: str, j: int, limit: int) -> int:
    """Where the run of characters json.dumps writes as they are, from ``j``, ends."""
    m = _ARG_PLAIN.match(text, j, limit)
    return m.end() if m is not None else j


def _key_end(text: str, j: int, limit: int) -> int | None:
    """Where a key's string whose body starts at ``j`` ends (past its quote); None while arriving, -1
    when it is not written as json.dumps writes it."""
    while j < limit:
        m = _ARG_PLAIN.match(text, j, limit)
        if m is not None:
            j = m.end()
            continue
        ch = text[j]
        if ch == '"':
            return j + 1
        if ch != "\\":
            return -1
        escape = _escape_written(text, j, limit)
        if escape is None:
            return None
        if escape < 0:
            return -1
        j += escape
    return None


def _number_written_back(token: str) -> bool:
    """A JSON number Python writes back as it was written (``10``, ``1.5``; not ``1.50``, ``1e5``, ``-0``)."""
    if not _ARG_JSON_NUMBER.fullmatch(token):
        return False
    if token.lstrip("-").isdigit():
        return str(int(token)) == token
    value = float(token)
    return value not in (float("inf"), float("-inf")) and repr(value) == token
