"""Files and folders -> one record table (:mod:`analysis.record_table`), read column-wise.

The project's own records (JSONL or Parquet) are parsed by Arrow straight into columns,
in C++ and on every core: no Python object per row or field. Whatever Arrow cannot take
as it stands (a field whose type changes between lines, a line that is not JSON, invalid
UTF-8) or whose columns break a record rule is read again row by row
(:func:`analysis.importers.load.source_records`), which names the file and line of the
first bad row, or skips and reports bad rows with ``skip_bad``. Every other format goes
through its importer and the records it builds are turned into columns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa

from analysis import record_table
from analysis.importers import own
from analysis.importers.issues import ImportIssue
from analysis.importers.load import iter_sources, source_records
from pairlab.records import RecordError

__all__ = ["read_table"]

# Arrow's JSON block. The schema is given, so nothing is inferred from the first block; a block
# that stays in the CPU's cache parses faster than a larger one (a longer line is still read whole).
_BLOCK = 16 << 20


def read_table(paths: Iterable[str | os.PathLike], *, skip_bad: bool = False,
               progress: Callable | None = None) -> tuple[pd.DataFrame, tuple[ImportIssue, ...]]:
    """The records of every file and folder as one table, and what was skipped.

    ``progress(total_bytes)`` returns a bar with ``update(n)`` (tqdm's), told the bytes of
    each file as it is read. Errors as :func:`analysis.importers.import_paths`.
    """
    issues: list[ImportIssue] = []
    seen: set[Path] = set()
    sources = [s for p in paths for s in iter_sources(Path(p), issues, seen=seen)]
    sizes = [s.stat().st_size if s.is_file() else 0 for s in sources]
    bar = progress(sum(sizes)) if progress else None
    tables = []
    for source, size in zip(sources, sizes):
        table = _fast(source)
        if table is None:
            table = record_table.from_records(list(source_records(source, issues, skip_bad=skip_bad)))
        tables.append(table)
        if bar is not None:
            bar.update(size)
    if bar is not None:
        bar.close()
    tables = [t for t in tables if len(t)]
    if not tables:
        return record_table.from_records([]), tuple(issues)
    if len(tables) == 1:
        return tables[0], tuple(issues)
    table = pd.concat(tables, ignore_index=True)
    # Each file's responses were coded on its own texts: one set of texts for all.
    table["response_a"], table["response_b"] = record_table.shared_texts(table["response_a"], table["response_b"])
    return table, tuple(issues)


def _fast(path: Path) -> pd.DataFrame | None:
    """The file's table read column-wise, or None where it must be read row by row."""
    if path.suffix not in (".jsonl", ".parquet") or not path.is_file():
        return None
    try:
        if path.suffix == ".jsonl":
            if not _own_first_line(path):
                return None
            import pyarrow.json as pj

            table = pj.read_json(path, read_options=pj.ReadOptions(block_size=_BLOCK), parse_options=pj.ParseOptions(
                explicit_schema=record_table.ARROW_SCHEMA, unexpected_field_behavior="ignore"))
        else:
            import pyarrow.parquet as pq

            names = set(pq.read_schema(path).names)
            if not _own_columns(names):
                return None
            table = pq.read_table(path, columns=[n for n in record_table.ARROW_SCHEMA.names if n in names])
        if path.suffix == ".parquet" and (not _own_columns(set(table.column_names)) or "winner" not in table.column_names):
            return None
        return record_table.from_arrow(table)
    except (pa.ArrowException, RecordError, OSError, ValueError, TypeError):
        return None  # the row-by-row reader says what is wrong, and where


def _own_columns(names: set[str]) -> bool:
    return own.matches(dict.fromkeys(names))


def _own_first_line(path: Path) -> bool:
    """Whether the file's first non-blank line is one of our records (not pairs to judge)."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError:
                    return False
                return isinstance(row, dict) and own.matches(row) and not own.is_pairs_row(row)
    return False
