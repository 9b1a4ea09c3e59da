"""The standalone parser module: generated for every corpus template, imported from a file, and run
against the library parser on the round-trip cases (cut off halfway too) and on calls the tools
refuse, batch and one character at a time, with results equal to the library's to the last error
message; run again with no site-packages at all; generated twice, under other hash seeds, to the
same text."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from helpers.golden import GOLDEN, compile_for
from helpers.roundtrip import CASES, TOOLS, case_outputs, descriptions, model_output
from helpers.samples import SAMPLES, tools_for

from analyzer.backends.parser import Delta, Message, ParseError, Parser, apply, codegen
from analyzer.backends.parser.codegen import generate_parser_module
from analyzer.description import Calls, loads
from analyzer.errors import CodegenError, InputError

_COUNTER = itertools.count()
_KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"location": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)
DESCRIPTIONS = descriptions()

# Calls the tools refuse, rendered by the template like any other.
INVALID_CALLS = {
    "undeclared tool": [("get_time", {"zone": "UTC"})],
    "missing required argument": [("get_weather", {"days": 3})],
    "string for integer": [("get_weather", {"location": "Paris", "days": "three"})],
    "boolean for integer": [("get_weather", {"location": "Paris", "days": True})],
    "number for integer": [("get_weather", {"location": "Paris", "days": 2.5})],
    "unknown argument": [("get_weather", {"location": "Paris", "unit": "C"})],
}


def import_generated(source: str, folder: Path, stem: str = "generated_parser") -> ModuleType:
    """The generated module imported from its file, in a namespace of its own."""
    path = folder / f"{stem}.py"
    path.write_text(source, encoding="utf-8")
    name = f"_generated_parser_{next(_COUNTER)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while they build the classes
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def outputs(description, compiled):
    """(label, model output): the round-trip cases the template writes, the same cut off halfway, and
    calls the tools refuse. Only the template's own refusal leaves a case out; any other error fails."""
    for case, text in case_outputs(description, compiled, CASES):
        yield case, text
        yield f"{case}, cut off halfway", text[: len(text) // 2]
    for case, calls in INVALID_CALLS.items():
        yield case, model_output(description, compiled, None, calls)


def stream_both(library: Parser, generated: ModuleType, text: str):
    """Deltas and final message of the library's stream and the generated one, fed one character at a time."""
    ours, theirs = library.stream(), generated.StreamParser()
    our_deltas, their_deltas = [], []
    for ch in text:
        our_deltas += [delta.to_dict() for delta in ours.feed(ch)]
        their_deltas += theirs.feed(ch)
    our_deltas += [delta.to_dict() for delta in ours.finish()]
    their_deltas += theirs.finish()
    return (our_deltas, ours.message.to_dict()), (their_deltas, theirs.message)


def fold(deltas: list[dict]) -> dict:
    """A message rebuilt from delta dicts, the way a client does."""
    message = Message()
    for d in deltas:
        call = d.get("tool_calls", [{}])[0]
        function = call.get("function", {})
        error = d.get("error")
        apply(
            message,
            Delta(
                content=d.get("content", ""),
                reasoning_content=d.get("reasoning_content", ""),
                call_index=call.get("index"),
                call_id=call.get("id"),
                call_name=function.get("name"),
                arguments=function.get("arguments", ""),
                error=ParseError(error["kind"], error["message"], error.get("text", ""), error.get("call_index"))
                if error
                else None,
            ),
        )
    return message.to_dict()


def run_isolated(path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    """The module as a script, with no site-packages and no user environment: standard library only."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(path), *args],
        input=text.encode("utf-8"),
        capture_output=True,
        cwd=path.parent,
        timeout=60,
        check=False,
    )


# --------------------------------------------------------------------------- the same behaviour


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=lambda d: d.template.name)
def test_generated_module_parses_as_the_library(description, corpus_dir, tmp_path):
    generated = import_generated(generate_parser_module(description, TOOLS), tmp_path)
    library = Parser(description, TOOLS)
    compiled = compile_for(description, corpus_dir)
    checked = 0
    for label, text in outputs(description, compiled):
        expected = library.parse(text).to_dict()
        got = generated.parse(text)
        assert got == expected, label
        (our_deltas, our_message), (their_deltas, their_message) = stream_both(library, generated, text)
        assert their_deltas == our_deltas, label
        assert their_message == our_message, label
        checked += 1
    written = sum(1 for _ in case_outputs(description, compiled, CASES))
    assert written and checked == 2 * written + len(INVALID_CALLS)


# Run under ``python -I -S``: loads each generated module from its file and parses its input, batch
# and one character at a time.
DRIVER = """
import importlib.util, json, pathlib, sys
folder = pathlib.Path(sys.argv[1])
results = {}
for path in sorted(folder.glob("parser_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    text = path.with_suffix(".txt").read_text(encoding="utf-8")
    stream = module.StreamParser()
    deltas = [delta for ch in text for delta in stream.feed(ch)] + stream.finish()
    results[path.stem] = {"batch": module.parse(text), "deltas": deltas, "message": stream.message}
sys.stdout.write(json.dumps(results))
"""


def test_generated_modules_run_on_the_standard_library_alone(corpus_dir, tmp_path):
    """Every template's module, in one interpreter with no site-packages and no user environment."""
    expected = {}
    for k, description in enumerate(DESCRIPTIONS):
        stem = f"parser_{k:02d}"
        source = generate_parser_module(description, TOOLS)
        assert source.isascii(), "markers and tools are escaped: the file reads the same in any encoding"
        (tmp_path / f"{stem}.py").write_text(source, encoding="ascii")
        _, text = next(outputs(description, compile_for(description, corpus_dir)))
        (tmp_path / f"{stem}.txt").write_text(text, encoding="utf-8")
        library = Parser(description, TOOLS)
        stream = library.stream()
        deltas = [delta.to_dict() for ch in text for delta in stream.feed(ch)] + [
            delta.to_dict() for delta in stream.finish()
        ]
        want = {"batch": library.parse(text).to_dict(), "deltas": deltas, "message": stream.message.to_dict()}
        expected[stem] = (description.template.name, want)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-I", "-S", str(driver), str(tmp_path)], capture_output=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr.decode()
    results = json.loads(run.stdout)
    for stem, (name, want) in expected.items():
        assert results[stem] == want, name


@pytest.mark.parametrize(
    "template",
    [
        "Qwen3-Coder",
        "moonshotai-Kimi-K2",
        "meta-llama-Llama-3.2-3B-Instruct",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
    ],
)
def test_command_line(template, corpus_dir, tmp_path):
    """``python FILE.py`` prints the message; ``--stream`` one delta per line, which fold into it."""
    description = next(d for d in DESCRIPTIONS if d.template.name == template)
    path = tmp_path / "parser.py"
    path.write_text(generate_parser_module(description, TOOLS), encoding="utf-8")
    label, text = next(outputs(description, compile_for(description, corpus_dir)))
    expected = Parser(description, TOOLS).parse(text).to_dict()
    assert expected["tool_calls"]

    batch = run_isolated(path, text)
    assert batch.returncode == 0, batch.stderr.decode()
    assert json.loads(batch.stdout) == expected, label

    stream = run_isolated(path, text, "--stream")
    assert stream.returncode == 0, stream.stderr.decode()
    assert fold([json.loads(line) for line in stream.stdout.decode().splitlines()]) == expected, label


def test_isolated_interpreter_cannot_see_the_library(tmp_path):
    """What makes the test above mean something: under -I -S neither analyzer nor jsonschema imports."""
    for module in ("analyzer", "jsonschema"):
        probe = tmp_path / f"probe_{module}.py"
        probe.write_text(f"import {module}\n", encoding="utf-8")
        assert run_isolated(probe, "").returncode != 0, module


@pytest.mark.parametrize(
    "description",
    DESCRIPTIONS[:1] + [d for d in DESCRIPTIONS if d.format == "tag-kv"][:1],
    ids=lambda d: d.template.name,
)
def test_generated_source_imports_the_standard_library_only(description):
    tree = ast.parse(generate_parser_module(description, TOOLS))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            assert module == "__future__" or module.split(".")[0] in sys.stdlib_module_names, module


def _sample_params():
    for row in SAMPLES:
        path = GOLDEN / row["template"].replace(".jinja", ".json")
        if path.exists():
            yield pytest.param(row, id=row["template"].removesuffix(".jinja"))


@pytest.mark.skipif(not SAMPLES, reason="shared/reference/llama-expected.json is not beside the checkout")
@pytest.mark.parametrize("row", list(_sample_params()))
def test_generated_module_parses_llama_samples_as_the_library(row, tmp_path):
    """llama.cpp's sample outputs, with the prompt rendered in thinking mode and the sample's own tools."""
    description = loads((GOLDEN / row["template"].replace(".jinja", ".json")).read_text(encoding="utf-8"))
    tools = tools_for(row["sample_expect"])
    generated = import_generated(generate_parser_module(description, tools, thinking=True), tmp_path)
    library = Parser(description, tools, thinking=True)
    text = row["sample_output"]
    assert generated.parse(text) == library.parse(text).to_dict()
    (our_deltas, our_message), (their_deltas, their_message) = stream_both(library, generated, text)
    assert their_deltas == our_deltas
    assert their_message == our_message


def test_template_without_calls(tmp_path):
    description = next(
        loads(p.read_text(encoding="utf-8"))
        for p in sorted(GOLDEN.glob("*.json"))
        if not isinstance(loads(p.read_text(encoding="utf-8")).calls, Calls)
    )
    generated = import_generated(generate_parser_module(description), tmp_path)
    text = "Hello there, <b>friend</b>."
    assert generated.TOOLS == []
    assert generated.parse(text) == Parser(description).parse(text).to_dict()
    assert generated.parse(text)["content"] == text


# --------------------------------------------------------------------------- validation without jsonschema


VALIDATION_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "set_alarm",
            "parameters": {
                "type": "object",
                "properties": {
                    "hour": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "loud": {"type": "boolean"},
                    "tone": {"type": "string", "enum": ["beep", "chime"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "note": {"type": ["string", "null"]},
                },
                "required": ["hour"],
            },
        },
    },
]


@pytest.fixture(scope="module")
def json_template():
    """A template whose calls are one JSON object each: arguments reach the validator as the model typed them."""
    return next(d for d in DESCRIPTIONS if d.template.name == "NousResearch-Hermes-3-Llama-3.1-8B-tool_use")


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.mark.parametrize(
    "arguments, kinds, mentions",
    [
        ({"hour": 7}, [], []),
        ({"hour": 7, "ratio": 1, "loud": False, "tone": "beep", "tags": ["a"], "note": None}, [], []),
        ({"hour": 7.0}, [], []),  # 7.0 is an integer to JSON Schema
        ({}, ["invalid_arguments"], ["hour", "required"]),
        ({"hour": "7"}, ["invalid_arguments"], ["hour", "integer"]),
        ({"hour": True}, ["invalid_arguments"], ["hour", "integer"]),
        ({"hour": 7.5}, ["invalid_arguments"], ["hour", "integer"]),
        ({"hour": 7, "ratio": "1"}, ["invalid_arguments"], ["ratio", "number"]),
        ({"hour": 7, "ratio": False}, ["invalid_arguments"], ["ratio", "number"]),
        ({"hour": 7, "loud": 1}, ["invalid_arguments"], ["loud", "boolean"]),
        ({"hour": 7, "tone": "siren"}, ["invalid_arguments"], ["tone", "siren"]),
        ({"hour": 7, "tags": ["a", 2]}, ["invalid_arguments"], ["tags/1", "string"]),
        ({"hour": 7, "note": 3}, ["invalid_arguments"], ["note", "null"]),
        ({"hour": 7, "volume": 3}, ["unknown_argument"], ["volume"]),
        ({"hour": "x", "volume": 3}, ["unknown_argument", "invalid_arguments"], ["volume", "hour"]),
    ],
    ids=str,
)
def test_validation_errors_are_reported(json_template, tmp_path, arguments, kinds, mentions):
    generated = import_generated(generate_parser_module(json_template, VALIDATION_TOOLS), tmp_path)
    text = _call("set_alarm", arguments)
    got = generated.parse(text)
    expected = Parser(json_template, VALIDATION_TOOLS).parse(text).to_dict()
    assert [e["kind"] for e in got["errors"]] == kinds
    assert all(e["call_index"] == 0 for e in got["errors"])
    words = " ".join(e["message"] for e in got["errors"])
    assert all(word in words for word in mentions), words
    # One validator serves the library and the module: the same errors, word for word.
    assert got == expected


# One property per keyword tool schemas use, and for each an argument value that breaks it: the
# generated module and the library share one validator, so they must report the same, word for word.
KEYWORD_SCHEMA = {
    "type": "object",
    "properties": {
        "typed": {"type": ["string", "null"]},
        "nullable": {"type": "integer", "nullable": True},
        "choice": {"enum": ["a", "b"]},
        "fixed": {"const": 3},
        "nested": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        "list": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2, "uniqueItems": True},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        "text": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^a+$"},
        "count": {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 2},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "one": {"oneOf": [{"type": "integer"}, {"minimum": 5}]},
        "all": {"allOf": [{"type": "integer"}, {"minimum": 5}]},
        "never": {"not": {"type": "string"}},
        "ref": {"$ref": "#/$defs/positive"},
        "old_ref": {"$ref": "#/definitions/positive"},
    },
    "required": ["typed"],
    "$defs": {"positive": {"type": "integer", "minimum": 1}},
    "definitions": {"positive": {"type": "integer", "minimum": 1}},
}
KEYWORD_TOOLS = [{"type": "function", "function": {"name": "check", "parameters": KEYWORD_SCHEMA}}]
BROKEN = {
    "type list": {"typed": 1},
    "nullable": {"nullable": "x"},
    "enum": {"choice": "c"},
    "const": {"fixed": 4},
    "required": {},
    "additionalProperties": {"nested": {"n": 1, "m": 2}},
    "nested required": {"nested": {}},
    "items": {"list": ["x"]},
    "minItems": {"list": []},
    "maxItems": {"list": [1, 2, 3]},
    "uniqueItems": {"list": [1, 1]},
    "prefixItems": {"pair": [1, "x"]},
    "minLength": {"text": "a"},
    "maxLength": {"text": "aaaaa"},
    "pattern": {"text": "bb"},
    "minimum": {"count": -2},
    "maximum": {"count": 12},
    "multipleOf": {"count": 3},
    "exclusiveMinimum": {"ratio": 0},
    "exclusiveMaximum": {"ratio": 1},
    "anyOf": {"any": [1]},
    "oneOf": {"one": 7},
    "allOf": {"all": 3},
    "not": {"never": "s"},
    "$ref to $defs": {"ref": 0},
    "$ref to definitions": {"old_ref": 0},
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_schema_keyword_is_checked_alike(json_template, tmp_path, case):
    generated = import_generated(generate_parser_module(json_template, KEYWORD_TOOLS), tmp_path)
    arguments = {"typed": "ok", **BROKEN[case]} if case != "required" else BROKEN[case]
    text = _call("check", arguments)
    expected = Parser(json_template, KEYWORD_TOOLS).parse(text).to_dict()
    assert generated.parse(text) == expected
    assert expected["errors"] and {e["kind"] for e in expected["errors"]} == {"invalid_arguments"}, expected
    valid = generated.parse(_call("check", {"typed": None, "count": 4, "ref": 1, "one": 3, "all": 6}))
    assert valid["errors"] == []


def test_unknown_tool_and_tools_given_at_parse_time(json_template, tmp_path):
    generated = import_generated(generate_parser_module(json_template, VALIDATION_TOOLS), tmp_path)
    text = _call("get_weather", {"location": "Paris"})
    assert [e["kind"] for e in generated.parse(text)["errors"]] == ["unknown_tool"]
    assert "get_weather" in generated.parse(text)["errors"][0]["message"]
    assert generated.parse(text, tools=TOOLS)["errors"] == []
    assert generated.parse(text, tools=[])["errors"] == []  # no tools: nothing to validate against
    stream = generated.StreamParser(TOOLS)
    stream.feed(text)
    stream.finish()
    assert stream.message == generated.parse(text, TOOLS)

    path = tmp_path / "parser.py"
    path.write_text(generate_parser_module(json_template, VALIDATION_TOOLS), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    run = run_isolated(path, text, "--tools", "tools.json")
    assert run.returncode == 0, run.stderr.decode()
    assert json.loads(run.stdout)["errors"] == []


@pytest.mark.parametrize(
    ("template", "prefill", "text"),
    [
        ("Qwen3.5-4B", {"content": "Hello, ", "reasoning_content": "I'm thinking"}, "world!"),
        ("Qwen3.5-4B", {"content": "", "reasoning_content": "I'm"}, " thinking\n</think>\n\nHello, world!"),
        ("Kimi-K2-Thinking", {"content": "Let me check"}, "." + _KIMI_CALL),
    ],
    ids=["content", "reasoning", "a call after content"],
)
def test_continuing_a_prefilled_message(template, prefill, text, tmp_path):
    """``continuing`` (``--continue FILE``) reads as the library does: the whole message; deltas, the output's text."""
    description = next(d for d in DESCRIPTIONS if d.template.name == template)
    source = generate_parser_module(description, TOOLS, thinking=True)
    generated = import_generated(source, tmp_path)
    expected = Parser(description, TOOLS, thinking=True, continuing=prefill).parse(text).to_dict()
    assert generated.parse(text, continuing=prefill) == expected
    assert expected["content"].startswith(prefill["content"])
    stream = generated.StreamParser(continuing=prefill)
    deltas = [delta for ch in text for delta in stream.feed(ch)] + stream.finish()
    assert stream.message == expected
    assert "".join(delta.get("content", "") for delta in deltas) == expected["content"].removeprefix(prefill["content"])

    path = tmp_path / "parser.py"
    path.write_text(source, encoding="utf-8")
    (tmp_path / "prefill.json").write_text(json.dumps(prefill), encoding="utf-8")
    run = run_isolated(path, text, "--continue", "prefill.json")
    assert run.returncode == 0, run.stderr.decode()
    assert json.loads(run.stdout) == expected
    streamed = run_isolated(path, text, "--stream", "--continue", "prefill.json")
    assert streamed.returncode == 0, streamed.stderr.decode()
    assert json.loads(streamed.stdout.decode().splitlines()[-1])["message"] == expected


def test_continuing_refuses_a_message_it_cannot_continue(tmp_path):
    description = next(d for d in DESCRIPTIONS if d.template.name == "Qwen3.5-4B")
    path = tmp_path / "parser.py"
    path.write_text(generate_parser_module(description, TOOLS), encoding="utf-8")
    (tmp_path / "prefill.json").write_text(json.dumps({"role": "tool", "content": "22C"}), encoding="utf-8")
    run = run_isolated(path, "Hi", "--continue", "prefill.json")
    assert run.returncode == 2
    assert run.stdout == b""
    assert run.stderr.decode().splitlines() == [
        "Error: prefill.json: the message to continue has role 'tool': only an assistant message is continued"
    ]
    with pytest.raises(ValueError, match="holds tool_calls"):
        import_generated(generate_parser_module(description, TOOLS), tmp_path).parse(
            "Hi", continuing={"content": "", "tool_calls": [{"id": "a"}]}
        )


# --------------------------------------------------------------------------- the generated text


def test_generation_is_deterministic():
    """Same input, same text: in one process, and in fresh ones with other hash seeds."""
    description = next(d for d in DESCRIPTIONS if d.format == "tag-kv")
    source = generate_parser_module(description, TOOLS)
    assert generate_parser_module(description, TOOLS) == source
    path = GOLDEN / f"{description.template.name}.json"
    script = (
        "import json, sys; from analyzer.description import loads; "
        "from analyzer.backends.parser.codegen import generate_parser_module; "
        f"sys.stdout.write(generate_parser_module(loads(open({str(path)!r}, encoding='utf-8').read()), "
        f"json.loads({json.dumps(TOOLS)!r})))"
    )
    for seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            timeout=120,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONIOENCODING": "utf-8"},
        )
        assert run.stdout.decode("utf-8") == source, f"PYTHONHASHSEED={seed}"


def test_docstring_names_template_version_and_generation():
    description = DESCRIPTIONS[0]
    docstring = ast.get_docstring(ast.parse(generate_parser_module(description)))
    assert docstring is not None
    first = docstring.splitlines()[0]
    assert description.template.name in first
    assert importlib.metadata.version("template-analyzer") in first
    assert "generated" in first.lower()


def test_tools_are_embedded_as_given(tmp_path):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": 'says """, \\, __CORE__, é, \U0001f600',
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    generated = import_generated(generate_parser_module(DESCRIPTIONS[0], tools), tmp_path)
    assert tools == generated.TOOLS
    with pytest.raises(InputError):
        generate_parser_module(DESCRIPTIONS[0], [{"weight": float("nan")}])


def test_runtime_is_copied_as_written():
    """The generated module holds the runtime's own source text, line for line, less its relative
    imports: not a re-implementation."""
    import analyzer.runtime

    source = generate_parser_module(DESCRIPTIONS[0], TOOLS)
    folder = Path(analyzer.runtime.__file__).parent
    for module in codegen.runtime_modules():
        text = (folder / f"{module}.py").read_text(encoding="utf-8")
        imports = [
            node
            for node in ast.parse(text).body
            if isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__")
        ]
        dropped = {n for node in imports for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
        kept = [line for number, line in enumerate(text.splitlines(), 1) if number not in dropped]
        assert "\n".join(kept).strip("\n") in source, module
    assert sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__") == sorted(
        codegen.runtime_modules()
    )


def _runtime_copy(tmp_path: Path) -> Path:
    import shutil

    import analyzer.runtime

    folder = tmp_path / "runtime"
    shutil.copytree(Path(analyzer.runtime.__file__).parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_runtime_imports_the_standard_library_only(tmp_path):
    """The runtime package alone, under ``python -I -S`` from a folder that holds only its files,
    parses a call and validates its arguments."""
    _runtime_copy(tmp_path)
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})  # -I puts no folder of ours on the path: only this one\n"
        "from runtime.shape import shape_from_dict\n"
        "from runtime.stream import Parser\n"
        "import json, sys\n"
        "shape = shape_from_dict(json.loads(sys.stdin.read()))\n"
        f"tools = {TOOLS!r}\n"
        "message = Parser(shape, tools).parse("
        '\'<tool_call>\\n{"name": "get_weather", "arguments": {"days": 2}}\\n</tool_call>\')\n'
        "print(json.dumps(message.to_dict()))\n"
        "print(sorted(name for name in sys.modules\n"
        "             if name.split('.')[0] not in (*sys.stdlib_module_names, '__main__')))\n"
    )
    description = next(d for d in DESCRIPTIONS if d.template.name == "NousResearch-Hermes-3-Llama-3.1-8B-tool_use")
    from analyzer.lower import lower
    from analyzer.runtime.shape import shape_to_dict

    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],
        input=json.dumps(shape_to_dict(lower(description))),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    message_line, modules_line = run.stdout.splitlines()
    message = json.loads(message_line)
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    assert [e["kind"] for e in message["errors"]] == ["invalid_arguments"]  # location is required
    assert modules_line == str(
        sorted(["runtime", *(f"runtime.{m}" for m in codegen.runtime_modules() if m != "command")])
    )


def test_a_relative_import_over_several_lines_is_dropped_whole(tmp_path, monkeypatch):
    folder = _runtime_copy(tmp_path)
    path = folder / "calls.py"
    path.write_text(path.read_text(encoding="utf-8") + "\nfrom .message import (\n    Delta,\n)\n", encoding="utf-8")
    monkeypatch.setattr(codegen, "RUNTIME", folder)
    source = generate_parser_module(DESCRIPTIONS[0], TOOLS)
    assert "from .message" not in source and "\n    Delta,\n)\n" not in source
    compile(source, "generated", "exec")


@pytest.mark.parametrize(
    "addition, problem",
    [
        ("import jsonschema\n", "not in the standard library"),
        ("def decode(text):\n    return text\n", "also defined in"),
    ],
    ids=["third-party import", "name defined twice"],
)
def test_generation_refuses_what_one_namespace_cannot_hold(tmp_path, monkeypatch, addition, problem):
    folder = _runtime_copy(tmp_path)
    path = folder / "calls.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + addition, encoding="utf-8")
    monkeypatch.setattr(codegen, "RUNTIME", folder)
    with pytest.raises(CodegenError, match=problem):
        generate_parser_module(DESCRIPTIONS[0], TOOLS)
