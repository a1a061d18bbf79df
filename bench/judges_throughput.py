"""Judging against a GPU-like server: judges.run's in-flight pool vs arena-hard-auto's thread pool.

Starts a latency-simulating OpenAI-compatible judge (tests/judge_sim.py: each answer after
a lognormal delay, median 1 s, drawn from a hash of the request, so a judgment waits as
long for every client; any number of requests at once) and, in one run, times on the same
judgments (PandaLM test-set pairs, both orders, prometheus-relative, generate mode):

* the anchor: a 64-worker thread pool sending one chat request per judge prompt, as
  arena-hard-auto's gen_judgment does (``ThreadPoolExecutor(max_workers=parallel)``),
  reading the verdict and appending each judgment to a JSONL file;
* ``python -m judges.run --concurrency 64`` and ``--concurrency 256`` (in-process
  ``judges.run.main``: the CLI whole, manifest and all, into a fresh OUT each time).

Variants are interleaved so drift hits all alike; medians are reported with the server's
largest number of requests in flight during each variant.

Goal: --concurrency 64 no slower than 1.1x the pool; 256 in flight faster than the pool.

Usage: python bench/judges_throughput.py [--pairs 150] [--repeats 3] [--median 1.0]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `python bench/x.py` puts bench/ first on sys.path; the repository root must win, and the
# simulated judge lives with the tests that share it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))

import httpx  # noqa: E402

from analysis.importers.pandalm import pairs_to_judge  # noqa: E402
from pairlab.records import Pair, write_records  # noqa: E402
from judges import run as judges_run  # noqa: E402
from judges.runner import JudgeConfig, plan_chunks  # noqa: E402
from judges.templates import BUILTIN  # noqa: E402
from judge_sim import sim_server, stats  # noqa: E402

PANDALM = ROOT.parent / "shared" / "data" / "pandalm" / "testset-v1.json"
TEMPLATE = BUILTIN["prometheus-relative"]
VERDICT = re.compile(r"\[RESULT\]\s*([AB])")


def load_pairs(n: int) -> list[Pair]:
    try:
        return pairs_to_judge(PANDALM, n)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def anchor(url: str, pairs: list[Pair], out: Path, workers: int = 64) -> int:
    """arena-hard-auto's way: one chat request per judgment on a thread pool, each result
    appended to a JSONL file as it comes back."""
    config = JudgeConfig(template=TEMPLATE, mode="generate")
    jobs = [(t.pair.pair_id, t.order, t.prompts[0]) for c in plan_chunks(pairs, config) for t in c]
    client = httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_connections=None))

    def judge(job):
        pair_id, order, messages = job
        body = {"model": "sim-judge", "messages": messages, "max_tokens": 256, "temperature": 0.0, "top_p": 1.0,
                "seed": 0}
        text = client.post("/chat/completions", json=body).json()["choices"][0]["message"]["content"]
        found = VERDICT.findall(text)
        return {"pair_id": pair_id, "order": order, "verdict": found[-1] if found else None, "raw": text}

    with open(out, "w", encoding="utf-8") as fh, ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(judge, job) for job in jobs]
        for future in futures:  # arena-hard writes as it collects; order of collection is submission order
            fh.write(json.dumps(future.result()) + "\n")
            fh.flush()
    client.close()
    return len(jobs)


def ours(url: str, pairs_file: Path, out: Path, concurrency: int) -> int:
    code = judges_run.main(["--pairs", str(pairs_file), "--judge", f"openai:{url}#sim-judge", "--out", str(out),
                            "--mode", "generate", "--concurrency", str(concurrency), "--quiet"])
    assert code == 0, f"judges.run exited {code}"
    return sum(1 for _ in open(out, encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=150, help="pairs; both orders: 2x judgments (default 150)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--median", type=float, default=1.0, help="server latency median, s")
    args = parser.parse_args()
    pairs = load_pairs(args.pairs)
    variants = {"pool-64 (arena-hard-auto)": None, "judges.run --concurrency 64": 64,
                "judges.run --concurrency 256": 256}
    times = {name: [] for name in variants}
    peaks = {name: 0 for name in variants}
    with tempfile.TemporaryDirectory() as tmp, sim_server("--median", str(args.median)) as url:
        tmp = Path(tmp)
        pairs_file = tmp / "pairs.jsonl"
        write_records(pairs_file, pairs)
        import logging

        logging.disable(logging.WARNING)
        for rep in range(args.repeats):
            for i, (name, concurrency) in enumerate(variants.items()):
                out = tmp / f"{rep}-{i}.jsonl"
                stats(url, reset=True)
                start = time.perf_counter()
                n = anchor(url, pairs, out) if concurrency is None else ours(url, pairs_file, out, concurrency)
                times[name].append(time.perf_counter() - start)
                peaks[name] = max(peaks[name], stats(url)["max_in_flight"])
                assert n == 2 * len(pairs), (name, n)
    base = statistics.median(times["pool-64 (arena-hard-auto)"])
    print(f"{2 * len(pairs)} judgments, server latency lognormal median {args.median} s, {args.repeats} repeats")
    print(f"{'variant':<32}{'median s':>10}{'verdicts/s':>12}{'vs pool':>9}{'max in flight':>15}")
    for name in variants:
        t = statistics.median(times[name])
        print(f"{name:<32}{t:>10.2f}{2 * len(pairs) / t:>12.1f}{t / base:>8.2f}x{peaks[name]:>15}")
    r64 = statistics.median(times["judges.run --concurrency 64"]) / base
    r256 = statistics.median(times["judges.run --concurrency 256"]) / base
    print(f"goal --concurrency 64 <= 1.1x pool: {'met' if r64 <= 1.1 else 'MISSED'} ({r64:.2f}x); "
          f"256 in flight faster than pool: {'met' if r256 < 1.0 else 'MISSED'} ({r256:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
