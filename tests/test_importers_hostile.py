"""Hostile files: each bad place is named by file and line, ``--skip-bad`` skips it, and a
folder is walked once.

Before, invalid UTF-8 (UnicodeDecodeError), deeply nested JSON (RecursionError) and a CSV
field over the csv module's 128 KiB limit (_csv.Error) crashed the import with a traceback
and no file or line, whatever ``skip_bad`` said; an AlpacaEval ``raw_completion`` of 100k
characters crashed ``ast.literal_eval`` (MemoryError); a symbolic link back to its own
folder turned one record into 41.
"""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from row_reader import import_paths
from analysis.report.cli import main as report_main
from pairlab.records import Record, RecordError, make_pair_id

NESTED = "[" * 100_000 + "]" * 100_000


def _record(i: int, **extra) -> dict:
    a, b = f"answer one {i}", f"answer two {i}"
    return Record(pair_id=make_pair_id(f"q{i}", a, b), prompt=f"q{i}", model_a="m1", model_b="m2", response_a=a,
                  response_b=b, winner="model_a", judge="human", **extra).to_dict()


def _jsonl(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


GOOD = [json.dumps(_record(i)).encode() for i in range(3)]
BAD_UTF8 = json.dumps(_record(9)).encode().replace(b"answer one", b"answer \xff\xfe one")


@pytest.mark.parametrize("bad, why", [(BAD_UTF8, "UTF-8"), (NESTED.encode(), "nested too deeply")])
def test_a_bad_jsonl_line_is_named_and_skipped(tmp_path, bad, why):
    path = tmp_path / "votes.jsonl"
    path.write_bytes(_jsonl([GOOD[0], bad, GOOD[1], GOOD[2]]))
    with pytest.raises(RecordError, match=f"votes.jsonl:2: .*{why}") as caught:
        import_paths([path])
    assert caught.value.path == str(path) and caught.value.line == 2
    result = import_paths([path], skip_bad=True)
    assert len(result.records) == 3
    assert [(i.item, why in i.message) for i in result.issues] == [("line 2", True)]


def _csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def test_a_csv_field_over_the_csv_limit_is_named_and_skipped_and_the_report_says_so(tmp_path, capsys):
    rows = [{k: v for k, v in _record(i).items() if isinstance(v, str)} for i in range(3)]
    rows[1]["response_a"] = "z" * 200_000  # over csv.field_size_limit() (131,072)
    path = tmp_path / "votes.csv"
    path.write_text(_csv_text(rows), encoding="utf-8")
    with pytest.raises(RecordError, match="votes.csv:3: .*field larger than field limit"):
        import_paths([path])
    result = import_paths([path], skip_bad=True)
    assert [r.prompt for r in result.records] == ["q0", "q2"]
    assert [i.item for i in result.issues] == ["line 3"]
    # The report CLI: argparse's one line naming file and line, exit 2, no traceback.
    with pytest.raises(SystemExit) as stopped:
        report_main(["--votes", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {path}:3: " in err and "Traceback" not in err


def test_a_csv_row_with_invalid_utf8_is_named_and_skipped(tmp_path):
    rows = [{k: v for k, v in _record(i).items() if isinstance(v, str)} for i in range(3)]
    path = tmp_path / "votes.csv"
    path.write_bytes(_csv_text(rows).encode().replace(b"answer two 1", b"answer \xc3\x28 two 1"))
    with pytest.raises(RecordError, match="votes.csv:3: invalid UTF-8"):
        import_paths([path])
    assert [r.prompt for r in import_paths([path], skip_bad=True).records] == ["q0", "q2"]


@pytest.mark.parametrize("content, why, line", [
    (b'[{"a": 1},\n' + NESTED.encode() + b"]", "nested too deeply", None),
    (b'[\n{"a": "\xff"}\n]', "invalid UTF-8", 2),
])
def test_a_json_file_that_cannot_be_read_is_named_and_skipped_whole(tmp_path, content, why, line):
    folder = tmp_path / "votes"
    folder.mkdir()
    (folder / "a.json").write_bytes(content)
    (folder / "b.jsonl").write_bytes(_jsonl(GOOD))
    with pytest.raises(RecordError, match=why) as caught:
        import_paths([folder])
    assert caught.value.path == str(folder / "a.json") and caught.value.line == line
    result = import_paths([folder], skip_bad=True)
    assert len(result.records) == 3
    assert len(result.issues) == 1 and result.issues[0].path == str(folder / "a.json")


def test_an_alpaca_eval_completion_that_overflows_the_parser_is_kept_as_text(tmp_path):
    raw = "{" + "-" * 100_000 + "1}"  # ast.literal_eval: MemoryError (the parser's stack)
    rows = [{"instruction": f"Say {i}.", "output_1": f"{i}", "output_2": f"{i}!", "generator_1": "base",
             "generator_2": "model", "annotator": "gpt4", "preference": 2.0, "raw_completion": raw}
            for i in range(2)]
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(rows))
    records = import_paths([path]).records
    assert len(records) == 2
    assert records[0].meta["shown_order"] == "unknown" and records[0].raw_output == raw


def test_a_folder_with_a_link_loop_is_walked_once(tmp_path):
    folder = tmp_path / "votes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "votes.jsonl").write_bytes(_jsonl(GOOD[:1]))
    os.symlink("..", folder / "sub" / "up")  # a loop: votes/sub/up/sub/up/...
    result = import_paths([folder])
    assert len(result.records) == 1
    assert [i.path for i in result.issues] == [str(folder / "sub" / "up")]


def test_each_file_is_read_once_and_a_broken_link_is_reported(tmp_path):
    folder = tmp_path / "votes"
    folder.mkdir()
    (folder / "votes.jsonl").write_bytes(_jsonl(GOOD[:1]))
    os.symlink(".", folder / "here")
    os.symlink("votes.jsonl", folder / "same.jsonl")  # the same file by another name
    os.symlink("nowhere.jsonl", folder / "broken.jsonl")
    result = import_paths([folder, folder / "votes.jsonl"])
    assert len(result.records) == 1
    # "same.jsonl" comes first in the folder and is read; votes.jsonl is then the same file.
    assert sorted(os.path.basename(i.path) for i in result.issues) == ["broken.jsonl", "here"]


def test_a_pandalm_folder_with_a_hostile_file_is_named_and_skipped(tmp_path):
    folder = tmp_path / "pandalm"
    folder.mkdir()
    (folder / "testset-v1.json").write_bytes(b'[{"idx": 1, "instruction": "\xff"}]')
    with pytest.raises(RecordError, match="pandalm: a PandaLM file holds invalid UTF-8"):
        import_paths([folder])
    result = import_paths([folder], skip_bad=True)
    assert result.records == () and [i.path for i in result.issues] == [str(folder)]
