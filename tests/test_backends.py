"""The model backends on the two real embedded models (short generations keep this quick)."""

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from pairlab.backends.base import BackendError, GenerationParams
from pairlab.models import family_of, get_model, resolve

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
SHORT = GenerationParams(max_new_tokens=24)


@pytest.mark.parametrize("fixture", ["smollm", "gemma"])
def test_generates_real_text_and_streams_the_same(request, fixture):
    model = request.getfixturevalue(fixture)
    out = model.generate([QUESTION, [{"role": "user", "content": "Name a color."}]], SHORT)
    assert len(out) == 2 and all(o.n_tokens > 0 for o in out)
    assert "Paris" in out[0].text
    # A batch of two gives the same greedy answer as the prompt alone (left padding works).
    assert model.generate([QUESTION], SHORT)[0].text == out[0].text
    pieces = list(model.stream(QUESTION, SHORT))
    assert len(pieces) > 1, "streaming should yield several pieces"
    assert "".join(pieces).strip() == out[0].text


def test_base_model_uses_plain_template(gemma, smollm):
    assert gemma.template == "plain"
    assert gemma.render(QUESTION).endswith("Answer:")
    assert smollm.template == "chat"
    assert "<|im_start|>assistant" in smollm.render(QUESTION)
    # The base model would run on into a new "Question:"; the stop string cuts it.
    text = gemma.generate([QUESTION], GenerationParams(max_new_tokens=60))[0].text
    assert "Question:" not in text


def test_seeded_sampling_is_reproducible(smollm):
    params = GenerationParams(max_new_tokens=16, temperature=1.0, seed=7)
    first = smollm.generate([QUESTION], params)[0].text
    assert smollm.generate([QUESTION], params)[0].text == first
    # The stream draws the same tokens as generate (the arena stores what it streamed).
    assert "".join(smollm.stream(QUESTION, params)).strip() == first
    # Rows of one batch sample too, and a batch is reproducible as a whole.
    pair = [QUESTION, [{"role": "user", "content": "Name a color."}]]
    batch = [c.text for c in smollm.generate(pair, params)]
    assert all(batch) and [c.text for c in smollm.generate(pair, params)] == batch


# An open prompt: its next-token distributions are wide, so a wrong draw shows in the text.
STORY = [{"role": "user", "content": "Tell me a story about a dragon."}]
SAMPLED = dict(max_new_tokens=12, temperature=0.8, top_p=0.95)


def _streamed(model, seed: int, start: threading.Barrier | None = None) -> str:
    if start is not None:
        start.wait()
    return "".join(model.stream(STORY, GenerationParams(**SAMPLED, seed=seed)))


def test_concurrent_streams_keep_their_seeds(smollm, gemma):
    """The arena streams both panes at once, each with the turn's stored seed: every
    pane must show what that seed gives alone, however the two threads interleave."""
    panes = [(smollm, 1), (gemma, 2), (smollm, 3)]
    alone = [_streamed(model, seed) for model, seed in panes]
    assert len(set(alone)) == 3 and all(alone)
    for _ in range(2):
        start = threading.Barrier(len(panes))
        with ThreadPoolExecutor(len(panes)) as pool:
            together = list(pool.map(lambda pane: _streamed(*pane, start), panes))
        assert together == alone


def test_sampling_ignores_torch_global_rng(smollm):
    alone = _streamed(smollm, 5)
    torch.manual_seed(123)
    torch.rand(1000)
    assert _streamed(smollm, 5) == alone
    # Another thread drawing from (and reseeding) the global RNG meanwhile changes nothing,
    # and the generation leaves the global RNG where it was.
    done = threading.Event()

    def disturb() -> None:
        while not done.is_set():
            torch.manual_seed(int(torch.randint(0, 2**31, ())))
            time.sleep(0.001)

    noise = threading.Thread(target=disturb)
    noise.start()
    try:
        assert _streamed(smollm, 5) == alone
    finally:
        done.set()
        noise.join()
    state = torch.get_rng_state()
    assert smollm.generate([STORY], GenerationParams(**SAMPLED, seed=5))[0].text == alone.strip()
    assert torch.equal(torch.get_rng_state(), state)


def test_score_prefers_the_right_continuation(smollm):
    context = smollm.render(QUESTION) + "The capital of France is"
    (paris, london), = smollm.score([context], [" Paris", " London"])
    assert paris > london
    # Multi-token candidates are summed over their tokens and are lower than their prefix.
    (one, longer), = smollm.score([context], [" Paris", " Paris, which is in Europe"])
    assert longer < one < 0


def test_score_single_token_matches_multi_token_path(smollm):
    contexts = [smollm.render(QUESTION) + "Verdict:", "Which is better, A or B? Answer:"]
    fast = smollm.score(contexts, [" A", " B"])
    # Forcing the general path (a two-token candidate alongside) must give the same numbers.
    slow = smollm.score(contexts, [" A", " B", " A B"])
    for f, s in zip(fast, slow):
        assert f == pytest.approx(s[:2], abs=1e-4)


def test_cache_makes_the_second_load_fast(tmp_path):
    """A cold load converts the GGUF; a warm one reads the cached safetensors."""
    env_cache = str(tmp_path / "cache")
    code = ("import time,os; t=time.perf_counter(); from pairlab.models import get_model; "
            "m=get_model('smollm2-135m-instruct'); print(round(time.perf_counter()-t,3))")

    def load_seconds() -> float:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**__import__("os").environ, "PAIRLAB_CACHE": env_cache})
        return float(out.stdout.strip().splitlines()[-1])

    cold = load_seconds()
    assert list((tmp_path / "cache" / "models").iterdir()), "the conversion was not cached"
    warm = load_seconds()
    assert warm * 2 < cold, f"warm load {warm}s is not much faster than cold {cold}s"


def test_model_names_and_errors():
    assert resolve("gemma3-270m").family == "gemma"
    assert family_of("openai:http://h:1/v1#Qwen2-7B") == "qwen"
    with pytest.raises(BackendError, match="unknown model"):
        resolve("no-such-model")
    with pytest.raises(BackendError, match="not a directory"):
        get_model("hf:/definitely/missing")
    with pytest.raises(BackendError, match="install"):
        get_model("vllm:some/model")


def test_info_names_the_weights(smollm):
    info = smollm.info()
    assert len(info["weights_sha256"]) == 64 and info["backend"] == "transformers"
