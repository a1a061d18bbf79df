"""Leaderboard meta-metrics with uncertainty (issue 16, item 2).

Each of Arena-Hard-Auto's meta-metrics gets a 95% interval from a bootstrap over prompts;
on PandaLM the intervals of seeds 0-3 agree to within a quarter of their width (200 rounds
moved Claude's separability from 0.7 to 0.9 with the seed); placeholder "models" and fewer
than four real models give no meta-metrics; Spearman's p for five models is the exact
permutation p, not the t approximation (1.4e-24 for rho = 1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.judging.agreement import rank_agreement, spearman_permutation_p
from analysis.judging.meta_metrics import METRICS, leaderboard_agreement, leaderboard_intervals


@pytest.fixture(scope="module")
def pandalm(shared_data):
    from row_reader import import_paths
    from analysis.ratings import rate
    from analysis.judgment_table import judgment_table

    records = [r for r in import_paths([shared_data / "pandalm"]).records if r.parse_error is None]
    table, _ = judgment_table(records)
    rows = {name: table[table["rater"] == name] for name in ("human", "gpt-3.5-turbo")}
    tables = {name: rate(r[["model_a", "model_b", "winner"]], "bt", bootstrap=100, seed=0).table
              for name, r in rows.items()}
    return rows, tables


def _intervals(pandalm, seed):
    rows, tables = pandalm
    point = leaderboard_agreement(tables["gpt-3.5-turbo"], tables["human"])
    return point, leaderboard_intervals(point, rows["gpt-3.5-turbo"], rows["human"], tables["gpt-3.5-turbo"],
                                        tables["human"], seed=seed)


def test_every_metric_has_an_interval_that_does_not_move_with_the_seed(pandalm):
    point, first = _intervals(pandalm, 0)
    assert first.n_prompts == 170 and "resampling" in first.interval_method  # PandaLM's prompts, not its 999 pairs and "prompts" in first.interval_method
    for metric in METRICS:
        lo, hi = first.intervals[metric]
        assert lo <= getattr(point, metric) <= hi, metric
        assert hi > lo, metric  # five models rated from a sample: no metric is certain
    for seed in (1, 2, 3):
        other = _intervals(pandalm, seed)[1]
        for metric in METRICS:
            width = first.intervals[metric][1] - first.intervals[metric][0]
            assert np.abs(np.subtract(other.intervals[metric], first.intervals[metric])).max() <= width / 4, (
                metric, seed, first.intervals[metric], other.intervals[metric])


def _table(ratings: dict[str, float], half: float = 30.0) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "rating": r, "lower": r - half, "upper": r + half} for m, r in ratings.items()])


def test_placeholder_models_get_no_meta_metrics():
    """LLMBar's output_1/output_2 are positions, not models: no Brier score ranking GPT-4 worst."""
    board = leaderboard_agreement(_table({"output_1": 1010, "output_2": 990}), _table({"output_1": 1040, "output_2": 960}))
    assert all(getattr(board, m) is None for m in METRICS)
    assert "placeholders" in board.note and "output_1" in board.note


def test_fewer_than_four_models_get_no_meta_metrics():
    three = _table({"a-7b": 1100, "b-7b": 1000, "c-7b": 900})
    board = leaderboard_agreement(three, three)
    assert all(getattr(board, m) is None for m in METRICS) and "fewer than 4" in board.note
    four = _table({"a-7b": 1100, "b-7b": 1000, "c-7b": 900, "d-7b": 800})
    assert leaderboard_agreement(four, four).spearman == pytest.approx(1.0)


def test_report_json_says_null_and_why_for_placeholders():
    from analysis.report import build_report, report_json
    from pairlab.records import Record

    rng = np.random.default_rng(0)
    records = []
    for i in range(60):
        texts = (f"answer one {i}", f"answer two {i}")
        for judge in ("human:a", "judge-x"):
            records.append(Record(pair_id=f"p{i}", prompt=f"q{i}", model_a="output_1", model_b="output_2",
                                  response_a=texts[0], response_b=texts[1], judge=judge,
                                  winner="model_a" if rng.random() < 0.6 else "model_b"))
    judge = report_json(build_report(records, n_boot=50, rating_bootstrap=10, panel=False))["judges"]["judge-x"]
    assert judge["leaderboard"] is None
    assert "placeholders" in judge["leaderboard_note"]


def test_spearman_p_is_the_exact_permutation_p():
    # rho = 1 on five models: 2 of the 120 orderings reach |rho| = 1.
    assert spearman_permutation_p([1, 2, 3, 4, 5], [10, 20, 30, 40, 50]) == pytest.approx(2 / 120)
    left = _table({m: r for m, r in zip("abcde", (1, 2, 3, 4, 5))})
    right = _table({m: r for m, r in zip("abcde", (1, 2, 3, 4, 5))})
    got = rank_agreement(left, right)
    assert got.spearman == pytest.approx(1.0) and got.spearman_p == pytest.approx(1 / 60)
    # Brute force over permutations for a non-trivial order.
    from itertools import permutations

    from scipy.stats import spearmanr

    y = [2, 1, 4, 3, 5]
    observed = abs(spearmanr([1, 2, 3, 4, 5], y).statistic)
    expected = np.mean([abs(spearmanr(p, y).statistic) >= observed - 1e-12 for p in permutations(range(5))])
    assert spearman_permutation_p([1, 2, 3, 4, 5], y) == pytest.approx(expected)


def test_a_side_that_rates_every_model_alike_ranks_nothing():
    import warnings

    left = _table({m: r for m, r in zip("abcd", (1, 2, 3, 4))})
    flat = _table({m: 1000.0 for m in "abcd"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy warns and returns nan on a constant input
        got = rank_agreement(left, flat)
    assert got.n_models == 4 and got.spearman is None and got.spearman_p is None and got.kendall is None


def _board_rows(n_prompts: int, seed: int, agree: float = 0.8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A reference (one vote per prompt) and a judge that casts the same vote on ``agree`` of
    the prompts, over eight models of spread-out strengths; one model pair per prompt."""
    rng = np.random.default_rng(seed)
    models = np.array([f"lm-{k}" for k in range(8)])
    strength = np.linspace(-1.5, 1.5, 8)
    a = rng.integers(0, 8, n_prompts)
    b = (a + rng.integers(1, 8, n_prompts)) % 8
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    vote = np.where(rng.random(n_prompts) < 0.1, "tie", np.where(rng.random(n_prompts) < p, "model_a", "model_b"))
    other = np.where(rng.random(n_prompts) < p, "model_a", "model_b")
    frame = pd.DataFrame({"prompt": [f"q{k}" for k in range(n_prompts)], "model_a": models[a], "model_b": models[b]})
    return frame.assign(winner=vote), frame.assign(winner=np.where(rng.random(n_prompts) < agree, vote, other))


def _rated(rows: pd.DataFrame) -> pd.DataFrame:
    from analysis.ratings import rate

    return rate(rows[["model_a", "model_b", "winner"]], "bt").table


def test_the_prompt_bootstrap_holds_no_rounds_by_prompts_matrix():
    """20,000 prompts and 2,000 rounds: drawing every prompt in every round took a 320 MB
    matrix of draws (twice, with its float copy), 3.2 GB at a million records; prompts with
    the same counts are drawn together, so the bootstrap's memory does not grow with them."""
    import tracemalloc

    reference_rows, judge_rows = _board_rows(20_000, seed=3)
    judge, reference = _rated(judge_rows), _rated(reference_rows)
    point = leaderboard_agreement(judge, reference)
    tracemalloc.start()
    try:
        got = leaderboard_intervals(point, judge_rows, reference_rows, judge, reference)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.n_prompts == 20_000 and all(got.intervals[m] is not None for m in ("kendall", "brier"))
    assert peak < 40e6, f"peak {peak / 1e6:.0f} MB"


def test_boards_are_refitted_on_the_same_prompts_in_every_round():
    """The paired bootstrap: two identical boards give identical metrics in every round, and a
    judge whose verdicts are the reference's ranks models as the reference does in every
    round (kinds keyed on one table at a time would draw each board its own prompts)."""
    from analysis.judging.meta_metrics import metric_rounds, rows_prompts

    reference_rows, judge_rows = _board_rows(3000, seed=4, agree=0.7)
    judge, reference = _rated(judge_rows), _rated(reference_rows)
    prompts = rows_prompts(judge_rows, reference_rows)
    same, copy, echo = metric_rounds([(judge_rows, judge), (judge_rows.copy(), judge), (reference_rows, reference)],
                                     reference_rows, reference, prompts, n_boot=300, seed=0)
    for metric in METRICS:
        assert np.array_equal(same[metric], copy[metric], equal_nan=True), metric
    assert np.all(echo["spearman"] == 1.0) and np.all(echo["kendall"] == 1.0)
    assert same["spearman"].std() > 0  # the judge's own rounds do vary


def test_batched_leaderboard_fits_are_each_rounds_own_optimum():
    """The rounds' Bradley-Terry fits (chord steps from the mean table, Newton for rounds far
    from it) land on each round's own penalised optimum: zero gradient, mean 0, and the
    same strengths as the round fitted alone; dense rounds and sparse ones alike (a pair
    never played, a model that never lost, where only the small ridge keeps it finite)."""
    from analysis.judging.meta_metrics import _bt_batch

    rng = np.random.default_rng(5)
    n = 6
    i, j = np.triu_indices(n, 1)
    strength = rng.normal(0, 1, n)
    win_p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
    games = np.r_[rng.poisson(300, (40, len(i))), rng.poisson(0.7, (40, len(i)))].astype(float)
    wins = rng.binomial(games.astype(int), win_p) + 0.5 * (rng.random(games.shape) < 0.1)
    wins = np.minimum(wins, games)
    totals = np.stack([wins, games - wins], axis=1)
    theta = _bt_batch(totals, i, j, n)
    incidence = np.zeros((len(i), n))
    incidence[np.arange(len(i)), i], incidence[np.arange(len(i)), j] = 1.0, -1.0
    p = 1 / (1 + np.exp(-(theta @ incidence.T)))
    gradient = (wins - games * p) @ incidence - 1e-6 * theta
    assert np.abs(gradient).max() < 1e-6 and np.abs(theta.mean(axis=1)).max() < 1e-12
    assert np.abs(theta[40:]).max() > 5  # some sparse round has a model the ridge alone holds
    from analysis.ratings.bt import fit_counts
    from analysis.ratings.counts import PairCounts

    # Each round alone under the same small ridge (a batch of one sparse round would be data
    # without an MLE, which the batch fits under the early estimate's prior instead).
    alone = np.stack([fit_counts(PairCounts(pd.RangeIndex(n), i, j, totals[r, 0], totals[r, 1], np.zeros(len(i)),
                                            np.zeros(n, dtype=int)), l2=1e-6, tol=1e-10).scores.to_numpy()
                      for r in range(len(totals))])
    assert np.abs(theta - alone).max() < 1e-7
