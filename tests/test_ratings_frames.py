"""analysis.frames: records and tables to one battle frame, and the shared filters."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.frames import COLUMNS, load_frame, records_to_frame
from pairlab.records import Record, write_records


def record(n: int, **overrides) -> Record:
    fields = dict(
        pair_id=f"p{n}",
        prompt=f"prompt {n}",
        model_a="alpha",
        model_b="beta",
        response_a="a" * (n + 1),
        response_b="b",
        winner="model_a",
        judge="human:v1",
    )
    fields.update(overrides)
    return Record(**fields)


@pytest.fixture
def votes(tmp_path):
    records = [
        record(0),
        record(1, judge="human", winner="tie"),
        record(2, judge="prometheus-7b", winner="model_b", category="coding"),
        record(3, meta={"anony": False}),
        record(4, meta={"identity_leak": True}, category="coding"),
        record(5, judge="prometheus-7b", parse_error="no verdict found"),
    ]
    path = tmp_path / "votes.jsonl"
    write_records(path, records)
    return path


def test_records_to_frame_has_the_contract_columns_and_defaults():
    frame = records_to_frame([record(0), record(1, meta={"anony": False, "identity_leak": True})])
    assert list(frame.columns) == COLUMNS
    assert frame["anony"].tolist() == [True, False]
    assert frame["identity_leak"].tolist() == [False, True]
    assert frame["judge_type"].tolist() == ["human", "human"]


def test_default_filters_drop_named_leaked_and_unparsed_votes(votes):
    frame = load_frame(votes)
    assert sorted(frame["pair_id"]) == ["p0", "p1", "p2"]
    everything = load_frame(votes, anonymous_only=False, exclude_leaks=False)
    assert sorted(everything["pair_id"]) == ["p0", "p1", "p2", "p3", "p4"]


def test_judge_filters(votes):
    assert load_frame(votes, judge="prometheus-7b")["pair_id"].tolist() == ["p2"]
    assert sorted(load_frame(votes, judge="human")["pair_id"]) == ["p0", "p1"]
    assert sorted(load_frame(votes, judge="human:v1")["pair_id"]) == ["p0"]
    assert sorted(load_frame(votes, humans_only=True)["pair_id"]) == ["p0", "p1"]


def test_category_filter(votes):
    assert load_frame(votes, categories=["coding"])["pair_id"].tolist() == ["p2"]
    assert load_frame(votes, categories=["coding"], exclude_leaks=False)["pair_id"].tolist() == ["p2", "p4"]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_tables_need_only_models_and_winner(tmp_path, suffix):
    table = pd.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "x"], "winner": ["model_a", "tie"]})
    path = tmp_path / f"battles.{suffix}"
    table.to_csv(path, index=False) if suffix == "csv" else table.to_parquet(path)
    frame = load_frame(path)
    assert set(COLUMNS) <= set(frame.columns)
    assert frame["winner"].tolist() == ["model_a", "tie"]
    assert frame["anony"].all() and not frame["identity_leak"].any()


def test_a_table_without_winner_is_refused(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"model_a": ["x"], "model_b": ["y"]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="winner"):
        load_frame(path)


def test_fastchat_battle_json_keeps_the_anony_flag(tmp_path):
    def battle(winner, anony):
        return {
            "model_a": "vicuna-13b",
            "model_b": "koala-13b",
            "winner": winner,
            "judge": "arena_user_1",
            "turn": 1,
            "anony": anony,
            "tstamp": 1682351591.1322,
            "conversation_a": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello!"}],
            "conversation_b": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}],
        }

    path = tmp_path / "battles.json"
    path.write_text(json.dumps([battle("model_a", True), battle("tie (bothbad)", False)]))
    frame = load_frame(path)
    assert frame["winner"].tolist() == ["model_a"]
    assert frame["judge_type"].tolist() == ["human"]
    assert len(load_frame(path, anonymous_only=False)) == 2


# The importer warns about the PandaLM items it must skip (boolean responses); expected here.
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_pandalm_folder_loads_humans_and_judges(shared_data):
    frame = load_frame(shared_data / "pandalm")
    assert {"pandalm-7b", "gpt-3.5-turbo"} <= set(frame["judge"])
    humans = load_frame(shared_data / "pandalm", judge="human")
    assert len(humans) > 0 and (humans["judge_type"] == "human").all()
    assert frame["parse_error"].isna().all()
