"""The generated response_template, read by transformers' own parser, on the corpus.

For every corpus template with calls, the response_template made from its golden description must
pass transformers' loader (its schema check), and transformers must read every round-trip case (the
template's own render of calls, cut where the model's output starts) into the message our parser
reads: through ``parse_response`` with the prompt as ``prefix``, and through ``ResponseParser`` fed
one character at a time. A case our own parser does not read back is not a reference; those are
test_parser_roundtrip's known failures, and each template must still compare some case.

Templates whose format the language cannot express are listed below with the part and the reason:
generating must fail naming them, and ``partial`` must write the rest, which must read the cases that
use none of what it leaves out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.roundtrip import CASES, compile_for, descriptions, model_output, not_written
from helpers.transformers_parse import compare, ours, prompt_for
from transformers.utils.chat_parsing.response_templates import load_response_template

from analyzer.backends.response_template import REASONING_FIELD, into_tokenizer_config, to_response_template
from analyzer.errors import Inexpressible, InputError
from analyzer.lower import lower
from analyzer.runtime.shape import ArgKey, KeyValueArgs, Name

README = Path(__file__).resolve().parents[2] / "README.md"

# template -> (the first part it cannot express, words of the reason)
INEXPRESSIBLE = {
    "Apertus-8B-Instruct": ("tool calls", "the name is an object key"),
    "ByteDance-Seed-OSS": ("object argument values", "written as Python literals"),
    "Kimi-K3": ("function names", "written escaped ('\"' as '&quot;', '&' as '&amp;')"),
    "LFM2.5-8B-A1B": ("array argument values", "written as Python literals"),
    "MiniMax-M3": ("null argument values", "the renders do not show how they are written"),
    "google-gemma-4-31B-it": ("null argument values", "written in Python notation inside the call's object notation"),
    "google-gemma-4-31B-it-interleaved": (
        "null argument values",
        "written in Python notation inside the call's object notation",
    ),
    "openbmb-MiniCPM5-1B": ("object argument values", "written as Python literals"),
}


def _case_outputs(description, corpus_dir):
    """(case, prompt, model output) for each round-trip case the template writes and our parser reads
    back as written."""
    compiled = compile_for(description, corpus_dir)
    prompt = prompt_for(description, compiled)
    for case, (content, calls) in CASES.items():
        if not_written(description, content, calls):
            continue
        try:
            output = model_output(description, compiled, content, calls)
        except Exception as exc:
            if getattr(exc, "raised_by_template", False):
                continue
            raise
        text, _, parsed = ours(description, output)
        if text != (content or "") or parsed != [(name, args) for name, args in calls]:
            continue
        yield case, prompt, output


@pytest.mark.parametrize("description", descriptions(), ids=lambda d: d.template.name)
def test_transformers_reads_the_round_trip_as_our_parser_does(description, corpus_dir):
    name = description.template.name
    if name in INEXPRESSIBLE:
        part, reason = INEXPRESSIBLE[name]
        with pytest.raises(Inexpressible) as raised:
            to_response_template(lower(description))
        message = str(raised.value)
        assert message.startswith(f"{name}: {part} cannot be expressed in a response_template: ") and reason in message
        return
    template = to_response_template(lower(description)).template
    load_response_template(template)
    results = {
        case: compare(description, template, prompt, output)
        for case, prompt, output in _case_outputs(description, corpus_dir)
    }
    assert results, "no round-trip case to compare"
    assert {case: result for case, result in results.items() if result} == {}


# Cases a partial template reads wrong for a reason in transformers' content parsers, not in what we
# generate: each must still be read wrong (so that a fix there shows here).
PARTIAL_MISREADS = {
    ("LFM2.5-8B-A1B", "raw strings with commas and newlines"): (
        "a call's region closes at the first ')', which a string value may hold: the language has no closer"
        " that skips a quoted string"
    ),
    ("google-gemma-4-31B-it", "quotes in names"): "transformers' json dialect cannot read an unquoted key with a quote",
    ("google-gemma-4-31B-it-interleaved", "quotes in names"): (
        "transformers' json dialect cannot read an unquoted key with a quote"
    ),
}


def _uses(value: Any, json_type: str) -> bool:
    """Whether an argument value is, or holds, a value of ``json_type``."""
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if json_type in ("integer", "number"):
        here = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        here = isinstance(value, kinds[json_type])
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return here or any(_uses(item, json_type) for item in inner)


def _escaped_chars(shape, left_out: set[str]) -> set[str]:
    """The characters the shape escapes in names whose escaping the partial template leaves out."""
    parts = list(shape.calls.call)
    parts += [p for part in shape.calls.call if isinstance(part, KeyValueArgs) for f in part.forms for p in f.parts]
    wanted = {Name: "function names", ArgKey: "argument names"}
    return {ch for part in parts if wanted.get(type(part)) in left_out for ch, _ in part.escapes}


@pytest.mark.parametrize("name", sorted(INEXPRESSIBLE))
def test_partial_reads_what_it_does_not_leave_out(name, corpus_dir):
    description = next(d for d in descriptions() if d.template.name == name)
    generated = to_response_template(lower(description), partial=True)
    load_response_template(generated.template)
    assert generated.left_out[0].part == INEXPRESSIBLE[name][0]
    left_types = {
        t
        for item in generated.left_out
        if item.part.endswith(" argument values")
        for t in item.part.removesuffix(" argument values").split("/")
    }
    if any(item.part == "tool calls" for item in generated.left_out):
        assert "tool_calls" not in generated.template["fields"]
        return
    escaped = _escaped_chars(lower(description), {item.part for item in generated.left_out})
    compared = {}
    for case, prompt, output in _case_outputs(description, corpus_dir):
        values = [value for _, args in CASES[case][1] for value in args.values()]
        if any(_uses(value, json_type) for value in values for json_type in left_types):
            continue
        names = "".join(name + "".join(args) for name, args in CASES[case][1])
        if escaped & set(names):
            continue
        compared[case] = compare(description, generated.template, prompt, output)
    assert compared, "no case uses only what the partial template expresses"
    misread = {case for template, case in PARTIAL_MISREADS if template == name}
    assert {case: result for case, result in compared.items() if result and case not in misread} == {}
    assert all(compared.get(case) for case in misread), "a listed misread is read right now: update PARTIAL_MISREADS"


def test_the_list_names_corpus_templates_with_calls():
    assert set(INEXPRESSIBLE) <= {d.template.name for d in descriptions()}


def test_readme_states_the_count():
    expressible = len(descriptions()) - len(INEXPRESSIBLE)
    assert f"expressible {expressible} of {len(descriptions())}" in README.read_text(encoding="utf-8").lower()


# --------------------------------------------------------------------------- what is written, by hand


def _template(name):
    description = next(d for d in descriptions() if d.template.name == name)
    return to_response_template(lower(description)).template


def test_a_prompt_that_opens_reasoning_leaves_its_opener_to_the_parser():
    """Qwen 3.5's prompt ends with <think>: the message starts before it, so the parser reads it."""
    template = _template("Qwen3.5-4B")
    assert template["start_anchor"] == "<|im_start|>assistant\n"
    assert template["fields"][REASONING_FIELD]["open"] == "<think>"


def test_a_prompt_that_opens_reasoning_only_when_asked_anchors_both_ways():
    """DeepSeek V3.1 closes the block in its default prompt and opens it with enable_thinking: the
    message starts after the default prompt, or right before an opener that ends the prompt."""
    anchor = re.compile(_template("deepseek-ai-DeepSeek-V3.1")["start_anchor_pattern"])
    prompts = {"<｜User｜>hi<｜Assistant｜><think></think>": "", "<｜User｜>hi<｜Assistant｜><think>": "<think>"}
    for prompt, rest in prompts.items():
        last = [m.end() for m in anchor.finditer(prompt)][-1]
        assert prompt[last:] == rest


def test_a_section_that_is_a_json_array_is_one_region_read_as_a_list():
    calls = _template("mistralai-Mistral-Nemo-Instruct-2407")["fields"]["tool_calls"]
    assert calls["content"] == "json" and calls["transform_each"] is True and "repeats" not in calls
    assert calls["transform"]["id"] == "{id}"


def test_fields_are_plain_text_where_every_reader_needs_them_so():
    """vLLM serves thinking and content only as text fields without join or transform."""
    for description in descriptions():
        if description.template.name in INEXPRESSIBLE:
            continue
        fields = to_response_template(lower(description)).template["fields"]
        for name in (REASONING_FIELD, "content"):
            if name in fields:
                assert fields[name]["content"] == "text"
                assert not {"join", "transform", "repeats"} & set(fields[name]), (description.template.name, name)


def test_the_error_is_one_line_naming_every_part_count():
    description = next(d for d in descriptions() if d.template.name == "MiniMax-M3")
    with pytest.raises(Inexpressible) as raised:
        to_response_template(lower(description))
    assert "\n" not in str(raised.value) and str(raised.value).endswith("(and 2 more parts)")
    assert len(raised.value.parts) == 3


def test_into_a_tokenizer_config_keeps_every_other_key():
    config = {
        "add_bos_token": False,
        "chat_template": "{{ x }}",
        "model_max_length": 131072,
        "added_tokens_decoder": {"151643": {"content": "<|endoftext|>", "special": True}},
        "eos_token": "é",
    }
    text = json.dumps(config, ensure_ascii=False)
    written = json.loads(into_tokenizer_config(text, {"version": 1}))
    assert written.pop("response_template") == {"version": 1}
    assert written == config and list(written) == list(config)


@pytest.mark.parametrize("text", ["[1, 2]", "{not json"])
def test_into_a_file_that_is_no_config_is_an_input_error(text):
    with pytest.raises(InputError):
        into_tokenizer_config(text, {"version": 1})
