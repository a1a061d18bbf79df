"""A leaderboard without a maximum-likelihood rating (a model that never lost) is the early
estimate everywhere: its point comes from the one rating rule, and the bootstrap rounds that
bound the meta-metrics are fitted under the same prior, so they scatter around that point."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.judging.meta_metrics import _bt_batch, reference_ceiling
from analysis.ratings.bt import ELO_SCALE
from analysis.ratings.votes import rate_battles


def _unbeaten(n_models=8, prompts=40, seed=0):
    """Every model pair on every prompt; m0 wins every battle, the others by their strengths."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(1.0, -1.0, n_models)
    i, j = np.triu_indices(n_models, 1)
    a, b = np.tile(i, prompts), np.tile(j, prompts)
    won = (a == 0) | (rng.random(len(a)) < 1 / (1 + np.exp(-(strength[a] - strength[b]))))
    return pd.DataFrame({"model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b],
                         "winner": np.where(won, "model_a", "model_b"), "prompt": np.repeat(np.arange(prompts), len(i)),
                         "pair_id": np.arange(len(a))})


def test_rounds_of_a_board_without_an_mle_are_fitted_under_the_early_estimates_prior():
    rows = _unbeaten()
    rated = rate_battles(rows, "bt")
    assert rated.early_estimate
    table = rated.result.table.set_index("model")
    models = [f"m{k}" for k in range(8)]
    i, j = np.triu_indices(8, 1)
    code = {m: k for k, m in enumerate(models)}
    a, b = rows["model_a"].map(code).to_numpy(), rows["model_b"].map(code).to_numpy()
    a_won = (rows["winner"] == "model_a").to_numpy()
    pair = {(x, y): q for q, (x, y) in enumerate(zip(i, j))}
    q = np.array([pair[(x, y)] for x, y in zip(a, b)])
    wins_i = np.bincount(q, a_won, len(i))
    wins_j = np.bincount(q, ~a_won, len(i))
    # Rounds that each redraw exactly the data: every round must be the point itself.
    totals = np.tile(np.stack([wins_i, wins_j])[None], (3, 1, 1))
    rounds = _bt_batch(totals, i, j, 8) * ELO_SCALE
    point = table.loc[models, "rating"].to_numpy()
    for r in rounds:
        np.testing.assert_allclose(r - r.mean(), point - point.mean(), atol=0.5)


def test_a_reference_whose_top_model_never_lost_still_has_a_ceiling():
    ceiling = reference_ceiling(_unbeaten(prompts=60))
    assert ceiling is not None and ceiling["spearman"] > 0.5
