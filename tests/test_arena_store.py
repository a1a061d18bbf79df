"""The vote store and the vote path on a real SQLite file: once, or refused with a message."""

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.errors import AlreadyVoted, NotReady, RateLimited, Refused, UnknownBattle
from arena.export import main as export_main
from arena.sessions import Voter
from arena.store import VoteStore
from pairlab.records import Pair, Record, make_pair_id, read_records, write_records
from support import run_module, wait_until

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def write_pairs(path: Path, n: int = 12, leak_every: int = 0) -> Path:
    pairs = []
    for i in range(n):
        ra = f"Answer one to question {i}."
        rb = "I am Gemma, made by Google." if leak_every and i % leak_every == 0 else f"Answer two, {i}."
        pairs.append(Pair(pair_id=make_pair_id(f"Question {i}?", ra, rb), prompt=f"Question {i}?",
                          model_a=MODELS[0], model_b=MODELS[1], response_a=ra, response_b=rb,
                          prompt_id=f"q{i}", category="test"))
    write_records(path, pairs)
    return path


@pytest.fixture
def arena(tmp_path, store_url):
    """An arena on a fresh store: every test using it runs on SQLite and on PostgreSQL."""
    config = ArenaConfig(db=store_url, pairs=write_pairs(tmp_path / "pairs.jsonl"), rate_limit=10_000)
    store = VoteStore(config.db)
    yield Arena(config, store, {})
    store.close()


def test_sqlite_file_is_in_wal_mode(tmp_path):
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    assert sqlite3.connect(tmp_path / "votes.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)
    store.close()


def test_a_vote_is_a_full_record_with_left_pane_as_model_a(arena, tmp_path):
    battle = arena.serve_pair("session-1")
    record = arena.vote("session-1", battle.id, "b")
    assert (record.model_a, record.model_b) == battle.models
    assert record.response_a == battle.turns[0].response_a
    assert record.winner == "model_b" and record.winner_model == battle.models[1]
    assert record.judge == f"human:{arena.store.hash_id('session-1')}" and record.judge_type == "human"
    assert "session-1" not in json.dumps(record.to_dict())  # only the hash is stored
    source = {p.pair_id: p for p in arena.pairs}[record.pair_id]  # the pair's own id is kept
    assert source.prompt == record.prompt
    assert record.meta["battle_id"] == battle.id and record.meta["anony"] is True
    assert record.meta["identity_leak"] is False and record.prompt_id == source.prompt_id
    assert record.family_a and record.family_b and record.tstamp >= record.meta["served_at"]
    with arena.store.engine.connect() as conn:
        row = conn.exec_driver_sql("SELECT battle_id, winner, record FROM votes").fetchall()
    assert [(r[0], r[1]) for r in row] == [(battle.id, "model_b")]
    stored = row[0][2] if isinstance(row[0][2], dict) else json.loads(row[0][2])
    assert Record.from_dict(stored) == record


def test_second_vote_unknown_battle_and_foreign_session_are_refused(arena):
    battle = arena.serve_pair("owner")
    arena.vote("owner", battle.id, "a")
    with pytest.raises(AlreadyVoted, match="already voted"):
        arena.vote("owner", battle.id, "b")
    other = arena.serve_pair("owner")
    with pytest.raises(UnknownBattle, match="not served to you"):
        arena.vote("intruder", other.id, "a")
    with pytest.raises(UnknownBattle):
        arena.vote("owner", "no-such-battle", "a")
    with pytest.raises(Refused, match="Unknown choice"):
        arena.vote("owner", other.id, "left")
    assert arena.store.count_votes() == 1


def test_a_battle_still_streaming_cannot_be_voted_on(arena):
    battle = arena.serve_pair("s")
    payload = battle.to_payload() | {"state": "streaming"}
    arena.store.save_battle(payload)
    with pytest.raises(NotReady, match="Wait until both answers"):
        arena.vote("s", battle.id, "a")
    assert arena.store.count_votes() == 0


def test_concurrent_votes_on_one_battle_store_exactly_one(arena):
    battle = arena.serve_pair("s")
    outcomes, lock = [], threading.Lock()

    def vote(choice):
        try:
            arena.vote("s", battle.id, choice)
            result = "stored"
        except AlreadyVoted:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=vote, args=("a" if i % 2 else "b",)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 19 + ["stored"]
    assert arena.store.count_votes() == 1


def test_many_voters_at_once_all_land_once(arena):
    battles = [(f"voter-{i}", arena.serve_pair(f"voter-{i}")) for i in range(100)]
    threads = [threading.Thread(target=arena.vote, args=(s, b.id, "tie")) for s, b in battles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = arena.store.records()
    assert len(records) == 100
    assert sorted(r.meta["battle_id"] for r in records) == sorted(b.id for _, b in battles)


def test_left_right_order_is_random_per_battle(arena):
    orders = {arena.serve_pair("s").models for _ in range(40)}
    assert orders == {MODELS, MODELS[::-1]}


def test_rate_limit_per_session(tmp_path, store_url):
    config = ArenaConfig(db=store_url, pairs=write_pairs(tmp_path / "p.jsonl"),
                         rate_limit=3, rate_window_s=60)
    store = VoteStore(config.db)
    arena = Arena(config, store, {})
    battle = arena.serve_pair("busy")
    arena.vote("busy", battle.id, "a")
    arena.serve_pair("busy")
    with pytest.raises(RateLimited, match="Too many requests"):
        arena.serve_pair("busy")
    arena.serve_pair("calm")  # other sessions are not affected
    store.close()


def test_identity_leak_is_flagged_and_not_ratable(tmp_path, store_url):
    config = ArenaConfig(db=store_url,
                         pairs=write_pairs(tmp_path / "p.jsonl", n=2, leak_every=2), rate_limit=100)
    store = VoteStore(config.db, prompt_set_rated=True)
    arena = Arena(config, store, {})
    seen = {}
    while len(seen) < 2:
        voter = Voter(f"s{len(store.records())}", authenticated=True)
        battle = arena.serve_pair(voter)
        record = arena.vote(voter, battle.id, "a")
        seen[record.prompt_id] = record
    assert seen["q0"].meta["identity_leak"] is True
    assert set(seen["q0"].meta["identity_leak_names"]["a"] + seen["q0"].meta["identity_leak_names"]["b"]) \
        == {"gemma", "google"}
    assert seen["q1"].meta["identity_leak"] is False
    ratable = store.records(ratable=True)
    assert ratable and all(r.prompt_id == "q1" for r in ratable)
    assert sum(c for *_, c in store.outcome_counts()) == len(ratable)
    store.close()


def test_votes_survive_reopening_the_store(tmp_path, store_url):
    url = store_url
    config = ArenaConfig(db=url, pairs=write_pairs(tmp_path / "p.jsonl"), rate_limit=100)
    store = VoteStore(url)
    arena = Arena(config, store, {})
    battle = arena.serve_pair("s")
    arena.vote("s", battle.id, "tie")
    store.close()
    reopened = VoteStore(url)
    assert [r.meta["battle_id"] for r in reopened.records()] == [battle.id]
    # the salt is stored: the same session hashes the same after a restart
    assert reopened.hash_id("s") == battle.session
    reopened.close()


def test_export_records_and_fastchat(arena, tmp_path):
    for _ in range(3):
        battle = arena.serve_pair("s")
        arena.vote("s", battle.id, "bothbad")
    db = arena.store.url
    assert export_main(["--db", db, "--out", str(tmp_path / "votes.jsonl")]) == 0
    records = read_records(tmp_path / "votes.jsonl")
    assert len(records) == 3 and {r.winner for r in records} == {"tie (bothbad)"}
    assert export_main(["--db", db, "--out", str(tmp_path / "fc.json"), "--format", "fastchat"]) == 0
    battles = json.loads((tmp_path / "fc.json").read_text())
    assert len(battles) == 3
    assert {"model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn", "anony",
            "tstamp"} <= set(battles[0])
    assert battles[0]["conversation_a"][-1] == {"role": "assistant", "content": records[0].response_a}


def test_export_refuses_a_missing_sqlite_file(tmp_path):
    with pytest.raises(SystemExit):
        export_main(["--db", str(tmp_path / "nothing.db"), "--out", str(tmp_path / "x.jsonl")])
    assert not (tmp_path / "nothing.db").exists()


def test_cli_help_documents_the_contract():
    done = run_module("arena.export", "--help", cwd=ROOT)
    assert done.returncode == 0
    out = done.stdout
    assert "--db" in out and "--out" in out and "records" in out and "fastchat" in out
    done = run_module("app.py", "--help", cwd=ROOT)
    assert done.returncode == 0
    out = done.stdout
    for flag in ("--config", "--db", "--host", "--port"):
        assert flag in out


def test_a_failing_write_in_a_group_commit_fails_alone(store_url):
    from sqlalchemy import insert, select

    from arena.store import settings

    store = VoteStore(store_url)
    gate = threading.Event()
    results = {}

    def submit(name, fn):
        try:
            results[name] = store._writer.submit(fn)
        except Exception as exc:
            results[name] = type(exc).__name__

    # Hold the writer so the next jobs queue up and are committed as one group.
    holding = threading.Event()
    holder = threading.Thread(target=submit, args=("hold", lambda conn: (holding.set(), gate.wait(10))))
    holder.start()
    assert holding.wait(10), "the writer never ran the holding job"
    def insert_key(i):
        def job(conn):
            conn.execute(insert(settings).values(key=f"k{i}", value="v"))
            return i
        return job

    jobs = {f"ok{i}": insert_key(i) for i in range(3)}
    jobs["dup"] = lambda conn: conn.execute(insert(settings).values(key="voter_salt", value="again"))
    threads = [threading.Thread(target=submit, args=item) for item in jobs.items()]
    for thread in threads:
        thread.start()
    wait_until(lambda: store._writer.jobs.qsize() == len(jobs), 10, what="the jobs queued behind the held writer")
    gate.set()
    for thread in [holder, *threads]:
        thread.join()
    assert results["dup"] == "IntegrityError"
    assert [results[f"ok{i}"] for i in range(3)] == [0, 1, 2]
    with store.engine.connect() as conn:
        keys = {k for (k,) in conn.execute(select(settings.c.key))}
    assert keys == {"voter_salt", "k0", "k1", "k2"}
    store.close()


def test_two_stores_on_one_database_act_as_one(tmp_path, store_url):
    """Two replicas' stores: one salt, a battle saved by one is voted via the other, once."""
    config = ArenaConfig(db=store_url, pairs=write_pairs(tmp_path / "p.jsonl"), rate_limit=10_000)
    stores = [VoteStore(store_url), VoteStore(store_url)]
    first, second = (Arena(config, s, {}) for s in stores)
    assert stores[0].hash_id("s") == stores[1].hash_id("s")
    battles = [first.serve_pair("s") for _ in range(30)]
    outcomes, lock = [], threading.Lock()

    def vote(arena, battle):
        try:
            arena.vote("s", battle.id, "a")
            result = "stored"
        except AlreadyVoted:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=vote, args=(arena, b)) for b in battles for arena in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 30 + ["stored"] * 30
    assert stores[1].count_votes() == 30
    assert sorted(r.meta["battle_id"] for r in stores[0].records()) == sorted(b.id for b in battles)
    for store in stores:
        store.close()
def test_a_closed_pages_battle_is_kept_for_the_grace_period(tmp_path):
    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'v.db'}", pairs=write_pairs(tmp_path / "p.jsonl"),
                         unload_grace_s=0.3)
    store = VoteStore(config.db)
    arena = Arena(config, store, {})
    page = Voter("token", "127.0.0.1", tab="tab-1")
    battle = arena.serve_pair(page)
    arena.forget(page, grace=True)  # the connection dropped ...
    assert arena.current(page, "prompt_set") is battle  # ... and came back within the grace period
    arena.forget(page, grace=True)
    # Waiting out the configured grace is the point here, so a sleep and not a poll: asking for
    # the page's battle is the page coming back, which would keep it.
    time.sleep(config.unload_grace_s + 0.1)
    assert arena.current(page, "prompt_set") is None  # gone for good after it
    assert arena.current(Voter("token", tab="tab-2"), "prompt_set") is None  # tabs are apart
    store.close()


def test_a_failed_insert_is_an_error_not_already_voted(arena, tmp_path):
    from sqlalchemy.exc import IntegrityError

    battle = arena.serve_pair("s")
    engine = arena.store.engine
    trigger = {  # a constraint violation on every insert into votes
        "sqlite": ["CREATE TRIGGER refuse BEFORE INSERT ON votes BEGIN SELECT RAISE(ABORT, 'no'); END"],
        "postgresql": ["CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no' "
                       "USING ERRCODE = '23514'; END $$ LANGUAGE plpgsql",
                       "CREATE TRIGGER refuse BEFORE INSERT ON votes FOR EACH ROW EXECUTE FUNCTION refuse()"],
    }[engine.dialect.name]
    with engine.begin() as conn:
        for statement in trigger:
            conn.exec_driver_sql(statement)
    with pytest.raises(IntegrityError):  # the vote was not stored: saying "already voted" would lie
        arena.vote("s", battle.id, "a")
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER refuse" + (" ON votes" if engine.dialect.name == "postgresql" else ""))
    assert arena.vote("s", battle.id, "a").winner == "model_a"
    with pytest.raises(AlreadyVoted):
        arena.vote("s", battle.id, "b")


@pytest.mark.parametrize("prompt_set_rated", [False, True])
def test_analysis_leaves_out_the_prompt_set_votes_the_leaderboard_leaves_out(tmp_path, store_url, prompt_set_rated):
    """One rule (pairlab.ratable) for the leaderboard's SQL and for analysis of exported records:
    without prompt_set_rated no prompt-set vote counts; with it, a logged-in voter's first
    vote on each pair only."""
    from analysis.frames import load_frame
    from analysis.importers import read_table
    from pairlab.ratable import ratable_mask
    from ratable_twin import ratable

    config = ArenaConfig(db=store_url, pairs=write_pairs(tmp_path / "p.jsonl", n=2), rate_limit=100)
    store = VoteStore(config.db, prompt_set_rated=prompt_set_rated)
    arena = Arena(config, store, {})
    for voter in (Voter("anon"), Voter("login", authenticated=True)):
        for _ in range(4):  # two pairs: each voter sees at least one of them twice
            battle = arena.serve_pair(voter)
            arena.vote(voter, battle.id, "a")
    everything, rated = store.records(), store.records(ratable=True)
    store.close()
    logged_in_pairs = {r.pair_id for r in everything if r.meta["voter"].startswith("u-")}
    assert len(everything) == 8 and len(rated) == (len(logged_in_pairs) if prompt_set_rated else 0)
    out = tmp_path / "votes.jsonl"
    write_records(out, everything)
    if prompt_set_rated:
        assert len(load_frame(out, prompt_set_rated=True)) == len(rated)
    else:
        assert len(load_frame(out)) == 0
        assert len(load_frame(out, include_prompt_set=True)) == len(everything)
    sql = [r.meta["battle_id"] for r in rated]
    assert [r.meta["battle_id"] for r, ok in zip(everything, ratable(everything, prompt_set_rated=prompt_set_rated))
            if ok] == sql
    mask = ratable_mask(read_table([out])[0], prompt_set_rated=prompt_set_rated)
    assert [r.meta["battle_id"] for r, ok in zip(everything, mask) if ok] == sql
