"""The worth's bootstrap draws the halves of its cross-fit before it resamples
(analysis.judging.worth._bootstrapped_halves): each half's clusters are resampled apart, so a
cluster drawn twice never has a copy in both halves (its ``lambda`` would then be tuned on a
cluster its variance is read on), and the round as a whole is still the Poisson bootstrap of
every cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.judging.worth import _bootstrapped_halves
from analysis.ratings.ppi import PPIData, cross_fit_half

_ROUNDS = 4000


def _one_cluster_a_row(n: int) -> PPIData:
    rng = np.random.default_rng(0)
    i, j = np.triu_indices(4, 1)
    return PPIData(models=pd.Index(list("abcd")), i=i, j=j, pair=np.arange(n) % len(i), n_judge=np.ones(n),
                   yhat_judge=rng.integers(0, 2, n).astype(float), n_human=np.ones(n),
                   y_human=rng.integers(0, 2, n).astype(float), yhat_human=np.zeros(n), weight=np.ones(n))


def test_a_cluster_drawn_twice_keeps_its_copies_in_one_half():
    data = _one_cluster_a_row(60)
    design = np.tile(data.weight, (_ROUNDS, 1))
    weights, first = _bootstrapped_halves(data, design, np.random.default_rng(1), seed=0)
    second = weights - first
    assert (weights >= 2).any()  # clusters drawn twice or more, in every half's share
    assert not ((first > 0) & (second > 0)).any()
    # The halves are the design's halves (the cross-fit's split of the data as collected).
    np.testing.assert_array_equal(first > 0, (weights > 0) & (cross_fit_half(data, design) > 0))
    # Still each cluster Poisson(1) times.
    assert abs(weights.mean() - 1) < 0.02 and abs(weights.var() - 1) < 0.04


def test_rows_of_several_clusters_resample_each_half_apart():
    """A row standing for ``w`` clusters: its halves' counts are independent Poisson draws of
    its clusters in each half (resampling the row whole and splitting the count after made them
    equal to within one, a correlation near 1)."""
    data = _one_cluster_a_row(6)
    design = np.tile(np.array([8.0, 9.0, 20.0, 1.0, 3.0, 12.0]), (_ROUNDS, 1))
    weights, first = _bootstrapped_halves(data, design, np.random.default_rng(2), seed=0)
    half = cross_fit_half(data, design[:1])[0]
    np.testing.assert_allclose(first.mean(axis=0), half, rtol=0.06)
    np.testing.assert_allclose(first.var(axis=0), half, rtol=0.12)
    for k in (0, 2, 5):
        assert abs(np.corrcoef(first[:, k], weights[:, k] - first[:, k])[0, 1]) < 0.06
