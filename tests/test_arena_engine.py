"""One engine per model: visitors' requests batched together, each streamed and seeded.

The engine test drives transformers' continuous batching under the embedded SmolLM2; the
arena test sends 8 battles at once to a real app process on loopback addresses, as the
bench does (bench/arena_batch.py), and reads each battle back from the store.
"""

import threading
import time

from app_process import ROOT, AppProcess
import httpx
import pytest

from arena.store import VoteStore
from pairlab.backends.base import GenerationParams

pytestmark = pytest.mark.slow

CHAT = [{"role": "user", "content": "Why is the sky blue?"}]


@pytest.fixture(scope="module")
def batched():
    from pairlab.models import get_model

    model = get_model("smollm2-135m-instruct", engine="continuous", max_inflight=4)
    yield model
    model.close()


def test_engine_streams_each_request_with_its_own_seed(batched, smollm):
    sampled = GenerationParams(max_new_tokens=16, temperature=0.7, top_p=0.9, seed=11)
    pieces: dict[int, list[str]] = {}

    def run(i: int, params: GenerationParams) -> None:
        pieces[i] = list(batched.stream(CHAT, params))

    jobs = [GenerationParams(max_new_tokens=16), sampled, GenerationParams(max_new_tokens=16, seed=3)]
    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(p) > 1 for p in pieces.values())  # each request streamed, piece by piece
    # Greedy in a batch of three is the model's greedy answer; the seeded draw alone gives what
    # the per-request path (a generate() of its own) gives for the same seed.
    assert "".join(pieces[0]) == "".join(smollm.stream(CHAT, GenerationParams(max_new_tokens=16)))
    alone = "".join(batched.stream(CHAT, sampled))
    assert alone == "".join(smollm.stream(CHAT, sampled))
    assert batched.info()["engine"] == "transformers-continuous-batching"
    assert "batch" in batched.info()["seeding"]


def test_eight_battles_at_once_all_complete_each_stored_with_its_seed(tmp_path):
    from bench.arena_batch import battles_at_once

    config = tmp_path / "arena.toml"
    config.write_text(f"""
[arena]
models = ["smollm2-135m-instruct", "gemma3-270m"]
prompts = "{ROOT / 'data' / 'prompts.jsonl'}"
engine = "continuous"
max_inflight = 8
[arena.generation]
max_new_tokens = 12
temperature = 0.7
top_p = 0.9
""")
    db = f"sqlite:///{tmp_path / 'votes.db'}"
    busiest, done = [0], threading.Event()
    with AppProcess(config, db, tmp_path / "app.log") as app:
        def watch() -> None:
            while not done.is_set():
                try:
                    busiest[0] = max(busiest[0], app.status()["generating"])
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            results = battles_at_once(app.url, [f"Name a colour, please ({i})." for i in range(8)], timeout_s=900)
        finally:
            done.set()
            watcher.join()
    assert [r["status"] for r in results] == [200] * 8
    assert 2 <= busiest[0] <= 8  # admitted together, up to the engines' cap, not one at a time
    store = VoteStore(db)
    try:
        for result in results:
            stored = store.load_battle(result["battle_id"])
            assert stored["state"] == "ready"
            turn = stored["turns"][-1]
            assert isinstance(turn["seed"], int)
            assert (turn["response_a"], turn["response_b"]) == (result["response_a"], result["response_b"])
            assert [e["engine"] for e in stored["engines"]] == ["transformers-continuous-batching"] * 2
            assert all(e["seeding"] for e in stored["engines"])
    finally:
        store.close()


def test_a_conversation_longer_than_an_engine_holds_fails_its_battle_with_a_reason(tmp_path, gemma):
    """A pane whose engine refuses the conversation (longer than it holds) fails the battle with
    a message saying so, not that its server failed, and the engine serves the next battle."""
    import random

    from arena.battles import Arena
    from arena.config import ArenaConfig
    from arena.errors import ModelFailed
    from pairlab.models import get_model

    small = get_model("smollm2-135m-instruct", engine="continuous", max_inflight=1)  # holds 1,024 tokens
    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", max_prompt_chars=20_000, rate_limit=100,
                         params=GenerationParams(max_new_tokens=8, temperature=0.7, top_p=0.9))
    store = VoteStore(config.db)
    try:
        arena = Arena(config, store, {small.id: small, gemma.id: gemma}, rng=random.Random(3))
        # Past the 1,024 tokens the small engine holds; short enough that the other pane's
        # prefill (which runs until the refusal fails the battle) stays brief.
        battle = arena.start("s", "Summarise: " + "word " * 1200)
        with pytest.raises(ModelFailed, match="cannot take a conversation this long"):
            list(arena.stream(battle))
        battle = arena.start("t", "What is the capital of France?")
        updates = list(arena.stream(battle))
        assert updates and battle.turns[-1].response_a and battle.turns[-1].response_b
    finally:
        store.close()
        small.close()
