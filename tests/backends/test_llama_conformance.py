"""llama.cpp's own parse expectations, run through our parser.

Every ``tst.test(INPUT)...expect(...).run()`` chain of llama.cpp's ``tests/test-chat.cpp`` on a corpus
template is one case, read from the pinned sdist at test time (helpers/llama_chat_cases.py; nothing of
it is committed) and compared by llama.cpp's own rule: content and reasoning after stripping, the calls'
names and arguments as JSON values, ids where the expectation has one; batch and streamed one character
at a time. ``PYTHONPATH=. python3 tests/helpers/llama_chat_cases.py --failures`` prints the figure per
template and each failing case.

Cases we fail are in KNOWN with the reason, marked strict xfail: a case that starts to pass fails the
run until its entry is removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.llama_chat_cases import LlamaCase, Outcome, extraction, outcomes, sdist_path

from analyzer import corpus


def _located() -> tuple[Path, Path] | None:
    """The sdist and the corpus folder, or None where the corpus cannot be fetched or the sdist is not there."""
    try:
        corpus_dir = corpus.fetch()
    except corpus.CorpusError:
        return None
    sdist = sdist_path(corpus_dir)
    return (sdist, corpus_dir) if sdist is not None else None


LOCATED = _located()
NO_SDIST = f"the pinned {corpus.SDIST_NAME} is not beside the corpus folder (run `template-analyzer corpus fetch`)"
needs_sdist = pytest.mark.skipif(LOCATED is None, reason=NO_SDIST)
# The cases are read from the corpus's sdist when the module is collected: no fixture says so.
pytestmark = pytest.mark.corpus

# Why we read a case otherwise than llama.cpp's test expects, grouped by cause.
# continue_final_message: the prefilled assistant message is given to our parser (``continuing``); these
# are the cases where we still read it otherwise.
PREFILL_UNWRITTEN_REASONING = (
    "continue_final_message inside reasoning on a template that writes no reasoning block: llama.cpp "
    "assumes a </think> closer; to us the output continues content, the prefill's reasoning kept as given"
)
PREFILL_EMPTY_CONTENT = (
    "continue_final_message 'content' with the message's content empty: llama.cpp closes the prefilled "
    "reasoning in the prompt; the message alone cannot tell that from a reasoning continuation (llama.cpp's "
    "'auto' reads it so too), and we continue the reasoning"
)
FORMAT_NONE = "the template never writes tool calls in history (analysis: format none)"
INLINE = (
    "reasoning_format none, read inline: llama.cpp leaves out the opener the prompt wrote where a call ends the "
    "block (ling), or the next message's header that closes gpt-oss' analysis; we keep the block as written"
)
PARTIAL = (
    "output cut inside a call: llama.cpp shows the call while its arguments arrive; we show a JSON call once "
    "its arguments open (not one whose id or count is read from the object), other forms once complete"
)
# llama.cpp heals cut JSON: ": " where the model wrote ":" so far. We show only text the model wrote and
# no later character can change (a key as it arrives, while no earlier key of its object begins so).
HEALED = (
    "output cut inside a call's arguments: llama.cpp shows them healed (a space added after ':'); "
    "we show what is certain (the model may write the value with no space)"
)
REPEATED_OPENER = (
    "llama.cpp keeps a reasoning opener written again after the prompt opened the block as reasoning text "
    "('<think>'); we read it as the opener (tolerance repeated_reasoning_opener), so reasoning is empty"
)
STRAY_MARKER = "a part of the reasoning opener written twice (<|channel><|channel>thought) is kept as content"
PROMPT_WORDS = (
    "llama.cpp counts the words the prompt writes inside the block it opens ('Here are my reasoning steps:') "
    "as reasoning; our parser reads the model's output only"
)
NO_REASONING_MARKERS = "no render shows reasoning markers (the template never writes them)"
UNION_STRING = (
    "a value whose schema allows a string: llama.cpp keeps the nested markup as that string; "
    "we read the object it spells"
)
FENCED_SCHEMA = "a json_schema reply in a markdown fence: llama.cpp unwraps it; our parser is given no schema"
GPT_BUILTIN = (
    "gpt-oss: llama.cpp drops calls to built-in tools (container.exec, python) that are not declared; "
    "we keep their text as content: no render shows such a call, and their recipient is no 'to=functions.' "
    "one (container.exec's '<|channel|>commentary<|message|>' is read as a content header, tolerance header_word)"
)

KNOWN = {
    "Qwen3.5-4B:2377": REPEATED_OPENER,
    "mistralai-Ministral-3-14B-Reasoning-2512:2648": FENCED_SCHEMA,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:2847": PARTIAL,
    "Cohere2MoE:2962": PARTIAL,
    "google-gemma-4-31B-it:3173": STRAY_MARKER,
    "ibm-granite-granite-3.3-2B-Instruct:3371": NO_REASONING_MARKERS,
    "ibm-granite-granite-3.3-2B-Instruct:3393": PREFILL_UNWRITTEN_REASONING,
    "inclusionai-ling-3.0-flash:4716": INLINE,
    "inclusionai-ling-3.0-flash:4841": PREFILL_EMPTY_CONTENT,
    "moonshotai-Kimi-K2:5216": PREFILL_UNWRITTEN_REASONING,
    "LFM2-8B-A1B:2022": FORMAT_NONE,
    "LFM2-8B-A1B:2028": FORMAT_NONE,
    "LFM2-8B-A1B:2034": FORMAT_NONE,
    "LFM2-8B-A1B:2039": FORMAT_NONE,
    "LFM2-8B-A1B:2045": FORMAT_NONE,
    "LFM2-8B-A1B:2051": FORMAT_NONE,
    "LFM2-8B-A1B:2057": FORMAT_NONE,
    "LFM2-8B-A1B:2073": FORMAT_NONE,
    "LFM2-8B-A1B:2082": FORMAT_NONE,
    "LFM2-8B-A1B:2090": FORMAT_NONE,
    "LFM2-8B-A1B:2098": FORMAT_NONE,
    "LFM2-8B-A1B:2106": FORMAT_NONE,
    "LFM2-8B-A1B:2116": FORMAT_NONE,
    "LFM2-8B-A1B:2123": FORMAT_NONE,
    "LFM2.5-Instruct:2022": FORMAT_NONE,
    "LFM2.5-Instruct:2028": FORMAT_NONE,
    "LFM2.5-Instruct:2034": FORMAT_NONE,
    "LFM2.5-Instruct:2039": FORMAT_NONE,
    "LFM2.5-Instruct:2045": FORMAT_NONE,
    "LFM2.5-Instruct:2051": FORMAT_NONE,
    "LFM2.5-Instruct:2057": FORMAT_NONE,
    "LFM2.5-Instruct:2073": FORMAT_NONE,
    "LFM2.5-Instruct:2082": FORMAT_NONE,
    "LFM2.5-Instruct:2090": FORMAT_NONE,
    "LFM2.5-Instruct:2098": FORMAT_NONE,
    "LFM2.5-Instruct:2106": FORMAT_NONE,
    "LFM2.5-Instruct:2116": FORMAT_NONE,
    "LFM2.5-Instruct:2123": FORMAT_NONE,
    "LFM2.5-8B-A1B:2116": PARTIAL,
    "Reka-Edge:5363": HEALED,
    "MiniMax-M3:5793": UNION_STRING,
    "Apriel-1.6-15b-Thinker-fixed:6211": PROMPT_WORDS,
    "Apriel-1.6-15b-Thinker-fixed:6219": PROMPT_WORDS,
    "meta-llama-Llama-3.1-8B-Instruct:6302": FENCED_SCHEMA,
    "openai-gpt-oss-120b:6442": INLINE,
    "openai-gpt-oss-120b:6547": GPT_BUILTIN,
    "openai-gpt-oss-120b:6556": GPT_BUILTIN,
}


def _params() -> list[object]:
    if LOCATED is None:
        return [pytest.param(None, id="no-sdist", marks=pytest.mark.skip(reason=NO_SDIST))]
    cases = extraction(*LOCATED).cases
    return [
        pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[case.id])])
        if case.id in KNOWN
        else pytest.param(case, id=case.id)
        for case in cases
    ]


def _outcomes() -> dict[str, Outcome]:
    assert LOCATED is not None
    return {outcome.case.id: outcome for outcome in outcomes(*LOCATED)}  # each case parsed once per process


@pytest.mark.parametrize("case", _params())
def test_llama_expectation(case: LlamaCase) -> None:
    assert LOCATED is not None
    outcome = _outcomes()[case.id]
    expected = {
        "content": case.content,
        "reasoning_content": case.reasoning_content,
        "tool_calls": [(c.name, c.arguments, c.id) for c in case.tool_calls],
    }
    for name, reading, differences in (
        ("batch", outcome.batch, outcome.batch_differences),
        ("stream", outcome.stream, outcome.stream_differences),
    ):
        got = {
            "content": reading.content,
            "reasoning_content": reading.reasoning_content,
            "tool_calls": [(c.name, c.arguments, c.id) for c in reading.tool_calls],
            "errors": list(reading.errors),
        }
        assert not differences, (
            f"{name} differs in {list(differences)} (thinking={outcome.thinking}, "
            f"reasoning_format={case.reasoning_format}, partial={case.is_partial})\n"
            f"input:    {case.input!r}\nexpected: {json.dumps(expected)}\ngot:      {json.dumps(got)}"
        )


@needs_sdist
def test_every_chain_is_read() -> None:
    """Every `.test(` chain written in test-chat.cpp ran and became a case, none on a template outside the
    corpus: a chain the reader cannot resolve fails here, it is not dropped."""
    assert LOCATED is not None
    found = extraction(*LOCATED)
    assert not found.unresolved, "\n".join(f"line {u.line} ({u.template}): {u.reason}" for u in found.unresolved)
    assert found.written > 0
    assert found.reached == found.written, f"{found.reached} of {found.written} chains ran"
    assert not found.not_in_corpus, f"cases on templates outside the corpus: {found.not_in_corpus}"
    lines = {case.line for case in found.cases}
    assert len(lines) == found.written, f"{len(lines)} chains gave cases, {found.written} are written"


@needs_sdist
def test_known_names_cases() -> None:
    assert LOCATED is not None
    ids = {case.id for case in extraction(*LOCATED).cases}
    assert not set(KNOWN) - ids, f"KNOWN names no case: {sorted(set(KNOWN) - ids)}"


@needs_sdist
def test_pass_figure() -> None:
    """The figure the README states: cases passed over cases; exactly the cases not in KNOWN pass."""
    assert LOCATED is not None
    results = outcomes(*LOCATED)
    passed = [o.case.id for o in results if o.passed]
    print(f"llama.cpp test-chat.cpp expectations: {len(passed)}/{len(results)} passed")
    assert sorted(set(o.case.id for o in results) - set(passed)) == sorted(KNOWN)
