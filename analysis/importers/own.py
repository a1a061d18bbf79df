"""The project's own records (JSONL, or a CSV/Parquet table with the record columns)."""

from __future__ import annotations

from pairlab.records import Record

NAME = "records"
SUMMARY = ("pairlab records: JSONL, or CSV/Parquet with the columns pair_id, prompt, model_a, model_b, "
           "response_a, response_b, winner, judge")
# CSV cells are text; these fields are numbers in a record.
_NUMERIC = {"turn": int, "tstamp": float, "prob_a": float, "strength": int}


def matches(row: dict) -> bool:
    return "pair_id" in row and "response_a" in row and ("winner" in row or "parse_error" in row)


def is_pairs_row(row: dict) -> bool:
    """A PAIRS.jsonl row (judges' input): responses but no verdict and no failure."""
    return "pair_id" in row and "response_a" in row and "winner" not in row and "parse_error" not in row


def convert(row: dict) -> list[Record]:
    for name, kind in _NUMERIC.items():
        if isinstance(row.get(name), str):
            row[name] = kind(row[name])
    return [Record.from_dict(row)]
