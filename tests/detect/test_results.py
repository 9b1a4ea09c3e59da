"""detect/results.py on toy templates: the wrapper a tool result is written in, what links it to its
call (id, name, or order), how JSON content is written, where results go (own turn, user turn, inside
the assistant turn), a wrapper shared by consecutive results, and what is unknown when no result shows."""

from __future__ import annotations

import pytest
from helpers.toy import CONTENT, HEAD, JSON_CALLS, chat, describe

from analyzer.description import Field, Results, Text, Unknown, pattern_text

NEXT_IS_TOOL = "(not loop.last and messages[loop.index0 + 1].role == 'tool')"
PREVIOUS_IS_TOOL = "(loop.index0 > 0 and messages[loop.index0 - 1].role == 'tool')"


def results_of(source: str) -> Results:
    results = describe(source).results
    assert isinstance(results, Results), results
    return results


def written_back(results: Results, *contents: str) -> str:
    """Consecutive results as the description writes them (wrappers without fields)."""
    assert isinstance(results.separator, str)
    one = [pattern_text(results.open) + content + pattern_text(results.close) for content in contents]
    return pattern_text(results.group_open) + results.separator.join(one) + pattern_text(results.group_close)


def test_a_turn_of_their_own_linked_by_order():
    results = results_of(chat())
    assert (results.open, results.close) == ((Text("<|turn|>tool\n"),), (Text("<|end|>\n"),))
    assert (results.rendered_as, results.linked_by) == ("own turn", "order")
    assert not results.carries_id and not results.carries_name
    assert results.separator == "" and results.json_content == "as is"
    assert (results.group_open, results.group_close) == ((), ())
    assert written_back(results, "A", "B") == "<|turn|>tool\nA<|end|>\n<|turn|>tool\nB<|end|>\n"


def test_linked_by_the_call_id():
    results = results_of(chat(tool="<|turn|>tool id={{ m.tool_call_id }}\n{{ m.content }}<|end|>\n"))
    assert results.open == (Text("<|turn|>tool id="), Field("id"), Text("\n"))
    assert results.carries_id and results.linked_by == "id"


def test_linked_by_the_end_of_the_call_id():
    """A template may keep only the last characters of an id (nine, as some models' ids have)."""
    results = results_of(chat(tool="<|turn|>tool id={{ m.tool_call_id[-9:] }}\n{{ m.content }}<|end|>\n"))
    assert results.open == (Text("<|turn|>tool id="), Field("id"), Text("\n"))
    assert results.linked_by == "id"


def test_linked_by_the_tool_name():
    results = results_of(chat(tool="<|turn|>tool name={{ m.name }}\n{{ m.content }}<|end|>\n"))
    assert results.open == (Text("<|turn|>tool name="), Field("name"), Text("\n"))
    assert results.carries_name and not results.carries_id
    assert results.linked_by == "name"


def test_written_as_a_user_turn():
    results = results_of(chat(tool="<|turn|>user\n{{ m.content }}<|end|>\n"))
    assert results.rendered_as == "user turn"
    assert (pattern_text(results.open), pattern_text(results.close)) == ("<|turn|>user\n", "<|end|>\n")


@pytest.mark.xfail(
    strict=True,
    reason=(
        "one turn per result with a tag inside (<|turn|>tool\\n<result>...</result><|end|>\\n) is described as "
        "results sharing a group closer: group_open '', open '<|turn|>tool\\n<result>', close '</result>', "
        "separator '', group_close '<|end|>\\n' (the diff of one and two results slides over the turn end), so "
        "written back from the description two results lose the '<|end|>\\n' between them"
    ),
)
def test_a_turn_per_result_with_a_tag_inside():
    results = results_of(chat(tool="<|turn|>tool\n<result>{{ m.content }}</result><|end|>\n"))
    assert (
        written_back(results, "A", "B")
        == "<|turn|>tool\n<result>A</result><|end|>\n<|turn|>tool\n<result>B</result><|end|>\n"
    )


def test_written_inside_the_assistant_turn():
    """The assistant turn stays open while results follow its calls."""
    assistant = HEAD + CONTENT + JSON_CALLS + "{% if not " + NEXT_IS_TOOL + " %}<|end|>\n{% endif %}"
    tool = "\nResult: {{ m.content }}\n{% if not " + NEXT_IS_TOOL + " %}<|end|>\n{% endif %}"
    results = results_of(chat(assistant, tool=tool))
    assert results.rendered_as == "inside the assistant turn"


def test_consecutive_results_share_one_turn():
    tool = (
        "{% if not " + PREVIOUS_IS_TOOL + " %}<|turn|>tool\n{% endif %}<result>{{ m.content }}</result>"
        "{% if not " + NEXT_IS_TOOL + " %}<|end|>\n{% endif %}"
    )
    results = results_of(chat(tool=tool))
    assert (pattern_text(results.group_open), pattern_text(results.group_close)) == ("<|turn|>tool\n", "<|end|>\n")
    assert (pattern_text(results.open), pattern_text(results.close)) == ("<result>", "</result>")
    assert written_back(results, "A", "B") == "<|turn|>tool\n<result>A</result><result>B</result><|end|>\n"


def test_separator_between_two_results():
    tool = (
        "{% if not " + PREVIOUS_IS_TOOL + " %}<|turn|>tool\n{% else %}{{ '\\n' }}{% endif %}<result>{{ m.content }}"
        "</result>{% if not " + NEXT_IS_TOOL + " %}<|end|>\n{% endif %}"
    )
    results = results_of(chat(tool=tool))
    assert results.separator == "\n"
    assert written_back(results, "A", "B") == "<|turn|>tool\n<result>A</result>\n<result>B</result><|end|>\n"


def test_json_content_quoted_into_a_string():
    results = results_of(chat(tool="<|turn|>tool\n{{ m.content | tojson }}<|end|>\n"))
    assert results.json_content == "quoted"


def test_results_that_are_not_written_are_unknown():
    assert describe(chat(tool="")).results == Unknown("the tool result text is not written")


def test_results_the_template_refuses_are_unknown_with_its_words():
    results = describe(chat(tool="{{ raise_exception('no tool role here') }}")).results
    assert isinstance(results, Unknown) and "no tool role here" in results.reason
