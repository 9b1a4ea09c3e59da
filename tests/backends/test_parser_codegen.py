"""The standalone parser module: generated for every corpus template, imported from a file, and run
against the library parser on the round-trip cases (cut off halfway too) and on calls the tools
refuse, batch and one character at a time, with results equal to the library's to the last error
message; run again with no site-packages at all; generated twice, under other hash seeds, to the
same text."""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from analyzer.backends.parser import Parser, apply
from analyzer.backends.parser import codegen
from analyzer.backends.parser.codegen import CodegenError, generate_parser_module
from analyzer.backends.parser.message import Delta, Message, ParseError
from analyzer.description import Calls, loads
from analyzer.errors import InputError

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parents[1] / "golden"
_COUNTER = itertools.count()


def _load_by_path(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_codegen_helpers_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROUNDTRIP = _load_by_path(HERE / "test_parser_roundtrip.py")
SAMPLES = _load_by_path(HERE / "test_parser_samples.py")
TOOLS = ROUNDTRIP.TOOLS
DESCRIPTIONS = list(ROUNDTRIP.descriptions())

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
    """(label, model output): the round-trip cases, the same cut off halfway, and calls the tools refuse."""
    cases = {**{case: calls for case, (content, calls) in ROUNDTRIP.CASES.items()}, **INVALID_CALLS}
    contents = {case: content for case, (content, _) in ROUNDTRIP.CASES.items()}
    for case, calls in cases.items():
        try:
            text = ROUNDTRIP.model_output(description, compiled, contents.get(case), calls)
        except Exception:  # noqa: BLE001 - a template that cannot render the case
            continue
        yield case, text
        if case in ROUNDTRIP.CASES:
            yield f"{case}, cut off halfway", text[:len(text) // 2]


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
        apply(message, Delta(
            content=d.get("content", ""), reasoning_content=d.get("reasoning_content", ""),
            call_index=call.get("index"), call_id=call.get("id"), call_name=function.get("name"),
            arguments=function.get("arguments", ""),
            error=ParseError(error["kind"], error["message"], error.get("text", ""), error.get("call_index"))
            if error else None))
    return message.to_dict()


def run_isolated(path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    """The module as a script, with no site-packages and no user environment: standard library only."""
    return subprocess.run([sys.executable, "-I", "-S", str(path), *args], input=text.encode("utf-8"),
                          capture_output=True, cwd=path.parent, timeout=60, check=False)


# --------------------------------------------------------------------------- the same behaviour


@pytest.mark.parametrize("description", DESCRIPTIONS, ids=lambda d: d.template.name)
def test_generated_module_parses_as_the_library(description, corpus_dir, tmp_path):
    generated = import_generated(generate_parser_module(description, TOOLS), tmp_path)
    library = Parser(description, TOOLS)
    compiled = ROUNDTRIP.compile_for(description, corpus_dir)
    checked = 0
    for label, text in outputs(description, compiled):
        expected = library.parse(text).to_dict()
        got = generated.parse(text)
        assert got == expected, label
        (our_deltas, our_message), (their_deltas, their_message) = stream_both(library, generated, text)
        assert their_deltas == our_deltas, label
        assert their_message == our_message, label
        checked += 1
    assert checked >= len(ROUNDTRIP.CASES), "too few cases render"


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
        _, text = next(outputs(description, ROUNDTRIP.compile_for(description, corpus_dir)))
        (tmp_path / f"{stem}.txt").write_text(text, encoding="utf-8")
        library = Parser(description, TOOLS)
        stream = library.stream()
        deltas = [delta.to_dict() for ch in text for delta in stream.feed(ch)] + [
            delta.to_dict() for delta in stream.finish()]
        want = {"batch": library.parse(text).to_dict(), "deltas": deltas, "message": stream.message.to_dict()}
        expected[stem] = (description.template.name, want)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    run = subprocess.run([sys.executable, "-I", "-S", str(driver), str(tmp_path)], capture_output=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr.decode()
    results = json.loads(run.stdout)
    for stem, (name, want) in expected.items():
        assert results[stem] == want, name


@pytest.mark.parametrize("template", ["Qwen3-Coder", "moonshotai-Kimi-K2", "meta-llama-Llama-3.2-3B-Instruct",
                                      "NousResearch-Hermes-3-Llama-3.1-8B-tool_use"])
def test_command_line(template, corpus_dir, tmp_path):
    """``python FILE.py`` prints the message; ``--stream`` one delta per line, which fold into it."""
    description = next(d for d in DESCRIPTIONS if d.template.name == template)
    path = tmp_path / "parser.py"
    path.write_text(generate_parser_module(description, TOOLS), encoding="utf-8")
    label, text = next(outputs(description, ROUNDTRIP.compile_for(description, corpus_dir)))
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


@pytest.mark.parametrize("description", DESCRIPTIONS[:1] + [d for d in DESCRIPTIONS if d.format == "tag-kv"][:1],
                         ids=lambda d: d.template.name)
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
    for row in SAMPLES.SAMPLES:
        path = GOLDEN / row["template"].replace(".jinja", ".json")
        if path.exists():
            yield pytest.param(row, id=row["template"].removesuffix(".jinja"))


@pytest.mark.skipif(not SAMPLES.SAMPLES, reason="shared/reference/llama-expected.json is not beside the checkout")
@pytest.mark.parametrize("row", list(_sample_params()))
def test_generated_module_parses_llama_samples_as_the_library(row, tmp_path):
    """llama.cpp's sample outputs, with the prompt rendered in thinking mode and the sample's own tools."""
    description = loads((GOLDEN / row["template"].replace(".jinja", ".json")).read_text(encoding="utf-8"))
    tools = SAMPLES.tools_for(row["sample_expect"])
    generated = import_generated(generate_parser_module(description, tools, thinking=True), tmp_path)
    library = Parser(description, tools, thinking=True)
    text = row["sample_output"]
    assert generated.parse(text) == library.parse(text).to_dict()
    (our_deltas, our_message), (their_deltas, their_message) = stream_both(library, generated, text)
    assert their_deltas == our_deltas
    assert their_message == our_message


def test_template_without_calls(tmp_path):
    description = next(loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN.glob("*.json"))
                       if not isinstance(loads(p.read_text(encoding="utf-8")).calls, Calls))
    generated = import_generated(generate_parser_module(description), tmp_path)
    text = "Hello there, <b>friend</b>."
    assert generated.TOOLS == []
    assert generated.parse(text) == Parser(description).parse(text).to_dict()
    assert generated.parse(text)["content"] == text


# --------------------------------------------------------------------------- validation without jsonschema


VALIDATION_TOOLS = [
    {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {
        "hour": {"type": "integer"}, "ratio": {"type": "number"}, "loud": {"type": "boolean"},
        "tone": {"type": "string", "enum": ["beep", "chime"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": ["string", "null"]}},
        "required": ["hour"]}}},
]


@pytest.fixture(scope="module")
def json_template():
    """A template whose calls are one JSON object each: arguments reach the validator as the model typed them."""
    return next(d for d in DESCRIPTIONS if d.template.name == "NousResearch-Hermes-3-Llama-3.1-8B-tool_use")


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.mark.parametrize("arguments, kinds, mentions", [
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
], ids=str)
def test_validation_errors_are_reported(json_template, tmp_path, arguments, kinds, mentions):
    generated = import_generated(generate_parser_module(json_template, VALIDATION_TOOLS), tmp_path)
    text = _call("set_alarm", arguments)
    got = generated.parse(text)
    expected = Parser(json_template, VALIDATION_TOOLS).parse(text).to_dict()
    assert [e["kind"] for e in got["errors"]] == kinds
    assert all(e["call_index"] == 0 for e in got["errors"])
    words = " ".join(e["message"] for e in got["errors"])
    assert all(word in words for word in mentions), words
    # Worded as jsonschema words it, for the keywords the built-in validator checks (if the library's
    # wording changes, change codegen._VALIDATOR with it).
    assert got == expected


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


# --------------------------------------------------------------------------- the generated text


def test_generation_is_deterministic():
    """Same input, same text: in one process, and in fresh ones with other hash seeds."""
    description = next(d for d in DESCRIPTIONS if d.format == "tag-kv")
    source = generate_parser_module(description, TOOLS)
    assert generate_parser_module(description, TOOLS) == source
    path = GOLDEN / f"{description.template.name}.json"
    script = ("import json, sys; from analyzer.description import loads; "
              "from analyzer.backends.parser.codegen import generate_parser_module; "
              f"sys.stdout.write(generate_parser_module(loads(open({str(path)!r}, encoding='utf-8').read()), "
              f"json.loads({json.dumps(TOOLS)!r})))")
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONIOENCODING": "utf-8"})
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
    tools = [{"type": "function", "function": {"name": "echo", "description": 'says """, \\, __CORE__, é, \U0001f600',
                                                "parameters": {"type": "object", "properties": {}}}}]
    generated = import_generated(generate_parser_module(DESCRIPTIONS[0], tools), tmp_path)
    assert generated.TOOLS == tools
    with pytest.raises(InputError):
        generate_parser_module(DESCRIPTIONS[0], [{"weight": float("nan")}])


def test_library_code_is_copied_as_written():
    """The generated module holds the library's own source text, not a re-implementation."""
    from analyzer.backends.parser import match, message, stream, values
    from analyzer.lower import split_markers

    source = generate_parser_module(DESCRIPTIONS[0], TOOLS)
    for obj in (match.CallMatcher, match.match_literal, values.decode, message.Delta, split_markers,
                stream._partial_suffix):
        assert inspect.getsource(obj) in source, obj.__name__
    body = inspect.getsource(stream.StreamParser).split("\n", 1)[1]
    assert body in source  # the class itself is renamed: StreamParser is the module's own API


def test_validator_replacement_is_required(monkeypatch):
    """The library validates with jsonschema: without the built-in replacement, generation refuses."""
    monkeypatch.setattr(codegen, "_replace", lambda module, name, source: None)
    with pytest.raises(CodegenError, match="jsonschema"):
        generate_parser_module(DESCRIPTIONS[0], TOOLS)


def test_replacement_must_keep_the_signature(monkeypatch):
    monkeypatch.setattr(codegen, "_VALIDATOR", "def _schema_problems(schema, name, arguments):\n    return []\n")
    with pytest.raises(CodegenError, match="parameters"):
        generate_parser_module(DESCRIPTIONS[0], TOOLS)
