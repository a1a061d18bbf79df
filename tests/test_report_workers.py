"""The report's work spread over its workers (analysis.workers): the figures drawn as tasks
there are the figures drawn after the report, a figure that fails stops the report with its
error, and what several judges share (their reference's ceiling) is worked out once."""

from __future__ import annotations

import pytest

import analysis.report.estimates as estimates
from analysis.report import build_report, build_report_with_figures, report_json
from analysis.report.figures import FIGURES, FROM_RATERS, figures
from analysis.report.summary import summary_blocks
from pairlab.records import Record
from report_sample import synthetic_records

KNOBS = dict(n_boot=40, rating_bootstrap=20, seed=0)


@pytest.fixture(scope="module")
def records() -> list[Record]:
    # People on every pair and two judges in both orders, so every figure has something to show.
    return [Record.from_dict(r) for r in synthetic_records(400)]


def test_figures_drawn_by_the_workers_are_those_drawn_from_the_finished_report(records):
    """The figures of the raters' own estimates are drawn before the judges are judged: they
    must come out as drawn from the finished report, byte for byte, as must the rest."""
    report, figs = build_report_with_figures(records, workers=2, **KNOBS)
    assert set(FROM_RATERS) < set(FIGURES)
    assert {"position", "length", "families", "ratings", "leaderboards", "worth"} <= set(figs)
    assert figs == figures(report)
    alone = build_report(records, workers=1, **KNOBS)  # and drawing changes no number
    assert report_json(report, summary_blocks(report)) == report_json(alone, summary_blocks(alone))


def test_a_figure_that_fails_in_a_worker_stops_the_report_with_its_error(records, monkeypatch):
    def broken(report):
        raise ValueError("the ratings figure cannot be drawn")

    monkeypatch.setitem(FIGURES, "ratings", broken)  # before the fork: the workers draw with it
    with pytest.raises(ValueError, match="the ratings figure cannot be drawn"):
        build_report_with_figures(records, workers=2, **KNOBS)


def test_a_reference_shared_by_several_judges_is_measured_against_itself_once(records, monkeypatch):
    """People are the reference of both judges and the panel: their ceiling (ten split-half
    leaderboard fits) was fitted once per judge, three times, the same numbers each time."""
    calls = []
    ceiling = estimates.reference_ceiling

    def counted(rows, *args, **kwargs):
        calls.append(len(rows))
        return ceiling(rows, *args, **kwargs)

    monkeypatch.setattr(estimates, "reference_ceiling", counted)
    report = build_report(records, workers=1, **KNOBS)
    judges = [r for r in report.raters if r.reference == "human"]
    assert len(judges) == 3
    assert len(calls) == 1
    assert all(r.leaderboard.ceiling is not None and r.leaderboard.ceiling == judges[0].leaderboard.ceiling
               for r in judges)
