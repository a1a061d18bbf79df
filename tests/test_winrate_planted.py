"""AlpacaEval-style win rates on synthetic judgments with planted effects.

Three models answer the same instructions against one baseline; the judge's preference
for the model is sigmoid(theta_m + phi * tanh(length gap / sd) + difficulty_i), given as
a probability (as AlpacaEval's weighted annotators do). The planted length-controlled win
rate is the mean over instructions of sigmoid(theta_m + difficulty_i).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.ratings.winrate import win_rates

N = 800
THETA = {"verbose": -0.4, "plain": 0.3, "terse": 0.0}
LENGTH_SHIFT = {"verbose": 1.5, "plain": 0.0, "terse": -1.0}  # mean length gap in SDs, model minus baseline


def _judgments(phi: float, seed: int = 0) -> tuple[pd.DataFrame, dict[str, float]]:
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.0, N)
    frames, planted = [], {}
    for model, theta in THETA.items():
        gap = rng.normal(LENGTH_SHIFT[model], 1.0, N)  # in SDs of a typical answer
        length_model = np.maximum(20, 400 + 150 * gap).astype(int)
        baseline_length = np.full(N, 400)
        delta = baseline_length - length_model
        x = np.tanh(-delta / delta.std(ddof=1))
        p = 1 / (1 + np.exp(-(theta + phi * x + difficulty)))
        planted[model] = 100 * float(np.mean(1 / (1 + np.exp(-(theta + difficulty)))))
        frames.append(pd.DataFrame({
            "model_a": "baseline", "model_b": model, "winner": np.where(p > 0.5, "model_b", "model_a"),
            "prob_a": 1 - p, "response_a": ["b" * n for n in baseline_length],
            "response_b": ["m" * n for n in length_model], "prompt_id": [f"i{k}" for k in range(N)],
        }))
    return pd.concat(frames, ignore_index=True), planted


def test_planted_length_bias_is_removed():
    frame, planted = _judgments(phi=1.5)
    table = win_rates(frame).table.set_index("model")
    for model in THETA:
        lc = table.loc[model, "lc_win_rate"]
        assert lc == pytest.approx(planted[model], abs=3.0), model
        assert table.loc[model, "lc_lower"] < planted[model] < table.loc[model, "lc_upper"], model
    # The verbose model's raw rate is inflated by length, and LC takes it back.
    assert table.loc["verbose", "win_rate"] - planted["verbose"] > 10
    # AlpacaEval's covariate is the baseline's length minus the model's: longer wins = negative.
    assert table.loc["verbose", "length_coef"] == pytest.approx(-1.5, abs=0.3)


def test_no_length_effect_leaves_the_rate_alone():
    """Lengths differ between models (a would-be confounder) but the judge ignores them."""
    frame, planted = _judgments(phi=0.0, seed=1)
    table = win_rates(frame).table.set_index("model")
    for model in THETA:
        assert table.loc[model, "lc_win_rate"] == pytest.approx(planted[model], abs=3.0), model
        assert abs(table.loc[model, "length_coef"]) < 0.3, model
