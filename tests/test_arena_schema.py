"""Replicas that start together on an empty store all serve: the schema is created and
upgraded under a lock (arena.store._create_schema). Real PostgreSQL (a throwaway cluster)
and real SQLite files; each replica is a VoteStore opened in its own thread, all released at
once by a barrier, as an orchestrator starts replicas together.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import JSON, Boolean, Column, Float, ForeignKey, Integer, MetaData, String, Table, create_engine, insert

from arena.store import VoteStore

REPLICAS = 3
ROUNDS = 4  # fresh stores raced in turn: one round can miss the race by luck


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


def _first_release_schema(url: str) -> None:
    """The tables as the first release made them (no hygiene, tab or closed columns), with a vote in them."""
    old = MetaData()
    Table("arena_settings", old, Column("key", String(64), primary_key=True),
          Column("value", String(256), nullable=False))
    battles = Table("battles", old, Column("id", String(64), primary_key=True),
                    Column("session", String(32), nullable=False), Column("mode", String(16), nullable=False),
                    Column("anony", Boolean, nullable=False), Column("model_a", String(256), nullable=False),
                    Column("model_b", String(256), nullable=False), Column("created", Float, nullable=False),
                    Column("updated", Float, nullable=False), Column("payload", JSON, nullable=False))
    votes = Table("votes", old, Column("id", Integer, primary_key=True, autoincrement=True),
                  Column("battle_id", String(64), ForeignKey("battles.id"), nullable=False, unique=True),
                  *(Column(c, String(256), nullable=False) for c in ("voter", "judge", "mode", "winner", "model_a",
                                                                      "model_b", "pair_id")),
                  Column("record", JSON, nullable=False),
                  Column("anony", Boolean, nullable=False), Column("identity_leak", Boolean, nullable=False),
                  Column("tstamp", Float, nullable=False))
    engine = create_engine(url)
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(battles).values(id="old", session="s", mode="battle", anony=True, model_a="x",
                                            model_b="y", created=1.0, updated=1.0, payload={"id": "old", "session": "s", "mode": "battle", "anony": True,
                                                     "models": ["x", "y"], "turns": []}))
        conn.execute(insert(votes).values(battle_id="old", voter="v", judge="human:v", mode="battle", winner="model_a",
                                          model_a="x", model_b="y", pair_id="p", record={}, anony=True,
                                          identity_leak=False, tstamp=1.0))
    engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_replicas_started_at_once_upgrade_an_older_store_once_and_keep_its_votes(kind, tmp_path, request):
    for i in range(ROUNDS):
        url = _empty_store(kind, tmp_path, i, lambda: request.getfixturevalue("pg_cluster"))
        _first_release_schema(url)
        outcomes = _open_together(url)
        survivors = [o for o in outcomes if not isinstance(o, BaseException)]
        if survivors:
            assert survivors[0].count_votes() == 1  # the old vote is still there, under the new columns
        _check_all_serve(outcomes)
