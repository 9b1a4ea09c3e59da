"""Tool definitions in the prompt: where they go, what they cost, how they are written, and whether
their descriptions are.

The prompt is rendered with and without tools, for a conversation that opens with a system message
and for one that opens with a user message. What the tools add is the run of text that holds a tool's
name; whose turn holds it is read from the conversation text nearest before it, or else from the
header its turn opens with. The cost is the growth of the prompt from no tools to one tool to two.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from analyzer.description import FormatDescription
from analyzer.diff import common_prefix_len
from analyzer.evidence import DefinitionForm, Descriptions, Placement, ToolDefinitions, ToolPlacement, excerpt
from analyzer.render import variants as v
from analyzer.render.conversation import Failed, Renderer
from analyzer.render.sandbox import DEFAULT_BOS
from analyzer.template import Template
from analyzer.tokenizer import tokenizer_beside
from analyzer.tools import declared_tools

OPENINGS = (("system, user", [v.system(), v.user()]), ("user", [v.user()]))


def detect_tool_definitions(
    renderer: Renderer, template: Template, description: FormatDescription, tools: list[dict[str, Any]] | None = None
) -> ToolDefinitions:
    """``tools`` are the caller's (``audit --tools``); without them, the analysis's two sentinel tools."""
    given = tools if tools else v.tools(renderer.spelling)
    declared = declared_tools(given)
    first, second = given[0], given[1] if len(given) > 1 else given[0]
    end_marker = description.turn.end if isinstance(description.turn.end, str) and description.turn.end else None
    bos = template.bos_token if template.bos_token is not None else DEFAULT_BOS

    def prompt(opening: list[dict[str, Any]], with_tools: list[dict[str, Any]] | None) -> str | Failed:
        return renderer.attempt(opening, tools=with_tools, generation_prompt=True)

    headers = prompt(OPENINGS[0][1], None)
    system_header = user_header = ""
    if isinstance(headers, str):
        system_header = _turn_header(headers, v.SYSTEM_TEXT, end_marker)
        user_header = _turn_header(headers, v.USER_TEXT, end_marker)

    placements: list[ToolPlacement] = []
    descriptions: Descriptions = "unknown"
    for label, opening in OPENINGS:
        without, with_tools = prompt(opening, None), prompt(opening, given)
        if isinstance(without, Failed) or isinstance(with_tools, Failed):
            error = next(render for render in (without, with_tools) if isinstance(render, Failed))
            placements.append(ToolPlacement(label, "error", error.message))
            continue
        if without == with_tools:
            placements.append(ToolPlacement(label, "not written", ""))
            continue
        start, stop = _inserted_block(without, with_tools, declared[0].name)
        where = _placement(with_tools, start, stop, end_marker, system_header, user_header, bos)
        placements.append(ToolPlacement(label, where, excerpt(with_tools, start, stop, whole=v.PROBE_TEXTS)))
        if descriptions == "unknown":
            descriptions = _descriptions([t.description for t in declared], with_tools)

    # The cost in the conversation the template is used with: a system message where it takes one.
    opening = OPENINGS[0][1] if description.capabilities.system_role.status == "yes" else OPENINGS[1][1]
    renders = [prompt(opening, t) for t in (None, [first], [first, second])]
    fixed_chars = per_tool_chars = fixed_tokens = per_tool_tokens = None
    lengths = [len(r) for r in renders if isinstance(r, str)]
    if len(lengths) == len(renders):  # every one rendered
        fixed_chars, per_tool_chars = _growth(lengths)
        tokenizer = tokenizer_beside(template)
        if tokenizer is not None:
            fixed_tokens, per_tool_tokens = _growth(
                [len(tokenizer.encode(r, add_special_tokens=False).ids) for r in renders]
            )

    written = any(p.placement not in ("error", "not written") for p in placements)
    form: DefinitionForm = "not written" if not written else "unknown"
    form_evidence = ""
    if written and isinstance(renders[1], str):
        form, at = _definition_form(first, renders[1])
        form_evidence = excerpt(renders[1], at, at + 40, whole=v.PROBE_TEXTS) if at >= 0 else ""
    return ToolDefinitions(
        placements=tuple(placements),
        fixed_chars=fixed_chars,
        per_tool_chars=per_tool_chars,
        fixed_tokens=fixed_tokens,
        per_tool_tokens=per_tool_tokens,
        form=form,
        form_evidence=form_evidence,
        descriptions=descriptions,
        descriptions_evidence=placements[0].evidence if descriptions == "dropped" else "",
    )


def _growth(sizes: list[int]) -> tuple[int, int]:
    """(fixed, per tool) from the sizes of a prompt with no tool, one and two."""
    none, one, two = sizes
    return (one - none) - (two - one), two - one


def _inserted_block(without: str, with_tools: str, name: str) -> tuple[int, int]:
    """Where the tools' text sits in ``with_tools``: the inserted block holding ``name`` (a tool's
    name), else the longest inserted block. Not ``diff.added_text``: it slides a run as late as it
    can (right for a message added after a turn), and a tool turn slid that way starts inside the
    next turn's header, which then reads as the wrong turn."""
    matcher = difflib.SequenceMatcher(None, without, with_tools, autojunk=False)
    blocks = [(j1, j2) for op, _i1, _i2, j1, j2 in matcher.get_opcodes() if op in ("insert", "replace")]
    if not blocks:
        return (0, 0)
    for j1, j2 in blocks:
        if name and name in with_tools[j1:j2]:
            return (j1, j2)
    # The name may straddle two blocks (the matcher re-used a few characters): span them all.
    if name and name in with_tools:
        at = with_tools.find(name)
        near = [b for b in blocks if b[0] <= at + len(name) and b[1] >= at - 200]
        if near:
            return (min(b[0] for b in near), max(b[1] for b in near))
    return max(blocks, key=lambda b: b[1] - b[0])


def _turn_header(render: str, sentinel: str, end: str | None) -> str:
    """The text a turn opens with before ``sentinel``: from the previous turn end (or the start)."""
    at = render.find(sentinel)
    if at < 0:
        return ""
    start = render.rfind(end, 0, at) + len(end) if end and end in render[:at] else 0
    return render[start:at].lstrip()


def _placement(
    with_tools: str, start: int, stop: int, end_marker: str | None, system_header: str, user_header: str, bos: str
) -> Placement:
    turn_start = 0
    if end_marker:
        found = with_tools.rfind(end_marker, 0, start)
        if found >= 0:
            turn_start = found + len(end_marker)
    before = with_tools[turn_start:start]
    # The nearest conversation text before the section, inside its turn, says whose turn it is.
    sys_at, user_at = before.rfind(v.SYSTEM_TEXT), before.rfind(v.USER_TEXT)
    if sys_at >= 0 or user_at >= 0:
        return "system turn" if sys_at > user_at else "user turn"
    # Else the turn's header: which known header the turn opens with (the section itself may open a
    # turn of its own, as templates that add a system turn for tools do).
    head = (before + with_tools[start:stop]).lstrip()
    if bos and head.startswith(bos):
        head = head[len(bos) :]
    sys_h = system_header[len(bos) :] if bos and system_header.startswith(bos) else system_header
    user_h = user_header[len(bos) :] if bos and user_header.startswith(bos) else user_header
    shared = common_prefix_len(sys_h, user_h)
    sys_match = common_prefix_len(head, sys_h) if sys_h else 0
    user_match = common_prefix_len(head, user_h) if user_h else 0
    if max(sys_match, user_match) > shared and head:
        return "system turn" if sys_match > user_match else "user turn"
    after = with_tools[start:].lstrip()
    return (
        "own block"
        if not after.startswith((v.SYSTEM_TEXT, v.USER_TEXT))
        else ("system turn" if after.startswith(v.SYSTEM_TEXT) else "user turn")
    )


def _definition_form(tool: dict[str, Any], render: str) -> tuple[DefinitionForm, int]:
    """How one tool definition is written: the JSON as given, re-indented, the function object alone,
    or rewritten (none of those); with where it starts in the render (-1 when rewritten)."""
    function = tool.get("function", tool)
    candidates: tuple[tuple[DefinitionForm, Any], ...] = (("as given", tool), ("function only", function))
    for form, value in candidates:
        for text in (
            json.dumps(value, ensure_ascii=False),
            json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        ):
            if text in render:
                return form, render.find(text)
        for indent in (2, 4, 1, "\t"):
            text = json.dumps(value, ensure_ascii=False, indent=indent)
            if text in render:
                return "re-indented", render.find(text)
    return "rewritten", -1


def _descriptions(texts: list[str], render: str) -> Descriptions:
    texts = [text for text in texts if text]
    if not texts:
        return "none given"
    return "written" if any(text in render for text in texts) else "dropped"
