"""The grammar backend: an output shape as a GBNF grammar for llama-server (``grammar``), over the JSON
Schema rules of a tool's arguments (``json_schema``), the rules of values in a range or a pattern
(``values``), text that holds none of some words (``words``) and, at the bottom, the small GBNF text
toolkit all of them write with (``text``).
Each module imports only those below it."""

from analyzer.backends.gbnf.grammar import (
    TRIGGER_PATTERN,
    TRIGGER_PATTERN_FULL,
    TRIGGER_WORD,
    Grammar,
    llama_server_fields,
    preserved_tokens,
    to_grammar,
)
from analyzer.backends.gbnf.words import text_until

__all__ = [
    "TRIGGER_PATTERN",
    "TRIGGER_PATTERN_FULL",
    "TRIGGER_WORD",
    "Grammar",
    "llama_server_fields",
    "preserved_tokens",
    "text_until",
    "to_grammar",
]
