"""The seeded sampler's top-p cut is transformers' own, to the bit: stored seeds keep their text."""

import pytest
import torch
from transformers import TopPLogitsWarper

from pairlab.backends.hf import _top_p


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("vocab", [7, 49152, 262144])
def test_the_cut_equals_the_warpers_own(top_p, vocab):
    warper = TopPLogitsWarper(top_p)
    generator = torch.Generator().manual_seed(vocab)
    for spread in (0.5, 3.0, 12.0):
        scores = torch.randn(3, vocab, generator=generator) * spread
        assert torch.equal(_top_p(warper, None, scores.clone()), warper(None, scores.clone()))
        # runs of equal scores, the cut inside one or between them
        tied = torch.round(scores * 2) / 2
        assert torch.equal(_top_p(warper, None, tied.clone()), warper(None, tied.clone()))
    flat = torch.zeros(2, vocab)  # all equal: the warper keeps them all
    assert torch.equal(_top_p(warper, None, flat), warper(None, flat))


@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.95])
def test_the_cut_from_the_largest_scores_decides_most_rows_and_equals_the_warpers(top_p):
    """Rows shaped like a language model's (Zipf-like over a 262k vocabulary, at temperature
    0.7): the cut read off the largest scores alone must decide most of them, not hand them all
    to the full sort, and every cut must be the warper's own."""
    import numpy as np

    from pairlab.backends.hf import _cut_from_the_top

    warper = TopPLogitsWarper(top_p)
    rng = np.random.default_rng(7)
    vocab, decided = 262144, 0
    rows = []
    for i in range(60):
        ranks = rng.permutation(vocab) + 1.0
        logits = -(1.0 + rng.uniform(0, 1)) * np.log(ranks) + rng.normal(0, 0.5, vocab)
        rows.append(torch.from_numpy((logits / 0.7).astype(np.float32))[None])
    for scores in rows:
        decided += _cut_from_the_top(scores[0].numpy(), top_p) is not None
        assert torch.equal(_top_p(warper, None, scores.clone()), warper(None, scores.clone()))
    assert decided >= 0.75 * len(rows)  # on the embedded Gemma's own rows at top-p 0.9: 157 of 160
