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

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.ratings import ELO_SCALE, aggregate, bootstrap_params, fit_counts, online_elo, rate
from analysis.ratings.elo import bootstrap_orders

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
    """Share of (data set, model) whose 95% interval holds the true rating: the intervals
    ``rate(frame, "bt")`` reports (clustered), and the same counts taken as independent."""
    rng = np.random.default_rng(20240502)
    truth = ELO_SCALE * (THETA - THETA.mean())
    z = 1.959963984540054
    hits = dict.fromkeys(["sandwich", "bootstrap", "independent sandwich", "independent bootstrap"], 0)
    for k in range(DATA_SETS):
        frame = correlated_votes(rng)
        clustered = aggregate(frame["model_a"], frame["model_b"], frame["winner"], groups=frame["pair_id"])
        assert list(clustered.models) == list(NAMES)
        for label, counts in (("", clustered), ("independent ", replace(clustered, clusters=None))):
            fit = fit_counts(counts)
            estimate = ELO_SCALE * fit.scores.to_numpy()
            half = z * ELO_SCALE * np.sqrt(np.diag(fit.covariance()))
            hits[label + "sandwich"] += int(np.sum(np.abs(estimate - truth) <= half))
            samples = ELO_SCALE * bootstrap_params(fit, ROUNDS, seed=k).params
            lower, upper = np.percentile(samples, [2.5, 97.5], axis=0)
            hits[label + "bootstrap"] += int(np.sum((lower <= truth) & (truth <= upper)))
    return {kind: count / (DATA_SETS * len(THETA)) for kind, count in hits.items()}


@pytest.mark.simulation
@pytest.mark.parametrize("kind", ["sandwich", "bootstrap"])
def test_pair_clustered_intervals_cover_the_true_rating_92_to_98_percent_of_the_time(coverage, kind):
    assert 0.92 <= coverage[kind] <= 0.98, coverage


@pytest.mark.simulation
@pytest.mark.parametrize("kind", ["sandwich", "bootstrap"])
def test_intervals_that_treat_votes_as_independent_undercover(coverage, kind):
    # The intervals before pair clustering: the test above would catch them.
    assert coverage[f"independent {kind}"] < 0.85, coverage


def test_rate_clusters_by_pair_id_and_one_vote_per_pair_is_the_independent_case():
    frame = correlated_votes(np.random.default_rng(3))
    # rate() is what reports use: its intervals are the clustered ones checked above.
    counts = aggregate(frame["model_a"], frame["model_b"], frame["winner"], groups=frame["pair_id"])
    lower, upper = fit_counts(counts).elo_intervals()
    table = rate(frame, "bt").table.set_index("model").loc[NAMES]
    assert np.allclose(table["lower"], lower) and np.allclose(table["upper"], upper)
    singles = frame.assign(pair_id=[f"v{k}" for k in range(len(frame))])
    clustered = rate(singles, "bt").table
    plain = rate(frame.drop(columns="pair_id"), "bt").table
    assert np.allclose(clustered[["lower", "upper"]], plain[["lower", "upper"]], atol=1e-9)
    assert "clustered by pair_id" in rate(frame, "bt").interval
    assert "independent" in rate(frame.drop(columns="pair_id"), "bt").interval


@pytest.mark.parametrize("method", ["bt", "elo", "trueskill"])
def test_a_pair_id_column_without_any_id_is_no_clustering(method):
    """A plain battle table is read with an all-missing pair_id column: that is the
    independent case (and its label), not a million singleton clusters."""
    frame = correlated_votes(np.random.default_rng(4)).drop(columns="pair_id")
    empty = rate(frame.assign(pair_id=pd.Series([None] * len(frame), dtype=object)), method, bootstrap=20)
    plain = rate(frame, method, bootstrap=20)
    assert "no pair_id" in empty.interval and empty.interval == plain.interval
    assert np.allclose(empty.table[["lower", "upper"]], plain.table[["lower", "upper"]])


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


def test_pandalm_human_intervals_widen_to_the_pair_level_ones(shared_data):
    """2,997 votes of three annotators on 999 pairs: 15-16 Elo half-widths as if every vote
    were independent, 22-27 when pairs are the unit (sandwich and pair bootstrap agree)."""
    import warnings

    from analysis.frames import load_frame

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = load_frame([shared_data / "pandalm"], judge="human")
    assert (len(frame), frame["pair_id"].nunique()) == (2997, 999)

    def half_widths(table):
        t = table.table.set_index("model").sort_index()
        return (t["upper"] - t["lower"]) / 2, t["rank"]

    independent, old_rank = half_widths(rate(frame.drop(columns=["pair_id", "prompt_id", "prompt"]), "bt"))
    sandwich, new_rank = half_widths(rate(frame, "bt", cluster="pair"))
    boot, _ = half_widths(rate(frame, "bt", bootstrap=500, seed=0, cluster="pair"))
    assert independent.between(13.5, 17).all(), independent
    assert sandwich.between(24, 29).all() and boot.between(21, 29).all(), (sandwich, boot)
    assert (sandwich / independent).between(1.6, 1.8).all()
    # CI-based ranks claim less once the intervals are honest.
    assert (new_rank != old_rank).any() and (new_rank <= old_rank).all()


def test_a_resample_where_a_model_never_loses_is_fitted_with_the_stated_prior():
    """A model with one loss among a few wins: some pair resamples drop the loss; the MLE
    there does not exist. Before, the whole bootstrap raised; now the round is kept, fitted
    with the weak prior, and counted in the interval text."""
    rows = [("A", "B", "model_a"), ("A", "C", "model_a"), ("A", "B", "model_a"), ("A", "C", "model_b")]
    rows += [("B", "C", w) for w in ["model_a", "model_b"] * 20]
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    frame["pair_id"] = [f"p{k}" for k in range(len(frame))]
    table = rate(frame, "bt", bootstrap=200, seed=0)
    assert "fitted with a N(0, 10^2) prior" in table.interval
    assert np.isfinite(table.table[["lower", "upper"]].to_numpy()).all()
    a = table.table.set_index("model").loc["A"]
    assert a["upper"] - a["lower"] > 400  # the rounds without a loss for A stretch its interval


def planted_copies(pairs: int, copies: int, seed: int) -> pd.DataFrame:
    """``pairs`` Bradley-Terry battles among three models, each repeated ``copies`` times
    under one ``pair_id``: the copies carry no information beyond the first."""
    rng = np.random.default_rng(seed)
    theta = np.array([-0.5, 0.0, 0.5])
    a = rng.integers(0, 3, pairs)
    b = (a + rng.integers(1, 3, pairs)) % 3
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    votes = np.where(rng.random(pairs) < 0.1, 2, np.where(rng.random(pairs) < p, 0, 1))
    frame = pd.DataFrame(
        {"model_a": NAMES[a], "model_b": NAMES[b], "winner": WINNERS[votes], "pair_id": [f"p{k}" for k in range(pairs)]}
    )
    return frame.loc[frame.index.repeat(copies)].reset_index(drop=True)


def mean_width(frame: pd.DataFrame, method: str, **options) -> float:
    table = rate(frame, method, seed=1, **options).table
    return float((table["upper"] - table["lower"]).mean())


STREAMED = {
    "elo": dict(bootstrap=1000),
    "elo-avg": dict(bootstrap=300, permutations=5),
    "trueskill": dict(bootstrap=100),
}


@pytest.mark.parametrize("method", list(STREAMED))
def test_streamed_bootstraps_resample_whole_pairs(method):
    """Four identical votes per pair: resampling pairs gives intervals about sqrt(4) = 2
    times those of resampling votes. (Online Elo weighs recent battles more, which puts
    its ratio a little below 2: about 1.8 here. With far more battles than its memory of
    a few hundred, the copies of a pair rarely fall in one window and the ratio tends to
    1, rightly: its final rating then rests on votes of different pairs.)"""
    frame = planted_copies(100 if method != "trueskill" else 50, 4, seed=0)
    clustered = mean_width(frame, method, **STREAMED[method])
    independent = mean_width(frame.drop(columns="pair_id"), method, **STREAMED[method])
    assert 1.6 <= clustered / independent <= 2.5, (clustered, independent)
    pairs = frame["pair_id"].nunique()
    assert f"clustered by pair_id ({pairs} pairs)" in rate(frame, method, bootstrap=2).interval
    assert "every vote independent" in rate(frame.drop(columns="pair_id"), method, bootstrap=2).interval


@pytest.mark.parametrize("method", list(STREAMED))
def test_one_vote_per_pair_is_the_battle_bootstrap_exactly(method):
    frame = planted_copies(200, 1, seed=1)
    options = dict(STREAMED[method], bootstrap=20)
    clustered = rate(frame, method, seed=3, **options).table
    plain = rate(frame.drop(columns="pair_id"), method, seed=3, **options).table
    pd.testing.assert_frame_equal(clustered, plain)


def test_independent_votes_grouped_into_pairs_keep_their_elo_intervals():
    """Pairs of 1 to 5 votes drawn independently: the padded cluster resamples of rate()
    give the vote-level widths, within the noise of 1,000 rounds."""
    frame = planted_copies(400, 1, seed=2)
    frame["pair_id"] = np.repeat(np.arange(400), np.random.default_rng(2).integers(1, 6, 400))[:400]
    ratio = mean_width(frame, "elo", bootstrap=1000) / mean_width(frame.drop(columns="pair_id"), "elo", bootstrap=1000)
    assert 0.9 <= ratio <= 1.1


def test_padded_cluster_resamples_stream_exactly_as_their_unpadded_selves():
    """Clusters of 1 to 12 battles: each row draws whole clusters, in shuffled order, and
    the pad index that evens out the rows' lengths leaves every rating bit-for-bit alone."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 13, 40)
    clusters = rng.permutation(np.repeat(np.arange(40), sizes))
    n = len(clusters)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    outcome = rng.integers(0, 3, n)
    orders = bootstrap_orders(n, 50, np.random.default_rng(0), clusters=clusters)
    padded = online_elo(a, b, outcome, 4, k=32, orders=orders)
    lengths = (orders < n).sum(axis=1)
    assert lengths.min() < orders.shape[1]  # some rows carry pads
    adjacent = 0
    for row, ratings in zip(orders, padded):
        battles = row[row < n]
        assert set(row[row >= n]) <= {n}
        copies = np.bincount(battles, minlength=n)
        drawn = np.bincount(clusters, weights=copies) / sizes  # times each cluster was drawn
        assert np.array_equal(copies, drawn[clusters]) and drawn.sum() == 40
        adjacent += np.mean(clusters[battles[1:]] == clusters[battles[:-1]])
        # The same stream unpadded through the same side-by-side code: equal to the bit.
        assert np.array_equal(ratings, online_elo(a, b, outcome, 4, k=32, orders=battles[None])[0])
        assert np.allclose(ratings, online_elo(a[battles], b[battles], outcome[battles], 4, k=32))
    assert adjacent / len(orders) < 0.2  # a drawn pair's battles are spread out, not in a block
