"""The column-wise reader (issue 21): the same record table as the row-by-row importers, and
the same errors, whatever the file holds."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from row_reader import import_paths
from analysis.importers.columnar import read_table
from analysis.report import build_report, report_json
from pairlab import record_table
from pairlab.records import RecordError, write_records
from report_sample import synthetic_records


def _rows_table(paths, skip_bad=False):
    imported = import_paths(paths, skip_bad=skip_bad)
    return record_table.from_records(list(imported.records)), imported.issues


def _varied(n=60):
    """Records with every field the analyses read from a record, and ones they must not mistake."""
    rows = synthetic_records(n, seed=3, rich=True)
    for k, row in enumerate(rows):
        if k % 7 == 0 and row["judge"].startswith("judge"):
            row["meta"] = {"mode": "logprob" if k % 2 else "generate", "suspect_verdict": k % 3 == 0,
                           "baseline": "opt-a"}
            row["template"] = "prometheus-relative"
        if k % 11 == 0:
            row["anony"] = False
        if k % 13 == 0:
            row["meta"] = {**row.get("meta", {}), "identity_leak": True, "anony": True}
        if k % 17 == 0 and row["judge"].startswith("judge"):
            row["winner"], row["parse_error"] = None, "no verdict in the output"
        if k % 5 == 0:
            row["strength"] = k % 3
        row["tstamp"] = 1.7e9 + k
    return rows


def test_jsonl_read_column_wise_equals_the_row_reader(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_records(path, _varied())
    fast, issues = read_table([path])
    slow, _ = _rows_table([path])
    assert issues == ()
    pd.testing.assert_frame_equal(fast, slow)
    assert fast["suspect"].any() and (~fast["anony"]).any() and fast["identity_leak"].any()
    assert fast["mode"].notna().any() and fast["strength"].notna().any() and fast["parse_error"].notna().any()


def test_parquet_records_are_read_directly_and_give_the_same_report(tmp_path):
    rows = synthetic_records(300, seed=5, rich=True)
    jsonl, parquet = tmp_path / "votes.jsonl", tmp_path / "votes.parquet"
    write_records(jsonl, rows)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    pq.write_table(pa.Table.from_pylist([{k: row.get(k) for k in keys} for row in rows]), parquet)
    from_parquet, _ = read_table([parquet])
    from_jsonl, _ = read_table([jsonl])
    pd.testing.assert_frame_equal(from_parquet, from_jsonl)
    options = {"n_boot": 50, "rating_bootstrap": 20, "seed": 1}
    assert report_json(build_report(from_parquet, **options)) == report_json(build_report(from_jsonl, **options))


def test_a_bad_line_is_named_as_the_row_reader_names_it(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_records(path, synthetic_records(20, seed=1))
    lines = path.read_text().splitlines()
    lines[6] = lines[6].replace('"winner": "model_a"', '"winner": "model_c"').replace(
        '"winner": "model_b"', '"winner": "model_c"')
    lines[9] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError) as fast:
        read_table([path])
    with pytest.raises(RecordError) as slow:
        import_paths([path])
    assert str(fast.value) == str(slow.value) and f"{path}:7:" in str(fast.value)
    table, issues = read_table([path], skip_bad=True)
    assert len(table) == len(lines) - 2 and [i.item for i in issues] == ["line 7", "line 10"]


def test_a_field_whose_type_changes_is_read_row_by_row(tmp_path):
    rows = synthetic_records(10, seed=2)
    rows[0]["prompt_id"] = 17  # a number on one line, text on the next
    rows[1]["prompt_id"] = "q-1"
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fast, _ = read_table([path])
    slow, _ = _rows_table([path])
    pd.testing.assert_frame_equal(fast, slow)
    assert fast.loc[0, "prompt_id"] == "17"


def test_other_formats_and_folders_come_through_their_importers(tmp_path):
    pandalm = "../shared/data/pandalm"
    fast, issues = read_table([pandalm])
    slow, slow_issues = _rows_table([pandalm])
    pd.testing.assert_frame_equal(fast, slow)
    assert [str(i) for i in issues] == [str(i) for i in slow_issues]


def test_a_folder_of_record_files_is_one_table_with_one_set_of_texts(tmp_path):
    rows = synthetic_records(40, seed=6, rich=True)
    write_records(tmp_path / "a.jsonl", rows[:90])
    write_records(tmp_path / "b.jsonl", rows[90:])
    fast, _ = read_table([tmp_path])
    slow, _ = _rows_table([tmp_path])
    pd.testing.assert_frame_equal(fast, slow)
    a, b = fast["response_a"], fast["response_b"]  # both files' responses coded on the same sorted texts
    assert a.cat.ordered and a.cat.categories.equals(b.cat.categories) and a.cat.categories.is_monotonic_increasing


def test_unknown_fields_are_left_unread_however_many(tmp_path):
    """A line with twenty thousand unknown keys (top level and in meta) is read column-wise
    into the record columns only, not into twenty thousand Arrow columns, and gives the row
    reader's table."""
    from analysis.importers.columnar import _fast

    rows = synthetic_records(10, seed=9)
    rows[3].update({f"k{i}": i for i in range(20_000)})
    rows[4]["meta"] = {f"m{i}": [i] for i in range(20_000)}
    path = tmp_path / "wide.jsonl"
    write_records(path, rows)
    fast = _fast(path)
    assert fast is not None and list(fast.columns) == record_table.COLUMNS
    pd.testing.assert_frame_equal(fast, _rows_table([path])[0])
