"""The one type every later stage receives from a template source."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Template:
    """Chat template text plus where it came from.

    ``bos_token``/``eos_token`` are the token texts the source declared (tokenizer config, GGUF
    vocabulary); ``None`` when the source does not say, in which case renders use neutral defaults.
    ``add_bos`` is whether the tokenizer puts a BOS token before every prompt itself, where the
    source says (``add_bos_token``); ``None`` when it does not.
    ``variants`` names the other templates the same source holds (``tool_use``, ``default``, ...).
    """

    source: str
    name: str
    origin: str
    bos_token: str | None = None
    eos_token: str | None = None
    add_bos: bool | None = None
    variant: str | None = None
    variants: tuple[str, ...] = field(default=())

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()
