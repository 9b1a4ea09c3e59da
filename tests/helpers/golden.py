"""The reviewed descriptions in golden/, and fresh renders of the corpus templates they describe.

A render for a test is spelled the way the analysis found the template takes it (content "" or None
beside calls, arguments as an object or a JSON string), with the template's own variables bound as
in the analysis, and compiled with the engine the description names.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from analyzer.description import Calls, FormatDescription, loads
from analyzer.render.conversation import thinking_switch_of
from analyzer.render.engines import compile_mutable, compile_template
from analyzer.render.sandbox import CompiledTemplate
from analyzer.render.session import Session
from analyzer.sources import load_template

GOLDEN = Path(__file__).resolve().parents[2] / "golden"

# A call for a test: (tool name, arguments, id).
Call = tuple[str, dict[str, Any], str]


def golden_paths() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


@cache
def golden(name: str) -> FormatDescription:
    """The golden description of one corpus template, by its file stem."""
    return loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


def golden_descriptions(*, with_calls: bool = False) -> list[FormatDescription]:
    """Every golden description in name order; ``with_calls``: only those of templates that write calls."""
    found = [golden(path.stem) for path in golden_paths()]
    return [d for d in found if isinstance(d.calls, Calls)] if with_calls else found


def compile_for(description: FormatDescription, corpus_dir: Path) -> CompiledTemplate:
    """The corpus template compiled as it was analysed (with list mutation where the analysis needed it)."""
    template = load_template(str(corpus_dir / f"{description.template.name}.jinja"))
    if description.template.engine == "jinja2-mutable":
        return compile_mutable(template)
    return compile_template(template, description.template.engine)


def tool_calls(description: FormatDescription, calls: list[Call]) -> list[dict[str, Any]]:
    """OpenAI-style tool calls, arguments spelled as the template takes them."""
    as_string = description.input_form.arguments_as_string
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if as_string else args},
        }
        for name, args, call_id in calls
    ]


def assistant_output(
    description: FormatDescription,
    compiled: CompiledTemplate,
    messages: list[dict[str, Any]],
    turn: dict[str, Any],
    tools: list[dict[str, Any]],
    thinking: bool | None = None,
) -> str:
    """What the model writes for ``turn`` after ``messages``: the history render past the point where
    the generation prompt ends (the way a server sees the model's output). Render errors propagate.
    ``thinking``: both renders with the template's thinking switch on or off (None: its default)."""
    extra: dict[str, Any] = {name: "" for name in description.bound_variables}
    if thinking is not None:
        extra.update(thinking_switch_of(description).context(thinking))
    prompt = compiled.render(messages, tools=tools, add_generation_prompt=True, extra=extra)
    full = compiled.render([*messages, turn], tools=tools, extra=extra)
    return full[Session.cut(prompt, full) :]
