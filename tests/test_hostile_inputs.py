"""Every file a command opens follows one reader rule (pairlab.files): a FIFO, a link to
/dev/zero, an 8 GiB sparse file and invalid UTF-8, given as ``ratings --picks``, ``judges.run
--reproduce MANIFEST``, ``judges.run --pairs``, ``app.py --config`` and the arena's ``picks =
FILE``, each end in one error line naming the file, exit code 2, quickly and in bounded memory.

Each command runs in a child process under an address-space limit (a reader that would hold the
sparse file fails there, not on the machine) and a timeout (a FIFO that is opened waits for ever);
its peak is the child's own high-water mark, as in test_hostile_paths.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from support import MEASURED

# Each case runs the command in a process of its own (its exit code, its memory, its imports).
pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[1]
LIMIT = 3 << 30
RECORD = {"pair_id": "p1", "prompt": "q", "model_a": "x", "model_b": "y", "response_a": "a", "response_b": "b",
          "winner": "model_a", "judge": "human"}
PAIRS = REPO / "data" / "prompts_pairs.jsonl"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # nobody writes to it: a reader that opens it waits for ever


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _sparse(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.truncate(8 << 30)  # 8 GiB of NUL bytes, no line end, no disk


def _not_utf8(path: Path) -> None:
    path.write_bytes(b"\n\xff\xfe not UTF-8\n")  # a blank line, then bytes no UTF-8 text holds


HOSTILE = {"fifo": (_fifo, "a FIFO, not a regular file"), "dev-zero": (_dev_zero, "a device, not a regular file"),
           "sparse": (_sparse, ""), "not-utf8": (_not_utf8, ":2: invalid UTF-8")}


def _picks_command(tmp: Path, hostile: Path) -> list[str]:
    votes = tmp / "votes.jsonl"
    votes.write_text(json.dumps(RECORD) + "\n")
    return ["analysis.ratings", "--votes", str(votes), "--judge", "human", "--ppi", "j", "--picks", str(hostile)]


def _arena_picks_command(tmp: Path, hostile: Path) -> list[str]:
    config = tmp / "arena.toml"
    config.write_text(f'[arena]\nmodels = ["smollm2-135m-instruct", "gemma3-270m"]\ndb = "{tmp / "a.db"}"\n'
                      f'pairs = "{PAIRS}"\npicks = "{hostile}"\n')
    return ["app", "--config", str(config)]


INPUTS = {
    "ratings --picks": ("picks.jsonl", _picks_command),
    "judges.run --reproduce": ("run.manifest.json", lambda tmp, h: ["judges.run", "--reproduce", str(h)]),
    "judges.run --pairs": ("pairs.jsonl", lambda tmp, h: ["judges.run", "--pairs", str(h), "--judge",
                                                          "smollm2-135m-instruct", "--out", str(tmp / "v.jsonl")]),
    "app.py --config": ("arena.toml", lambda tmp, h: ["app", "--config", str(h)]),
    "arena picks = FILE": ("picks.jsonl", _arena_picks_command),
}


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("given", INPUTS)
def test_a_hostile_file_ends_in_one_line_naming_it(tmp_path, given, kind):
    name, command = INPUTS[given]
    make, expected = HOSTILE[kind]
    (tmp_path / "in").mkdir()
    hostile = tmp_path / "in" / name
    make(hostile)
    proc = subprocess.run([sys.executable, "-c", MEASURED, *command(tmp_path, hostile)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limit,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = proc.stderr.splitlines()
    peak = int(lines[-1].split()[1]) if lines and lines[-1].startswith("peak_mb") else -1
    said = [line for line in lines[:-1] if "error:" in line]
    assert proc.returncode == 2, proc.stderr[-800:]
    assert "Traceback" not in proc.stderr and len(said) == 1, proc.stderr[-800:]
    # named as given, or (the arena's config resolves its paths) as the file it leads to
    assert (str(hostile) in said[0] or str(hostile.resolve()) in said[0]) and expected in said[0], said[0]
    # The sparse file costs at most one line's limit (64 MiB) to refuse, never its 8 GiB.
    assert 0 < peak < 600, peak
