"""The model backends on the two real embedded models (short generations keep this quick)."""

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pairlab.backends.base import BackendError, GenerationParams
from pairlab.models import family_of, get_model, resolve

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
SHORT = GenerationParams(max_new_tokens=24)


# Greedy text is not a contract: CPU kernels (AVX2 vs AVX-512) move logits by ~1e-3, enough to
# flip a near-tie. The tests below check what the backends promise instead.
LONGER = [{"role": "user", "content": "Write three sentences about the sea, the sky and the wind, "
                                      "and say which of them you like best and why."}]
# A raw prompt that any model continues for many tokens (a base and an instruct model alike).
COUNTING = "Count: 1, 2, 3, 4, 5,"
# See test_batch_left_padding_keeps_the_answer.
NEAR_TIE_NATS = 0.1


@pytest.mark.model  # the model fixture is asked for by name
@pytest.mark.parametrize("fixture", ["smollm", "gemma"])
def test_stream_joins_to_the_generated_text(request, fixture):
    model = request.getfixturevalue(fixture)
    for prompt in (QUESTION, COUNTING):
        (alone,) = model.generate([prompt], SHORT)
        assert alone.n_tokens > 0
        pieces = list(model.stream(prompt, SHORT))
        assert "".join(pieces).strip() == alone.text
    # A prompt that forces a long answer streams as it decodes, not as one final piece.
    assert alone.n_tokens == SHORT.max_new_tokens and len(pieces) > 1


def _first_split(model, prompt, one: str, other: str) -> tuple[float, float] | None:
    """Where two answers to ``prompt`` first differ by token: the log-probabilities, by the
    model alone (one row: no padding), of each answer's token there. None when they agree,
    or when one is the other cut short (they parted at the end of the sequence)."""
    context = model.render(prompt)
    lead = "" if context[-1:].isspace() else " "  # generation starts after a space or a new line
    a, b = (model.tokenizer(lead + t, add_special_tokens=False).input_ids for t in (one, other))
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if k == min(len(a), len(b)):
        return None
    prefix = model.tokenizer.decode(a[:k])
    nexts = [model.tokenizer.decode(ids[:k + 1])[len(prefix):] for ids in (a, b)]
    (x, y), = model.score([context + prefix], nexts)
    return x, y


@pytest.mark.model  # the model fixture is asked for by name
@pytest.mark.parametrize("fixture", ["smollm", "gemma"])
def test_batch_left_padding_keeps_the_answer(request, fixture):
    """QUESTION is left-padded beside a longer prompt. An honest padded row computes the
    same logits as the row alone up to kernel rounding (~1e-3 nats, which differs between
    AVX2 and AVX-512), so greedy decoding can part from the row alone only at a near-tie:
    where the two texts first differ, the model alone must find both tokens within
    NEAR_TIE_NATS of each other. A row that attends to its padding picks tokens the model
    alone ranks far apart (SmolLM then answers "Le Bourg de France ..." instead of "The capital ...")."""
    model = request.getfixturevalue(fixture)
    padded, other = model.generate([QUESTION, LONGER], SHORT)
    (alone,) = model.generate([QUESTION], SHORT)
    assert padded.n_tokens > 0 and other.n_tokens > 0 and alone.text
    split = _first_split(model, QUESTION, alone.text, padded.text)
    assert split is None or abs(split[0] - split[1]) <= NEAR_TIE_NATS, (alone.text, padded.text, split)


def test_base_model_uses_plain_template(gemma, smollm):
    assert gemma.template == "plain"
    assert gemma.render(QUESTION).endswith("Answer:")
    assert smollm.template == "chat"
    assert "<|im_start|>assistant" in smollm.render(QUESTION)
    # The base model would run on into a new "Question:"; the stop string cuts it.
    text = gemma.generate([QUESTION], GenerationParams(max_new_tokens=60))[0].text
    assert "Question:" not in text


def test_stop_strings_end_generate_and_are_built_once_per_model(gemma, monkeypatch):
    # The library builds a stop string's criteria from the whole vocabulary on every call given
    # stop_strings: a second of each of Gemma's calls. The model builds them once per stops.
    import pairlab.backends.hf as hf

    built, real = [], hf.StopStringCriteria
    monkeypatch.setattr(hf, "StopStringCriteria", lambda *args: built.append(args) or real(*args))
    params = GenerationParams(max_new_tokens=40, stop=(" ", "\n"))  # stops no other test uses
    first, again = (gemma.generate([QUESTION], params)[0] for _ in range(2))
    assert len(built) == 1
    # Generation halted at the first space or line end, not at max_new_tokens.
    assert first == again and first.finish_reason == "stop" and first.n_tokens < 10, first
    # A server's callers choose their stops: only the last few are kept (stand-ins, in a
    # table of the test's own, so the shared model keeps its real criteria).
    monkeypatch.setattr(hf, "StopStringCriteria", lambda *args: built.append(args) or object())
    monkeypatch.setattr(gemma, "_stop_criteria", dict(gemma._stop_criteria))
    many = [(f"stop {k}",) for k in range(3 * hf.STOP_CRITERIA_KEPT)]
    for stops in many:
        gemma._stopping(stops)
    assert list(gemma._stop_criteria) == many[-hf.STOP_CRITERIA_KEPT:]
    gemma._stopping(params.stop)  # pushed out by the others: built again, once
    gemma._stopping(params.stop)
    assert len(built) == 1 + len(many) + 1


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
    import torch

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


@pytest.mark.model
@pytest.mark.process  # a cold and a warm start of the cache, each in a fresh interpreter
def test_cache_makes_the_second_load_fast(tmp_path):
    """A cold load converts the GGUF; a warm one reads the cached safetensors and converts
    nothing (a conversion in the warm process fails it)."""
    code = "\n".join([
        "import sys",
        "import pairlab.weights as w",
        "from pairlab.backends.base import GenerationParams",
        "from pairlab.models import get_model",
        "if sys.argv[1] == 'warm':",
        "    w.convert_gguf = lambda *a: sys.exit('the warm load converted the GGUF again')",
        "m = get_model('smollm2-135m-instruct')",
        "assert m.generate(['Hello'], GenerationParams(max_new_tokens=2))[0].n_tokens > 0",
        "print(m.directory)",
    ])

    def load(kind: str) -> str:
        out = subprocess.run([sys.executable, "-c", code, kind], capture_output=True, text=True,
                             env={**os.environ, "PAIRLAB_CACHE": str(tmp_path / "cache")})
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip().splitlines()[-1]

    cold = load("cold")
    assert list((tmp_path / "cache" / "models").iterdir()), "the conversion was not cached"
    assert load("warm") == cold
    assert cold.startswith(str(tmp_path / "cache" / "models"))


def test_prepared_weights_keep_tied_embeddings_under_their_input_name(smollm):
    """Issue 30, item 3: the cached SmolLM2 held its tied embeddings only as lm_head.weight. vLLM
    skips a tied lm_head.weight and reads model.embed_tokens.weight, so it ran with no embeddings:
    every token had the same logit and only end-of-text (token 0) came out, on AVX2 and AVX-512 alike."""
    from safetensors import safe_open

    with safe_open(str(smollm.directory / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        embeddings = f.get_tensor("model.embed_tokens.weight") if "model.embed_tokens.weight" in keys else None
    assert "lm_head.weight" not in keys and embeddings is not None, sorted(k for k in keys if "layers" not in k)
    head = smollm.model.get_output_embeddings().weight.detach()
    assert embeddings.shape == head.shape and bool((embeddings == head).all())


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


def test_plain_format_shows_one_worked_exchange_after_the_system_text():
    """A base model sees what an answer looks like and where it ends before the conversation
    (without it Gemma answered some questions with "Answer:" over and over)."""
    from pairlab.backends.chat import PLAIN_EXAMPLE, plain_template

    text = plain_template([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"},
                           {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "And?"}])
    assert text == f"Be brief.\n\n{PLAIN_EXAMPLE}Question: Hi?\nAnswer: Hello.\n\nQuestion: And?\nAnswer:"
    assert PLAIN_EXAMPLE.startswith("Question: ") and "\nAnswer: " in PLAIN_EXAMPLE
