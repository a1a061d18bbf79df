"""A judge's worth in human votes covers its true value (issue 26).

The worth is ``(mean sd of people's ratings alone / mean sd of the PPI++ ratings)^2`` at the
design (:class:`analysis.judging.worth.JudgeWorth`, ``ratio``). Its true value here is that
ratio of the estimators' own spreads: the standard deviations, over 4000 fresh draws of the
whole generating process (pairs, people's votes, the judge's verdicts), of the people-alone
ratings and of the PPI++ ratings as the report makes them (lambda tuned on the data, people's
alone where the tuned fit is wider). Each run draws the data once more and computes the worth
and its interval as :func:`~analysis.judging.worth.judge_worth` does for people on part of the
judge's pairs as collected: its point fit, 100 Poisson pair-bootstrap rounds that keep their
tuned fit, :func:`~analysis.judging.worth.worth_interval`.

Runs are batched: every draw is a set of counts on the same kinds of pair (model pair x the
judge's verdict x people's vote or none), so all runs and their bootstrap rounds are weights
on one compressed data set, fitted at once (:func:`analysis.ratings.ppi.fit_ppi_rounds`).

Three scenarios, 200 runs each: an informative judge, a sparse design (8 models, 30 votes a
model) and a useless judge (verdicts independent of the truth). The binomial bound: with 200
runs a 95% interval covering 90% of the time shows at least 84% with probability 0.997
(0.90 - 3 sd, sd = sqrt(0.9 * 0.1 / 200) = 0.021), so the tests ask for 0.84; an interval that
claims more worth than the judge has (lower end above the truth) is the costly miss, and a
95% interval makes it 2.5% of the time: at most 6% asked (2.5% + 3 sd, sd 0.011). A useless
judge is recommended (lower end above 1x, the report's "use it with people's votes") in at
most 5% of runs.

Before this test, on these runs: the percentile interval of rounds that fell back to people's
alone lay above the sparse design's truth (1.18x) in 7.5% of runs, so the claim test fails; the
bias-corrected interval after it covered 87.5% (within this test's bound) but lay below the
truth in 10% of runs, against 2.5% for a 95% interval. This one: coverage 97%, 97.5% and 95%.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.judging.worth import _bootstrapped, worth_interval
from analysis.ratings.ppi import PPIData, fit_ppi_rounds

ROUNDS = 100
RUNS = 200
TRUTH_DRAWS = 4000
SCENARIOS = {  # models, judged pairs, pairs with a human vote, the judge's slope on people's log-odds (0: coins)
    "informative": (5, 400, 100, 1.5),
    "sparse": (8, 600, 120, 1.5),
    "useless": (5, 400, 100, 0.0),
}
SIGMA = 1.5  # sd of a pair's own quality gap (log-odds): what the judge's verdict can predict


def kinds(m: int) -> PPIData:
    """Every kind of judged pair: model pair i < j, the judge's verdict (0/1, seen from i) and
    people's vote (none, 0, 1), one row each; a draw is the count of each kind."""
    i, j = np.triu_indices(m, 1)
    pair = np.repeat(np.arange(len(i)), 6)
    verdict = np.tile(np.repeat([0.0, 1.0], 3), len(i))
    voted = np.tile([0.0, 1.0, 1.0], 2 * len(i))
    vote = np.tile([0.0, 0.0, 1.0], 2 * len(i))
    return PPIData(models=pd.Index([f"m{k}" for k in range(m)]), i=i, j=j, pair=pair, n_judge=np.ones(len(pair)),
                   yhat_judge=verdict, n_human=voted, y_human=vote, yhat_human=voted * verdict,
                   weight=np.ones(len(pair)))


def draws(rng: np.random.Generator, scenario: str, n: int) -> np.ndarray:
    """``n`` draws of the process as counts per kind: pairs of two random models, people's vote
    on exactly ``labelled`` of them, the judge's verdict on all."""
    m, pairs, labelled, slope = SCENARIOS[scenario]
    theta = np.linspace(-0.8, 0.8, m)
    i = rng.integers(0, m, (n, pairs))
    j = (i + rng.integers(1, m, (n, pairs))) % m
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    eta = theta[lo] - theta[hi] + rng.normal(0, SIGMA, (n, pairs))
    people = rng.random((n, pairs)) < 1 / (1 + np.exp(-eta))
    judge = rng.random((n, pairs)) < (0.5 if slope == 0 else 1 / (1 + np.exp(-slope * eta)))
    voted = np.argsort(rng.random((n, pairs)), axis=1) < labelled
    pair_code = np.full((m, m), -1)
    pair_code[np.triu_indices(m, 1)] = np.arange(m * (m - 1) // 2)
    kind = 6 * pair_code[lo, hi] + 3 * judge + np.where(voted, 1 + people, 0)
    return np.stack([np.bincount(k, minlength=3 * m * (m - 1)) for k in kind]).astype(float)


def mean_sd(values: np.ndarray) -> float:
    return float(values.std(axis=0).mean())


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[float, list]]:
    out = {}
    for seed, scenario in enumerate(SCENARIOS):
        rng = np.random.default_rng(seed)
        data = kinds(SCENARIOS[scenario][0])
        fits = [f for f in fit_ppi_rounds(data, draws(rng, scenario, TRUTH_DRAWS)) if not isinstance(f, Exception)]
        truth = (mean_sd(np.array([f.classical_theta for f in fits])) / mean_sd(np.array([f.theta for f in fits]))) ** 2
        collected = draws(rng, scenario, RUNS)
        weights = np.concatenate([np.r_[[w], [_bootstrapped(w, rng) for _ in range(ROUNDS)]] for w in collected])
        point = np.arange(len(weights)) % (ROUNDS + 1) == 0  # as judge_worth: only the point fit falls back
        fitted = fit_ppi_rounds(data, weights, fallback=point)
        intervals = []
        for r in range(RUNS):
            first, *rounds = fitted[r * (ROUNDS + 1):(r + 1) * (ROUNDS + 1)]
            if isinstance(first, Exception):
                continue
            ratio = first.effective_human_votes / first.n_human
            ratios = [f.effective_human_votes / f.n_human for f in rounds if not isinstance(f, Exception)]
            intervals.append(worth_interval(ratios, ratio, ROUNDS))
        out[scenario] = (truth, intervals)
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_worth_interval_covers_the_true_ratio(runs, scenario):
    truth, intervals = runs[scenario]
    assert len(intervals) >= 0.95 * RUNS
    covered = np.mean([ci is not None and ci[0] <= truth <= ci[1] for ci in intervals])
    above = np.mean([ci is not None and ci[0] > truth for ci in intervals])
    assert covered >= 0.84 and above <= 0.06, (scenario, truth, covered, above)


def test_a_useless_judge_is_rarely_recommended(runs):
    truth, intervals = runs["useless"]
    assert abs(truth - 1) < 0.05, truth  # worth people's votes alone, no more
    recommended = np.mean([ci is not None and ci[0] > 1.0 for ci in intervals])
    assert recommended <= 0.05, recommended
