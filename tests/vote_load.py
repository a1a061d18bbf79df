"""Many voters over HTTP against real app processes, for the load and crash tests.

Each voter keeps its own session cookie. A vote whose answer was lost (the server went
down) is retried with the same battle id until a server says "stored" or "already
voted": so every vote ends up known. With several replicas, a voter whose replica is down
carries on on the next one, which knows its battles from the shared store.
"""

import threading
import time

import httpx
from support import wait_until

VOTERS, VOTES, KILL_AFTER = 50, 1000, 300


class Ledger:
    """What the voters know: claimed vote slots and how each vote ended."""

    def __init__(self):
        self.lock = threading.Lock()
        self.claimed = 0
        self.acked: list[str] = []
        self.already: list[str] = []
        self.errors: list[str] = []
        self.failovers = 0

    def claim(self) -> bool:
        """Claim one of the VOTES vote slots; False when all are taken."""
        with self.lock:
            if self.claimed >= VOTES:
                return False
            self.claimed += 1
            return True


def voter(urls: list[str], ledger: Ledger, stop: threading.Event, index: int, switch: bool = True) -> None:
    """One voter (one cookie) on its home replica ``urls[index % len(urls)]``; when that one
    is down, on the next. ``switch``: vote on another replica than the one that served."""
    cookies = httpx.Cookies()
    home = index % len(urls)
    # One client per replica, kept (its pool drops a dead connection by itself): building
    # an httpx client costs ~30 ms of CPU (its SSL context), and one per request starved
    # the servers on a 2-core machine.
    clients: dict[int, httpx.Client] = {}

    def post(path: str, body: dict | None = None) -> httpx.Response | None:
        nonlocal home
        if home not in clients:
            clients[home] = httpx.Client(base_url=urls[home], timeout=10)
        client = clients[home]
        try:
            client.cookies.update(cookies)  # the session may have been issued by another replica
            response = client.post(path, json=body)
            cookies.update(client.cookies)
            return response
        except httpx.TransportError:
            with ledger.lock:
                ledger.failovers += 1
            home = (home + 1) % len(urls)  # another replica knows this voter's battles too
            # Back off: 50 voters retrying at once must leave the restarting replica CPU to start.
            time.sleep(0.25)
            return None

    try:
        while ledger.claim() and not stop.is_set():
            battle = None
            while battle is None and not stop.is_set():
                response = post("/arena-api/battles")
                if response is not None:
                    if response.status_code != 200:
                        ledger.errors.append(f"battle: {response.status_code} {response.text}")
                        return
                    battle = response.json()
            body = {"battle_id": battle["battle_id"], "choice": ("a", "b", "tie", "bothbad")[index % 4]}
            if switch:
                home = (home + 1) % len(urls)  # vote on a replica that did not serve the battle
            while not stop.is_set():
                response = post("/arena-api/votes", body)
                if response is None:  # outcome unknown: ask again with the same battle
                    continue
                with ledger.lock:
                    if response.status_code == 200:
                        ledger.acked.append(battle["battle_id"])
                    elif response.status_code == 409 and "already voted" in response.json()["error"]:
                        ledger.already.append(battle["battle_id"])
                    else:
                        ledger.errors.append(f"vote: {response.status_code} {response.text}")
                break
    finally:
        for client in clients.values():
            client.close()


def vote_through_a_sigkill(servers: list, victim, timeout_s: float = 300) -> tuple[Ledger, set[str]]:
    """VOTERS voters cast VOTES votes over ``servers`` (started); ``victim`` is SIGKILLed
    after KILL_AFTER acknowledged votes and restarted. Returns (ledger, votes acked before the kill)."""
    ledger, stop = Ledger(), threading.Event()
    urls = [server.url for server in servers]
    threads = [threading.Thread(target=voter, args=(urls, ledger, stop, i)) for i in range(VOTERS)]
    try:
        for thread in threads:
            thread.start()
        wait_until(lambda: len(ledger.acked) >= KILL_AFTER, timeout_s, interval=0.01,
                   what=f"{KILL_AFTER} acknowledged votes (errors so far: {ledger.errors[:3]})")
        victim.kill()
        with ledger.lock:
            acked_before_kill = set(ledger.acked)
        victim.start()
        for thread in threads:
            thread.join(timeout=timeout_s)
        assert not any(t.is_alive() for t in threads), "voters did not finish"
    finally:
        stop.set()
    assert ledger.errors == []
    return ledger, acked_before_kill


def assert_each_vote_once(stored: list[str], ledger: Ledger, acked_before_kill: set[str]) -> None:
    assert len(stored) == VOTES
    assert len(set(stored)) == VOTES  # none twice
    assert acked_before_kill <= set(stored)  # nothing acknowledged was lost to the SIGKILL
    assert set(stored) == set(ledger.acked) | set(ledger.already)
    assert len(ledger.acked) + len(ledger.already) == VOTES
