"""One flooding client against 50 voters: p99 of the voters' page, prompt-set battle and
vote, without and with the flood, against the real app (both embedded models loaded).

The flooder is one client on 16 loopback addresses hitting every route as fast as it is let
(see tests/flood_load.py), in two shapes: one request at a time per address, and the review's
shape, several requests in flight per address (``--in-flight``, default 4).
Target: every voter's p99 under 2 s with the flood, no vote lost, and the page's open-prompt
battle answered within seconds of the flood's end. Prints each p99, its ratio to the target
(< 1 meets it), the ratio of flood to no flood, and the requests per second the server answered
(its capacity under the flood's mix of routes).

    python bench/arena_flood.py [--seconds 60] [--voters 50] [--runs 3] [--in-flight 4]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the app process and flood helpers live with the tests

import flood_load as flood  # noqa: E402
from app_process import AppProcess  # noqa: E402

TARGET_S = 2.0
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase (default: %(default)s)")
    parser.add_argument("--voters", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3, help="runs of every phase; medians are printed "
                        "(default: %(default)s)")
    parser.add_argument("--in-flight", type=int, default=4, help="the review's shape: requests in flight per "
                        "flooding address (default: %(default)s)")
    args = parser.parse_args()
    phases = {"no flood": (False, 1), "flood, 1 in flight": (True, 1),
              f"flood, {args.in_flight} in flight": (True, args.in_flight)}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "arena.toml"
        config.write_text(flood.config_text(str(ROOT / "data" / "prompts_pairs.jsonl"), MODELS))
        db = Path(tmp) / "votes.db"
        results = {name: [] for name in phases}
        after = []
        with AppProcess(config, f"sqlite:///{db}", Path(tmp) / "app.log") as app:
            for run in range(args.runs):
                for name, (flooding, in_flight) in phases.items():
                    print(f"run {run + 1}/{args.runs}: {name} for {args.seconds:.0f} s ...", flush=True)
                    results[name].append(flood.run(app.url, args.seconds, voters=args.voters, flood=flooding,
                                                   in_flight=in_flight))
                    if flooding:
                        after.append(_answered_after_flood(app.url))
        stored = {row[0] for row in sqlite3.connect(db).execute("SELECT battle_id FROM votes")}
    print(f"{args.voters} voters, {args.seconds:.0f} s per phase, median of {args.runs} runs; p99 in seconds "
          f"(ratio to the {TARGET_S} s target)")
    calm = {kind: statistics.median(load.p99()[kind] for load in results["no flood"]) for kind in flood.KINDS}
    for name, loads in results.items():
        busy = {kind: statistics.median(load.p99()[kind] for load in loads) for kind in flood.KINDS}
        print(f"  {name}: " + "   ".join(f"{kind} {busy[kind]:6.3f} ({busy[kind] / TARGET_S:.2f}, "
                                         f"{busy[kind] / calm[kind]:.1f}x no flood)" for kind in flood.KINDS))
    for name, loads in results.items():
        worst = statistics.median(max(load.voter_p99(), default=float("nan")) for load in loads)
        over = [sum(p > TARGET_S for p in load.voter_p99()) for load in loads]
        lost = [len(set(load.acked) - stored) for load in loads]
        answered = statistics.median(load.answered() / args.seconds for load in loads)
        print(f"  {name}: worst voter's p99 {worst:.3f} s (median of runs), voters over {TARGET_S} s per run {over}, "
              f"votes acknowledged {[len(load.acked) for load in loads]}, lost {lost}, "
              f"voter errors {[len(load.errors) for load in loads]}, server answered {answered:.0f} requests/s"
              + (f" (first error: {next(e for load in loads for e in load.errors)})" if any(l.errors for l in loads)
                 else ""))
        outcomes: dict[str, int] = {}
        for load in loads:
            for outcome, n in load.flood.items():
                outcomes[outcome] = outcomes.get(outcome, 0) + n
        if outcomes:
            print(f"    flooder's outcomes (all runs): {dict(sorted(outcomes.items()))}")
    print(f"  an open-prompt battle on the page right after each flood: answered in {[f'{t:.1f}' for t in after]} s")


def _answered_after_flood(url: str) -> float:
    """Seconds until a visitor's open-prompt battle on the page (send, listening) is answered."""
    import httpx
    from arena_wire import GradioPage

    began = time.monotonic()
    with httpx.Client(base_url=url, headers={"X-Forwarded-For": "10.200.0.1"}, timeout=300) as client:
        client.get("/").raise_for_status()
        page = GradioPage(client)
        messages = page.click("send", ["Say hi."], timeout=300)
    if not (messages and messages[-1].get("msg") == "process_completed" and messages[-1].get("success")):
        raise RuntimeError(f"the visitor's battle was not answered: {messages[-1:]}")
    return time.monotonic() - began


if __name__ == "__main__":
    main()
