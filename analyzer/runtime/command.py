"""Model output from a byte stream to JSON lines: the command line of a generated parser module, and
the body of ``template-analyzer parse``, so the two print the same.

Input is read as it arrives (whatever a read returns, not fixed blocks) and decoded as UTF-8; bytes
that are not UTF-8 become U+FFFD and are reported as ``invalid_utf8`` errors naming their offsets, so
the output is always valid UTF-8 JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from .message import ParseError, Prefill, PrefillError, prefill_of
from .shape import OutputShape
from .stream import Parser

Write = Callable[[str], None]
_READ_SIZE = 65536


class Utf8Input:
    """An incremental UTF-8 decoder that replaces what is not UTF-8 and says where it was."""

    def __init__(self) -> None:
        self._pending = b""
        self._offset = 0  # of the first pending byte in the whole input
        self.problems: list[ParseError] = []

    def decode(self, data: bytes, final: bool = False) -> str:
        data = self._pending + data
        out: list[str] = []
        start = 0
        while True:
            try:
                text = data[start:].decode("utf-8")
                out.append(text)
                start = len(data)
                break
            except UnicodeDecodeError as exc:
                bad_start, bad_end = start + exc.start, start + exc.end
                out.append(data[start:bad_start].decode("utf-8"))
                if exc.reason == "unexpected end of data" and not final:
                    start = bad_start  # a character cut by the read: wait for the rest of it
                    break
                out.append("\ufffd")
                at = self._offset + bad_start
                self.problems.append(
                    ParseError(
                        "invalid_utf8",
                        f"input bytes {at}-{at + bad_end - bad_start - 1} are not UTF-8: replaced by U+FFFD",
                        "\ufffd",
                    )
                )
                start = bad_end
        self._pending = data[start:]
        self._offset += start
        return "".join(out)


def read_prefill(path: str) -> Prefill:
    """The partial assistant message in the JSON file ``path`` (``--continue FILE``); ``PrefillError``
    names the file and what is wrong."""
    try:
        with open(path, encoding="utf-8") as handle:
            message = json.load(handle)
    except OSError as exc:
        raise PrefillError(f"{path}: cannot read the message to continue: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PrefillError(f"{path}: the message to continue is not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise PrefillError(f"{path}: the message to continue is not valid JSON: {exc}") from None
    try:
        return prefill_of(message)
    except PrefillError as exc:
        raise PrefillError(f"{path}: {exc}") from None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def parse_bytes(parser: Parser, data: bytes) -> dict[str, Any]:
    """The message of a whole output."""
    reader = Utf8Input()
    stream = parser.stream()
    stream.feed(reader.decode(data, final=True))
    stream.finish()
    for problem in reader.problems:
        stream.report(problem)
    return stream.message.to_dict()


def parse_stream(parser: Parser, source: BinaryIO, write: Write) -> None:
    """One delta per line as input arrives, then ``{"message": ...}``."""
    reader = Utf8Input()
    stream = parser.stream()
    read = getattr(source, "read1", source.read)
    while True:
        data = read(_READ_SIZE)
        reported = len(reader.problems)
        deltas = stream.feed(reader.decode(data, final=not data))
        for problem in reader.problems[reported:]:
            deltas += stream.report(problem)
        for delta in deltas:
            write(_dumps(delta.to_dict()))
        if not data:
            break
    for delta in stream.finish():
        write(_dumps(delta.to_dict()))
    write(_dumps({"message": stream.message.to_dict()}))


def parse_lines(parser: Parser, source: BinaryIO, write: Write) -> str | None:
    """Each input line a JSON string holding one output; one message per line. Returns an error
    line for a line that is not a JSON string (nothing after it is read)."""
    for number, raw in enumerate(source, 1):
        line = raw.decode("utf-8", "replace")
        if not line.strip():
            continue
        try:
            text = json.loads(line)
        except ValueError as exc:
            return f"stdin line {number}: not a JSON string: {exc}"
        if not isinstance(text, str):
            return f"stdin line {number}: expected a JSON string holding one model output"
        write(_dumps(parser.parse(text).to_dict()))
    return None


def main(shape: OutputShape, tools: list[dict[str, Any]], thinking: bool | None, argv: list[str] | None = None) -> int:
    """``python PARSER.py [--stream | --jsonl] [--tools FILE] [--thinking | --no-thinking] [--strict]
    [--continue FILE] < output``."""
    options = argparse.ArgumentParser(
        description=f"Parse {shape.template} model output (stdin) into an OpenAI-style assistant message (JSON)."
    )
    mode = options.add_mutually_exclusive_group()
    mode.add_argument("--stream", action="store_true", help="print one delta per line as input arrives")
    mode.add_argument(
        "--jsonl", action="store_true", help="each input line is a JSON string holding one output; one message per line"
    )
    options.add_argument(
        "--tools",
        metavar="FILE",
        help="JSON file with the tools list (default: those given when the module was generated)",
    )
    options.add_argument(
        "--thinking",
        dest="thinking",
        action="store_true",
        default=thinking,
        help="the prompt was rendered with thinking switched on",
    )
    options.add_argument(
        "--no-thinking",
        dest="thinking",
        action="store_false",
        help="the prompt was rendered with thinking switched off",
    )
    options.add_argument(
        "--strict",
        action="store_true",
        help="read only what the template writes: no tolerance for what models write otherwise",
    )
    options.add_argument(
        "--inline-reasoning",
        action="store_true",
        help="leave reasoning in content, its markers as written (llama-server's --reasoning-format none)",
    )
    options.add_argument(
        "--continue",
        dest="continuing",
        metavar="FILE",
        help="JSON file with the partial assistant message the prompt ends inside (continue_final_message): "
        "the output continues it, and the message printed is the whole message",
    )
    args = options.parse_args(argv)
    if args.tools:
        try:
            with open(args.tools, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as exc:
            print(f"Error: {args.tools}: cannot read tools: {exc}", file=sys.stderr)
            return 2
        if isinstance(loaded, dict) and "tools" in loaded:
            loaded = loaded["tools"]
        if not isinstance(loaded, list):
            print(f"Error: {args.tools}: tools must be a JSON list of tool objects", file=sys.stderr)
            return 2
        tools = loaded
    try:
        continuing = read_prefill(args.continuing) if args.continuing else None
    except PrefillError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    parser = Parser(
        shape,
        tools,
        thinking=args.thinking,
        strict=args.strict,
        inline_reasoning=args.inline_reasoning,
        continuing=continuing,
    )
    out = sys.stdout

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    if hasattr(out, "reconfigure"):
        out.reconfigure(encoding="utf-8")
    source = sys.stdin.buffer
    if args.stream:
        parse_stream(parser, source, write)
    elif args.jsonl:
        problem = parse_lines(parser, source, write)
        if problem:
            print(f"Error: {problem}", file=sys.stderr)
            return 2
    else:
        out.write(json.dumps(parse_bytes(parser, source.read()), ensure_ascii=False, indent=2) + "\n")
    return 0
