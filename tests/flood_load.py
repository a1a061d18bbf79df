"""Voters and one flooding client against a running app: what the flood load test and
``bench/arena_flood.py`` measure.

The app must trust 127.0.0.1 as its proxy (``trusted_proxies``), so that each voter gets
an address of its own from ``X-Forwarded-For``. Each voter, every ``cycle_s`` (10 s:
reading two answers takes a person longer): loads the page, takes a prompt-set battle and
votes on it, timing each. The flooder is one client on 16 loopback addresses
(127.0.0.2-17, real peers the app does not trust as proxies), each of them, as fast as the
server lets it, one request at a time or several in flight: page loads, Gradio's info, OpenAPI and startup routes, stream posts,
send-button events it never listens to (a random session hash each), open-prompt battles
it hangs up on after 3 s, the "simple" API and uploads. Refused, it tries again shortly.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

import httpx
import numpy as np

KINDS = ("page", "battle", "vote")
FLOOD_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 18)]


@dataclass
class Load:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    by_voter: dict[int, list[float]] = field(default_factory=dict)  # every request's seconds, per voter
    acked: list[str] = field(default_factory=list)  # battle ids of acknowledged votes
    errors: list[str] = field(default_factory=list)
    flood: dict[str, int] = field(default_factory=dict)  # outcome -> count
    lock: threading.Lock = field(default_factory=threading.Lock)

    def p99(self) -> dict[str, float]:
        return {k: float(np.percentile(v, 99)) if v else float("nan") for k, v in self.latencies.items()}

    def voter_p99(self) -> list[float]:
        """Each voter's own p99 over all its requests."""
        return [float(np.percentile(v, 99)) for v in self.by_voter.values() if v]

    def answered(self) -> int:
        """Requests the server answered (any status; not the flooder's hang-ups and failed connections)."""
        return (sum(len(v) for v in self.latencies.values())
                + sum(n for outcome, n in self.flood.items() if outcome.split()[-1].isdigit()))

    def count(self, outcome: str) -> None:
        with self.lock:
            self.flood[outcome] = self.flood.get(outcome, 0) + 1


def voter(url: str, index: int, load: Load, until: float, cycle_s: float) -> None:
    headers = {"X-Forwarded-For": f"10.1.{index // 250}.{index % 250 + 1}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        # Spread the voters over the cycle, so they do not all arrive at once.
        time.sleep(cycle_s * (index % 50) / 50)
        while time.monotonic() < until:
            began = time.monotonic()
            try:
                timings = {}
                for kind in KINDS:
                    start = time.monotonic()
                    if kind == "page":
                        response = client.get("/")
                    elif kind == "battle":
                        response = client.post("/arena-api/battles")
                        battle_id = response.json().get("battle_id")
                    else:
                        response = client.post("/arena-api/votes", json={"battle_id": battle_id, "choice": "a"})
                    timings[kind] = time.monotonic() - start
                    if response.status_code != 200:
                        raise RuntimeError(f"{kind}: {response.status_code} {response.text[:200]}")
            except Exception as exc:  # recorded, and the voter stops: the load test fails on it
                with load.lock:
                    load.errors.append(f"voter {index}: {exc!r}")
                return
            with load.lock:
                for kind, seconds in timings.items():
                    load.latencies[kind].append(seconds)
                    load.by_voter.setdefault(index, []).append(seconds)
                load.acked.append(battle_id)
            time.sleep(max(0.0, cycle_s - (time.monotonic() - began)))


def flooder(url: str, load: Load, until: float, in_flight: int | tuple[int, ...] = 1) -> None:
    """One client on 16 addresses, every route, as fast as it is let, with ``in_flight`` requests
    at a time from each address (a browser keeps six connections to a host): one number for
    every address, or one per address in turn (``(1, 4)``: half send one at a time, half four)."""
    def from_address(address: str) -> None:
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(base_url=url, transport=transport, timeout=3) as client:
            while time.monotonic() < until:
                for kind, call in (
                        ("page", lambda: client.get("/")),
                        ("info", lambda: client.get("/gradio_api/info")),
                        ("openapi", lambda: client.get("/openapi.json")),
                        ("startup", lambda: client.get("/gradio_api/startup-events")),
                        ("stream", lambda: client.post(f"/gradio_api/stream/{secrets.token_hex(8)}")),
                        ("join", lambda: client.post("/gradio_api/queue/join", json={
                            "data": ["Write a long story."], "event_data": None, "fn_index": send,
                            "trigger_id": None, "session_hash": secrets.token_hex(6)})),
                        ("battle", lambda: client.post("/arena-api/battles", json={"prompt": "Write a long story."})),
                        ("call", lambda: client.post("/gradio_api/call/on_next", json={"data": []})),
                        ("upload", lambda: client.post("/gradio_api/upload", files={"files": ("a.txt", b"y" * 100_000)})),
                ):
                    if time.monotonic() >= until:
                        return
                    try:
                        code = call().status_code
                        load.count(f"{kind} {code}")
                        if code in (429, 503):
                            time.sleep(0.2)  # refused at once: try again shortly, as a flood would
                    except httpx.TimeoutException:
                        load.count(f"{kind} hung up")
                    except httpx.HTTPError as exc:
                        load.count(f"{kind} {type(exc).__name__}")
                        time.sleep(0.2)

    send = _send_fn(url)
    per_address = (in_flight,) if isinstance(in_flight, int) else in_flight
    workers = [threading.Thread(target=from_address, args=(a,))
               for k, a in enumerate(FLOOD_ADDRESSES) for _ in range(per_address[k % len(per_address)])]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _send_fn(url: str) -> int:
    """The send button's event id in the page's Gradio config."""
    with httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address=FLOOD_ADDRESSES[0]),
                      timeout=30) as client:
        config = client.get("/config").raise_for_status().json()
    send = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "send")
    return next(d["id"] for d in config["dependencies"] if [send, "click"] in [list(t) for t in d["targets"]])


def run(url: str, seconds: float, voters: int = 50, flood: bool = True, cycle_s: float = 10.0,
        in_flight: int | tuple[int, ...] = 1) -> Load:
    """``voters`` voters (and the flooder, ``in_flight`` requests at a time per address) for
    ``seconds``; returns what they saw."""
    load = Load()
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=voter, args=(url, i, load, until, cycle_s)) for i in range(voters)]
    if flood:
        threads.append(threading.Thread(target=flooder, args=(url, load, until, in_flight)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    return load


def config_text(pairs: str, models: tuple[str, ...], max_new_tokens: int = 96, extra: str = "") -> str:
    """An arena config for the flood: the client addresses come from X-Forwarded-For."""
    return (f'[arena]\nmodels = {list(models)!r}\npairs = "{pairs}"\n'.replace("'", '"') + extra
            + f"[arena.generation]\nmax_new_tokens = {max_new_tokens}\n"
            + '[arena.rate_limit]\nactions = 60\ntrusted_proxies = ["127.0.0.1"]\n')
