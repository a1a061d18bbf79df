"""Independent pieces of an analysis run on several CPU cores.

The workers are forked from the process that holds the data, so they see its memory as it
was at the fork (copy-on-write) and nothing large is sent to them: a task is a closure over
that data, named by a key, and only its arguments and its result travel (pickled). Every
estimator takes its seed as an argument, so a task's result does not depend on the process
that ran it, nor on the order in which tasks finish.

Where fork is not available (or one worker is asked for), the same tasks run in this
process, one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["PARALLEL_ROWS", "Workers", "available_cpus"]

# Below this many verdicts forking workers costs more than it saves.
PARALLEL_ROWS = 20_000

# The closures of the pool being forked: a forked worker finds them here, in its copy of
# this module, so they are never pickled.
_TASKS: dict[str, Callable[..., Any]] = {}


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _forked_pool(n: int):
    # The workers are born with SIGINT blocked, so a Ctrl-C that reaches one before its
    # initializer ignores it stays pending there, then is dropped: arriving while a worker still
    # ran Python's after-fork hooks, it printed a KeyboardInterrupt traceback ("Exception
    # ignored in ... _after_fork"). The parent's own waits until the pool is made.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return multiprocessing.get_context("fork").Pool(n, initializer=_leave_interrupts_to_the_parent)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _leave_interrupts_to_the_parent() -> None:
    # Ctrl-C reaches every process of the terminal's group: the parent's KeyboardInterrupt
    # stops the pool, and a worker's own would only add its traceback to the screen.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _run(call: tuple[int, str, tuple]) -> tuple[int, Any]:
    index, key, args = call
    return index, _TASKS[key](*args)


class _Sized:
    """An iterator with the length a progress bar shows as its total."""

    def __init__(self, items: Iterator, n: int):
        self._items, self._n = items, n

    def __iter__(self):
        return self._items

    def __len__(self) -> int:
        return self._n


class Workers:
    """A pool of ``n`` forked workers; use as a context manager. ``tasks`` (name -> function,
    closures welcome) are what ``run`` hands out: the data they read must exist before the
    pool is entered (the fork). One worker (or no fork on this OS) runs everything here
    instead, one call after another."""

    def __init__(self, n: int, tasks: dict[str, Callable[..., Any]]):
        self.n = n if "fork" in multiprocessing.get_all_start_methods() else 1
        self.tasks = tasks
        self._pool = None

    def __enter__(self) -> Workers:
        if self.n > 1:
            _TASKS.update(self.tasks)
            self._pool = _forked_pool(self.n)
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
            for key in self.tasks:
                _TASKS.pop(key, None)

    def run(self, calls: Sequence[tuple[str, tuple]], progress: Callable | None = None,
            desc: str = "") -> list[Any]:
        """Each ``(task, args)`` in ``calls`` run once; the results in the order of ``calls``.

        Give the longest calls first: they are handed out in this order. ``progress(items,
        desc)``, if given, wraps the results as they arrive (a tqdm bar)."""
        calls = list(calls)
        if self._pool is None:
            done: Iterator = ((i, self.tasks[key](*args)) for i, (key, args) in enumerate(calls))
        else:
            done = self._pool.imap_unordered(_run, [(i, key, args) for i, (key, args) in enumerate(calls)])
        if progress is not None:
            done = progress(_Sized(iter(done), len(calls)), desc=desc)
        results: list[Any] = [None] * len(calls)
        for index, result in done:
            results[index] = result
        return results
