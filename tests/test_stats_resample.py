"""Bootstraps that resample counts, not rows (issue 21): units with identical contributions
are drawn as kinds from Multinomial(n, kind shares), which is the unit-level bootstrap in
distribution, and a paired bootstrap keys its kinds on every table at once, so each round
draws the same units for all of them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.stats.resample import distinct_units, kind_table, paired_totals


def _dense(unit, column, value, n_units, n_columns):
    out = np.zeros((n_units, n_columns))
    np.add.at(out, (unit, column), value)
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.lists(st.tuples(st.integers(0, 39), st.integers(0, 4),
                                                                 st.sampled_from([0.5, 1.0, 2.0, -1.0])), max_size=120))
def test_a_kind_holds_identical_units_and_different_kinds_differ(n_units, n_columns, entries):
    entries = [(u % n_units, c % n_columns, v) for u, c, v in entries]  # repeated (unit, column) entries add up
    unit, column, value = (np.array([e[k] for e in entries], dtype=float if k == 2 else int) for k in range(3))
    dense = _dense(unit, column, value, n_units, n_columns)
    kinds = distinct_units(unit, column, value, n_units)
    assert np.array_equal(dense, dense[kinds.first][kinds.of_unit])  # every unit equals its kind's first unit
    assert np.array_equal(np.bincount(kinds.of_unit), kinds.counts) and kinds.counts.sum() == n_units
    assert len(kinds.first) == len(np.unique(dense, axis=0))  # and no two kinds are alike (no hash collision here)


def test_kind_totals_equal_unit_totals_for_the_same_draw():
    """For one drawn multiset of units, summing by kind gives exactly the unit-level totals."""
    rng = np.random.default_rng(0)
    n = 500
    pattern = rng.integers(0, 6, n)  # six patterns of prompts, repeated
    a = np.eye(6)[pattern] * 2.0
    b = np.c_[pattern % 2, 1.5 * (pattern > 3)]
    unit_long = np.nonzero(a)
    kinds = distinct_units(np.r_[unit_long[0], np.nonzero(b)[0]],
                           np.r_[unit_long[1], np.nonzero(b)[1] + 6], np.r_[a[a != 0], b[b != 0]], n)
    assert len(kinds.first) == 6
    for _ in range(20):
        drawn = np.bincount(rng.integers(0, n, n), minlength=n)  # a unit-level bootstrap round
        by_kind = np.bincount(kinds.of_unit, weights=drawn, minlength=len(kinds.first))
        assert np.array_equal(by_kind @ kind_table(kinds, a), drawn @ a)
        assert np.array_equal(by_kind @ kind_table(kinds, b), drawn @ b)


def _percentiles(values):
    return np.quantile(values, [0.025, 0.975])


def test_the_paired_kind_bootstrap_is_the_unit_level_bootstrap_in_distribution():
    """A judge and a reference that agree on most prompts: the difference of their rates is
    narrow only when both are summed over the same draws. The kind-compressed bootstrap gives
    the unit-level percentile interval (within Monte-Carlo error, 4,000 rounds each); kinds
    built per table, each drawn on its own, make it nearly three times wider."""
    rng = np.random.default_rng(1)
    n, rounds = 600, 4000
    outcome = rng.integers(0, 3, n)  # per prompt: the reference's vote (win, loss, tie)
    judge = np.where(rng.random(n) < 0.1, (outcome + 1) % 3, outcome)  # the judge agrees on 90%
    ref_table, judge_table = np.eye(3)[outcome], np.eye(3)[judge]

    def gap(ref_totals, judge_totals):  # the judge's win rate minus the reference's
        return (judge_totals[:, 0] - ref_totals[:, 0]) / n

    picks = rng.integers(0, n, (rounds, n))
    unit_level = gap(ref_table[picks].sum(axis=1), judge_table[picks].sum(axis=1))
    ref_totals, judge_totals = paired_totals([ref_table, judge_table], n, rounds, seed=2)
    assert ref_totals.shape == (rounds, 3) and np.all(ref_totals.sum(axis=1) == n)
    kind_level = gap(ref_totals, judge_totals)
    want, got = _percentiles(unit_level), _percentiles(kind_level)
    width = want[1] - want[0]
    assert np.abs(got - want).max() < 0.1 * width, (want, got)
    assert abs(kind_level.std() / unit_level.std() - 1) < 0.06


def test_string_lookups_through_arrow_equal_pandas():
    """The one pass over the rows looks prompts, pairs and models up with
    :func:`analysis.judgment_table.positions` (Arrow's hash join for strings): the same positions as
    pandas' ``get_indexer``, a missing value matching nothing, whatever the strings' dtype."""
    import pandas as pd

    from analysis.judgment_table import positions

    words = ["q1", "q7", None, "q3", "zz", "q1"]
    for index in (pd.Index(["q1", "q3", "q7"], dtype="str"), pd.Index(["q1", "q3", "q7"], dtype=object),
                  pd.Index([1, 3, 7])):
        for values in (pd.Series(words, dtype="str"), pd.Series(words, dtype=object),
                       pd.Series(words, dtype="category"), pd.Series(["q1", 3, None], dtype=object),
                       pd.Series([7, 1, 2])):
            want = np.where(values.isna().to_numpy(), -1, index.get_indexer(values))
            assert np.array_equal(positions(index, values), want), (index.dtype, values.tolist())


def test_draws_over_many_kinds_are_multinomial():
    """From 32 kinds on and more than four units a kind, rounds are drawn by Poisson splitting
    (issue 21: numpy's multinomial draws a binomial with a new p per kind; fewer units a kind:
    tests/test_stats_unit_draws.py): every round still draws exactly n units, and the
    counts have the multinomial's means, variances and (negative) covariances, for few units
    per kind (Poisson's small-mean path, lam well below n) and many."""
    from analysis.stats.resample import kind_draws

    rng = np.random.default_rng(3)
    for counts in (np.r_[np.ones(30), 2, 3, 5, 150], np.r_[np.arange(1, 200) % 13 + 1, 900]):
        n, rounds = int(counts.sum()), 40_000
        draws = np.concatenate(list(kind_draws(counts, rounds, rng)))
        assert draws.shape == (rounds, len(counts)) and draws.dtype.kind == "i"
        assert np.all(draws.sum(axis=1) == n) and draws.min() >= 0
        p = counts / n
        se = np.sqrt(n * p * (1 - p) / rounds)
        assert np.all(np.abs(draws.mean(axis=0) - n * p) < 4.5 * se)
        assert np.allclose(draws.var(axis=0), n * p * (1 - p), rtol=0.06)
        cov = np.cov(draws[:, [-1, -2]].T)[0, 1]
        assert abs(cov / (-n * p[-1] * p[-2]) - 1) < 0.1
    # Millions of units and few rounds: the units short of n find their kinds by a search.
    counts = np.r_[np.full(39, 100_000), 100_000 + np.arange(40) * 1_000][:40]
    n, rounds = int(counts.sum()), 200
    draws = np.concatenate(list(kind_draws(counts, rounds, rng)))
    assert np.all(draws.sum(axis=1) == n)
    p = counts / n
    assert np.all(np.abs(draws.mean(axis=0) - n * p) < 4.5 * np.sqrt(n * p * (1 - p) / rounds))
