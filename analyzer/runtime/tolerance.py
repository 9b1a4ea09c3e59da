"""The ways real model output departs from what its template writes that the parser reads anyway.

Models do not write exactly what their templates render: they add whitespace, leave a framing marker
out, write Python where JSON was asked for, or stop at their end token before a closer. Each such
departure is read by a rule over the output shape, never by a rule keyed on a template, and each
rule applied is recorded in the message as a ``ParseWarning`` of its kind (with the offset in the
output where it applied), so that an audit can count deviations. A strict parser applies none of
them: it reads only what the template writes.

What a tolerance never does: invent text. Every character still ends up in content, reasoning, a
call or an error; a tolerance only decides which.
"""

from __future__ import annotations

# Whitespace between the parts of a marker the template writes joined ("[TOOL_CALLS] [").
MARKER_WHITESPACE = "marker_whitespace"
# A call written without an opening marker the template writes before a distinctive one: the section
# opener before the call's own, or a call's first marker ("<function=run>" with no "<tool_call>").
MISSING_OPENER = "missing_opener"
# A call's or a section's closing text cut short or missing where the output ends (the model stopped
# at its end token), or before the next call: what was written is read as the whole call.
MISSING_CLOSER = "missing_closer"
# Bare JSON calls (or a JSON reply) inside a markdown code fence.
CODE_FENCE = "code_fence"
# Values in the other common literal syntax than the template's: Python (single quotes, True/False/None)
# where it writes JSON, JSON (true, null) where it writes Python.
LITERAL_SYNTAX = "literal_syntax"
# Arguments as a JSON-encoded string where the template writes an object, or the reverse.
ARGUMENTS_ENCODING = "arguments_encoding"
# A common alternative key in a JSON call object ("parameters" for "arguments", "function" for "name").
KEY_SPELLING = "key_spelling"
# Calls separated otherwise than the template separates them (";", a newline, nothing).
CALL_SEPARATOR = "call_separator"
# Calls as one JSON list where the template writes one object per call, or the reverse.
CALL_LIST = "call_list"
# The reasoning opener written again after the prompt opened the block.
REPEATED_REASONING_OPENER = "repeated_reasoning_opener"
# A reasoning closer first in the output, with no opener, where the prompt may have opened the block:
# an empty block.
UNOPENED_REASONING = "unopened_reasoning"
# A reasoning closer where no block is open, after one closed: a stray marker, dropped.
STRAY_REASONING_MARKER = "stray_reasoning_marker"
# The marker the generation prompt ends with (the assistant header's) written again first.
REPEATED_PROMPT_MARKER = "repeated_prompt_marker"
# A header (two marker tokens with words between: a call's ``<|channel|>commentary json<|message|>``, the
# content wrapper's) with another word between its tokens, one the template writes there in another
# message's header, or with its first word alone (headers.py).
HEADER_WORD = "header_word"
# A call header whose channel part (its first token and word) comes first and the part naming the call
# after it, as the template's other headers start with that token (headers.py).
HEADER_ORDER = "header_order"
# A token of the header's own bracketing that the template never writes, before the words after a
# header's channel (a call's ``<|channel|>commentary <|constrain|>json<|message|>``, the content
# wrapper's ``<|channel|>final <|constrain|>json<|message|>``): skipped (headers.py).
HEADER_TOKEN = "header_token"

# A header begun and begun again: its first token and words with no second token, then the first token
# again (``<|channel|>commentary to=assistant<|channel|>analysis<|message|>``): the first, dropped (headers.py).
ABANDONED_HEADER = "abandoned_header"

TOLERANCES = {
    MARKER_WHITESPACE: "whitespace between the parts of a marker the template writes joined",
    MISSING_OPENER: "a call without an opening marker the template writes before a distinctive one",
    MISSING_CLOSER: "a call's or section's closing text missing where the output ends, or before the next call",
    CODE_FENCE: "JSON inside a markdown code fence",
    LITERAL_SYNTAX: "a value in the other literal syntax than the template's (Python for JSON, or JSON for Python)",
    ARGUMENTS_ENCODING: "arguments as a JSON string where the template writes an object, or the reverse",
    KEY_SPELLING: "an alternative key for a field of a JSON call object",
    CALL_SEPARATOR: "calls separated otherwise than the template separates them",
    CALL_LIST: "calls as a JSON list where the template writes one object per call, or the reverse",
    REPEATED_REASONING_OPENER: "the reasoning opener written again after the prompt opened the block",
    UNOPENED_REASONING: "a reasoning closer with no opener, where the prompt may have opened the block",
    STRAY_REASONING_MARKER: "a reasoning closer where no block is open, after one closed",
    REPEATED_PROMPT_MARKER: "the marker the generation prompt ends with, written again first",
    HEADER_WORD: "a header with another word between its markers, one the template writes there, or its first alone",
    HEADER_ORDER: "a call header's channel part written before the part that names the call",
    ABANDONED_HEADER: "a header's first token and words, then that token again: the first header dropped",
    HEADER_TOKEN: "a token the template never writes, bracketed as the header's, before a header's last words",
}
