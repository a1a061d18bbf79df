"""The per-model worth reads only the diagonals of the PPI++ sandwich's three parts (each model's
variance at its own lambda). Clustered by prompt they are summed from each prompt's sums taken
through the inverse information, never as whole matrices: they must be the diagonals of the
whole matrices (themselves held to their slow twin in tests/test_ppi_prompt_twin.py), for the
whole and for each fold, with prompts a bootstrap drew several times or not at all."""

import numpy as np
from test_ppi_prompt_twin import _case

from analysis.ratings.ppi import _folds, _pieces, _Rounds


def _check(data, weights, draws, p):
    folds = tuple(_folds(data, weights, seed=1))
    full, errors = _pieces(_Rounds(data, weights, draws), p, folds)
    diagonal, errors_too = _pieces(_Rounds(data, weights, draws), p, folds, diagonal=True)
    assert not errors and not errors_too and len(diagonal) == len(full) == 3
    for got, whole in zip(diagonal, full):
        assert got.shape == whole.shape[:3]
        np.testing.assert_allclose(got, np.diagonal(whole, axis1=2, axis2=3), rtol=1e-9, atol=1e-15)
    # The three weightings differ (the folds are parts), so a diagonal read from the wrong one fails.
    assert not np.allclose(diagonal[1], diagonal[0]) and not np.allclose(diagonal[1], diagonal[2])


def test_prompt_clustered_diagonals_equal_the_whole_pieces():
    data, weights, draws = _case()
    assert (draws == 0).any() and (draws > 1).any()
    p = np.random.default_rng(0).uniform(0.2, 0.8, (len(weights), len(data.i)))
    _check(data, weights, draws, p)


def test_pair_clustered_diagonals_equal_the_whole_pieces():
    from dataclasses import replace

    data, weights, _ = _case(seed=5)
    p = np.random.default_rng(1).uniform(0.2, 0.8, (len(weights), len(data.i)))
    _check(replace(data, group=None), np.round(weights), None, p)
