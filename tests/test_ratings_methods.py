"""Online Elo, order-averaged Elo, TrueSkill, style control and the result table (the LC win
rate is tested in test_winrate_planted.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.ratings import ELO_SCALE, METHODS, online_elo, rank_with_uncertainty, rate
from analysis.ratings.style import frame_covariates
from style_oracle import style_counts

OUTCOMES = np.array(["model_a", "model_b", "tie"], dtype=object)


def simulate(theta, n, *, seed):
    rng = np.random.default_rng(seed)
    theta = np.asarray(theta, dtype=float)
    a = rng.integers(0, len(theta), n)
    b = (a + rng.integers(1, len(theta), n)) % len(theta)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    tie = rng.random(n) < 0.1
    winner = np.where(tie, 2, np.where(rng.random(n) < p, 0, 1))
    names = np.array([f"m{k}" for k in range(len(theta))], dtype=object)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": OUTCOMES[winner]})


def naive_elo(frame, k=4.0, init=1000.0):
    """Elo (1978) update, one battle at a time, written out plainly."""
    ratings: dict[str, float] = {}
    for a, b, w in frame[["model_a", "model_b", "winner"]].itertuples(index=False):
        ra, rb = ratings.setdefault(a, init), ratings.setdefault(b, init)
        expected = 1 / (1 + 10 ** ((rb - ra) / 400))
        score = {"model_a": 1.0, "model_b": 0.0}.get(w, 0.5)
        ratings[a] = ra + k * (score - expected)
        ratings[b] = rb - k * (score - expected)
    return pd.Series(ratings)


def test_every_named_method_is_registered():
    assert {"elo", "elo-avg", "bt", "bt-davidson", "trueskill", "bt-style"} <= set(METHODS)
    with pytest.raises(ValueError, match="unknown rating method"):
        rate(simulate([0, 1], 10, seed=0), "glicko")


def test_unparsed_verdicts_are_left_out():
    frame = simulate([0.0, 1.0], 400, seed=12)
    frame["parse_error"] = None
    spoiled = pd.concat(
        [frame, pd.DataFrame({"model_a": ["m0"] * 50, "model_b": ["m1"] * 50, "winner": ["model_a"] * 50,
                              "parse_error": ["no verdict"] * 50})],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(rate(spoiled, "bt").table, rate(frame, "bt").table)


def test_online_elo_follows_the_textbook_update():
    frame = simulate([-0.5, 0.0, 0.8], 500, seed=1)
    table = rate(frame, "elo", k=8).table.set_index("model")
    expected = naive_elo(frame, k=8).reindex(table.index)
    assert np.allclose(table["rating"], expected, atol=1e-9)
    assert table["rating"].mean() == pytest.approx(1000.0)


def test_side_by_side_streams_equal_single_streams():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 300)
    b = (a + 1 + rng.integers(0, 3, 300)) % 4
    outcome = rng.integers(0, 3, 300)
    orders = np.stack([rng.permutation(300) for _ in range(3)])
    together = online_elo(a, b, outcome, 4, orders=orders)
    for row, order in zip(together, orders):
        assert np.allclose(row, online_elo(a[order], b[order], outcome[order], 4))


def test_order_averaged_elo_does_not_depend_on_the_order_of_the_file():
    frame = simulate([0.0, 0.0, 0.0, 0.0], 2000, seed=2)
    # Adversarial order: all of m0's wins first, its losses last.
    m0_won = ((frame["model_a"] == "m0") & (frame["winner"] == "model_a")) | (
        (frame["model_b"] == "m0") & (frame["winner"] == "model_b")
    )
    skewed = pd.concat([frame[m0_won], frame[~m0_won]], ignore_index=True)
    plain = [rate(f, "elo", k=16).table.set_index("model")["rating"] for f in (frame, skewed)]
    averaged = [rate(f, "elo-avg", k=16, permutations=200, bootstrap=5).table.set_index("model")["rating"]
                for f in (frame, skewed)]
    plain_shift = abs(plain[0]["m0"] - plain[1]["m0"])
    averaged_shift = abs(averaged[0]["m0"] - averaged[1]["m0"])
    # Streamed in the skewed order, m0 ends far off; averaged over random orders the file's
    # order is irrelevant up to the Monte Carlo error of 200 orders (a few points at K=16).
    assert plain_shift > 100
    assert averaged_shift < 10


def test_elo_recovers_the_planted_order_with_intervals():
    frame = simulate([-1.0, 0.0, 1.0], 3000, seed=3)
    table = rate(frame, "elo", bootstrap=30, seed=1).table
    assert list(table["model"]) == ["m2", "m1", "m0"]
    assert (table["lower"] < table["rating"]).all() and (table["rating"] < table["upper"]).all()


def test_trueskill_recovers_the_planted_order_and_treats_ties_as_draws():
    table = rate(simulate([-1.0, 0.0, 1.0], 1500, seed=4), "trueskill").table
    assert list(table["model"]) == ["m2", "m1", "m0"]
    assert (table["lower"] < table["rating"]).all() and (table["rating"] < table["upper"]).all()
    draws = pd.DataFrame({"model_a": ["A", "B"] * 20, "model_b": ["B", "A"] * 20, "winner": ["tie"] * 40})
    even = rate(draws, "trueskill").table.set_index("model")["rating"]
    assert even["A"] == pytest.approx(even["B"], abs=1e-6)


def test_trueskill_bootstrap_gives_percentile_intervals():
    result = rate(simulate([-1.0, 1.0], 300, seed=5), "trueskill", bootstrap=20, seed=3)
    assert "bootstrap" in result.interval
    assert (result.table["lower"] <= result.table["upper"]).all()


def test_rank_counts_models_clearly_above():
    lower = np.array([10.0, 5.0, 4.0, -3.0])
    upper = np.array([12.0, 9.0, 6.0, 4.5])
    # Models 1 and 2 (upper 9 and 6) sit clearly below model 0 only (lower 10); model 3
    # (upper 4.5) below models 0 and 1 (lower 10 and 5), not model 2 (lower 4).
    assert rank_with_uncertainty(lower, upper).tolist() == [1, 2, 2, 3]


def test_to_dict_has_the_cli_shape():
    result = rate(simulate([0.0, 0.5, 1.0], 600, seed=6), "bt")
    out = result.to_dict()
    assert set(out) == {"method", "ratings"} and out["method"] == "bt"
    assert [set(r) for r in out["ratings"]] == [{"model", "rating", "lower", "upper", "rank", "n"}] * 3
    assert sum(r["n"] for r in out["ratings"]) == 2 * 600
    ratings = [r["rating"] for r in out["ratings"]]
    assert ratings == sorted(ratings, reverse=True)


def test_style_counts_read_markdown_outside_code():
    text = "# Title\n\nSome **bold** words.\n\n- one\n- two\n1. three\n```\n# not a header\n- not a list\n```\n"
    tokens, headers, lists, bold = style_counts(text)
    assert (headers, lists, bold) == (1, 3, 1)
    assert tokens > 10


def styled_battles(seed: int, n: int = 4000):
    """m2 is no better than the others but answers at length; the judge likes length.

    Outcomes follow the style-controlled model with a planted length coefficient, on the
    covariates computed exactly as the rating method computes them.
    """
    rng = np.random.default_rng(seed)
    names = np.array(["m0", "m1", "m2", "m3"], dtype=object)
    theta = np.array([-0.4, 0.0, 0.0, 0.4])
    mean_words = np.array([60, 60, 180, 60])
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    response = lambda model: " ".join(["word"] * int(rng.poisson(mean_words[model])))  # noqa: E731
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "response_a": [response(x) for x in a],
            "response_b": [response(x) for x in b],
        }
    )
    length = frame_covariates(frame)["length"].to_numpy()
    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + 0.8 * length)))
    frame["winner"] = np.where(rng.random(n) < p, "model_a", "model_b")
    return frame, theta


def test_style_control_recovers_the_planted_length_effect_and_debiases_ratings():
    frame, theta = styled_battles(seed=7)
    styled = rate(frame, "bt-style")
    coefficients = styled.coefficients.set_index("name")
    assert list(coefficients.index) == ["length"]
    assert coefficients.loc["length", "lower"] <= 0.8 <= coefficients.loc["length", "upper"]
    truth = pd.Series(1000 + ELO_SCALE * (theta - theta.mean()), index=["m0", "m1", "m2", "m3"])
    controlled = styled.table.set_index("model")
    plain = rate(frame, "bt").table.set_index("model")
    assert controlled.loc["m2", "lower"] <= truth["m2"] <= controlled.loc["m2", "upper"]
    assert plain.loc["m2", "lower"] > truth["m2"] + 50


def test_style_bootstrap_gives_intervals_for_coefficients():
    frame, _ = styled_battles(seed=8, n=800)
    result = rate(frame, "bt-style", bootstrap=15, seed=2)
    assert "bootstrap" in result.interval
    row = result.coefficients.set_index("name").loc["length"]
    assert row["lower"] < row["coef"] < row["upper"]


def test_style_control_needs_the_responses():
    with pytest.raises(ValueError, match="response_a"):
        rate(simulate([0.0, 1.0], 50, seed=9), "bt-style")


def test_elo_intervals_of_a_sparse_model_shrink_so_the_table_warns():
    frame = simulate([0.0, 0.3, 0.6], 1500, seed=11)
    sparse = pd.DataFrame({"model_a": ["rare", "m0", "rare"], "model_b": ["m1", "rare", "m2"],
                           "winner": ["model_a", "model_b", "tie"]})
    table = rate(pd.concat([frame, sparse], ignore_index=True), "elo", bootstrap=100, seed=0)
    rows = table.table.set_index("model")
    width = rows["upper"] - rows["lower"]
    # The phenomenon: 3 battles give a narrower Elo interval than 1,000 do.
    assert width["rare"] < width[["m0", "m1", "m2"]].min()
    assert any("sparsely sampled" in w for w in table.warnings)
    assert table.to_dict()["warnings"] == list(table.warnings)
    assert not rate(frame, "bt").warnings
