"""detect/turn.py on toy templates: the generation prompt, what history adds at the start of a turn,
the content wrapper, the turn end and the stop string."""

from __future__ import annotations

import pytest
from helpers.toy import CONTENT, END, HEAD, JSON_CALLS, calls_of, chat, describe

from analyzer.description import Text, Unknown


def test_generation_prompt_turn_end_and_stop():
    turn = describe(chat()).turn
    assert turn.generation_prompt == "<|turn|>assistant\n"
    assert turn.end == "<|end|>\n"
    assert turn.stop == ("<|end|>",)
    assert (turn.history_prefix, turn.content_open, turn.content_close) == ("", "", "")


def test_bracketed_markers_and_an_end_of_sentence_token():
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]"
        "{% elif m.role == 'assistant' %}" + CONTENT + JSON_CALLS + "</s>{% endif %}{% endfor %}"
    )
    turn = describe(source).turn
    assert turn.generation_prompt == ""
    assert turn.end == "</s>" and turn.stop == ("</s>",)


def test_what_history_writes_at_the_start_of_every_assistant_turn_is_the_history_prefix():
    """The model writes it: the generation prompt does not."""
    turn = describe(chat(HEAD + "<ctx/>" + CONTENT + JSON_CALLS + END)).turn
    assert turn.generation_prompt == "<|turn|>assistant\n"
    assert turn.history_prefix == "<ctx/>"
    assert turn.content_open == ""


def test_content_wrapper_written_only_around_plain_content():
    assistant = (
        HEAD + "{% if m.tool_calls %}" + JSON_CALLS + "{% else %}<answer>" + CONTENT + "</answer>{% endif %}" + END
    )
    turn = describe(chat(assistant)).turn
    assert (turn.content_open, turn.content_close) == ("<answer>", "</answer>")
    assert turn.end == "<|end|>\n" and turn.stop == ("<|end|>",)


def test_no_end_marker_of_its_own_stops_on_the_next_header():
    """<|user|> opens the next turn and nothing closes the assistant's: the end is empty, the stop is
    the next header."""
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}<|user|>\n{{ m.content }}\n"
        "{% elif m.role == 'assistant' %}<|assistant|>\n" + CONTENT + JSON_CALLS + "\n{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    turn = describe(source).turn
    assert turn.generation_prompt == "<|assistant|>\n"
    assert turn.end == ""
    assert turn.stop == ("<|user|>",)


def test_no_content_written_gives_an_unknown_end():
    turn = describe(chat(HEAD + JSON_CALLS + END)).turn
    assert turn.end == Unknown("assistant content is not written")
    assert turn.stop == ()


def test_a_prompt_the_template_refuses_gives_an_unknown_generation_prompt():
    source = chat(prompt="{{ raise_exception('generation is not supported') }}")
    prompt = describe(source).turn.generation_prompt
    assert isinstance(prompt, Unknown) and "generation is not supported" in prompt.reason


def test_a_user_message_after_the_assistant_that_does_not_render_gives_an_unknown_end():
    user = (
        "{% if loop.index0 > 0 and messages[loop.index0 - 1].role == 'assistant' %}"
        "{{ raise_exception('the user may not follow the assistant') }}{% endif %}<|turn|>user\n"
        "{{ m.content }}<|end|>\n"
    )
    turn = describe(chat(user=user)).turn
    assert turn.end == Unknown("a user message after an assistant message does not render")
    # The stop still comes from what ends the final turn.
    assert turn.stop == ("<|end|>",)


def test_a_template_that_always_writes_the_generation_prompt_ends_its_turn_at_its_own_end():
    """The prompt reads as "" (it is written whether asked for or not), so the next header is known by
    the way the conversation's first header starts: the turn end does not take the next header's first
    token (command-r7b's <|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|>), and the calls end before it."""
    always = chat(HEAD + CONTENT + JSON_CALLS + "<|end|>").replace(
        "{% if add_generation_prompt %}<|turn|>assistant\n{% endif %}", "<|turn|>assistant\n"
    )
    assert always.count("<|turn|>assistant\n") == 2
    description = describe(always)
    assert description.turn.generation_prompt == ""
    assert description.turn.end == "<|end|>" and description.turn.stop == ("<|end|>",)
    assert calls_of(description).section_close == ""


def test_a_turn_end_of_two_markers_stops_at_the_one_every_turn_ends_with():
    """Apriel-1.5: every turn ends with <|end|>, the assistant's then with </s>; a model's turn is over
    once it writes <|end|>, the token its vocabulary marks end-of-generation."""
    turn = describe(chat(HEAD + CONTENT + JSON_CALLS + "<|end|>\n</s>")).turn
    assert turn.end == "<|end|>\n</s>"
    assert turn.stop == ("<|end|>",)


def test_json_separators_are_read_from_the_calls():
    assert calls_of(describe(chat())).json_separators == (", ", ": ")
    assert calls_of(describe(chat())).json_indent == ("", "")


@pytest.mark.parametrize(
    ("written", "indent"),
    [
        ("tc.function | tojson(indent=2)", ("  ", "")),
        # The template's own indenting moves every line after the first: a base under every level.
        ("tc.function | tojson(indent=4) | indent(3)", ("    ", "   ")),
    ],
)
def test_indented_json_is_read_with_its_unit_and_base(written, indent):
    calls = "{% for tc in m.tool_calls or [] %}<call>{{ " + written + " }}</call>{% endfor %}"
    found = calls_of(describe(chat(calls=calls)))
    assert (found.json_separators, found.json_indent) == ((",", ": "), indent)


def test_json_indented_by_no_one_rule_is_unknown():
    """A level of three spaces, then two more: no ``json.dumps(indent=...)`` writes it."""
    calls = (
        "{% for tc in m.tool_calls or [] %}<call>"
        '{{ tc.function | tojson(indent=2) | replace("\\n  ", "\\n   ") }}</call>{% endfor %}'
    )
    found = calls_of(describe(chat(calls=calls)))
    assert isinstance(found.json_indent, Unknown) and "not written by one rule" in found.json_indent.reason
    assert isinstance(found.json_separators, Unknown)


def test_a_call_turn_with_its_own_end_marker_stops_there_too():
    """<|eom|> ends a turn with calls, <|end|> one with content: both are stops, and the calls section
    holds no closer (the call turn's end is not part of the calls)."""
    assistant = HEAD + CONTENT + "{% if m.tool_calls %}" + JSON_CALLS + "<|eom|>\n{% else %}" + END + "{% endif %}"
    description = describe(chat(assistant))
    turn = description.turn
    assert (turn.end, turn.call_end, turn.final_end) == ("<|end|>\n", "<|eom|>", "")
    assert turn.stop == ("<|end|>", "<|eom|>")
    assert calls_of(description).section_close == ""


def test_a_closer_written_after_every_call_is_not_a_call_turn_end():
    """<|eom|> after each call closes a call (a turn of two calls writes it twice): the turn itself is
    left open, and the next header ends it."""
    calls = "{% for tc in m.tool_calls or [] %}<call>{{ tc.function | tojson }}</call><|eom|>{% endfor %}"
    assistant = HEAD + CONTENT + "{% if m.tool_calls %}" + calls + "\n{% else %}" + END + "{% endif %}"
    turn = describe(chat(assistant)).turn
    assert turn.call_end == "<|turn|>"
    assert turn.stop == ("<|end|>", "<|turn|>")


def test_a_call_turn_left_open_ends_where_the_next_header_starts():
    """Content turns end with <|end|>, turns with calls with nothing: the next turn's header follows the
    calls, so its first marker is what a model taught by these renders writes next, and a stop; the
    tool results' wrapper keeps it as their turn's start."""
    assistant = HEAD + CONTENT + "{% if m.tool_calls %}" + JSON_CALLS + "\n{% else %}" + END + "{% endif %}"
    description = describe(chat(assistant))
    turn = description.turn
    assert (turn.end, turn.call_end) == ("<|end|>\n", "<|turn|>")
    assert turn.stop == ("<|end|>", "<|turn|>")
    results = description.results
    assert not isinstance(results, Unknown) and results.open == (Text("<|turn|>tool\n"),)


def test_results_written_inside_the_turn_are_not_a_call_turn_end():
    """A user message after the calls still closes the turn with <|end|>: what a tool result follows
    (its own <res> wrapper inside the turn) does not end the turn, nor does the calls' closer </calls>."""
    calls = "{% if m.tool_calls %}<calls>" + JSON_CALLS + "</calls>{% endif %}"
    assistant = HEAD + CONTENT + calls + "{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}" + END
    assistant += "{% endif %}"
    tool = "<res>{{ m.content }}</res>{% if loop.last %}" + END + "{% endif %}"
    description = describe(chat(assistant, tool=tool))
    assert description.turn.call_end == ""
    assert description.turn.stop == ("<|end|>",)
    assert calls_of(description).section_close == "</calls>"


def test_the_last_message_with_an_end_of_its_own_stops_there_too():
    """<|return|> closes the last assistant message, <|end|> every earlier one."""
    assistant = HEAD + CONTENT + JSON_CALLS + "{% if loop.last %}<|return|>{% else %}" + END + "{% endif %}"
    turn = describe(chat(assistant)).turn
    assert (turn.end, turn.final_end) == ("<|end|>\n", "<|return|>")
    assert turn.stop == ("<|end|>", "<|return|>")


def test_a_last_message_that_writes_the_turn_end_has_no_end_of_its_own():
    """Text the template appends after the last message comes after the turn's end: not an end."""
    assistant = HEAD + CONTENT + JSON_CALLS + END + "{% if loop.last %}<|note|>{% endif %}"
    turn = describe(chat(assistant)).turn
    assert turn.final_end == ""
    assert turn.stop == ("<|end|>",)


def test_a_stop_the_model_writes_inside_its_turn_is_no_stop_where_the_last_message_has_its_own_end():
    """Reasoning closed by <|end|><|start|>assistant, the last message by <|return|>: a server stopping
    on <|end|> would cut every reply after its reasoning."""
    reasoning = "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}<|end|><|start|>assistant{% endif %}"
    ending = "{% if loop.last %}<|return|>{% else %}" + END + "{% endif %}"
    turn = describe(chat(HEAD + reasoning + CONTENT + JSON_CALLS + ending)).turn
    assert (turn.end, turn.final_end) == ("<|end|>\n", "<|return|>")
    assert turn.stop == ("<|return|>",)
