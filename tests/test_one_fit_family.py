"""One Bradley-Terry family, one error for a failed fit, one table of record rules."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from analysis.judging.meta_metrics import _bt_batch
from analysis.ratings import bradley_terry, fit_counts
from analysis.ratings.counts import PairCounts
from analysis.stats import FitError
from pairlab import record_table
from pairlab.records import BREACHES, Record, RecordError


def test_a_fit_without_a_maximum_likelihood_raises_the_one_fit_error():
    # "a" never lost: the strengths run off to infinity.
    with pytest.raises(FitError, match="did not converge"):
        bradley_terry(["a", "a", "b"], ["b", "c", "c"], ["model_a", "model_a", "model_b"])


def test_the_meta_metrics_leaderboards_are_the_ratings_fit_round_by_round():
    rng = np.random.default_rng(3)
    n = 5
    i, j = np.triu_indices(n, 1)
    totals = rng.poisson(15, size=(40, 2, len(i))).astype(float)
    batch = _bt_batch(totals, i, j, n)
    for k in (0, 17, 39):
        one = PairCounts(pd_index(n), i, j, totals[k, 0], totals[k, 1], np.zeros(len(i)), np.zeros(n, dtype=int))
        np.testing.assert_allclose(batch[k], fit_counts(one, l2=1e-6).scores.to_numpy(), atol=1e-8)


def pd_index(n):
    import pandas as pd

    return pd.RangeIndex(n)


BASE = {"pair_id": "p", "prompt": "q", "model_a": "a", "model_b": "b", "response_a": "x", "response_b": "y",
        "winner": "model_a", "judge": "human"}


@pytest.mark.parametrize("change, breach", [
    ({"winner": None}, "no verdict"),
    ({"winner": "left"}, "winner"),
    ({"judge_type": "robot"}, "judge_type"),
    ({"prob_a": 1.5}, "prob_a"),
    ({"strength": -1}, "strength"),
])
def test_the_row_and_the_column_reader_break_the_same_rule(change, breach):
    row = {**BASE, **change}
    with pytest.raises(RecordError) as one:
        Record(**row).validate()
    table = pa.Table.from_pylist([row], schema=record_table.ARROW_SCHEMA)
    with pytest.raises(RecordError) as columns:
        record_table.from_arrow(table)
    assert BREACHES[breach] in str(one.value) and BREACHES[breach] in str(columns.value), json.dumps(row)
