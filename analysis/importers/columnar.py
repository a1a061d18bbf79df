"""The one reader: files and folders -> one record table (:mod:`pairlab.record_table`).

Every command and the Python API read input here, so a file reads the same everywhere or
nowhere. The format of each file is detected from its first row (:mod:`.load`); the fast
ways in are only shortcuts to the same table:

* the project's own records (JSONL or Parquet) are parsed by Arrow straight into columns, in
  C++ and on every core: no Python object per row or field. Small files are parsed together,
  a block of them at a time, so a folder of many tiny files costs what one file of their
  records would;
* a CSV or Parquet table of battles without texts (``model_a, model_b, winner``;
  :mod:`.battles`) is read as columns too.

Whatever Arrow cannot take as it stands (a field whose type changes between lines, a line that
is not JSON, bytes that are not UTF-8) or whose columns break a record rule is read again row
by row (:func:`analysis.importers.load.source_records`), which names the file and line of the
first bad row, or skips and reports bad rows with ``skip_bad``. Every other format goes
through its importer; records are turned into columns a block at a time, never a table per
file. The limits of :mod:`.rows` hold on every way in (only regular files; a line at most
:data:`~.rows.MAX_LINE` bytes).
"""

from __future__ import annotations

import csv
import json
import mmap
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa

from pairlab import record_table
from pairlab.records import HUMAN, RecordError

from . import battles, own
from .issues import ImportIssue
from .load import iter_sources, source_records
from .rows import MAX_LINE, lines

__all__ = ["read_table"]

# Arrow's JSON block. The schema is given, so nothing is inferred from the first block; a block
# that stays in the CPU's cache parses faster than a larger one.
_BLOCK = 16 << 20
# Record files up to this size are parsed together, a block of them at a time.
_SMALL = 1 << 20
# Records built by the importers, turned into columns this many at a time.
_RECORDS = 50_000
_BATTLE_TYPES = {"anony": pa.bool_(), "identity_leak": pa.bool_(), "tstamp": pa.float64(), "prob_a": pa.float64(),
                 "strength": pa.int64()}


def read_table(paths: Iterable[str | os.PathLike], *, skip_bad: bool = False,
               progress: Callable | None = None) -> tuple[pd.DataFrame, tuple[ImportIssue, ...]]:
    """The records of every file and folder as one table, and what was skipped.

    ``progress(total_bytes)`` returns a bar with ``update(n)`` (tqdm's), told the bytes of
    each file as it is read. A bad row raises :class:`pairlab.records.RecordError` naming
    file and line; with ``skip_bad`` it is skipped and reported as an :class:`ImportIssue`.
    """
    issues: list[ImportIssue] = []
    seen: set[tuple[int, int]] = set()
    sources = [s for p in paths for s in iter_sources(Path(p), issues, seen=seen)]
    # None for a PandaLM folder (read by its importer)
    sizes = [None if s.is_dir() else s.stat().st_size for s in sources]
    bar = progress(sum(n or 0 for n in sizes)) if progress else None
    reader = _Reader(issues, skip_bad)
    for source, size in zip(sources, sizes):
        reader.read(source, size)
        if bar is not None:
            bar.update(size or 0)
    tables = reader.finish()
    if bar is not None:
        bar.close()
    tables = [t for t in tables if len(t)]
    if not tables:
        return record_table.from_records([]), tuple(issues)
    if len(tables) == 1:
        return tables[0], tuple(issues)
    table = pd.concat(tables, ignore_index=True)
    # Each block's responses were coded on its own texts: one set of texts for all.
    table["response_a"], table["response_b"] = record_table.shared_texts(table["response_a"], table["response_b"])
    return table, tuple(issues)


def table_of_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A DataFrame as the record table the commands read from a file: a table of records as it
    is (:func:`read_table`'s, or any with every record table column), or the record fields
    (``pair_id, prompt, model_a, model_b, response_a, response_b, winner, judge``) or a table of
    battles (``model_a, model_b, winner`` [+ ``judge``, ``pair_id``, ``prompt``]) read as a
    file with those columns is, checked by the same rules. Anything else is a ``ValueError``
    saying which columns it needs."""
    if set(record_table.COLUMNS) <= set(frame.columns):
        return frame
    names = set(frame.columns)
    if _own_columns(names):
        fields = [n for n in record_table.ARROW_SCHEMA.names if n in names and n != "meta"]

        def convert(rows: pd.DataFrame) -> pd.DataFrame:
            return record_table.from_arrow(pa.Table.from_pandas(rows[fields], preserve_index=False))
    elif battles.matches(dict.fromkeys(names)):
        def convert(rows: pd.DataFrame) -> pd.DataFrame:
            columns = [n for n in rows.columns if isinstance(n, str)]
            return _battle_table(Path("the table"), pa.Table.from_pandas(rows[columns], preserve_index=False))
    else:
        convert = None
    if convert is not None:
        try:
            return convert(frame)
        except (pa.ArrowException, RecordError) as exc:
            # Any part of the table holding a bad row fails: halving finds the first one to name.
            lo, hi = 0, len(frame)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                try:
                    convert(frame.iloc[lo:mid])
                    lo = mid
                except (pa.ArrowException, RecordError):
                    hi = mid
            raise ValueError(f"row {lo + 1} of the table: {str(exc).strip()}") from None
    raise ValueError("a table of votes needs the columns model_a, model_b and winner (a table of battles), or the "
                     f"record fields ({', '.join(n for n in record_table.ARROW_SCHEMA.names if n != 'meta')}); "
                     f"this one has {', '.join(map(str, frame.columns)) or 'none'}")


class _Reader:
    """Tables in the order of the sources: small record files gathered into blocks, the
    importers' records gathered into blocks, each block flushed before anything after it."""

    def __init__(self, issues: list[ImportIssue], skip_bad: bool):
        self.issues, self.skip_bad = issues, skip_bad
        self.tables: list[pd.DataFrame] = []
        self.small: list[tuple[Path, bytes]] = []
        self.small_bytes = 0
        self.records: list = []

    def read(self, source: Path, size: int | None) -> None:
        if source.suffix == ".jsonl" and size is not None and size <= _SMALL:
            data = _small_records(source, size)
            if data is not None:
                self._flush_records()
                self.small.append((source, data))
                self.small_bytes += len(data)
                if self.small_bytes >= _BLOCK:
                    self._flush_small()
                return
        table = _fast(source)
        if table is not None:
            self._flush_small()
            self._flush_records()
            self.tables.append(table)
            return
        self._flush_small()
        self._rows(source)

    def finish(self) -> list[pd.DataFrame]:
        self._flush_small()
        self._flush_records()
        return self.tables

    def _rows(self, source: Path) -> None:
        for record in source_records(source, self.issues, skip_bad=self.skip_bad):
            self.records.append(record)
            if len(self.records) >= _RECORDS:
                self._flush_records()

    def _flush_records(self) -> None:
        if self.records:
            self.tables.append(record_table.from_records(self.records))
            self.records = []

    def _flush_small(self) -> None:
        if not self.small:
            return
        files, self.small, self.small_bytes = self.small, [], 0
        table = _parse_records(pa.py_buffer(b"".join(data for _, data in files)))
        if table is not None:
            self.tables.append(table)
            return
        for path, _ in files:  # one of them is bad: each on its own, to name it
            table = _fast(path)
            if table is not None:
                self.tables.append(table)
            else:
                self._rows(path)
        self._flush_records()


def _small_records(path: Path, size: int) -> bytes | None:
    """A small file's bytes (ending in a newline) if it holds our records in UTF-8, else None."""
    with open(path, "rb") as fh:
        data = fh.read(size + 1)
    if len(data) > size or not _own_first_line(data.splitlines()):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data if data.endswith(b"\n") else data + b"\n"


def _parse_records(source) -> pd.DataFrame | None:
    """Records JSONL (a path or a buffer) as the table, or None where Arrow cannot take it."""
    import pyarrow.json as pj

    try:
        table = pj.read_json(source, read_options=pj.ReadOptions(block_size=_BLOCK), parse_options=pj.ParseOptions(
            explicit_schema=record_table.ARROW_SCHEMA, unexpected_field_behavior="ignore"))
        return record_table.from_arrow(table)
    except (pa.ArrowException, RecordError, OSError, ValueError, TypeError):
        return None  # the row-by-row reader says what is wrong, and where


def _fast(path: Path) -> pd.DataFrame | None:
    """The file's table read column-wise, or None where it must be read row by row (a PandaLM
    folder, by its importer)."""
    if path.suffix not in (".jsonl", ".parquet", ".csv") or path.is_dir():
        return None
    if path.suffix == ".jsonl":
        if not _own_first_line(_first_lines(path)) or not _utf8(path):
            return None
        return _parse_records(path)
    try:
        if path.suffix == ".csv":
            return _battle_csv(path)
        import pyarrow.parquet as pq

        names = set(pq.read_schema(path).names)
        if _own_columns(names) and "winner" in names:
            table = pq.read_table(path, columns=[n for n in record_table.ARROW_SCHEMA.names if n in names])
            return record_table.from_arrow(table) if _own_columns(set(table.column_names)) else None
        if battles.matches(dict.fromkeys(names)):
            return _battle_table(path, pq.read_table(path))
        return None
    except (pa.ArrowException, RecordError, OSError, ValueError, TypeError):
        return None


def _battle_csv(path: Path) -> pd.DataFrame | None:
    import pyarrow.csv as pacsv

    header = _first_lines(path, 1)
    if not header:
        return None
    names = next(csv.reader([header[0].decode("utf-8", errors="replace")]), [])
    if not battles.matches(dict.fromkeys(names)) or not _utf8(path):
        return None
    types = {name: _BATTLE_TYPES.get(name, pa.string()) for name in names}
    table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=_BLOCK),
                           convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=True))
    return _battle_table(path, table)


def _battle_table(path: Path, table: pa.Table) -> pd.DataFrame:
    """A table of battles without texts as the record table, filled in as :mod:`.battles` fills a row."""
    import pyarrow.compute as pc

    import numpy as np

    n = table.num_rows
    names = set(table.column_names)
    # Large strings throughout: pandas' text columns hold them, so none is copied again to convert.
    text = pa.large_string()
    empty = pa.repeat(pa.scalar("", text), n)
    columns = {name: table[name] for name in record_table.ARROW_SCHEMA.names if name in names}
    for name in ("model_a", "model_b", "winner"):
        columns[name] = pc.cast(table[name], text)
    if "pair_id" in names:
        columns["pair_id"] = pc.cast(table["pair_id"], text)
    if "pair_id" not in names or columns["pair_id"].null_count:
        rows = pc.cast(pa.array(np.arange(1, n + 1)), text)
        place = pc.binary_join_element_wise(pa.repeat(pa.scalar(f"{path.name} row", text), n), rows,
                                            pa.scalar(" ", text))
        columns["pair_id"] = pc.coalesce(columns["pair_id"], place) if "pair_id" in names else place
    judge = pc.fill_null(pc.cast(table["judge"], text), HUMAN) if "judge" in names else \
        pa.repeat(pa.scalar(HUMAN, text), n)
    if "anony" in names:  # FastChat's votes name voters by id: people (as .battles reads a row)
        human = pc.starts_with(judge, HUMAN)
        judge = pc.if_else(human, judge, pc.binary_join_element_wise(pa.scalar(HUMAN, text), judge,
                                                                      pa.scalar(":", text)))
    prompt = pc.fill_null(pc.cast(table["prompt"], text), "") if "prompt" in names else empty
    columns.update(judge=judge, prompt=prompt, response_a=empty, response_b=empty)
    return record_table.from_arrow(pa.table(columns))


def _own_columns(names: set[str]) -> bool:
    return own.matches(dict.fromkeys(names))


def _first_lines(path: Path, n: int = 1) -> list[bytes]:
    """The file's first ``n`` non-blank lines (each bounded by :data:`MAX_LINE`; a longer one
    is left for the row reader to name)."""
    out: list[bytes] = []
    with open(path, "rb") as fh:
        try:
            for _, line in lines(path, fh):
                if line.strip():
                    out.append(line)
                    if len(out) == n:
                        break
        except RecordError:
            return []
    return out


def _own_first_line(first: list[bytes]) -> bool:
    """Whether the first non-blank line is one of our records (not pairs to judge)."""
    line = next((l for l in first if l.strip()), None)
    if line is None or len(line) > MAX_LINE:
        return False
    try:
        row = json.loads(line)
    except ValueError:
        return False
    return isinstance(row, dict) and own.matches(row) and not own.is_pairs_row(row)


def _utf8(path: Path) -> bool:
    """Whether every byte of the file decodes: Arrow keeps bytes that do not in the fields it
    reads and never looks at the others, where the row reader refuses them. Checked by Arrow's
    own validation over the mapped file (a tenth of the time Python's decoder takes), a block of
    whole lines at a time, each block's pages given back before the next: memory stays at a
    block whatever the file. A line longer than :data:`MAX_LINE` is left to the row reader."""
    import numpy as np

    size = path.stat().st_size
    if size == 0:
        return True
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        start = 0
        while start < size:
            end = size if size - start <= _BLOCK else mapped.rfind(b"\n", start, start + _BLOCK) + 1
            if end == 0:  # no line ends within a block: a long line, or none at all
                end = mapped.find(b"\n", start, start + MAX_LINE + 1) + 1
                if end == 0 and size - start > MAX_LINE:
                    return False
                end = end or size
            with memoryview(mapped)[start:end] as view:  # a newline never falls inside a character
                text = pa.LargeStringArray.from_buffers(
                    1, pa.py_buffer(np.array([0, end - start], dtype=np.int64)), pa.py_buffer(view))
                try:
                    text.validate(full=True)
                except pa.ArrowInvalid:
                    return False
                finally:
                    del text
            mapped.madvise(mmap.MADV_DONTNEED, start - start % mmap.PAGESIZE, end - start + start % mmap.PAGESIZE)
            start = end
    return True
