"""The model's own tokenizer, where one comes with the template: token counts are then real counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.template import Template

TOKENS_UNKNOWN = "unknown (no tokenizer)"


def tokenizer_beside(template: Template) -> Any | None:
    """The tokenizer when a tokenizer.json sits beside the template (a Hugging Face model folder); None
    otherwise: no estimate stands in for a count."""
    try:
        origin = Path(template.origin)
        folder = origin if origin.is_dir() else origin.parent
        path = folder / "tokenizer.json"
        if template.origin == "-" or not path.is_file():
            return None
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path))
    except Exception:
        return None


def token_count(template: Template, text: str) -> int | str:
    """Tokens in ``text`` by the template's own tokenizer, or ``TOKENS_UNKNOWN``."""
    tokenizer = tokenizer_beside(template)
    if tokenizer is None:
        return TOKENS_UNKNOWN
    return len(tokenizer.encode(text, add_special_tokens=False).ids)
