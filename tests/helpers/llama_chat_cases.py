"""llama.cpp's own parse expectations (its ``tests/test-chat.cpp``) as cases for our parser.

The file is read at test time from the pinned sdist the corpus comes from (``corpus.SDIST_NAME``, beside
the folder ``corpus.fetch()`` returns), in memory, with ``common/chat.h`` and ``common/common.h`` for the
structs and enums it uses; nothing of it is copied into this repository. ``helpers.cpp_eval`` runs the
functions that hold its test chains (``tst.test(INPUT).tools(...)....expect(...).run()``), so every named
tool, message, helper function and builder method is resolved from the file itself; each ``run()`` is one
case. A chain the reading cannot resolve is reported (``Extraction.unresolved``), never dropped.

``run_case`` parses a case's input with our parser (batch, and streamed one character at a time) and
compares with the expectation by llama.cpp's own rule (``assert_msg_equals`` with whitespace differences
ignored): content and reasoning after stripping, the calls' count, names and arguments as JSON values,
and ids only where the expectation has one (llama.cpp leaves an id empty when the model writes none;
we make one).

    PYTHONPATH=. python3 tests/helpers/llama_chat_cases.py [--template SUBSTR] [--failures]

prints the pass figure, overall and per template, and with ``--failures`` each failing case.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import hashlib
import json
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import `helpers` as pytest does (tests/ on the path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyzer import corpus
from analyzer.analysis import analyze
from analyzer.backends.parser import Message, Parser
from analyzer.description import STANDARD_SWITCH, FormatDescription
from analyzer.render.conversation import thinking_switch_of
from analyzer.sources import load_template
from helpers.cpp_eval import (
    EnumValue,
    Instance,
    Interpreter,
    Program,
    Span,
    Token,
    Unresolved,
    Unsupported,
    method_call_sites,
)

_ROOT = corpus.SDIST_NAME.removesuffix(".tar.gz") + "/vendor/llama.cpp/"
TEST_MEMBER = _ROOT + "tests/test-chat.cpp"
HEADER_MEMBERS = (_ROOT + "common/chat.h", _ROOT + "common/common.h")
TEMPLATE_PREFIX = "models/templates/"
# llama.cpp's isspace() in the C locale: what string_strip removes
_C_SPACE = " \t\n\v\f\r"


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class ExpectedCall:
    name: str
    arguments: str  # as the test writes it (compared as a JSON value)
    id: str  # "" where the test expects none


@dataclass(frozen=True)
class LlamaCase:
    """One parse expectation: the request llama.cpp's test builds, the model output, the message it expects."""

    template: str  # file name in the corpus
    line: int  # the line of its `.test(` in test-chat.cpp
    input: str
    enable_thinking: bool
    reasoning_format: str  # "none", "auto", "deepseek", "deepseek_legacy"
    tools: tuple[dict[str, Any], ...]
    parallel_tool_calls: bool
    is_partial: bool
    json_schema: Any  # the parsed schema, or None
    tool_choice: str  # "auto", "required", "none"
    messages: tuple[dict[str, Any], ...]
    add_generation_prompt: bool
    continuation: str | None  # continue_final_message: None, "auto", "content", "reasoning"
    content: str
    reasoning_content: str
    tool_calls: tuple[ExpectedCall, ...]

    @property
    def id(self) -> str:
        return f"{self.template.removesuffix('.jinja')}:{self.line}"


@dataclass(frozen=True)
class UnresolvedChain:
    line: int
    template: str | None
    reason: str


@dataclass(frozen=True)
class Extraction:
    cases: tuple[LlamaCase, ...]  # on corpus templates
    not_in_corpus: tuple[tuple[str, int], ...]  # (template, cases) the corpus does not hold
    unresolved: tuple[UnresolvedChain, ...]
    written: int  # `.test(` chains written in the source (outside comments)
    reached: int  # of them, how many the reading ran at least once
    commented: int  # `.test(` in comments (not chains)


def sdist_path(corpus_dir: Path | None = None) -> Path | None:
    """The pinned sdist beside the corpus folder, or None where it is not there (or not the pinned one)."""
    folder = corpus_dir if corpus_dir is not None else corpus.fetch()
    path = folder.parent / corpus.SDIST_NAME
    if not path.is_file():
        return None
    return path if _sha256(path) == corpus.SDIST_SHA256 else None


@functools.lru_cache(maxsize=4)
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=2)
def read_sources(sdist: Path) -> dict[str, str]:
    """test-chat.cpp and the two headers, read from the archive in memory."""
    wanted = {TEST_MEMBER, *HEADER_MEMBERS}
    found: dict[str, str] = {}
    with tarfile.open(sdist, "r|gz") as archive:
        for member in archive:
            if member.name in wanted and member.isfile():
                handle = archive.extractfile(member)
                assert handle is not None
                found[member.name] = handle.read().decode("utf-8")
                if len(found) == len(wanted):
                    break
    missing = wanted - set(found)
    if missing:
        raise FileNotFoundError(f"{sdist.name} holds no {', '.join(sorted(missing))}")
    return found


@functools.lru_cache(maxsize=2)
def extraction(sdist: Path, corpus_dir: Path) -> Extraction:
    sources = read_sources(sdist)
    program = Program()
    for header in HEADER_MEMBERS:
        # common.h is read for its enums only (common_reasoning_format); its structs are not needed
        program.read(sources[header], only=("struct", "enum") if header.endswith("chat.h") else ("enum",))
    source = sources[TEST_MEMBER]
    tokens = program.read(source)
    return _Reader(program, tokens, source.count(".test("), corpus_dir).run()


class _Reader:
    """Runs the functions holding test chains and turns each `run()` into a case."""

    def __init__(self, program: Program, tokens: list[Token], textual: int, corpus_dir: Path) -> None:
        self.program, self.tokens, self.textual, self.corpus_dir = program, tokens, textual, corpus_dir
        self.sites = sorted(method_call_sites(tokens, "test"))
        self.index = {id(tok): k for k, tok in enumerate(tokens)}
        self.cases: list[LlamaCase] = []
        self.unresolved: list[UnresolvedChain] = []
        self.reached: set[int] = set()
        self.builders: list[Instance] = []
        self.interp = Interpreter(
            program,
            replace={("peg_test_builder", "run"): self._run},
            observe={("peg_tester", "test"): self._started},
            lenient=self._holds_chains,
            on_failure=self._failed,
        )

    def run(self) -> Extraction:
        for function in self._entries():
            self.interp.call(
                function, [Unresolved(f"{p.name}, a parameter of {function.name}") for p in function.params]
            )
        for builder in self.builders:
            site, ran = builder.tag
            if not ran:
                self.unresolved.append(UnresolvedChain(self.tokens[site].line, None, "the chain never runs"))
        held = {case.template for case in self.cases if (self.corpus_dir / case.template).is_file()}
        in_corpus = [case for case in self.cases if case.template in held]
        outside = Counter(case.template for case in self.cases if case.template not in held)
        ids = Counter(case.id for case in in_corpus)
        repeated = [case_id for case_id, n in ids.items() if n > 1]
        if repeated:
            self.unresolved.append(UnresolvedChain(0, None, f"case ids written twice: {repeated}"))
        commented = self.textual - len(self.sites)
        return Extraction(
            tuple(in_corpus),
            tuple(sorted(outside.items())),
            tuple(self.unresolved),
            len(self.sites),
            len(self.reached),
            commented,
        )

    def _entries(self) -> list[Any]:
        """The functions holding chains that no other such function calls (the others run from them)."""
        holding = [
            f for f in self.program.functions.values() if f.body.tokens is self.tokens and self._holds_chains(f.body)
        ]
        called = {
            tok.text
            for f in holding
            for tok in self.tokens[f.body.start : f.body.end]
            if tok.kind == "ident" and tok.text in {g.name for g in holding}
        }
        return [f for f in holding if f.name not in called]

    def _sites_in(self, span: Span) -> list[int]:
        if span.tokens is not self.tokens:
            return []
        lo = bisect.bisect_left(self.sites, span.start)
        hi = bisect.bisect_left(self.sites, span.end)
        return self.sites[lo:hi]

    def _holds_chains(self, span: Span) -> bool:
        return bool(self._sites_in(span))

    def _failed(self, span: Span, reason: str) -> None:
        for site in self._sites_in(span):
            self.unresolved.append(UnresolvedChain(self.tokens[site].line, None, reason))

    def _started(self, tester: Instance, builder: Any, token: Token) -> None:
        if isinstance(builder, Instance):
            builder.tag = (self.index[id(token)], False)
            self.builders.append(builder)

    def _run(self, builder: Instance, args: list[Any], token: Token) -> Instance:
        if not isinstance(builder.tag, tuple):
            raise Unsupported(f"line {token.line}: run() on a builder no .test( made")
        site, _ = builder.tag
        builder.tag = (site, True)
        self.reached.add(site)
        line = self.tokens[site].line
        try:
            self.cases.append(self._case(builder, line))
        except Unsupported as exc:
            tester = builder.fields.get("tester_")
            path = tester.fields.get("template_path_") if isinstance(tester, Instance) else None
            template = path.removeprefix(TEMPLATE_PREFIX) if isinstance(path, str) else None
            self.unresolved.append(UnresolvedChain(line, template, str(exc)))
        return builder

    def _case(self, builder: Instance, line: int) -> LlamaCase:
        tester = _known(builder.fields["tester_"], "tester")
        path = _known(tester.fields["template_path_"], "template path")
        if not isinstance(path, str) or not path.startswith(TEMPLATE_PREFIX):
            raise Unsupported(f"template path {path!r} is not under {TEMPLATE_PREFIX}")
        tc = builder.fields["tc_"]
        params, expect = tc.fields["params"], tc.fields["expect"]
        messages = _known(params.fields["messages"], "messages")
        if not messages:  # test_peg_parser: a case without messages is asked after message_user
            messages = [self.interp.globals.vars["message_user"]]
        schema_text = _known(params.fields["json_schema"], "json_schema")
        continuation = self._enum(params.fields["continue_final_message"])
        return LlamaCase(
            template=path.removeprefix(TEMPLATE_PREFIX),
            line=line,
            input=_known(tc.fields["input"], "input"),
            enable_thinking=_known(params.fields["enable_thinking"], "enable_thinking"),
            reasoning_format=self._enum(params.fields["reasoning_format"]),
            tools=tuple(_tool(tool) for tool in _known(params.fields["tools"], "tools")),
            parallel_tool_calls=_known(params.fields["parallel_tool_calls"], "parallel_tool_calls"),
            is_partial=_known(tc.fields["is_partial"], "is_partial"),
            json_schema=_json(schema_text, "json_schema") if schema_text else None,
            tool_choice=self._enum(params.fields["tool_choice"]),
            messages=tuple(_message(m) for m in messages),
            add_generation_prompt=_known(params.fields["add_generation_prompt"], "add_generation_prompt"),
            continuation=None if continuation == "none" else continuation,
            content=_known(expect.fields["content"], "expected content"),
            reasoning_content=_known(expect.fields["reasoning_content"], "expected reasoning"),
            tool_calls=tuple(
                ExpectedCall(call.fields["name"], call.fields["arguments"], call.fields["id"])
                for call in _known(expect.fields["tool_calls"], "expected calls")
            ),
        )

    def _enum(self, value: Any) -> str:
        """An enumerator without its enum's common prefix, lower case (COMMON_REASONING_FORMAT_AUTO: auto)."""
        value = _known(value, "an enum value")
        if not isinstance(value, EnumValue):
            raise Unsupported(f"{value!r} is not an enum value")
        names = [v.name for v in self.program.enums.values() if v.type == value.type]
        prefix = _common_prefix(names)
        return value.name[len(prefix) :].lower()


def _common_prefix(names: list[str]) -> str:
    first, last = min(names), max(names)
    k = 0
    while k < min(len(first), len(last)) and first[k] == last[k]:
        k += 1
    return first[: first.rfind("_", 0, k + 1) + 1]


def _known(value: Any, what: str) -> Any:
    if isinstance(value, Unresolved):
        raise Unsupported(f"{what}: {value.reason}")
    return value


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Unsupported(f"{what} is not JSON: {exc}") from None


def _tool(tool: Instance) -> dict[str, Any]:
    name = _known(tool.fields["name"], "tool name")
    parameters = _json(_known(tool.fields["parameters"], f"{name} parameters"), f"{name}'s parameters")
    return {
        "type": "function",
        "function": {"name": name, "description": tool.fields["description"], "parameters": parameters},
    }


def _message(msg: Instance) -> dict[str, Any]:
    f = msg.fields
    out: dict[str, Any] = {"role": f["role"]}
    parts = f["content_parts"]
    out["content"] = [{"type": p.fields["type"], "text": p.fields["text"]} for p in parts] if parts else f["content"]
    if f["reasoning_content"]:
        out["reasoning_content"] = f["reasoning_content"]
    if f["tool_calls"]:
        out["tool_calls"] = [
            {
                "id": c.fields["id"],
                "type": "function",
                "function": {"name": c.fields["name"], "arguments": c.fields["arguments"]},
            }
            for c in f["tool_calls"]
        ]
    if f["tool_call_id"]:
        out["tool_call_id"] = f["tool_call_id"]
    if f["tool_name"]:
        out["name"] = f["tool_name"]
    return out


# --------------------------------------------------------------------------- our parser on a case


@dataclass(frozen=True)
class Reading:
    """What our parser made of a case's input."""

    content: str
    reasoning_content: str
    tool_calls: tuple[ExpectedCall, ...]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    case: LlamaCase
    thinking: bool | None  # what our parser was told
    batch: Reading
    stream: Reading  # fed one character at a time
    batch_differences: tuple[str, ...]
    stream_differences: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.batch_differences and not self.stream_differences


@functools.cache
def description_of(path: Path) -> FormatDescription:
    """The analysis of a corpus template, once per process."""
    return analyze(load_template(str(path)))


def thinking_for(case: LlamaCase, description: FormatDescription) -> bool | None:
    """llama.cpp sets the template variable enable_thinking: our switch where that is the template's own,
    the template's default where another variable switches it (which llama.cpp leaves unset)."""
    return case.enable_thinking if thinking_switch_of(description) == STANDARD_SWITCH else None


def run_case(case: LlamaCase, corpus_dir: Path) -> Outcome:
    description = description_of(corpus_dir / case.template)
    thinking = thinking_for(case, description)
    # continue_final_message: the prompt ends inside the conversation's last message, which the output
    # continues (our parser tells content from reasoning by the message, as llama.cpp's "auto" does);
    # reasoning_format none (llama.cpp's default): the reasoning stays in content, as our inline mode keeps it
    continuing = case.messages[-1] if case.continuation is not None else None
    parser = Parser(
        description,
        list(case.tools),
        thinking=thinking,
        continuing=continuing,
        inline_reasoning=case.reasoning_format == "none",
    )
    if case.is_partial:  # the message so far: llama.cpp parses a partial output as one still arriving
        batch_stream = parser.stream()
        batch_stream.feed(case.input)
        batch = batch_stream.message
    else:
        batch = parser.parse(case.input)
    stream = parser.stream()
    for ch in case.input:
        stream.feed(ch)
    if not case.is_partial:
        stream.finish()
    batch_reading, stream_reading = _reading(batch), _reading(stream.message)
    return Outcome(
        case,
        thinking,
        batch_reading,
        stream_reading,
        differences(case, batch_reading),
        differences(case, stream_reading),
    )


def _reading(message: Message) -> Reading:
    return Reading(
        message.content,
        message.reasoning_content,
        tuple(ExpectedCall(c.name, c.arguments, c.id) for c in message.tool_calls),
        tuple(f"{e.kind}: {e.message}" + (f" {e.text!r}" if e.text else "") for e in message.errors),
    )


def differences(case: LlamaCase, got: Reading) -> tuple[str, ...]:
    """What differs by llama.cpp's rule (assert_msg_equals, whitespace differences ignored)."""
    out: list[str] = []
    if case.content.strip(_C_SPACE) != got.content.strip(_C_SPACE):
        out.append("content")
    if case.reasoning_content.strip(_C_SPACE) != got.reasoning_content.strip(_C_SPACE):
        out.append("reasoning_content")
    if len(case.tool_calls) != len(got.tool_calls):
        out.append(f"tool call count ({len(case.tool_calls)} expected, {len(got.tool_calls)} read)")
        return tuple(out)
    for k, (want, have) in enumerate(zip(case.tool_calls, got.tool_calls, strict=True)):
        if want.name != have.name:
            out.append(f"call {k} name")
        if not _same_arguments(want.arguments, have.arguments):
            out.append(f"call {k} arguments")
        if want.id and want.id != have.id:
            out.append(f"call {k} id")
    return tuple(out)


def _same_arguments(want: str, have: str) -> bool:
    """Arguments alike by llama.cpp's rule where both are JSON; else (the beginning of a call's
    arguments, shown while they arrive) the text itself, which renormalising would turn into "" on
    both sides and so never compare."""
    if _renormalized(want) and _renormalized(have):
        return _renormalized(want) == _renormalized(have)
    return want == have


def _renormalized(text: str) -> str:
    """renormalize_json: the JSON value written canonically (nlohmann sorts keys), "" if it is not JSON."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        return ""


@functools.lru_cache(maxsize=2)
def outcomes(sdist: Path, corpus_dir: Path) -> tuple[Outcome, ...]:
    return tuple(run_case(case, corpus_dir) for case in extraction(sdist, corpus_dir).cases)


# --------------------------------------------------------------------------- command line


def _expected(case: LlamaCase) -> dict[str, Any]:
    return {
        "content": case.content,
        "reasoning_content": case.reasoning_content,
        "tool_calls": [(c.name, c.arguments, c.id) for c in case.tool_calls],
    }


def _got(reading: Reading) -> dict[str, Any]:
    return {
        "content": reading.content,
        "reasoning_content": reading.reasoning_content,
        "tool_calls": [(c.name, c.arguments, c.id) for c in reading.tool_calls],
        "errors": list(reading.errors),
    }


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--template", metavar="SUBSTR", help="only templates whose file name holds SUBSTR")
    options.add_argument("--failures", action="store_true", help="print each failing case")
    args = options.parse_args(argv)
    corpus_dir = corpus.fetch()
    sdist = sdist_path(corpus_dir)
    if sdist is None:
        print(f"Error: no pinned {corpus.SDIST_NAME} beside {corpus_dir}", file=sys.stderr)
        return 2
    found = extraction(sdist, corpus_dir)
    print(
        f"test-chat.cpp: {found.written} chains written ({found.commented} more `.test(` in comments), "
        f"{found.reached} run, {len(found.cases)} cases on corpus templates"
    )
    for template, n in found.not_in_corpus:
        print(f"  not in the corpus: {template} ({n} cases)")
    for chain in found.unresolved:
        print(f"  UNRESOLVED line {chain.line} ({chain.template}): {chain.reason}")
    chosen = [o for o in outcomes(sdist, corpus_dir) if args.template is None or args.template in o.case.template]
    by_template: dict[str, list[Outcome]] = {}
    for outcome in chosen:
        by_template.setdefault(outcome.case.template, []).append(outcome)
    for template, group in sorted(by_template.items()):
        passed = sum(o.passed for o in group)
        print(f"  {passed:3d}/{len(group):3d}  {template}")
    passed = sum(o.passed for o in chosen)
    share = 100 * passed / len(chosen) if chosen else 0.0
    print(f"passed {passed}/{len(chosen)} ({share:.1f}%)")
    if args.failures:
        for outcome in chosen:
            if outcome.passed:
                continue
            case = outcome.case
            print(f"\n--- {case.id}  thinking={outcome.thinking} reasoning_format={case.reasoning_format}", end="")
            print(f" partial={case.is_partial} continuation={case.continuation}")
            print(f"  input:    {case.input!r}")
            print(f"  expected: {_expected(case)!r}")
            print(f"  batch:    {_got(outcome.batch)!r}  differs in {list(outcome.batch_differences)}")
            if outcome.stream != outcome.batch:
                print(f"  stream:   {_got(outcome.stream)!r}  differs in {list(outcome.stream_differences)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
