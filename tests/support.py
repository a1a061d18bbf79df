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


def wait_until(condition: Callable[[], T], timeout: float = 60.0, interval: float = 0.02,
               what: str = "the condition") -> T:
    """Call ``condition`` until it returns something true, and return that; an
    AssertionError naming ``what`` once ``timeout`` seconds have passed. Exceptions raised
    by ``condition`` propagate (pass a condition that catches what it expects)."""
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
