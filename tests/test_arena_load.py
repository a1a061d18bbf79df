"""Load and crash test of the vote path: 50 voters, 1,000 votes, one SIGKILL mid-load.

The server is a real separate process serving prompt-set battles (canned answers, so
the load is on the vote path, not on the models). Each voter keeps its own session
cookie. A vote whose answer was lost to the crash is retried with the same battle id
until the server says either "stored" or "already voted": so every vote ends up known,
and the store must hold each acknowledged vote exactly once.
"""

import sqlite3
import threading
import time

import httpx
import pytest

from arena.process import ROOT, AppProcess

pytestmark = pytest.mark.slow

VOTERS = 50
VOTES = 1000
KILL_AFTER = 300
PAIRS = ROOT / "data" / "prompts_pairs.jsonl"  # the curated prompt set's pre-generated answers


class Ledger:
    """What the voters know: claimed vote slots and how each vote ended."""

    def __init__(self):
        self.lock = threading.Lock()
        self.claimed = 0
        self.acked: list[str] = []  # "stored" answers
        self.already: list[str] = []  # retried after the crash, had been stored before it
        self.errors: list[str] = []

    def claim(self) -> bool:
        with self.lock:
            if self.claimed >= VOTES:
                return False
            self.claimed += 1
            return True


def voter(url: str, ledger: Ledger, stop: threading.Event, index: int) -> None:
    with httpx.Client(base_url=url, timeout=10) as client:
        while ledger.claim() and not stop.is_set():
            battle = None
            while battle is None and not stop.is_set():
                try:
                    response = client.post("/arena-api/battles")
                    if response.status_code == 200:
                        battle = response.json()
                        continue
                    ledger.errors.append(f"battle: {response.status_code} {response.text}")
                    return
                except httpx.TransportError:  # server down: try again
                    time.sleep(0.2)
            body = {"battle_id": battle["battle_id"], "choice": ("a", "b", "tie", "bothbad")[index % 4]}
            while not stop.is_set():
                try:
                    response = client.post("/arena-api/votes", json=body)
                except httpx.TransportError:  # outcome unknown: ask again with the same battle
                    time.sleep(0.2)
                    continue
                with ledger.lock:
                    if response.status_code == 200:
                        ledger.acked.append(battle["battle_id"])
                    elif response.status_code == 409 and "already voted" in response.json()["error"]:
                        ledger.already.append(battle["battle_id"])
                    else:
                        ledger.errors.append(f"vote: {response.status_code} {response.text}")
                break


def test_thousand_votes_fifty_voters_and_a_sigkill(tmp_path):
    config = tmp_path / "arena.toml"
    config.write_text(f"""
[arena]
models = []
pairs = "{PAIRS}"
[arena.rate_limit]  # every voter is on 127.0.0.1, so the per-address limits must allow all 50
actions = 100000
per_address = 100000
new_sessions_per_address = 1000
global = 100000
""")
    db = tmp_path / "votes.db"
    server = AppProcess(config, f"sqlite:///{db}", tmp_path / "app.log").start()
    ledger, stop = Ledger(), threading.Event()
    threads = [threading.Thread(target=voter, args=(server.url, ledger, stop, i)) for i in range(VOTERS)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while len(ledger.acked) < KILL_AFTER and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(ledger.acked) >= KILL_AFTER, f"load too slow: {len(ledger.acked)} votes; {ledger.errors[:3]}"
        server.kill()
        with ledger.lock:
            acked_before_kill = set(ledger.acked)
        server.start()
        for thread in threads:
            thread.join(timeout=240)
        assert not any(t.is_alive() for t in threads), "voters did not finish"
    finally:
        stop.set()
        server.stop()

    assert ledger.errors == []
    rows = sqlite3.connect(db).execute("SELECT battle_id FROM votes").fetchall()
    stored = [battle_id for (battle_id,) in rows]
    assert len(stored) == VOTES
    assert len(set(stored)) == VOTES  # none twice
    assert acked_before_kill <= set(stored)  # nothing acknowledged was lost to the SIGKILL
    assert set(stored) == set(ledger.acked) | set(ledger.already)
    assert len(ledger.acked) + len(ledger.already) == VOTES
    print(f"acked before kill: {len(acked_before_kill)}; resolved by retry after restart: {len(ledger.already)}")
