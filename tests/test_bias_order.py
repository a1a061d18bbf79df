"""Fixed display order: a planted confounder (the earlier-listed model is the stronger one)
with no position effect. The raw first-shown rate is fooled; the position term with model
strengths held fixed is not, and the order check says why the raw rate cannot be read."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from analysis.bias.length import length_bias, length_sd
from analysis.bias.position import position_bias
from analysis.stats.resample import distinct_rows
from analysis.judgment_table import judgment_table
from pairlab.records import Record

STRENGTH = {"m0": 1.0, "m1": 0.3, "m2": -0.3, "m3": -1.0}


def fixed_order_votes(seed: int, n: int = 3000) -> list[Record]:
    rng = np.random.default_rng(seed)
    names = list(STRENGTH)
    records = []
    for k in range(n):
        i, j = sorted(rng.choice(4, 2, replace=False))  # listed order: the stronger model first
        a, b = names[i], names[j]
        p = 1 / (1 + np.exp(-(STRENGTH[a] - STRENGTH[b])))  # no position term at all
        words_a, words_b = rng.integers(5, 80, 2)
        records.append(Record(
            pair_id=f"p{k}", prompt=f"q{k}", model_a=a, model_b=b,
            response_a=f"{k} " + "w " * int(words_a), response_b=f"{k} " + "v " * int(words_b),
            winner="model_a" if rng.random() < p else "model_b", judge="human:1",
        ))
    return records


def test_fixed_order_fools_the_raw_rate_but_not_the_controlled_term():
    table, _ = judgment_table(fixed_order_votes(0))
    position = position_bias(table)
    length = length_bias(table, length_sd(table))
    assert position.order.randomised is False and position.order.never_first == ("m3",)
    assert position.first_rate_ci[0] > 0.6  # "the earlier-listed model wins", read as position
    lo, hi = length.first_rate_controlled_ci
    assert lo <= 0.5 <= hi and hi - lo < 0.3


@settings(max_examples=100, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 40), st.integers(1, 4)), elements=st.integers(0, 9)))
def test_distinct_rows_equal_numpys_unique(sums):
    rows, counts = distinct_rows(sums.astype(float))
    expected_rows, expected_counts = np.unique(sums.astype(float), axis=0, return_counts=True)
    assert np.array_equal(rows, expected_rows) and np.array_equal(counts, expected_counts)
