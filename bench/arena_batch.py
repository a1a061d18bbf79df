"""Battles at once through the arena's real battle path: does the arena batch across visitors?

A real app process on the shipped ``data/arena.toml`` (the embedded SmolLM2 and Gemma 3) answers
``POST /arena-api/battles`` from 8 client addresses on loopback (127.0.0.2 ... 127.0.0.9), all at
once, and the same 8 prompts one battle at a time from one address (the anchor: the same input,
answered alone). Printed, medians over the rounds: answer characters per second in all (both panes
of every battle) with 8 at once against the 8 one at a time, and the time of the slowest of the 8
against the mean time of a battle alone. Goals: >= 3x the characters per second, the slowest
within 4x.

    python bench/arena_batch.py [--rounds 3] [--max-new-tokens N] [--app-root DIR]

``--max-new-tokens`` shortens the answers (a copy of the config with that one value changed);
``--app-root`` runs another checkout's ``app.py`` (e.g. main's, for the figure before).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]  # the app process helper lives with the tests

PROMPTS = ["Why is the sky blue?", "Give three tips for sleeping well.", "What is a prime number?",
           "Describe a cat in two sentences.", "How do plants make food?", "Name the planets of the solar system.",
           "What does a compiler do?", "Write a short poem about rain."]


def battles_at_once(url: str, prompts: list[str], timeout_s: float = 1800.0) -> list[dict]:
    """POST one battle per prompt, each from its own loopback address, all at once; each
    answer's JSON with ``elapsed`` (seconds from the common start) and ``address``."""
    import httpx

    results: list[dict | None] = [None] * len(prompts)
    start = threading.Barrier(len(prompts))

    def one(i: int) -> None:
        address = f"127.0.0.{i + 2}"
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(base_url=url, transport=transport, timeout=timeout_s) as client:
            start.wait()
            began = time.perf_counter()
            response = client.post("/arena-api/battles", json={"prompt": prompts[i]})
            results[i] = {**response.json(), "status": response.status_code,
                          "elapsed": time.perf_counter() - began, "address": address}

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def chars(result: dict) -> int:
    return len(result.get("response_a", "")) + len(result.get("response_b", ""))


def config_copy(workdir: Path, max_new_tokens: int | None, root: Path) -> Path:
    """The shipped config, or a copy of it (its relative paths made absolute) with a shorter cap."""
    shipped = root / "data" / "arena.toml"
    if max_new_tokens is None:
        return shipped
    text = shipped.read_text()
    for name in ("prompts.jsonl", "prompts_pairs.jsonl"):
        text = text.replace(f'"{name}"', f'"{root / "data" / name}"')
    text = text.replace("max_new_tokens = 160", f"max_new_tokens = {max_new_tokens}")
    copy = workdir / "arena.toml"
    copy.write_text(text)
    return copy


def main(argv: list[str] | None = None) -> int:
    from app_process import AppProcess

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--battles", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, help="shorter answers than the shipped config's")
    parser.add_argument("--app-root", type=Path, default=ROOT, help="the checkout whose app.py runs")
    args = parser.parse_args(argv)

    class App(AppProcess):
        def command(self) -> list[str]:
            return [sys.executable, str(args.app_root / "app.py"), "--config", str(self.config), "--db", self.db,
                    "--port", str(self.port)]

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        config = config_copy(workdir, args.max_new_tokens, args.app_root)
        app = App(config, f"sqlite:///{workdir / 'votes.db'}", workdir / "app.log")
        app.start(timeout=900)
        print(f"app: {args.app_root} on {config}; load before: {os.getloadavg()}")
        ratios_rate, ratios_slow = [], []
        try:
            for r in range(args.rounds):
                prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.battles)]
                alone = [battles_at_once(app.url, [p])[0] for p in prompts]
                many = battles_at_once(app.url, prompts)
                failed = [m for m in [*alone, *many] if m["status"] != 200]
                if failed:
                    print(f"round {r + 1}: {len(failed)} battles refused: {failed[0]}")
                    return 1
                alone_s = sum(a["elapsed"] for a in alone)
                rate_alone = sum(map(chars, alone)) / alone_s
                rate_many = sum(map(chars, many)) / max(m["elapsed"] for m in many)
                slowest = max(m["elapsed"] for m in many)
                ratios_rate.append(rate_many / rate_alone)
                ratios_slow.append(slowest / (alone_s / len(alone)))
                ends = ", ".join(f"{t:.0f}" for t in sorted(m["elapsed"] for m in many))
                print(f"round {r + 1}: one at a time {alone_s / len(alone):.1f} s a battle, {rate_alone:.1f} chars/s | "
                      f"{args.battles} at once finished at {ends} s, "
                      f"{rate_many:.1f} chars/s in all | load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            app.stop()
    rate, slow = statistics.median(ratios_rate), statistics.median(ratios_slow)
    print(f"median of {args.rounds}: {args.battles} at once give {rate:.2f}x the answer characters per second of one "
          f"at a time (goal >= 3x); the slowest takes {slow:.2f}x a battle alone (goal <= 4x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
