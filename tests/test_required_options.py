"""Every command run without one of its required options or arguments: one `Error:` line and exit 2.

The commands and their required parameters are read from click's own command objects, so a command or a
required option added later is covered without editing this file. Since click 8.3 an option declared
``required=True`` with an explicit ``default=None`` is no longer reported missing: the command ran on
None and ended in a traceback (issue 26, item 6).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from helpers.cli import run

from analyzer.cli import JsonListFile, cli


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _required(command: click.Command) -> list[click.Parameter]:
    return [param for param in command.params if param.required]


CASES = [
    pytest.param(path, param.name, id=f"{' '.join(path)}-{param.name}")
    for path, command in _commands(cli)
    for param in _required(command)
]


def test_the_cases_cover_the_commands_that_had_the_traceback() -> None:
    """A guard against an empty or shrunken list: these four ended in a traceback with click 8.5."""
    covered = {(path, name) for path, name in (case.values for case in CASES)}
    for expected in [
        (("grammar",), "tools"),
        (("prompted",), "tools"),
        (("export",), "messages"),
        (("render",), "messages"),
        (("parser",), "output"),
        (("serve",), "upstream"),
    ]:
        assert expected in covered


def _value(param: click.Parameter, scratch: Path) -> str:
    """A value the parameter's type accepts, so that only the omitted parameter is wrong."""
    if isinstance(param.type, JsonListFile):
        path = scratch / f"{param.name}.json"
        path.write_text(
            json.dumps([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
            encoding="utf-8",
        )
        return str(path)
    if isinstance(param.type, click.Choice):
        return str(param.type.choices[0])
    if isinstance(param.type, click.types._NumberParamTypeBase):
        return "1"
    path = scratch / f"{param.name}.value"
    path.write_text("", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("path, missing", CASES)
def test_a_missing_required_parameter_is_one_error_line_and_exit_2(
    path: tuple[str, ...], missing: str, tmp_path: Path
) -> None:
    command = dict(_commands(cli))[path]
    args = list(path)
    omitted = next(param for param in command.params if param.name == missing)
    for param in _required(command):
        if isinstance(param, click.Argument):
            # Positional: giving a later one would fill the omitted one's place.
            if param is omitted or command.params.index(param) > command.params.index(omitted):
                continue
            args.append(_value(param, tmp_path))
        elif param is not omitted:
            assert isinstance(param, click.Option)
            args += [param.opts[0], _value(param, tmp_path)]
    code, out, err = run(args)
    lines = err.splitlines()
    assert (code, out) == (2, ""), err
    assert len(lines) == 1 and lines[0].startswith("Error: Missing "), err
    label = omitted.opts[-1] if isinstance(omitted, click.Option) else omitted.human_readable_name
    assert label in lines[0]
