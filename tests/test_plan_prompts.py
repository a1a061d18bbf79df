"""The planner's widths where a prompt carries several pairs. A model's answer to a prompt sits
in several of its pairs, so people's outcomes on a prompt's pairs move together; the ratings
command clusters its intervals by prompt there, and the planner predicted them as if every pair
stood alone: on PandaLM its widths were 17% narrower than the command's (a replay clustered by
pair had hidden it). Planted: each model's answer quality varies by prompt (sd 1.5 log-odds), and
the truth is the spread of the prediction-powered ratings over fresh draws of the same design;
with no answer effect (sd 0) the prompts' term is nil and the prediction stays as it was."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.plan import make_plan, prompt_covariance
from analysis.ratings.ppi import ppi_ratings
from analysis.stats import z_two_sided
from test_clustering_coverage import MODELS, THETA

PROMPTS, SHARE, REPLICATES = 60, 0.6, 80
I, J = np.triu_indices(len(THETA), 1)


def _draw(rng: np.random.Generator, sigma_u: float) -> pd.DataFrame:
    """Every pair of five models on each prompt; the judge in both orders on every pair (sharper
    than people), one person on a uniform share of the pairs."""
    u = rng.normal(0, sigma_u, (PROMPTS, len(THETA)))
    prompt = np.repeat(np.arange(PROMPTS), len(I))
    i, j = np.tile(I, PROMPTS), np.tile(J, PROMPTS)
    eta = THETA[i] - THETA[j] + u[prompt, i] - u[prompt, j]
    common = {"pair_id": [f"p{k}" for k in range(len(i))], "prompt": [f"q{g}" for g in prompt]}
    frames = []
    for flip in (False, True):  # the judge's two orders, as the pair's two listings
        won = rng.random(len(eta)) < 1 / (1 + np.exp(-1.5 * eta))
        a, b = (MODELS[j], MODELS[i]) if flip else (MODELS[i], MODELS[j])
        first = ~won if flip else won
        frames.append(pd.DataFrame({**common, "model_a": a, "model_b": b,
                                    "winner": np.where(first, "model_a", "model_b"), "judge": "J",
                                    "judge_type": "llm"}))
    voted = rng.random(len(eta)) < SHARE
    won = rng.random(len(eta)) < 1 / (1 + np.exp(-eta))
    people = pd.DataFrame({**common, "model_a": MODELS[i], "model_b": MODELS[j],
                           "winner": np.where(won, "model_a", "model_b"), "judge": "human", "judge_type": "human"})
    return pd.concat([*frames, people[voted]], ignore_index=True)


def _predicted_and_true(sigma_u: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: the planner's width for the votes in hand (mean over draws), the width the
    ratings' spread over the draws gives, and the prompts' term's share of the predicted variance."""
    rng = np.random.default_rng(seed)
    predicted, ratings, share = [], [], []
    for _ in range(REPLICATES):
        frame = _draw(rng, sigma_u)
        plan = make_plan(frame, "J", 10)
        predicted.append(plan.widths.set_index("model")["now"].reindex(MODELS).to_numpy())
        rated = ppi_ratings(frame, "J").table.table.set_index("model")["rating"]
        ratings.append(rated.reindex(MODELS).to_numpy())
        share.append(np.trace(prompt_covariance(plan.pairs)) / (len(I) * PROMPTS))
    true = 2 * z_two_sided(0.95) * np.std(ratings, axis=0, ddof=1)
    return np.mean(predicted, axis=0), true, np.array(share)


@pytest.mark.simulation
def test_the_predicted_widths_hold_where_answers_are_shared_across_a_prompts_pairs():
    predicted, true, share = _predicted_and_true(1.5, seed=0)
    ratio = predicted / true
    assert 0.9 <= ratio.mean() <= 1.15 and ratio.min() > 0.75, (predicted, true)
    assert share.mean() > 0.02  # the prompts' term is there, and it is what widens the prediction


@pytest.mark.simulation
def test_without_an_answer_effect_the_prompts_term_is_nil():
    predicted, true, share = _predicted_and_true(0.0, seed=1)
    ratio = predicted / true
    assert 0.9 <= ratio.mean() <= 1.15 and ratio.min() > 0.75, (predicted, true)
    assert abs(share.mean()) < 0.01
