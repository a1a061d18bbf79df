"""Seconds for the full bias report on 100,000 synthetic records (target, issue 6: < 10 s).

Input (seeded): 20,000 pairs among 8 models of 4 families; one human vote per pair and
two LLM judges (one of a family that has models in the pool) judging every pair in both
orders: 100,000 records in a records JSONL file. Timed, median of a few runs:

* the whole command, ``analysis.report.main`` (read + analyse + write HTML/MD/JSON),
  with the default settings (1,000 pair-cluster bootstrap rounds, 200 rating rounds that
  resample whole pairs), in wall time and in this process's CPU time;
* its parts: reading the file, the analysis (:func:`build_report`), and rendering; and,
  inside the analysis, the share taken by the ratings module (BT with 200 bootstrap
  rounds and style-controlled BT for each rater), which the bias estimators call.

The anchor is the time to merely parse the JSONL file with ``json.loads`` per line, so
the ratio says how many file reads the whole report costs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.importers import import_paths  # noqa: E402
from analysis.ratings import rate  # noqa: E402
from analysis.report import build_report, main, rating_frames, write_report  # noqa: E402
from core.records import make_pair_id, write_records  # noqa: E402

N_PAIRS = 20_000
MODELS = {"llama-a": ("llama", 0.4), "llama-b": ("llama", 0.1), "bloom-a": ("bloom", 0.0), "bloom-b": ("bloom", -0.2),
          "opt-a": ("opt", -0.3), "opt-b": ("opt", 0.2), "pythia-a": ("pythia", 0.0), "pythia-b": ("pythia", -0.1)}
TARGET_S = 10.0
REPEATS = 3


def synthetic_records(seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    names = list(MODELS)
    strength = np.array([MODELS[m][1] for m in names])
    a = rng.integers(0, len(names), N_PAIRS)
    b = (a + rng.integers(1, len(names), N_PAIRS)) % len(names)
    len_a, len_b = rng.integers(20, 800, N_PAIRS), rng.integers(20, 800, N_PAIRS)
    rows = []
    for i in range(N_PAIRS):
        ma, mb = names[a[i]], names[b[i]]
        ra, rb = f"{i} {ma} " + "wd " * int(len_a[i] // 3), f"{i} {mb} " + "wd " * int(len_b[i] // 3)
        prompt = f"prompt {i}"
        pid = make_pair_id(prompt, ra, rb)
        d = strength[a[i]] - strength[b[i]]
        base = {"pair_id": pid, "prompt": prompt, "family_a": MODELS[ma][0], "family_b": MODELS[mb][0]}
        shown = {"model_a": ma, "model_b": mb, "response_a": ra, "response_b": rb}
        swapped = {"model_a": mb, "model_b": ma, "response_a": rb, "response_b": ra}
        p_human = 1 / (1 + np.exp(-d))
        u = rng.random(7)
        rows.append({**base, **shown, "winner": "tie" if u[0] < 0.1 else ("model_a" if u[1] < p_human else "model_b"),
                     "judge": f"human:{i % 50}"})
        for order, sign in ((shown, 1.0), (swapped, -1.0)):
            length = 0.002 * sign * (len_a[i] - len_b[i])
            p = 1 / (1 + np.exp(-(sign * d + length + 0.3)))  # +0.3: a first-position lean
            k = 2 if sign > 0 else 4
            rows.append({**base, **order, "winner": "model_a" if u[k] < p else "model_b", "judge": "judge-llama",
                         "judge_family": "llama"})
            rows.append({**base, **order, "winner": "model_a" if u[k + 1] < 1 / (1 + np.exp(-sign * d)) else "model_b",
                         "judge": "judge-qwen", "judge_family": "qwen"})
    return rows


def median_time(fn, repeats: int = REPEATS, clock=time.perf_counter) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = clock()
        result = fn()
        times.append(clock() - start)
    return statistics.median(times), result


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "votes.jsonl"
        n = write_records(path, synthetic_records())
        out = Path(tmp) / "report"

        def parse_only():
            with open(path, encoding="utf-8") as fh:
                return [json.loads(line) for line in fh]

        anchor, _ = median_time(parse_only)
        report = ["--votes", str(path), "--out", str(out), "--quiet"]
        with contextlib.redirect_stdout(io.StringIO()):  # main() prints the paths it wrote
            total, rc = median_time(lambda: main(report))
            # CPU seconds of this process: on a machine shared with other jobs, wall time
            # also counts their load; the two together show which one a miss comes from.
            cpu, _ = median_time(lambda: main(report), clock=time.process_time)
        assert rc == 0
        read, imported = median_time(lambda: import_paths([path]))
        analyse, report = median_time(lambda: build_report(imported.records))
        render, _ = median_time(lambda: write_report(report, out))
        by_rater: dict[str, list] = {}
        for r in imported.records:
            by_rater.setdefault("human" if r.judge_type == "human" else r.judge, []).append(r)

        def ratings_only():  # as build_report does it: frames and style counts for all raters at once
            for frame in rating_frames(by_rater).values():
                rate(frame, "bt", bootstrap=200, seed=0)
                rate(frame, "bt-style")

        ratings, _ = median_time(ratings_only)
    print(f"records: {n:,} ({N_PAIRS:,} pairs, {len(MODELS)} models, humans + 2 judges in both orders)")
    print(f"full report (python -m analysis.report): {total:.2f} s  (median of {REPEATS}; target < {TARGET_S:.0f} s: "
          f"{'met' if total < TARGET_S else 'MISSED'}, {total / TARGET_S:.2f} of the budget)")
    print(f"  CPU time of this process for the full report: {cpu:.2f} s (median of {REPEATS}; on an idle machine the "
          f"wall time is at most this plus I/O waits; load average during the run: {os.getloadavg()[0]:.1f})")
    print(f"  read records: {read:.2f} s, analysis: {analyse:.2f} s (of which ratings: {ratings:.2f} s), "
          f"render HTML/MD/JSON: {render:.2f} s")
    print(f"anchor, json.loads of every line: {anchor:.2f} s; full report / anchor = {total / anchor:.1f}x")


if __name__ == "__main__":
    run()
