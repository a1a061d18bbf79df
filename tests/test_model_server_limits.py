"""arena.model_server refuses what it cannot honour, before any work, on the real embedded model."""

import pytest


pytestmark = pytest.mark.model

CHAT = "/v1/chat/completions"


def TestClient(app):  # the web stack is imported when a test runs, not when the suite is collected
    from fastapi.testclient import TestClient as Client

    return Client(app)


def build_app(*args, **kwargs):
    from arena.model_server import build_app as build

    return build(*args, **kwargs)


@pytest.fixture(scope="module")
def client(smollm):
    with TestClient(build_app(smollm, default_max_tokens=4, max_tokens_limit=64, max_prompt_chars=2000)) as c:
        yield c, smollm.id


def chat(model, **fields):
    return {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, **fields}


@pytest.mark.parametrize("fields", [
    {"max_tokens": 10**12}, {"temperature": -5}, {"temperature": 9}, {"top_p": 7}, {"top_p": 0}, {"n": 8},
    {"seed": -1}, {"stop": ["x"] * 10_000}, {"stop": ["y" * 1000]},
    {"messages": [{"role": "wizard", "content": "Hi"}]}, {"messages": [{"content": "Hi"}]},
    {"messages": [{"role": "user", "content": {"nested": 1}}]}, {"messages": []},
    {"messages": [{"role": "user", "content": "x" * 2001}]},
])
def test_out_of_range_or_malformed_chat_requests_are_refused(client, fields):
    c, model = client
    response = c.post(CHAT, json=chat(model, **fields))
    assert response.status_code in (400, 422), (fields, response.text)


def test_completions_are_checked_too_and_good_requests_still_answer(client):
    c, model = client
    assert c.post("/v1/completions", json={"model": model, "prompt": "x" * 2001}).status_code == 400
    assert c.post("/v1/completions", json={"model": model, "prompt": "Hi", "logprobs": 100}).status_code == 422
    assert c.post("/v1/completions", json={"model": model, "prompt": "Hi", "n": 3}).status_code == 422
    ok = c.post(CHAT, json=chat(model, temperature=0.7, top_p=0.9, stop=["\n"], n=1))
    assert ok.status_code == 200 and len(ok.json()["choices"]) == 1


def test_a_bearer_token_guards_every_route(smollm):
    with TestClient(build_app(smollm, api_key="s3cret")) as c:
        assert c.get("/v1/models").status_code == 401
        assert c.get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.post(CHAT, json=chat(smollm.id)).status_code == 401
        assert c.get("/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_oversized_bodies_are_refused_unread(client):
    c, model = client
    big = chat(model, messages=[{"role": "user", "content": "x" * 100_000}])
    assert c.post(CHAT, json=big).status_code == 413


def echo(model, prompt):
    return {"model": model, "prompt": prompt, "echo": True, "logprobs": 0, "max_tokens": 0}


def test_echo_scoring_is_capped_by_tokens_before_any_work(smollm):
    # 1,500 characters pass the character cap but are about 300 tokens: over the echo cap.
    with TestClient(build_app(smollm, max_prompt_chars=2000, max_echo_tokens=50)) as c:
        refused = c.post("/v1/completions", json=echo(smollm.id, "the cat sat on the mat " * 65))
        assert refused.status_code == 400 and "at most 50" in refused.json()["detail"], refused.text
        ok = c.post("/v1/completions", json=echo(smollm.id, "The capital of France is Paris"))
        assert ok.status_code == 200
        logprobs = ok.json()["choices"][0]["logprobs"]["token_logprobs"]
        assert logprobs[0] is None and all(v < 0 for v in logprobs[1:])


def test_echo_scoring_beyond_localhost_needs_the_api_key(smollm):
    body = echo(smollm.id, "The capital of France is Paris")
    with TestClient(build_app(smollm, host="0.0.0.0")) as c:
        refused = c.post("/v1/completions", json=body)
        assert refused.status_code == 403 and "--api-key" in refused.json()["detail"]
        assert c.get("/v1/models").status_code == 200  # the rest of the open server still answers
    with TestClient(build_app(smollm, host="10.1.2.3", api_key="s3cret")) as c:
        assert c.post("/v1/completions", json=body).status_code == 401
        ok = c.post("/v1/completions", json=body, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    with TestClient(build_app(smollm, host="::1")) as c:
        assert c.post("/v1/completions", json=body).status_code == 200


def test_a_prompt_longer_than_the_engine_holds_is_refused_and_the_engine_serves_on():
    """The batching engine (the server's default) holds max_inflight x 1,024 tokens; a request
    that could never fit used to run its prefill until the cache ran out, then stop the engine's
    loop, failing every later request too."""
    import json

    from pairlab.models import get_model

    model = get_model("smollm2-135m-instruct", engine="continuous", max_inflight=1)
    try:
        with TestClient(build_app(model, default_max_tokens=8, max_prompt_chars=100_000)) as c:
            too_long = {"model": model.id, "stream": True, "max_tokens": 8,
                        "messages": [{"role": "user", "content": "word " * 3500}]}
            refused = c.post(CHAT, json=too_long)
            assert refused.status_code == 400 and "holds at most 1024 tokens" in refused.json()["detail"]
            for _ in range(2):
                with c.stream("POST", CHAT, json={**chat(model.id, max_tokens=6), "stream": True}) as answer:
                    assert answer.status_code == 200
                    lines = [json.loads(line[6:]) for line in answer.iter_lines()
                             if line.startswith("data: {")]
                assert lines[-1]["choices"][0]["finish_reason"] == "stop"
                assert "".join(e["choices"][0]["delta"].get("content", "") for e in lines).strip()
    finally:
        model.close()
