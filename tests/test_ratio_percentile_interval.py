"""The percentile interval of a positive ratio (analysis.stats.ratio_percentile_interval) and the
worth's interval read from it: the replicates' own 2.5% and 97.5% points, whatever estimate they
were drawn around, with infinite replicates counted at the top of the order."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.judging.worth import worth_interval
from analysis.stats import ratio_percentile_interval


def test_the_interval_is_the_replicates_percentiles():
    replicates = np.exp(np.random.default_rng(0).normal(0.2, 0.1, 400))
    lower, upper = ratio_percentile_interval(replicates)
    assert (lower, upper) == pytest.approx(tuple(np.percentile(replicates, [2.5, 97.5])), rel=1e-12)
    # A skewed set: not a normal's (or log-normal's) tails fitted to the quartiles.
    skewed = np.r_[np.full(90, 1.0), np.linspace(1.5, 3.0, 10)]
    assert ratio_percentile_interval(skewed) == pytest.approx(tuple(np.percentile(skewed, [2.5, 97.5])), rel=1e-12)


def test_the_worth_interval_is_its_fitted_rounds_percentiles():
    ratios = list(np.exp(np.random.default_rng(1).normal(0.1, 0.05, 100)))
    assert worth_interval(ratios, 100) == pytest.approx(tuple(np.percentile(ratios, [2.5, 97.5])), rel=1e-12)


def test_infinite_replicates_take_the_top_of_the_order_and_a_quarter_of_them_leaves_no_interval():
    replicates = np.sort(np.exp(np.random.default_rng(2).normal(0.1, 0.05, 100)))
    # Two infinite in 100: the 97.5% point lies between the 97th and 98th of the order, both finite.
    lower, upper = ratio_percentile_interval(replicates[:98], n_infinite=2)
    assert np.isfinite(upper) and upper > np.percentile(replicates[:98], 97.5)
    assert lower == pytest.approx(np.percentile(np.r_[replicates[:98], [np.inf] * 2], 2.5))
    # Three: the upper end is unbounded, the lower end still the 2.5% point of all 100.
    lower, upper = ratio_percentile_interval(replicates[:97], n_infinite=3)
    assert upper == np.inf and lower == pytest.approx(np.percentile(replicates[:97], 2.5 * 99 / 96))
    assert ratio_percentile_interval(replicates[:70], n_infinite=30) is None
    assert ratio_percentile_interval([1.1]) is None
