"""Parser speed on every corpus format: time per kB from 10 kB to 1 MB (10 MB with --sizes), batch and
streamed, the cost of streaming one character at a time against one batch parse, adversarial shapes,
and the median parse of the short round-trip outputs.

Printed beside a re-parse-per-token baseline measured in the same run: the approach of servers that
parse the whole accumulated text again on every token (llama-server does this), emulated with our own
batch parser on growing prefixes. llama.cpp's own C++ parser takes a median 22 us per short corpus
output (measured at 0c1e57098 and recorded in shared/reference; it is not rebuilt here).

Targets (issue 13): per-kB time flat within 1.5x from 10 kB up, batch and streamed; one-character
streaming at most 3x a batch parse; a short output within 2x of llama.cpp's 22 us.

Usage: python3 benchmarks/parser_speed.py [--sizes 10000,100000,1000000] [--template NAME ...] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.golden import compile_for, golden_descriptions
from helpers.roundtrip import CASES, case_outputs
from helpers.roundtrip import TOOLS as ROUND_TRIP_TOOLS

from analyzer import corpus
from analyzer.backends.parser import Parser
from analyzer.description import FormatDescription
from analyzer.errors import RenderError
from analyzer.render.conversation import Renderer
from analyzer.render.session import Session
from analyzer.sources import load_template

LLAMA_CPP_SHORT_MEDIAN_US = 22.0
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where"},
                    "content": {"type": "string", "description": "What"},
                },
                "required": ["path", "content"],
            },
        },
    }
]


def sample_output(description: FormatDescription, size: int) -> str:
    """Content, then calls whose arguments carry long text, written the way the template writes them."""
    renderer = Renderer.for_template(
        load_template(str(corpus.fetch() / f"{description.template.name}.jinja")), description
    )
    body = 'def f(x):\n    return x * 2  # <tag> "quoted" (a, b)\n' * max(1, size // 50 // 4)
    count = 4 if description.capabilities.parallel_calls.status == "yes" else 1
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "write_file", "arguments": {"path": f"src/m{i}.py", "content": body}},
        }
        for i in range(count)
    ]
    messages = [{"role": "user", "content": "Write the files."}]
    prompt = renderer.render(messages, tools=TOOLS, generation_prompt=True)
    full = renderer.render(
        [*messages, {"role": "assistant", "content": "Writing them now.", "tool_calls": calls}], tools=TOOLS
    )
    return full[Session.cut(prompt, full) :]


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def streamed(parser: Parser, text: str, size: int) -> None:
    stream = parser.stream()
    feed = stream.feed
    for at in range(0, len(text), size):
        feed(text[at : at + size])
    stream.finish()


def adversarial(size: int) -> dict[str, tuple[str, str]]:
    """Shapes that were quadratic: one long bare-JSON call, the same cut short with text after it, a
    long call cut short, reasoning that keeps mentioning the word calls start with, and many short
    calls in one output (each one read used to copy the rest of the buffer)."""
    return {
        "long bare JSON call": (
            "meta-llama-Llama-3.1-8B-Instruct",
            '{"name": "search", "parameters": {"query": "' + "x" * size + '"}}',
        ),
        "unterminated call, then text": (
            "meta-llama-Llama-3.1-8B-Instruct",
            '{"name": "search", "parameters": {"query": "' + "y" * size + " and text",
        ),
        "long call cut short": (
            "Qwen-Qwen2.5-7B-Instruct",
            '<tool_call>\n{"name": "search", "arguments": {"query": "' + "y" * size,
        ),
        "reasoning naming the trigger": (
            "LFM2.5-8B-A1B",
            "<think>" + "mention <|tool_call_start|> here. " * (size // 34) + "</think>ok",
        ),
        "reasoning naming a call": (
            "openai-gpt-oss-120b",
            "<|channel|>analysis<|message|>" + "I will call to=functions.search maybe. " * (size // 40) + "<|end|>",
        ),
        "thousands of short calls": (
            "Qwen-Qwen2.5-7B-Instruct",
            '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>\n' * max(1, size // 73),
        ),
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated output sizes in bytes")
    options.add_argument("--template", action="append", help="only these corpus templates")
    options.add_argument("--quick", action="store_true", help="one repeat per figure")
    args = options.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    repeat = 1 if args.quick else 3
    descriptions = [
        d for d in golden_descriptions(with_calls=True) if not args.template or d.template.name in args.template
    ]

    def ROUND(n: float) -> str:
        return f"{n:8.0f}"

    print(
        "us per kB, batch | streamed in 64-byte chunks, at each size; 1-char, 4-char: streaming one or four "
        "characters at a time / batch"
    )
    print(
        f"{'template':44} "
        + " ".join(f"{size // 1000:>7}k b {size // 1000:>6}k s" for size in sizes)
        + f" {'growth':>6} {'1-char':>7} {'4-char':>7}"
    )
    worst_flat, worst_char, worst_token, per_char = 0.0, 0.0, 0.0, []
    for description in descriptions:
        parser = Parser(description, TOOLS)
        cells, batch_per_kb, stream_per_kb = [], [], []
        try:
            texts = [sample_output(description, size) for size in sizes]
        except RenderError as exc:
            print(f"{description.template.name:44} (the template does not render the sample: {exc.message[:60]})")
            continue
        parser.parse(texts[0])  # warm: compiled patterns and caches are not what is measured
        for text in texts:
            kb = len(text) / 1000
            batch = best(partial(parser.parse, text), repeat) / kb * 1e6
            stream = best(partial(streamed, parser, text, 64), repeat) / kb * 1e6
            batch_per_kb.append(batch)
            stream_per_kb.append(stream)
            cells.append(f"{ROUND(batch)} {ROUND(stream)}")
        # Growth of the time per kB from a size to any larger one (a fixed cost per parse makes small
        # outputs dearer per kB, which is no growth).
        flat = (
            max(
                later / earlier
                for series in (batch_per_kb, stream_per_kb)
                for k, earlier in enumerate(series)
                for later in series[k + 1 :]
            )
            if len(sizes) > 1
            else 1.0
        )
        small = texts[min(1, len(texts) - 1)]
        one_char = best(partial(streamed, parser, small, 1), 1)
        one_batch = best(partial(parser.parse, small), repeat)
        char = one_char / one_batch
        # A server hands the parser one token at a time: about four characters of English or code.
        token = best(partial(streamed, parser, small, 4), 1) / one_batch
        per_char.append(one_char / len(small) * 1e6)
        worst_flat, worst_char, worst_token = max(worst_flat, flat), max(worst_char, char), max(worst_token, token)
        print(
            f"{description.template.name:44} " + " ".join(cells) + f" {flat:5.2f} {char:6.1f}x {token:6.1f}x",
            flush=True,
        )
    print(
        f"worst growth of the time per kB {worst_flat:.2f} (target <= 1.5); worst one-character streaming "
        f"{worst_char:.1f}x batch (target <= 3.0), four characters at a time {worst_token:.1f}x; one-character "
        "streaming costs a median "
        f"{statistics.median(per_char):.2f} us per character"
    )

    print(
        "\nadversarial shapes, us per kB: batch | streamed in 64-byte chunks at each size, growth, and one-character "
        "streaming at the first two sizes"
    )
    for name, _ in adversarial(10).items():
        row, batch_per_kb, stream_per_kb = [], [], []
        for k, size in enumerate(sizes):
            template, text = adversarial(size)[name]
            parser = Parser(
                next(d for d in golden_descriptions(with_calls=True) if d.template.name == template), ROUND_TRIP_TOOLS
            )
            kb = len(text) / 1000
            batch_per_kb.append(best(partial(parser.parse, text), repeat) / kb * 1e6)
            stream_per_kb.append(best(partial(streamed, parser, text, 64), repeat) / kb * 1e6)
            row.append(f"{batch_per_kb[-1]:7.0f} {stream_per_kb[-1]:7.0f}")
            if k < 2:
                row[-1] += f" {best(partial(streamed, parser, text, 1), 1) / kb * 1e6:7.0f}"
        growth = max(
            later / earlier
            for series in (batch_per_kb, stream_per_kb)
            for k, earlier in enumerate(series)
            for later in series[k + 1 :]
        )
        worst_flat = max(worst_flat, growth)
        print(f"  {name:32} " + " | ".join(row) + f"  growth {growth:.2f}", flush=True)
    print(f"worst growth of the time per kB, corpus formats and adversarial shapes: {worst_flat:.2f} (target <= 1.5)")

    times = []
    for description in golden_descriptions(with_calls=True):
        parser = Parser(description, ROUND_TRIP_TOOLS)
        for _, text in case_outputs(description, compile_for(description, corpus.fetch()), CASES):
            times.append(best(partial(parser.parse, text), 5))
    median = statistics.median(times) * 1e6
    print(
        f"\nshort outputs: {len(times)} round-trip cases, median batch parse {median:.0f} us "
        f"({median / LLAMA_CPP_SHORT_MEDIAN_US:.1f}x llama.cpp's {LLAMA_CPP_SHORT_MEDIAN_US:.0f} us; target <= 2x)"
    )


if __name__ == "__main__":
    main()
