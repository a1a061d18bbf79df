"""Replicas that start together on an empty store all serve: the schema is created and
upgraded under a lock (arena.store._create_schema). Real PostgreSQL (a throwaway cluster)
and real SQLite files; each replica is a VoteStore opened in its own thread, all released at
once by a barrier, as an orchestrator starts replicas together, and once as real app
processes. Stores that older arena code made (dumps in tests/data, made by that code) open
under this one, alone and by replicas started together.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
import sqlite3
import threading
import uuid

from app_process import ROOT, AppProcess
import httpx
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.store import VoteStore

REPLICAS = 3
ROUNDS = 4  # fresh stores raced in turn: one round can miss the race by luck
PAIRS = ROOT / "data" / "prompts_pairs.jsonl"
DATA = Path(__file__).parent / "data"
# Stores made by older code (tests/data/README.md): the first release, without the hygiene,
# tab and closed columns, and the last commit before the schema was made under a lock.
FIRST_RELEASE, BEFORE_LOCK = "6e57476", "b0db965"


def _empty_store(kind: str, tmp_path, i: int, pg_cluster_factory) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'votes{i}.db'}"
    return pg_cluster_factory().create_database()


def _open_together(url: str) -> list:
    """``REPLICAS`` stores opened at the same moment; each outcome is a store or the error raised."""
    barrier = threading.Barrier(REPLICAS)

    def start():
        barrier.wait()
        return VoteStore(url)

    with ThreadPoolExecutor(REPLICAS) as pool:
        futures = [pool.submit(start) for _ in range(REPLICAS)]
    return [f.exception() or f.result() for f in futures]


def _check_all_serve(outcomes: list) -> None:
    errors = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    stores = [o for o in outcomes if not isinstance(o, BaseException)]
    try:
        assert not errors, f"{len(errors)} of {REPLICAS} replicas failed to start: {errors[0][:300]}"
        assert len({s.secret("sessions") for s in stores}) == 1  # one salt: sessions valid on every replica
        for i, store in enumerate(stores):  # each replica writes, every other one reads it
            store.save_battle({"id": f"b{i}", "session": "s", "mode": "battle", "anony": True,
                               "models": ["x", "y"], "turns": []})
        for store in stores:
            assert all(store.load_battle(f"b{i}") is not None for i in range(REPLICAS))
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_replicas_started_at_once_on_an_empty_store_all_serve(kind, tmp_path, request):
    for i in range(ROUNDS):
        url = _empty_store(kind, tmp_path, i, lambda: request.getfixturevalue("pg_cluster"))
        _check_all_serve(_open_together(url))


@pytest.mark.process
def test_three_app_processes_started_at_once_on_an_empty_database_all_serve(pg_cluster, tmp_path):
    """Three ``app.py`` processes, as an orchestrator starts replicas, on a new PostgreSQL
    database; with no models configured they serve the prompt set, so no model loads."""
    url = pg_cluster.create_database()
    config = tmp_path / "arena.toml"
    config.write_text(f'[arena]\nmodels = []\npairs = "{PAIRS}"\n')
    replicas = [AppProcess(config, url, tmp_path / f"replica{i}.log") for i in range(REPLICAS)]
    try:
        with ThreadPoolExecutor(REPLICAS) as pool:
            started = [pool.submit(replica.start, 120) for replica in replicas]
        failed = [str(f.exception()) for f in started if f.exception() is not None]
        assert not failed, f"{len(failed)} of {REPLICAS} replicas did not start: {failed[0][-1500:]}"
        for i, replica in enumerate(replicas):  # each serves its page and a battle the next one takes a vote on
            with httpx.Client(base_url=replica.url, timeout=30) as client:
                assert client.get("/").status_code == 200
                battle = client.post("/arena-api/battles").json()
                cookies = client.cookies
            with httpx.Client(base_url=replicas[(i + 1) % REPLICAS].url, cookies=cookies, timeout=30) as client:
                voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
                assert voted.status_code == 200, voted.text
    finally:
        for replica in replicas:
            replica.stop()
    store = VoteStore(url)
    try:
        assert store.count_votes() == REPLICAS
    finally:
        store.close()


def _older_store(kind: str, commit: str, tmp_path, pg_cluster_factory) -> str:
    """A store made by the arena at ``commit`` (tests/data/README.md), loaded into a new SQLite
    file or PostgreSQL database: five votes, three on prompt-set pairs and two on open prompts."""
    if kind == "sqlite":
        path = tmp_path / f"votes-{uuid.uuid4().hex[:8]}.db"
        with closing(sqlite3.connect(path)) as conn:
            conn.executescript((DATA / f"arena_store_{commit}.sql").read_text())
        return f"sqlite:///{path}"
    cluster = pg_cluster_factory()
    url = cluster.create_database()
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname={url.rsplit('/', 1)[1]}") as conn:
        conn.execute((DATA / f"arena_store_{commit}.pg.sql").read_text())  # no parameters: a script of statements
    return url


OLDER_VOTES = ["model_a", "model_b", "tie", "model_a", "tie (bothbad)"]


@pytest.mark.parametrize("commit", [FIRST_RELEASE, BEFORE_LOCK])
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_older_code_made_opens_keeps_its_votes_and_takes_new_ones(kind, commit, tmp_path, request):
    url = _older_store(kind, commit, tmp_path, lambda: request.getfixturevalue("pg_cluster"))
    store = VoteStore(url)
    try:
        old = store.records()
        assert [r.winner for r in old] == OLDER_VOTES
        assert all(store.load_battle(r.meta["battle_id"])["turns"] for r in old)
        # the open-prompt votes still count in ratings; the prompt-set ones, as then, do not
        assert [r.meta["mode"] for r in store.records(ratable=True)] == ["battle", "battle"]
        arena = Arena(ArenaConfig(db=url, pairs=PAIRS), store, {})
        battle = arena.serve_pair("a-new-voter")
        assert arena.vote("a-new-voter", battle.id, "b").winner == "model_b"
        assert [r.winner for r in store.records()] == [*OLDER_VOTES, "model_b"]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_replicas_started_at_once_upgrade_an_older_store_once_and_keep_its_votes(kind, tmp_path, request):
    for _ in range(ROUNDS):
        url = _older_store(kind, FIRST_RELEASE, tmp_path, lambda: request.getfixturevalue("pg_cluster"))
        outcomes = _open_together(url)
        survivors = [o for o in outcomes if not isinstance(o, BaseException)]
        if survivors:
            assert survivors[0].count_votes() == len(OLDER_VOTES)  # kept under the new columns
        _check_all_serve(outcomes)
