"""The ``pairlab`` command on an install without the extras: ``pairlab arena --help`` answers
without the arena's packages; an arena whose models need the models extra says so in one line
and leaves no vote store behind; a command started as ``pairlab NAME`` says that name in its
usage and errors.

The missing packages are made unimportable in a child process by a ``sitecustomize`` whose
meta path finder refuses them (tests/wheel_check.sh checks the real base install).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each case runs the command in a process of its own (its imports are the point).
pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[1]
BLOCKER = """
import sys

BLOCKED = {blocked!r}


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Refuse())
"""
ARENA = {"gradio", "fastapi", "uvicorn", "sqlalchemy", "starlette", "psycopg", "langdetect"}
MODELS = {"torch", "transformers", "gguf", "accelerate", "safetensors", "httpx"}


def pairlab(tmp_path: Path, blocked: set[str], *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "pairlab.cli", *args], cwd=work, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"})


def test_arena_help_works_without_the_arena_packages(tmp_path):
    done = pairlab(tmp_path, ARENA | MODELS, "arena", "--help")
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.startswith("usage: pairlab arena") and "--config" in done.stdout and done.stderr == ""
    assert not (tmp_path / "work" / "arena.db").exists()


def test_the_arena_extra_alone_says_the_models_extra_is_needed_and_leaves_no_store(tmp_path):
    done = pairlab(tmp_path, MODELS, "arena")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr[-800:]
    assert done.stderr.startswith("pairlab arena: error:") and "pip install 'pairlab[arena,models]'" in done.stderr
    assert not (tmp_path / "work" / "arena.db").exists()


def test_errors_and_usage_say_the_name_the_user_typed(capsys):
    from pairlab.cli import main

    for name in ("ratings", "report", "plan", "judge", "generate", "arena"):
        try:
            code = main([name, "--no-such-option"])
        except SystemExit as stop:  # argparse's exit on a usage error
            code = stop.code
        assert code == 2
        err = capsys.readouterr().err
        assert f"usage: pairlab {name}" in err and f"pairlab {name}: error:" in err, (name, err)
        assert "python -m" not in err.split("error:", 1)[1], (name, err)
    # Run as its python -m form, the command keeps that name.
    from analysis.ratings.cli import main as ratings_main

    try:
        ratings_main(["--no-such-option"])
    except SystemExit:
        pass
    assert "python -m analysis.ratings: error:" in capsys.readouterr().err
