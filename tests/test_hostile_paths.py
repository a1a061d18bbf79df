"""Hostile paths given to the analysis commands (issue 29, item 4): both commands give one
verdict on one path, in one line with exit code 2, in bounded memory.

Peak memory is each command's own high-water mark (``VmHWM``: the child's memory after its
exec, not ``ru_maxrss``, which keeps the forking parent's size: a pytest that loaded models
reads as 1.2 GB), measured in a child process under an address-space limit, so a reader that
would grow without end fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.importers.rows import MAX_DOCUMENT, MAX_LINE
from support import HIGH_WATER, MEASURED

# Each command's own peak memory, under an address-space limit: in a process of its own.
pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[1]
LIMIT = 3 << 30  # address space for a child: far above what reading any of these needs
RECORD = {"pair_id": "p", "prompt": "q", "model_a": "x", "model_b": "y", "response_a": "a", "response_b": "b",
          "winner": "model_a", "judge": "human"}


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _command(name: str, path: Path, out: Path) -> list[str]:
    if name == "analysis.ratings":
        return [name, "--votes", str(path), "--json"]
    return [name, "--votes", str(path), "--out", str(out), "--quiet", "--bootstrap", "10", "--rating-bootstrap", "10"]


def run_measured(name: str, path: Path, out: Path) -> tuple[int, str, int]:
    """(exit code, stderr without the measurement, peak MB) of one command on ``path``."""
    proc = subprocess.run([sys.executable, "-c", MEASURED, *_command(name, path, out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, preexec_fn=_limit,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = proc.stderr.splitlines()
    peak = int(lines[-1].split()[1]) if lines and lines[-1].startswith("peak_mb") else -1
    return proc.returncode, "\n".join(lines[:-1]), peak


COMMANDS = ["analysis.ratings", "analysis.report"]


def _one_verdict(path: Path, out: Path, expected: str, peak_mb: int) -> None:
    verdicts = []
    for name in COMMANDS:
        code, err, peak = run_measured(name, path, out)
        assert code == 2, (name, err[-500:])
        assert len(err.splitlines()) == 1 and expected in err, (name, err[-500:])
        assert 0 < peak < peak_mb, (name, peak)
        verdicts.append(err.split("error: ", 1)[1])
    assert len(set(verdicts)) == 1, verdicts


def test_a_link_to_a_device_is_refused_without_reading_it(tmp_path):
    link = tmp_path / "votes.jsonl"
    link.symlink_to("/dev/zero")
    _one_verdict(link, tmp_path / "out", "a device, not a regular file", peak_mb=400)


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "votes.jsonl"
    os.mkfifo(fifo)  # nobody writes to it: opening it would wait for ever (the child's timeout fails the test)
    _one_verdict(fifo, tmp_path / "out", "a FIFO, not a regular file", peak_mb=400)


def test_a_fifo_in_a_folder_is_refused_too(tmp_path):
    (tmp_path / "votes").mkdir()
    (tmp_path / "votes" / "a.jsonl").write_text(json.dumps(RECORD) + "\n")
    os.mkfifo(tmp_path / "votes" / "b.jsonl")
    _one_verdict(tmp_path / "votes", tmp_path / "out", "a FIFO, not a regular file", peak_mb=400)


@pytest.mark.parametrize("records_before", [0, 1])
def test_a_line_longer_than_the_limit_stops_the_read_at_the_limit(tmp_path, records_before):
    sparse = tmp_path / "votes.jsonl"
    with open(sparse, "wb") as fh:
        fh.write(b"".join(json.dumps(RECORD).encode() + b"\n" for _ in range(records_before)))
        fh.truncate(1 << 30)  # then one line of NUL bytes up to 1 GiB, costing no disk
    # The limit's bytes, a few times over at most: not the gigabyte.
    _one_verdict(sparse, tmp_path / "out", f"votes.jsonl:{records_before + 1}: a line longer than "
                 f"{MAX_LINE >> 20} MiB", peak_mb=150 + 6 * (MAX_LINE >> 20))


def test_a_json_document_over_the_limit_is_refused_before_it_is_read(tmp_path):
    sparse = tmp_path / "votes.json"
    with open(sparse, "wb") as fh:
        fh.truncate(MAX_DOCUMENT + 1)
    _one_verdict(sparse, tmp_path / "out", f"a JSON document over {MAX_DOCUMENT >> 20} MiB", peak_mb=400)


def test_text_that_is_not_utf8_gets_one_verdict_from_both_commands(tmp_path):
    table = pa.table({k: [v, v] for k, v in RECORD.items()})
    bad = pa.array([b"fine", b"\xff\xfe"], pa.binary()).view(pa.string())  # Parquet does not check on writing
    path = tmp_path / "votes.parquet"
    pq.write_table(table.set_column(table.column_names.index("prompt"), "prompt", bad), path)
    _one_verdict(path, tmp_path / "out", "item 1: invalid UTF-8", peak_mb=400)


_READ = HIGH_WATER + """
import sys
from analysis.importers import read_table
table, _ = read_table([sys.argv[1]])
print(len(table), high_water() >> 20)
"""


def _read_measured(path: Path) -> tuple[int, int]:
    proc = subprocess.run([sys.executable, "-c", _READ, str(path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, preexec_fn=_limit, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-500:]
    rows, peak = proc.stdout.split()
    return int(rows), int(peak)


def test_many_tiny_files_cost_what_one_file_of_their_records_costs(tmp_path):
    """The reader both commands use: a folder of N one-record files takes about the memory of
    one file of N records (each file's own table and its concatenation took ~70 kB a file)."""
    n = 2000
    folder = tmp_path / "votes"
    folder.mkdir()
    lines = []
    for k in range(n):
        line = json.dumps({**RECORD, "pair_id": f"p{k}", "prompt": f"q{k}", "response_a": "a" * (k % 50),
                           "model_a": f"m{k % 5}", "model_b": f"m{(k + 1) % 5}"})
        (folder / f"{k:05d}.jsonl").write_text(line + "\n")
        lines.append(line)
    (tmp_path / "one.jsonl").write_text("\n".join(lines) + "\n")
    rows_one, peak_one = _read_measured(tmp_path / "one.jsonl")
    rows_many, peak_many = _read_measured(folder)
    assert rows_one == rows_many == n
    assert peak_many - peak_one < 30, (peak_one, peak_many)
