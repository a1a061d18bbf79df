"""Voters and one flooding client against a running app: what the flood load test and
``bench/arena_flood.py`` measure.

The app must trust 127.0.0.1 as its proxy (``trusted_proxies``), so that each voter and
the flooder get an address of their own from ``X-Forwarded-For``. Each voter, every
``cycle_s`` (10 s: reading two answers takes a person longer): loads the page, takes a
prompt-set battle and votes on it, timing each. The
flooder stays within its limits: three sessions on one address, open-prompt battles it
hangs up on after 3 s, page events through the "simple" API and uploads, as fast as its
limits let it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import httpx
import numpy as np

KINDS = ("page", "battle", "vote")
FLOOD_ADDRESS = "10.66.0.1"


@dataclass
class Load:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    acked: list[str] = field(default_factory=list)  # battle ids of acknowledged votes
    errors: list[str] = field(default_factory=list)
    flood: dict[str, int] = field(default_factory=dict)  # outcome -> count
    lock: threading.Lock = field(default_factory=threading.Lock)

    def p99(self) -> dict[str, float]:
        return {k: float(np.percentile(v, 99)) if v else float("nan") for k, v in self.latencies.items()}

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
                load.acked.append(battle_id)
            time.sleep(max(0.0, cycle_s - (time.monotonic() - began)))


def flooder(url: str, load: Load, until: float, threads: int = 8) -> None:
    """One address, three sessions, every limit respected by the server: hung-up battles,
    page events by the simple API route, uploads."""
    headers = {"X-Forwarded-For": FLOOD_ADDRESS}
    cookies = []
    while len(cookies) < 3 and time.monotonic() < until:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            try:
                client.get("/")
            except httpx.HTTPError:
                continue
            cookies.append(client.cookies)
    if len(cookies) < 3:
        load.count("no sessions")
        return

    def battles(i: int) -> None:
        with httpx.Client(base_url=url, headers=headers, cookies=cookies[i % 3], timeout=3) as client:
            while time.monotonic() < until:
                try:
                    code = client.post("/arena-api/battles", json={"prompt": f"Write a long story, take {i}."}
                                       ).status_code
                    load.count(f"battle {code}")
                    if code == 429:
                        time.sleep(0.2)  # refused at once: try again shortly, as a flood would
                except httpx.TimeoutException:
                    load.count("battle hung up")
                except httpx.HTTPError as exc:
                    load.count(f"battle {type(exc).__name__}")

    def events() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            while time.monotonic() < until:
                try:
                    code = client.post("/gradio_api/call/on_next", json={"data": []}).status_code
                    load.count(f"event {code}")
                    upload = client.post("/gradio_api/upload", files={"files": ("a.txt", b"y" * 100_000)})
                    load.count(f"upload {upload.status_code}")
                except httpx.HTTPError as exc:
                    load.count(f"event {type(exc).__name__}")
                time.sleep(0.2)

    workers = [threading.Thread(target=battles, args=(i,)) for i in range(threads)]
    workers.append(threading.Thread(target=events))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def run(url: str, seconds: float, voters: int = 50, flood: bool = True, cycle_s: float = 10.0) -> Load:
    """``voters`` voters (and the flooder) for ``seconds``; returns what they saw."""
    load = Load()
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=voter, args=(url, i, load, until, cycle_s)) for i in range(voters)]
    if flood:
        threads.append(threading.Thread(target=flooder, args=(url, load, until)))
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
