"""Comparisons as a pandas DataFrame, one row per record, with the filters analyses share.

Columns (always present): ``model_a, model_b, winner, judge, judge_type, pair_id,
response_a, response_b, category, anony, identity_leak``, plus ``family_a, family_b,
judge_family, prompt_id, tstamp, parse_error, strength`` where known (missing values are NA).
``anony`` (was the vote cast on anonymous models?) comes from the record or its ``meta``
and defaults to True; ``identity_leak`` comes from ``meta.identity_leak`` and defaults to
False.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from core.records import Record, is_human, read_records

__all__ = ["COLUMNS", "load_frame", "records_to_frame"]

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
    "tstamp",
    "parse_error",
    "strength",
]
_OPTIONAL_TEXT = ["judge", "judge_type", "pair_id", "response_a", "response_b", "category", "family_a", "family_b",
                  "judge_family", "prompt_id", "parse_error"]


def _flag(record: Record, name: str, default: bool) -> bool:
    for source in (record.extra, record.meta):
        if name in source and source[name] is not None:
            return bool(source[name])
    return default


def records_to_frame(records: Iterable[Record]) -> pd.DataFrame:
    """One row per record with the columns listed in the module docstring."""
    rows = [
        {
            "model_a": r.model_a,
            "model_b": r.model_b,
            "winner": r.winner,
            "judge": r.judge,
            "judge_type": r.judge_type,
            "pair_id": r.pair_id,
            "response_a": r.response_a,
            "response_b": r.response_b,
            "category": r.category,
            "anony": _flag(r, "anony", True),
            "identity_leak": _flag(r, "identity_leak", False),
            "family_a": r.family_a,
            "family_b": r.family_b,
            "judge_family": r.judge_family,
            "prompt_id": r.prompt_id,
            "tstamp": r.tstamp,
            "parse_error": r.parse_error,
            "strength": r.strength,
        }
        for r in records
    ]
    return _complete(pd.DataFrame(rows, columns=COLUMNS))


def _complete(frame: pd.DataFrame) -> pd.DataFrame:
    """Add missing columns with their defaults and fix the flag dtypes."""
    missing = {"model_a", "model_b", "winner"} - set(frame.columns)
    if missing:
        raise ValueError(f"battles need the columns model_a, model_b and winner; missing {sorted(missing)}")
    for name in _OPTIONAL_TEXT:
        if name not in frame.columns:
            frame[name] = pd.Series(pd.NA, index=frame.index, dtype=object)
    frame["tstamp"] = pd.to_numeric(frame["tstamp"], errors="coerce") if "tstamp" in frame.columns else float("nan")
    frame["strength"] = pd.to_numeric(frame["strength"], errors="coerce") if "strength" in frame.columns else float("nan")
    frame["anony"] = frame["anony"].fillna(True).astype(bool) if "anony" in frame.columns else True
    if "identity_leak" in frame.columns:
        frame["identity_leak"] = frame["identity_leak"].fillna(False).astype(bool)
    else:
        frame["identity_leak"] = False
    # A CSV may name judges without saying whether they are people.
    unknown_type = frame["judge_type"].isna() & frame["judge"].notna()
    frame.loc[unknown_type, "judge_type"] = frame.loc[unknown_type, "judge"].map(
        lambda j: "human" if is_human(str(j)) else "llm"
    )
    ordered = COLUMNS + [c for c in frame.columns if c not in COLUMNS]
    return frame[ordered]


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return _complete(pd.read_csv(path))
    if path.suffix == ".parquet":
        return _complete(pd.read_parquet(path))
    if path.suffix == ".jsonl":
        return records_to_frame(read_records(path))
    if path.is_dir() or path.suffix == ".json":
        from analysis.importers import load_records

        return records_to_frame(load_records(path))
    raise ValueError(f"{path}: unknown file type {path.suffix!r}: expected .jsonl, .json, .csv, .parquet or a folder")


def load_frame(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    judge: str | None = None,
    humans_only: bool = False,
    anonymous_only: bool = True,
    exclude_leaks: bool = True,
    categories: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Read battles from files and folders and apply the usual filters.

    CSV and Parquet are read column-wise with pandas (they need ``model_a``, ``model_b``,
    ``winner``); ``.jsonl`` are records; ``.json`` (FastChat battles) and folders (e.g. the
    PandaLM test set) go through :func:`analysis.importers.load_records`.

    Filters: ``judge`` keeps one judge id, or with ``"human"`` every human judge;
    ``humans_only`` keeps human judges; ``anonymous_only`` drops votes cast with model names
    shown; ``exclude_leaks`` drops votes flagged ``identity_leak``; ``categories`` keeps
    those categories. Records whose verdict could not be parsed (``parse_error``) are
    always dropped: their ``winner`` is a placeholder.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = [_read(Path(p)) for p in paths]
    if not frames:
        raise ValueError("no input files given")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    keep = frame["parse_error"].isna()
    if judge == "human":
        keep &= frame["judge_type"] == "human"
    elif judge is not None:
        keep &= frame["judge"] == judge
    if humans_only:
        keep &= frame["judge_type"] == "human"
    if anonymous_only:
        keep &= frame["anony"]
    if exclude_leaks:
        keep &= ~frame["identity_leak"]
    if categories is not None:
        keep &= frame["category"].isin(list(categories))
    return frame[keep.to_numpy()].reset_index(drop=True)
