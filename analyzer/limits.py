"""The memory limit a command runs under, and the supervisor that reports running out of it.

Templates are untrusted code and can build huge values in ways no in-engine check foresees (a string
doubled in a namespace, a filter asked for a billion spaces). The command line therefore runs its
command in a forked child whose data segment is capped (``RLIMIT_DATA``: heap and anonymous memory,
not the address space a thread or an allocator merely reserves). Python code that passes the cap
gets a MemoryError, which the renderers report as one error; minijinja (Rust) aborts instead, and
the parent, which stays small, turns that death into the same one line. The child inherits stdin and
stdout, so streaming works as before; only what is written straight to file descriptor 2 (Rust's own
abort message) passes through the parent, and Python's ``sys.stderr`` still goes to the terminal.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import resource
import signal
import sys
from collections.abc import Callable

MEMORY_ENV = "TEMPLATE_ANALYZER_MEMORY_MB"
# Measured: analysing every corpus template in one process peaks at about 115 MB of address space.
DEFAULT_MEMORY_MB = 400
# About 12 times the longest corpus template (16.7 kB). jinja2 compiles a template into Python code,
# and a few megabytes of template take gigabytes and tens of seconds to compile.
MAX_TEMPLATE_CHARS = 200_000
_ALLOCATION_FAILED = re.compile(rb"^memory allocation of \d+ bytes failed\s*$")


# Commands that run until stopped: their memory grows with the requests they serve, not with one
# template, so no cap applies unless one is asked for (each render stays bounded by its own limits).
UNCAPPED_COMMANDS = frozenset({"serve"})


def memory_limit_mb(command: str | None = None) -> int | None:
    """The limit from ``TEMPLATE_ANALYZER_MEMORY_MB`` (0: none), or the default for ``command``."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if not text:
        return None if command in UNCAPPED_COMMANDS else DEFAULT_MEMORY_MB
    if not text.isdigit():
        raise ValueError(f"{MEMORY_ENV} must be a whole number of megabytes (0 for no limit), not {text!r}")
    return int(text) or None


def memory_limit_text() -> str:
    """`` (the N MB memory limit)`` for the limit this process runs under, or nothing."""
    for kind in (resource.RLIMIT_DATA, resource.RLIMIT_AS):
        soft, _ = resource.getrlimit(kind)
        if soft != resource.RLIM_INFINITY:
            return f" (the {soft // 2**20} MB memory limit)"
    return ""


def _set_memory_limit(megabytes: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = megabytes * 2**20
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def supervised(run: Callable[[], None], megabytes: int | None) -> int:
    """Run ``run`` (which ends by ``sys.exit``) in a child under the memory limit; its exit code.

    Without a limit, where there is no ``fork``, or when the standard streams are not the process's
    own files (a test runner's buffers, which a child would write into a copy of), ``run`` runs here."""
    if megabytes is None or not hasattr(os, "fork") or not _real_streams():
        try:
            run()
        except SystemExit as exc:
            return _exit_code(exc)
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    # Objects made so far (the imports) go where the collector never visits, so that the child's
    # collections do not write to, and so copy, every page it shares with the parent.
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read_end)
            real_stderr = os.dup(2)
            os.dup2(write_end, 2)
            os.close(write_end)
            sys.stderr = open(  # noqa: SIM115 - lives until os._exit below
                real_stderr, "w", encoding="utf-8", errors="backslashreplace", buffering=1
            )
            _set_memory_limit(megabytes)
            try:
                run()
                code = 0
            except SystemExit as exc:
                code = _exit_code(exc)
        except BaseException:
            import traceback  # only for a bug: not worth its import on every start

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                # A closed pipe must not keep the exit code from the parent.
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    os.close(write_end)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets Ctrl-C and says so
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(pid, signum))
    try:
        ran_out = _forward_stderr(read_end)
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        os.close(read_end)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    killed_by = os.WTERMSIG(status)
    if ran_out or killed_by in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS):
        print(
            f"Error: the command needed more than the {megabytes} MB memory limit "
            f"(a template building huge values; {MEMORY_ENV} sets the limit)",
            file=sys.stderr,
        )
        return 2
    if killed_by == signal.SIGPIPE:
        return 128 + killed_by
    print(f"Error: the command was stopped by signal {signal.Signals(killed_by).name}", file=sys.stderr)
    return 128 + killed_by


def _real_streams() -> bool:
    try:
        return [stream.fileno() for stream in (sys.stdin, sys.stdout, sys.stderr)] == [0, 1, 2]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False


def _forward_stderr(fd: int) -> bool:
    """Copy the child's raw stderr to ours, line by line, until an allocation failure: Rust's abort
    message and what follows it (a backtrace notice) are held back. Whether one was seen."""
    ran_out = False
    pending = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        if ran_out:
            continue  # drain until the child is gone
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            ran_out = ran_out or bool(_ALLOCATION_FAILED.match(line))
            if not ran_out:
                _write_stderr(line + b"\n")
    if pending and not ran_out:
        if _ALLOCATION_FAILED.match(pending):
            ran_out = True
        else:
            _write_stderr(pending)
    return ran_out


def _write_stderr(data: bytes) -> None:
    sys.stderr.flush()
    os.write(2, data)
