"""Interval honesty: over 200 simulated data sets, 95% intervals cover the truth 92-98% of the time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from analysis.ratings import ELO_SCALE, bootstrap_params, fit_counts
from analysis.ratings.counts import PairCounts

DATA_SETS = 200
BATTLES = 600
ROUNDS = 400
THETA = np.array([-0.7, -0.2, 0.3, 0.6])
TIE_RATE = 0.15


def simulated_counts(rng: np.random.Generator) -> PairCounts:
    """One data set drawn straight as pair counts (the fit only sees counts anyway).

    Ties are drawn with probability TIE_RATE and the decisive outcome is tilted so that
    P(i wins) + P(tie)/2 = sigmoid(theta_i - theta_j): the model under which "a tie is half
    a win" is a correct quasi-likelihood, but its variance is not the binomial one, which is
    what the sandwich must get right.
    """
    m = len(THETA)
    i, j = np.triu_indices(m, 1)
    totals = rng.multinomial(BATTLES, np.full(len(i), 1 / len(i)))
    p = 1 / (1 + np.exp(-(THETA[i] - THETA[j])))
    outcome = np.stack([(p - TIE_RATE / 2), (1 - p - TIE_RATE / 2), np.full_like(p, TIE_RATE)], axis=1)
    cells = np.array([rng.multinomial(n, q) for n, q in zip(totals, outcome)], dtype=float)
    models = np.array([f"m{k}" for k in range(m)])
    return PairCounts(models=pd.Index(models), i=i, j=j, wins_i=cells[:, 0], wins_j=cells[:, 1],
                      ties=cells[:, 2], n_battles=np.zeros(m, dtype=int))


@pytest.fixture(scope="module")
def coverage() -> dict[str, float]:
    rng = np.random.default_rng(20240501)
    truth = ELO_SCALE * (THETA - THETA.mean())
    z = norm.ppf(0.975)
    hits = {"bootstrap": 0, "sandwich": 0}
    for k in range(DATA_SETS):
        fit = fit_counts(simulated_counts(rng))
        estimate = ELO_SCALE * fit.scores.to_numpy()
        se = ELO_SCALE * np.sqrt(np.diag(fit.covariance("sandwich")))
        hits["sandwich"] += int(np.sum(np.abs(estimate - truth) <= z * se))
        samples = ELO_SCALE * bootstrap_params(fit, ROUNDS, seed=k).params
        lower, upper = np.percentile(samples, [2.5, 97.5], axis=0)
        hits["bootstrap"] += int(np.sum((lower <= truth) & (truth <= upper)))
    return {kind: count / (DATA_SETS * len(THETA)) for kind, count in hits.items()}


@pytest.mark.simulation
@pytest.mark.parametrize("kind", ["bootstrap", "sandwich"])
def test_95_percent_intervals_cover_the_true_rating_92_to_98_percent_of_the_time(coverage, kind):
    assert 0.92 <= coverage[kind] <= 0.98, coverage
