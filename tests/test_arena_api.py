"""The HTTP API and the served pages, through the app's own ASGI client on a real SQLite file."""

import threading

from app_process import ROOT
import pytest
from support import wait_until

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.store import VoteStore

PAIRS = ROOT / "data" / "prompts_pairs.jsonl"


@pytest.fixture
def app(tmp_path):
    from fastapi.testclient import TestClient  # the arena's web stack (Gradio): imported when a test runs

    from arena.web import build_app

    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", pairs=PAIRS, rate_limit=6)
    store = VoteStore(config.db)
    arena = Arena(config, store, {})
    with TestClient(build_app(arena)) as client:
        yield client, arena
    store.close()


def test_battle_then_vote_reveals_names_once(app):
    client, arena = app
    served = client.post("/arena-api/battles")
    assert served.status_code == 200 and "arena_session" in served.cookies
    battle = served.json()
    assert set(battle) == {"battle_id", "turn", "prompt", "response_a", "response_b"}
    models = {p.model_a for p in arena.pairs} | {p.model_b for p in arena.pairs}
    assert not any(m in served.text for m in models)
    voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "b"})
    assert voted.status_code == 200
    assert voted.json()["winner"] == "model_b" and {voted.json()["model_a"], voted.json()["model_b"]} <= models
    again = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
    assert again.status_code == 409 and "already voted" in again.json()["error"]
    (record,) = arena.store.records()
    assert record.response_b == battle["response_b"] and record.winner == "model_b"


def test_votes_from_another_session_or_on_unknown_battles_are_refused(app):
    client, arena = app
    battle = client.post("/arena-api/battles").json()
    from fastapi.testclient import TestClient

    other = TestClient(client.app)
    refused = other.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
    assert refused.status_code == 404 and "not served to you" in refused.json()["error"]
    other.post("/arena-api/battles")  # now it has a session, still not this battle's
    refused = other.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "a"})
    assert refused.status_code == 404
    unknown = client.post("/arena-api/votes", json={"battle_id": "made-up", "choice": "a"})
    assert unknown.status_code == 404
    bad = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "left"})
    assert bad.status_code == 400 and "Unknown choice" in bad.json()["error"]
    assert arena.store.count_votes() == 0


def test_status_says_how_many_battles_generate_and_wait(app):
    client, arena = app
    assert client.get("/arena-api/status").json() == {"generating": 0, "waiting": 0}
    held = arena.slots.acquire("one")  # as a battle generating
    waiter = threading.Thread(target=lambda: arena.slots.release(arena.slots.acquire("two")))
    waiter.start()
    wait_until(lambda: arena.slots.counts() == (1, 1), timeout=10, what="the second battle in line")
    assert client.get("/arena-api/status").json() == {"generating": 1, "waiting": 1}
    arena.slots.release(held)
    waiter.join(timeout=10)
    assert client.get("/arena-api/status").json() == {"generating": 0, "waiting": 0}


def test_rate_limit_answers_429(app):
    client, _ = app
    codes = [client.post("/arena-api/battles").status_code for _ in range(8)]
    assert codes[:6] == [200] * 6 and codes[6:] == [429, 429]
    assert "Too many requests" in client.post("/arena-api/battles").json()["error"]


def test_anonymous_page_and_its_config_name_no_model(app):
    client, arena = app
    models = {p.model_a for p in arena.pairs} | {p.model_b for p in arena.pairs}
    for path in ("/", "/config", "/gradio_api/info"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert not any(m in response.text for m in models), path
    assert client.get("/leaderboard/").status_code == 200
    assert client.get("/side-by-side/").status_code == 200


def test_malformed_json_gets_a_clear_message_and_stores_nothing(app):
    client, arena = app
    bad = client.post("/arena-api/votes", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 422 and "Malformed request" in bad.json()["error"]
    missing = client.post("/arena-api/votes", json={"choice": "a"})
    assert missing.status_code == 422 and "battle_id" in missing.json()["error"]
    assert arena.store.count_votes() == 0


def test_open_prompt_bad_input_gets_messages_and_stores_nothing(app):
    client, arena = app
    long = client.post("/arena-api/battles", json={"prompt": "x" * (arena.config.max_prompt_chars + 1)})
    assert long.status_code == 400 and f"the limit is {arena.config.max_prompt_chars}" in long.json()["error"]
    wrong_type = client.post("/arena-api/battles", json={"prompt": ["not", "text"]})
    assert wrong_type.status_code == 422 and "prompt" in wrong_type.json()["error"]
    unknown = client.post("/arena-api/battles/made-up/turns", json={"prompt": "more?"})
    assert unknown.status_code == 404 and "not served to you" in unknown.json()["error"]
    pair = client.post("/arena-api/battles").json()
    fixed = client.post(f"/arena-api/battles/{pair['battle_id']}/turns", json={"prompt": "more?"})
    assert fixed.status_code == 400 and "one fixed turn" in fixed.json()["error"]
    assert arena.store.count_votes() == 0 and len(arena.store.records()) == 0


def test_idle_pages_look_for_events_every_20_ms_not_every_millisecond(app):
    # Gradio's queue polls every millisecond while free: three pages kept a tenth of a core busy.
    from arena.web import QUEUE_POLL_S

    client, _ = app
    pages = [route.app.get_blocks() for route in client.app.routes if hasattr(getattr(route, "app", None), "get_blocks")]
    queues = [page._queue for page in pages]
    assert len(queues) == 3
    assert all(q.sleep_when_free == QUEUE_POLL_S and q.progress_update_sleep_when_free >= QUEUE_POLL_S for q in queues)
    assert 0.01 <= QUEUE_POLL_S <= 0.05  # rare enough to idle, soon enough not to keep a click waiting
