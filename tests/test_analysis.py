"""Specific findings of the analysis on real corpus templates, each checked against the renders.

The golden files pin every field; these tests say in words what matters about each format family,
so a regression reads as a broken fact ("the 9-alphanumeric id requirement is lost"), not a diff.
"""

from __future__ import annotations

import pytest

from analyzer.analysis import analyze
from analyzer.description import (
    Calls,
    Field,
    KeyValueArguments,
    Reasoning,
    Results,
    Unknown,
    pattern_text,
)
from analyzer.sources import load_template
from analyzer.template import Template


@pytest.fixture(scope="module")
def described(corpus_dir):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = analyze(load_template(str(corpus_dir / f"{name}.jinja")))
        return cache[name]

    return get


def calls_of(d) -> Calls:
    assert isinstance(d.calls, Calls), d.calls
    return d.calls


def form(d, json_type):
    arguments = calls_of(d).arguments
    assert isinstance(arguments, KeyValueArguments)
    return next(f for f in arguments.forms if f.json_type == json_type)


def test_chatml_json_call_in_tags(described):
    d = described("Qwen-Qwen2.5-7B-Instruct")
    c = calls_of(d)
    assert d.format == "json"
    assert pattern_text(c.call) == "<tool_call>\n{call}\n</tool_call>"
    assert c.separator == "\n"
    assert c.json_call.name_path == ("name",) and c.json_call.arguments_path == ("arguments",)
    assert d.turn.generation_prompt == "<|im_start|>assistant\n"
    assert d.turn.stop == ("<|im_end|>",)
    assert isinstance(d.results, Results)
    assert "<tool_response>" in pattern_text(d.results.open) and d.results.linked_by == "order"


def test_array_of_json_calls_with_nine_character_ids(described):
    d = described("mistralai-Mistral-Nemo-Instruct-2407")
    c = calls_of(d)
    assert (c.section_open, c.section_close, c.separator) == ("[TOOL_CALLS][", "]", ", ")
    assert c.json_call.id_path == ("id",)
    assert c.ids.accepted == ("alnum9",)
    ((form_name, message),) = c.ids.refused
    assert form_name == "openai" and "alphanumeric strings with length 9" in message
    assert d.results.carries_id and d.results.linked_by == "id"


def test_namespaced_call_index(described):
    d = described("moonshotai-Kimi-K2")
    c = calls_of(d)
    assert d.format == "tag-json"
    assert (
        pattern_text(c.call)
        == "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"
    )
    assert Field("index", 0) in c.call
    assert (c.section_open, c.section_close) == ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
    assert c.ids.written == "generated"


def test_one_based_index(described):
    c = calls_of(described("Kimi-K3"))
    assert Field("index", 1) in c.call


def test_templates_that_only_render_with_list_mutation(described):
    d = described("Kimi-K2-Instruct")
    assert d.format == "tag-json" and d.template.engine == "jinja2-mutable"
    assert any("modify lists" in w for w in d.warnings)


def test_python_call_syntax(described):
    d = described("LFM2.5-8B-A1B")
    c = calls_of(d)
    assert d.format == "python"
    assert (c.section_open, c.section_close, c.separator) == ("<|tool_call_start|>[", "]<|tool_call_end|>", ", ")
    assert pattern_text(c.call) == "{name}({arguments})"
    # Strings are written between quotes the template adds itself, unescaped: raw text in the pattern.
    assert pattern_text(form(d, "string").pattern) == "{key}='{value}'" and form(d, "string").syntax == "raw"
    assert form(d, "boolean").syntax == "python"


def test_custom_string_delimiters(described):
    d = described("google-gemma-4-31B-it")
    assert d.format == "tag-kv"
    assert pattern_text(form(d, "string").pattern) == '{key}:<|"|>{value}<|"|>'
    assert pattern_text(form(d, "integer").pattern) == "{key}:{value}"
    assert calls_of(d).arguments.separator == ","
    assert calls_of(d).arguments.order == "sorted"  # written sorted by name, whatever order it is given in


def test_xml_parameters(described):
    d = described("Qwen3-Coder")
    c = calls_of(d)
    assert pattern_text(c.call) == "<tool_call>\n<function={name}>\n{arguments}\n</function>\n</tool_call>"
    string = form(d, "string")
    assert pattern_text(string.pattern) == "<parameter={key}>\n{value}\n</parameter>" and string.syntax == "raw"
    assert c.arguments.string_escaping == "none"


def test_typed_parameter_markers(described):
    d = described("deepseek-ai-DeepSeek-V3.2")
    assert 'string="true"' in pattern_text(form(d, "string").pattern)
    assert 'string="false"' in pattern_text(form(d, "integer").pattern)


def test_recipient_header_and_channels(described):
    d = described("openai-gpt-oss-120b")
    c = calls_of(d)
    # <|call|> ends the call turn (content turns end with <|end|>): a stop, not part of the call
    assert pattern_text(c.call) == "to=functions.{name}<|channel|>commentary json<|message|>{arguments}"
    assert (d.turn.call_end, d.turn.final_end) == ("<|call|>", "<|return|>")
    assert d.capabilities.parallel_calls.status == "dropped"
    assert isinstance(d.reasoning, Reasoning)
    assert d.reasoning.open == "<|channel|>analysis<|message|>" and d.reasoning.field == "thinking"
    assert d.turn.content_open == "<|channel|>final<|message|>"


def test_single_call_only_is_a_refusal_with_the_templates_words(described):
    d = described("meta-llama-Llama-3.1-8B-Instruct")
    assert d.capabilities.parallel_calls.status == "refused"
    assert "single tool-call" in d.capabilities.parallel_calls.message
    c = calls_of(d)
    assert pattern_text(c.call) == "{call}" and c.json_call.arguments_path == ("parameters",)
    assert isinstance(c.separator, Unknown)


def test_id_before_name(described):
    c = calls_of(described("upstage-Solar-Open-100B"))
    assert (
        pattern_text(c.call)
        == "<|tool_call:begin|>{id}<|tool_call:name|>{name}<|tool_call:args|>{arguments}<|tool_call:end|>"
    )


def test_name_as_json_key(described):
    c = calls_of(described("Apertus-8B-Instruct"))
    assert c.json_call.name_is_key and (c.section_open, c.section_close) == ("<|tools_prefix|>[", "]<|tools_suffix|>")


def test_counter_id_field_and_reasoning_only_with_tool_calls(described):
    d = described("CohereForAI-c4ai-command-r7b-12-2024-tool_use")
    c = calls_of(d)
    assert c.json_call.index_path == ("tool_call_id",) and c.json_call.index_base == 0
    assert c.json_call.name_path == ("tool_name",) and c.json_call.arguments_path == ("parameters",)
    assert d.reasoning.open == "<|START_THINKING|>" and d.reasoning.close == "<|END_THINKING|>"


def test_reasoning_opened_by_the_prompt(described):
    d = described("Qwen3.5-4B")
    assert d.reasoning.forced_open and d.reasoning.open == "<think>\n"
    assert d.reasoning.close == "\n</think>\n\n"
    assert d.turn.generation_prompt.endswith("<think>\n")


def test_reasoning_kept_only_on_tool_call_turns(described):
    d = described("Kimi-K2-Thinking")
    assert d.reasoning.scope == "turns with tool calls"
    assert (d.reasoning.open, d.reasoning.close) == ("<think>", "</think>")


def test_separate_messages_per_call(described):
    c = calls_of(described("muse-glimmer"))
    assert c.separator == "<|eom|><|start|>assistant to="
    assert [p for p in c.call if isinstance(p, Field)].count(Field("name")) == 2


@pytest.mark.parametrize(
    "name",
    [
        "HuggingFaceTB-SmolLM3-3B",
        "google-gemma-2-2b-it",
        "microsoft-Phi-3.5-mini-instruct",
        "llama-cpp-rwkv-world",
        "LFM2-8B-A1B",
    ],
)
def test_templates_without_tool_calls(described, name):
    d = described(name)
    assert d.format == "none" and isinstance(d.calls, Unknown)


def test_template_variables_of_its_own(described):
    d = described("fireworks-ai-llama-3-firefunction-v2")
    assert any("functions" in w for w in d.warnings)
    assert calls_of(d).section_open == " functools["


def test_every_corpus_template_analyses(corpus_paths):
    formats = {}
    for path in corpus_paths:
        formats[path.stem] = analyze(load_template(str(path))).format
    assert len(formats) == 70
    assert "unknown" not in formats.values(), [n for n, f in formats.items() if f == "unknown"]


def test_every_corpus_template_analyses_with_jinja2(corpus_paths):
    """The transformers-style engine gives the same format class wherever both engines render the same."""
    differ = {}
    for path in corpus_paths:
        template = load_template(str(path))
        with_jinja2 = analyze(template, engine="jinja2")
        with_minijinja = analyze(template)
        if with_jinja2.format != with_minijinja.format:
            differ[path.stem] = (with_jinja2.format, with_minijinja.format)
    # The one known difference (see the engine notes): jinja2 cannot ``tojson`` the lazy ``map()``
    # this template builds (transformers fails the same way), so it renders no call there.
    assert differ == {"llama-cpp-deepseek-r1": ("none", "tag-json")}


def test_result_wrapper_names_the_tool_as_a_field(described):
    d = described("openai-gpt-oss-120b")
    assert pattern_text(d.results.open) == '<|start|>functions.{name} to=assistant<|channel|>commentary<|message|>"'
    assert d.results.linked_by == "name"


def test_a_template_minijinja_cannot_render_is_analysed_under_jinja2(tmp_path):
    """minijinja has no ``str.removeprefix``; the template renders under jinja2 as transformers runs it,
    so the analysis is of that, and says why, instead of failing or reporting format none."""
    source = (
        "{{ 'x'.removeprefix('x') }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    template = Template(source, "strmethods", "mem:strmethods")
    description = analyze(template)
    assert description.template.engine == "jinja2"
    assert any(w.startswith("renders only under jinja2 (minijinja: unknown method") for w in description.warnings)
    assert description.format == "none"
