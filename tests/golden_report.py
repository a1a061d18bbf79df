"""The seeded sample of tests/test_report_golden.py and report.json read as leaves."""

from __future__ import annotations

from pathlib import Path

from pairlab.records import write_records
from report_sample import synthetic_records

SAMPLE = {"n_pairs": 1500, "seed": 7, "rich": True}


def write_sample(folder: Path) -> Path:
    path = folder / "sample.jsonl"
    write_records(path, synthetic_records(**SAMPLE))
    return path


def flatten(value, path: str = "") -> dict:
    """``{"judges.human.position.first_rate": 0.47, "judges.human.ratings.bt[0].model": ...}``."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flatten(item, f"{path}.{key}" if path else key))
        return out
    if isinstance(value, list):
        out = {}
        for k, item in enumerate(value):
            out.update(flatten(item, f"{path}[{k}]"))
        return out if value else {path: []}
    return {path: value}
