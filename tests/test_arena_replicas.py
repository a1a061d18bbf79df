"""Stateless replicas: battle and session state live in the store, so any replica can
continue, regenerate or vote on a battle another one served. Real models, real
PostgreSQL (a throwaway cluster), real app processes.
"""

from app_process import ROOT, AppProcess
import httpx
import pytest

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.errors import AlreadyVoted, NotReady, Refused
from arena.store import VoteStore
from pairlab.backends.base import GenerationParams
from vote_load import assert_each_vote_once, vote_through_a_sigkill

pytestmark = pytest.mark.process
PAIRS = ROOT / "data" / "prompts_pairs.jsonl"


def test_a_battle_served_by_one_replica_is_continued_regenerated_and_voted_on_another(pg_cluster, smollm, gemma):
    url = pg_cluster.create_database()
    config = ArenaConfig(db=url, rate_limit=100, params=GenerationParams(max_new_tokens=12))
    models = {smollm.id: smollm, gemma.id: gemma}
    stores = [VoteStore(url), VoteStore(url)]
    one, two = (Arena(config, s, models) for s in stores)
    served = one.answer(one.start("voter", "Name a colour."))
    continued = two.current("voter", "battle")
    assert continued is not None and continued.id == served.id and continued.turns == served.turns
    two.answer(two.follow_up("voter", continued, "Another one?"))
    two.answer(two.regenerate("voter", two.current("voter", "battle")))
    back = one.current("voter", "battle")  # replica one's cached copy is stale; the store is not
    assert len(back.turns) == 2 and back.regenerations == 1
    assert two.current("someone-else", "battle") is None
    record = one.vote("voter", served.id, "b")
    assert record.turn == 2 and record.meta["regenerations"] == 1
    with pytest.raises(AlreadyVoted):
        two.vote("voter", served.id, "a")
    assert two.current("voter", "battle").voted
    two.forget("voter", modes=("battle",))  # a new round on replica two ...
    assert one.current("voter", "battle") is None  # ... is a new round everywhere
    for store in stores:
        store.close()


def test_a_battle_generating_on_one_replica_cannot_be_voted_on_another(store_url, smollm, gemma):
    config = ArenaConfig(db=store_url, rate_limit=100, params=GenerationParams(max_new_tokens=8))
    models = {smollm.id: smollm, gemma.id: gemma}
    stores = [VoteStore(store_url), VoteStore(store_url)]
    one, two = (Arena(config, s, models) for s in stores)
    try:
        battle = one.answer(one.start("voter", "Name a colour."))
        one.follow_up("voter", battle, "Another one?")  # replica one now generates turn 2 ...
        with pytest.raises(NotReady):  # ... so replica two takes no vote on turn 1
            two.vote("voter", battle.id, "a")
        one.answer(battle)
        assert two.vote("voter", battle.id, "a").turn == 2  # the vote is on what was served last
        # A replica whose copy missed that vote starts no turn on the voted battle.
        with pytest.raises(Refused, match="voted"):
            one.regenerate("voter", battle)
        stored = stores[0].load_battle(battle.id)
        assert stored["voted"] and stored["state"] == "ready" and len(stored["turns"]) == 2
        assert stored["turns"][-1]["response_a"] == battle.turns[-1].response_a
    finally:
        for store in stores:
            store.close()


def write_config(path, pairs=PAIRS):
    # every voter is on 127.0.0.1, so the per-address limits must allow all 50
    path.write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\n[arena.rate_limit]\nactions = 100000\n'
                    'per_address = 100000\nnew_sessions_per_address = 1000\nglobal = 100000\n'
                    'requests_per_address = 100000\n')
    return path


def test_a_battle_served_by_one_app_process_is_voted_on_the_other(pg_cluster, tmp_path):
    url = pg_cluster.create_database()
    config = write_config(tmp_path / "arena.toml")
    with AppProcess(config, url, tmp_path / "one.log") as one, AppProcess(config, url, tmp_path / "two.log") as two:
        with httpx.Client(base_url=one.url) as client:
            battle = client.post("/arena-api/battles").json()
            cookie = client.cookies
        with httpx.Client(base_url=two.url, cookies=cookie) as client:
            voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
            assert voted.status_code == 200, voted.text
            again = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "b"})
            assert again.status_code == 409
        with httpx.Client(base_url=two.url) as stranger:  # no cookie: not this voter's battle
            assert stranger.post("/arena-api/votes", json={"battle_id": battle["battle_id"],
                                                            "choice": "b"}).status_code == 404
    store = VoteStore(url)
    assert store.count_votes() == 1
    store.close()


def test_fifty_voters_on_two_replicas_thousand_votes_and_a_sigkill(pg_cluster, tmp_path):
    url = pg_cluster.create_database()
    config = write_config(tmp_path / "arena.toml")
    replicas = [AppProcess(config, url, tmp_path / f"replica{i}.log") for i in range(2)]
    try:
        for replica in replicas:
            replica.start()
        ledger, acked_before_kill = vote_through_a_sigkill(replicas, replicas[0])
    finally:
        for replica in replicas:
            replica.stop()
    store = VoteStore(url)
    stored = [r.meta["battle_id"] for r in store.records()]
    store.close()
    assert_each_vote_once(stored, ledger, acked_before_kill)
    assert ledger.failovers > 0  # voters of the killed replica carried on on the other one
    print(f"acked before kill: {len(acked_before_kill)}; failovers: {ledger.failovers}; "
          f"resolved by retry: {len(ledger.already)}")
