"""One rule for every file a command reads and every file it writes.

Reading: only regular files are read (:func:`check_regular`): a FIFO would never start, a
device such as ``/dev/zero`` never end. A line is at most :data:`MAX_LINE` bytes and a file
read whole at most its limit (:data:`MAX_SMALL` for a config, a manifest, a template), asked of
the file's size before reading (a sparse file costs nothing to ask) and held to while reading.
Text that is not UTF-8 is refused naming the file and the line. Every refusal is a
:class:`RecordError`, a ``ValueError`` whose text is one line.

Writing (:func:`replace_file`): an output is written to a temporary file beside it and moved
into place, so a reader or a kill never sees half a file, and a symlink planted at the
output's name is replaced, never followed into its target. The file gets the mode any tool's
new file gets (``0o666`` less the umask), not the temporary file's owner-only mode. A file
that is appended to (a resumable run's records, :func:`open_append`) cannot be replaced: a
symlink or anything but a regular file at its name is refused.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


__all__ = ["MAX_LINE", "MAX_SMALL", "NOT_UTF8", "RecordError", "check_out_dir", "check_out_file", "check_regular", "lines", "open_append",
           "read_text", "replace_file", "text_lines", "write_text", "write_texts"]

# One record's line: far above any real vote or judgment (a 50 MB line was seen only in an attack).
MAX_LINE = 64 << 20
# A file read whole that people write or a run records (a config, a manifest, a template).
MAX_SMALL = 16 << 20
NOT_UTF8 = "invalid UTF-8 (bytes that do not decode)"
_WRITTEN = "an output is written to a regular file"


class RecordError(ValueError):
    """A line that is not a valid record, located by file and 1-based line number."""

    def __init__(self, path: str | os.PathLike | None, line: int | None, message: str):
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        where = "" if self.path is None else f"{self.path}: " if line is None else f"{self.path}:{line}: "
        super().__init__(f"{where}{message}")


def check_regular(path: str | os.PathLike, info: os.stat_result | None = None,
                  why: str = "only files and folders are read") -> os.stat_result:
    """``path``'s status (links followed; ``info`` where known) if it is a regular file, else a
    :class:`RecordError` ending in ``why``."""
    if info is None:
        try:
            info = os.stat(path)
        except OSError as exc:
            raise RecordError(path, None, exc.strerror or "cannot be read") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode)
                or stat.S_ISBLK(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a folder" if stat.S_ISDIR(info.st_mode) else "not a file")
        raise RecordError(path, None, f"{kind}, not a regular file: {why}")
    return info


def lines(path: str | os.PathLike, fh) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of a file opened in binary, each line at most :data:`MAX_LINE`
    bytes: a longer one raises before more than that is read."""
    lineno = 0
    while True:
        line = fh.readline(MAX_LINE + 1)
        if not line:
            return
        lineno += 1
        if len(line) > MAX_LINE and not (len(line) == MAX_LINE + 1 and line.endswith(b"\n")):
            raise RecordError(path, lineno, f"a line longer than {MAX_LINE >> 20} MiB (the limit on one record)")
        yield lineno, line


def text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file read line by line under the rule above."""
    check_regular(path)
    with open(path, "rb") as fh:
        for lineno, raw in lines(path, fh):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise RecordError(path, lineno, NOT_UTF8) from None


def read_text(path: str | os.PathLike, limit: int = MAX_SMALL) -> str:
    """A UTF-8 text file read whole, at most ``limit`` bytes."""
    size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB" if limit >= 1 << 10 else f"{limit} bytes"

    def too_big(n: int, more: str = "") -> RecordError:
        return RecordError(path, None, f"{n:,} bytes{more}: a file of this kind holds at most {size}")

    found = check_regular(path).st_size
    if found > limit:
        raise too_big(found)
    with open(path, "rb") as fh:
        raw = fh.read(limit + 1)
    if len(raw) > limit:  # it grew since it was asked
        raise too_big(len(raw), " or more")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(path, raw.count(b"\n", 0, exc.start) + 1, NOT_UTF8) from None


def check_out_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """The output folder ``path``, created if missing, checked before any work is done: a
    ``ValueError`` (one line) when it cannot be made or written in."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {path} is a file; {flag} names a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot create the folder ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: the folder cannot be written in")
    return path


def check_out_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """The output file ``path`` checked before any work is done: its folder is created if
    missing and must be writable, and ``path`` must not be a folder."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a folder; name the file to write")
    check_out_dir(path.parent, f"{flag} {path}: folder")
    return path


def open_append(path: str | os.PathLike):
    """``path`` opened to append text (created with the umask's mode if missing); a symlink
    or anything but a regular file there is a :class:`RecordError`, never written through."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise RecordError(path, None, "a symlink: an output is written in place, never through a link") from None
        if os.path.exists(path):
            check_regular(path, why=_WRITTEN)  # a FIFO without a reader, a device: named as such
        raise RecordError(path, None, exc.strerror or "cannot be opened") from None
    try:
        check_regular(path, os.fstat(fd), why=_WRITTEN)
    except RecordError:
        os.close(fd)
        raise
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


def _umask() -> int:
    # The only way to read the umask is to set it; it is set back at once.
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _unfinished_prefix(path: Path) -> str:
    return f".{path.name}."


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` for its new content, with the mode a new file gets: its
    descriptor and name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_unfinished_prefix(path))
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except BaseException:
        os.close(fd)
        _discard(tmp)
        raise
    return fd, tmp


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:  # put in place, or never made
        pass


@contextmanager
def replace_file(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """A handle to write ``path``'s new content; on leaving, the file replaces ``path`` (a
    symlink there included, never its target). An exception inside leaves ``path`` as it was."""
    path = Path(path)
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def remove_unfinished(path: str | os.PathLike) -> None:
    """Delete the new content :func:`replace_file` had not yet put in place at ``path``, where the
    process writing it was killed midway (no exception ran its cleanup): the files named as
    ``mkstemp`` names them after the prefix (eight letters, digits or underscores), no other."""
    path = Path(path)
    name = re.compile(re.escape(_unfinished_prefix(path)) + r"[a-z0-9_]{8}")
    for entry in os.scandir(path.parent) if path.parent.is_dir() else ():
        if name.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:  # gone meanwhile
                pass


def write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` as ``path``'s whole content, under :func:`replace_file`."""
    write_texts({path: text})


def write_texts(texts: dict[str | os.PathLike, str]) -> None:
    """Each text as its path's whole content (as :func:`replace_file` writes one), all new or all
    as they were: files that belong together (a report's json, markdown and html) are each
    written beside their place first, so an error or a stop while they are written leaves every
    one as it was; then they are put in place together (:func:`_put_in_place`), and a stop
    then (Ctrl-C, SIGTERM) puts every one in place, never some new and some old."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in texts.items():
            fd, tmp = _temporary(Path(path))
            staged.append((tmp, Path(path)))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
        _put_in_place(staged)
    except BaseException:
        for tmp, _ in staged:
            _discard(tmp)
        raise


def _put_in_place(staged: list[tuple[str, Path]]) -> None:
    """Each written file renamed onto its path; once the first is, the rest follow. A Ctrl-C
    midway (KeyboardInterrupt) is raised once every one is in place, and SIGTERM is held off by
    this thread until then, which holds it off a process of one thread: a pool that terminates
    the helper writing a report (Ctrl-C in its parent) killed it between two renames, leaving
    the new json beside the last run's markdown and html."""
    blocking = hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}) if blocking else None
    try:
        try:
            for tmp, path in staged:
                os.replace(tmp, path)
        except KeyboardInterrupt:
            for tmp, path in staged:
                if os.path.lexists(tmp):  # not yet in place
                    os.replace(tmp, path)
            raise
    finally:
        if blocking:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
