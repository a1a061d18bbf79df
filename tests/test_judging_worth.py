"""What a judge is worth in human votes (analysis/judging/worth.py) resamples rows that each
stand for several interchangeable clusters: its draws must have the distribution of the
per-cluster schemes they replace (Poisson(1) per cluster; ``size`` labelled clusters drawn
without replacement)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.judging.worth import _bootstrapped, _design_rows, _subsample
from analysis.ratings.ppi import PPIData

_DRAWS = 5000
# Three model pairs; three labelled kinds (1, 2 and 3 votes per cluster) and one kind of
# judged pairs without people, with 3, 12, 25 and 10 clusters.
_WEIGHT = np.array([3.0, 12.0, 25.0, 10.0])
_N_HUMAN = np.array([1.0, 2.0, 3.0, 0.0])
_DATA = PPIData(
    models=pd.Index(["a", "b", "c"]), i=np.array([0, 0, 1]), j=np.array([1, 2, 2]), pair=np.array([0, 1, 2, 0]),
    n_judge=np.ones(4), yhat_judge=np.array([0.5, 1.0, 0.0, 1.0]), n_human=_N_HUMAN,
    y_human=np.array([1.0, 1.0, 2.0, 0.0]), yhat_human=_N_HUMAN * np.array([0.5, 1.0, 0.0, 1.0]), weight=_WEIGHT,
)


def test_bootstrap_of_kinds_resamples_as_poisson_one_per_cluster():
    """A kind of ``w`` clusters draws Poisson(w) copies: mean and variance ``w`` (one
    Poisson(1) per kind would give mean 1, ``w`` times a Poisson(1) variance ``w^2``), and the
    resampled human votes have the cluster bootstrap's mean and variance."""
    rng = np.random.default_rng(0)
    weights = np.array([_bootstrapped(_DATA.weight, rng) for _ in range(_DRAWS)])
    np.testing.assert_allclose(weights.mean(axis=0), _WEIGHT, rtol=0.05)
    np.testing.assert_allclose(weights.var(axis=0), _WEIGHT, rtol=0.1)
    votes = weights @ _N_HUMAN
    assert votes.mean() == pytest.approx(_WEIGHT @ _N_HUMAN, rel=0.02)
    assert votes.var() == pytest.approx(_WEIGHT @ _N_HUMAN**2, rel=0.1)  # sum of the clusters' Poisson(1) variances


def test_design_subsample_of_kinds_is_a_draw_without_replacement_of_clusters():
    """People kept on ``size`` of the 40 labelled clusters: per kind the kept clusters follow
    the hypergeometric law that drawing clusters one by one gives (checked against that
    draw too); independent coin flips would double the variance at half the clusters. Every
    judged pair stays judged and the kept votes are the kept clusters' votes."""
    rng = np.random.default_rng(1)
    labelled = _WEIGHT[:3]
    total, size = int(labelled.sum()), 20
    kept, votes = [], []
    rows = _design_rows(_DATA)  # a design is weights on these rows
    for _ in range(_DRAWS):
        d = replace(rows, weight=_subsample(_DATA, size, rng))
        assert d.weight.sum() == _WEIGHT.sum() and d.totals()[1] == _WEIGHT.sum()
        with_people = d.n_human > 0
        kept.append(np.bincount(d.pair[with_people], d.weight[with_people], 3))
        votes.append(d.totals()[0])
        assert votes[-1] == kept[-1] @ _N_HUMAN[:3]
    kept = np.array(kept)
    assert (kept.sum(axis=1) == size).all()
    share = labelled / total
    mean, var = size * share, size * share * (1 - share) * (total - size) / (total - 1)
    one_by_one = np.array([np.bincount(np.repeat([0, 1, 2], labelled.astype(int))[rng.choice(total, size, replace=False)],
                                       minlength=3) for _ in range(_DRAWS)])
    for draws in (kept, one_by_one):
        np.testing.assert_allclose(draws.mean(axis=0), mean, rtol=0.03)
        np.testing.assert_allclose(draws.var(axis=0), var, rtol=0.1)
    assert np.mean(votes) == pytest.approx(mean @ _N_HUMAN[:3], rel=0.02)


def _sparse_battles(seed: int, m: int = 12, pairs: int = 480, votes: int = 96) -> tuple[pd.DataFrame, pd.DataFrame]:
    """People on ``votes`` of a judge's ``pairs`` among ``m`` models (16 votes a model by default)."""
    rng = np.random.default_rng(seed)
    models = np.array([f"m{k:02d}" for k in range(m)])
    i = rng.integers(0, m, pairs)
    j = (i + rng.integers(1, m, pairs)) % m
    eta = np.linspace(-0.8, 0.8, m)[i] - np.linspace(-0.8, 0.8, m)[j] + rng.normal(0, 1.5, pairs)

    def frame(won, **extra):
        return pd.DataFrame({"model_a": models[i], "model_b": models[j], "pair_id": [f"p{k}" for k in range(pairs)],
                             "winner": np.where(won, "model_a", "model_b"), **extra})

    people = frame(rng.random(pairs) < 1 / (1 + np.exp(-eta)), judge="human", judge_type="human")
    judge = frame(rng.random(pairs) < 1 / (1 + np.exp(-1.5 * eta)), judge="J", judge_type="llm")
    return people.iloc[np.sort(rng.choice(pairs, votes, replace=False))], judge


def test_too_few_votes_per_model_get_no_worth_interval_and_say_why():
    """12 models, 16 human votes a model: people alone cannot rate the models in about a third of
    the bootstrap rounds. Those rounds were left out and the rest gave an interval read from
    quartiles read low (the rounds left out are the ones people alone know least in); they now
    count as infinite ratios, and with over a quarter of them the worth has no interval, and the
    report says why instead of reading a judge that adds little."""
    from analysis.judging.worth import judge_worth
    from analysis.report.summary import _action, _worth_line

    for seed in (0, 2):  # 33% and 42% of the rounds (one draw in three of this design gets an interval)
        worth = judge_worth(*_sparse_battles(seed), "J", seed=0, cluster="pair")
        assert worth.ratio_ci is None and worth.effective_ci is None, worth.ratio_ci
        assert worth.no_interval.startswith("too few human votes per model to price the judge: 16 per model"), \
            worth.no_interval
        assert worth.no_interval in _worth_line(worth)
        assert _action("J", worth, None).startswith("Collect more human votes before deciding on J")
