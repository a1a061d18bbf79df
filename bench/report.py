"""The bias report at arena scale (issues 21 and 28): the full report on 100,000 and on 1,000,000
records against the time to merely parse them.

Input (seeded, ``tests/report_sample.py``): pairs among 8 models of 4 families, one human
vote per pair and two LLM judges judging every pair in both orders (5 records a pair):
20,000 pairs for 100k records, 200,000 for 1M, each written to a records JSONL file. Two
inputs of each size: one prompt a pair (the report clusters by pair), and four pairs a
prompt (5,000 prompts for 100k: the report clusters by prompt, and every judge's worth sums
its sandwiches per prompt and resamples whole prompts). The 1M report runs on the second.

Timed, each in a fresh process, as a user runs it (with the modules' bytecode written, as
Python writes it unless PYTHONDONTWRITEBYTECODE is set, and as pip writes it at install):

* the anchor (the parse floor): ``json.loads`` of every line of the file;
* the full report, ``python -m analysis.report --votes FILE --out DIR --quiet`` (read,
  analyse with the default 1,000 bootstrap rounds and 200 rating rounds, write
  HTML/Markdown/JSON), wall time and the CPU time of the process and its workers; by
  default the report spreads its work over every core (``--workers``), so the 100k report
  is also timed in one process (``--workers 1``).

Also a report of an ordinary size, PandaLM's 999 pairs from ``../shared/data/pandalm`` (people and
two judges), as the command runs it (its helper process imports matplotlib and compiles the
templates while the records are analysed, then draws the figures while the judges are judged and
writes the files) against the same command in one process (``--workers 1``: the figures and
files made after the estimates), in alternating pairs.

Goals: 100k within 8x the floor; 1M under 60 s and at most 11x the 100k time; the PandaLM
report at most 0.9x its time in one process (the helper's 10%). Medians of
``--repeats`` runs (3) for 100k and the floor, in alternating pairs (the ratio is the median of the
pairs' ratios); the 1M report runs ``--repeats-1m`` times (1).
Also prints, for 100k, where the time goes (reading, analysis with the figures, writing) inside one run.

    python bench/report.py [--skip-1m] [--skip-pairs] [--skip-pandalm] [--repeats N] [--repeats-1m N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/ first on the path would shadow packages (bench/judges.py); the repo and tests/ instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from pairlab.records import write_records  # noqa: E402
from report_sample import MODELS, iter_synthetic_records  # noqa: E402

GOAL_100K_FLOOR = 8.0
GOAL_1M_S = 60.0
GOAL_GROWTH = 11.0
GOAL_HELPER = 0.9
PANDALM = ROOT.parent / "shared" / "data" / "pandalm"

_FLOOR = """
import json, sys, time
start = time.perf_counter()
with open(sys.argv[1], encoding="utf-8") as fh:
    rows = [json.loads(line) for line in fh]
print(time.perf_counter() - start)
"""

_PARTS = """
import contextlib, io, sys, time
from analysis.importers.columnar import read_table
from analysis.report.figures import build_report_with_figures
from analysis.report.render import report_helper
t0 = time.perf_counter(); table, _ = read_table([sys.argv[1]])
with report_helper() as helper:
    t1 = time.perf_counter(); report, figs = build_report_with_figures(table, helper=helper)
    t2 = time.perf_counter(); helper.submit("write", report, sys.argv[2], figs).get()
    t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


# The children write the bytecode of the modules they import, as Python does unless told not to:
# where PYTHONDONTWRITEBYTECODE is set (as on these machines) and nothing was compiled at
# install (uv compiles nothing), every report recompiled pandas, scipy and the project's
# modules again, work that no installed copy does.
_CHILD_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}


def _child_seconds(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the child (user + system) and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=_CHILD_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


PAIRS_PER_PROMPT = 4


def _write(path: Path, n_pairs: int, pairs_per_prompt: int = 1) -> int:
    return write_records(path, iter_synthetic_records(n_pairs, seed=0, pairs_per_prompt=pairs_per_prompt))


def _floor_once(path: Path) -> float:
    return float(_child_seconds([sys.executable, "-c", _FLOOR, str(path)])[2])


def _report_once(path: Path, out: Path, *options: str) -> tuple[float, float]:
    return _child_seconds([sys.executable, "-m", "analysis.report", "--votes", str(path), "--out", str(out),
                           "--quiet", *options])[:2]


def _report(path: Path, out: Path, repeats: int, *options: str) -> tuple[float, float]:
    runs = [_report_once(path, out, *options) for _ in range(repeats)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def _hundred_k(path: Path, tmp: Path, repeats: int, label: str) -> float:
    """Times the 100k report of ``path``; prints the lines; returns its median wall time.

    The floor and the report run in alternating pairs and the ratio is the median of each pair's:
    on a shared machine the floor alone moved by half between moments, and a ratio of two medians
    timed minutes apart moved with it. One report runs untimed first: it writes the modules'
    bytecode and brings the file into the page cache."""
    _report_once(path, tmp / f"report-{label}")
    pairs = [(_floor_once(path), *_report_once(path, tmp / f"report-{label}")) for _ in range(repeats)]
    floor = statistics.median(f for f, _, _ in pairs)
    wall = statistics.median(w for _, w, _ in pairs)
    cpu = statistics.median(c for _, _, c in pairs)
    ratio = statistics.median(w / f for f, w, _ in pairs)
    wall_one, cpu_one = _report(path, tmp / f"report-{label}-one", repeats, "--workers", "1")
    parts = [float(x) for x in _child_seconds([sys.executable, "-c", _PARTS, str(path),
                                               str(tmp / f"parts-{label}")])[2].split()]
    print(f"[{label}] parse floor, json.loads of every line: {floor:.2f} s (median of {repeats})")
    print(f"[{label}] full report, 100k: {wall:.2f} s wall, {cpu:.2f} s CPU (median of {repeats}); "
          f"{ratio:.1f}x the floor, median of the pairs' ratios ({', '.join(f'{w / f:.1f}' for f, w, _ in pairs)}; "
          f"goal <= {GOAL_100K_FLOOR:.0f}x: {'met' if ratio <= GOAL_100K_FLOOR else 'MISSED'})")
    print(f"[{label}]   one process (--workers 1): {wall_one:.2f} s wall, {cpu_one:.2f} s CPU (median of {repeats}); "
          f"{wall_one / floor:.1f}x the floor")
    print(f"[{label}]   its parts, timed inside one run: read {parts[0]:.2f} s, analysis {parts[1]:.2f} s (on every "
          f"core, the figures drawn meanwhile by the report's helper), writing {parts[2]:.2f} s (by the helper)")
    return wall


def _ordinary(tmp: Path, repeats: int) -> None:
    """The PandaLM report with its helper against it in one process, in alternating pairs."""
    if not PANDALM.is_dir():
        print(f"[PandaLM] not timed: {PANDALM} is not there")
        return
    _report_once(PANDALM, tmp / "pandalm")  # untimed: bytecode written, files in the page cache
    pairs = [(_report_once(PANDALM, tmp / "pandalm-one", "--workers", "1")[0],
              _report_once(PANDALM, tmp / "pandalm")[0]) for _ in range(repeats)]
    ratio = statistics.median(w / one for one, w in pairs)
    print(f"[PandaLM, 999 pairs] report: {statistics.median(w for _, w in pairs):.2f} s wall; in one process "
          f"(--workers 1): {statistics.median(one for one, _ in pairs):.2f} s (medians of {repeats}); {ratio:.2f}x, "
          f"median of the pairs' ratios ({', '.join(f'{w / one:.2f}' for one, w in pairs)}; goal <= {GOAL_HELPER}x: "
          f"{'met' if ratio <= GOAL_HELPER else 'MISSED'})")


def run(repeats: int, repeats_1m: int, skip_1m: bool, skip_pairs: bool, skip_pandalm: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if not skip_pandalm:
            _ordinary(tmp, repeats)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; records: 100,000 (20,000 pairs, "
              f"{len(MODELS)} models, humans + 2 judges in both orders)")
        if not skip_pairs:
            by_pair = tmp / "votes-100k.jsonl"
            _write(by_pair, 20_000)
            _hundred_k(by_pair, tmp, repeats, "a prompt a pair")
            by_pair.unlink()
        small = tmp / "votes-100k-prompts.jsonl"
        _write(small, 20_000, PAIRS_PER_PROMPT)
        wall = _hundred_k(small, tmp, repeats, f"{PAIRS_PER_PROMPT} pairs a prompt")
        if skip_1m:
            return
        small.unlink()
        big = tmp / "votes-1m-prompts.jsonl"
        n_big = _write(big, 200_000, PAIRS_PER_PROMPT)
        floor_big = _floor_once(big)
        wall_big, cpu_big = _report(big, tmp / "report-1m", repeats_1m)
        print(f"records: {n_big:,} (200,000 pairs, {PAIRS_PER_PROMPT} a prompt); parse floor {floor_big:.2f} s")
        print(f"full report, 1M: {wall_big:.2f} s wall, {cpu_big:.2f} s CPU (median of {repeats_1m}); "
              f"goal < {GOAL_1M_S:.0f} s: {'met' if wall_big < GOAL_1M_S else 'MISSED'}; "
              f"{wall_big / floor_big:.1f}x its floor")
        print(f"growth, 1M / 100k: {wall_big / wall:.1f}x (goal <= {GOAL_GROWTH:.0f}x: "
              f"{'met' if wall_big / wall <= GOAL_GROWTH else 'MISSED'}); load average now "
              f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of the 100k report and the floor (median)")
    parser.add_argument("--repeats-1m", type=int, default=1, help="runs of the 1M report (median)")
    parser.add_argument("--skip-1m", action="store_true", help="only the 100k reports")
    parser.add_argument("--skip-pairs", action="store_true", help="only the prompt-clustered input")
    parser.add_argument("--skip-pandalm", action="store_true", help="not the PandaLM report")
    args = parser.parse_args()
    run(args.repeats, args.repeats_1m, args.skip_1m, args.skip_pairs, args.skip_pandalm)
