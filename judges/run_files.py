"""The files one judging run appends to, and what a rerun finds already done in them.

``OUT.jsonl`` gets one record per judged (pair, order); ``OUT.failures.jsonl`` gets the
(pair, order)s whose judge output held no verdict even after retries, as records without
a verdict (``winner`` null, with the raw text and the parse error): the importers read
them as the judge's parse failures, and deleting the file has a rerun try them again.
Both are append-only, one flushed line per item, so a run killed at any point loses at
most the line being written; that torn last line is cut off on the next start. Only one
writer (the run's main thread) appends, however many judgments are in flight. An OUT this
run created and never wrote to (the judge failed to load, the run was stopped at once)
is removed on the way out, so no empty file pretends to be a result.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from pairlab.files import open_append
from pairlab.records import Record, RecordError, append_jsonl, iter_jsonl

__all__ = ["OutputLocked", "RunFiles", "TaskKey", "failures_path", "task_key"]

SYNC_EVERY_S = 1.0
TaskKey = tuple[str, str, str, str, str]  # pair_id, order, judge, template sha256, mode


class OutputLocked(RuntimeError):
    """Another process holds the output file."""


def task_key(pair_id: str, order: str, judge: str, template_sha256: str, mode: str) -> TaskKey:
    return (pair_id, order, judge, template_sha256, mode)


def _key_of(data: dict) -> tuple[TaskKey, str | None] | None:
    """(task key, winner) of a line written by a judge run; None for any other line."""
    if not isinstance(data, dict):
        raise RecordError(None, None, f"expected a JSON object, got {type(data).__name__}")
    meta = data.get("meta")
    if not isinstance(meta, dict) or not {"order", "template_sha256", "mode"} <= meta.keys():
        return None  # not written by a judge run (e.g. human votes kept in the same file)
    key = task_key(data.get("pair_id"), meta["order"], data.get("judge"), meta["template_sha256"], meta["mode"])
    return key, data.get("winner")


def repair_tail(path: Path) -> int:
    """Cut a torn last line (no trailing newline: the writer was killed mid-line); bytes removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # Walk back to the last newline; files are appended in whole lines, so only the tail can be torn.
        pos, block = size, 1 << 16
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            pos = start
        else:
            keep = 0
        fh.truncate(keep)
        os.fsync(fh.fileno())
        return size - keep


class RunFiles:
    """Append handles on OUT and its failures file, held under an exclusive lock.

    Use as a context manager. On entry: lock, repair torn tails, collect the keys
    already present (a complete line that is not JSON is an error naming file and line:
    it was not written by us, and guessing could lose work).
    """

    def __init__(self, out: str | os.PathLike, log=None):
        self.out = Path(out)
        self.failures = failures_path(self.out)
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.done: dict[TaskKey, str] = {}  # key -> winner
        self.failed: dict[TaskKey, None] = {}
        self.written: list[TaskKey] = []  # what this run appended, records and failures
        self._handles: dict[str, object] = {}
        self._created = False
        self._synced = 0.0
        self._dirty: set[str] = set()

    def __enter__(self) -> RunFiles:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._created = not self.out.exists()
        if os.path.islink(self.failures):  # checked before its torn tail is cut
            open_append(self.failures).close()
        out_fh = open_append(self.out)
        try:
            fcntl.flock(out_fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            out_fh.close()
            raise OutputLocked(f"{self.out} is being written by another judges.run; wait for it or pick another --out")
        self._handles["out"] = out_fh
        try:
            for path, keys in ((self.out, self.done), (self.failures, self.failed)):
                removed = repair_tail(path)
                if removed:
                    self.log(f"{path}: removed an incomplete last line ({removed} bytes) left by an interrupted run")
                if path.exists():
                    keys.update(item for item in iter_jsonl(path, _key_of) if item is not None)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        out_fh = self._handles.get("out")
        if self._created and out_fh is not None and out_fh.tell() == 0:
            try:  # still under our lock: nobody else can have opened it for writing
                self.out.unlink()
            except FileNotFoundError:
                pass
        for name, fh in self._handles.items():
            if name in self._dirty:
                os.fsync(fh.fileno())
            fh.close()
        self._dirty.clear()
        self._handles.clear()

    def _handle(self, name: str, path: Path):
        if name not in self._handles:
            self._handles[name] = open_append(path)
        return self._handles[name]

    def _append(self, name: str, path: Path, record: Record) -> None:
        # Flushed per line (a killed process loses nothing written); forced to disk at most
        # every SYNC_EVERY_S and on close, as one fsync per line would cap a server run's pace.
        fh = self._handle(name, path)
        now = time.monotonic()
        sync = now - self._synced >= SYNC_EVERY_S
        append_jsonl(fh, record, sync=sync)
        if sync:
            self._synced = now
        else:
            self._dirty.add(name)

    def write_record(self, key: TaskKey, record: Record) -> None:
        self._append("out", self.out, record)
        self.done[key] = record.winner
        self.written.append(key)

    def write_failure(self, key: TaskKey, record: Record) -> None:
        self._append("failures", self.failures, record)
        self.failed[key] = None
        self.written.append(key)

    def seen(self, key: TaskKey) -> bool:
        return key in self.done or key in self.failed


def failures_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".failures.jsonl")
