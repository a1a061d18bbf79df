"""The report's work spread over its workers and its helper (analysis.workers): the figures the
helper draws while the report is computed are the figures drawn after the report, a figure
that fails stops the report with its error, the command's helper draws and writes so that the
process reading the records never imports matplotlib or compiles a template, and what several
judges share (their reference's ceiling) is worked out once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import analysis.report.estimates as estimates
from analysis.report import build_report, build_report_with_figures, report_json
from analysis.report.figures import DRAWN_FROM, FIGURES, figures
from analysis.report.summary import summary_blocks
from pairlab.records import Record
from report_sample import synthetic_records
from support import wait_until

KNOBS = dict(n_boot=40, rating_bootstrap=20, seed=0)


@pytest.fixture(scope="module")
def records() -> list[Record]:
    # People on every pair and two judges in both orders, so every figure has something to show.
    return [Record.from_dict(r) for r in synthetic_records(400)]


def test_figures_drawn_by_the_helper_are_those_drawn_from_the_finished_report(records):
    """Each figure is drawn as soon as what it shows is known: the raters' (with the judges'
    leaderboards, which their ratings give) before the judges are judged, the worth's once every
    judge is priced. Each must come out as drawn from the finished report, byte for byte."""
    report, figs = build_report_with_figures(records, workers=2, **KNOBS)
    assert list(DRAWN_FROM) == list(FIGURES) and {"raters", "worth"} == set(DRAWN_FROM.values())
    assert {"position", "length", "families", "ratings", "leaderboards", "worth"} <= set(figs)
    assert figs == figures(report)
    alone = build_report(records, workers=1, **KNOBS)  # and drawing changes no number
    assert report_json(report, summary_blocks(report)) == report_json(alone, summary_blocks(alone))


def test_a_figure_that_fails_in_the_helper_stops_the_report_with_its_error(records, monkeypatch):
    def broken(report):
        raise ValueError("the ratings figure cannot be drawn")

    monkeypatch.setitem(FIGURES, "ratings", broken)  # before the fork: the helper draws with it
    with pytest.raises(ValueError, match="the ratings figure cannot be drawn"):
        build_report_with_figures(records, workers=2, **KNOBS)


_REPORT_THEN_MODULES = """
import sys
from analysis.report.cli import main
main(sys.argv[1:])
print(" ".join(m for m in ("matplotlib", "jinja2") if m in sys.modules))
"""


@pytest.mark.process  # what a fresh process imports
def test_the_command_s_helper_draws_and_writes_so_the_reading_process_imports_neither(tmp_path):
    """On more than one core the command forks its helper once the records are read: the helper
    imports matplotlib and compiles the templates while they are analysed, draws the figures and
    writes the files; the process that reads and analyses never imports either (on one core it does
    both itself). The files are those the command writes in one process (``--workers 1``)."""
    from analysis.report.cli import main
    from analysis.report.figures import helper_forks
    from pairlab.records import write_records

    root = Path(__file__).resolve().parents[1]
    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=3))
    options = ["--votes", str(votes), "--quiet", "--bootstrap", "40", "--rating-bootstrap", "20"]
    proc = subprocess.run([sys.executable, "-c", _REPORT_THEN_MODULES, *options, "--out", str(tmp_path / "helper")],
                          cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].split() == ([] if helper_forks(None) else ["matplotlib", "jinja2"])
    assert main([*options, "--out", str(tmp_path / "alone"), "--workers", "1"]) == 0  # here, in one process
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "helper" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name


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


def test_the_judges_worth_is_handed_out_before_their_leaderboards(records, monkeypatch):
    """The workers take calls in the order given, so the longest go first: each judge's worth
    (about twice a judge's leaderboard at 100k and at 1M records) before the leaderboards and
    the ceiling. Handed out after them, the last worth ran alone at the end."""
    rounds = []
    run_named = estimates._run_named

    def recorded(pool, calls, *args, **kwargs):
        rounds.append([key[0] for key in calls])
        return run_named(pool, calls, *args, **kwargs)

    monkeypatch.setattr(estimates, "_run_named", recorded)
    build_report(records, workers=1, **KNOBS)
    judging = rounds[-1]
    assert judging.count("worth") == 3 and judging.count("judge") == 3 and judging.count("ceiling") == 1
    assert judging == sorted(judging, key=["worth", "judge", "ceiling"].index)


def test_a_figure_is_handed_over_as_soon_as_what_it_shows_is_known(tmp_path):
    """``once``: what waits on some calls is handed over as soon as they are in, while the rest
    still run (here: two judges' results, while a worth waits for the handover)."""
    from analysis.report.estimates import _run_named
    from analysis.workers import Workers

    release = tmp_path / "release"

    def worth() -> str:
        wait_until(release.exists, timeout=30, what="the judges' handover while the worth runs")
        return "priced"

    handed = []
    with Workers(2, {"judge": lambda n: f"judged {n}", "worth": worth}) as pool:
        done = _run_named(pool, {("worth",): (), ("judge", "a"): ("a",), ("judge", "b"): ("b",)},
                          once=[([("judge", "a"), ("judge", "b")],
                                 lambda got: handed.append(sorted(got)) or release.write_text("go"))])
    assert done[("worth",)] == "priced"
    assert handed == [[("judge", "a"), ("judge", "b")]]  # the worth was not in yet
