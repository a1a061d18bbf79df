"""The Python API: the commands' numbers from a notebook.

Each function is the library call behind one command, so the numbers are the command's on
the same input: :func:`rate` is ``pairlab ratings --json`` (its ``ratings`` rows),
:func:`bias_report` is ``pairlab report`` (``to_dict()`` is report.json), :func:`judge_worth`
is report.json's ``judges[JUDGE].ppi``. ``votes`` is what :func:`read_votes`
returned, or the files and folders themselves.

The analysis (pandas, scipy) is imported on first call, so ``import pairlab``
stays cheap.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import pandas as pd

    from analysis.judging.worth import JudgeWorth
    from analysis.ratings.votes import Ratings
    from analysis.report.estimates import BiasReport

__all__ = ["Report", "bias_report", "judge_worth", "rate", "read_votes"]

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


def read_votes(*paths: str | os.PathLike, skip_bad: bool = False) -> pd.DataFrame:
    """Every record of these files and folders, one row each, in any format the commands read
    (format detected per file: our records, AlpacaEval, Chatbot Arena / FastChat, Arena-Hard,
    PandaLM, CSV or Parquet); columns as :mod:`pairlab.record_table`. A bad row raises
    :class:`pairlab.records.RecordError` naming file and line, unless ``skip_bad``. What the
    reading skipped or noted comes as one warning, as the commands print it."""
    import warnings

    table, skipped = _read(paths, skip_bad)
    for note in _summary(skipped):
        warnings.warn(note, stacklevel=2)
    return table


def _summary(issues: list[str]) -> list[str]:
    """What the reading noted, as one message (none when nothing was): the first few and how
    many more, as the commands print them."""
    from analysis.frames import summarise_warnings

    lines = summarise_warnings(issues)
    if len(lines) > 1:
        lines = [f"reading noted {len(issues)} things:\n" + "\n".join(lines)]
    return lines


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
    from analysis.importers.columnar import table_of_frame
    from pairlab.ratable import leaderboard_votes

    paths = _paths(votes)
    table, notes = (table_of_frame(votes), []) if paths is None else _read(paths, skip_bad=False)
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
         seed: int = 0, level: float = 0.95, **options) -> Ratings:
    """Ratings with intervals, as ``pairlab ratings --method METHOD --judge JUDGE --json``: a
    :class:`analysis.ratings.votes.Ratings` that a notebook shows as its table, whose
    ``to_frame()`` has the columns ``model, rating, lower, upper, rank, n`` (Elo scale;
    ``method="winrate"``: AlpacaEval's win-rate columns), ``warnings`` what to know before
    trusting them, and which answers ``ratings["model"]``, ``.iloc`` and the other DataFrame
    calls as that table.

    ``votes``: files and folders, :func:`read_votes`' table or any DataFrame with ``model_a,
    model_b, winner``. ``judge``: ``"human"`` (every person; every rater when no vote is a
    person's), one judge id, ``"all"`` (everyone pooled) or None (people where people and judges
    both voted). ``options`` are the command's method options by their Python names (``ties``,
    ``anchor=(model, rating)`` or ``"model=rating"``, ``ci``, ``l2``, ``strong_weight``, ``k``,
    ``permutations``, ``baseline``, ``per_pair=True``: each pair once, not each vote). Only the votes the leaderboard counts are rated (anonymous, no
    identity leak, no vote-hygiene flag, no left-out prompt-set vote).
    """
    import warnings

    from analysis.ratings.votes import WINRATE, check_options, parse_anchor, rate_votes

    if "anchor" in options:
        options["anchor"] = parse_anchor(options["anchor"])
    check_options(method, bootstrap=bootstrap, level=level, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = _battles(votes, judge=None, with_failures=method == WINRATE)
    read_notes = _summary([str(w.message) for w in caught])
    if frame.empty:
        raise ValueError("no battles to rate")
    wanted = None if judge == "all" else judge
    if wanted == "human" and frame["judge"].isna().all():
        wanted = None  # battles that name no rater (a plain table of battles): rate them all
    elif wanted is not None and options.get("ppi") is None:  # ppi= rates people with that judge
        frame = _one_judge(frame, wanted)
    try:
        rated = rate_votes(frame, method, judge=judge if wanted is not None else None, bootstrap=bootstrap,
                           seed=seed, level=level, **options)
    except ValueError as exc:
        raise ValueError(_api_words(str(exc))) from None
    if read_notes:
        rated = dataclasses.replace(rated, warnings=(*read_notes, *rated.warnings))
    return rated


def _one_judge(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The battles of ``judge`` (``"human"``: every person's); a judge with none is an error listing the judges."""
    mask = (frame["judge_type"] == "human") if judge == "human" else (frame["judge"] == judge)
    mask = mask.fillna(False).to_numpy(dtype=bool)
    if not mask.any():
        judges = sorted(set(frame["judge"].dropna().astype(str)))
        raise ValueError(f"no battles of judge {judge!r}; the votes' judges: {', '.join(judges) or 'none named'} "
                         "(judge='human' for every person, 'all' to pool everyone)")
    return frame[mask].reset_index(drop=True)


def _api_words(message: str) -> str:
    """An error in the API's words: its keyword arguments where the command names its options."""
    for flag, keyword in (("--baseline MODEL", "baseline='MODEL'"), ("--baseline", "baseline="), ("--l2", "l2="),
                          ("--judge", "judge="), ("--bootstrap", "bootstrap="), ("--anchor", "anchor=")):
        message = message.replace(flag, keyword)
    return message.replace(" on the command line", "")


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


@dataclass(frozen=True, repr=False)
class Report:
    """A bias report: ``to_dict()`` is report.json, ``write(folder)`` writes report.html,
    report.md and report.json as ``pairlab report`` does; ``report`` holds the estimates.
    Shown (``repr``, a notebook cell), it is report.md's opening: where the numbers come from and
    what each judge is worth (:meth:`summary`), not the dump of every estimate."""

    report: BiasReport

    def summary(self) -> str:
        """report.md's opening in Markdown: its sources and clusters, the table "In short: what
        each judge is worth" and each judge's block, up to the first section of details."""
        from analysis.report.render import render_markdown

        text = render_markdown(self.report)
        first = text.find("\n## ")
        details = text.find("\n## ", first + 1) if first >= 0 else -1
        return text if details < 0 else text[:details].rstrip() + "\n"

    def __repr__(self) -> str:
        return self.summary()

    def _repr_markdown_(self) -> str:
        return self.summary()

    def to_dict(self) -> dict:
        from analysis.report.serialise import report_json

        return report_json(self.report)

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
