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

# Why we read a case otherwise than llama.cpp's test expects, grouped by cause.
# continue_final_message: the prefilled assistant message is given to our parser (``continuing``); these
# are the cases where we still read it otherwise.
PREFILL_REASONING_FORMAT_NONE = (
    "continue_final_message with reasoning_format none: llama.cpp reports no reasoning, so the prefill's "
    "reasoning_content is dropped; we return the whole message, its reasoning as the client gave it"
)
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
INDEX_ID = (
    'llama.cpp keeps the index the template writes (functions.NAME:N, tool_call_id "0") as the call id; '
    "we make ids, the template writing no call id"
)
INLINE = (
    "reasoning_format none: llama.cpp leaves the reasoning inline in content (behind the prompt's opener); "
    "we split it out"
)
PARTIAL = "output cut inside a call: llama.cpp shows the call while its arguments arrive; we show it once complete"
STRAY_MARKER = "a repeated reasoning opener, or a stray closer after the answer, is kept as content"
PYTHON_ESCAPES = (
    "the template writes string values raw (string escaping: none): we keep backslash escapes as written; "
    "llama.cpp decodes them as Python escapes"
)
PROMPT_WORDS = (
    "llama.cpp counts the words the prompt writes inside the block it opens ('Here are my reasoning steps:') "
    "as reasoning; our parser reads the model's output only"
)
NO_REASONING_MARKERS = "no render shows reasoning markers (the template never writes them)"
UNION_STRING = (
    "a value whose schema allows a string: llama.cpp keeps the nested markup as that string; "
    "we read the object it spells"
)
HEADER_REPEATED = "the output repeats the generation prompt's last marker (<|CHATBOT_TOKEN|>); we keep it as content"
FENCED_SCHEMA = "a json_schema reply in a markdown fence: llama.cpp unwraps it; our parser is given no schema"
GPT_RECIPIENT = "gpt-oss: a call in the analysis channel, or with its recipient after the channel, is not read"
GPT_PREAMBLE = "gpt-oss: a commentary message with no recipient is content; we keep its channel header"
GPT_CONSTRAIN = "gpt-oss: '<|constrain|>json' after the final channel header is kept in content"
GPT_BUILTIN = (
    "gpt-oss: llama.cpp drops calls to built-in tools (container.exec, python) that are not declared; "
    "we keep their text as content"
)
GPT_TO_ASSISTANT = "gpt-oss: a 'commentary to=assistant' header is kept in content"

KNOWN = {
    "Qwen3.5-4B:2156": INLINE,
    "mistralai-Ministral-3-14B-Reasoning-2512:2648": FENCED_SCHEMA,
    "mistralai-Ministral-3-14B-Reasoning-2512:2606": INLINE,
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16:2704": INLINE,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:2831": INLINE,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:2837": INDEX_ID,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:2847": PARTIAL,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:2857": INDEX_ID,
    "Cohere2MoE:2883": INLINE,
    "Cohere2MoE:2905": INDEX_ID,
    "Cohere2MoE:2916": INDEX_ID,
    "Cohere2MoE:2927": INDEX_ID,
    "Cohere2MoE:2938": INDEX_ID,
    "Cohere2MoE:2962": PARTIAL,
    "google-gemma-2-2b-it:2982": PREFILL_REASONING_FORMAT_NONE,
    "google-gemma-4-31B-it:3011": INLINE,
    "google-gemma-4-31B-it:3155": STRAY_MARKER,
    "google-gemma-4-31B-it:3167": STRAY_MARKER,
    "google-gemma-4-31B-it:3173": STRAY_MARKER,
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use:3352": PREFILL_REASONING_FORMAT_NONE,
    "ibm-granite-granite-3.3-2B-Instruct:3371": NO_REASONING_MARKERS,
    "ibm-granite-granite-3.3-2B-Instruct:3393": PREFILL_UNWRITTEN_REASONING,
    "ibm-granite-granite-4.0:3420": PREFILL_REASONING_FORMAT_NONE,
    "Qwen3-Coder:3911": PREFILL_REASONING_FORMAT_NONE,
    "inclusionai-ling-3.0-flash:4716": INLINE,
    "inclusionai-ling-3.0-flash:4841": PREFILL_EMPTY_CONTENT,
    "Kimi-K2-Thinking:4974": INDEX_ID,
    "Kimi-K2-Thinking:4982": INDEX_ID,
    "Kimi-K2-Thinking:4992": INDEX_ID,
    "Kimi-K2-Thinking:5001": INDEX_ID,
    "Kimi-K2-Thinking:5018": INDEX_ID,
    "Kimi-K2-Thinking:5037": INDEX_ID,
    "Kimi-K2-Thinking:5047": INDEX_ID,
    "Kimi-K2-Thinking:5055": PARTIAL,
    "Kimi-K2-Thinking:5065": INDEX_ID,
    "Kimi-K2-Thinking:5084": INDEX_ID,
    "Kimi-K2-Thinking:5103": INDEX_ID,
    "Kimi-K2-Thinking:5120": INDEX_ID,
    "moonshotai-Kimi-K2:5186": INDEX_ID,
    "Kimi-K2-Instruct:5197": INDEX_ID,
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
    "LFM2.5-8B-A1B:2073": PYTHON_ESCAPES,
    "LFM2.5-8B-A1B:2082": PYTHON_ESCAPES,
    "LFM2.5-8B-A1B:2090": PYTHON_ESCAPES,
    "LFM2.5-8B-A1B:2116": PARTIAL,
    "Reka-Edge:5363": PARTIAL,
    "Apertus-8B-Instruct:5431": PREFILL_REASONING_FORMAT_NONE,
    "MiniMax-M3:5793": UNION_STRING,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use:5880": INDEX_ID,
    "CohereForAI-c4ai-command-r-plus-tool_use:5893": HEADER_REPEATED,
    "CohereForAI-c4ai-command-r-plus-tool_use:5905": PREFILL_REASONING_FORMAT_NONE,
    "mistralai-Mistral-Nemo-Instruct-2407:5924": PREFILL_REASONING_FORMAT_NONE,
    "meetkai-functionary-medium-v3.1:5941": PREFILL_REASONING_FORMAT_NONE,
    "meetkai-functionary-medium-v3.2:5959": PREFILL_REASONING_FORMAT_NONE,
    "fireworks-ai-llama-3-firefunction-v2:5978": PREFILL_REASONING_FORMAT_NONE,
    "MiMo-VL:6114": PREFILL_REASONING_FORMAT_NONE,
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use:6114": PREFILL_REASONING_FORMAT_NONE,
    "Qwen-Qwen2.5-7B-Instruct:6114": PREFILL_REASONING_FORMAT_NONE,
    "Reka-Edge:6159": PARTIAL,
    "unsloth-Apriel-1.5:6198": PREFILL_REASONING_FORMAT_NONE,
    "Apriel-1.6-15b-Thinker-fixed:6211": PROMPT_WORDS,
    "Apriel-1.6-15b-Thinker-fixed:6219": PROMPT_WORDS,
    "Mistral-Small-3.2-24B-Instruct-2506:6274": PREFILL_REASONING_FORMAT_NONE,
    "meta-llama-Llama-3.1-8B-Instruct:6302": FENCED_SCHEMA,
    "meta-llama-Llama-3.1-8B-Instruct:6317": PREFILL_REASONING_FORMAT_NONE,
    "meta-llama-Llama-3.2-3B-Instruct:6331": PREFILL_REASONING_FORMAT_NONE,
    "meta-llama-Llama-3.3-70B-Instruct:6345": PREFILL_REASONING_FORMAT_NONE,
    "openai-gpt-oss-120b:6431": GPT_PREAMBLE,
    "openai-gpt-oss-120b:6442": INLINE,
    "openai-gpt-oss-120b:6457": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6464": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6471": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6478": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6485": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6494": GPT_RECIPIENT,
    "openai-gpt-oss-120b:6531": GPT_CONSTRAIN,
    "openai-gpt-oss-120b:6547": GPT_BUILTIN,
    "openai-gpt-oss-120b:6556": GPT_BUILTIN,
    "openai-gpt-oss-120b:6567": GPT_TO_ASSISTANT,
    "openai-gpt-oss-120b:6575": GPT_TO_ASSISTANT,
    "GigaChat3-10B-A1.8B:6834": PREFILL_REASONING_FORMAT_NONE,
    "GigaChat3.1-10B-A1.8B:6862": PREFILL_REASONING_FORMAT_NONE,
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
