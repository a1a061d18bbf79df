"""Page traffic waits its turn behind voters: a bound on page requests in the server at once
(per address and for everyone, fair between addresses), a budget everyone's page traffic shares,
and voters with a battle or vote in progress ahead of both (arena.limits.Admission, RequestLimit)."""

import asyncio
import re
import sqlite3

import httpx
import pytest

from arena.errors import RateLimited
from arena.limits import Admission, Busy, Limits, RequestLimit


async def settle() -> None:
    """Let every task that can run run (a wait goes through a few steps of the loop)."""
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_freed_place_goes_to_the_address_that_sent_fewest_and_a_full_line_sheds_the_most():
    async def scenario():
        admission = Admission(slots=1, per_address=3, waiting=3, wait_s=60)
        await admission.enter("flood", recent=100)  # working
        flood = [asyncio.ensure_future(admission.enter("flood", recent=100 + i)) for i in range(2)]  # waiting
        await settle()
        with pytest.raises(RateLimited, match="at once"):  # a fourth place for one address
            await admission.enter("flood", recent=103)
        visitor = asyncio.ensure_future(admission.enter("visitor", recent=1))  # the line is now full: 3 waiting
        await settle()
        late = asyncio.ensure_future(admission.enter("late visitor", recent=2))  # sheds the flood's latest
        await settle()
        with pytest.raises(Busy):  # a full line and no one who sent more: the newcomer is refused
            await admission.enter("another flood", recent=500)
        assert flood[1].done() and isinstance(flood[1].exception(), Busy) and not flood[0].done()
        admission.leave("flood")  # the place goes to the visitor, not to the flood's waiting request
        await settle()
        assert visitor.done() and not late.done() and not flood[0].done()
        admission.leave("visitor")
        await settle()
        assert late.done() and not flood[0].done()
        admission.leave("late visitor")
        await settle()
        assert flood[0].done() and flood[0].exception() is None
        admission.leave("flood")
        assert admission.working == 0 and not admission.held and not admission._line

    asyncio.run(scenario())


def test_a_wait_that_runs_out_is_busy_and_gives_its_place_back():
    async def scenario():
        admission = Admission(slots=1, per_address=2, waiting=4, wait_s=0)
        await admission.enter("a")
        with pytest.raises(Busy):
            await admission.enter("b")
        assert admission.held == {"a": 1} and admission._line == []
        admission.leave("a")
        await admission.enter("b")  # the place is free again

    asyncio.run(scenario())


async def _held_app(scope, receive, send):
    """An app whose ``/page`` answers once the test opens ``GATE`` (the flood's work held in the
    server for as long as the test needs); any other path at once."""
    if scope["path"].startswith("/page"):
        await GATE.wait()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


GATE = None


def test_voters_are_answered_while_page_traffic_holds_every_place():
    async def scenario():
        global GATE
        GATE = asyncio.Event()
        limits = Limits(per_session=30, per_address=120, new_sessions=20, overall=6000, window_s=60,
                        requests=1000)
        limits.admission = Admission(slots=2, per_address=3, waiting=4, wait_s=60)
        limits.voting.mark("voter-session")
        app = RequestLimit(_held_app, limits, address=lambda scope: dict(scope["headers"]).get(b"x-from").decode(),
                           priority=lambda scope: b"voter-session" in dict(scope["headers"]).get(b"cookie", b""))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://arena") as client:
            def page(address: str):
                return asyncio.ensure_future(client.get("/page", headers={"x-from": address}))
            flood = [page(f"127.0.0.{i}") for i in range(2, 6) for _ in range(4)]  # 16 in flight, 4 addresses
            for _ in range(20):
                await settle()
            refused = [f.result().status_code for f in flood if f.done()]
            line = limits.admission._line
            # Two working, four waiting; the rest refused: over an address's places (429) or shed from
            # the full line, the address holding most places first (503), so that no address holds
            # more than its share of the six places (two of four addresses' six, rounded up).
            assert limits.admission.working == 2 and len(line) == 4
            assert 429 in refused and 503 in refused and set(refused) == {429, 503}, refused
            assert max(limits.admission.held.values()) <= 2, limits.admission.held
            # (its request's own work is not held: the flood's holds every place of page traffic)
            voter = await asyncio.wait_for(client.get("/", headers={"x-from": "10.1.1.1",
                                                                    "cookie": "arena_session=voter-session"}), 60)
            assert voter.status_code == 200  # answered while every place is held
            GATE.set()
            codes = [(await asyncio.wait_for(f, 60)).status_code for f in flood]
        assert codes.count(200) == 16 - len(refused) and limits.admission.working == 0 and not limits.admission.held

    asyncio.run(scenario())


def test_with_no_place_for_page_traffic_a_voters_page_battle_and_vote_are_answered(tmp_path):
    """The real app: while page traffic holds every place, a voter who acts is answered and its
    votes stored once, a new visitor's page is turned away (503), and a flooding address gets 429
    from its own budget while the voter does not."""
    from fastapi.testclient import TestClient

    from arena.battles import Arena
    from arena.config import ArenaConfig
    from arena.store import VoteStore
    from arena.web import build_app
    from test_arena_campaign import PAIRS

    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", pairs=PAIRS, address_requests=20,
                         trusted_proxies=("testclient",))  # TestClient's peer: each request names its address
    store = VoteStore(config.db)
    try:
        arena = Arena(config, store, {})
        with TestClient(build_app(arena)) as client:
            voter = {"X-Forwarded-For": "10.1.1.1"}
            assert client.get("/", headers=voter).status_code == 200  # a new visitor: page traffic
            voter["Cookie"] = f"arena_session={client.cookies['arena_session']}"
            client.cookies.clear()  # the voter's session goes with the voter's requests only
            battle = client.post("/arena-api/battles", headers=voter).json()  # an action: never page traffic
            arena.limits.admission = Admission(slots=0, per_address=6, waiting=32, wait_s=0)  # every place held
            assert client.get("/config", headers={"X-Forwarded-For": "10.2.2.2"}).status_code == 503
            assert client.post("/arena-api/votes", headers=voter,
                               json={"battle_id": battle["battle_id"], "choice": "a"}).status_code == 200
            acked = [battle["battle_id"]]
            for _ in range(3):  # the voter, with a battle and a vote in progress: its page and its next round
                assert client.get("/", headers=voter).status_code == 200
                battle = client.post("/arena-api/battles", headers=voter).json()
                assert client.post("/arena-api/votes", headers=voter, json={"battle_id": battle["battle_id"],
                                                                            "choice": "b"}).status_code == 200
                acked.append(battle["battle_id"])
            flood = [client.get("/arena-api/status", headers={"X-Forwarded-For": "127.0.0.2"}).status_code
                     for _ in range(21)]
            assert set(flood[:20]) == {503} and flood[20] == 429, flood
        with sqlite3.connect(tmp_path / "votes.db") as db:
            assert sorted(row[0] for row in db.execute("SELECT battle_id FROM votes")) == sorted(acked)
    finally:
        store.close()


def test_a_page_s_static_files_do_not_spend_its_address_s_request_budget(tmp_path):
    """A Gradio page loads dozens of static files: counted, a visitor opening three pages in a
    minute ran out of the address's budget and the page stayed at "Loading..." (429 on its
    assets). They still wait for a place; the budget counts every other request."""
    from fastapi.testclient import TestClient

    from arena.battles import Arena
    from arena.config import ArenaConfig
    from arena.store import VoteStore
    from arena.web import build_app
    from test_arena_campaign import PAIRS

    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", pairs=PAIRS, address_requests=20,
                         trusted_proxies=("testclient",))
    store = VoteStore(config.db)
    try:
        with TestClient(build_app(Arena(config, store, {}))) as client:
            visitor = {"X-Forwarded-For": "10.3.3.3"}
            page = client.get("/leaderboard/", headers=visitor).text
            assets = sorted({"/leaderboard/" + path for path in re.findall(r"\./(assets/[\w.-]+\.(?:js|css))", page)})
            assert assets, "the page names no static files"
            codes = [client.get(assets[k % len(assets)], headers=visitor).status_code for k in range(60)]
            assert set(codes) == {200}, codes
            rest = [client.get("/config", headers=visitor).status_code for _ in range(20)]
            assert rest[-1] == 429 and rest.count(200) == 19, rest  # a budget of 20: the page, then 19
    finally:
        store.close()
