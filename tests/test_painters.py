"""analysis.report.painters: the report's figures drawn in two processes that share one
matplotlib import, the same images as drawn here, and nothing left running."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from analysis.report import build_report
from analysis.report import figures as figures_module
from analysis.report.figures import figures
from analysis.report.painters import Painters
from pairlab.records import Record
from report_sample import synthetic_records


@pytest.fixture(scope="module")
def report():
    return build_report([Record(**r) for r in synthetic_records(120, seed=3)], n_boot=30, rating_bootstrap=10, seed=0)


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while being read
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _forks_of(pid: int) -> list[int]:
    """The children of painter ``pid`` once it has forked (waited for up to 30 s)."""
    deadline = time.monotonic() + 30
    while not (forks := _children(pid)) and time.monotonic() < deadline:
        time.sleep(0.002)
    return forks


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_two_painters_draw_the_same_images_as_this_process(report):
    with Painters(2) as painters:
        first = painters._process.pid
        wait = painters.draw(report)
        drawn = wait()
    assert list(drawn) == list(figures(report))  # the same figures, in FIGURES' order
    assert drawn == figures(report)  # byte for byte
    assert first != os.getpid() and _gone(first)


def test_the_second_painter_is_forked_from_the_first(report):
    """matplotlib is imported once: the second painter is the first one's fork."""
    with Painters(2) as painters:
        first = painters._process.pid
        wait = painters.draw(report)
        assert _forks_of(first), "the first painter forked no second one"
        wait()


def test_an_error_in_a_figure_reaches_the_caller(report, monkeypatch):
    def broken(report):
        raise ValueError("no room for the legend")

    # Set before the fork: the painters draw from their copy of FIGURES.
    monkeypatch.setitem(figures_module.FIGURES, "position", broken)
    with Painters(2) as painters, pytest.raises(ValueError, match="no room for the legend"):
        painters.draw(report)()


def test_the_figures_of_a_killed_painter_are_drawn_here(report):
    with Painters(2) as painters:  # killed before the report is sent
        os.kill(painters._process.pid, signal.SIGKILL)
        painters._process.join()
        assert painters.draw(report)() == figures(report)
    with Painters(2) as painters:  # killed while it has the report (or before it read it)
        wait = painters.draw(report)
        os.kill(painters._process.pid, signal.SIGKILL)
        assert wait() == figures(report)


def test_leaving_while_they_draw_stops_both_painters(report):
    """Ctrl-C or an error while the figures are drawn: the first painter and its fork are
    gone (ended and reaped) once the block is left, none left drawing."""
    with Painters(2) as painters:
        first = painters._process.pid
        painters.draw(report)  # never waited for
        forks = _forks_of(first)
        assert forks
    assert _gone(first)
    assert all(_gone(pid) for pid in forks)


def test_one_painter_draws_here_when_asked(report):
    with Painters(1) as painters:
        assert painters._process is None
        assert painters.draw(report)() == figures(report)


def test_a_painter_ending_as_it_is_stopped_says_nothing(report, capfd):
    """The report stops its painters on the way out, maybe as the first one ends on its own,
    its fork already reaped: it must end quietly (a traceback from it once reached the screen)."""
    for _ in range(3):
        with Painters(2) as painters:
            first = painters._process.pid
            wait = painters.draw(report)
            forks = _forks_of(first)
            wait()
            deadline = time.monotonic() + 30
            while not all(_gone(pid) for pid in forks) and time.monotonic() < deadline:
                time.sleep(0.001)  # the fork has ended and been reaped: the first painter is ending
        assert "Traceback" not in capfd.readouterr().err
