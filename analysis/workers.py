"""Independent pieces of an analysis run on several CPU cores.

The workers are forked from the process that holds the data, so they see its memory as it
was at the fork (copy-on-write) and nothing large is sent to them: a task is a closure over
that data, named by a key, and only its arguments and its result travel (pickled). Every
estimator takes its seed as an argument, so a task's result does not depend on the process
that ran it, nor on the order in which tasks finish.

A :class:`Helper` is one such process forked early, before the data it works on exists: it gets
ready (imports, compiles) while this process analyses, then runs the calls handed to it while
this one goes on, each answered when asked for.

Where fork is not available (or one worker is asked for), the same tasks run in this
process, one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["PARALLEL_ROWS", "Helper", "WorkerLost", "Workers", "available_cpus", "blas_without_pool"]

# Below this many verdicts forking workers costs more than it saves.
PARALLEL_ROWS = 20_000

# Seconds between looks, while waiting for a result, at whether every forked process still lives.
_LOOK = 0.5


class WorkerLost(RuntimeError):
    """A forked process died (killed: out of memory, a signal) while its results were awaited:
    the call it ran is lost, and a pool would wait for it for ever."""

    def __init__(self):
        super().__init__("a worker process died before it answered (killed: out of memory, or a signal), so its "
                         "part of the work is lost; run again, with --workers 1 to work in one process")


# The closures of the pools being forked, by pool: a forked worker finds them here, in its copy
# of this module, so they are never pickled.
_TASKS: dict[int, dict[str, Callable[..., Any]]] = {}


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def blas_without_pool() -> None:
    """For a command about to import numpy and fork workers: OpenBLAS started with one thread and
    no pool of threads beside it. Its fits run on one BLAS thread anyway
    (:func:`analysis.ratings.threads.one_blas_thread`), but a pool started with the library is shut
    at every fork and started again in each process the first time a limit is set there, and each
    new thread spins before it sleeps, taking CPU from the workers. Does nothing where numpy is
    already imported (a notebook, a test) or ``OPENBLAS_NUM_THREADS`` is set."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _forked_pool(n: int, tasks: dict[str, Callable[..., Any]], prepare: Callable[[], None] | None = None):
    """``n`` workers forked now, ``tasks`` registered for them; each runs ``prepare`` first. A pool
    that cannot be made (OSError) leaves nothing registered."""
    _TASKS[id(tasks)] = tasks
    # The workers are born with SIGINT blocked, so a Ctrl-C that reaches one before its
    # initializer ignores it stays pending there, then is dropped: arriving while a worker still
    # ran Python's after-fork hooks, it printed a KeyboardInterrupt traceback ("Exception
    # ignored in ... _after_fork"). The parent's own waits until the pool is made.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return multiprocessing.get_context("fork").Pool(n, initializer=_start, initargs=(prepare,))
    except OSError:
        _TASKS.pop(id(tasks), None)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start(prepare: Callable[[], None] | None) -> None:
    # Ctrl-C reaches every process of the terminal's group: the parent's KeyboardInterrupt
    # stops the pool, and a worker's own would only add its traceback to the screen.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if prepare is not None:
        # Getting ready is a head start, never a condition: an error here would kill the process,
        # and the pool would fork it again and again while its caller waited for ever. A call that
        # needs what failed meets the error itself, and its caller gets it.
        try:
            prepare()
        except Exception:
            pass


def _processes(pool) -> set[int]:
    # The pool replaces a worker that dies: a set of pids that changed means one died.
    return {process.pid for process in pool._pool}


def _awaited(get: Callable[[float], Any], pool, pids: set[int]) -> Any:
    """``get(timeout)``'s result, looking every :data:`_LOOK` seconds at whether the pool's
    processes are still ``pids``: :class:`WorkerLost` once one has died, not a wait for ever."""
    while True:
        try:
            return get(_LOOK)
        except multiprocessing.TimeoutError:
            if _processes(pool) != pids:
                raise WorkerLost() from None


def _stop(pool, tasks: dict[str, Callable[..., Any]]) -> None:
    pool.terminate()
    pool.join()
    _TASKS.pop(id(tasks), None)


def _run(call: tuple[int, int, str, tuple]) -> tuple[int, Any]:
    index, pool, key, args = call
    return index, _TASKS[pool][key](*args)


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
        self.n = n if _can_fork() else 1
        self.tasks = dict(tasks)
        self._pool = None

    def __enter__(self) -> Workers:
        if self.n > 1:
            self._pool = _forked_pool(self.n, self.tasks)
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            _stop(self._pool, self.tasks)
            self._pool = None

    def run(self, calls: Sequence[tuple[str, tuple]], progress: Callable | None = None,
            desc: str = "", arrived: Callable[[int, Any], None] | None = None) -> list[Any]:
        """Each ``(task, args)`` in ``calls`` run once; the results in the order of ``calls``.

        Give the longest calls first: they are handed out in this order. ``progress(items,
        desc)``, if given, wraps the results as they arrive (a tqdm bar); ``arrived(index,
        result)``, if given, is called here with each as it arrives, while the rest still run."""
        calls = list(calls)
        if self._pool is None:
            done: Iterator = ((i, self.tasks[key](*args)) for i, (key, args) in enumerate(calls))
        else:
            pool, pids = id(self.tasks), _processes(self._pool)
            arriving = self._pool.imap_unordered(_run, [(i, pool, key, args) for i, (key, args) in enumerate(calls)])
            done = (_awaited(arriving.next, self._pool, pids) for _ in calls)
        if progress is not None:
            done = progress(_Sized(iter(done), len(calls)), desc=desc)
        results: list[Any] = [None] * len(calls)
        for index, result in done:
            results[index] = result
            if arrived is not None:
                arrived(index, result)
        return results


class _Done:
    """A call already made here: :meth:`Helper.submit`'s answer without a helper process."""

    def __init__(self, result: Any):
        self._result = result

    def get(self, timeout: float | None = None) -> Any:
        return self._result


class _Pending:
    def __init__(self, pending, pool):
        self._pending, self._pool, self._pids = pending, pool, _processes(pool)

    def get(self, timeout: float | None = None) -> Any:
        """The call's result, or its error raised here; ``multiprocessing.TimeoutError`` after
        ``timeout`` seconds (None: wait for it); :class:`WorkerLost` if the helper dies first."""
        if timeout is not None:
            return self._pending.get(timeout)[1]
        return _awaited(self._pending.get, self._pool, self._pids)[1]


class Helper:
    """One process forked on entering (use as a context manager), before the data it is not
    given: it runs ``prepare`` (the imports and compiling its calls need) while this process
    goes on, then each call handed to it by :meth:`submit`, in turn, while this process goes on
    again. ``tasks`` (name -> function) are what it runs; their arguments and results travel
    pickled. Not forked (``fork`` False, or no fork on this OS): each call is made here, when
    it is handed over, and ``prepare`` is left to the calls."""

    def __init__(self, tasks: dict[str, Callable[..., Any]], prepare: Callable[[], None] | None = None,
                 fork: bool = True):
        self.forked = fork and _can_fork()
        self.tasks, self.prepare = dict(tasks), prepare
        self._pool = None

    def __enter__(self) -> Helper:
        if self.forked:
            try:
                self._pool = _forked_pool(1, self.tasks, self.prepare)
            except OSError:  # no process of its own here (no /dev/shm for the pool's locks): the calls run here
                self.forked = False
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            _stop(self._pool, self.tasks)
            self._pool = None

    def submit(self, task: str, *args) -> _Done | _Pending:
        """``tasks[task](*args)``, run in the helper; ``.get()`` of the answer waits for its
        result (or raises its error)."""
        if self._pool is None:
            return _Done(self.tasks[task](*args))
        return _Pending(self._pool.apply_async(_run, ((0, id(self.tasks), task, args),)), self._pool)
