"""The audit on real corpus templates: each finding the audit promises, with its evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.golden import GOLDEN

from analyzer import corpus
from analyzer.analysis import analyze, inspect
from analyzer.backends.audit import AuditReport, audit, render_text
from analyzer.evidence import excerpt
from analyzer.golden import AUDIT_FOLDER
from analyzer.render import variants as v
from analyzer.sources import load_template

_CACHE: dict[str, AuditReport] = {}


def _audit(corpus_dir: Path, name: str, **kwargs: object) -> AuditReport:
    key = name + repr(sorted(kwargs.items()))
    if key not in _CACHE:
        template = load_template(str(corpus_dir / f"{name}.jinja"))
        description = analyze(template)
        _CACHE[key] = audit(description, inspect(template, description, **kwargs))  # type: ignore[arg-type]
    return _CACHE[key]


def _codes(report: AuditReport) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_mistral_nemo_requires_alnum9_ids(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407")
    required = _codes(report)["id-form-required"]
    assert "9-character alphanumeric" in required[0].message
    assert "Tool call IDs should be alphanumeric strings with length 9!" in required[0].evidence
    refused = _codes(report)["id-form-refused"]
    assert "OpenAI-style" in refused[0].message


def test_llama31_refuses_parallel_calls(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "meta-llama-Llama-3.1-8B-Instruct")
    refused = _codes(report)["parallel-calls-refused"]
    assert refused[0].severity == "warning"
    assert "only supports single tool-calls at once" in refused[0].evidence


def test_functionary_v31_engines_differ_at_a_position(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "meetkai-functionary-medium-v3.1")
    codes = _codes(report)
    assert "engines-agree" not in codes
    differ = codes["engines-differ"]
    assert "first differ at character" in differ[0].message
    assert differ[0].evidence != differ[0].other_evidence
    assert len(differ[0].evidence) <= 2 * 40 + 1


def test_qwen25_results_linked_by_order_risk(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    risk = _codes(report)["linked-by-order"][0]
    assert risk.severity == "risk"
    assert "out of call order will be attributed to the wrong call" in risk.message


def test_qwen25_tools_in_system_turn_with_cost(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct")
    section = report.tool_section
    assert [p.placement for p in section.placements] == ["system turn", "system turn"]
    assert v.SYSTEM_TEXT in section.placements[0].evidence
    assert section.per_tool_chars is not None and section.per_tool_chars > 0
    assert section.fixed_chars is not None and section.fixed_chars > 0
    assert section.descriptions == "written"
    assert section.tokens == "unknown (no tokenizer)"


def test_llama31_tools_in_user_turn(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "meta-llama-Llama-3.1-8B-Instruct")
    assert {p.placement for p in report.tool_section.placements} == {"user turn"}


def test_user_tools_are_measured(corpus_dir: Path) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Xqz weather now",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    report = _audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct", tools=tools)
    assert report.tool_section.descriptions == "written"
    assert report.tool_section.placements[0].placement == "system turn"
    per_tool = report.tool_section.per_tool_chars
    assert per_tool and per_tool > 0
    # The user's one tool, not the sentinel tools, is what was measured.
    assert per_tool != _audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct").tool_section.per_tool_chars


def test_strftime_now_template_uses_the_date(corpus_dir: Path) -> None:
    # Llama 3.2 calls strftime_now; Llama 3.1 only reads a date_string variable with a fixed default.
    report = _audit(corpus_dir, "meta-llama-Llama-3.2-3B-Instruct")
    found = _codes(report)["uses-current-date"][0]
    assert found.severity == "risk"
    assert "2031" in found.evidence
    llama31 = _codes(_audit(corpus_dir, "meta-llama-Llama-3.1-8B-Instruct"))
    assert "deterministic" in llama31
    assert any("date_string" in f.message for f in llama31["context-variable"])


def test_deterministic_template(corpus_dir: Path) -> None:
    assert "deterministic" in _codes(_audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct"))


def test_report_serialises_and_renders(corpus_dir: Path) -> None:
    report = _audit(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["template"] == "mistralai-Mistral-Nemo-Instruct-2407"
    assert {f["topic"] for f in data["findings"]} >= {"tools", "requirements", "nondeterminism", "engines", "results"}
    text = render_text(report)
    assert "tokens: unknown (no tokenizer)" in text
    assert "requires 9-character alphanumeric ids" in text


def test_excerpt_keeps_context_either_side() -> None:
    text = "a" * 100 + "X" + "b" * 100
    assert excerpt(text, 100, 101) == "a" * 60 + "X" + "b" * 60  # a run of letters this long is data: cut
    assert excerpt(text, 0) == "a" * 60


def test_excerpt_cuts_between_markers_words_and_probe_values() -> None:
    """The issue's own example (Qwen3's reasoning finding): 60 characters either side of the answer
    fell inside <|im_start|> both times, and the excerpt read "m_start|>user ... <|im_st"."""
    text = (
        "<|im_start|>system\nSqz system says<|im_end|>\n<|im_start|>user\nUqz user asks<|im_end|>\n"
        "<|im_start|>assistant\nKqz answer<|im_end|>\n<|im_start|>user\nUwj user again<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    at = text.index(v.CONTENT_TEXT)
    end = at + len(v.CONTENT_TEXT)
    assert text[at - 60 :].startswith("m_start|>user") and text[: end + 60].endswith("<|im_st")
    # The header <|im_start|>user goes whole (with its word), so the excerpt opens at the line break.
    assert excerpt(text, at, end, whole=v.PROBE_TEXTS) == (
        "\nUqz user asks<|im_end|>\n<|im_start|>assistant\nKqz answer<|im_end|>\n<|im_start|>user\n"
        "Uwj user again<|im_end|>\n"
    )
    assert excerpt("alpha beta gamma delta", 11, width=8) == " beta gamma "
    assert excerpt("Vqz red and more", 9, width=6, whole=v.PROBE_TEXTS) == " and "
    # A long middle keeps its two ends, each cut at a boundary too.
    long = "<|a|>" + " ".join(["word"] * 40) + "<|b|>"
    cut = excerpt(long, 0, len(long), width=12)
    head, tail = cut.split(" ... ")
    assert head == "<|a|>word " and tail == " word<|b|>"


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B", "moonshotai-Kimi-K2", "meta-llama-Llama-3.1-8B-Instruct"])
def test_excerpts_of_real_renders_split_no_marker(corpus_dir: Path, name: str) -> None:
    """Every cut of an excerpt of a real render, at every seventh position: never inside a marker (as
    markers.py defines one), a short word or a probe value; never longer than the width either side."""
    from analyzer.markers import inside_marker_mask
    from analyzer.render.conversation import Renderer

    template = load_template(str(corpus_dir / f"{name}.jinja"))
    description = analyze(template)
    renderer = Renderer.for_template(template, description)
    text = renderer.render(
        [v.system(), v.user(), v.assistant(renderer.spelling, content=v.CONTENT_TEXT, calls=(v.CALL1,))],
        tools=v.tools(renderer.spelling),
    )
    mask = inside_marker_mask(text)

    def splits(at: int) -> bool:
        word = 0 < at < len(text) and (text[at - 1] + text[at]).isalnum()
        probe = any(0 <= (found := text.find(p, max(0, at - len(p) + 1))) < at < found + len(p) for p in v.PROBE_TEXTS)
        return bool(mask[at]) or word or probe

    checked = 0
    for at in range(0, len(text), 7):
        cut = excerpt(text, at, whole=v.PROBE_TEXTS)
        left = text.find(cut, max(0, at - 60))
        assert 0 <= left <= at <= left + len(cut) <= at + 60, (at, cut)
        for edge in (left, left + len(cut)):
            assert not splits(edge), (at, text[max(0, edge - 20) : edge], text[edge : edge + 20])
        checked += 1
    assert checked > 100


def test_audit_of_the_whole_corpus_is_golden(corpus_dir: Path) -> None:
    """Every template's audit, as its JSON, equals golden/audit/<name>.json (what `golden --update`
    writes and a reviewer read), and the text form shows every finding with its severity."""
    paths = corpus.corpus_templates(corpus_dir)
    assert len(paths) == 70
    for path in paths:
        template = load_template(str(path))
        description = analyze(template)
        report = audit(description, inspect(template, description))
        expected = json.loads((GOLDEN / AUDIT_FOLDER / f"{path.stem}.json").read_text(encoding="utf-8"))["audit"]
        assert report.to_dict() == expected, path.stem
        assert report.findings, path.stem
        text = render_text(report)
        for finding in report.findings:
            assert f"[{finding.severity}] {finding.message}" in text, (path.stem, finding.code)


@pytest.mark.parametrize("name", ["Qwen-Qwen2.5-7B-Instruct"])
def test_jinja2_engine_option(corpus_dir: Path, name: str) -> None:
    report = _audit(corpus_dir, name, engine="jinja2")
    assert report.engine == "jinja2"


def test_tokens_are_counted_with_the_tokenizer_beside_the_template(corpus_dir: Path, tmp_path: Path) -> None:
    """A model folder with a tokenizer.json: the tool section's cost in that tokenizer's real tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = sorted(set(re.findall(r"\w+|[^\w\s]", (corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text())))
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "chat_template.jinja").write_text(
        (corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8"), encoding="utf-8"
    )
    template = load_template(str(tmp_path))
    description = analyze(template)
    report = audit(description, inspect(template, description))
    match = re.fullmatch(r"(-?\d+) fixed, (\d+) per tool \(tokenizer\.json\)", report.tool_section.tokens)
    assert match, report.tool_section.tokens
    assert int(match.group(2)) > 0
    # Without one, no count is made up.
    plain = load_template(str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"))
    plain_description = analyze(plain)
    assert audit(plain_description, inspect(plain, plain_description)).tool_section.tokens == "unknown (no tokenizer)"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ByteDance-Seed-OSS", "kept in history"),
        ("GLM-4.6", "dropped from earlier turns"),
        # gpt-oss writes the analysis channel only on the final assistant turn of a finished conversation
        ("openai-gpt-oss-120b", "dropped from earlier turns"),
        # Kimi-K2-Thinking writes reasoning back on tool-call turns only, never beside a plain answer
        ("Kimi-K2-Thinking", "not written back, on earlier turns or on the last one"),
    ],
)
def test_reasoning_in_history(corpus_dir: Path, name: str, expected: str) -> None:
    finding = _codes(_audit(corpus_dir, name))["reasoning-on-later-turns"][0]
    assert expected in finding.message
    assert finding.severity == ("info" if expected == "kept in history" else "warning")
    assert v.CONTENT_TEXT in finding.evidence or v.REASONING_TEXT in finding.evidence


def test_history_of_calls_and_roles(corpus_dir: Path) -> None:
    assert "calls-dropped" in _codes(_audit(corpus_dir, "deepseek-ai-DeepSeek-R1-Distill-Llama-8B"))
    nemo = _codes(_audit(corpus_dir, "mistralai-Mistral-Nemo-Instruct-2407"))
    roles = nemo["alternating-roles"][0]
    assert "alternate" in roles.evidence.lower()
    qwen = _codes(_audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct"))
    assert "content-kept" in qwen and "alternating-roles" not in qwen
    separate = _codes(_audit(corpus_dir, "NVIDIA-Nemotron-Nano-v2"))["content-separate-turn"][0]
    assert "<SPECIAL_12>" in separate.evidence and "content-kept" not in _codes(
        _audit(corpus_dir, "NVIDIA-Nemotron-Nano-v2")
    )


def test_a_template_without_a_tool_format_is_pointed_at_the_prompted_path(corpus_dir: Path) -> None:
    gemma = _codes(_audit(corpus_dir, "google-gemma-2-2b-it"))
    assert "nor tool definitions" in gemma["no-tool-format"][0].message
    assert "tool-form" not in gemma  # no definitions written: nothing to say how they are written
    lfm = _codes(_audit(corpus_dir, "LFM2-8B-A1B"))  # writes tool definitions, never calls
    assert "nor tool definitions" not in lfm["no-tool-format"][0].message and "tool-form" in lfm
    assert "no-tool-format" not in _codes(_audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct"))


def test_a_stop_inside_the_reasoning_close_is_a_risk(corpus_dir: Path) -> None:
    """Solar-Open closes reasoning with <|end|><|begin|>assistant and an answer with <|end|>: stopping on
    <|end|> ends every reply after its reasoning. gpt-oss ends its last message with <|return|>, so
    <|end|> is no stop there."""
    solar = _codes(_audit(corpus_dir, "upstage-Solar-Open-100B"))
    assert solar["stop-inside-reasoning-close"][0].severity == "risk"
    oss = _codes(_audit(corpus_dir, "openai-gpt-oss-120b"))
    assert "stop-inside-reasoning-close" not in oss and "'<|return|>'" in oss["stops"][0].message


def test_a_closer_written_only_after_several_calls_is_reported(corpus_dir: Path) -> None:
    found = _codes(_audit(corpus_dir, "deepseek-ai-DeepSeek-R1-Distill-Llama-8B"))["closer-after-several-calls"][0]
    assert "<｜tool▁calls▁end｜>" in found.message and found.severity == "warning"
    assert "closer-after-several-calls" not in _codes(_audit(corpus_dir, "Qwen-Qwen2.5-7B-Instruct"))
