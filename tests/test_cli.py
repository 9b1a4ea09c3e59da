"""The command line, driven through its real entry point: outputs, exit codes, one-line errors."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from helpers.cli import run
from helpers.golden import GOLDEN

from analyzer.cli import cli
from analyzer.golden import AUDIT_FOLDER


def test_analyze_summary_shows_markers_with_visible_whitespace(corpus_dir):
    code, out, err = run(["analyze", str(corpus_dir / "Qwen3-Coder.jinja")])
    assert code == 0, err
    assert "format: tag-kv" in out
    assert "<tool_call>\\n<function={name}>\\n{arguments}\\n</function>\\n</tool_call>" in out
    assert "stop: '<|im_end|>'" in out


def test_analyze_summary_shows_how_the_calls_json_is_laid_out(corpus_dir):
    code, out, err = run(["analyze", str(corpus_dir / "CohereForAI-c4ai-command-r-plus-tool_use.jinja")])
    assert code == 0, err
    assert "JSON layout        separators ',' ': '; indented by '    ' under '    '" in out
    code, out, err = run(["analyze", str(corpus_dir / "Qwen-Qwen3-0.6B.jinja")])
    assert code == 0, err
    assert "JSON layout        separators ', ' ': '; on one line" in out
    code, out, err = run(["analyze", str(corpus_dir / "MiniMax-M3.jinja")])  # its calls hold no JSON
    assert code == 0, err
    assert "JSON layout" not in out


def test_analyze_json_is_one_object_per_line_with_format(corpus_dir):
    names = ["Qwen-Qwen2.5-7B-Instruct", "google-gemma-2-2b-it", "LFM2.5-8B-A1B"]
    code, out, err = run(["analyze", "--json", *[str(corpus_dir / f"{n}.jinja") for n in names]])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert [json.loads(line)["format"] for line in lines] == ["json", "none", "python"]
    assert [json.loads(line)["template"]["name"] for line in lines] == names


def test_analyze_reads_stdin(corpus_dir):
    text = (corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")
    code, out, _ = run(["analyze", "--json", "-"], input=text)
    assert code == 0 and json.loads(out)["format"] == "json"


def test_analyze_with_jinja2_engine(corpus_dir):
    code, out, _ = run(["analyze", "--json", "--engine", "jinja2", str(corpus_dir / "moonshotai-Kimi-K2.jinja")])
    data = json.loads(out)
    assert code == 0 and data["format"] == "tag-json" and data["template"]["engine"] == "jinja2"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["analyze", "/no/such/template.jinja"], "/no/such/template.jinja: no such file or directory"),
        (["analyze", "--engine", "nope", "x.jinja"], "Invalid value for '--engine'"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, fragment):
    code, _out, err = run(args)
    assert code == 2
    assert fragment in err
    assert len(err.strip().splitlines()) == 1 or "Usage:" in err


def test_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.jinja"
    path.write_text("line one\n{% if %}\n", encoding="utf-8")
    code, _, err = run(["analyze", str(path)])
    assert code == 2
    assert err.startswith("Error: ") and "line 2" in err and str(path) in err
    assert len(err.strip().splitlines()) == 1


def test_render_prints_the_prompt(tmp_path, corpus_dir):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "Hi there"}]), encoding="utf-8")
    code, out, err = run(
        [
            "render",
            str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"),
            "--messages",
            str(messages),
            "--generation-prompt",
        ]
    )
    assert code == 0, err
    assert out.endswith("<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n")


def test_render_rejects_bad_messages_file(tmp_path, corpus_dir):
    messages = tmp_path / "m.json"
    messages.write_text("{not json", encoding="utf-8")
    code, _, err = run(["render", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"), "--messages", str(messages)])
    assert code == 2 and "messages is not valid JSON" in err and len(err.strip().splitlines()) == 1


def test_render_reports_a_template_refusal_as_exit_2(tmp_path):
    # The template refusing the conversation it was given is bad input, exit 2 as the README says.
    template = tmp_path / "strict.jinja"
    template.write_text("{{ raise_exception('no system role') }}", encoding="utf-8")
    messages = tmp_path / "m.json"
    messages.write_text("[]", encoding="utf-8")
    code, _, err = run(["render", str(template), "--messages", str(messages)])
    assert code == 2 and "template raised: no system role" in err


def test_corpus_fetch_prints_the_folder(corpus_dir):
    code, out, _ = run(["corpus", "fetch"])
    assert code == 0 and out.strip() == str(corpus_dir)


def test_python_dash_m_works():
    done = subprocess.run([sys.executable, "-m", "analyzer", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "analyze" in done.stdout


def test_click_group_lists_commands():
    assert {"analyze", "render", "corpus", "golden"} <= set(cli.commands)


def test_parse_prints_the_message(corpus_dir):
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
    code, out, err = run(["parse", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")], input=output)
    assert code == 0, err
    message = json.loads(out)
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert message["errors"] == []


def test_parse_jsonl_keeps_order_and_stream_ends_with_the_message(corpus_dir):
    lines = [json.dumps("Hello there."), json.dumps('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')]
    code, out, _ = run(
        ["parse", "--jsonl", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")], input="\n".join(lines) + "\n"
    )
    messages = [json.loads(line) for line in out.splitlines()]
    assert (
        code == 0
        and messages[0]["content"] == "Hello there."
        and messages[1]["tool_calls"][0]["function"]["name"] == "f"
    )
    code, out, _ = run(["parse", "--stream", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")], input="Hi.")
    assert code == 0 and json.loads(out.splitlines()[-1])["message"]["content"] == "Hi."


def test_parse_jsonl_rejects_a_line_that_is_not_a_json_string(corpus_dir):
    code, _, err = run(["parse", "--jsonl", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")], input="not json\n")
    assert code == 2 and "stdin line 1" in err


def test_grammar_for_llama_server(tmp_path, corpus_dir):
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    },
                }
            ]
        ),
        encoding="utf-8",
    )
    code, out, err = run(
        [
            "grammar",
            str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"),
            "--tools",
            str(tools),
            "--format",
            "llama-server",
        ]
    )
    assert code == 0, err
    fields = json.loads(out)
    assert fields["grammar_lazy"] is True and fields["grammar_triggers"] == [{"type": 1, "value": "<tool_call>"}]
    assert "get_weather" in fields["grammar"] and "<|im_end|>" in fields["stop"]
    code, out, _ = run(
        [
            "grammar",
            str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"),
            "--tools",
            str(tools),
            "--tool-choice",
            "required",
        ]
    )
    assert code == 0 and out.startswith("root ::=")
    # Exact by default: the template's own separators; --whitespace flexible: bounded whitespace.
    assert '"\\"city\\"" ": " string' in out and "ws ::=" not in out
    code, flexible, _ = run(
        [
            "grammar",
            str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"),
            "--tools",
            str(tools),
            "--whitespace",
            "flexible",
        ]
    )
    assert code == 0 and "ws ::= [\\t\\n\\r ]{0,20}" in flexible
    code, _, err = run(
        ["grammar", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"), "--tools", str(tools), "--whitespace", "any"]
    )
    assert code == 2 and "--whitespace" in err and "Traceback" not in err
    code, _, err = run(["grammar", str(corpus_dir / "google-gemma-2-2b-it.jinja"), "--tools", str(tools)])
    assert code == 1 and "writes no tool calls" in err


def test_constraints_the_grammar_does_not_hold_are_reported(tmp_path, corpus_dir):
    schema = {
        "type": "object",
        "properties": {"day": {"type": "string", "format": "date"}, "n": {"type": "integer", "maximum": 9}},
    }
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "plan", "parameters": schema}}]))
    template = str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")
    code, out, err = run(["grammar", template, "--tools", str(tools), "--format", "llama-server"])
    assert code == 0, err
    assert json.loads(out)["unenforced"] == ["plan-args-day: format"]
    assert err == "warning: the grammar does not enforce plan-args-day: format\n"
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": "When?"}]))
    code, out, err = run(["export", template, "--messages", str(messages), "--tools", str(tools)])
    assert code == 0 and json.loads(out)["unenforced"] == ["plan-args-day: format"] and "format" in err
    assert "plan-args-n-integer ::=" in json.loads(out)["grammar"]  # the integer's maximum is enforced


def test_parser_module_is_written_and_runs(tmp_path, corpus_dir):
    target = tmp_path / "qwen_parser.py"
    code, _, err = run(["parser", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"), "-o", str(target)])
    assert code == 0, err
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(target)],
        input='Hi.<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>',
        capture_output=True,
        text=True,
        timeout=60,
    )
    message = json.loads(done.stdout)
    assert message["content"] == "Hi." and message["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'


def test_analyze_goes_on_past_a_bad_template_and_exits_non_zero(tmp_path, corpus_dir):
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% if %}", encoding="utf-8")
    code, out, err = run(["analyze", "--json", str(broken), str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")])
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert "error" in lines[0] and lines[1]["format"] == "json"
    assert err.count("Error:") == 1 and "broken.jinja" in err


def test_audit_reports_a_template_requirement(corpus_dir):
    code, out, err = run(["audit", "--json", str(corpus_dir / "mistralai-Mistral-Nemo-Instruct-2407.jinja")])
    assert code == 0, err
    report = json.loads(out)
    assert any("alphanumeric" in finding["evidence"] for finding in report["findings"])
    code, out, _ = run(["audit", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")])
    assert code == 0 and "order" in out


def test_compare_prints_one_row_per_template(corpus_dir):
    names = ["Qwen-Qwen2.5-7B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407", "meetkai-functionary-medium-v3.1"]
    code, out, err = run(["compare", *[str(corpus_dir / f"{n}.jinja") for n in names]])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["template", "format"] and len(lines) == 4
    assert "alnum9" in lines[2] and "[TOOL_CALLS][" in lines[2]
    assert lines[3].rstrip().endswith("differ")  # functionary v3.1 renders differently in jinja2


def test_diff_shows_what_changed_in_behaviour(tmp_path, corpus_dir):
    old = corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"
    new = tmp_path / "qwen-v2.jinja"
    new.write_text(old.read_text(encoding="utf-8").replace("<tool_call>", "<function_call>"), encoding="utf-8")
    code, out, _ = run(["diff", str(old), str(new)])
    assert code == 0
    assert "calls.call: '<tool_call>\\n{call}\\n</tool_call>' -> '<function_call>\\n{call}\\n</tool_call>'" in out
    code, out, _ = run(["diff", str(old), str(old)])
    assert code == 0 and out.strip() == "no change in behaviour"


def test_compare_of_the_whole_corpus_is_golden(corpus_paths):
    """`compare --json` over every corpus template: one row per template, in the order given, each equal
    to the row golden/audit/<name>.json holds; the table has the same rows."""
    code, out, err = run(["compare", "--json", *[str(p) for p in corpus_paths]])
    assert code == 0, err
    rows = json.loads(out)["templates"]
    expected = [
        json.loads((GOLDEN / AUDIT_FOLDER / f"{p.stem}.json").read_text(encoding="utf-8"))["compare"]
        for p in corpus_paths
    ]
    assert [row["template"] for row in rows] == [p.stem for p in corpus_paths]
    assert rows == expected
    code, out, err = run(["compare", *[str(p) for p in corpus_paths]])
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()[1:]] == [p.stem for p in corpus_paths]


def test_package_names_resolve_lazily() -> None:
    """`import analyzer` loads no part of the library (only the version's module, one assignment); each
    public name resolves to the object its module defines, and __all__ lists exactly the names that resolve."""
    code = (
        "import sys, analyzer\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('analyzer.'))\n"
        "names = {n: getattr(analyzer, n) for n in analyzer.__all__}\n"
        "print(loaded, sorted(names) == sorted(analyzer._PUBLIC), all(names.values()))\n"
        "from analyzer.analysis import analyze\n"
        "print(names['analyze'] is analyze)\n"
        "try:\n"
        "    analyzer.nope\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['analyzer.version'] True True", "True", "module 'analyzer' has no attribute 'nope'"]


# Packages that take long to import, and what the library imports only for some commands or inputs.
HEAVY_IMPORTS = ("jinja2", "jsonschema", "rapidfuzz", "gguf", "numpy", "tokenizers", "transformers", "httpx")


def modules_loaded_by(args: list[str]) -> list[str]:
    """The project's modules and the heavy packages a fresh process has imported once ``main(args)``
    returns. The command runs in this process (no memory cap, so no child), so all it imports is seen."""
    code = (
        "import sys\n"
        "from analyzer.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith(('analyzer.', 'minijinja', *{HEAVY_IMPORTS!r}))))\n"
    )
    env = {**os.environ, "TEMPLATE_ANALYZER_MEMORY_MB": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    return ast.literal_eval(out.splitlines()[-1])


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["analyze", "--help"]])
def test_start_up_loads_only_the_command_line(args: list[str]) -> None:
    """`--version` and `--help` import the command line alone, not the library behind it (start-up time);
    a command loads its own part when it runs."""
    # analyzer.limits is the supervisor that runs the command under the memory cap (standard library only).
    # analyzer.version: one assignment, the version --version prints.
    assert modules_loaded_by(args) == [
        "analyzer.choices",
        "analyzer.cli",
        "analyzer.errors",
        "analyzer.limits",
        "analyzer.version",
    ]


def test_analyze_loads_only_what_the_analysis_needs(corpus_dir) -> None:
    """`analyze` under minijinja (the default) imports neither jinja2 (only the jinja2 engine and the
    syntax check of what minijinja rejects need it) nor what only other commands use: the evidence and
    its detectors (audit), the other backends, the output shape and the parser (grammar, parse, export)."""
    loaded = modules_loaded_by(["analyze", str(corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja")])
    assert "analyzer.analysis" in loaded and "minijinja" in loaded  # the analysis did run
    # rapidfuzz is left out: it loads when two renders differ in more than one run, which is the template's doing.
    heavy = tuple(name for name in HEAVY_IMPORTS if name != "rapidfuzz")
    unwanted = ("analyzer.evidence", "analyzer.backends.", "analyzer.render.jinja2_engine", *heavy)
    # Of the backends, only analyze's own formatter (and the empty package it is in).
    assert [m for m in loaded if m.startswith(unwanted)] == ["analyzer.backends.summary"]
    # Of the parser's runtime, only what the description is made of: not the output shape, not the parser.
    assert [m for m in loaded if m.startswith("analyzer.runtime.")] == [
        "analyzer.runtime.call_forms",
        "analyzer.runtime.nodes",
    ]


def test_render_gives_content_parts_as_the_template_takes_them(tmp_path, corpus_dir):
    """Llama 3.1 writes a list as its Python text: render gives it the parts' text, the same prompt as strings."""
    template = str(corpus_dir / "meta-llama-Llama-3.1-8B-Instruct.jinja")
    prompts = []
    for content in ("What is the weather?", [{"type": "text", "text": "What is the weather?"}]):
        messages = tmp_path / "m.json"
        messages.write_text(json.dumps([{"role": "user", "content": content}]), encoding="utf-8")
        code, out, err = run(["render", template, "--messages", str(messages)])
        assert code == 0, err
        prompts.append(out)
    assert prompts[0] == prompts[1] and "'type'" not in prompts[1]
    messages.write_text(json.dumps([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]))
    code, _, err = run(["render", template, "--messages", str(messages)])
    assert code == 2 and err.startswith(f"Error: {messages}: message 1, content part 1: an image_url part: ")
    assert err.count("\n") == 1
