"""The percentile interval read through a log-normal fit (analysis.stats.log_normal_interval):
centred on the replicates' own median, whatever the estimate they were drawn around, and
with infinite replicates counted at the top of the order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.stats import Z95, log_normal_interval


def test_the_interval_is_centred_on_the_replicates_median_with_their_log_spread():
    replicates = np.exp(np.random.default_rng(0).normal(0.2, 0.1, 4000))
    lower, upper = log_normal_interval(replicates)
    assert math.sqrt(lower * upper) == pytest.approx(math.exp(0.2), rel=0.01)
    assert math.log(upper / lower) / 2 == pytest.approx(Z95 * 0.1, rel=0.05)


def test_infinite_replicates_raise_the_quartiles_and_a_quarter_of_them_leaves_no_interval():
    replicates = np.exp(np.random.default_rng(1).normal(0.1, 0.05, 100))
    finite = log_normal_interval(replicates[:85])
    lower, upper = log_normal_interval(replicates[:85], n_infinite=15)
    assert math.sqrt(lower * upper) > math.sqrt(finite[0] * finite[1]) and upper > finite[1]
    assert log_normal_interval(replicates[:70], n_infinite=30) is None
    assert log_normal_interval([1.1]) is None
