"""Open-prompt battles through the HTTP API on models served by other processes.

Two ``python -m arena.model_server`` processes (the embedded models behind OpenAI-compatible
APIs, as vLLM on GPU hosts would be) are the arena's models, named ``openai:URL#id``.
A battle, a follow-up turn and a vote go through the app's HTTP API; then one model
server is SIGKILLed mid-answer: the voter gets a clear message and the battle cannot be
voted on.
"""

import threading

from app_process import ModelServer
import pytest
from support import wait_until

from arena.battles import Arena
from arena.config import ArenaConfig
from arena.store import VoteStore
from pairlab.backends.base import GenerationParams
from pairlab.models import get_model

pytestmark = [pytest.mark.model, pytest.mark.process]
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    where = tmp_path_factory.mktemp("model-servers")
    started = [ModelServer(m, where / f"{m}.log") for m in MODELS]
    try:
        for server in started:
            server.start()
        yield started
    finally:
        for server in started:
            server.stop()


def TestClient(app):  # the web stack is imported when a test runs, not when the suite is collected
    from fastapi.testclient import TestClient as Client

    return Client(app)


def build_app(*args, **kwargs):
    from arena.web import build_app as build

    return build(*args, **kwargs)


def make_app(tmp_path, names, max_new_tokens):
    config = ArenaConfig(models=tuple(names), db=f"sqlite:///{tmp_path / 'votes.db'}", rate_limit=100,
                         params=GenerationParams(max_new_tokens=max_new_tokens))
    store = VoteStore(config.db)
    # the openai client retries a failed request; a voter should hear about a dead server at once
    models = {n: get_model(n, retries=0) if n.startswith("openai:") else get_model(n) for n in names}
    return Arena(config, store, models), store


def test_open_prompt_battle_follow_up_and_vote_on_remote_models(servers, tmp_path):
    names = [s.model_name() for s in servers]
    arena, store = make_app(tmp_path, names, 24)
    with TestClient(build_app(arena)) as client:
        served = client.post("/arena-api/battles", json={"prompt": "Name three primary colors."})
        assert served.status_code == 200, served.text
        battle = served.json()
        assert battle["turn"] == 1 and battle["response_a"] and battle["response_b"]
        assert not any(m in served.text for m in MODELS)
        again = client.post(f"/arena-api/battles/{battle['battle_id']}/turns", json={"prompt": "And two more?"})
        assert again.status_code == 200, again.text
        assert again.json()["turn"] == 2 and again.json()["response_a"]
        voted = client.post("/arena-api/votes", json={"battle_id": battle["battle_id"], "choice": "tie"})
        assert voted.status_code == 200 and {voted.json()["model_a"], voted.json()["model_b"]} == set(names)
        late = client.post(f"/arena-api/battles/{battle['battle_id']}/turns", json={"prompt": "More?"})
        assert late.status_code == 400 and "voted" in late.json()["error"]
    (record,) = store.records()
    assert record.turn == 2 and record.prompt == "And two more?" and record.winner == "tie"
    store.close()


def test_a_model_server_dying_mid_answer_gives_a_clear_message_and_an_unvotable_battle(servers, tmp_path):
    names = [s.model_name() for s in servers]
    arena, store = make_app(tmp_path, names, 300)
    victim = servers[0]  # the instruct model: its long story runs on toward the 300-token cap
    with TestClient(build_app(arena)) as client:
        answers = {}
        request = threading.Thread(target=lambda: answers.update(r=client.post(
            "/arena-api/battles", json={"prompt": "Write a long story about a lighthouse keeper."})))
        request.start()
        wait_until(lambda: arena.decoding() == 2 or not request.is_alive(), timeout=120,
                   what="both models decoding")
        assert request.is_alive(), answers  # killed mid-answer, not after it
        victim.kill()
        request.join(timeout=300)
        assert not request.is_alive(), "the answer to a dead server should come back promptly"
        response = answers["r"]
        assert response.status_code == 502, response.text
        message = response.json()["error"]
        assert "stopped answering" in message and "cannot be voted on" in message
        assert not any(m in message for m in MODELS) and "127.0.0.1" not in message
        assert store.load_battle(response.json()["battle_id"])["state"] == "failed"
        refused = client.post("/arena-api/votes", json={"battle_id": response.json()["battle_id"], "choice": "a"})
        assert refused.status_code == 409 and "failed" in refused.json()["error"]
    assert store.count_votes() == 0
    store.close()
