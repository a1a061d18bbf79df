"""Intervals as wide as the data repeat: a simulation where each model's answer to a prompt
sits in every pair of that prompt (10 pairs with 5 models), so the pairs of one prompt share
its answers' quality. Bradley-Terry and PPI++ intervals clustered by prompt cover the true
strengths as stated; clustered by pair (the old default) they do not."""

import numpy as np
import pandas as pd
import pytest

from analysis.ratings import rate
from analysis.ratings.bt import ELO_SCALE, fit_counts
from analysis.ratings.counts import aggregate
from analysis.ratings.ppi import ppi_ratings

THETA = np.array([-0.6, -0.3, 0.0, 0.3, 0.6])  # people's strengths before the answers' own quality
SIGMA_U = 1.5  # sd of one model's answer quality on one prompt (log-odds)
MODELS = np.array([f"m{k}" for k in range(len(THETA))])
I, J = np.triu_indices(len(THETA), 1)


def true_ratings() -> np.ndarray:
    """The population Bradley-Terry ratings: the fit to the expected win rates over answers
    (Gauss-Hermite over u_i - u_j ~ N(0, 2 sigma^2)), centred on 1000 as the tables are."""
    z, w = np.polynomial.hermite_e.hermegauss(60)
    p = (1 / (1 + np.exp(-((THETA[I] - THETA[J])[:, None] + np.sqrt(2) * SIGMA_U * z[None])))) @ (w / w.sum())
    counts = aggregate(np.r_[MODELS[I], MODELS[I]], np.r_[MODELS[J], MODELS[J]],
                       ["model_a"] * len(I) + ["model_b"] * len(I), weights=np.r_[p, 1 - p] * 1e6)
    return 1000 + ELO_SCALE * fit_counts(counts).scores.sort_index().to_numpy()


def prompts(rng, n_prompts):
    """Every pair of models on every prompt: prompt, models i < j, and the log-odds that i wins."""
    u = rng.normal(0, SIGMA_U, (n_prompts, len(THETA)))
    prompt = np.repeat(np.arange(n_prompts), len(I))
    i, j = np.tile(I, n_prompts), np.tile(J, n_prompts)
    return prompt, i, j, THETA[i] - THETA[j] + u[prompt, i] - u[prompt, j]


def battles(prompt, i, j, won, **extra) -> pd.DataFrame:
    return pd.DataFrame({"model_a": MODELS[i], "model_b": MODELS[j], "winner": np.where(won, "model_a", "model_b"),
                         "pair_id": [f"p{k}" for k in range(len(i))], "prompt": [f"q{k}" for k in prompt], **extra})


def covered(table, truth) -> np.ndarray:
    t = table.set_index("model").sort_index()
    return (t["lower"].to_numpy() <= truth) & (truth <= t["upper"].to_numpy())


@pytest.mark.simulation
def test_bt_intervals_cover_when_clustered_by_prompt_and_not_by_pair():
    truth, rng = true_ratings(), np.random.default_rng(0)
    hits = {"pair": [], "prompt": []}
    for _ in range(300):
        prompt, i, j, eta = prompts(rng, 100)
        frame = battles(prompt, i, j, rng.random(len(eta)) < 1 / (1 + np.exp(-eta)))
        for cluster in hits:
            hits[cluster].append(covered(rate(frame, "bt", cluster=cluster).table, truth))
        assert "clustered by prompt (100 prompts)" in rate(frame, "bt").interval  # the default
    coverage = {c: float(np.mean(h)) for c, h in hits.items()}
    assert 0.93 <= coverage["prompt"] <= 0.97, coverage
    assert coverage["pair"] < 0.93, coverage


@pytest.mark.simulation
def test_ppi_intervals_cover_when_clustered_by_prompt_and_not_by_pair():
    """People (two votes a pair) on half the pairs, a judge that reads quality less sharply and
    favours m0 over m4 on every pair: PPI++ on people's scale."""
    truth, rng = true_ratings(), np.random.default_rng(1)
    lean = np.array([0.5, 0, 0, 0, -0.5])
    hits = {"pair": [], "prompt": []}
    for _ in range(200):
        prompt, i, j, eta = prompts(rng, 80)
        n = len(eta)
        labelled = rng.random(n) < 0.5
        judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-(0.8 * eta + lean[i] - lean[j]))),
                        judge="J", judge_type="llm")
        people = [battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                          judge_type="human")[labelled] for _ in range(2)]
        frame = pd.concat([judge, *people], ignore_index=True)
        for cluster in hits:
            hits[cluster].append(covered(ppi_ratings(frame, "J", cluster=cluster).table.table, truth))
    coverage = {c: float(np.mean(h)) for c, h in hits.items()}
    assert 0.93 <= coverage["prompt"] <= 0.97, coverage
    assert coverage["pair"] < 0.93, coverage


@pytest.mark.parametrize("cluster", ["pair", "prompt"])
def test_cluster_option_reaches_the_interval_label(cluster):
    prompt, i, j, eta = prompts(np.random.default_rng(2), 20)
    frame = battles(prompt, i, j, eta > 0)
    frame.loc[::3, "winner"] = "model_b"
    unit = "prompt (20 prompts)" if cluster == "prompt" else "pair_id (200 pairs)"
    assert f"clustered by {unit}" in rate(frame, "bt", cluster=cluster).interval


@pytest.mark.parametrize("people_on", ["random", "one category"])
def test_ppi_warns_when_peoples_pairs_are_not_a_random_sample(people_on):
    rng = np.random.default_rng(3)
    prompt, i, j, eta = prompts(rng, 80)
    category = np.where(prompt % 2 == 0, "code", "chat")
    judge = battles(prompt, i, j, rng.random(len(eta)) < 1 / (1 + np.exp(-eta)), judge="J", judge_type="llm",
                    category=category)
    labelled = rng.random(len(eta)) < (0.4 if people_on == "random" else np.where(category == "code", 0.8, 0.0))
    people = battles(prompt, i, j, rng.random(len(eta)) < 1 / (1 + np.exp(-eta)), judge="human",
                     judge_type="human", category=category)[labelled]
    warnings = ppi_ratings(pd.concat([judge, people], ignore_index=True), "J").warnings
    if people_on == "random":
        assert warnings == ()
    else:
        assert any("by category" in w and "code 100% vs" in w for w in warnings), warnings
