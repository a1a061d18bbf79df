"""Arena benchmark: time to first token of both panes, and vote-commit latency under load.

1. Both embedded models answer the same prompt at once, as in a battle (``Arena.stream``);
   time to first token per pane and until *both* panes show text (what the voter waits
   for). Target: both panes < 1 s at p50.
2. 50 concurrent voters against a real server process (prompt-set battles, canned
   answers): latency of ``POST /arena-api/votes`` (HTTP round trip, which includes the
   commit), and of ``Arena.vote`` in-process (the store's commit path alone). Target:
   p99 < 50 ms. Each voter reads its battle for a random 0-2 s (mean 1 s) before voting,
   which is still ~50 votes/s, far above a public arena's rate; the run with no reading
   time at all shows where the machine saturates (throughput and its queueing delay).

3. Votes per second at saturation (no reading time) and vote latency (reading ~1 s)
   with one and with two app replicas on one store, SQLite and PostgreSQL (a throwaway
   cluster, as the tests start), all in this one run; ratios are against one replica on
   SQLite. Voter ``i`` uses replica ``i mod N``, as a round-robin proxy would spread them.

Prints each number with its ratio to the target (< 1 meets it).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the app process and flood helpers live with the tests

from arena.battles import Arena  # noqa: E402
from arena.config import ArenaConfig  # noqa: E402
from arena.store import VoteStore  # noqa: E402
from pairlab.backends.base import GenerationParams  # noqa: E402

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"
TTFT_TARGET_S = 1.0
COMMIT_TARGET_S = 0.050
# Prompt-set battles only, and limits no benchmark voter reaches (they all share 127.0.0.1).
LOAD_CONFIG = (f'[arena]\nmodels = []\npairs = "{PAIRS}"\n[arena.rate_limit]\nactions = 1000000\n'
               'per_address = 1000000\nnew_sessions_per_address = 100000\nglobal = 1000000\n')


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: a reported p99 is a measured value)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def report(name: str, values: list[float], tail: int, target: float) -> None:
    median, high = statistics.median(values), percentile(values, tail)
    print(f"{name:<34} n={len(values):<5} median {median * 1000:7.1f} ms ({median / target:.2f}x target) | "
          f"p{tail} {high * 1000:7.1f} ms ({high / target:.2f}x target)")


def bench_first_token(battles: int, max_new_tokens: int, workdir: Path) -> None:
    from pairlab.models import get_model

    models = {name: get_model(name) for name in ("smollm2-135m-instruct", "gemma3-270m")}
    config = ArenaConfig(db=f"sqlite:///{workdir / 'ttft.db'}", rate_limit=10_000, global_rate_limit=10_000,
                         prompts=ROOT / "data" / "prompts.jsonl",
                         params=GenerationParams(max_new_tokens=max_new_tokens, temperature=0.7, top_p=0.9))
    store = VoteStore(config.db)
    arena = Arena(config, store, models)
    arena.warm_up()
    firsts = {"a": [], "b": [], "both": []}
    empty = 0
    for i in range(battles):
        battle = arena.start(f"bench-{i}", arena.prompts[i % len(arena.prompts)].prompt)
        for _ in arena.stream(battle):
            pass
        latency = battle.turns[-1].latency
        # A pane whose model stopped before any text is settled when its stream ends.
        a, b = (latency.get(f"ttft_{side}", latency[f"total_{side}"]) for side in "ab")
        empty += ("ttft_a" not in latency) + ("ttft_b" not in latency)
        firsts["a"].append(a)
        firsts["b"].append(b)
        firsts["both"].append(max(a, b))
    store.close()
    print(f"time to first token, both models streaming at once ({battles} battles, left/right random, "
          f"{empty} empty answers timed at their end):")
    report("  left pane (A)", firsts["a"], 95, TTFT_TARGET_S)
    report("  right pane (B)", firsts["b"], 95, TTFT_TARGET_S)
    report("  both panes showing text", firsts["both"], 95, TTFT_TARGET_S)


def voters(n_voters: int, n_votes: int, new_session, serve, vote, think_s: float) -> tuple[list[float], float]:
    """``n_voters`` threads, each with its own session: get a battle, read it for a random
    0..2*``think_s`` seconds, then time its vote. Returns (latencies, votes per second)."""
    latencies: list[float] = []
    lock = threading.Lock()
    left = [n_votes]

    def run(index: int) -> None:
        session = new_session(index)
        rng = random.Random(index)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            battle_id = serve(session)
            time.sleep(rng.uniform(0, 2 * think_s))
            start = time.perf_counter()
            vote(session, battle_id)
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_voters)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, n_votes / (time.perf_counter() - began)


def bench_votes(n_voters: int, n_votes: int, think_s: float, workdir: Path) -> None:
    import httpx

    from app_process import AppProcess

    # The models loaded above are millions of objects; without this, full collections in
    # this client process would be timed as the server's latency.
    gc.collect()
    gc.freeze()

    config = workdir / "arena.toml"
    config.write_text(LOAD_CONFIG)
    serve, vote = _http_calls()
    with AppProcess(config, f"sqlite:///{workdir / 'http.db'}", workdir / "app.log") as server:
        def new_client(index: int) -> httpx.Client:
            return httpx.Client(base_url=server.url, timeout=30)

        http_paced = voters(n_voters, n_votes, new_client, serve, vote, think_s)
        http_flat = voters(n_voters, n_votes, new_client, serve, vote, 0.0)

    store = VoteStore(f"sqlite:///{workdir / 'store.db'}")
    arena = Arena(ArenaConfig(db=store.url, pairs=PAIRS, rate_limit=1_000_000, global_rate_limit=1_000_000),
                  store, {})
    direct = voters(n_voters, n_votes, lambda i: f"voter-{i}", lambda session: arena.serve_pair(session).id,
                    lambda session, battle_id: arena.vote(session, battle_id, "a"), think_s)
    assert store.count_votes() == n_votes
    store.close()
    print(f"vote commit latency, {n_voters} concurrent voters, {n_votes} votes per run "
          "(SQLite WAL, synchronous=FULL, group commit):")
    for name, (latencies, rate) in ((f"HTTP, reading ~{think_s:g} s", http_paced),
                                    ("HTTP, no reading (saturated)", http_flat),
                                    (f"store only, reading ~{think_s:g} s", direct)):
        report(f"  {name}", latencies, 99, COMMIT_TARGET_S)
        print(f"  {'':<32} {rate:.0f} votes/s")


def _http_calls():
    import httpx

    def serve(client: httpx.Client) -> str:
        response = client.post("/arena-api/battles")
        response.raise_for_status()
        return response.json()["battle_id"]

    def vote(client: httpx.Client, battle_id: str) -> None:
        client.post("/arena-api/votes", json={"battle_id": battle_id, "choice": "a"}).raise_for_status()

    return serve, vote


def bench_replicas(n_voters: int, n_votes: int, think_s: float, workdir: Path) -> None:
    import httpx

    from pgcluster import PgCluster
    from app_process import AppProcess

    config = workdir / "replicas.toml"
    config.write_text(LOAD_CONFIG)
    serve, vote = _http_calls()
    rows = []
    with PgCluster() as cluster:
        for backend in ("sqlite", "postgresql"):
            for n in (1, 2):
                url = (f"sqlite:///{workdir / f'replicas-{n}.db'}" if backend == "sqlite"
                       else cluster.create_database())
                apps = [AppProcess(config, url, workdir / f"{backend}-{n}-{i}.log") for i in range(n)]
                try:
                    for app in apps:
                        app.start()

                    def new_client(index: int) -> httpx.Client:
                        return httpx.Client(base_url=apps[index % n].url, timeout=30)

                    flat = voters(n_voters, n_votes, new_client, serve, vote, 0.0)
                    paced = voters(n_voters, n_votes, new_client, serve, vote, think_s)
                finally:
                    for app in apps:
                        app.stop()
                rows.append((f"{backend}, {n} replica{'s' if n > 1 else ''}", flat, paced))
    base = rows[0][1][1]
    print(f"replicas: {n_voters} voters, {n_votes} votes per run; votes/s at saturation (no reading), "
          f"and vote latency with reading ~{think_s:g} s:")
    for name, (flat_lat, flat_rate), (paced_lat, _) in rows:
        print(f"  {name:<24} {flat_rate:6.0f} votes/s ({flat_rate / base:.2f}x sqlite, 1 replica) | "
              f"saturated p99 {percentile(flat_lat, 99) * 1000:7.1f} ms")
        report(f"  {name}, reading", paced_lat, 99, COMMIT_TARGET_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=20, help="battles timed for first tokens (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=8, help="tokens per answer (default: %(default)s)")
    parser.add_argument("--voters", type=int, default=50, help="concurrent voters (default: %(default)s)")
    parser.add_argument("--votes", type=int, default=1000, help="votes per run (default: %(default)s)")
    parser.add_argument("--think-s", type=float, default=1.0,
                        help="mean time a voter reads a battle before voting (default: %(default)s)")
    parser.add_argument("--only", choices=("ttft", "votes", "replicas"), action="append",
                        help="run only these parts (repeatable; default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-arena-") as tmp:
        workdir = Path(tmp)
        parts = args.only or ("ttft", "votes", "replicas")
        if "ttft" in parts:
            bench_first_token(args.battles, args.max_new_tokens, workdir)
        if "votes" in parts:
            bench_votes(args.voters, args.votes, args.think_s, workdir)
        if "replicas" in parts:
            bench_replicas(args.voters, args.votes, args.think_s, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
