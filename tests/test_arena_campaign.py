"""The arena's labelling campaign: prompt-set mode serves the planner's picks and records
each vote's inclusion probability (real SQLite store, the project's own prompt-set pairs)."""

import json

from app_process import ROOT
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.sessions import Voter
from arena.store import VoteStore
from pairlab.records import read_pairs

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"


def _picks(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_campaign_serves_only_the_picks_and_records_their_inclusion_probability(tmp_path):
    pairs = read_pairs(PAIRS)
    chosen = {pairs[1].pair_id: 0.25, pairs[4].pair_id: 0.8}
    picks = _picks(tmp_path / "picks.jsonl", [{"pair_id": k, "inclusion_prob": v, "strategy": "active"}
                                               for k, v in chosen.items()])
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        arena = Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks, rate_limit=10_000), store, {})
        seen = set()
        for i in range(12):
            voter = Voter(f"voter-{i}")
            battle = arena.serve_pair(voter)
            record = arena.vote(voter, battle.id, "a")
            seen.add(record.pair_id)
            assert record.meta["inclusion_prob"] == chosen[record.pair_id]
        assert seen == set(chosen)  # both picks served, nothing else
    finally:
        store.close()


def test_campaign_refuses_picks_the_pairs_file_does_not_hold(tmp_path):
    picks = _picks(tmp_path / "picks.jsonl", [{"pair_id": "not-a-pair", "inclusion_prob": 0.5},
                                               {"pair_id": read_pairs(PAIRS)[0].pair_id, "inclusion_prob": 0.5}])
    store = VoteStore(f"sqlite:///{tmp_path / 'votes.db'}")
    try:
        with pytest.raises(ValueError, match="1 picks name pairs that the pairs file does not hold"):
            Arena(ArenaConfig(db=store.url, pairs=PAIRS, picks=picks), store, {})
    finally:
        store.close()
    with pytest.raises(ValueError, match="needs pairs"):
        ArenaConfig(picks=picks)
