"""Vote hygiene: caps and the anomalous-voter test flag votes, on SQLite and PostgreSQL;
the leaderboard and the export honour the flags and nothing is deleted."""

import dataclasses
import itertools
import json
import random

import numpy as np
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.export import main as export_main
from arena.hygiene import anomalous_voters, sequential_fisher, vote_pvalues
from arena.leaderboard import compute
from arena.store import VoteStore
from pairlab.records import read_records
from test_arena_store import write_pairs

STRENGTH = {"strong": 1.0, "middle": 0.0, "weak": -1.0}


def synthetic_votes(n_honest=30, votes_each=40, adversaries=(), seed=0, hard_pairs_only=()):
    """Votes drawn from a Bradley-Terry model with STRENGTH; adversaries always pick the weaker side."""
    rng = random.Random(seed)
    models = list(STRENGTH)
    rows = []
    voters = [f"h{i}" for i in range(n_honest)] + list(adversaries) + list(hard_pairs_only)
    for _ in range(votes_each):
        for voter in rng.sample(voters, len(voters)):
            a, b = rng.sample(["strong", "weak"] if voter in hard_pairs_only else models, 2)
            p_a = 1 / (1 + np.exp(STRENGTH[b] - STRENGTH[a]))
            if voter in adversaries:
                winner = "model_a" if STRENGTH[a] < STRENGTH[b] else "model_b"
            else:
                winner = "model_a" if rng.random() < p_a else "model_b"
            rows.append((voter, a, b, winner))
    return [list(col) for col in zip(*rows)]


def test_a_voter_who_always_picks_the_weaker_model_is_flagged_and_honest_ones_are_not():
    voters, a, b, w = synthetic_votes(adversaries=("troll",))
    assert anomalous_voters(voters, a, b, w) == {"troll"}


def test_no_planted_effect_flags_nobody_even_on_one_sided_pairs():
    # the confounder: a voter who only sees the most lopsided pair, and so mostly picks
    # one side, votes exactly as the ratings predict and must not be flagged
    voters, a, b, w = synthetic_votes(seed=3, hard_pairs_only=("lopsided",))
    assert anomalous_voters(voters, a, b, w) == set()


def test_fisher_test_has_its_level_under_the_null():
    rng = np.random.default_rng(0)
    rejections = sum(sequential_fisher(rng.uniform(size=80), alpha=0.05) for _ in range(2000))
    assert rejections / 2000 <= 0.05 + 0.015
    assert sequential_fisher([0.01] * 10, alpha=0.05)


def test_vote_pvalues_are_uniform_when_votes_follow_the_ratings():
    rng = np.random.default_rng(1)
    strength = {"x": 1.0, "y": 0.0}
    p_x = 1 / (1 + np.exp(-1.0))
    winners = np.where(rng.uniform(size=20_000) < p_x, "model_a", "model_b")
    p = vote_pvalues(strength, ["x"] * len(winners), ["y"] * len(winners), winners)
    assert np.histogram(p, bins=10, range=(0, 1))[0] == pytest.approx([2000] * 10, rel=0.1)
    underdog = p[winners == "model_b"]
    assert underdog.max() <= 1 - p_x  # a vote for the underdog is the more extreme side


_ids = itertools.count()


def open_battle(arena, voter, prompt=None):
    """A battle as if its prompt were typed (mode "battle", rated), with a prompt-set pair's answers."""
    served = arena.serve_pair(voter)
    battle = dataclasses.replace(served, id=f"open-{next(_ids)}", mode="battle")
    battle.turns = [dataclasses.replace(served.turns[0], prompt=prompt or f"a prompt of its own {battle.id}")]
    arena.store.save_battle(battle.to_payload())
    return battle


@pytest.fixture
def arena(tmp_path, store_url):
    config = ArenaConfig(db=store_url, pairs=write_pairs(tmp_path / "pairs.jsonl"), rate_limit=10_000,
                         daily_vote_cap=5, max_votes_per_prompt=2)
    store = VoteStore(store_url)
    yield Arena(config, store, {})
    store.close()


def test_daily_cap_flags_votes_over_it_and_keeps_them(arena, tmp_path):
    records = [arena.vote("busy", open_battle(arena, "busy").id, "a") for _ in range(7)]
    assert [r.meta.get("flags", []) for r in records] == [[]] * 5 + [["daily_cap"]] * 2
    arena.vote("other", open_battle(arena, "other").id, "a")  # another voter has their own cap
    assert arena.store.count_votes() == 8
    assert len(arena.store.records(ratable=True)) == 6
    assert "6 rated votes; 2 more stored" in compute(arena.store, bootstrap=0).summary
    out = tmp_path / "all.jsonl"
    assert export_main(["--db", arena.store.url, "--out", str(out)]) == 0
    exported = read_records(out)
    assert len(exported) == 8 and sum(r.meta.get("flags") == ["daily_cap"] for r in exported) == 2
    assert export_main(["--db", arena.store.url, "--out", str(out), "--ratable-only"]) == 0
    assert len(read_records(out)) == 6
    fc = tmp_path / "fc.json"
    export_main(["--db", arena.store.url, "--out", str(fc), "--format", "fastchat"])
    assert sorted(len(b["flags"]) for b in json.loads(fc.read_text())) == [0] * 6 + [1] * 2


def test_repeated_typed_prompt_is_capped_in_the_leaderboard(arena):
    ids = []
    for i in range(4):  # the same typed prompt, up to case and spaces, four times
        battle = open_battle(arena, f"v{i}", "  Tell me a JOKE " if i % 2 else "tell me a joke")
        ids.append(arena.vote(f"v{i}", battle.id, "a").meta.get("flags", []))
    assert ids == [[], [], ["duplicate_prompt"], ["duplicate_prompt"]]
    # prompt-set pairs repeat by design and are not capped this way
    for i in range(4):
        assert not arena.vote("ps", arena.serve_pair("ps").id, "a").meta.get("flags")


def test_anomalous_voter_flag_is_stored_and_honoured(arena):
    arena.config = dataclasses.replace(arena.config, daily_vote_cap=0)
    rng = random.Random(1)
    favourite = arena.pairs[0].model_a
    for i in range(200):
        voter = "troll" if i % 5 == 0 else f"honest{i % 7}"
        battle = open_battle(arena, voter)
        picks_favourite = rng.random() < 0.8 if voter != "troll" else False
        left_is_favourite = battle.models[0] == favourite
        arena.vote(voter, battle.id, "a" if picks_favourite == left_is_favourite else "b")
    troll = arena.store.hash_id("troll")
    board = compute(arena.store, bootstrap=0)
    assert board.models["votes"].sum() == 2 * 160  # the troll's 40 votes are set aside
    flagged = [r for r in arena.store.records() if r.meta.get("flags")]
    assert len(flagged) == 40 and {r.meta["voter"] for r in flagged} == {troll}
    assert arena.store.count_votes() == 200


def test_a_store_from_before_hygiene_gets_the_new_columns_and_keeps_its_votes(store_url):
    from sqlalchemy import MetaData, Table, create_engine, insert

    from arena.store import _ADDED, battles, settings, votes

    old = MetaData()
    for table in (settings, battles):
        table.to_metadata(old)
    Table("votes", old, *[c._copy() for c in votes.columns if c.name not in _ADDED["votes"]])
    engine = create_engine(store_url)
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(old.tables["battles"]).values(id="b", session="s", mode="battle", anony=True,
                                                          model_a="x", model_b="y", created=0, updated=0,
                                                          payload={}))
        conn.execute(insert(old.tables["votes"]).values(
            battle_id="b", voter="s", judge="human:s", mode="battle", anony=True, identity_leak=False,
            winner="tie", model_a="x", model_b="y", pair_id="p", tstamp=1.0,
            record={"pair_id": "p", "prompt": "q", "model_a": "x", "model_b": "y", "response_a": "1",
                    "response_b": "2", "winner": "tie", "judge": "human:s"}))
    engine.dispose()
    store = VoteStore(store_url)
    assert [r.pair_id for r in store.records(ratable=True)] == ["p"]  # counted by default
    store.close()
