"""A judge's worth is not read high: a lambda tuned on the clusters its variance is then read on
picks the luckiest draw of the sandwich, and a per-model width capped at people's alone can only
err upwards; the review found the ratio 4-5% high in every design (a judge of no use, true
1.03x, read 1.08x). Planted: a judge flipping coins (true worth 1x) and an informative judge (its
true worth the ratio of the estimator's own spreads over fresh draws); the mean worth over runs
must sit on the truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.ratings.ppi import fit_ppi_per_model_rounds
from test_worth_coverage import draws, kinds, mean_sd

RUNS = 300
TRUTH_DRAWS = 3000


def _fits(data, weights):
    return [f for f in fit_ppi_per_model_rounds(data, weights) if not isinstance(f, Exception)]


@pytest.mark.simulation
@pytest.mark.parametrize("design", [(5, 400, 100, 0.0), (5, 400, 100, 1.5)], ids=["useless", "informative"])
def test_the_worth_is_not_read_high(design):
    rng = np.random.default_rng(11)
    data = kinds(design[0])
    fits = _fits(data, draws(rng, design, TRUTH_DRAWS))
    truth = (mean_sd(np.array([f.classical_theta for f in fits])) / mean_sd(np.array([f.theta for f in fits]))) ** 2
    if design[3] == 0:
        assert abs(truth - 1) < 0.03, truth
    found = np.array([f.ratio for f in _fits(data, draws(rng, design, RUNS))])
    bias = found.mean() / truth - 1
    assert abs(bias) < 0.03, (truth, found.mean(), bias)


def test_the_ppi_ratings_table_widens_no_model():
    """People on a random quarter of the pairs, a judge sharp on the pairs among four models and
    misleading on the fifth's: with one lambda for every model the table widened that model's
    interval beyond people's alone; every model at its own lambda (one sandwich over the stacked
    equations) widens none and still narrows the others."""
    from analysis.ratings.ppi import ppi_ratings
    from test_clustering_coverage import battles, prompts

    rng = np.random.default_rng(3)
    prompt, i, j, eta = prompts(rng, 200)
    n = len(eta)
    judge_logit = np.where((i == 4) | (j == 4), -2 * eta, 2 * eta)
    judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-judge_logit)), judge="J", judge_type="llm")
    people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                     judge_type="human")[rng.random(n) < 0.25]
    rated = ppi_ratings(pd.concat([people, judge], ignore_index=True), "J")
    width = rated.table.table.set_index("model").eval("upper - lower")
    alone = rated.people_alone().table.set_index("model").eval("upper - lower").reindex(width.index)
    assert (width <= alone * (1 + 1e-9)).all(), width / alone
    assert (width < 0.99 * alone).sum() >= 3, width / alone
    assert set(rated.rank_sets) == set(width.index)
