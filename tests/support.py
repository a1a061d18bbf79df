"""Test support: waiting for a condition, and measuring a child process's memory.

Waiting polls for a condition with a deadline, never sleeps a fixed time. A fixed sleep is either too short on a loaded machine (the test fails) or too long on an idle
one (the suite crawls); a poll returns as soon as the condition holds and fails, naming what
it waited for, only when the deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def patience() -> float:
    """How many times longer than on an idle machine a wait may take: the load per CPU, at
    least 1. The suite runs on machines that are busy with other work (a second suite beside
    it); a deadline is the bound of a hang, not a measure of speed."""
    import os

    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this OS
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def wait_until(condition: Callable[[], T], timeout: float = 60.0, interval: float = 0.02,
               what: str = "the condition") -> T:
    """Call ``condition`` until it returns something true, and return that; an
    AssertionError naming ``what`` once ``timeout`` seconds (times :func:`patience`) have
    passed. Exceptions raised by ``condition`` propagate (pass a condition that catches what
    it expects)."""
    timeout *= patience()
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)


def answers(url: str, proc=None) -> Callable[[], bool]:
    """A condition for :func:`wait_until`: ``url`` answers 200. If ``proc`` (the server's
    Popen) has ended meanwhile, fail at once instead of waiting out the deadline."""
    import httpx

    def check() -> bool:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server for {url} ended (exit {proc.returncode}) before it answered")
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    return check


# Source to prepend to a child process's script: high_water() is its peak resident memory in
# bytes. VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the (large) pytest parent
# through fork and exec, while VmHWM belongs to the child's own address space.
HIGH_WATER = """
def high_water():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
"""

# A child's script: runs the module named by its first argument as `python -m` would, then prints
# its peak resident memory (MB) as stderr's last line, "peak_mb N".
MEASURED = HIGH_WATER + """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
finally:
    print("peak_mb", high_water() >> 20, file=sys.stderr)
"""


def run_module(module: str, *args: str, cwd=None, env: dict[str, str] | None = None):
    """``python -m module args`` (or ``python module args`` for a script's path, ``module`` ending
    in ``.py``) run in this process: a CompletedProcess with the exit code and
    what the command wrote to stdout and stderr, without a fresh interpreter's seconds of imports.

    As in a child: sys.argv is the module's file and the arguments, warnings print to stderr
    under Python's default filters, help wraps at 80 columns, an uncaught exception is a
    traceback on stderr and exit code 1. For a test of the command's behaviour; a test of the
    process itself (a signal, an import's cost, a console script) starts a real one."""
    import contextlib
    import importlib
    import importlib.util
    import io
    import os
    import runpy
    import subprocess
    import sys
    import traceback
    import warnings

    out, err = io.StringIO(), io.StringIO()
    script = module.endswith(".py")
    package = not script and importlib.util.find_spec(module).submodule_search_locations is not None
    target = f"{module}.__main__" if package else module
    argv0 = os.path.join(cwd or ".", module) if script else importlib.util.find_spec(target).origin
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    saved_env = {k: os.environ.get(k) for k in {**(env or {}), "COLUMNS": ""}}
    code = 0
    try:
        sys.argv = [argv0, *map(str, args)]
        os.environ.update({"COLUMNS": "80", **(env or {})})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()  # a child's filters: the defaults, not pytest's recording
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.simplefilter("default", append=True)
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: \
                sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
            try:
                if script:
                    runpy.run_path(argv0, run_name="__main__")
                elif package:
                    runpy.run_module(target, run_name="__main__", alter_sys=False)
                else:
                    code = importlib.import_module(module).main(list(map(str, args)))
            except SystemExit as exc:
                code = exc.code
            except Exception:
                traceback.print_exc()
                code = 1
            if isinstance(code, str):  # sys.exit("message"): the message on stderr, exit code 1
                print(code, file=sys.stderr)
                code = 1
            sys.stdout.flush()
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess([module, *args], code or 0, out.getvalue(), err.getvalue())
