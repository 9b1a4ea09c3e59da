"""Parser throughput: batch, and streaming one character at a time, on a ~100 kB output.

Printed beside a re-parse-per-token baseline measured in the same run: the approach of servers that
parse the whole accumulated text again on every token (llama-server does this), emulated with our own
batch parser on growing prefixes. Target: streaming one character at a time costs at most 3x a batch
parse of the same text.

Usage: python3 benchmarks/parser_speed.py [--size BYTES] [--template NAME ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from analyzer.backends.parser import Parser
from analyzer.description import loads

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
DEFAULT_TEMPLATES = ["Qwen-Qwen2.5-7B-Instruct", "Qwen3-Coder", "moonshotai-Kimi-K2", "openai-gpt-oss-120b"]
TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "Write a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string", "description": "Where"},
                                     "content": {"type": "string", "description": "What"}},
    "required": ["path", "content"]}}}]


def sample_output(template: str, size: int) -> str:
    """Content, then calls whose arguments carry long text, written the way the template writes them."""
    from analyzer.render.engines import compile_template
    from analyzer.render.session import Session
    from analyzer import corpus
    from analyzer.sources import load_template

    description = loads((GOLDEN / f"{template}.json").read_text(encoding="utf-8"))
    compiled = compile_template(load_template(str(corpus.fetch() / f"{template}.jinja")))
    body = "def f(x):\n    return x * 2  # <tag> \"quoted\"\n" * (size // 50 // 4)
    calls = [{"id": f"call{i}", "type": "function", "function": {
        "name": "write_file", "arguments": {"path": f"src/m{i}.py", "content": body}}} for i in range(4)]
    if description.capabilities.parallel_calls.status != "yes":
        calls = calls[:1]
    messages = [{"role": "user", "content": "Write the files."}]
    prompt = compiled.render(messages, tools=TOOLS, add_generation_prompt=True)
    turn = {"role": "assistant", "content": "Writing them now.", "tool_calls": calls}
    full = compiled.render(messages + [turn], tools=TOOLS)
    return full[Session.cut(prompt, full):]


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser_args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser_args.add_argument("--size", type=int, default=100_000)
    parser_args.add_argument("--template", action="append")
    args = parser_args.parse_args()
    print(f"{'template':36} {'bytes':>8} {'batch MB/s':>11} {'stream 1-char':>14} {'ratio':>6} "
          f"{'re-parse/token':>15} {'ratio':>8}")
    for template in args.template or DEFAULT_TEMPLATES:
        text = sample_output(template, args.size)
        parser = Parser(loads((GOLDEN / f"{template}.json").read_text(encoding="utf-8")), TOOLS)
        message = parser.parse(text)
        assert message.tool_calls, f"{template}: the sample output parsed to no calls"

        batch = timed(lambda: parser.parse(text))

        def stream() -> None:
            s = parser.stream()
            for ch in text:
                s.feed(ch)
            s.finish()

        streaming = timed(stream, repeat=1)
        # Re-parsing every prefix is quadratic: measure it on a 5 kB slice of tokens and extrapolate
        # (cost grows with the square of the length), saying so in the output.
        step = 4  # characters per token, roughly
        small = text[:5000]

        def reparse() -> None:
            for end in range(step, len(small) + step, step):
                parser.parse(small[:end])

        reparse_small = timed(reparse, repeat=1)
        reparse_full = reparse_small * (len(text) / len(small)) ** 2
        print(f"{template:36} {len(text):8d} {len(text) / batch / 1e6:11.2f} {streaming:13.3f}s "
              f"{streaming / batch:6.1f} {reparse_full:14.1f}s {reparse_full / batch:8.0f}")
    print("ratio = time / batch parse time; target: stream 1-char ratio <= 3.0")
    print("re-parse/token: every 4 characters the whole text so far is parsed again (extrapolated from 5 kB)")


if __name__ == "__main__":
    main()
