"""The command line driven through its real entry point, as the console script runs it."""

from __future__ import annotations

import click
from click.testing import CliRunner

from analyzer.cli import main


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def _entry(ctx: click.Context) -> None:
    main(list(ctx.args))


def run(args: list[str], input: str | None = None) -> tuple[int, str, str]:
    """Invoke ``main`` as the console script does; return (exit code, stdout, stderr)."""
    runner = CliRunner()
    result = runner.invoke(_entry, args, input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
