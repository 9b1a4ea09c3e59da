"""Hostile templates stop with one clear line, under both engines, within 10 s of CPU and 500 MB.

Each case runs the real command line in a child process whose address space (RLIMIT_AS) and CPU time
(RLIMIT_CPU) are capped by the operating system: a case passes only if the command finishes inside
both on its own and says why it stopped in one ``Error:`` line. A case that needed more would be
killed (SIGXCPU) or would fail to allocate, and the test would see that instead of the expected line.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.analysis import analyze
from analyzer.errors import AnalysisLimitError
from analyzer.render.sandbox import RenderLimits
from analyzer.template import Template

MEMORY_BYTES = 500 * 2**20
CPU_SECONDS = 10
ENGINES = ("minijinja", "jinja2")
ROOT = Path(__file__).resolve().parent.parent

# A template that renders a normal conversation, with {hostile} placed where it runs on every render.
CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


def _sets(size: int) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = f'{{% set v{i} = "value {i}" %}}\n'
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines) + CHAT


NESTED_LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
LIMIT = (
    r"(time budget|time limit|instruction budget|memory limit|more memory than allowed|past the \d+ limit"
    r"|recursed too deeply|repeated sequence is too large|unable to calculate)"
)
# minijinja concatenates lists lazily: doubling one costs nothing, and the template renders.
RENDERS_IN = {"range-list-doubling": {"minijinja"}}

# (id, template source, what the error line must say)
CASES = [
    ("string-times-a-billion", '{{ "x" * 1000000000 }}', LIMIT),
    (
        "namespace-string-doubling-tilde",
        '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}' + CHAT,
        LIMIT,
    ),
    (
        "namespace-string-doubling-plus",
        '{% set ns = namespace(s="xxxxxxxx") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s + ns.s %}'
        "{% endfor %}" + CHAT,
        LIMIT,
    ),
    ("five-megabytes-of-set", _sets(5_000_000), r"characters long; the limit is 200000"),
    (
        "slow-only-in-call-renders",
        "{% for m in messages %}{% if m.tool_calls %}" + NESTED_LOOP + "{% endif %}<|{{ m.role }}|>{{ m.content }}"
        "{% endfor %}",
        r"time budget",
    ),
    ("endless-loop", NESTED_LOOP + CHAT, LIMIT),
    ("endless-recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}" + CHAT, LIMIT),
    ("huge-format-width", '{{ "%900000000s"|format("x") }}' + CHAT, LIMIT),
    ("huge-list", "{{ [1] * 900000000 }}" + CHAT, LIMIT),
    ("huge-power", "{{ 7 ** 900000000 }}" + CHAT, LIMIT),
    (
        "range-list-doubling",
        "{% set ns = namespace(l=range(100000)|list) %}{% for i in range(30) %}"
        "{% set ns.l = ns.l + ns.l %}{% endfor %}" + CHAT,
        LIMIT,
    ),
]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def run_limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        cwd=cwd,
        env=env,
        preexec_fn=_limited,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("name", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_hostile_template_stops_with_one_clear_line(
    tmp_path: Path, engine: str, name: str, source: str, expected: str
) -> None:
    path = tmp_path / "hostile.jinja"
    path.write_text(source, encoding="utf-8")
    result = run_limited(["analyze", "--engine", engine, str(path)], tmp_path)
    lines = result.stderr.splitlines()
    if engine in RENDERS_IN.get(name, set()):
        assert (result.returncode, result.stderr) == (0, ""), result.stderr[-2000:]
        return
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("Error: ")
    assert re.search(expected, lines[0]), lines[0]
    assert result.stdout == ""


ESCAPES = [
    "{{ cycler.__init__.__globals__.os.popen('touch CANARY').read() }}",
    "{{ lipsum.__globals__['os'].system('touch CANARY') }}",
    "{{ self.__init__.__globals__.__builtins__.open('CANARY', 'w').write('x') }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ messages.__class__.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__['__builtins__']['open']('CANARY', 'w') }}",
    "{{ joiner.__init__.__globals__.os.system('touch CANARY') }}",
    "{{ (range|attr('__globals__'))['os'].system('touch CANARY') }}",
    "{% set x = tools.append('x') %}{{ raise_exception.__globals__['os'].system('touch CANARY') }}",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("escape", ESCAPES, ids=range(len(ESCAPES)))
def test_sandbox_escape_fails_and_says_so_in_one_line(tmp_path: Path, engine: str, escape: str) -> None:
    path = tmp_path / "escape.jinja"
    path.write_text(escape + CHAT, encoding="utf-8")
    result = run_limited(["analyze", "--engine", engine, str(path)], tmp_path)
    assert not (tmp_path / "CANARY").exists()
    assert "<class" not in result.stdout and "__builtins__" not in result.stdout
    # Either the escape renders as nothing (minijinja's lenient undefined) and the template is analysed,
    # or it fails every render and the command says so in one line.
    if result.returncode != 0:
        assert result.returncode == 2
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: escape: the template renders no conversation")


def test_a_rust_abort_in_the_child_becomes_one_line(tmp_path: Path) -> None:
    """minijinja aborts the process when an allocation fails; the supervisor reports the limit."""
    script = (
        "import os, sys\n"
        "from analyzer.limits import supervised\n"
        "def run():\n"
        "    os.write(2, b'memory allocation of 123456789 bytes failed\\nstack backtrace:\\n')\n"
        "    os.abort()\n"
        "sys.exit(supervised(run, 300))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: the command needed more than the 300 MB memory limit "
        "(a template building huge values; TEMPLATE_ANALYZER_MEMORY_MB sets the limit)"
    ]


def test_the_child_streams_and_keeps_exit_codes(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from analyzer.limits import supervised\n"
        "def run():\n"
        "    print(sys.stdin.read().upper())\n"
        "    print('note', file=sys.stderr)\n"
        "    sys.exit(7)\n"
        "sys.exit(supervised(run, 300))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, input="abc", check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (7, "ABC\n", "note\n")


def test_a_bad_memory_setting_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEMPLATE_ANALYZER_MEMORY_MB": "lots"}
    result = subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", "x.jinja"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: TEMPLATE_ANALYZER_MEMORY_MB must be a whole number of megabytes (0 for no limit), not 'lots'"
    ]


def test_a_server_runs_uncapped_unless_a_cap_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """serve runs until stopped and its memory grows with the requests it serves, not with one template:
    the default cap is for one command's work (each render keeps its own limits either way)."""
    from analyzer import limits

    monkeypatch.delenv("TEMPLATE_ANALYZER_MEMORY_MB", raising=False)
    assert limits.memory_limit_mb("serve") is None
    assert limits.memory_limit_mb("analyze") == limits.memory_limit_mb(None) == limits.DEFAULT_MEMORY_MB
    monkeypatch.setenv("TEMPLATE_ANALYZER_MEMORY_MB", "300")
    assert limits.memory_limit_mb("serve") == limits.memory_limit_mb("analyze") == 300


@pytest.mark.parametrize("engine", ENGINES)
def test_one_budget_for_the_whole_analysis(engine: str) -> None:
    """Every render that writes a call is slow but within its own limit; together they pass the budget,
    and the analysis stops with that error rather than running on (68 s under jinja2 before)."""
    source = "{% for m in messages %}{% if m.tool_calls %}" + NESTED_LOOP + "{% endif %}{{ m.content }}{% endfor %}"
    template = Template(source, "slow", "mem:slow")
    with pytest.raises(AnalysisLimitError) as info:
        analyze(template, engine=engine, limits=RenderLimits(seconds=0.2, budget_seconds=0.5))
    assert str(info.value) == "slow: the analysis ran past its 0.5 s time budget"


def test_limits_not_started_bound_each_render_alone() -> None:
    """A long-lived renderer (a server) has no overall budget unless it starts one."""
    assert RenderLimits().deadline is None
    started = RenderLimits(budget_seconds=3).started()
    assert started.deadline is not None
    assert started.started() is started


RENDERED = ["string-times-a-billion", "namespace-string-doubling-tilde", "endless-loop", "huge-format-width"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("name", "source", "expected"), [c for c in CASES if c[0] in RENDERED], ids=[c for c in RENDERED]
)
def test_hostile_template_in_render_stops_with_one_clear_line(
    tmp_path: Path, engine: str, name: str, source: str, expected: str
) -> None:
    """``render`` has no analysis budget (one render, under its own limits) and the same memory cap."""
    path = tmp_path / "hostile.jinja"
    path.write_text(source, encoding="utf-8")
    messages = tmp_path / "messages.json"
    messages.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    result = run_limited(["render", "--engine", engine, str(path), "--messages", str(messages)], tmp_path)
    lines = result.stderr.splitlines()
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr[-2000:]
    assert re.search(expected, lines[0]), lines[0]
