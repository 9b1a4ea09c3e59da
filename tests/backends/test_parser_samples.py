"""The sample outputs llama.cpp's own tests feed its parsers (shared/reference/llama-expected.json)
must parse to the messages those tests expect, with our parser generated from our own analysis."""

from __future__ import annotations

import json

import pytest

# test_parser_codegen.py loads this file by path and reads SAMPLES and tools_for from it.
from helpers.samples import SAMPLES, tools_for

from analyzer.analysis import analyze
from analyzer.backends.parser import Parser
from analyzer.description import STANDARD_SWITCH
from analyzer.render.conversation import thinking_switch_of
from analyzer.sources import load_template

# Samples whose expected message needs something our descriptions say the template does not do,
# with the reason (kept visible: a strict xfail turns into a failure once it passes).
KNOWN = {
    "ibm-granite-granite-3.3-2B-Instruct": "no render shows reasoning markers (the template never writes them)",
    "Apriel-1.6-15b-Thinker-fixed": "llama.cpp counts the words the prompt writes inside the block it opens "
    "('Here are my reasoning steps:') as reasoning; our parser reads the model's output only",
    "LFM2-8B-A1B": "the template never writes tool calls in history (format none)",
    "LFM2.5-Instruct": "the template never writes tool calls in history (format none)",
    "meta-llama-Llama-3.1-8B-Instruct": "the sample is a JSON-schema response in a fenced block, not a tool call",
}


def _params():
    for row in SAMPLES:
        name = row["template"].removesuffix(".jinja")
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        yield pytest.param(row, id=name, marks=marks)


@pytest.mark.skipif(not SAMPLES, reason="shared/reference/llama-expected.json is not beside the checkout")
@pytest.mark.parametrize("row", list(_params()))
def test_sample_parses_to_expected_message(row, corpus_dir):
    description = analyze(load_template(str(corpus_dir / row["template"])))
    expect = row["sample_expect"]
    # llama-server renders prompts with enable_thinking=true unless told otherwise: thinking on where that
    # is the template's switch, the template's default where another variable switches it (MiniMax-M3).
    thinking = True if thinking_switch_of(description) == STANDARD_SWITCH else None
    message = Parser(description, tools_for(expect), thinking=thinking).parse(row["sample_output"])
    got_calls = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
    want_calls = [(c["name"], c.get("arguments", {})) for c in expect.get("tool_calls", [])]
    assert got_calls == want_calls, message.to_dict()
    assert (message.content or "").strip() == (expect.get("content") or "").strip()
    assert message.reasoning_content.strip() == (expect.get("reasoning_content") or "").strip()
