"""Each template source kind, and each way user input can be wrong, built from scratch in the test."""

from __future__ import annotations

import io
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf
import pytest
from helpers.cli import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.errors import SourceError, TemplateSyntaxError
from analyzer.sources import load_template

SIMPLE = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
TOOLS = "{% if tools %}TOOLS{% endif %}" + SIMPLE
RAG = "{{ documents }}" + SIMPLE

WriteTemplate = Callable[..., Path]


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def write_gguf(
    path: Path,
    *,
    templates: dict[str, str] | None = None,
    tokens: list[str] | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    add_bos: bool | None = None,
) -> Path:
    """A GGUF holding only metadata: the architecture key is the one field a writer insists on."""
    writer = gguf.GGUFWriter(str(path), "llama")
    for name, text in (templates or {}).items():
        if name == "default":
            writer.add_chat_template(text)
        else:
            writer.add_string(f"tokenizer.chat_template.{name}", text)
    if tokens is not None:
        writer.add_token_list(tokens)
    if bos_id is not None:
        writer.add_bos_token_id(bos_id)
    if eos_id is not None:
        writer.add_eos_token_id(eos_id)
    if add_bos is not None:
        writer.add_add_bos_token(add_bos)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def load_error(kind: type[SourceError], spec: str | Path, **options: Any) -> str:
    """Load ``spec`` expecting exactly ``kind``; return the message after checking it is one line naming ``spec``."""
    with pytest.raises(SourceError) as info:
        load_template(str(spec), **options)
    assert type(info.value) is kind
    message = str(info.value)
    assert "\n" not in message
    assert str(spec) in message
    return message


# --------------------------------------------------------------------------------------------------
# Template files


def test_jinja_file(tmp_template: WriteTemplate) -> None:
    path = tmp_template(SIMPLE, "my-model.jinja")
    template = load_template(str(path))
    assert template.source == SIMPLE
    assert template.name == "my-model"
    assert template.origin == str(path)
    assert (template.bos_token, template.eos_token) == (None, None)
    assert (template.variant, template.variants) == (None, ())


@pytest.mark.parametrize("name", ["chat.j2", "chat.txt", "chat"])
def test_any_extension_is_template_text(tmp_template: WriteTemplate, name: str) -> None:
    assert load_template(str(tmp_template(SIMPLE, name))).source == SIMPLE


def test_text_is_kept_byte_for_byte(tmp_template: WriteTemplate) -> None:
    source = "{{ bos_token }}\r\n{% if x %}é\t{% endif %}  \n"
    path = tmp_template(source.encode("utf-8"))
    assert load_template(str(path)).source == source


def test_utf8_bom_is_dropped(tmp_template: WriteTemplate) -> None:
    path = tmp_template(b"\xef\xbb\xbf" + SIMPLE.encode())
    assert load_template(str(path)).source == SIMPLE


def test_generation_tags_are_accepted(tmp_template: WriteTemplate) -> None:
    source = "{% for m in messages %}{%- generation -%}\n{{ m.content }}\n{%- endgeneration -%}{% endfor %}"
    assert load_template(str(tmp_template(source))).source == source


def test_single_template_answers_to_default_variant(tmp_template: WriteTemplate) -> None:
    path = tmp_template(SIMPLE)
    assert load_template(str(path), variant="default").variant is None
    assert "available: default" in load_error(SourceError, path, variant="tool_use")


# --------------------------------------------------------------------------------------------------
# tokenizer_config.json


def test_config_with_string_template(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "Org-Model-7B" / "tokenizer_config.json",
        {"chat_template": SIMPLE, "bos_token": "<s>", "eos_token": "</s>"},
    )
    template = load_template(str(path))
    assert template.source == SIMPLE
    assert template.name == "Org-Model-7B"
    assert template.origin == str(path)
    assert (template.bos_token, template.eos_token) == ("<s>", "</s>")
    assert (template.variant, template.variants) == (None, ())


def test_config_with_added_token_dicts(tmp_path: Path) -> None:
    added = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "__type": "AddedToken"}
    path = write_json(
        tmp_path / "tokenizer_config.json",
        {
            "chat_template": SIMPLE,
            "bos_token": {"content": "<|begin|>", **added},
            "eos_token": {"content": "<|end|>", **added},
        },
    )
    template = load_template(str(path))
    assert (template.bos_token, template.eos_token) == ("<|begin|>", "<|end|>")


def test_config_with_null_bos(tmp_path: Path) -> None:
    config = {"chat_template": SIMPLE, "bos_token": None, "eos_token": "<e>"}
    path = write_json(tmp_path / "tokenizer_config.json", config)
    template = load_template(str(path))
    assert (template.bos_token, template.eos_token) == (None, "<e>")


def test_any_json_name_works(tmp_path: Path) -> None:
    path = write_json(tmp_path / "custom.json", {"chat_template": SIMPLE})
    template = load_template(str(path))
    assert (template.source, template.name) == (SIMPLE, "custom")


@pytest.fixture
def named_config(tmp_path: Path) -> Path:
    return write_json(
        tmp_path / "tokenizer_config.json",
        {
            "chat_template": [
                {"name": "default", "template": SIMPLE},
                {"name": "tool_use", "template": TOOLS},
                {"name": "rag", "template": RAG},
            ],
            "eos_token": "</s>",
        },
    )


def test_named_templates_pick_tool_use_for_tools(named_config: Path) -> None:
    template = load_template(str(named_config))
    assert (template.source, template.variant) == (TOOLS, "tool_use")
    assert template.variants == ("default", "tool_use", "rag")
    assert template.eos_token == "</s>"


def test_named_templates_pick_default_without_tools(named_config: Path) -> None:
    template = load_template(str(named_config), for_tools=False)
    assert (template.source, template.variant) == (SIMPLE, "default")


def test_named_templates_explicit_variant(named_config: Path) -> None:
    template = load_template(str(named_config), variant="rag")
    assert (template.source, template.variant) == (RAG, "rag")


def test_named_templates_unknown_variant(named_config: Path) -> None:
    message = load_error(SourceError, named_config, variant="nope")
    assert "'nope'" in message
    assert "default, tool_use, rag" in message


def test_several_named_templates_without_default_or_tool_use_are_refused_with_their_names(tmp_path: Path) -> None:
    """The first of them was taken silently; transformers refuses such a config without a name too."""
    path = write_json(
        tmp_path / "tokenizer_config.json",
        {"chat_template": [{"name": "chatml", "template": SIMPLE}, {"name": "rag", "template": RAG}]},
    )
    assert load_error(SourceError, path).endswith(
        ": holds 2 named templates and none is default or tool_use: choose one with --variant (chatml, rag)"
    )
    assert load_error(SourceError, path, for_tools=False).endswith(
        ": holds 2 named templates and none is default: choose one with --variant (chatml, rag)"
    )
    template = load_template(str(path), variant="rag")
    assert (template.source, template.variant, template.variants) == (RAG, "rag", ("chatml", "rag"))


def test_several_named_templates_are_refused_through_the_command_line(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "tokenizer_config.json",
        {"chat_template": [{"name": "chatml", "template": SIMPLE}, {"name": "rag", "template": RAG}]},
    )
    code, out, err = run(["analyze", str(path)])
    assert (code, out) == (2, "")
    assert err == (
        f"Error: {path}: holds 2 named templates and none is default or tool_use: "
        "choose one with --variant (chatml, rag)\n"
    )
    code, _, err = run(["render", str(path), "--variant", "chatml", "--messages", "-"], input="[]")
    assert code == 0, err


def test_named_templates_without_default_pick_tool_use(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", {"chat_template": [{"name": "tool_use", "template": TOOLS}]})
    template = load_template(str(path), for_tools=False)
    assert (template.variant, template.variants) == ("tool_use", ("tool_use",))


# --------------------------------------------------------------------------------------------------
# Hugging Face folders


def test_folder_prefers_chat_template_jinja(tmp_path: Path) -> None:
    folder = tmp_path / "Org-Model"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text(SIMPLE, encoding="utf-8")
    write_json(
        folder / "tokenizer_config.json",
        {"chat_template": "{{ 'stale' }}", "bos_token": "<bos>", "eos_token": {"content": "<eos>"}},
    )
    template = load_template(str(folder))
    assert template.source == SIMPLE
    assert template.name == "Org-Model"
    assert template.origin == os.path.join(str(folder), "chat_template.jinja")
    assert (template.bos_token, template.eos_token) == ("<bos>", "<eos>")
    assert (template.variant, template.variants) == (None, ())


def test_folder_with_only_tokenizer_config(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    write_json(folder / "tokenizer_config.json", {"chat_template": SIMPLE, "bos_token": "<s>"})
    template = load_template(str(folder) + os.sep)
    assert (template.source, template.name, template.bos_token) == (SIMPLE, "model", "<s>")
    assert template.origin == os.path.join(str(folder) + os.sep, "tokenizer_config.json")


def test_folder_with_named_templates_in_config(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    write_json(
        folder / "tokenizer_config.json",
        {"chat_template": [{"name": "default", "template": SIMPLE}, {"name": "tool_use", "template": TOOLS}]},
    )
    assert load_template(str(folder)).variant == "tool_use"
    assert load_template(str(folder), for_tools=False).variant == "default"


def test_folder_with_chat_template_json(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    write_json(folder / "chat_template.json", {"chat_template": SIMPLE})
    write_json(folder / "tokenizer_config.json", {"eos_token": "</s>"})
    template = load_template(str(folder))
    assert (template.source, template.eos_token) == (SIMPLE, "</s>")


def test_folder_special_tokens_map_fallback(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text(SIMPLE, encoding="utf-8")
    write_json(folder / "tokenizer_config.json", {"eos_token": "<from-config>"})
    write_json(folder / "special_tokens_map.json", {"bos_token": {"content": "<from-map>"}, "eos_token": "<ignored>"})
    template = load_template(str(folder))
    assert (template.bos_token, template.eos_token) == ("<from-map>", "<from-config>")


def test_folder_additional_chat_templates(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / "additional_chat_templates").mkdir(parents=True)
    (folder / "chat_template.jinja").write_text(SIMPLE, encoding="utf-8")
    (folder / "additional_chat_templates" / "tool_use.jinja").write_text(TOOLS, encoding="utf-8")
    template = load_template(str(folder))
    assert (template.source, template.variant, template.variants) == (TOOLS, "tool_use", ("default", "tool_use"))
    assert load_template(str(folder), for_tools=False).source == SIMPLE


# --------------------------------------------------------------------------------------------------
# GGUF

TOKENS = ["<unk>", "<|begin▁of▁sentence|>", "<|end▁of▁sentence|>", "hello"]


def test_gguf_with_variants(tmp_path: Path) -> None:
    path = write_gguf(
        tmp_path / "model-Q4_K_M.gguf",
        templates={"default": SIMPLE, "tool_use": TOOLS},
        tokens=TOKENS,
        bos_id=1,
        eos_id=2,
    )
    template = load_template(str(path))
    assert (template.source, template.variant, template.variants) == (TOOLS, "tool_use", ("default", "tool_use"))
    assert template.bos_token == "<|begin▁of▁sentence|>"
    assert template.eos_token == "<|end▁of▁sentence|>"
    assert (template.name, template.origin) == ("model-Q4_K_M", str(path))
    assert load_template(str(path), for_tools=False).source == SIMPLE
    assert "default, tool_use" in load_error(SourceError, path, variant="rag")


def test_gguf_single_template(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", templates={"default": SIMPLE}, tokens=TOKENS, bos_id=1)
    template = load_template(str(path))
    assert (template.source, template.variant, template.variants) == (SIMPLE, None, ())
    assert (template.bos_token, template.eos_token) == (TOKENS[1], None)


def test_whether_the_tokenizer_adds_bos_is_read_where_the_source_says(tmp_path: Path) -> None:
    for add_bos in (True, False):
        path = write_gguf(tmp_path / f"m{add_bos}.gguf", templates={"default": SIMPLE}, tokens=TOKENS, add_bos=add_bos)
        assert load_template(str(path)).add_bos is add_bos
    assert load_template(str(write_gguf(tmp_path / "n.gguf", templates={"default": SIMPLE}))).add_bos is None
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": SIMPLE, "add_bos_token": False}))
    assert load_template(str(config)).add_bos is False
    config.write_text(json.dumps({"chat_template": SIMPLE}))
    assert load_template(str(config)).add_bos is None


def test_gguf_detected_by_magic(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "model.bin", templates={"default": SIMPLE})
    assert load_template(str(path)).source == SIMPLE


def test_gguf_token_id_out_of_range_gives_no_token(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", templates={"default": SIMPLE}, tokens=TOKENS, bos_id=99, eos_id=2)
    template = load_template(str(path))
    assert (template.bos_token, template.eos_token) == (None, TOKENS[2])


# --------------------------------------------------------------------------------------------------
# stdin


def test_stdin_text_stream() -> None:
    template = load_template("-", stdin=io.StringIO(SIMPLE))
    assert (template.source, template.name, template.origin) == (SIMPLE, "stdin", "-")


def test_stdin_bytes_are_read_as_utf8() -> None:
    stream = io.TextIOWrapper(io.BytesIO("{{ 'é' }}".encode()), encoding="latin-1")
    assert load_template("-", stdin=stream).source == "{{ 'é' }}"


def test_stdin_not_utf8() -> None:
    stream = io.TextIOWrapper(io.BytesIO(b"{{ x }}\xff"), encoding="latin-1")
    with pytest.raises(SourceError, match=r"^stdin: is not UTF-8 text .*offset 7"):
        load_template("-", stdin=stream)


def test_stdin_empty() -> None:
    with pytest.raises(SourceError, match=r"^stdin: template is empty$"):
        load_template("-", stdin=io.StringIO("  \n"))


# --------------------------------------------------------------------------------------------------
# Bad input


def test_missing_path(tmp_path: Path) -> None:
    assert "no such file or directory" in load_error(SourceError, tmp_path / "absent.jinja")


def test_folder_without_template(tmp_path: Path) -> None:
    folder = tmp_path / "empty-model"
    write_json(folder / "tokenizer_config.json", {"eos_token": "</s>"})
    assert "no chat template" in load_error(SourceError, folder)


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text('{\n  "chat_template": "x",\n}\n', encoding="utf-8")
    assert "invalid JSON at line 3, column 1" in load_error(SourceError, path)


def test_invalid_json_in_folder(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text("{", encoding="utf-8")
    message = load_error(SourceError, folder)
    assert "tokenizer_config.json: invalid JSON" in message


def test_json_without_chat_template(tmp_path: Path) -> None:
    path = write_json(tmp_path / "tokenizer_config.json", {"bos_token": "<s>"})
    assert "no chat_template" in load_error(SourceError, path)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (42, "must be a string or a list"),
        ([], "empty list"),
        ([{"name": "default"}], "chat_template[0]"),
    ],
)
def test_json_with_malformed_chat_template(tmp_path: Path, value: object, fragment: str) -> None:
    path = write_json(tmp_path / "tokenizer_config.json", {"chat_template": value})
    assert fragment in load_error(SourceError, path)


def test_json_not_an_object(tmp_path: Path) -> None:
    path = write_json(tmp_path / "tokenizer_config.json", ["chat_template"])
    assert "expected a JSON object" in load_error(SourceError, path)


def test_not_utf8(tmp_template: WriteTemplate) -> None:
    path = tmp_template(b"{{ bos_token }}\n\xe9t\xe9")
    assert "is not UTF-8 text (byte 0xe9 at offset 16)" in load_error(SourceError, path)


def test_not_utf8_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_bytes(b'{"chat_template": "\xff"}')
    assert "is not UTF-8 text" in load_error(SourceError, path)


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_empty_template(tmp_template: WriteTemplate, content: str) -> None:
    assert "template is empty" in load_error(SourceError, tmp_template(content))


def test_empty_named_variant(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", {"chat_template": [{"name": "tool_use", "template": ""}]})
    assert "[tool_use]: template is empty" in load_error(SourceError, path)


def test_jinja_syntax_error_names_the_line(tmp_template: WriteTemplate) -> None:
    path = tmp_template("line one\n{% if x %}\nline three\n{{ oops }\n{% endif %}\n")
    message = load_error(TemplateSyntaxError, path)
    assert message.startswith(f"{path}: Jinja syntax error at line 4: ")


def test_jinja_syntax_error_line_counts_generation_tags(tmp_template: WriteTemplate) -> None:
    path = tmp_template("{% generation\n%}\nok\n{% endgeneration %}\n{% for %}\n")
    assert "Jinja syntax error at line 5" in load_error(TemplateSyntaxError, path)


def test_jinja_syntax_error_unclosed_block(tmp_template: WriteTemplate) -> None:
    path = tmp_template("{% for m in messages %}\n{{ m }}\n")
    assert "Jinja syntax error at line" in load_error(TemplateSyntaxError, path)


def test_jinja_syntax_error_in_gguf_variant(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", templates={"default": SIMPLE, "tool_use": "{% if %}"})
    assert "[tool_use]: Jinja syntax error at line 1" in load_error(TemplateSyntaxError, path)
    assert load_template(str(path), for_tools=False).source == SIMPLE


def test_gguf_without_template(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", tokens=TOKENS, bos_id=1)
    assert "no tokenizer.chat_template" in load_error(SourceError, path)


def test_corrupt_gguf(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + os.urandom(256))
    assert "not a valid GGUF file" in load_error(SourceError, path)


def test_gguf_suffix_without_magic(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"not a gguf at all")
    assert "not a valid GGUF file" in load_error(SourceError, path)


def test_truncated_gguf(tmp_path: Path) -> None:
    whole = write_gguf(tmp_path / "whole.gguf", templates={"default": SIMPLE}, tokens=[f"t{i}" for i in range(500)])
    path = tmp_path / "cut.gguf"
    path.write_bytes(whole.read_bytes()[:-300])
    assert "not a valid GGUF file" in load_error(SourceError, path)


def test_gguf_array_length_past_end_fails_fast(tmp_path: Path) -> None:
    key = b"tokenizer.ggml.tokens"
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
    array_of_uint8 = struct.pack("<IIQ", 9, 0, 2**62)  # ARRAY, of UINT8, with 2**62 elements
    path = tmp_path / "m.gguf"
    path.write_bytes(header + array_of_uint8 + bytes(16))
    assert "not a valid GGUF file" in load_error(SourceError, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=200),
    version=st.sampled_from([2, 3]),
    counts=st.tuples(st.integers(0, 4), st.integers(0, 2**64 - 1)),
)
def test_gguf_garbage_never_escapes_as_traceback(
    tmp_path: Path, body: bytes, version: int, counts: tuple[int, int]
) -> None:
    path = tmp_path / "fuzz.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, *counts) + body)
    with pytest.raises(SourceError):
        load_template(str(path))
