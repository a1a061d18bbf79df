"""The batching engine's output layer on a CPU that multiplies bfloat16 natively
(:class:`pairlab.backends.batching._Bfloat16Head`): used where the CPU has the instructions,
never elsewhere, its logits those of the float32 layer to within the inputs' rounding, and scoring
(log-probabilities) still from the float32 layer."""

from __future__ import annotations

import pytest
import torch

from pairlab.backends.base import GenerationParams
from pairlab.backends.batching import _Bfloat16Head

pytestmark = pytest.mark.model

PROMPTS = ["Question: Why is the sky blue?\nAnswer:", "Question: Name three prime numbers.\nAnswer:",
           "The capital of France is"]


@pytest.fixture(scope="module")
def gemma_engine():
    from pairlab.models import get_model

    return get_model("gemma3-270m", engine="continuous", max_inflight=4)


def test_the_head_is_bfloat16_exactly_where_the_cpu_multiplies_it(gemma_engine):
    model = gemma_engine
    text = "".join(model.stream([{"role": "user", "content": "Hi"}], GenerationParams(max_new_tokens=2)))
    assert isinstance(text, str)  # the engine has started (the head is swapped when it starts)
    head = model.model.get_output_embeddings()
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert isinstance(head, _Bfloat16Head) == native
    assert model.info()["output_dtype"] == ("torch.bfloat16" if native else "torch.float32")
    # The input embeddings the float32 head was tied to stay float32.
    assert model.model.get_input_embeddings().weight.dtype == torch.float32


def test_bfloat16_logits_stay_within_the_rounding_of_the_float32_ones(gemma_engine):
    model = gemma_engine.model
    tokenizer = gemma_engine.tokenizer
    embeddings = model.get_input_embeddings().weight
    float32_head = torch.nn.Linear(embeddings.shape[1], embeddings.shape[0], bias=False)
    float32_head.weight = embeddings  # Gemma ties its head to the input embeddings
    bf16_head = _Bfloat16Head(float32_head)
    enc = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    with torch.inference_mode():
        hidden = model.model(**enc).last_hidden_state[:, -1]
        exact, rounded = float32_head(hidden), bf16_head(hidden)
    assert rounded.dtype == torch.float32 and rounded.shape == exact.shape
    # Each logit is a sum of 640 products whose inputs bfloat16 rounds to 8 bits: a relative error of
    # about 2^-8 per input, averaging out over the sum.
    scale = exact.abs().max(dim=-1, keepdim=True).values
    assert ((rounded - exact).abs() / scale).max() < 2 ** -6
    # The likeliest tokens are the same ones, and their probabilities agree closely.
    assert torch.equal(exact.argmax(-1), rounded.argmax(-1))
    p, q = exact.softmax(-1), rounded.softmax(-1)
    assert (p - q).abs().sum(-1).max() < 0.05  # total variation under 2.5 points


def test_scores_come_from_the_float32_layer_after_the_engine_swapped_its_head(gemma_engine):
    """The model server scores (echo log-probabilities) with the model its engine generates with:
    the scores must be those of a model that never generated."""
    from pairlab.models import get_model

    "".join(gemma_engine.stream([{"role": "user", "content": "Hi"}], GenerationParams(max_new_tokens=1)))
    assert isinstance(gemma_engine.model.get_output_embeddings(), _Bfloat16Head) == torch.ops.mkldnn._is_mkldnn_bf16_supported()
    plain = get_model("gemma3-270m")
    text = PROMPTS[0] + " Because of Rayleigh scattering."
    engine_scores = [p for _, _, p in gemma_engine.prompt_logprobs(text)[1:]]
    plain_scores = [p for _, _, p in plain.prompt_logprobs(text)[1:]]
    assert engine_scores == pytest.approx(plain_scores, abs=1e-4)
    last = gemma_engine._forward_logprobs([gemma_engine.tokenizer(PROMPTS[0]).input_ids], last_only=True)
    assert torch.allclose(last, plain._forward_logprobs([plain.tokenizer(PROMPTS[0]).input_ids], last_only=True),
                          atol=1e-4)
