"""Rows of a JSON, JSONL, CSV or Parquet file, one dict at a time, each with its location.

Readers stream where the format allows: JSONL and CSV line by line, Parquet in record
batches, so a 100 MB file is never held as Python objects all at once. A JSON array has
to be parsed whole (the standard library has no streaming parser); each item is released
as soon as it has been handed out, so the parsed array and the records built from it do
not both stay whole in memory.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from core.records import RecordError

__all__ = ["Row", "SUFFIXES", "iter_rows"]

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
# Parquet rows converted to Python objects at a time: bounded memory, few batch calls.
PARQUET_BATCH = 1024


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
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield Row(path, json.loads(line), line=lineno)
            except json.JSONDecodeError as exc:
                yield Row(path, None, line=lineno, problem=f"invalid JSON: {exc.msg} (column {exc.colno})")


def _json(path: Path) -> Iterator[Row]:
    with open(path, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError:
            data = None
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
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        for row in reader:
            data = {k: v for k, v in row.items() if k is not None and v not in ("", None)}
            yield Row(path, data, line=reader.line_num)


def _parquet(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    index = 0
    # Without pre-buffering, one thread and a read buffer, Arrow decodes a row group page
    # by page instead of holding the whole (decompressed) row group: about half the peak.
    source = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for batch in source.iter_batches(batch_size=PARQUET_BATCH, use_threads=False):
        for data in batch.to_pylist():
            yield Row(path, data, item=index)
            index += 1

