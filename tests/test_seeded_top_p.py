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
