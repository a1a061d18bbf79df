"""`python -m analysis.ratings` starts fast: a Bradley-Terry run on a battle table imports
neither scipy.stats (most of a second, for one normal quantile) nor scipy.sparse (a
quarter second; the bootstrap still uses it) nor the optional libraries other methods
need (statsmodels, trueskill). Nor does the report import scipy.stats, on a design with
people, judges of two families and prompts that carry several pairs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]

_RUN = """
import contextlib, io, json, sys
from analysis.ratings.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["--votes", sys.argv[1], "--method", "bt", "--json"])
heavy = [m for m in ("scipy.stats", "scipy.sparse", "scipy.optimize", "statsmodels", "trueskill")
         if m in sys.modules]
n = len(json.loads(out.getvalue())["ratings"])
sys.path.insert(0, sys.argv[2])
from report_sample import iter_synthetic_records
from analysis.report import build_report
from pairlab.records import Record
records = [Record.from_dict(row) for row in iter_synthetic_records(400, seed=0, pairs_per_prompt=4)]
build_report(records, workers=1, n_boot=20, rating_bootstrap=10)
print(json.dumps({"code": code, "heavy": heavy, "n": n, "report_imports_scipy_stats": "scipy.stats" in sys.modules}))
"""


@pytest.mark.process  # what a fresh interpreter imports
def test_bt_run_imports_no_heavy_modules_and_the_report_no_scipy_stats(tmp_path):
    pairs = [("a", "b"), ("b", "c"), ("c", "a")] * 30
    winners = ["model_a", "model_b", "tie", "model_b", "model_a"] * 18
    battles = pd.DataFrame({"model_a": [p[0] for p in pairs], "model_b": [p[1] for p in pairs], "winner": winners})
    path = tmp_path / "battles.parquet"
    battles.to_parquet(path)
    result = subprocess.run([sys.executable, "-c", _RUN, str(path), str(ROOT / "tests")], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == {"code": 0, "heavy": [], "n": 3, "report_imports_scipy_stats": False}


def test_reachability_finds_the_components_scipy_would():
    """The numpy connectivity check that replaced scipy.sparse.csgraph."""
    from analysis.ratings.bt import _components
    from analysis.ratings.counts import aggregate

    counts = aggregate(["a", "c", "x", "y", "p"], ["b", "b", "y", "z", "q"], ["model_a"] * 5)
    n, labels = _components(counts)
    assert n == 3
    groups = {}
    for model, label in zip(counts.models, labels):
        groups.setdefault(label, set()).add(model)
    assert sorted(map(sorted, groups.values())) == [["a", "b", "c"], ["p", "q"], ["x", "y", "z"]]
