"""Files and folders -> records, the format of each file detected from its first row."""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

from pairlab.records import Record, RecordError

from . import alpaca_eval, arena, arena_hard, battles, own, pandalm
from .issues import ImportIssue
from .rows import SUFFIXES, Row, check_regular, iter_rows

__all__ = ["FORMATS", "describe_formats", "format_names", "iter_sources", "source_records"]

# Row formats in the order they are tried on a file's first row (most specific first).
FORMATS = (own, alpaca_eval, arena_hard, arena, battles)


def describe_formats() -> str:
    """One line per format we read, for --help."""
    return "\n".join(f"  {m.NAME}: {m.SUMMARY}" for m in (*FORMATS, pandalm))


def format_names() -> str:
    """The formats we read, named on one line: errors are one line."""
    return ", ".join(m.NAME for m in (*FORMATS, pandalm))


def iter_sources(path: Path, issues: list[ImportIssue], *,
                 seen: set[tuple[int, int]] | None = None) -> Iterator[Path]:
    """The files (and PandaLM folders) a path stands for, each once, in the order they are read.

    A file is known by its device and inode (``seen`` carries them across calls), a folder's
    entries are listed once with their types: a folder of many files costs one status call a file.
    """
    seen = set() if seen is None else seen
    try:
        info = os.stat(path)
    except OSError:
        raise RecordError(path, None, "no such file or directory") from None
    yield from _sources(path, info, issues, seen)


def _sources(path: Path, info: os.stat_result, issues: list[ImportIssue], seen: set[tuple[int, int]]):
    key = (info.st_dev, info.st_ino)
    if key in seen:
        if path.is_symlink():  # a link: say what it led to
            issues.append(ImportIssue(str(path), "file", f"skipped: {path.resolve()} was read already"))
        return
    seen.add(key)
    if not stat.S_ISDIR(info.st_mode):
        check_regular(path, info)  # before anything opens it: a FIFO would block, a device never end
        yield path
        return
    if (path / pandalm.TESTSET).exists():
        yield path
        return
    with os.scandir(path) as entries:
        entries = sorted(entries, key=lambda e: e.name)
    for entry in entries:
        child = Path(entry.path)
        try:
            child_info = entry.stat()
        except OSError:  # a link to nowhere, or into a loop of links
            issues.append(ImportIssue(str(child), "file", "skipped: a link that leads to no file"))
            continue
        # judges.run writes OUT.manifest.json beside its records: metadata, not votes.
        if stat.S_ISDIR(child_info.st_mode) or (child.suffix in SUFFIXES
                                                and not child.name.endswith(".manifest.json")):
            yield from _sources(child, child_info, issues, seen)


def source_records(path: Path, issues: list[ImportIssue], *, skip_bad: bool = False) -> Iterator[Record]:
    """The records of one source from :func:`iter_sources` (a file, or a PandaLM folder)."""
    if path.is_dir() or path.name == pandalm.TESTSET or path.name in pandalm.JUDGES:
        try:
            recs, iss = pandalm.read_folder(path)
        except (UnicodeDecodeError, RecursionError) as exc:  # a hostile file in the folder
            why = "invalid UTF-8" if isinstance(exc, UnicodeDecodeError) else "JSON nested too deeply to read"
            if not skip_bad:
                raise RecordError(path, None, f"a PandaLM file holds {why}") from None
            issues.append(ImportIssue(str(path), "file", f"skipped: a PandaLM file holds {why}"))
            return
        issues.extend(iss)
        yield from recs
        return
    if path.suffix not in SUFFIXES:
        raise RecordError(path, None, f"unknown file type {path.suffix!r} (expected {', '.join(SUFFIXES)}; "
                          f"formats read: {format_names()})")
    fmt = None
    for row in _rows(path, issues, skip_bad):
        try:
            if row.problem is not None:
                raise row.error(row.problem)
            if not isinstance(row.data, dict):
                raise row.error(f"expected an object, got {type(row.data).__name__}")
            if fmt is None:
                if own.is_pairs_row(row.data):
                    issues.append(ImportIssue(str(path), "file", "skipped: pairs to be judged (no winner), not votes"))
                    return
                fmt = _detect(row)
            elif not fmt.matches(row.data):
                raise row.error(f"not a {fmt.NAME} row like the file's first (fields: {_fields(row.data)})")
            yield from _convert(fmt, row)
        except RecordError as exc:
            if not skip_bad:
                raise
            issues.append(ImportIssue(str(path), row.where, f"skipped: {exc.message}"))


def _rows(path: Path, issues: list[ImportIssue], skip_bad: bool) -> Iterator[Row]:
    """The rows of a file; with ``skip_bad``, a file that cannot be read as a whole (a
    JSON document nested too deeply, bytes that are not UTF-8) is skipped and reported."""
    rows = iter_rows(path)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except RecordError as exc:
            if not skip_bad:
                raise
            where = f"line {exc.line}" if exc.line is not None else "file"
            issues.append(ImportIssue(str(path), where, f"skipped the file: {exc.message}"))
            return
        yield row


def _convert(fmt, row: Row) -> list[Record]:
    try:
        if fmt is battles:  # no texts to name the pair: its place in the file does
            return battles.convert(row.data, f"{row.path.name} {row.where}")
        return fmt.convert(row.data)
    except RecordError as exc:
        raise row.error(exc.message) from None
    except KeyError as exc:
        raise row.error(f"missing field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise row.error(str(exc)) from None
    except RecursionError:
        raise row.error("nested too deeply to read") from None


def _detect(row: Row):
    for fmt in FORMATS:
        if fmt.matches(row.data):
            return fmt
    raise row.error(f"unknown format: a row with the fields {_fields(row.data)} (formats read: {format_names()}; "
                    "--help describes each)")


def _fields(data: dict) -> str:
    names = sorted(map(str, data))
    return ", ".join(names[:12]) + (f" (+{len(names) - 12} more)" if len(names) > 12 else "")
