"""The Python API: the commands' numbers from a notebook.

Each function is the library call behind one command, so the numbers are the command's on
the same input: :func:`rate` is ``pairlab ratings --json`` (its ``ratings`` rows),
:func:`bias_report` is ``pairlab report`` (``to_dict()`` is report.json), :func:`judge_worth`
is report.json's ``judges[JUDGE].ppi``. ``votes`` is what :func:`read_votes`
returned, or the files and folders themselves.

The analysis (pandas, scipy, statsmodels) is imported on first call, so ``import pairlab``
stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import pandas as pd

    from analysis.judging.worth import JudgeWorth
    from analysis.report.estimates import BiasReport

__all__ = ["Report", "bias_report", "judge_worth", "rate", "read_votes"]

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


def read_votes(*paths: str | os.PathLike, skip_bad: bool = False) -> pd.DataFrame:
    """Every record of these files and folders, one row each, in any format the commands read
    (format detected per file: our records, AlpacaEval, Chatbot Arena / FastChat, Arena-Hard,
    PandaLM, CSV or Parquet); columns as :mod:`pairlab.record_table`. A bad row raises
    :class:`pairlab.records.RecordError` naming file and line, unless ``skip_bad``."""
    import warnings

    table, skipped = _read(paths, skip_bad)
    for issue in skipped:
        warnings.warn(issue, stacklevel=2)
    return table


def _read(paths, skip_bad: bool) -> tuple[pd.DataFrame, list[str]]:
    from analysis.importers.columnar import read_table

    if not paths:
        raise ValueError("no files or folders given")
    table, skipped = read_table(paths, skip_bad=skip_bad)
    return table, [str(issue) for issue in skipped]


def _paths(votes) -> list[str] | None:
    if isinstance(votes, (str, os.PathLike)):
        return [os.fspath(votes)]
    if isinstance(votes, Sequence) and all(isinstance(v, (str, os.PathLike)) for v in votes):
        return [os.fspath(v) for v in votes]
    return None


def _table(votes, all_votes: bool) -> tuple[pd.DataFrame, list[str], list[str] | None]:
    """The record table of ``votes`` with the votes the leaderboard counts (every vote with
    ``all_votes``), as the report command reads them; what its reading skipped or left out, and
    its paths (None for a table)."""
    from pairlab.ratable import leaderboard_votes

    paths = _paths(votes)
    table, notes = (votes, []) if paths is None else _read(paths, skip_bad=False)
    table, rule_note = leaderboard_votes(table, all_votes=all_votes)
    if not len(table):
        raise ValueError(f"no votes to analyse: {rule_note}")
    return table, notes + ([rule_note] if rule_note else []), paths


def _battles(votes, *, judge: str | None, with_failures: bool = False) -> pd.DataFrame:
    """The battles ``pairlab ratings`` rates by default (the leaderboard's votes) with ``--judge``."""
    from analysis.frames import load_frame, select_battles

    paths = _paths(votes)
    if paths is not None:
        return load_frame(paths, judge=judge, with_failures=with_failures)
    return select_battles(votes, judge=judge, with_failures=with_failures)


def rate(votes: pd.DataFrame | Paths, method: str = "bt", judge: str | None = "human", *, bootstrap: int = 0,
         seed: int = 0, level: float = 0.95, **options) -> pd.DataFrame:
    """Ratings with intervals: columns ``model, rating, lower, upper, rank, n`` (Elo scale), as
    ``pairlab ratings --method METHOD --judge JUDGE --json``; ``method="winrate"`` gives
    AlpacaEval's win-rate columns instead.

    ``judge``: ``"human"`` (every person), one judge id, ``"all"`` (everyone pooled) or None
    (people where people and judges both voted). ``options`` are the command's method options
    by their Python names (``ties``, ``anchor=(model, rating)``, ``ci``, ``l2``, ``strong_weight``,
    ``k``, ``permutations``, ``baseline``, ``per_pair=True``: each pair once, not each vote). Only
    the votes the leaderboard counts are rated
    (anonymous, no identity leak, no vote-hygiene flag, no left-out prompt-set vote).
    """
    from analysis.ratings.cli import WINRATE, rate_battles

    frame = _battles(votes, judge=None if judge == "all" else judge, with_failures=method == WINRATE)
    if frame.empty:
        raise ValueError("no battles to rate" + (f" for judge {judge!r}" if judge else ""))
    result, _, _ = rate_battles(frame, method, judge=judge, bootstrap=bootstrap, seed=seed, level=level, **options)
    return result.table


def judge_worth(votes: pd.DataFrame | Paths, judge: str, *, humans: str | None = None, rating_bootstrap: int = 200,
                seed: int = 0, all_votes: bool = False, cluster: str | None = None) -> JudgeWorth:
    """What ``judge`` is worth in human votes, as report.json's ``judges[judge].ppi`` (with the
    report's options): prediction-powered ratings (PPI++; Angelopoulos, Duchi and Zrnic 2023,
    applied to Bradley-Terry by Boyeau et al. 2024) with people on a random share of the judge's
    pairs; ``effective_votes`` (with ``effective_ci``) is how many votes people alone would need
    for intervals as narrow, ``ratio`` what one human vote is worth beside the judge.
    ``cluster`` is the report's ``--cluster``.
    """
    from analysis.report.estimates import judge_worth_alone

    table = _table(votes, all_votes)[0]
    return judge_worth_alone(table, judge, human_prefix=humans, rating_bootstrap=rating_bootstrap, seed=seed,
                             cluster=cluster)


@dataclass(frozen=True)
class Report:
    """A bias report: ``to_dict()`` is report.json, ``write(folder)`` writes report.html,
    report.md and report.json as ``pairlab report`` does; ``report`` holds the estimates."""

    report: BiasReport

    def to_dict(self) -> dict:
        import json

        from analysis.report.serialise import report_json
        from analysis.report.summary import summary_blocks

        # Through JSON, as the file holds it (tuples become lists, keys strings).
        return json.loads(json.dumps(report_json(self.report, summary_blocks(self.report))))

    def write(self, folder: str | os.PathLike) -> dict[str, Path]:
        from analysis.report.render import write_report

        return write_report(self.report, folder)


def bias_report(votes: pd.DataFrame | Paths, *, humans: str | None = None, bootstrap: int = 1000,
                rating_bootstrap: int = 200, seed: int = 0, panel: bool = True, all_votes: bool = False,
                cluster: str | None = None) -> Report:
    """Position, length and self-family bias, agreement with people and each judge's worth, for
    people and every LLM judge: ``pairlab report`` with the same options (``humans`` is
    ``--humans``, ``panel=False`` is ``--no-panel``, ``all_votes=True`` is ``--all-votes``: also
    the votes the leaderboard does not count; ``cluster`` is ``--cluster``)."""
    from analysis.judging.annotator import read_run_timings
    from analysis.report.estimates import build_report

    table, issues, paths = _table(votes, all_votes)
    timings = read_run_timings(paths)[0] if paths else {}  # judges.run manifests beside the records
    return Report(build_report(table, human_prefix=humans, n_boot=bootstrap, rating_bootstrap=rating_bootstrap,
                               seed=seed, issues=issues, sources=paths or (), panel=panel, timings=timings,
                               cluster=cluster))
