"""Rows of a JSON, JSONL, CSV or Parquet file, one dict at a time, each with its location.

Readers stream where the format allows: JSONL and CSV line by line, Parquet in record
batches, so a 100 MB file is never held as Python objects all at once. A JSON array has
to be parsed whole (the standard library has no streaming parser); each item is released
as soon as it has been handed out, so the parsed array and the records built from it do
not both stay whole in memory.

Hostile bytes name their place: a line with invalid UTF-8, JSON nested too deeply for the
parser, or a CSV row the csv module refuses (a field over its 128 KiB limit, a NUL byte)
becomes a row with a ``problem`` at its line, so the import names it and ``skip_bad``
can skip it.

Limits, so that no file costs more memory than its records: a line (one JSONL record, one
CSV row) is at most :data:`MAX_LINE` bytes, a whole-file JSON document at most
:data:`MAX_DOCUMENT` bytes (it is parsed at once; JSON Lines has no such limit). A longer one
stops the import with an error naming file and line, after reading no more than the limit.
Only regular files are read (:func:`check_regular`): a device, a FIFO or a socket would
never end or never start.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pairlab.files import MAX_LINE, NOT_UTF8, check_regular, lines  # the one rule for every file a command opens
from pairlab.records import RecordError

__all__ = ["MAX_DOCUMENT", "MAX_LINE", "Row", "SUFFIXES", "check_regular", "iter_rows", "lines"]

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
# A JSON document is parsed whole, at about ten times its size in Python objects.
MAX_DOCUMENT = 512 << 20
# Parquet rows converted to Python objects at a time: bounded memory, few batch calls.
PARQUET_BATCH = 1024
# Text is decoded with surrogateescape, so a bad byte becomes one of these instead of
# ending the file; a row holding one is refused by name.
_UNDECODED = re.compile("[\udc80-\udcff]")
_TOO_DEEP = "JSON nested too deeply to read"


@dataclass(frozen=True)
class Row:
    """One row and where it came from: ``line`` (1-based) for line-based files, else ``item``."""

    path: Path
    data: object
    line: int | None = None
    item: int | None = None
    problem: str | None = None  # why the row could not even be parsed (e.g. invalid JSON)

    def error(self, message: str) -> RecordError:
        if self.line is not None:
            return RecordError(self.path, self.line, message)
        return RecordError(self.path, None, f"item {self.item}: {message}")

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line is not None else f"item {self.item}"


def iter_rows(path: Path) -> Iterator[Row]:
    """Every row of ``path`` (by suffix); a line that is not JSON comes with its ``problem``."""
    check_regular(path)
    if path.suffix == ".jsonl":
        yield from _jsonl(path)
    elif path.suffix == ".json":
        yield from _json(path)
    elif path.suffix == ".csv":
        yield from _csv(path)
    elif path.suffix == ".parquet":
        yield from _parquet(path)
    else:
        raise RecordError(path, None, f"unknown file type {path.suffix!r}: expected {', '.join(SUFFIXES)}")


def _jsonl(path: Path) -> Iterator[Row]:
    with open(path, "rb") as fh:
        for lineno, raw in lines(path, fh):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield Row(path, None, line=lineno, problem=NOT_UTF8)
                continue
            try:
                yield Row(path, json.loads(line), line=lineno)
            except json.JSONDecodeError as exc:
                yield Row(path, None, line=lineno, problem=f"invalid JSON: {exc.msg} (column {exc.colno})")
            except RecursionError:
                yield Row(path, None, line=lineno, problem=_TOO_DEEP)


def _json(path: Path) -> Iterator[Row]:
    too_big = RecordError(path, None, f"a JSON document over {MAX_DOCUMENT >> 20} MiB (the limit on a whole-file "
                          "JSON; JSON Lines, one record a line, has none)")
    if os.stat(path).st_size > MAX_DOCUMENT:  # asked first: a sparse file costs nothing to ask
        raise too_big
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        text = fh.read(MAX_DOCUMENT + 1)
    if len(text) > MAX_DOCUMENT:
        raise too_big
    undecoded = _UNDECODED.search(text)
    if undecoded:  # a whole-file format: the first bad byte names the file's line
        raise RecordError(path, text.count("\n", 0, undecoded.start()) + 1, NOT_UTF8)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    except RecursionError:
        raise RecordError(path, None, _TOO_DEEP) from None
    del text
    if data is None:
        # Hugging Face `to_json` writes JSON Lines under a .json name.
        yield from _jsonl(path)
        return
    if isinstance(data, dict):
        data = data.get("data", data.get("records"))
    if not isinstance(data, list):
        raise RecordError(path, None, "expected a JSON list of rows (or an object with a 'data' list)")
    for index in range(len(data)):
        item, data[index] = data[index], None
        yield Row(path, item, item=index)


def _csv(path: Path) -> Iterator[Row]:
    lineno = 0

    def text(fh) -> Iterator[str]:
        # Our own count: the reader's line_num lags by one when it refuses a line.
        nonlocal lineno
        for lineno, line in lines(path, fh):
            yield line.decode("utf-8", errors="surrogateescape")

    with open(path, "rb") as fh:
        reader = csv.DictReader(text(fh))
        if not reader.fieldnames:  # a table says what its columns are
            raise RecordError(path, None, "empty file (no header, no rows)")
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # e.g. a field over csv.field_size_limit(), a NUL byte
                yield Row(path, None, line=lineno, problem=f"unreadable CSV row: {exc}")
                continue
            data = {k: v for k, v in row.items() if k is not None and v not in ("", None)}
            if any(isinstance(v, str) and _UNDECODED.search(v) for v in (*data, *data.values())):
                yield Row(path, None, line=lineno, problem=NOT_UTF8)
                continue
            yield Row(path, data, line=lineno)


def _parquet(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    index = 0
    # Without pre-buffering, one thread and a read buffer, Arrow decodes a row group page
    # by page instead of holding the whole (decompressed) row group: about half the peak.
    source = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for batch in source.iter_batches(batch_size=PARQUET_BATCH, use_threads=False):
        try:
            rows = batch.to_pylist()
        except UnicodeDecodeError:  # Parquet's text is not checked on writing: find the row
            rows = [_parquet_row(batch.slice(k, 1)) for k in range(batch.num_rows)]
        for data in rows:
            yield Row(path, data, item=index, problem=NOT_UTF8 if data is None else None)
            index += 1


def _parquet_row(row) -> dict | None:
    try:
        return row.to_pylist()[0]
    except UnicodeDecodeError:
        return None

