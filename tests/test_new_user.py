"""What a new user meets in the first hour (issue 28): diff's exit code, capability notes worded as what
the template does, and shell completion that works (response-template saying where it wrote is tested in
test_response_check.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.cli import run

from analyzer.cli import cli

REPOSITORY = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- diff --exit-code


@pytest.fixture
def changed_pair(corpus_dir: Path, tmp_path: Path) -> tuple[str, str]:
    old = corpus_dir / "Qwen-Qwen2.5-7B-Instruct.jinja"
    new = tmp_path / "qwen-v2.jinja"
    new.write_text(old.read_text(encoding="utf-8").replace("<tool_call>", "<function_call>"), encoding="utf-8")
    return str(old), str(new)


def test_diff_exits_0_with_or_without_a_change_as_git_diff_does(changed_pair: tuple[str, str]) -> None:
    old, new = changed_pair
    code, out, _ = run(["diff", old, new])
    assert code == 0 and "calls.call: " in out
    assert run(["diff", old, old])[:2] == (0, "no change in behaviour\n")


@pytest.mark.parametrize("as_json", [False, True])
def test_diff_exit_code_is_1_on_a_change_and_0_without(changed_pair: tuple[str, str], as_json: bool) -> None:
    old, new = changed_pair
    flags = ["--exit-code", *(["--json"] if as_json else [])]
    code, out, err = run(["diff", *flags, old, new])
    assert (code, err) == (1, "")
    assert (json.loads(out)["changes"] != []) if as_json else "calls.call: " in out  # still printed
    code, out, err = run(["diff", *flags, old, old])
    assert (code, err) == (0, "")


def test_diff_help_says_which_exit_code() -> None:
    result = CliRunner().invoke(cli, ["diff", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "Exits 0 whether or not anything changed, as git diff does; --exit-code makes a change exit 1." in text


# --------------------------------------------------------------------------- capability notes


def test_analyze_words_a_template_render_error_as_what_the_template_does(corpus_dir: Path) -> None:
    """Qwen3-Coder's own `.items()` on arguments given as a string fails in its line 87: the summary says so,
    and no longer reads like a crash of ours (`string_arguments=error`, `... (in chat:87)`)."""
    code, out, err = run(["analyze", str(corpus_dir / "Qwen3-Coder.jinja")])
    assert code == 0, err
    assert " string_arguments=fails " in out and "=error" not in out and "in chat:" not in out
    assert (
        "    string_arguments: the template cannot render call arguments given as a JSON string "
        "(its line 87 fails: invalid operation: cannot convert value into pairs)"
    ) in out.splitlines()
    code, out, _ = run(["analyze", "--json", str(corpus_dir / "Qwen3-Coder.jinja")])
    capability = json.loads(out)["capabilities"]["string_arguments"]
    assert capability["status"] == "error"  # the description's data is unchanged
    assert capability["message"].endswith("cannot convert value into pairs (in chat:87)")


def test_analyze_quotes_a_refusal_as_the_templates_own_message(corpus_dir: Path) -> None:
    code, out, _ = run(["analyze", str(corpus_dir / "google-gemma-2-2b-it.jinja")])
    assert code == 0
    assert '    system_role: the template refuses a system message, raising "System role not supported"' in (
        out.splitlines()
    )


def test_capability_notes_name_the_template_line_only_when_the_engine_gives_one(corpus_dir: Path) -> None:
    code, out, _ = run(["analyze", "--engine", "jinja2", str(corpus_dir / "Qwen3-Coder.jinja")])
    assert code == 0
    assert (
        "    string_arguments: the template cannot render call arguments given as a JSON string "
        "(it fails: TypeError: Can only get item pairs from a mapping.)"
    ) in out.splitlines()


# --------------------------------------------------------------------------- shell completion


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment with a `template-analyzer` on PATH that runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "template-analyzer"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m analyzer "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), env.get("PYTHONPATH")]))
    return env


def _complete_in_bash(env: dict[str, str], words: list[str]) -> list[str]:
    """Source the printed script in bash and run its completion function on ``words`` (the last being
    the word under the cursor), as bash does on TAB."""
    script = (
        'eval "$(template-analyzer completion bash)"\n'
        "complete -p template-analyzer >/dev/null || exit 9\n"
        f"COMP_WORDS=({' '.join(repr(word) for word in ['template-analyzer', *words])})\n"
        f"COMP_CWORD={len(words)}\n"
        "_template_analyzer_completion template-analyzer 2>/dev/null\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_script_completes_commands_options_and_choices(on_path: dict[str, str]) -> None:
    assert _complete_in_bash(on_path, ["gra"]) == ["grammar"]
    assert _complete_in_bash(on_path, ["diff", "--exit"]) == ["--exit-code"]
    assert _complete_in_bash(on_path, ["grammar", "x.jinja", "--format", ""]) == ["gbnf", "llama-server"]
    assert _complete_in_bash(on_path, ["corpus", ""]) == ["fetch"]


@pytest.mark.parametrize("shell, hook", [("zsh", "compdef"), ("fish", "complete --no-files --command")])
def test_zsh_and_fish_scripts_hook_the_command(shell: str, hook: str) -> None:
    code, out, err = run(["completion", shell])
    assert code == 0, err
    assert hook in out and "template-analyzer" in out and "_TEMPLATE_ANALYZER_COMPLETE" in out


def test_completion_of_an_unknown_shell_is_one_line() -> None:
    code, out, err = run(["completion", "tcsh"])
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "'tcsh'" in err
