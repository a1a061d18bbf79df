"""Battles without texts (model_a, model_b, winner [+ judge, anony, pair_id, prompt]) are read as
columns, into the table the row-by-row importer gives, and the record rules are checked on the
columns."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from analysis.importers import columnar
from analysis.importers.columnar import read_table
from pairlab import record_table
from pairlab.records import RecordError
from row_reader import import_paths


def _battles(n: int = 40) -> pd.DataFrame:
    models = ["alpha", "beta", "gamma"]
    return pd.DataFrame({
        "model_a": [models[k % 3] for k in range(n)],
        "model_b": [models[(k + 1) % 3] for k in range(n)],
        "winner": [("model_a", "model_b", "tie", "tie (bothbad)")[k % 4] for k in range(n)],
        "judge": [None if k % 5 == 0 else f"voter-{k % 3}" for k in range(n)],
        "anony": [k % 2 == 0 for k in range(n)],
        "pair_id": [f"p{k // 2}" if k % 3 else None for k in range(n)],
        "prompt": [f"question {k % 4}" if k % 6 else None for k in range(n)],
    })


@pytest.fixture
def no_row_reader(monkeypatch):
    """Fail if the file is read row by row: a clean battles file is read as columns."""
    def refuse(path, *_, **__):
        raise AssertionError(f"{path} was read row by row")
    monkeypatch.setattr(columnar, "source_records", refuse)


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_a_battles_file_is_read_as_columns_into_the_row_readers_table(tmp_path, suffix, no_row_reader):
    path = tmp_path / f"battles.{suffix}"
    battles = _battles()
    battles.to_parquet(path) if suffix == "parquet" else battles.to_csv(path, index=False)
    fast, issues = read_table([path])
    assert not issues
    slow = record_table.from_records(list(import_paths([path]).records))
    # The row reader names a pair by its line or item, the column reader by its row: the same
    # battles, each unnamed one a pair of its own.
    given = battles["pair_id"].notna().to_numpy()
    assert fast["pair_id"][given].tolist() == battles["pair_id"][given].tolist()
    assert fast["pair_id"][~given].is_unique and not fast["pair_id"][~given].isin(battles["pair_id"]).any()
    pd.testing.assert_frame_equal(fast.drop(columns="pair_id"), slow.drop(columns="pair_id"))
    assert set(fast["judge"]) == {"human", "human:voter-0", "human:voter-1", "human:voter-2"}
    assert (fast["judge_type"] == "human").all()


def _table(**columns) -> pa.Table:
    n = len(columns["winner"])
    base = {name: pa.array([f"{name} {k}" for k in range(n)], pa.string())
            for name in ("pair_id", "prompt", "model_a", "model_b", "response_a", "response_b", "judge")}
    return pa.table({**base, **{k: pa.array(v, pa.string()) for k, v in columns.items()}})


def test_the_value_rules_hold_on_the_columns():
    ok = record_table.from_arrow(_table(winner=["model_a", None, "tie"], parse_error=[None, "no verdict", None],
                                        judge=["human", "judge-1", "human:7"]))
    assert ok["judge_type"].tolist() == ["human", "llm", "human"]  # filled from the judge, as is_human says
    kept = record_table.from_arrow(_table(winner=["model_a", "tie"], judge=["human", "x"],
                                          judge_type=["llm", None]))
    assert kept["judge_type"].tolist() == ["llm", "llm"]  # a judge_type given is kept
    bad = {
        "winner is null but parse_error is not set": dict(winner=["model_a", None], parse_error=[None, ""]),
        "unknown winner": dict(winner=["model_a", "model_c"]),
        "judge_type must be": dict(winner=["model_a", "tie"], judge_type=["human", "robot"]),
    }
    for message, columns in bad.items():
        with pytest.raises(RecordError, match=message):
            record_table.from_arrow(_table(**columns))
    with pytest.raises(RecordError, match="winner is null"):  # no parse_error column at all
        record_table.from_arrow(_table(winner=[None, "tie"]))
