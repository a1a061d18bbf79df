"""The row-by-row reader as records: the slow, obviously correct twin of the one reader
(:func:`analysis.importers.read_table`), which the importer tests read files with and compare
the columnar tables against. Each file goes through its importer one row at a time
(:func:`analysis.importers.load.source_records`), as the one reader does whatever it cannot
take column-wise."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from analysis.importers.issues import ImportIssue
from analysis.importers.load import iter_sources, source_records
from pairlab.records import Record


@dataclass(frozen=True)
class ImportResult:
    records: tuple[Record, ...]
    issues: tuple[ImportIssue, ...]


def import_paths(paths: Iterable[str | os.PathLike], *, skip_bad: bool = False) -> ImportResult:
    """Records from several files and folders, with every skipped item reported (a bad row
    raises naming file and line unless ``skip_bad``)."""
    records: list[Record] = []
    issues: list[ImportIssue] = []
    seen: set[tuple[int, int]] = set()
    for path in paths:
        for source in iter_sources(Path(path), issues, seen=seen):
            records.extend(source_records(source, issues, skip_bad=skip_bad))
    return ImportResult(tuple(records), tuple(issues))


def load_records(path: str | os.PathLike, *, skip_bad: bool = False) -> list[Record]:
    """All records in a file or folder; skipped items are warned about."""
    result = import_paths([path], skip_bad=skip_bad)
    for issue in result.issues:
        warnings.warn(str(issue), stacklevel=2)
    return list(result.records)
