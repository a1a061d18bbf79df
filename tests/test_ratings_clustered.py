"""Votes of several people on one pair are one cluster: intervals that know it, and a check
that intervals which treat every vote as independent fail on such data.

Each simulated data set has pairs of responses (a ``pair_id``) from two of four models,
each judged by three voters whose votes are correlated: with probability ``SHARED`` all
three give one common vote (the pair is clear-cut for everybody), otherwise each votes on
their own. Every single vote, shared or not, follows the Bradley-Terry probabilities with
half-win ties, so the true ratings are known exactly; only the independence is gone
(intra-pair correlation 0.8, a design effect of 1 + 2 * 0.8 = 2.6 on the variance).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.ratings import CENTRE, ELO_SCALE, aggregate, bootstrap_params, fit_counts, rate

DATA_SETS = 200
PAIRS = 200
VOTERS = 3
SHARED = 0.8
ROUNDS = 300
THETA = np.array([-0.7, -0.2, 0.3, 0.6])
TIE_RATE = 0.15
NAMES = np.array([f"m{k}" for k in range(len(THETA))], dtype=object)
WINNERS = np.array(["model_a", "model_b", "tie"], dtype=object)


def correlated_votes(rng: np.random.Generator) -> pd.DataFrame:
    m = len(THETA)
    a = rng.integers(0, m, PAIRS)
    b = (a + rng.integers(1, m, PAIRS)) % m
    p = 1 / (1 + np.exp(-(THETA[a] - THETA[b])))
    outcome = np.stack([p - TIE_RATE / 2, 1 - p - TIE_RATE / 2, np.full(PAIRS, TIE_RATE)], axis=1)

    def draw(u):  # one vote per row of u (pairs x voters) from the pair's outcome probabilities
        return (u[..., None] > np.cumsum(outcome, axis=1)[:, None, :2]).sum(axis=-1)

    own = draw(rng.random((PAIRS, VOTERS)))
    common = draw(rng.random((PAIRS, 1)))
    votes = np.where(rng.random((PAIRS, 1)) < SHARED, common, own)
    return pd.DataFrame(
        {
            "model_a": np.repeat(NAMES[a], VOTERS),
            "model_b": np.repeat(NAMES[b], VOTERS),
            "winner": WINNERS[votes.ravel()],
            "pair_id": np.repeat([f"p{k}" for k in range(PAIRS)], VOTERS),
        }
    )


@pytest.fixture(scope="module")
def coverage() -> dict[str, float]:
    rng = np.random.default_rng(20240502)
    truth = CENTRE + ELO_SCALE * (THETA - THETA.mean())
    hits = dict.fromkeys(["sandwich", "bootstrap", "independent sandwich", "independent bootstrap"], 0)
    for k in range(DATA_SETS):
        frame = correlated_votes(rng)
        for label, data in (("", frame), ("independent ", frame.drop(columns="pair_id"))):
            for kind, rounds in (("sandwich", 0), ("bootstrap", ROUNDS)):
                table = rate(data, "bt", bootstrap=rounds, seed=k).table.set_index("model").loc[NAMES]
                hits[label + kind] += int(((table["lower"] <= truth) & (truth <= table["upper"])).sum())
    return {kind: count / (DATA_SETS * len(THETA)) for kind, count in hits.items()}


@pytest.mark.parametrize("kind", ["sandwich", "bootstrap"])
def test_pair_clustered_intervals_cover_the_true_rating_92_to_98_percent_of_the_time(coverage, kind):
    assert 0.92 <= coverage[kind] <= 0.98, coverage


@pytest.mark.parametrize("kind", ["sandwich", "bootstrap"])
def test_intervals_that_treat_votes_as_independent_undercover(coverage, kind):
    # The intervals before pair clustering: the test above would catch them.
    assert coverage[f"independent {kind}"] < 0.85, coverage


def test_one_battle_per_cluster_gives_the_independent_intervals():
    frame = correlated_votes(np.random.default_rng(3))
    singles = frame.assign(pair_id=[f"v{k}" for k in range(len(frame))])
    clustered = rate(singles, "bt").table
    plain = rate(frame.drop(columns="pair_id"), "bt").table
    assert np.allclose(clustered[["lower", "upper"]], plain[["lower", "upper"]], atol=1e-9)
    assert "clustered by pair_id" in rate(frame, "bt").interval
    assert "independent" in rate(frame.drop(columns="pair_id"), "bt").interval


def test_clustered_sandwich_matches_a_sum_over_pairs_written_out():
    """The slow twin: per-vote scores summed within each pair, then squared, by hand."""
    frame = correlated_votes(np.random.default_rng(4))
    counts = aggregate(frame["model_a"], frame["model_b"], frame["winner"], groups=frame["pair_id"])
    fit = fit_counts(counts)
    theta = fit.scores
    m = len(theta)
    meat = np.zeros((m, m))
    for _, votes in frame.groupby("pair_id"):
        g = np.zeros(m)
        for a, b, w in votes[["model_a", "model_b", "winner"]].itertuples(index=False):
            i, j = theta.index.get_loc(a), theta.index.get_loc(b)
            p = 1 / (1 + np.exp(-(theta.iloc[i] - theta.iloc[j])))
            s = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[w] - p
            g[i] += s
            g[j] -= s
        meat += np.outer(g, g)
    information = fit.likelihood.information(fit.params, counts)
    bread = np.linalg.pinv(information)
    assert np.allclose(fit.covariance(), bread @ meat @ bread, atol=1e-10)


def test_cluster_bootstrap_resamples_pairs():
    """Its spread matches the clustered sandwich, and exceeds the vote-level one."""
    frame = pd.concat([correlated_votes(np.random.default_rng(s)) for s in range(10)], ignore_index=True)
    frame["pair_id"] = frame["pair_id"] + (np.arange(len(frame)) // (PAIRS * VOTERS)).astype(str)
    counts = aggregate(frame["model_a"], frame["model_b"], frame["winner"], groups=frame["pair_id"])
    fit = fit_counts(counts)
    replicates = bootstrap_params(fit, 600, seed=1)
    assert replicates.n_clusters == 10 * PAIRS
    sandwich = np.sqrt(np.diag(fit.covariance()))
    assert np.allclose(replicates.params.std(axis=0), sandwich, rtol=0.15)
    independent = np.sqrt(np.diag(fit_counts(aggregate(frame["model_a"], frame["model_b"], frame["winner"])).covariance()))
    assert np.all(sandwich > 1.4 * independent)
