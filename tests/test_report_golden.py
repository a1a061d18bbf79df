"""report.json on a seeded sample holds the numbers it had before the report was made fast
(issue 21): every number the report computes exactly is equal to the last digit, and every
number that moves with the bootstrap seed stays within the spread eight seeds gave it.

tests/golden/report_sample.json was written by tests/golden/make_report_golden.py on the code
before issue 21; see that script for what it keeps.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from golden_report import SAMPLE, flatten, write_sample

from analysis.report.cli import main

GOLDEN = json.loads((Path(__file__).parent / "golden" / "report_sample.json").read_text())
SKIP = {"sources[0]"}  # a temporary path


def _mismatches(leaves: dict, golden: dict) -> list[str]:
    out = []
    for path, want in golden.items():
        if path in SKIP:
            continue
        if path not in leaves:
            out.append(f"{path}: missing")
            continue
        got = leaves[path]
        if "min" in want:
            lo, hi = want["min"], want["max"]
            if not isinstance(got, (int, float)) or isinstance(got, bool) or not math.isfinite(got):
                out.append(f"{path}: {got!r}, want a number near {want['value']!r}")
            elif lo == hi:
                if not math.isclose(got, want["value"], rel_tol=1e-9, abs_tol=1e-12):
                    out.append(f"{path}: {got!r} != {want['value']!r}")
            elif not lo - (hi - lo) <= got <= hi + (hi - lo):  # the seeds' spread, once more each side
                out.append(f"{path}: {got!r} outside the bootstrap spread [{lo!r}, {hi!r}]")
        elif not want["noisy"] and got != want["value"]:
            out.append(f"{path}: {got!r} != {want['value']!r}")
    return out


def test_golden_is_the_sample_this_test_builds():
    assert GOLDEN["sample"] == SAMPLE


def test_report_json_keeps_its_numbers(tmp_path):
    votes = write_sample(tmp_path)
    assert main(["--votes", str(votes), "--out", str(tmp_path / "out"), "--quiet", "--workers", "1"]) == 0
    leaves = flatten(json.loads((tmp_path / "out" / "report.json").read_text()))
    bad = _mismatches(leaves, GOLDEN["leaves"])
    assert not bad, f"{len(bad)} numbers changed:\n" + "\n".join(bad[:40])


def test_workers_change_no_number(tmp_path):
    """The raters' estimates spread over forked workers (analysis.workers) give the report
    that one process gives, byte for byte: every task takes its seed, none shares a stream."""
    votes = write_sample(tmp_path)
    outs = {}
    for workers in ("1", "3"):
        out = tmp_path / f"out{workers}"
        assert main(["--votes", str(votes), "--out", str(out), "--quiet", "--workers", workers]) == 0
        outs[workers] = tuple((out / f"report.{kind}").read_text() for kind in ("json", "md", "html"))
    assert outs["3"] == outs["1"]


def test_the_comparison_catches_a_changed_number():
    leaves = {path: want["value"] for path, want in GOLDEN["leaves"].items()}
    exact = next(p for p, w in GOLDEN["leaves"].items() if "min" in w and w["min"] == w["max"] and w["value"] != 0)
    noisy = next(p for p, w in GOLDEN["leaves"].items() if "min" in w and w["min"] != w["max"])
    assert _mismatches(leaves, GOLDEN["leaves"]) == []
    changed = dict(leaves, **{exact: leaves[exact] * (1 + 1e-6)})
    assert len(_mismatches(changed, GOLDEN["leaves"])) == 1
    want = GOLDEN["leaves"][noisy]
    moved = dict(leaves, **{noisy: want["max"] + 3 * (want["max"] - want["min"])})
    assert len(_mismatches(moved, GOLDEN["leaves"])) == 1
