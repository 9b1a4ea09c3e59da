"""The sample outputs llama.cpp's own tests feed its parsers (shared/reference/llama-expected.json,
beside the checkout when it is there), and the tools each sample's test declared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXPECTED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "llama-expected.json"
ROWS = json.loads(EXPECTED.read_text(encoding="utf-8")) if EXPECTED.exists() else []
SAMPLES = [row for row in ROWS if row.get("sample_output") and row.get("sample_expect")]

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}


def tools_for(expect: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools the sample's test declared: each argument typed as its expected value is."""
    tools = []
    for call in expect.get("tool_calls", []):
        properties = {
            key: {"type": _JSON_TYPES.get(type(value), "string")} for key, value in call.get("arguments", {}).items()
        }
        tools.append(
            {
                "type": "function",
                "function": {"name": call["name"], "parameters": {"type": "object", "properties": properties}},
            }
        )
    return tools
