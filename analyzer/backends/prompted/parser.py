"""Read replies in the prompted format into the same OpenAI-style message as the native parser.

Style "json": the reply is one JSON object. Prose and code fences around it are tolerated (the prose
is content, the fences are dropped); an answer's text streams as it arrives; a call is read when the
reply ends. Style "fenced": prose streams as content, and each ``tool_call`` block is read into a
call as soon as it closes.

What goes wrong is reported, never thrown: an object that is not closed (``unterminated_call``),
invalid JSON (``malformed_call``), an unknown tool or arguments the schema refuses (as the native
parser reports them), and an object with neither ``"tool"`` nor ``"answer"`` (``not_a_reply``). The
text of anything that is not content, reasoning or a call is kept in its error. Batch parsing is one
``feed`` and ``finish``, so batch and stream cannot disagree.
"""

from __future__ import annotations

import json
import re
from typing import Any

from analyzer.backends.parser.message import Delta, Message, ParseError, apply
from analyzer.backends.parser.stream import generated_id, tool_schemas, validate_call
from analyzer.backends.prompted.format import (
    ANSWER_KEY, ARGUMENTS_KEY, FENCE_CLOSE, FENCE_OPEN, TOOL_KEY, PromptedFormat,
)



def _first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, the first of a repeated key kept: the one a stream has already sent."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        found.setdefault(key, value)
    return found


# strict=False: models write raw newlines inside strings
_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_first_wins)
_ANSWER_OPENS = re.compile(r'\s*(?:```[\w-]*\s*)?\{\s*"' + ANSWER_KEY + r'"\s*:\s*"')
_FENCE_BEFORE = re.compile(r"```[\w-]*\s*$")
_FENCE_AFTER = re.compile(r"^\s*```")
_JSON_OBJECT_OPENS = re.compile(r'\{\s*(?:"|$)')
_LITERAL_STARTS = ("true", "false", "null")
_NUMBER_PREFIX = re.compile(r"-?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?")

_REASONING_START, _REASONING, _BODY = "reasoning-start", "reasoning", "body"


class PromptedParser:
    """The parser for one prompted format and its tools; the same interface as the native ``Parser``."""

    def __init__(self, fmt: PromptedFormat, tools: list[dict[str, Any]]):
        self.format = fmt
        self.tools = tools

    def stream(self) -> PromptedStream:
        return PromptedStream(self.format, self.tools)

    def parse(self, text: str) -> Message:
        stream = self.stream()
        stream.feed(text)
        stream.finish()
        return stream.message


class PromptedStream:
    def __init__(self, fmt: PromptedFormat, tools: list[dict[str, Any]]):
        self.format = fmt
        self.schemas = tool_schemas(tools)
        self._schemas_reported: set[str] = set()  # tools whose unusable schema is already reported
        self.message = Message()
        self._buf = ""
        reasoning = fmt.reasoning
        self._state = _BODY if reasoning is None else _REASONING if reasoning.forced_open else _REASONING_START
        self._answer_streamed = ""  # json style: the part of the answer already sent as content
        self._content = _Trimmed()
        self._reasoning_text = _Trimmed()
        self._in_block = False  # fenced style: inside a tool_call block

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Delta]:
        self._buf += chunk
        return self._run(final=False)

    def finish(self) -> list[Delta]:
        return self._run(final=True)

    # ------------------------------------------------------------------ states

    def _run(self, final: bool) -> list[Delta]:
        deltas: list[Delta] = []
        if self._state == _REASONING_START:
            self._reasoning_start(final)
        if self._state == _REASONING:
            self._reasoning(deltas, final)
        if self._state == _BODY:
            if self.format.style == "json":
                self._json_body(deltas, final)
            else:
                self._fenced_body(deltas, final)
        return deltas

    def _emit(self, deltas: list[Delta], delta: Delta) -> None:
        apply(self.message, delta)
        deltas.append(delta)

    def _reasoning_start(self, final: bool) -> None:
        """A reply may open with the template's reasoning block; wait until it is clear whether it does."""
        opening = "".join(m.text for m in self.format.reasoning.open)  # type: ignore[union-attr]
        head = self._buf.lstrip()
        if head.startswith(opening):
            self._buf = head[len(opening):]
            self._state = _REASONING
        elif final or not opening.startswith(head):
            self._state = _BODY

    def _reasoning(self, deltas: list[Delta], final: bool) -> None:
        close = self.format.reasoning.close  # type: ignore[union-attr]
        word = close[0].text
        at = self._buf.find(word)
        if at == -1:
            keep = 0 if final else _partial_suffix(self._buf, word)
            text, self._buf = self._buf[:len(self._buf) - keep], self._buf[len(self._buf) - keep:]
            if final:
                self._state = _BODY
        else:
            text, self._buf = self._buf[:at], self._buf[at + len(word):]
            for marker in close[1:]:  # the rest of a close written as several words
                rest = self._buf.lstrip()
                if rest.startswith(marker.text):
                    self._buf = rest[len(marker.text):]
            self._state = _BODY
        text = self._reasoning_text.take(text)
        if text:
            self._emit(deltas, Delta(reasoning_content=text))

    # ------------------------------------------------------------------ style "json"

    def _json_body(self, deltas: list[Delta], final: bool) -> None:
        opened = _ANSWER_OPENS.match(self._buf)
        if opened:
            answer = _partial_string(self._buf, opened.end())
            if answer.startswith(self._answer_streamed) and len(answer) > len(self._answer_streamed):
                self._emit(deltas, Delta(content=answer[len(self._answer_streamed):]))
                self._answer_streamed = answer
        if not final:
            return
        content, calls, errors = _read_reply(self._buf)
        assert content.startswith(self._answer_streamed), "a streamed answer is a prefix of the reply's content"
        if len(content) > len(self._answer_streamed):
            self._emit(deltas, Delta(content=content[len(self._answer_streamed):]))
        for name, arguments, text in calls:
            self._emit_call(deltas, name, arguments, text)
        for error in errors:
            self._emit(deltas, Delta(error=error))
        self._buf = ""

    # ------------------------------------------------------------------ style "fenced"

    def _fenced_body(self, deltas: list[Delta], final: bool) -> None:
        while self._buf:
            if not self._in_block:
                at = self._buf.find(FENCE_OPEN)
                if at == -1:
                    keep = 0 if final else _partial_suffix(self._buf, FENCE_OPEN)
                    self._send_prose(deltas, self._buf[:len(self._buf) - keep])
                    self._buf = self._buf[len(self._buf) - keep:]
                    break
                self._send_prose(deltas, self._buf[:at])
                self._buf = self._buf[at:]
                self._in_block = True
            if not self._block(deltas, final):
                break

    def _send_prose(self, deltas: list[Delta], text: str) -> None:
        text = self._content.take(text)
        if text:
            self._emit(deltas, Delta(content=text))

    def _block(self, deltas: list[Delta], final: bool) -> bool:
        """Read the block at the start of the buffer; False when it needs more text."""
        start = len(FENCE_OPEN)
        inner = len(self._buf) - len(self._buf[start:].lstrip())
        if inner == len(self._buf) and not final:
            return False
        try:
            value, end = _DECODER.raw_decode(self._buf, inner)
        except json.JSONDecodeError as exc:
            if _incomplete(self._buf, exc):
                if not final:
                    return False
                self._error(deltas, ParseError("unterminated_call", "the output ends inside a tool_call block",
                                               self._buf, len(self.message.tool_calls)))
                self._buf, self._in_block = "", False
                return True
            close = self._buf.find(FENCE_CLOSE, max(exc.pos, start))
            if close == -1 and not final:
                return False
            cut = len(self._buf) if close == -1 else close + len(FENCE_CLOSE)
            self._error(deltas, ParseError("malformed_call", f"a tool_call block is not valid JSON: {exc.msg}",
                                           self._buf[:cut], len(self.message.tool_calls)))
            self._buf, self._in_block = self._buf[cut:], False
            return True
        rest = self._buf[end:].lstrip()
        if rest.startswith(FENCE_CLOSE):
            cut = len(self._buf) - len(rest) + len(FENCE_CLOSE)
        elif not final and FENCE_CLOSE.startswith(rest):
            return False
        else:
            cut = end  # no closing fence: the call is whole without it
        text = self._buf[:cut]
        self._buf, self._in_block = self._buf[cut:], False
        content, calls, errors = _read_object(value, text, len(self.message.tool_calls))
        self._send_prose(deltas, content)
        for name, arguments, call_text in calls:
            self._emit_call(deltas, name, arguments, call_text)
        for error in errors:
            self._error(deltas, error)
        return True

    # ------------------------------------------------------------------ calls and errors

    def _emit_call(self, deltas: list[Delta], name: str, arguments: dict[str, Any], text: str) -> None:
        index = len(self.message.tool_calls)
        call_id = generated_id("openai", index, name, text)
        self._emit(deltas, Delta(call_index=index, call_id=call_id, call_name=name))
        self._emit(deltas, Delta(call_index=index, arguments=json.dumps(arguments, ensure_ascii=False)))
        for problem in validate_call(self.schemas, name, arguments, index, self._schemas_reported) \
                if self.schemas else ():
            self._error(deltas, problem)

    def _error(self, deltas: list[Delta], error: ParseError) -> None:
        self._emit(deltas, Delta(error=error))


class _Trimmed:
    """Text sent piece by piece without its leading and trailing whitespace: whitespace goes out only
    once more text follows it, so a stream sends what one batch parse would."""

    def __init__(self) -> None:
        self._started = False
        self._held = ""

    def take(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
        body = text.rstrip()
        if not body:
            self._held += text
            return ""
        sent, self._held, self._started = self._held + body, text[len(body):], True
        return sent


# --------------------------------------------------------------------------- reading a whole reply

Call = tuple[str, dict[str, Any], str]  # name, arguments, the text it was read from


def _read_reply(text: str) -> tuple[str, list[Call], list[ParseError]]:
    """A whole json-style reply: the object (an answer or a call) and the prose around it."""
    at = text.find("{")
    while at != -1:
        try:
            value, end = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            if _JSON_OBJECT_OPENS.match(text, at):
                before = _FENCE_BEFORE.sub("", text[:at]).strip()
                opened = _ANSWER_OPENS.match(text, at)
                answer = _partial_string(text, opened.end()) if opened else ""  # what of it can be read
                if _incomplete(text, exc):
                    error = ParseError("unterminated_call", "the reply's JSON object is not closed", text[at:])
                else:
                    error = ParseError("malformed_call", f"the reply is not valid JSON: {exc.msg}", text[at:])
                return _joined(before, answer), [], [error]
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and (TOOL_KEY in value or ANSWER_KEY in value or
                                        text.find("{", end) == -1):
            before = _FENCE_BEFORE.sub("", text[:at]).strip()
            after = _FENCE_AFTER.sub("", text[end:], count=1).strip()
            content, calls, errors = _read_object(value, text[at:end], 0)
            return _joined(before, content, after), calls, errors
        at = text.find("{", end)
    return text.strip(), [], []


def _read_object(value: Any, text: str, index: int) -> tuple[str, list[Call], list[ParseError]]:
    """One decoded object: an answer (its text is content), a call, or what is wrong with it."""
    if not isinstance(value, dict) or (TOOL_KEY not in value and ANSWER_KEY not in value):
        return "", [], [ParseError("not_a_reply", f'a JSON object with neither "{TOOL_KEY}" nor "{ANSWER_KEY}"',
                                   text, index)]
    answer = value.get(ANSWER_KEY, "")
    content = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    if TOOL_KEY not in value:
        return content, [], []
    if ANSWER_KEY in value:
        return content, [], [ParseError("malformed_call", f'the reply has both "{TOOL_KEY}" and "{ANSWER_KEY}"',
                                        text, index)]
    name, arguments = value[TOOL_KEY], value.get(ARGUMENTS_KEY, {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    if not isinstance(name, str) or not name:
        return "", [], [ParseError("malformed_call", f'"{TOOL_KEY}" is not a tool name', text, index)]
    if not isinstance(arguments, dict):
        return "", [], [ParseError("malformed_call", f'call {index} to {name}: "{ARGUMENTS_KEY}" is not a JSON object',
                                   text, index)]
    return "", [(name, arguments, text)], []


def _joined(*pieces: str) -> str:
    return "\n".join(piece for piece in pieces if piece)


# --------------------------------------------------------------------------- JSON text in the making


def _partial_string(text: str, start: int) -> str:
    """The JSON string that opens before ``start``, decoded as far as ``text`` holds it whole (an
    escape cut short, or half of a surrogate pair, waits for the rest)."""
    i, safe = start, start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            safe = i
            break
        if ch == "\\":
            if i + 1 >= len(text):
                break
            if text[i + 1] == "u":
                code = text[i + 2:i + 6]
                if len(code) < 4:
                    break
                if 0xD800 <= _hex(code) <= 0xDBFF and i + 12 > len(text):
                    break  # the low half of the pair is still to come
                i += 12 if 0xD800 <= _hex(code) <= 0xDBFF and text[i + 6:i + 8] == "\\u" else 6
            else:
                i += 2
        else:
            i += 1
        safe = i
    try:
        return _DECODER.decode('"' + text[start:safe] + '"')
    except json.JSONDecodeError:
        return ""


def _hex(code: str) -> int:
    try:
        return int(code, 16)
    except ValueError:
        return -1


def _incomplete(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether more text could still make the JSON whole: it stops mid-value rather than going wrong."""
    if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
        return True
    tail = text[exc.pos:]
    if any(word.startswith(tail) for word in _LITERAL_STARTS):
        return True
    number = _NUMBER_PREFIX.match(tail)
    return bool(number) and number.end() == len(tail) and exc.msg == "Expecting value"


def _partial_suffix(text: str, word: str) -> int:
    """Length of the longest end of ``text`` that begins ``word``."""
    for size in range(min(len(word) - 1, len(text)), 0, -1):
        if word.startswith(text[len(text) - size:]):
            return size
    return 0
