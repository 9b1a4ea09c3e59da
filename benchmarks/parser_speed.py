"""Parser speed on every corpus format: time per kB from 10 kB to 1 MB (10 MB with --sizes), batch and
streamed, the cost of streaming one character at a time against one batch parse, adversarial shapes,
and the median parse of the short round-trip outputs.

The short outputs are also streamed one and four characters at a time (a token is about four), as a
ratio to one batch parse, beside a re-parse-per-token baseline measured in the same run: the approach
of servers that parse the whole accumulated text again on every token (llama-server does this),
emulated with our own batch parser on growing prefixes.

The short round-trip outputs are also parsed by llama.cpp's own C++ parser in the same run, through
its public API as llama-server calls it (benchmarks/reference/, built with
`bash .ci/build-llama-server template-analyzer-reference-bench`; --reference names another build):
per template and overall, the median over outputs of the best of 5 parses, ours beside llama.cpp's,
and the ratio. llama.cpp gets each output without the stop string that ends it, as llama-server hands
generated text to its parser (ours parses it with the stop), and its thinking switch set the way that
renders the prompt the outputs were written after. llama.cpp's figure counts only the outputs
it read right (the same calls, arguments and content); the others, and the templates it fails on, are
counted and listed. Without the harness the
figure recorded once elsewhere (22 us, llama.cpp 0c1e57098) is printed, labelled as recorded.

With --baseline REV, the short round-trip outputs are also parsed by the runtime at git revision REV,
loaded in this process beside ours (tests/helpers/baseline_runtime.py: REV's own lowering of REV's own
golden descriptions, and REV's analyzer/runtime as a package of another name), the two taking turns
in BASELINE_ROUNDS rounds, which goes first alternating from round to round: per template and overall,
the median over outputs of each output's best batch parse and best one-character stream, and the
median Parser construction, current beside baseline with the ratio; and how many outputs the two read
differently (content, reasoning, calls' names and arguments, errors' kinds; ids and warnings aside).
--only baseline runs that comparison alone.

Targets (issue 13): per-kB time flat within 1.5x from 10 kB up, batch and streamed; one-character
streaming at most 3x a batch parse; a short output within 2x of llama.cpp's.

Usage: python3 benchmarks/parser_speed.py [--sizes 10000,100000,1000000] [--template NAME ...] [--quick]
       [--reference BINARY] [--baseline REV [--only baseline]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import baseline_runtime, reference_bench
from helpers.golden import compile_for, golden_descriptions
from helpers.roundtrip import CASES, USER, case_outputs
from helpers.roundtrip import TOOLS as ROUND_TRIP_TOOLS

from analyzer import corpus
from analyzer.backends.parser import Parser
from analyzer.description import FormatDescription
from analyzer.errors import RenderError
from analyzer.lower import lower
from analyzer.render.conversation import Renderer
from analyzer.render.sandbox import RenderLimits
from analyzer.render.session import Session
from analyzer.runtime import shape as runtime_shape
from analyzer.runtime import stream as runtime_stream
from analyzer.sources import load_template

# Recorded once at llama.cpp 0c1e57098 on another run; printed only where the harness is not built.
LLAMA_CPP_RECORDED_SHORT_MEDIAN_US = 22.0
SHORT_REPEAT = 5
SHORT_ROUNDS = 3
# Even, so that each side goes first in as many rounds as the other.
BASELINE_ROUNDS = 4
# Outputs read differently by the two runtimes that a run lists (all are counted).
BASELINE_DIFFERENCES_LISTED = 8
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
    # A sample is our own render, so the sandbox's bounds (two million characters, two seconds) are
    # raised to fit the sizes asked for.
    renderer = Renderer.for_template(
        load_template(str(corpus.fetch() / f"{description.template.name}.jinja")),
        description,
        limits=RenderLimits(max_chars=4 * size + 1_000_000, seconds=60.0, budget_seconds=120.0),
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
    return best_of_each([fn], repeat)[0]


def best_of_each(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Each function's best time over ``repeat`` rounds, the functions taking turns within a round: a
    burst of load on a shared machine then slows one round of all of them, not every run of one,
    and the ratios between them (one size to another, streaming to batch) stay fair."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[k] = min(times[k], time.perf_counter() - start)
    return times


def streamed(parser: Any, text: str, size: int) -> None:  # (ours, or a baseline runtime's)
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


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not comma-separated whole numbers") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be above 0")
    return sizes


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument(
        "--sizes", type=_sizes, default="10000,100000,1000000", help="comma-separated output sizes in bytes"
    )
    options.add_argument("--template", action="append", help="only these corpus templates")
    options.add_argument("--quick", action="store_true", help="one repeat per figure")
    reference_bench.add_reference_option(options)
    options.add_argument(
        "--baseline",
        metavar="REV",
        help="also time the short outputs with the parser runtime at this git revision, in this process",
    )
    options.add_argument(
        "--only", choices=["baseline"], help="run only this part (baseline: the comparison --baseline asks for)"
    )
    args = options.parse_args()
    sizes = args.sizes
    repeat = 1 if args.quick else 3
    descriptions = [
        d for d in golden_descriptions(with_calls=True) if not args.template or d.template.name in args.template
    ]
    unknown = sorted(set(args.template or ()) - {d.template.name for d in descriptions})
    if unknown:
        options.error(f"--template {', '.join(unknown)}: no corpus template with calls is named so")
    if args.only == "baseline" and args.baseline is None:
        options.error("--only baseline: give the revision to compare with as --baseline REV")
    baseline = None
    if args.baseline is not None:
        # Loaded up front (a few seconds), so that a revision that cannot serve is an error before
        # the long parts run, not after.
        try:
            baseline = baseline_runtime.load(args.baseline, [d.template.name for d in descriptions])
        except baseline_runtime.BaselineError as exc:
            options.error(f"--baseline {exc}")
    if args.only == "baseline":
        assert baseline is not None
        against_baseline(baseline, descriptions)
        return

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
        timed = best_of_each(
            [partial(way, text) for text in texts for way in (parser.parse, partial(streamed, parser, size=64))],
            repeat,
        )
        for k, text in enumerate(texts):
            kb = len(text) / 1000
            batch, stream = timed[2 * k] / kb * 1e6, timed[2 * k + 1] / kb * 1e6
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
        # A server hands the parser one token at a time: about four characters of English or code.
        one_batch, one_char, one_token = best_of_each(
            [partial(parser.parse, small), partial(streamed, parser, small, 1), partial(streamed, parser, small, 4)],
            repeat,
        )
        char = one_char / one_batch
        token = one_token / one_batch
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
            (
                later / earlier
                for series in (batch_per_kb, stream_per_kb)
                for k, earlier in enumerate(series)
                for later in series[k + 1 :]
            ),
            default=1.0,  # one size: nothing to grow from
        )
        worst_flat = max(worst_flat, growth)
        print(f"  {name:32} " + " | ".join(row) + f"  growth {growth:.2f}", flush=True)
    print(f"worst growth of the time per kB, corpus formats and adversarial shapes: {worst_flat:.2f} (target <= 1.5)")

    short_outputs(args.reference)
    short_streaming()
    if baseline is not None:
        against_baseline(baseline, descriptions)


def short_outputs(reference: Path | None) -> None:
    """The round-trip outputs of every corpus template with calls, parsed by us and by llama.cpp in this
    run: each output's best of SHORT_REPEAT parses on both sides, in SHORT_ROUNDS rounds that take turns
    (all of ours, then all of llama.cpp's, again), best over the rounds. A shared machine's load comes
    and goes over minutes; measured once each, one side can catch a slow spell the other missed."""
    # template -> [(case, output as llama.cpp gets it, our text, parser)]
    outputs: dict[str, list[tuple[str, str, str, Parser]]] = {}
    prompts = []
    for description in golden_descriptions(with_calls=True):
        parser = Parser(description, ROUND_TRIP_TOOLS)
        compiled = compile_for(description, corpus.fetch())
        extra: dict[str, object] = {name: "" for name in description.bound_variables}
        prompts.append(compiled.render([USER], tools=ROUND_TRIP_TOOLS, add_generation_prompt=True, extra=extra))
        outputs[description.template.name] = [
            (case, reference_bench.as_generated(text, description.turn.stop), text, parser)
            for case, text in case_outputs(description, compiled, CASES)
        ]
    binary = reference_bench.reference_binary(reference)
    jobs = [
        {
            "template": str(corpus.fetch() / f"{name}.jinja"),
            "tools": ROUND_TRIP_TOOLS,
            "messages": [USER],
            "outputs": [generated for _, generated, _, _ in cases],
            "repeat": SHORT_REPEAT,
            # What a client asking for the parallel-calls case sends (the template's default otherwise).
            "parallel_tool_calls": True,
        }
        for name, cases in outputs.items()
    ]
    if binary is not None:
        reference_bench.match_thinking(binary, jobs, prompts, USER["content"])
    # template -> [(case, output as llama.cpp gets it, our best parse in us)]
    ours: dict[str, list[tuple[str, str, float]]] = {}
    answers: list[dict[str, Any]] = []
    for _ in range(SHORT_ROUNDS if binary is not None else 1):
        for name, cases in outputs.items():
            timed = [best(partial(parser.parse, text), SHORT_REPEAT) * 1e6 for _, _, text, parser in cases]
            earlier = [us for _, _, us in ours.get(name, [])] or [float("inf")] * len(cases)
            ours[name] = [
                (case, generated, min(us, before))
                for (case, generated, _, _), us, before in zip(cases, timed, earlier, strict=True)
            ]
        if binary is not None:
            answers = _best_answers(answers, reference_bench.run_reference(binary, jobs))
    all_ours = [us for outputs in ours.values() for _, _, us in outputs]
    median = statistics.median(all_ours)
    print(
        f"\nshort outputs: {len(all_ours)} round-trip cases over {len(ours)} templates, "
        f"median batch parse {median:.0f} us"
    )
    if binary is None:
        print(reference_bench.missing_line())
        print(
            f"  recorded, not measured here: llama.cpp {LLAMA_CPP_RECORDED_SHORT_MEDIAN_US:.0f} us (0c1e57098, "
            f"another run): {median / LLAMA_CPP_RECORDED_SHORT_MEDIAN_US:.1f}x; target <= 2x"
        )
        return
    print(
        f"llama.cpp measured in this run ({binary}); us, median over a template's outputs of the best of "
        f"{SHORT_REPEAT} parses in each of {SHORT_ROUNDS} rounds, taking turns with ours"
    )
    print(f"{'template':44} {'outputs':>7} {'ours':>7} {'llama.cpp':>9} {'read':>5} {'ratio':>6}")
    failed_templates: list[str] = []
    misread: list[str] = []
    paired_ours: list[float] = []
    paired_llama: list[float] = []
    for (name, outputs), answer in zip(ours.items(), answers, strict=True):
        mine = statistics.median(us for _, _, us in outputs) if outputs else float("nan")
        if "error" in answer:
            failed_templates.append(f"{name} ({answer['error'][:80]})")
            print(f"{name:44} {len(outputs):7} {mine:7.0f} {'failed':>9}")
            continue
        theirs = []
        for (case, _, us), parsed in zip(outputs, answer["outputs"], strict=True):
            content, calls = CASES[case]
            wrong = reference_bench.read_right(parsed, content, calls)
            if wrong:
                misread.append(f"{name} / {case}: {wrong[:100]}")
                continue
            theirs.append(parsed["parse_us"]["best"])
            paired_ours.append(us)
            paired_llama.append(parsed["parse_us"]["best"])
        if theirs:
            llama = statistics.median(theirs)
            print(
                f"{name:44} {len(outputs):7} {mine:7.0f} {llama:9.0f} {len(theirs):5} {mine / llama:5.1f}x", flush=True
            )
        else:
            print(f"{name:44} {len(outputs):7} {mine:7.0f} {'-':>9} {0:5}")
    print(
        f"llama.cpp failed on {len(failed_templates)} of {len(ours)} templates and misread {len(misread)} of the "
        f"outputs of the others; those are left out of its median:"
    )
    for line in failed_templates + misread:
        print(f"  {line}")
    if paired_llama:
        ours_median, llama_median = statistics.median(paired_ours), statistics.median(paired_llama)
        print(
            f"over the {len(paired_llama)} outputs llama.cpp read right: median ours {ours_median:.0f} us, llama.cpp "
            f"{llama_median:.0f} us, {ours_median / llama_median:.1f}x (target <= 2x); ours over all "
            f"{len(all_ours)}: {median:.0f} us"
        )


def _best_answers(earlier: list[dict[str, Any]], latest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """llama.cpp's latest answers, each output's parse time the best of this round's and the earlier
    rounds' (what it reads does not change from round to round)."""
    if not earlier:
        return latest
    for before, now in zip(earlier, latest, strict=True):
        for old, new in zip(before.get("outputs", []), now.get("outputs", []), strict=True):
            if "parse_us" in old and "parse_us" in new:  # (an output it failed on is not timed)
                new["parse_us"]["best"] = min(new["parse_us"]["best"], old["parse_us"]["best"])
    return latest


def reparsed(parser: Parser, text: str, size: int) -> None:
    """What a server that parses the whole text again on every token does: one batch parse per prefix."""
    for end in range(size, len(text) + size, size):
        parser.parse(text[:end])


def short_streaming() -> None:
    """The round-trip outputs streamed one and four characters at a time, and re-parsed per four, each
    over one batch parse of the same output (best of SHORT_REPEAT each)."""
    ratios: dict[str, dict[str, list[float]]] = {}
    for description in golden_descriptions(with_calls=True):
        parser = Parser(description, ROUND_TRIP_TOOLS)
        per_way = ratios.setdefault(description.template.name, {"1-char": [], "4-char": [], "re-parse": []})
        for _, text in case_outputs(description, compile_for(description, corpus.fetch()), CASES):
            batch, one, four, again = best_of_each(
                [
                    partial(parser.parse, text),
                    partial(streamed, parser, text, 1),
                    partial(streamed, parser, text, 4),
                    partial(reparsed, parser, text, 4),
                ],
                SHORT_REPEAT,
            )
            per_way["1-char"].append(one / batch)
            per_way["4-char"].append(four / batch)
            per_way["re-parse"].append(again / batch)
    print("\nshort outputs streamed, over one batch parse: median over all outputs | the worst template's median")
    for way in ("1-char", "4-char", "re-parse"):
        overall = statistics.median(r for per_way in ratios.values() for r in per_way[way])
        worst = max(ratios, key=lambda name: statistics.median(ratios[name][way]))
        label = {"1-char": "one character at a time", "4-char": "four at a time", "re-parse": "re-parsed per four"}
        print(
            f"  {label[way]:24} {overall:5.1f}x | {statistics.median(ratios[worst][way]):5.1f}x ({worst})"
            + ("  target <= 3x" if way == "1-char" else "")
        )
    over = sorted(name for name, per_way in ratios.items() if statistics.median(per_way["1-char"]) > 3)
    print(
        f"  templates over 3x one character at a time: {len(over)} of {len(ratios)}"
        + (f": {', '.join(over)}" if over else "")
    )


def against_baseline(baseline: baseline_runtime.Baseline, descriptions: list[FormatDescription]) -> None:
    """The short round-trip outputs parsed by our runtime and by the baseline's, in turns: in each of
    BASELINE_ROUNDS rounds every output's best of SHORT_REPEAT batch parses and one-character streams,
    and every template's best of SHORT_REPEAT Parser constructions, on both sides (which side goes
    first alternating from round to round), each the best over the rounds."""
    revision = baseline.commit[:9]
    # template -> (our parser, the baseline's, [(case, output)]); both built from a shape dict, so that
    # the set-up compared is the same step on both sides.
    jobs: dict[str, tuple[Callable[[], Any], Callable[[], Any], list[tuple[str, str]]]] = {}
    skipped: list[str] = []
    for description in descriptions:
        name = description.template.name
        if name not in baseline.shapes:
            skipped.append(f"{name} ({baseline.failed.get(name, f'no golden/{name}.json at {revision}')[:100]})")
            continue
        ours_shape = runtime_shape.shape_from_dict(runtime_shape.shape_to_dict(lower(description)))
        their_shape = baseline.shape(name)
        jobs[name] = (
            partial(runtime_stream.Parser, ours_shape, ROUND_TRIP_TOOLS),
            partial(baseline.parser, their_shape, ROUND_TRIP_TOOLS),
            list(case_outputs(description, compile_for(description, corpus.fetch()), CASES)),
        )
    parsers = {name: (make_ours(), make_theirs()) for name, (make_ours, make_theirs, _) in jobs.items()}
    differ: list[str] = []
    agree: dict[str, list[bool]] = {}
    for name, (_, _, cases) in jobs.items():
        ours, theirs = parsers[name]
        agree[name] = []
        for case, text in cases:  # (also the warm-up of both sides)
            different = baseline_runtime.difference(ours.parse(text), theirs.parse(text))
            agree[name].append(different is None)
            if different is not None:
                differ.append(f"{name} / {case}: {different}")
    inf = float("inf")
    # template -> per output [ours, theirs] best batch parse, and best one-character stream, in us
    batch = {name: [[inf, inf] for _ in cases] for name, (_, _, cases) in jobs.items()}
    char = {name: [[inf, inf] for _ in cases] for name, (_, _, cases) in jobs.items()}
    setup = {name: [inf, inf] for name in jobs}
    for round_ in range(BASELINE_ROUNDS):
        order = (0, 1) if round_ % 2 == 0 else (1, 0)
        for name, (make_ours, make_theirs, cases) in jobs.items():
            pair = parsers[name]
            timed = best_of_each([(make_ours, make_theirs)[side] for side in order], SHORT_REPEAT)
            for side, us in zip(order, timed, strict=True):
                setup[name][side] = min(setup[name][side], us * 1e6)
            for k, (_, text) in enumerate(cases):
                for way, into in ((partial(_parsed, text=text), batch), (partial(streamed, text=text, size=1), char)):
                    timed = best_of_each([partial(way, pair[side]) for side in order], SHORT_REPEAT)
                    for side, us in zip(order, timed, strict=True):
                        into[name][k][side] = min(into[name][k][side], us * 1e6)

    total = sum(len(cases) for _, _, cases in jobs.values())
    print(
        f"\nshort outputs against the runtime at {revision}, loaded in this process: {total} round-trip "
        f"outputs over {len(jobs)} templates; us, each output's best of {SHORT_REPEAT} in each of "
        f"{BASELINE_ROUNDS} rounds (the sides taking turns, which goes first alternating), median over a "
        "template's outputs; set-up: the best Parser construction"
    )
    print(
        f"{'template':44} {'outputs':>7} {'batch':>7} {'base':>7} {'ratio':>6} {'1-char':>7} {'base':>7} "
        f"{'ratio':>6} {'set-up':>7} {'base':>7} {'ratio':>6} {'differ':>6}"
    )

    def cells(pairs: list[list[float]]) -> str:
        ours, theirs = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        return f"{ours:7.0f} {theirs:7.0f} {ours / theirs:5.2f}x"

    for name, (_, _, cases) in jobs.items():
        if not cases:
            print(f"{name:44} {0:7} (no round-trip output)")
            continue
        print(
            f"{name:44} {len(cases):7} {cells(batch[name])} {cells(char[name])} {cells([setup[name]])} "
            f"{agree[name].count(False):6}",
            flush=True,
        )
    every_batch = [p for pairs in batch.values() for p in pairs]
    every_char = [p for pairs in char.values() for p in pairs]
    agreeing = [
        (b, c) for name in jobs for b, c, same in zip(batch[name], char[name], agree[name], strict=True) if same
    ]
    print(f"overall, median over the {len(every_batch)} outputs (ratio: current / baseline):")
    for label, pairs in (("batch parse", every_batch), ("one character at a time", every_char)):
        if pairs:
            print(f"  {label:24} {_overall(pairs)}")
    if differ and agreeing:
        print(f"  over the {len(agreeing)} outputs both read alike:")
        print(f"  {'batch parse':24} {_overall([b for b, _ in agreeing])}")
        print(f"  {'one character at a time':24} {_overall([c for _, c in agreeing])}")
    if setup:
        print(f"  {'set-up (Parser())':24} {_overall(list(setup.values()), 'template')}")
    print(
        f"outputs the two read differently (content, reasoning, calls' names and arguments, errors' kinds; ids "
        f"and warnings aside): {len(differ)} of {total}" + (":" if differ else "")
    )
    for line in differ[:BASELINE_DIFFERENCES_LISTED]:
        print(f"  {line}")
    if len(differ) > BASELINE_DIFFERENCES_LISTED:
        print(f"  ... and {len(differ) - BASELINE_DIFFERENCES_LISTED} more")
    if skipped:
        print(f"templates the baseline has no shape for, left out: {len(skipped)}")
        for line in skipped:
            print(f"  {line}")


def _parsed(parser: Any, text: str) -> None:
    parser.parse(text)


def _overall(pairs: list[list[float]], each: str = "output") -> str:
    """Current and baseline medians, their ratio, and the median of the ratios item by item."""
    ours, theirs = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[0] / p[1] for p in pairs)
    return (
        f"current {ours:7.1f} us, baseline {theirs:7.1f} us, {ours / theirs:5.2f}x "
        f"(median per-{each} ratio {ratio:.2f}x)"
    )


if __name__ == "__main__":
    main()
