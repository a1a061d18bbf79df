"""The report's figures, drawn by two processes beside the analysis, with one matplotlib.

The first painter is forked before the analysis starts: it imports matplotlib and loads its
fonts at a low priority, on the core the analysis leaves idle. Once the report is built it
is sent there, once, and that painter forks the second, which finds matplotlib imported and
the report unpickled. Each takes the next figure no one has taken, slowest first (the order
of ``FIGURES``), and sends its PNG bytes back while this process writes report.json and
report.md. Importing matplotlib in each of two painters cost a third of a second of CPU,
taken from the analysis.

Without fork (or with one process asked for), the figures are drawn here, when asked for;
so are those of a painter that was lost (killed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable
from multiprocessing import connection
from typing import TYPE_CHECKING

from analysis.workers import frozen_heap

if TYPE_CHECKING:
    from analysis.report.estimates import BiasReport

__all__ = ["Painters"]


class Painters:
    """``processes`` painters (at most two: the first and its fork); use as a context manager,
    entered once the modules the figures need are imported (the fork copies them). ``draw``
    hands them a report."""

    def __init__(self, processes: int = 2):
        self.n = min(processes, 2) if "fork" in multiprocessing.get_all_start_methods() else 1
        self._process = None

    def __enter__(self) -> Painters:
        if self.n > 1:
            ctx = multiprocessing.get_context("fork")
            self._taken = ctx.Value("i", 0)  # figures handed out so far, shared by both painters
            self._report_in, self._report_out = ctx.Pipe(duplex=False)
            self._images = [ctx.Pipe(duplex=False) for _ in range(self.n)]
            self._process = ctx.Process(target=_paint, daemon=True,
                                        args=(self._report_in, [w for _, w in self._images], self._taken))
            with frozen_heap():
                self._process.start()
            self._report_in.close()
            for _, writer in self._images:
                writer.close()
        return self

    def __exit__(self, *exc) -> None:
        if self._process is not None:
            self._process.terminate()  # its fork goes with it (_paint)
            self._process.join()
            self._process = None
            self._report_out.close()
            for reader, _ in self._images:
                reader.close()

    def draw(self, report: BiasReport) -> Callable[[], dict[str, bytes]]:
        """Start drawing ``report``'s figures; a function that waits for them (PNG bytes by
        name in the order of ``FIGURES``, a figure with nothing to show left out). An error
        raised by a figure is raised there."""
        from analysis.report.figures import FIGURES, figure, figures

        if self._process is None:
            return lambda: figures(report)
        try:
            self._report_out.send(report)
        except OSError:  # the painter is gone (killed): the figures are drawn here
            return lambda: figures(report)

        def wait() -> dict[str, bytes]:
            drawn: dict[str, bytes | None] = {}
            drawing = [reader for reader, _ in self._images]
            while drawing:
                # Whichever painter has sent: one left waiting fills its pipe and stops drawing.
                for reader in connection.wait(drawing):
                    try:
                        message = reader.recv()
                    except EOFError:  # a painter gone before it said it was done
                        message = None
                    if message is None:
                        drawing.remove(reader)
                        continue
                    name, image, error = message
                    if error is not None:
                        raise error
                    drawn[name] = image
            # What a lost painter had not sent is drawn here.
            drawn.update((name, figure(report, name)) for name in FIGURES if name not in drawn)
            return {name: image for name in FIGURES if (image := drawn[name]) is not None}

        return wait


def _paint(report_in, images, taken) -> None:
    """The first painter: warm up, wait for the report, fork the second, draw, reap it."""
    os.nice(10)  # the analysis has the cores while both have work
    _warm()
    try:
        report = report_in.recv()
    except EOFError:  # the report failed: nothing to draw
        return
    stops = {signal.SIGTERM, signal.SIGINT}
    # Held back until this painter knows its fork's pid: stopped in between, it would leave
    # the fork drawing on its own.
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)  # their default: the fork just ends
        try:
            _draw_taken(report, images[1], taken)
        finally:
            os._exit(0)  # never back into the first painter's code

    def stop(signum, frame):  # terminated (or Ctrl-C): the fork goes too, and is reaped
        with contextlib.suppress(ProcessLookupError, ChildProcessError):  # unless it already was
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        os._exit(1)

    for signum in stops:
        signal.signal(signum, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    _draw_taken(report, images[0], taken)
    os.waitpid(child, 0)
    for signum in stops:  # done: terminated now, this painter just ends
        signal.signal(signum, signal.SIG_DFL)


def _warm() -> None:
    # Ctrl-C reaches every process of the terminal's group: the report's own process stops
    # the painters and says so, and a painter's traceback would only add to the screen.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from analysis.report.plotting import draw, new_figure

    fig, (ax,) = new_figure((1.0, 1.0))
    ax.set_title("warm")
    draw(fig)


def _draw_taken(report: BiasReport, images, taken) -> None:
    """Draw the next figure not yet taken, until none is left; each sent as ``(name, png,
    error)``, then None."""
    from analysis.report.figures import FIGURES, figure

    names = list(FIGURES)
    while True:
        with taken.get_lock():
            index = taken.value
            taken.value += 1
        if index >= len(names):
            break
        try:
            images.send((names[index], figure(report, names[index]), None))
        except Exception as exc:  # noqa: BLE001 - raised again in the report's process
            images.send((names[index], None, exc))
    images.send(None)
