"""The pair-clustered PPI++ sandwich against its slow twin: every cluster's centred score vector
written out (tests/test_ppi_prompt_twin.py's ``_twin_parts``) and the outer products added one
row at a time, ``sum_c w_c psi_c phi_c^T``, on rows that stand for several clusters (weights
above 1, as compressed data), in bootstrap rounds and in each fold of the cross-fit. The fast
path takes each round's second moments of the rows' counts per model pair once and builds
every sandwich from them, at any pilot and any lambda; both must agree to rounding."""

from dataclasses import replace

import numpy as np
from test_ppi_prompt_twin import _case, _p, _twin_bread, _twin_parts

from analysis.ratings.ppi import PPIData, _folds, _pieces, _Rounds, fit_ppi_rounds


def _pair_case() -> tuple[PPIData, np.ndarray]:
    """The prompt twin's design rows and rounds, clustered by pair: whole-number weights, some
    rows drawn 0 times and some several (a bootstrap's)."""
    data, weights, _ = _case(seed=5)
    weights = np.round(weights * np.random.default_rng(2).poisson(1.0, weights.shape))
    assert (weights > 1).any() and (weights == 0).any()
    return replace(data, group=None), weights


def _twin_meat(w: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``sum_c w_c left_c right_c^T`` row by row."""
    return sum(w[c] * np.outer(left[c], right[c]) for c in range(len(w)))


def test_pair_clustered_covariance_equals_its_slow_twin():
    """fit_ppi_rounds by pair, people alone and at a fixed lambda: each round's covariance is the
    twin's sandwich at the round's own solution."""
    data, weights = _pair_case()
    for lam in (0.0, 0.6):
        for w, fit in zip(weights, fit_ppi_rounds(data, weights, lam)):
            assert not isinstance(fit, Exception), fit
            p = _p(data, fit.classical_theta if lam == 0 else fit.theta)
            human, judge = _twin_parts(data, w, p)
            bread = _twin_bread(data, w, p, people_only=lam == 0)
            psi = human + lam * judge
            np.testing.assert_allclose(fit.covariance, bread @ _twin_meat(w, psi, psi) @ bread, rtol=1e-9, atol=1e-15)


def test_pair_clustered_pieces_and_fold_shares_equal_their_slow_twin():
    """The three parts of the per-model sandwich and each fold's share of them (the whole's
    scores, centring and information, the fold's clusters), and a split that is not a half."""
    data, weights = _pair_case()
    p = np.random.default_rng(0).uniform(0.2, 0.8, (len(weights), len(data.i)))
    folds = tuple(_folds(data, weights, seed=1))
    some = (np.round(weights * (np.arange(weights.shape[1]) % 3 == 0)),)  # a third of the rows, not a half
    for splits in (folds, some):
        (whole, *shares), errors = _pieces(_Rounds(data, weights), p, splits)
        assert not errors and len(shares) == len(splits)
        for r, w in enumerate(weights):
            human, judge = _twin_parts(data, w, p[r])
            bread = _twin_bread(data, w, p[r], people_only=False)
            for got, kept in ((whole, w), *((share, split[r]) for share, split in zip(shares, splits))):
                for part, (left, right) in enumerate(((human, human), (human, judge), (judge, judge))):
                    twin = bread @ _twin_meat(kept, left, right) @ bread
                    np.testing.assert_allclose(got[r, part], twin, rtol=1e-9, atol=1e-15)
    assert not np.allclose(folds[0], 0) and not np.allclose(folds[1], 0)  # both folds hold clusters
