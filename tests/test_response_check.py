"""response-template --check and --into: transformers' parser over the template's own renders, and the
generated template written into a tokenizer config, through the library and the command line.

The check must find at least what the round trip finds for a deliberately wrong response_template,
it must pass our own templates, and its findings on transformers' three fallbacks (in
``transformers/cli/serving/utils.py``) over the corpus templates of their families are pinned here, as
the README reports them.
"""

from __future__ import annotations

import json
import sys
from copy import deepcopy

import pytest
from helpers.cli import run
from helpers.golden import golden
from helpers.roundtrip import CASES as ROUND_TRIP_CASES
from helpers.roundtrip import compile_for, model_output, not_written, unreadable_render
from helpers.transformers_parse import compare, prompt_for
from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

from analyzer.backends.response_template import to_response_template
from analyzer.lower import lower
from analyzer.response_check import CASES, check, config_path
from analyzer.sources import load_template

CALL_CASES = {name for name, case in CASES.items() if case.calls}


def _check(name, template, corpus_dir):
    return check(load_template(str(corpus_dir / f"{name}.jinja")), golden(name), template)


def _generated(name):
    return to_response_template(lower(golden(name))).template


def _round_trip_failures(name, template, corpus_dir):
    description = golden(name)
    compiled = compile_for(description, corpus_dir)
    prompt = prompt_for(description, compiled)
    failures = set()
    for case, (content, calls) in ROUND_TRIP_CASES.items():
        if not not_written(description, content, calls):
            output = model_output(description, compiled, content, calls)
            if not unreadable_render(description, output, calls) and compare(description, template, prompt, output):
                failures.add(case)
    return failures


def test_the_check_covers_the_round_trip_cases():
    for case, (content, calls) in ROUND_TRIP_CASES.items():
        assert CASES[case].content == content and list(CASES[case].calls) == calls


# --------------------------------------------------------------------------- wrong templates


def _arguments_at_another_key(template):
    """Llama 3.1 writes "parameters"; a template copied from Qwen's reads "arguments"."""
    template["fields"]["tool_calls"]["transform"]["function"]["arguments"] = "{content.arguments}"


def _values_with_the_newlines(template):
    """Qwen3-Coder writes a newline on both sides of a value; a tag pattern that keeps them."""
    args = template["fields"]["tool_calls"]["content_args"]
    args["tag_pattern"] = args["tag_pattern"].replace("(?:\\n)?", "")


def _section_closer_in_content(template):
    """Kimi-K2 closes its section after the last call; a template that does not say so."""
    content = template["fields"]["content"]
    content["close_pattern"] = content["close_pattern"].replace("|<\\|tool_calls_section_end\\|>", "")


def _list_without_transform_each(template):
    """Mistral Nemo's section is a JSON list; a template that forgets to shape each item."""
    del template["fields"]["tool_calls"]["transform_each"]
    del template["fields"]["tool_calls"]["transform"]


WRONG = {
    "meta-llama-Llama-3.1-8B-Instruct": _arguments_at_another_key,
    "Qwen3-Coder": _values_with_the_newlines,
    "moonshotai-Kimi-K2": _section_closer_in_content,
    "mistralai-Mistral-Nemo-Instruct-2407": _list_without_transform_each,
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_the_check_finds_what_the_round_trip_finds(name, corpus_dir):
    template = deepcopy(_generated(name))
    WRONG[name](template)
    found = _round_trip_failures(name, template, corpus_dir)
    assert found, "the wrong template reads every round-trip case: it is not wrong"
    report = _check(name, template, corpus_dir)
    assert found <= {result.case for result in report.disagreements}


@pytest.mark.parametrize(
    "name",
    [
        "Qwen-Qwen2.5-7B-Instruct",
        "Qwen-Qwen3-0.6B",
        "Qwen3.5-4B",
        "moonshotai-Kimi-K2",
        "mistralai-Mistral-Nemo-Instruct-2407",
        "meta-llama-Llama-3.1-8B-Instruct",
        "unsloth-Apriel-1.5",
        "GigaChat3-10B-A1.8B",
        "deepseek-ai-DeepSeek-V3.1",
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
    ],
)
def test_our_templates_agree_with_what_the_template_wrote(name, corpus_dir):
    report = _check(name, _generated(name), corpus_dir)
    assert [(r.case, r.details) for r in report.disagreements] == []
    assert sum(r.status == "agrees" for r in report.results) >= 8


def test_the_check_finds_what_a_partial_template_leaves_out(corpus_dir):
    """Kimi-K3 escapes names (&quot;): the partial template, which leaves name escaping out, reads a
    name with a quote as written, and the check says so for that case alone."""
    generated = to_response_template(lower(golden("Kimi-K3")), partial=True)
    assert {item.part for item in generated.left_out} == {"function names", "argument names"}
    report = _check("Kimi-K3", generated.template, corpus_dir)
    assert {r.case for r in report.disagreements} == {"quotes in names"}
    assert sum(r.status == "agrees" for r in report.results) >= 8


# --------------------------------------------------------------------------- transformers' own fallbacks

# The corpus templates of each fallback's family, and the cases where the fallback disagrees with
# what the template wrote. Qwen3-Coder is a Qwen3 MoE checkpoint, a model type of the Qwen 2/3
# fallback, which reads calls as JSON; Qwen3-Coder writes them as XML (the Qwen 3.5 fallback's form).
FALLBACK_FINDINGS = {
    ("qwen2", "Qwen-Qwen2.5-7B-Instruct"): set(),
    ("qwen3", "Qwen-Qwen3-0.6B"): set(),
    ("qwen2", "Qwen-QwQ-32B"): set(),
    ("qwen3_moe", "Qwen3-Coder"): CALL_CASES - {"reasoning and a call"},
    ("qwen3_5", "Qwen3.5-4B"): set(),
    # (a key with a quote: the json dialect does not read it unquoted, as the template writes it)
    ("gemma4", "google-gemma-4-31B-it"): {"null argument", "quotes in names"},
    ("gemma4", "google-gemma-4-31B-it-interleaved"): {"null argument", "quotes in names"},
}


@pytest.mark.parametrize("model_type, name", sorted(FALLBACK_FINDINGS))
def test_transformers_fallbacks_on_their_families(model_type, name, corpus_dir):
    fallback = next(template for types, template in _RESPONSE_TEMPLATE_FALLBACKS.items() if model_type in types)
    report = _check(name, fallback, corpus_dir)
    assert {result.case for result in report.disagreements} == FALLBACK_FINDINGS[(model_type, name)]
    assert sum(result.status == "agrees" for result in report.results) >= 1


def test_serve_streams_one_call_per_region_and_fails_on_a_list():
    """What the README says of transformers serve's streaming path: it takes each tool_calls region as
    one call, so a JSON-array section (one region, a list) fails there, where parse_response reads it."""
    from transformers.cli.serving.utils import response_events_to_chunks
    from transformers.utils.chat_parsing import ResponseParser, parse_response

    outputs = {
        "Qwen3-Coder": "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n</function>\n"
        "</tool_call><|im_end|>",
        "mistralai-Mistral-Nemo-Instruct-2407": '[TOOL_CALLS][{"name": "search", "arguments": {"query": "q"}, '
        '"id": "Ab3De6Gh9"}]</s>',
    }
    events = {}
    for name, output in outputs.items():
        parser = ResponseParser(_generated(name), prefix="")
        events[name] = [event for character in output for event in parser.feed(character)] + parser.finalize()[1]
        assert parse_response(output, _generated(name), prefix="")["tool_calls"][0]["function"]["name"] == "search"
    assert [chunk.name for chunk in response_events_to_chunks(events["Qwen3-Coder"])] == ["search"]
    with pytest.raises(TypeError):
        response_events_to_chunks(events["mistralai-Mistral-Nemo-Instruct-2407"])


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def model_dir(tmp_path, corpus_dir):
    """A model folder as Hugging Face saves one: tokenizer.json, tokenizer_config.json with other keys,
    and Qwen3-Coder's chat template."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")), unk_token="[UNK]"
    )
    tokenizer.chat_template = (corpus_dir / "Qwen3-Coder.jinja").read_text(encoding="utf-8")
    tokenizer.save_pretrained(tmp_path / "model")
    return tmp_path / "model"


def test_into_keeps_every_other_key_and_transformers_reads_it(model_dir):
    config = model_dir / "tokenizer_config.json"
    before = json.loads(config.read_text(encoding="utf-8"))
    code, out, err = run(["response-template", str(model_dir), "--into", str(model_dir)])
    assert (code, out, err) == (0, "", f"wrote the response_template under response_template in {config}\n")
    after = json.loads(config.read_text(encoding="utf-8"))
    written = after.pop("response_template")
    assert after == before and written == _generated("Qwen3-Coder")

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
                },
            },
        }
    ]
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=tools, tokenize=False, add_generation_prompt=True
    )
    output = (
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis, France\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>"
    )
    message = tokenizer.parse_response(output, prefix=prompt, tools=tools)
    assert message["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": {"location": "Paris, France", "days": 3},
    }


def test_output_file_holds_the_template(tmp_path, corpus_dir):
    target = tmp_path / "rt.json"
    code, out, err = run(["response-template", str(corpus_dir / "Qwen3.5-4B.jinja"), "-o", str(target)])
    assert (code, out, err) == (0, "", f"wrote the response_template to {target}\n")
    assert json.loads(target.read_text(encoding="utf-8")) == _generated("Qwen3.5-4B")


def test_inexpressible_is_one_error_line_and_partial_lists_what_it_leaves_out(corpus_dir):
    source = str(corpus_dir / "openbmb-MiniCPM5-1B.jinja")
    code, out, err = run(["response-template", source])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("Error: openbmb-MiniCPM5-1B: object argument values cannot be")
    code, out, err = run(["response-template", source, "--partial"])
    assert code == 0 and "tool_calls" in json.loads(out)["fields"]
    assert err.splitlines() == [
        "left out: object argument values: written as Python literals ({'a': 1}), and transformers casts object "
        "and array values with json.loads only; they come back as text",
        "left out: array argument values: written as Python literals ({'a': 1}), and transformers casts object "
        "and array values with json.loads only; they come back as text",
    ]


def test_check_reads_the_shipped_template_or_the_one_given(model_dir, tmp_path, corpus_dir):
    code, out, err = run(["response-template", str(model_dir), "--check"])
    assert code == 2 and out == "" and "ships no response_template" in err and err.count("\n") == 1
    assert run(["response-template", str(model_dir), "--into", str(model_dir)])[0] == 0
    code, out, err = run(["response-template", str(model_dir), "--check"])
    assert (code, err) == (0, "") and out.startswith("model: 0 of ") and "one call" in out
    wrong = deepcopy(_RESPONSE_TEMPLATE_FALLBACKS[next(t for t in _RESPONSE_TEMPLATE_FALLBACKS if "qwen3_moe" in t)])
    (tmp_path / "wrong.json").write_text(json.dumps(wrong), encoding="utf-8")
    code, out, err = run(["response-template", str(model_dir), "--check", "--against", str(tmp_path / "wrong.json")])
    assert code == 1 and "one call" in out and "disagrees" in out and "json parser could not parse" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--against", "x.json"], "--against needs --check"),
        (["--check", "-o", "x.json"], "--check reads a response_template; it does not write one"),
        (["--check"], "a lone template ships no response_template"),
        (["--into", "nowhere.txt"], "give a model folder or a tokenizer_config.json"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message, corpus_dir):
    code, out, err = run(["response-template", str(corpus_dir / "Qwen3.5-4B.jinja"), *args])
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_into_a_folder_without_a_tokenizer_config_is_one_line_and_exit_2(tmp_path, corpus_dir):
    code, out, err = run(["response-template", str(corpus_dir / "Qwen3.5-4B.jinja"), "--into", str(tmp_path)])
    assert code == 2 and out == "" and err.count("\n") == 1 and "tokenizer_config.json: cannot update" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"fields": {"content": {"content": "nope"}}, "start_anchor": "x"}', "not a valid response_template"),
        ("[1]", "holds no response_template"),
        ("{", "not a JSON file"),
    ],
)
def test_a_bad_template_to_check_is_one_line_and_exit_2(content, message, tmp_path, corpus_dir):
    (tmp_path / "rt.json").write_text(content, encoding="utf-8")
    code, out, err = run(
        ["response-template", str(corpus_dir / "Qwen3.5-4B.jinja"), "--check", "--against", str(tmp_path / "rt.json")]
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_check_without_transformers_says_how_to_get_it(monkeypatch, tmp_path, corpus_dir):
    monkeypatch.setitem(sys.modules, "transformers.utils.chat_parsing", None)
    (tmp_path / "rt.json").write_text(json.dumps(_generated("Qwen3.5-4B")), encoding="utf-8")
    code, out, err = run(
        ["response-template", str(corpus_dir / "Qwen3.5-4B.jinja"), "--check", "--against", str(tmp_path / "rt.json")]
    )
    assert (code, out) == (1, "") and err == (
        "Error: checking a response_template needs transformers: pip install 'transformers>=5.16,<5.25'\n"
    )


def test_config_path_of_a_folder_and_a_file(tmp_path):
    assert config_path(str(tmp_path)) == tmp_path / "tokenizer_config.json"
    config = tmp_path / "config" / "tokenizer_config.json"
    assert config_path(str(config)) == config
