"""Writes tests/golden/report_sample.json: the report.json of a seeded sample as the code stood
before issue 21 (commit 0044084), built with eight bootstrap seeds.

For every leaf of report.json it keeps the value at seed 0 and, for numbers, the range over
seeds 0-7: a leaf that moves with the seed is bootstrap noise, one that does not is a number
the report computes exactly. tests/test_report_golden.py holds today's report.json to it.
Do not rerun this to make that test pass: it records the numbers before a change.

    python tests/golden/make_report_golden.py   # about 2 minutes
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent)]

from golden_report import SAMPLE, flatten, write_sample  # noqa: E402

from analysis.report.cli import main  # noqa: E402


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        votes = write_sample(Path(tmp))
        runs = []
        for seed in range(8):
            out = Path(tmp) / f"seed{seed}"
            main(["--votes", str(votes), "--out", str(out), "--quiet", "--seed", str(seed)])
            runs.append(flatten(json.loads((out / "report.json").read_text())))
    golden = {}
    for path, value in runs[0].items():
        values = [r.get(path) for r in runs]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == len(values):
            golden[path] = {"value": value, "min": min(numbers), "max": max(numbers)}
        else:
            golden[path] = {"value": value, "noisy": any(v != value for v in values)}
    (HERE / "report_sample.json").write_text(json.dumps({"sample": SAMPLE, "leaves": golden}, indent=1) + "\n")


if __name__ == "__main__":
    run()
