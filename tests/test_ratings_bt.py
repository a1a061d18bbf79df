"""Bradley-Terry: agreement with evalica, choix and the slow twin; ties; failures."""

from __future__ import annotations

import math

import choix
import evalica
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.ratings import ELO_SCALE, bootstrap_params, bradley_terry, rate
from reference_bt import reference_bradley_terry
from analysis.ratings.counts import aggregate

OUTCOMES = np.array(["model_a", "model_b", "tie"], dtype=object)


def simulate(theta, n, *, seed, tie_rate=0.1):
    """Battles with P(A wins) + P(tie)/2 = sigmoid(theta_a - theta_b).

    Ties happen with probability ``tie_rate`` and the decisive outcome is tilted so that the
    expected score is exactly the Bradley-Terry one: under this model counting a tie as half
    a win estimates ``theta`` without bias.
    """
    rng = np.random.default_rng(seed)
    theta = np.asarray(theta, dtype=float)
    m = len(theta)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    p_decisive_a = (p - tie_rate / 2) / (1 - tie_rate)
    tie = rng.random(n) < tie_rate
    winner = np.where(tie, 2, np.where(rng.random(n) < p_decisive_a, 0, 1))
    names = np.array([f"m{k}" for k in range(m)], dtype=object)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": OUTCOMES[winner]})


def centred(series: pd.Series) -> pd.Series:
    return series - series.mean()


@pytest.fixture(scope="module")
def battles():
    return simulate(np.linspace(-1.5, 1.5, 10), 20_000, seed=7)


def test_matches_evalica_within_a_hundredth_of_an_elo_point(battles):
    # evalica counts a tie as tie_weight = 0.5 of a win for each side: our ties="half".
    winners = battles["winner"].map(
        {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    )
    theirs = evalica.bradley_terry(battles["model_a"], battles["model_b"], winners, tolerance=1e-12, limit=10_000)
    ours = bradley_terry(battles["model_a"], battles["model_b"], battles["winner"]).scores
    their_theta = centred(np.log(theirs.scores.reindex(ours.index)))
    assert np.max(np.abs(their_theta - ours)) * ELO_SCALE < 0.01


def test_matches_choix_within_a_hundredth_of_an_elo_point(battles):
    # choix has no ties or weights. Doubling every battle leaves the MLE unchanged, and a
    # doubled tie written as one win each way is exactly "half a win each": like with like.
    ours = bradley_terry(battles["model_a"], battles["model_b"], battles["winner"]).scores
    index = {name: k for k, name in enumerate(ours.index)}
    data = []
    for a, b, w in battles[["model_a", "model_b", "winner"]].itertuples(index=False):
        i, j = index[a], index[b]
        data += [(i, j), (i, j)] if w == "model_a" else [(j, i), (j, i)] if w == "model_b" else [(i, j), (j, i)]
    theirs = choix.ilsr_pairwise(len(index), data, alpha=0.0, max_iter=10_000, tol=1e-12)
    assert np.max(np.abs(centred(pd.Series(theirs, index=ours.index)) - ours)) * ELO_SCALE < 0.01


@st.composite
def battle_sets(draw):
    m = draw(st.integers(2, 5))
    n = draw(st.integers(1, 40))
    a = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    shift = draw(st.lists(st.integers(1, m - 1), min_size=n, max_size=n))
    outcome = draw(st.lists(st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)"]), min_size=n, max_size=n))
    model_a = [f"m{x}" for x in a] + [f"m{k}" for k in range(m - 1)]
    model_b = [f"m{(x + s) % m}" for x, s in zip(a, shift)] + [f"m{k + 1}" for k in range(m - 1)]
    # A chain of ties gives every model half a win and half a loss inside one connected
    # graph, so the MLE exists whatever the random battles are.
    return model_a, model_b, outcome + ["tie"] * (m - 1)


@settings(max_examples=60, deadline=None)
@given(battle_sets())
def test_fast_fit_equals_the_slow_per_battle_twin(data):
    model_a, model_b, winner = data
    fast = bradley_terry(model_a, model_b, winner).scores
    slow = reference_bradley_terry(model_a, model_b, winner).reindex(fast.index)
    assert np.max(np.abs(fast - slow)) < 1e-4


@settings(max_examples=30, deadline=None)
@given(battle_sets(), st.integers(2, 4))
def test_integer_weights_equal_repeated_battles(data, times):
    model_a, model_b, winner = data
    weighted = bradley_terry(model_a, model_b, winner, weights=np.full(len(winner), float(times))).scores
    repeated = bradley_terry(model_a * times, model_b * times, winner * times).scores
    assert np.max(np.abs(weighted - repeated)) < 1e-8


def test_a_tie_counts_as_half_a_win_for_each_side():
    # Two models, 1 win for A, 1 loss, 2 ties: A has 1 + 1 = 2 "wins", B has 1 + 1 = 2.
    fit = bradley_terry(["A", "A", "B", "A"], ["B", "B", "A", "B"], ["model_a", "tie", "model_a", "tie (bothbad)"])
    assert fit.scores["A"] == pytest.approx(fit.scores["B"], abs=1e-12)
    # 3 wins and 2 ties for A against 1 win for B: odds (3 + 1) / (1 + 1) = 2.
    fit = bradley_terry(["A"] * 6, ["B"] * 6, ["model_a"] * 3 + ["tie", "tie (bothbad)"] + ["model_b"])
    assert fit.scores["A"] - fit.scores["B"] == pytest.approx(math.log(2.0), abs=1e-9)


def test_bothbad_is_a_tie():
    plain = bradley_terry(["A", "B", "A"], ["B", "C", "C"], ["tie", "model_a", "model_b"]).scores
    bothbad = bradley_terry(["A", "B", "A"], ["B", "C", "C"], ["tie (bothbad)", "model_a", "model_b"]).scores
    pd.testing.assert_series_equal(plain, bothbad)


def test_davidson_matches_its_closed_form_for_two_models():
    # Davidson's MLE for one pair: pi_A / pi_B = wins_A / wins_B, nu = ties / sqrt(wins_A wins_B).
    winner = ["model_a"] * 6 + ["model_b"] * 2 + ["tie"] * 4
    fit = bradley_terry(["A"] * 12, ["B"] * 12, winner, ties="davidson")
    assert fit.scores["A"] - fit.scores["B"] == pytest.approx(math.log(6 / 2), abs=1e-8)
    assert math.exp(fit.extra["log_nu"]) == pytest.approx(4 / math.sqrt(6 * 2), rel=1e-8)


def test_davidson_recovers_planted_strengths_and_tie_parameter():
    rng = np.random.default_rng(3)
    theta, nu = np.array([-0.8, 0.0, 0.5, 1.0]), 0.6
    a = rng.integers(0, 4, 40_000)
    b = (a + rng.integers(1, 4, 40_000)) % 4
    weights = np.stack([np.exp(theta[a]), np.exp(theta[b]), nu * np.exp((theta[a] + theta[b]) / 2)], axis=1)
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    outcome = (rng.random(len(a))[:, None] > np.cumsum(probabilities, axis=1)).sum(axis=1)
    names = np.array(["m0", "m1", "m2", "m3"], dtype=object)
    fit = bradley_terry(names[a], names[b], OUTCOMES[outcome], ties="davidson")
    se = np.sqrt(np.diag(fit.covariance()))
    assert np.all(np.abs(fit.scores.to_numpy() - (theta - theta.mean())) < 4 * se[:4])
    assert abs(fit.extra["log_nu"] - math.log(nu)) < 4 * se[4]


def test_davidson_intervals_from_sandwich_and_bootstrap_agree():
    frame = simulate([-0.5, 0.0, 0.5, 1.0], 8000, seed=12, tie_rate=0.25)
    sandwich = rate(frame, "bt-davidson").table.set_index("model")
    boot = rate(frame, "bt-davidson", bootstrap=300, seed=3).table.set_index("model")
    assert np.allclose(sandwich["rating"], boot["rating"])
    width = lambda t: t["upper"] - t["lower"]  # noqa: E731
    assert np.allclose(width(sandwich), width(boot), rtol=0.2)


def test_planted_ratings_are_recovered():
    theta = np.array([-1.2, -0.4, 0.0, 0.3, 0.9, 1.4])
    frame = simulate(theta, 60_000, seed=11)
    table = rate(frame, "bt", bootstrap=300, seed=1).table.set_index("model")
    truth = pd.Series(1000 + ELO_SCALE * (theta - theta.mean()), index=[f"m{k}" for k in range(6)]).reindex(table.index)
    error = (table["rating"] - truth).abs()
    assert error.max() < 15
    assert ((table["lower"] <= truth) & (truth <= table["upper"])).sum() >= 5
    assert list(table.index) == [f"m{k}" for k in reversed(range(6))]


def test_anchor_pins_one_model_and_keeps_differences():
    frame = simulate([0.0, 0.5, 1.0], 3000, seed=2)
    free = rate(frame, "bt").table.set_index("model")
    pinned = rate(frame, "bt", anchor=("m0", 800.0)).table.set_index("model")
    assert pinned.loc["m0", "rating"] == pytest.approx(800.0)
    # Pinned by choice: no interval, and the ranks of the centred ratings.
    assert np.isnan(pinned.loc["m0", ["lower", "upper"]].to_numpy(float)).all()
    assert pinned["rank"].tolist() == free.loc[pinned.index, "rank"].tolist()
    gaps = pinned["rating"] - free["rating"]
    assert np.allclose(gaps, gaps.iloc[0])
    # Relative to a pinned model the others are less certain than relative to the mean.
    assert (pinned.loc["m2", "upper"] - pinned.loc["m2", "lower"]) > (free.loc["m2", "upper"] - free.loc["m2", "lower"])


def test_bootstrap_is_seeded():
    fit = bradley_terry(*simulate([0.0, 0.4, 0.9], 2000, seed=5).T.to_numpy())
    same = bootstrap_params(fit, 50, seed=9).params, bootstrap_params(fit, 50, seed=9).params
    assert np.array_equal(*same)
    assert not np.array_equal(same[0], bootstrap_params(fit, 50, seed=10).params)


def test_bootstrap_spread_agrees_with_the_sandwich():
    fit = bradley_terry(*simulate(np.linspace(-1, 1, 8), 30_000, seed=4).T.to_numpy())
    spread = bootstrap_params(fit, 400, seed=0).params.std(axis=0)
    sandwich = np.sqrt(np.diag(fit.covariance()))
    assert np.allclose(spread, sandwich, rtol=0.15)


def test_bootstrap_refuses_weighted_battles():
    frame = simulate([0.0, 1.0], 200, seed=1)
    fit = bradley_terry(frame["model_a"], frame["model_b"], frame["winner"], weights=np.full(200, 0.5))
    with pytest.raises(ValueError, match="unweighted"):
        bootstrap_params(fit, 10)


def test_a_model_that_never_lost_does_not_converge():
    model_a = ["A", "A", "A", "B", "C"]
    model_b = ["B", "C", "B", "C", "B"]
    winner = ["model_a", "model_a", "model_a", "model_a", "model_a"]
    with pytest.raises(RuntimeError, match="did not converge"):
        bradley_terry(model_a, model_b, winner)
    with pytest.raises(RuntimeError, match="did not converge"):
        rate(pd.DataFrame({"model_a": model_a, "model_b": model_b, "winner": winner}), "bt")
    # A ridge penalty makes the estimate exist; A then rates highest.
    assert bradley_terry(model_a, model_b, winner, l2=0.1).scores.idxmax() == "A"


def test_too_few_iterations_raise_instead_of_returning_a_guess():
    frame = simulate([0.0, 2.0, 4.0], 3000, seed=8)
    with pytest.raises(RuntimeError, match="did not converge in 1 Newton"):
        bradley_terry(frame["model_a"], frame["model_b"], frame["winner"], max_iter=1)


def test_newton_rounds_fits_each_round_as_newton_and_flags_where_newton_raises():
    """The batched Newton fit (the PPI fits' rounds, analysis/ratings/ppi.py) gives each round
    newton's own solution, and the rounds newton refuses (a model that never lost diverges; too
    few iterations; a singular information) hold the error newton raises, without disturbing
    the others."""
    from analysis.ratings.bt import newton, newton_rounds
    from analysis.ratings.likelihoods import HalfTie

    frame = simulate([0.0, 0.5, 1.0, 2.0], 400, seed=3)
    counts = aggregate(frame["model_a"], frame["model_b"], frame["winner"])
    rng = np.random.default_rng(4)
    cells = rng.poisson(counts.cells, size=(6, counts.cells.size)).astype(float).reshape(6, -1, 3)
    cells[3, :, 1][counts.i == 0] = cells[3, :, 0][counts.j == 0] = 0  # model 0 never lost
    cells[3, :, 2][(counts.i == 0) | (counts.j == 0)] = 0
    batch = counts.with_counts(cells[:, :, 0], cells[:, :, 1], cells[:, :, 2])
    start = np.zeros((6, counts.n_models))
    for max_iter in (100, 2):
        x, errors = newton_rounds(HalfTie(), batch, start, max_iter=max_iter)
        for r in range(6):
            single = counts.with_counts(cells[r, :, 0], cells[r, :, 1], cells[r, :, 2])
            try:
                alone, _ = newton(HalfTie(), single, start[r], max_iter=max_iter)
            except RuntimeError as exc:
                assert type(errors[r]) is type(exc) and str(errors[r]) == str(exc)
                continue
            assert r not in errors
            np.testing.assert_allclose(x[r], alone, rtol=1e-12, atol=1e-12)
        assert sorted(errors) == ([3] if max_iter == 100 else list(range(6)))
        assert all(("ratings diverge" if max_iter == 100 else "in 2 Newton iterations") in str(e) for e in errors.values())
    # A round whose win probabilities saturate (information 0: newton's solve is singular)
    # is flagged; the solve of the others goes on.
    saturated = start.copy()
    saturated[1] = np.linspace(-1000, 1000, counts.n_models)
    with np.errstate(over="ignore"):  # exp(2000): the saturation itself
        x, errors = newton_rounds(HalfTie(), batch, saturated)
        with pytest.raises(RuntimeError, match="did not converge") as alone:
            newton(HalfTie(), counts.with_counts(cells[1, :, 0], cells[1, :, 1], cells[1, :, 2]), saturated[1])
    assert sorted(errors) == [1, 3] and str(errors[1]) == str(alone.value)
    np.testing.assert_allclose(x[0], newton(HalfTie(), counts.with_counts(*cells[0].T), start[0])[0], atol=1e-12)


def test_disconnected_models_are_refused():
    with pytest.raises(ValueError, match="never compared"):
        bradley_terry(["A", "A", "C", "C"], ["B", "B", "D", "D"], ["model_a", "model_b", "model_a", "model_b"])


def test_unknown_winner_and_self_battles_are_refused():
    with pytest.raises(ValueError, match="unknown winner"):
        aggregate(["A"], ["B"], ["left"])
    with pytest.raises(ValueError, match="itself"):
        aggregate(["A", "A"], ["A", "B"], ["tie", "tie"])
