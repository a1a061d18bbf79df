"""The record table's helpers that the report's preparation leans on for speed."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pairlab import record_table
from pairlab.records import Record
from report_sample import synthetic_records


def _table(n=30, seed=4):
    return record_table.from_records([Record(**row) for row in synthetic_records(n, seed=seed, rich=True)])


def test_stacked_rows_equal_pandas_concat_and_keep_one_set_of_texts():
    table = _table()
    rows = table.iloc[np.arange(0, len(table), 3)].assign(judge="panel").reset_index(drop=True)
    stacked = record_table.stack(table, rows)
    pd.testing.assert_frame_equal(stacked, pd.concat([table, rows[table.columns]], ignore_index=True))
    assert stacked["response_a"].dtype is table["response_a"].dtype  # the texts' codes kept as they were
