"""One output rule (pairlab.files.replace_file) for every file a command writes: a symlink planted
at an output's name is replaced, its target never written; the output gets the mode the umask
gives any new file (0o644 under umask 022), not an owner-only one; an output folder that cannot
be made is named in one line before any work.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_plan import _write, population

REPO = Path(__file__).resolve().parents[1]
OBVIOUS = REPO / "data" / "obvious_pairs.jsonl"
VICTIM = "the victim's own text\n"
RECORDS = [{"pair_id": f"p{k}", "prompt": f"q{k}", "model_a": a, "model_b": b, "response_a": "a", "response_b": "bb",
            "winner": w, "judge": judge}
           for k, (a, b, w, judge) in enumerate([("m1", "m2", "model_a", "human"), ("m2", "m3", "model_a", "human"),
                                                  ("m1", "m3", "model_b", "human"), ("m1", "m2", "model_a", "j"),
                                                  ("m2", "m3", "model_b", "j"), ("m3", "m1", "tie", "j")])]


@pytest.fixture(autouse=True)
def umask_022():
    before = os.umask(0o022)
    yield
    os.umask(before)


def plant(path: Path) -> Path:
    """A symlink at ``path`` to a file outside; returns the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    victim = path.parent.parent / f"victim-{path.name}"
    victim.write_text(VICTIM)
    path.symlink_to(victim)
    return victim


def written_here(path: Path, victim: Path) -> None:
    assert victim.read_text() == VICTIM, f"{path} wrote through its symlink"
    info = path.lstat()
    assert stat.S_ISREG(info.st_mode) and path.stat().st_size > 0
    assert stat.S_IMODE(info.st_mode) == 0o644, oct(info.st_mode)


@pytest.mark.parametrize("fmt", ["records", "fastchat"])
def test_export_replaces_a_symlink_at_out(tmp_path, fmt):
    from arena.export import main
    from arena.store import VoteStore

    db = tmp_path / "arena.db"
    VoteStore(f"sqlite:///{db}").close()
    out = tmp_path / "out" / "votes.jsonl"
    victim = plant(out)
    assert main(["--db", str(db), "--out", str(out), "--format", fmt]) == 0
    assert victim.read_text() == VICTIM and stat.S_ISREG(out.lstat().st_mode)
    assert stat.S_IMODE(out.lstat().st_mode) == 0o644


def test_report_replaces_symlinks_in_its_folder(tmp_path, capsys):
    from analysis.report.cli import main

    votes = tmp_path / "votes.jsonl"
    votes.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    out = tmp_path / "out" / "report"
    victims = {name: plant(out / name) for name in ("report.json", "report.md", "report.html")}
    assert main(["--votes", str(votes), "--out", str(out), "--quiet", "--bootstrap", "10",
                 "--rating-bootstrap", "0", "--no-panel"]) == 0
    for name, victim in victims.items():
        written_here(out / name, victim)


def test_report_out_that_cannot_be_made_is_named_before_any_work(tmp_path, capsys):
    """--out is checked first: here the votes do not even exist, and the folder is what is named."""
    from analysis.report.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--votes", str(tmp_path / "no-such-votes.jsonl"), "--out", "/proc/nope", "--quiet"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and "--out /proc/nope" in err


def test_plan_replaces_a_symlink_at_out(tmp_path, capsys):
    from analysis.plan.cli import main

    verdicts, _ = population(np.random.default_rng(1), 300, "confident")
    judged = _write(verdicts, tmp_path / "verdicts.jsonl")
    out = tmp_path / "out" / "picks.jsonl"
    victim = plant(out)
    assert main(["--votes", judged, "--judge", "J", "--budget", "30", "--out", str(out)]) == 0
    written_here(out, victim)


def test_plan_refuses_a_target_width_that_is_not_a_positive_number(tmp_path, capsys):
    from analysis.plan.cli import main

    verdicts, _ = population(np.random.default_rng(1), 300, "confident")
    judged = _write(verdicts, tmp_path / "verdicts.jsonl")
    for width in ("nan", "inf", "-5"):
        assert main(["--votes", judged, "--judge", "J", "--budget", "30", "--out", str(tmp_path / "p.jsonl"),
                     "--target-width", width]) == 2
        assert "--target-width must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()


def test_generate_writes_pairs_and_manifest_readable_by_others(tmp_path):
    """The writers judges.generate and judges.run share: records (PAIRS.jsonl) and manifests."""
    from judges.manifest import write_manifest
    from pairlab.records import read_pairs, write_records

    pairs, manifest = tmp_path / "pairs.jsonl", tmp_path / "pairs.manifest.json"
    victims = [plant(pairs), plant(manifest)]
    write_records(pairs, read_pairs(OBVIOUS))
    write_manifest(manifest, ["python", "-m", "judges.generate"], {"status": "complete"})
    for path, victim in zip((pairs, manifest), victims):
        written_here(path, victim)


def test_a_manifest_is_readable_by_others(tmp_path):
    """Manifests were always replaced, not written through, but came out owner-only (0o600)."""
    from judges.manifest import write_manifest

    write_manifest(tmp_path / "run.manifest.json", ["python", "-m", "judges.run"], {"status": "complete"})
    assert stat.S_IMODE((tmp_path / "run.manifest.json").stat().st_mode) == 0o644


@pytest.mark.slow
def test_judges_run_replaces_a_symlink_at_its_order_averaged_file(tmp_path, capsys):
    import torch

    from judges.run import main

    out = tmp_path / "out" / "v.jsonl"
    victim = plant(out.parent / "v.pairs.jsonl")
    threads = torch.get_num_threads()  # loading sets this process's torch threads: the tests after keep theirs
    try:
        assert main(["--pairs", str(OBVIOUS), "--judge", "smollm2-135m-instruct", "--out", str(out), "--limit", "1",
                     "--quiet"]) == 0
    finally:
        torch.set_num_threads(threads)
    written_here(out.parent / "v.pairs.jsonl", victim)
    assert stat.S_IMODE((out.parent / "v.manifest.json").stat().st_mode) == 0o644


@pytest.mark.parametrize("kind", ["symlink", "fifo", "failures symlink"])
def test_judges_run_refuses_to_append_through_a_link_or_to_a_fifo(tmp_path, capsys, kind):
    """OUT and OUT.failures.jsonl are appended to (a run resumes), so they cannot be replaced:
    a symlink or a FIFO at their names is refused in one line, before the judge loads."""
    from judges.run import main

    out = tmp_path / "out" / "v.jsonl"
    out.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(out)
        victim = None
    else:
        victim = plant(out.parent / "v.failures.jsonl" if kind == "failures symlink" else out)
    assert main(["--pairs", str(OBVIOUS), "--judge", "smollm2-135m-instruct", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and ("a symlink" in err if victim else "a FIFO" in err), err
    assert victim is None or victim.read_text() == VICTIM


def test_files_written_together_are_all_left_as_they_were_when_one_cannot_be_written(tmp_path):
    """write_texts puts no file in place before every one is written: the third cannot be (its
    folder is a file), so the first two keep their old content and no half-written file stays."""
    from pairlab.files import write_texts

    first, second = tmp_path / "a.json", tmp_path / "a.md"
    first.write_text("old a")
    second.write_text("old b")
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(OSError):
        write_texts({first: "new a", second: "new b", tmp_path / "not-a-folder" / "a.html": "new c"})
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.md", "not-a-folder"]
    write_texts({first: "new a", second: "new b"})
    assert (first.read_text(), second.read_text()) == ("new a", "new b")


def _old_report(folder):
    paths = [folder / name for name in ("report.json", "report.md", "report.html")]
    for path in paths:
        path.write_text("the last run's")
    return paths


def test_a_ctrl_c_between_the_renames_of_files_written_together_puts_every_one_in_place(tmp_path, monkeypatch):
    """Ctrl-C after the first of three files is put in place: the other two follow before the
    KeyboardInterrupt is raised, so no report is new json beside the last run's markdown and html."""
    from pairlab.files import write_texts

    paths = _old_report(tmp_path)
    real, renamed = os.replace, []

    def interrupted(src, dst):
        real(src, dst)
        renamed.append(dst)
        if len(renamed) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_texts({path: "new " + path.suffix for path in paths})
    assert [path.read_text() for path in paths] == ["new .json", "new .md", "new .html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


@pytest.mark.process
def test_sigterm_between_the_renames_of_files_written_together_waits_until_every_one_is_in_place(tmp_path):
    """A pool terminates its helper (SIGTERM) when its parent is stopped; the helper writing a
    report then puts all three files in place before it dies, not one."""
    paths = _old_report(tmp_path)
    script = f"""
import os, signal, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from pairlab.files import write_texts
real = os.replace
def terminated(src, dst):
    real(src, dst)
    os.kill(os.getpid(), signal.SIGTERM)  # after the first: the process may not see the next
os.replace = terminated
write_texts({{p: "new " + os.path.splitext(p)[1] for p in {[str(p) for p in paths]!r}}})
print("not killed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert [path.read_text() for path in paths] == ["new .json", "new .md", "new .html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
