"""Does a GBNF grammar accept a text? Asked of llama.cpp's own grammar engine, through its
``test-gbnf-validator`` (built beside llama-server by .ci/build-llama-server, from the same pinned
sdist): the program llama-server's sampler uses to hold a model to a grammar, fed the text one
code point at a time, with no tokenizer and no lazy trigger (the text given starts where the grammar
starts).

The validator exits 0 whether it accepts or not and says which on stdout; a grammar it cannot parse
is exit 1 with the parser's error on stderr."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from helpers.built import llama_server_binary
from helpers.gbnf_check import GrammarError, Verdict

_ACCEPTED = "Input string is valid according to the grammar."
_REFUSED = "Input string is invalid according to the grammar."
# Far above the few milliseconds a check takes: a grammar that makes llama.cpp's engine follow an
# exploding number of alternatives is a finding, reported as one, not a hung test run.
_TIMEOUT_SECONDS = 60


def validator_binary() -> Path | None:
    """``LLAMA_GBNF_VALIDATOR`` if set, else ``test-gbnf-validator`` beside the llama-server binary
    (``LLAMA_SERVER`` or the cached build)."""
    named = os.environ.get("LLAMA_GBNF_VALIDATOR")
    if named:
        return Path(named)
    server = llama_server_binary()
    return server.parent / "test-gbnf-validator" if server is not None else None


class LlamaValidator:
    """One grammar, written once, asked about any number of texts (one validator process each)."""

    def __init__(self, binary: Path, gbnf: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder
        self.grammar_path = folder / "grammar.gbnf"
        self.grammar_path.write_bytes(gbnf.encode())

    def check(self, text: str) -> Verdict:
        with tempfile.NamedTemporaryFile(dir=self.folder, suffix=".txt", delete=False) as file:
            file.write(text.encode())
        try:
            done = subprocess.run(
                [str(self.binary), str(self.grammar_path), file.name],
                capture_output=True,
                timeout=_TIMEOUT_SECONDS,
                check=False,
            )
        finally:
            os.unlink(file.name)
        stdout = done.stdout.decode(errors="replace")
        if done.returncode == 0 and stdout.startswith(_ACCEPTED):
            return Verdict(True, "")
        if done.returncode == 0 and stdout.startswith(_REFUSED):
            error = next((line for line in stdout.splitlines() if line.startswith("Error: ")), "rejected")
            return Verdict(False, error)
        stderr = done.stderr.decode(errors="replace").strip().splitlines()
        raise GrammarError(f"exit {done.returncode}: {stdout.strip()[:200]} {' | '.join(stderr[-3:])}")
