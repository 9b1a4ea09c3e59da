"""Turn whatever the user points at (template file, tokenizer config, model folder, GGUF, stdin) into a ``Template``.

Every later stage works on a ``Template`` only, so all knowledge of file layouts lives here, and so does
all validation of user input: each problem becomes a one-line ``SourceError`` that names the input,
never a traceback, because the command line shows these messages to people who gave us a wrong path.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import minijinja

from analyzer.errors import SourceError, TemplateSyntaxError
from analyzer.limits import MAX_TEMPLATE_CHARS
from analyzer.template import Template

if TYPE_CHECKING:
    import jinja2

__all__ = ["load_template"]

# Chat templates are a few KiB and tokenizer configs a few MiB; anything far larger is the wrong file
# (weights, a tarball), and reading it whole just to report that would exhaust memory first.
_MAX_BYTES = 64 * 1024 * 1024

_GGUF_MAGIC = b"GGUF"
_UTF8_BOM = b"\xef\xbb\xbf"

# Names Hugging Face tools give a config file; such a file is named after its folder, the model.
_GENERIC_STEMS = frozenset({"tokenizer_config", "chat_template", "config"})

# Transformers marks assistant spans with {% generation %}...{% endgeneration %}, an extension plain
# Jinja does not know; it changes no output, so the syntax check may simply drop it.
_GENERATION_TAG = re.compile(r"\{%[-+]?\s*(?:end)?generation\s*[-+]?%\}")


def load_template(
    spec: str,
    *,
    variant: str | None = None,
    for_tools: bool = True,
    stdin: TextIO | None = None,
) -> Template:
    """Load and syntax-check the chat template that ``spec`` names.

    ``spec`` is a template file, a ``.json`` tokenizer config, a Hugging Face model folder, a GGUF file or
    ``-`` for ``stdin``. A source holding several named templates yields the one named ``variant``; without
    it, ``tool_use`` when ``for_tools`` (tool calling is what we analyse), else ``default``, else the only
    one; several with neither are refused with their names, as transformers refuses them.
    """
    spec = os.fspath(spec)  # a Path works too
    if spec == "-":
        loaded = _from_stdin(stdin if stdin is not None else sys.stdin, variant)
    else:
        loaded = _from_path(spec, variant, for_tools)
    label = "stdin" if spec == "-" else loaded.origin
    if loaded.variant is not None:
        label += f" [{loaded.variant}]"
    if not loaded.source.strip():
        raise SourceError(f"{label}: template is empty")
    if len(loaded.source) > MAX_TEMPLATE_CHARS:
        raise SourceError(
            f"{label}: the template is {len(loaded.source)} characters long; the limit is {MAX_TEMPLATE_CHARS}"
        )
    _check_syntax(loaded.source, label)
    return loaded


# --------------------------------------------------------------------------------------------------
# Dispatch on the kind of path


def _from_path(spec: str, variant: str | None, for_tools: bool) -> Template:
    path = Path(spec)
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError as exc:
        raise SourceError(f"{spec}: cannot access ({_os_reason(exc)})") from None
    if not exists:
        raise SourceError(f"{spec}: no such file or directory")
    if is_dir:
        return _from_folder(spec, variant, for_tools)
    if path.suffix.lower() == ".gguf":
        return _from_gguf(spec, variant, for_tools)
    # Sniff before reading whole: a GGUF renamed without its suffix may be many GiB.
    head, rest = _read_head(spec)
    if head == _GGUF_MAGIC:
        return _from_gguf(spec, variant, for_tools)
    data = head + rest
    if path.suffix.lower() == ".json":
        return _from_config_file(spec, data, variant, for_tools)
    source = _decode(data, spec)
    _pick({"default": source}, variant=variant, for_tools=for_tools, label=spec)  # rejects a named --variant
    return Template(source=source, name=path.stem or path.name, origin=spec)


def _from_stdin(stream: TextIO, variant: str | None) -> Template:
    # Decode the raw bytes ourselves when we can, so stdin means UTF-8 whatever the locale says.
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is not None:
            text = _decode(_read_capped(buffer, "stdin"), "stdin")
        else:
            text = stream.read(_MAX_BYTES + 1)
            if len(text) > _MAX_BYTES:
                raise SourceError(f"stdin: input is larger than {_MAX_BYTES // 2**20} MiB; not a chat template")
    except UnicodeDecodeError as exc:
        raise SourceError(f"stdin: is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise SourceError(f"stdin: cannot read ({_os_reason(exc)})") from None
    _pick({"default": text}, variant=variant, for_tools=False, label="stdin")
    return Template(source=text, name="stdin", origin="-")


# --------------------------------------------------------------------------------------------------
# Tokenizer configs and Hugging Face folders


def _from_config_file(spec: str, data: bytes, variant: str | None, for_tools: bool) -> Template:
    config = _parse_json(data, spec)
    found = _config_templates(config, spec)
    if found is None:
        raise SourceError(f"{spec}: no chat_template in this JSON file")
    templates, named = found
    chosen = _pick(templates, variant=variant, for_tools=for_tools, label=spec)
    return Template(
        source=templates[chosen],
        name=_config_name(spec),
        origin=spec,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
        add_bos=_flag(config.get("add_bos_token")),
        variant=chosen if named else None,
        variants=tuple(templates) if named else (),
    )


def _from_folder(spec: str, variant: str | None, for_tools: bool) -> Template:
    """Follow transformers' own order: chat_template.jinja, then chat_template.json, then the config.

    A tokenizer_config.json that does not parse is an error even when the template lives elsewhere:
    bos/eos come from it, and quietly rendering without them would change every prompt.
    """

    def inside(name: str) -> str:
        return os.path.join(spec, name)

    config_file = inside("tokenizer_config.json")
    config = _read_json(config_file) if os.path.isfile(config_file) else None
    jinja_file = inside("chat_template.jinja")
    json_file = inside("chat_template.json")

    found: tuple[dict[str, str], bool] | None
    if os.path.isfile(jinja_file):
        origin = jinja_file
        templates = {"default": _decode(_read_file(jinja_file), jinja_file)}
        # Newer transformers save the named templates (tool_use, rag, ...) as separate files here.
        extra_dir = Path(inside("additional_chat_templates"))
        if extra_dir.is_dir():
            for extra in sorted(extra_dir.glob("*.jinja")):
                templates[extra.stem] = _decode(_read_file(str(extra)), str(extra))
        found = templates, len(templates) > 1
    elif os.path.isfile(json_file):
        origin = json_file
        found = _config_templates(_read_json(json_file), json_file)
        if found is None:
            raise SourceError(f"{json_file}: no chat_template in this JSON file")
    elif config is not None and (found := _config_templates(config, config_file)) is not None:
        origin = config_file
    else:
        raise SourceError(
            f"{spec}: no chat template in this folder "
            "(looked for chat_template.jinja, chat_template.json, and chat_template in tokenizer_config.json)"
        )

    templates, named = found
    chosen = _pick(templates, variant=variant, for_tools=for_tools, label=origin)
    bos, eos = _folder_special_tokens(spec, config)
    return Template(
        source=templates[chosen],
        name=_folder_name(spec),
        origin=origin,
        bos_token=bos,
        eos_token=eos,
        add_bos=_flag(config.get("add_bos_token")) if config else None,
        variant=chosen if named else None,
        variants=tuple(templates) if named else (),
    )


def _folder_special_tokens(spec: str, config: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """bos/eos from tokenizer_config.json; older exports keep them only in special_tokens_map.json."""
    bos = _token_text(config.get("bos_token")) if config else None
    eos = _token_text(config.get("eos_token")) if config else None
    if bos is None or eos is None:
        map_file = os.path.join(spec, "special_tokens_map.json")
        if os.path.isfile(map_file):
            special = _read_json(map_file)
            bos = bos if bos is not None else _token_text(special.get("bos_token"))
            eos = eos if eos is not None else _token_text(special.get("eos_token"))
    return bos, eos


def _config_templates(config: dict[str, Any], label: str) -> tuple[dict[str, str], bool] | None:
    """The templates a config holds by name, and whether the source named them itself.

    A lone string template is called ``default`` and is not reported as a variant; a list, even of
    one entry, is a named set. ``None`` when the config has no ``chat_template``. The mapping keeps
    the file's order and, as transformers does, a later entry wins over an earlier one of the same name.
    """
    value = config.get("chat_template")
    if value is None:
        return None
    if isinstance(value, str):
        return {"default": value}, False
    shape = 'chat_template must be a string or a list of {"name": ..., "template": ...} objects'
    if not isinstance(value, list):
        raise SourceError(f"{label}: {shape}, not {_json_type(value)}")
    if not value:
        raise SourceError(f"{label}: chat_template is an empty list")
    templates: dict[str, str] = {}
    for index, item in enumerate(value):
        if not (isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("template"), str)):
            raise SourceError(f'{label}: chat_template[{index}] is not a {{"name", "template"}} object; {shape}')
        templates[item["name"]] = item["template"]
    return templates, True


def _token_text(value: object) -> str | None:
    """Special tokens are written either as text or as a serialized AddedToken ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    content = value.get("content") if isinstance(value, dict) else None
    return content if isinstance(content, str) else None


def _config_name(spec: str) -> str:
    path = Path(spec)
    if path.stem in _GENERIC_STEMS:
        parent = path.resolve().parent.name
        if parent:
            return parent
    return path.stem or path.name


def _folder_name(spec: str) -> str:
    path = Path(spec)
    return path.name or path.resolve().name or spec


# --------------------------------------------------------------------------------------------------
# GGUF


def _from_gguf(spec: str, variant: str | None, for_tools: bool) -> Template:
    # Imported here: gguf pulls in numpy, which nothing else on the common paths needs.
    from gguf import GGUFValueType

    reader = _open_gguf(spec)
    fields = reader.fields
    templates: dict[str, str] = {}
    prefix = "tokenizer.chat_template"
    for key, field in fields.items():
        if key == prefix:
            name = "default"
        elif key.startswith(prefix + ".") and len(key) > len(prefix) + 1:
            name = key[len(prefix) + 1 :]
        else:
            continue
        if list(field.types) != [GGUFValueType.STRING]:
            raise SourceError(f"{spec}: GGUF key {key} is not a string")
        templates[name] = _decode(bytes(field.parts[field.data[0]]), f"{spec} ({key})")
    if not templates:
        raise SourceError(f"{spec}: GGUF has no tokenizer.chat_template")

    named = set(templates) != {"default"}
    chosen = _pick(templates, variant=variant, for_tools=for_tools, label=spec)
    return Template(
        source=templates[chosen],
        name=Path(spec).stem,
        origin=spec,
        bos_token=_gguf_token(fields, "tokenizer.ggml.bos_token_id"),
        eos_token=_gguf_token(fields, "tokenizer.ggml.eos_token_id"),
        add_bos=_gguf_flag(fields, "tokenizer.ggml.add_bos_token"),
        variant=chosen if named else None,
        variants=tuple(templates) if named else (),
    )


def _open_gguf(spec: str) -> Any:
    try:
        return _metadata_reader_class()(spec)
    except OSError as exc:
        raise SourceError(f"{spec}: cannot read ({_os_reason(exc)})") from None
    except IndexError:
        # How GGUFReader fails on reaching the end of the data: the file was cut short.
        raise SourceError(f"{spec}: is not a valid GGUF file (data ends too early; truncated download?)") from None
    except Exception as exc:
        raise SourceError(f"{spec}: is not a valid GGUF file ({_one_line(str(exc)) or type(exc).__name__})") from None


@functools.cache
def _metadata_reader_class() -> type:
    """Build the reader class on first use: gguf pulls in numpy, which no other source kind needs."""
    import numpy as np
    from gguf import GGUFReader, GGUFValueType

    array_type = int(GGUFValueType.ARRAY)

    class MetadataReader(GGUFReader):
        """GGUFReader tuned for reading only the key/value header of a model file, from untrusted bytes.

        * It skips building tensor views: tensor setup is what fails on files whose header we can still
          use, a partly downloaded model or a quantization type newer than the installed gguf.
        * It swaps the ``np.memmap`` for a plain view of the same mapping: the reader slices the file at
          least once per element of every vocabulary array, and memmap's per-slice bookkeeping made
          opening a 150k-token model take ~20 s instead of ~6 s.
        * It refuses array lengths larger than the rest of the file. GGUFReader reads a value past the
          end as an empty one and carries on, so one corrupt length would have it loop over up to 2**64
          phantom elements. Should gguf rename the hooks used here, they merely stop applying.
        """

        @property
        def data(self) -> Any:
            return self._plain_data

        @data.setter
        def data(self, value: Any) -> None:
            self._plain_data = value.view(np.ndarray)

        def _get_field_parts(self, orig_offs: int, raw_type: int, *args: Any, **kwargs: Any) -> Any:
            if raw_type == array_type:
                length = self._get(orig_offs + 4, np.uint64)
                # Every element takes at least one byte, so a longer array cannot be in the file.
                if len(length) != 1 or int(length[0]) > self._plain_data.shape[0] - orig_offs:
                    raise EOFError("array runs past the end of the file")
            return super()._get_field_parts(orig_offs, raw_type, *args, **kwargs)

        def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
            self.tensors = []

    return MetadataReader


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _gguf_flag(fields: dict[str, Any], key: str) -> bool | None:
    field = fields.get(key)
    if field is None or not field.data:
        return None
    try:
        return bool(field.parts[field.data[0]][0])
    except (TypeError, ValueError, IndexError):
        return None


def _gguf_token(fields: dict[str, Any], id_key: str) -> str | None:
    """The vocabulary text of the token whose id ``id_key`` holds; ``None`` if either is missing or odd."""
    id_field = fields.get(id_key)
    tokens = fields.get("tokenizer.ggml.tokens")
    if id_field is None or tokens is None or not id_field.data:
        return None
    try:
        token_id = int(id_field.parts[id_field.data[0]][0])
        if not 0 <= token_id < len(tokens.data):
            return None
        raw = bytes(tokens.parts[tokens.data[token_id]])
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return raw.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------------------------------
# Variant choice


def _pick(templates: dict[str, str], *, variant: str | None, for_tools: bool, label: str) -> str:
    """A single unnamed template answers to ``default``, so ``--variant default`` works on any source."""
    if variant is not None:
        if variant not in templates:
            available = ", ".join(templates)
            raise SourceError(f"{label}: no template variant named {variant!r} (available: {available})")
        return variant
    if for_tools and "tool_use" in templates:
        return "tool_use"
    if "default" in templates:
        return "default"
    if len(templates) > 1:
        # transformers refuses to guess here too ("multiple chat templates with no default specified"):
        # the first is no more the model's template than any other.
        raise SourceError(
            f"{label}: holds {len(templates)} named templates and none is default"
            f"{' or tool_use' if for_tools else ''}: choose one with --variant ({', '.join(templates)})"
        )
    return next(iter(templates))


# --------------------------------------------------------------------------------------------------
# Reading and decoding


def _read_head(spec: str) -> tuple[bytes, bytes]:
    """The first four bytes and the rest, read through one handle so pipes (``<(cat x)``) work too."""
    try:
        with open(spec, "rb") as handle:
            head = handle.read(len(_GGUF_MAGIC))
            if head == _GGUF_MAGIC:
                return head, b""
            rest = _read_capped(handle, spec, already=len(head))
    except OSError as exc:
        raise SourceError(f"{spec}: cannot read ({_os_reason(exc)})") from None
    return head, rest


def _read_file(spec: str) -> bytes:
    try:
        with open(spec, "rb") as handle:
            return _read_capped(handle, spec)
    except OSError as exc:
        raise SourceError(f"{spec}: cannot read ({_os_reason(exc)})") from None


def _read_capped(handle: Any, label: str, already: int = 0) -> bytes:
    data: bytes = handle.read(_MAX_BYTES + 1 - already)
    if len(data) + already > _MAX_BYTES:
        raise SourceError(f"{label}: is larger than {_MAX_BYTES // 2**20} MiB; not a chat template or tokenizer config")
    return data


def _decode(data: bytes, label: str) -> str:
    """Strict UTF-8 (a leading BOM is dropped): a wrong encoding would silently change rendered prompts."""
    skipped = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        return data[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skipped
        raise SourceError(f"{label}: is not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})") from None


def _read_json(spec: str) -> dict[str, Any]:
    return _parse_json(_read_file(spec), spec)


def _parse_json(data: bytes, label: str) -> dict[str, Any]:
    text = _decode(data, label)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SourceError(f"{label}: invalid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise SourceError(f"{label}: expected a JSON object, found {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return names.get(type(value), "a number")


# --------------------------------------------------------------------------------------------------
# Syntax


def _check_syntax(source: str, label: str) -> None:
    """Fail at load time, with a line number, rather than deep inside the first render."""
    # Blank the generation tags but keep their newlines so reported line numbers stay true.
    checked = _GENERATION_TAG.sub(lambda match: "\n" * match.group(0).count("\n"), source)
    # minijinja parses about 50x faster; only what it rejects goes to jinja2's parser, whose verdict
    # counts (the two accept slightly different syntax, and transformers runs jinja2).
    try:
        minijinja.Environment().add_template("check", checked)
        return
    except minijinja.TemplateError:
        pass
    # Imported only here: minijinja accepts nearly every template, and jinja2 is slow to import.
    import jinja2

    try:
        _syntax_env().parse(checked)
    except jinja2.TemplateSyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        reason = _one_line(exc.message or "invalid syntax")
        raise TemplateSyntaxError(f"{label}: Jinja syntax error{where}: {reason}") from None
    except RecursionError:
        raise TemplateSyntaxError(f"{label}: Jinja syntax error: template is nested too deeply to parse") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


@functools.cache
def _syntax_env() -> jinja2.Environment:
    """A jinja2 environment with the extension set transformers compiles chat templates with, so we
    accept what it accepts."""
    import jinja2

    return jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])


def _os_reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
