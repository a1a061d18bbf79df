"""The report's figures (issue 21): their cost at 10,000 and at 100,000 records, against the
time to merely parse the 100,000 (the report's anchor).

The figures are drawn from the report's estimates, never from records, so they should cost
the same at any size. For each size the report is built once (``tests/report_sample.py``'s
seeded records, ``read_table`` + ``build_report``) and pickled; then, each in a fresh
process, as ``write_report`` meets them, CPU time of:

* importing matplotlib (``matplotlib.figure`` and the Agg canvas: what ``plotting`` needs);
* ``figures(report)``: the six PNG figures, laid out, drawn and encoded.

Goal: the figures within 0.4 s at 100k. Medians of ``--repeats`` (3) runs.

    python bench/figures.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/ first on the path would shadow packages (bench/judges.py); the repo and tests/ instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from pairlab.records import write_records  # noqa: E402
from report_sample import iter_synthetic_records  # noqa: E402

GOAL_S = 0.4

_BUILD = """
import pickle, sys
from analysis.importers.columnar import read_table
from analysis.report import build_report
table, _ = read_table([sys.argv[1]])
with open(sys.argv[2], "wb") as fh:
    pickle.dump(build_report(table), fh)
"""

_FIGURES = """
import pickle, sys, time
import analysis.report.figures  # the report's own modules (pandas, scipy, ...): not the figures' cost
with open(sys.argv[1], "rb") as fh:
    report = pickle.load(fh)
start = time.process_time()
import matplotlib.figure, matplotlib.backends.backend_agg
imported = time.process_time()
images = analysis.report.figures.figures(report)
drawn = time.process_time()
print(imported - start, drawn - imported, len(images))
"""

_FLOOR = """
import json, sys, time
start = time.process_time()
with open(sys.argv[1], encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh]
print(time.process_time() - start)
"""


def _child(code: str, *args: str) -> list[float]:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr[-2000:]}")
    return [float(x) for x in proc.stdout.split()]


def run(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for n_pairs in (2_000, 20_000):
            votes, pickled = Path(tmp) / f"votes-{n_pairs}.jsonl", Path(tmp) / f"report-{n_pairs}.pkl"
            n = write_records(votes, iter_synthetic_records(n_pairs, seed=0))
            _child(_BUILD, str(votes), str(pickled))
            runs = [_child(_FIGURES, str(pickled)) for _ in range(repeats)]
            results[n] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), int(runs[0][2]))
        floor = statistics.median(_child(_FLOOR, str(votes))[0] for _ in range(repeats))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU seconds, median of {repeats}")
    for n, (imported, drawn, count) in results.items():
        print(f"{n:>8,} records: import matplotlib {imported:.2f} s, figures() {drawn:.2f} s ({count} figures)")
    (small, (_, drawn_small, _)), (big, (imported, drawn, _)) = results.items()
    print(f"figures at {big:,} / at {small:,} records: {drawn / drawn_small:.2f}x (no growth with records: ~1x)")
    print(f"parse floor at {big:,}: {floor:.2f} s; figures {drawn / floor:.2f}x it, with the import "
          f"{(drawn + imported) / floor:.2f}x; goal figures <= {GOAL_S} s: {'met' if drawn <= GOAL_S else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh-process runs of each timing (median)")
    run(parser.parse_args().repeats)
