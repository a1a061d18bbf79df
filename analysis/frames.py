"""Comparisons as a pandas DataFrame, one row per record, with the filters analyses share.

Columns (always present): ``model_a, model_b, winner, judge, judge_type, pair_id,
response_a, response_b, category, anony, identity_leak``, plus ``family_a, family_b,
judge_family, prompt_id, prompt, tstamp, parse_error, prob_a, strength, baseline`` where known
(missing values are NA; ``baseline`` is the model a record names as the baseline it was
judged against, from ``meta.baseline``, e.g. AlpacaEval's ``generator_1``).
``anony`` (was the vote cast on anonymous models?) comes from the record or its ``meta``
and defaults to True; ``identity_leak`` comes from ``meta.identity_leak`` and defaults to
False. :func:`load_frame` reads through the one reader and keeps the votes the one rule counts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence

import pandas as pd

from pairlab import record_table
from pairlab.ratable import ratable_mask
from pairlab.records import Record, is_human

__all__ = ["COLUMNS", "battle_frame", "load_frame", "records_to_frame", "select_battles", "show_warnings",
           "summarise_warnings"]

_SHOWN_WARNINGS = 3

COLUMNS = [
    "model_a",
    "model_b",
    "winner",
    "judge",
    "judge_type",
    "pair_id",
    "response_a",
    "response_b",
    "category",
    "anony",
    "identity_leak",
    "family_a",
    "family_b",
    "judge_family",
    "prompt_id",
    "prompt",
    "tstamp",
    "parse_error",
    "prob_a",
    "strength",
    "baseline",
]
_OPTIONAL_TEXT = ["judge", "judge_type", "pair_id", "response_a", "response_b", "category", "family_a", "family_b",
                  "judge_family", "prompt_id", "prompt", "parse_error", "baseline"]


def records_to_frame(records: Iterable[Record]) -> pd.DataFrame:
    """One row per record with the columns listed in the module docstring."""
    return battle_frame(record_table.from_records(list(records)))


def battle_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The battle frame of a record table (:mod:`pairlab.record_table`), row for row."""
    return _complete(table[[c for c in COLUMNS if c in table.columns]].reset_index(drop=True))


def _missing_text(n: int, index: pd.Index) -> pd.Series:
    import pyarrow as pa

    return pd.Series(pd.arrays.ArrowExtensionArray(pa.nulls(n, pa.string())), index=index)


def _complete(frame: pd.DataFrame) -> pd.DataFrame:
    """Add missing columns with their defaults and fix the flag dtypes."""
    missing = {"model_a", "model_b", "winner"} - set(frame.columns)
    if missing:
        raise ValueError(f"battles need the columns model_a, model_b and winner; missing {sorted(missing)}")
    for name in ("model_a", "model_b"):
        if frame[name].dtype == object:  # a caller's own frame: the readers give text columns
            text = frame[name].map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
            if not text.all():
                row = int(text.argmin())
                raise ValueError(f"row {row}: {name} must be a model name (text), got {frame[name].iloc[row]!r}")
    for name in _OPTIONAL_TEXT:
        if name not in frame.columns:
            # An all-missing Arrow column is a validity bitmap: free, where an object column
            # of a million NAs costs a noticeable share of a rating run's time.
            frame[name] = _missing_text(len(frame), frame.index)
    for name in ("tstamp", "prob_a", "strength"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce") if name in frame.columns else float("nan")
    frame["anony"] = frame["anony"].fillna(True).astype(bool) if "anony" in frame.columns else True
    if "identity_leak" in frame.columns:
        frame["identity_leak"] = frame["identity_leak"].fillna(False).astype(bool)
    else:
        frame["identity_leak"] = False
    # A CSV may name judges without saying whether they are people.
    unknown_type = frame["judge_type"].isna() & frame["judge"].notna()
    if unknown_type.any():  # even an empty masked write costs a tenth of a second on a million rows
        frame.loc[unknown_type, "judge_type"] = frame.loc[unknown_type, "judge"].map(
            lambda j: "human" if is_human(str(j)) else "llm"
        )
    ordered = COLUMNS + [c for c in frame.columns if c not in COLUMNS]
    return frame[ordered]


def load_frame(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    judge: str | None = None,
    humans_only: bool = False,
    anonymous_only: bool = True,
    exclude_leaks: bool = True,
    exclude_flagged: bool = True,
    categories: Iterable[str] | None = None,
    skip_bad: bool = False,
    with_failures: bool = False,
    include_prompt_set: bool = False,
    prompt_set_rated: bool = False,
) -> pd.DataFrame:
    """Read battles from files and folders (:func:`analysis.importers.read_table`, the one
    reader) and keep the votes ratings count.

    Which votes count is the leaderboard's rule (:func:`pairlab.ratable.ratable_mask`):
    ``anonymous_only`` drops votes cast with model names shown, ``exclude_leaks`` votes
    flagged ``identity_leak``, ``exclude_flagged`` votes vote hygiene set aside, and the
    arena's prompt-set votes that its leaderboard leaves out are dropped unless
    ``include_prompt_set`` (``prompt_set_rated`` as the arena's setting of that name).
    Bad rows are skipped and warned about with ``skip_bad``, else they raise.

    Filters: ``judge`` keeps one judge id, or with ``"human"`` every human judge;
    ``humans_only`` keeps human judges; ``categories`` keeps those categories. Records
    without a verdict (``parse_error``; ``winner`` null) are dropped: they count as parse
    failures, never as battles. ``with_failures`` keeps them (with the other filters
    applied) for a caller that reports how many there were.
    """
    import warnings

    from analysis.importers import read_table

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("no input files given")
    table, issues = read_table(paths, skip_bad=skip_bad)
    for issue in issues:
        warnings.warn(str(issue), stacklevel=2)
    return select_battles(table, judge=judge, humans_only=humans_only, anonymous_only=anonymous_only,
                          exclude_leaks=exclude_leaks, exclude_flagged=exclude_flagged, categories=categories,
                          with_failures=with_failures, include_prompt_set=include_prompt_set,
                          prompt_set_rated=prompt_set_rated)


def select_battles(
    table: pd.DataFrame,
    *,
    judge: str | None = None,
    humans_only: bool = False,
    anonymous_only: bool = True,
    exclude_leaks: bool = True,
    exclude_flagged: bool = True,
    categories: Iterable[str] | None = None,
    with_failures: bool = False,
    include_prompt_set: bool = False,
    prompt_set_rated: bool = False,
) -> pd.DataFrame:
    """The battle frame of a record table already read (:func:`analysis.importers.read_table`),
    with :func:`load_frame`'s rule and filters (the same options)."""
    counted = ratable_mask(table, prompt_set_rated=prompt_set_rated, include_named=not anonymous_only,
                           include_leaks=not exclude_leaks, include_flagged=not exclude_flagged,
                           include_prompt_set=include_prompt_set)
    frame = battle_frame(table)
    keep = counted if with_failures else counted & frame["parse_error"].isna().to_numpy(dtype=bool)
    # A caller's own DataFrame holds object columns with None: every mask is made plain bool.
    person = (frame["judge_type"] == "human").fillna(False).to_numpy(dtype=bool)
    if judge == "human" or humans_only:
        keep &= person
    if judge not in (None, "human"):
        keep &= (frame["judge"] == judge).fillna(False).to_numpy(dtype=bool)
    if categories is not None:
        keep &= frame["category"].isin(list(categories)).fillna(False).to_numpy(dtype=bool)
    if keep.all():  # nothing filtered: spare a copy of every column
        return frame
    return frame[keep].reset_index(drop=True)


def summarise_warnings(messages: Sequence[str]) -> list[str]:
    """The first few of the reader's warnings and how many more: what a command prints and a
    notebook is warned, one line each."""
    shown = [str(m) for m in messages[:_SHOWN_WARNINGS]]
    if len(messages) > _SHOWN_WARNINGS:
        shown.append(f"... and {len(messages) - _SHOWN_WARNINGS} more import warnings")
    return shown


def show_warnings(caught: list) -> None:
    """On stderr, the first few warnings :func:`load_frame` raised while reading, and how many more."""
    for line in summarise_warnings([str(w.message) for w in caught]):
        print(f"warning: {line}", file=sys.stderr)
