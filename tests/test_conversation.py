"""The one rendering API (analyzer.render.conversation): a conversation spelled the way the analysis
found the template takes it, rendered with the engine and variables the analysis used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.analysis import analyze
from analyzer.errors import ConversationError, RenderError
from analyzer.render.conversation import Failed, Renderer, Spelling, check_conversation, non_text_part
from analyzer.sources import load_template

CALLED = [
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "think",
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"},
]

# A template that reads reasoning under "thinking", a variable of its own (which fails unbound, so the
# analysis binds it) and enable_thinking.
SMALL = """{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}
[{{ m.thinking }}]{% for c in m.tool_calls %}<call id={{ c.id }}>{{ c.function.arguments }}</call>{% endfor %}
{%- else -%}<{{ m.role }}>{{ m.content }}{% if m.tool_call_id %} for {{ m.tool_call_id }}{% endif %}</{{ m.role }}>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<assistant>{% if enable_thinking %}<think>{% endif %}{{ house_style + ''
}}{%- endif -%}"""


def test_spelling_rewrites_each_field_and_leaves_the_callers_messages_alone() -> None:
    spelling = Spelling(content_with_calls=None, arguments_as_string=False, reasoning_key="thinking")
    spelled = spelling.spell(CALLED)
    turn = spelled[1]
    assert turn["thinking"] == "think" and "reasoning_content" not in turn
    assert turn["content"] is None
    assert turn["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert CALLED[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert spelling.spell(spelled) == spelled  # spelling twice changes nothing
    as_text = Spelling(arguments_as_string=True).spell(spelled)
    assert json.loads(as_text[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}


def test_renamed_ids_keep_results_pointing_at_their_call() -> None:
    seen = []

    def rename(old: str, count: int) -> str | None:
        seen.append((old, count))
        return f"X{count}"

    spelled = Spelling().spell(CALLED, rename)
    assert spelled[1]["tool_calls"][0]["id"] == "X0" and spelled[2]["tool_call_id"] == "X0"
    assert seen == [("call_abc", 0)]
    kept = Spelling().spell(CALLED, lambda old, count: None)
    assert kept[1]["tool_calls"][0]["id"] == kept[2]["tool_call_id"] == "call_abc"


@pytest.mark.parametrize(
    "messages, message",
    [
        (["not an object"], "message 1 is not an object"),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}],
            "call to 'f': arguments are not valid JSON",
        ),
    ],
)
def test_a_malformed_conversation_is_one_clear_error(messages, message) -> None:
    with pytest.raises(ConversationError, match=message):
        Spelling().spell(messages)


def test_renderer_renders_as_analysed(tmp_template) -> None:
    template = load_template(str(tmp_template(SMALL)))
    description = analyze(template)
    renderer = Renderer.for_template(template, description)
    assert renderer.engine == description.template.engine
    assert renderer.context == {name: "" for name in description.bound_variables}
    assert "house_style" in description.bound_variables
    text = renderer.render(CALLED, generation_prompt=True, thinking=True)
    assert text.endswith("<assistant><think>")
    assert "<tool>sunny for call_abc</tool>" in text
    assert renderer.render(CALLED, generation_prompt=True, thinking=False).endswith("<assistant>")
    # a variable the caller sets wins over the analysis's binding
    assert renderer.render(CALLED[:1], generation_prompt=True, extra={"house_style": "Zqz"}).endswith("Zqz")


def test_attempt_returns_a_failed_render(tmp_template) -> None:
    refusing = (
        "{%- if messages[0].role == 'system' %}{{ raise_exception('no system messages') }}{% endif -%}"
        "{%- for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    )
    template = load_template(str(tmp_template(refusing)))
    renderer = Renderer.for_template(template, analyze(template))
    assert renderer.attempt([{"role": "user", "content": "x"}]) == "<user>x"
    failed = renderer.attempt([{"role": "system", "content": "x"}])
    assert isinstance(failed, Failed) and failed.refused and "no system messages" in failed.message
    with pytest.raises(RenderError):
        renderer.render([{"role": "system", "content": "x"}])


def test_ids_take_the_form_the_template_accepts_on_the_corpus(corpus_paths: list[Path]) -> None:
    """Every corpus template renders a client's conversation with calls and results: OpenAI-style ids
    are kept where the template takes them, rewritten where it insists on another form, the result
    pointing at its call's new id, and the same client id always giving the same new id."""
    rewritten = kept = 0
    for path in corpus_paths:
        template = load_template(str(path))
        description = analyze(template)
        renderer = Renderer.for_template(template, description)
        spelled = renderer.spell(CALLED)
        new_id = spelled[1]["tool_calls"][0]["id"]
        assert spelled[2]["tool_call_id"] == new_id, path.stem
        assert renderer.spell(CALLED) == spelled, path.stem
        if description.input_form.id_form == "openai":
            assert new_id == "call_abc", path.stem
            kept += 1
        else:
            assert new_id != "call_abc" and len(new_id) == 9 and new_id.isalnum(), path.stem
            rewritten += 1
    assert kept > 50 and rewritten >= 1


def test_the_mutable_fallback_is_kept(corpus_dir: Path) -> None:
    template = load_template(str(corpus_dir / "Kimi-K2-Instruct.jinja"))
    description = analyze(template)
    assert description.template.engine == "jinja2-mutable"
    assert Renderer.for_template(template, description, engine="minijinja").engine == "jinja2-mutable"


# --------------------------------------------------------------------------- content given as parts

PARTS = [
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": [{"type": "text", "text": "What is"}, {"type": "text", "text": "the weather?"}]},
]


def test_parts_become_their_text_for_a_template_that_does_not_read_them() -> None:
    spelled = Spelling().spell(PARTS)
    assert [m["content"] for m in spelled] == ["Be brief.", "What is\nthe weather?"]  # joined as llama-server does
    assert Spelling(content_parts=True).spell(PARTS) == PARTS  # a template that reads parts gets them as sent
    assert isinstance(PARTS[1]["content"], list)  # the caller's messages are not changed


def test_a_part_a_text_only_template_cannot_render_is_an_error_naming_it() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [PARTS[0], {"role": "user", "content": [{"type": "text", "text": "Look:"}, image]}]
    with pytest.raises(ConversationError, match=r"^message 2, content part 2: an image_url part: the template takes"):
        Spelling().spell(messages)
    assert non_text_part(messages) == "message 2, content part 2: an image_url part"
    assert non_text_part(PARTS) is None


@pytest.mark.parametrize(
    "part, said",
    [
        ("text", 'message 1, content part 1: a part must be an object with a "type", not a string'),
        ({"type": "text", "text": 3}, 'message 1, content part 1: a text part needs "text" as a string, not a number'),
    ],
)
def test_a_malformed_part_is_one_clear_error(part: object, said: str) -> None:
    with pytest.raises(ConversationError, match=said):
        check_conversation([{"role": "user", "content": [part]}])


@pytest.mark.parametrize(
    "name",
    [
        "Qwen-Qwen3-0.6B",
        "mistralai-Mistral-Nemo-Instruct-2407",
        "meta-llama-Llama-3.1-8B-Instruct",
        "moonshotai-Kimi-K2",
    ],
)
def test_parts_render_as_the_same_text_as_strings_on_the_corpus(corpus_dir: Path, name: str) -> None:
    """Qwen3 and Mistral failed on parts and Llama 3.1 wrote their Python text; Kimi K2 reads them."""
    template = load_template(str(corpus_dir / f"{name}.jinja"))
    renderer = Renderer.for_template(template, analyze(template))
    as_strings = [{"role": "user", "content": "What is the weather?"}]
    as_parts = [{"role": "user", "content": [{"type": "text", "text": "What is the weather?"}]}]
    prompt = renderer.render(as_strings, generation_prompt=True)
    assert renderer.render(as_parts, generation_prompt=True) == prompt and "'text'" not in prompt
