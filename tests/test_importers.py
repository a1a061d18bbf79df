"""Importers: every public format becomes records; bad input is named by file and line/item."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from row_reader import import_paths, load_records
from pairlab.records import RecordError, write_records


def test_pandalm_folder(shared_data):
    result = import_paths([shared_data / "pandalm"])
    testset = json.loads((shared_data / "pandalm" / "testset-v1.json").read_text())
    good = [x for x in testset if isinstance(x["response1"], str) and isinstance(x["response2"], str)]
    by_judge = {}
    for r in result.records:
        by_judge.setdefault(r.judge, []).append(r)
    assert sorted(by_judge) == ["gpt-3.5-turbo", "human:annotator1", "human:annotator2", "human:annotator3", "pandalm-7b"]
    # Every test item is read: the six answers stored as JSON true too (as the text "True").
    assert all(len(v) == len(testset) for v in by_judge.values())
    item = good[0]
    first = next(r for r in by_judge["human:annotator2"] if r.pair_id == f"pandalm-{item['idx']}")
    m1, m2 = item["cmp_key"].split("_")
    assert (first.model_a, first.model_b) == (m1, m2)
    assert (first.response_a, first.response_b) == (item["response1"], item["response2"])
    assert first.winner == {0: "tie", 1: "model_a", 2: "model_b"}[item["annotator2"]]
    assert first.prompt.startswith(item["instruction"]) and first.prompt.endswith(item["input"])
    assert first.pair_id == f"pandalm-{item['idx']}"
    assert first.judge_type == "human" and first.judge_family is None
    panda = next(r for r in by_judge["pandalm-7b"] if r.pair_id == f"pandalm-{item['idx']}")
    # The prompt's id names the prompt, shared by the items that repeat it (170 of them).
    assert panda.prompt_id == first.prompt_id
    assert len({r.prompt_id for r in by_judge["pandalm-7b"]}) == 170
    assert panda.judge_type == "llm" and panda.judge_family == "llama"
    assert {r.family_a for r in result.records} == {"bloom", "cerebras", "llama", "opt"}
    # Boolean responses are reported by idx, never silently converted or dropped.
    converted = sorted({int(i.item.split()[1]) for i in result.issues if i.path.endswith("/testset-v1.json")})
    assert converted == sorted(x["idx"] for x in testset if x not in good)
    assert all("read as the text 'True'" in i.message for i in result.issues if i.path.endswith("/testset-v1.json"))
    assert {r.response_a for r in result.records if r.pair_id == "pandalm-157"} == {"True"}
    garbage = [r for r in by_judge["gpt-3.5-turbo"] if r.parse_error]
    # No placeholder verdict: a record without a verdict has winner None (one convention).
    assert garbage and all(r.raw_output == "garbage" and r.winner is None for r in garbage)


def test_pandalm_files_one_by_one_do_not_duplicate(shared_data):
    humans = import_paths([shared_data / "pandalm" / "testset-v1.json"]).records
    judge = import_paths([shared_data / "pandalm" / "pandalm-7b-testset-v1.json"]).records
    assert {r.judge_type for r in humans} == {"human"}
    assert {r.judge for r in judge} == {"pandalm-7b"}
    with pytest.warns(UserWarning, match="bool"):
        load_records(shared_data / "pandalm" / "testset-v1.json")


def test_pandalm_has_one_pair_id_per_test_item(shared_data):
    """A hash of prompt and texts merged 84 ids across different test items (1,070 records),
    pairing a judge's verdict on one item with people's votes on another."""
    records = import_paths([shared_data / "pandalm"]).records
    items = {}
    for r in records:
        items.setdefault(r.pair_id, set()).add(r.prompt_id)
    assert len(items) == 999
    assert all(len(ids) == 1 for ids in items.values())


def _conversation(q1, a1, q2=None, a2=None):
    conv = [{"role": "user", "content": q1}, {"role": "assistant", "content": a1}]
    if q2:
        conv += [{"role": "user", "content": q2}, {"role": "assistant", "content": a2}]
    return conv


def test_fastchat_battles_and_mt_bench_rows(tmp_path):
    battles = [
        {
            "model_a": "vicuna-13b", "model_b": "gpt-4", "winner": "tie (bothbad)", "judge": "arena_user_42",
            "conversation_a": _conversation("hi", "hello"), "conversation_b": _conversation("hi", "hey there"),
            "turn": 1, "anony": True, "tstamp": 1700000000.5,
        }
    ]
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(battles))
    (rec,) = load_records(path)
    assert (rec.judge, rec.judge_type, rec.winner) == ("human:arena_user_42", "human", "tie (bothbad)")
    assert (rec.prompt, rec.response_a, rec.response_b) == ("hi", "hello", "hey there")
    assert rec.family_a == "llama" and rec.family_b == "openai" and rec.meta["anony"] is True
    # MT-Bench human judgments (JSON Lines under .json, as datasets' to_json writes them):
    # turn 2 is judged on the second user turn.
    rows = [
        {
            "question_id": 81, "model_a": "alpaca-13b", "model_b": "claude-v1", "winner": "model_b",
            "judge": "expert_0", "turn": 2,
            "conversation_a": _conversation("q1", "a1", "q2", "a2"),
            "conversation_b": _conversation("q1", "b1", "q2", "b2"),
        },
        {
            "question_id": 81, "model_a": "alpaca-13b", "model_b": "claude-v1", "winner": "model_a",
            "judge": ["gpt-4", "pair-v2"], "turn": 1,
            "conversation_a": _conversation("q1", "a1", "q2", "a2"),
            "conversation_b": _conversation("q1", "b1", "q2", "b2"),
        },
    ]
    mt = tmp_path / "human_judgments.json"
    mt.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    human, gpt4 = load_records(mt)
    assert (human.judge, human.prompt, human.response_a, human.response_b, human.turn) == ("human:expert_0", "q2", "a2", "b2", 2)
    assert human.prompt_id == "81"
    assert (gpt4.judge, gpt4.judge_type, gpt4.template, gpt4.response_b) == ("gpt-4", "llm", "pair-v2", "b1")


def test_records_jsonl_csv_and_folders(tmp_path):
    rec = dict(pair_id="p1", prompt="q", model_a="m1", model_b="m2", response_a="x", response_b="y",
               winner="model_a", judge="judge-1")
    write_records(tmp_path / "votes" / "a.jsonl", [rec, {**rec, "winner": "tie", "custom": 3}])
    (tmp_path / "votes" / "a.manifest.json").write_text("{}")  # judges.run metadata: not votes
    csv = tmp_path / "votes" / "b.csv"
    csv.write_text("pair_id,prompt,model_a,model_b,response_a,response_b,winner,judge,tstamp\n"
                   "p2,q,m1,m2,x,z,model_b,human:7,12.5\n")
    records = load_records(tmp_path / "votes")
    assert [r.winner for r in records] == ["model_a", "tie", "model_b"]
    assert records[1].extra == {"custom": 3}
    assert records[2].judge_type == "human" and records[2].tstamp == 12.5


@pytest.mark.parametrize(
    "name, text, where",
    [
        ("bad.csv", "pair_id,prompt,model_a,model_b,response_a,response_b,winner,judge\np,q,a,b,x,y,model_a,j\np,q,a,b,x,y,maybe,j\n", ":3:"),
        ("bad.jsonl", '{"pair_id": "p"}\n', ":1:"),
        ("bad.json", json.dumps([{"model_a": "a", "model_b": "b"}]), "item 0"),
    ],
)
def test_errors_name_file_and_line(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(RecordError) as info:
        load_records(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_no_warning_for_clean_files(tmp_path):
    rec = dict(pair_id="p1", prompt="q", model_a="m1", model_b="m2", response_a="x", response_b="y",
               winner="model_a", judge="judge-1")
    write_records(tmp_path / "a.jsonl", [rec])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load_records(tmp_path / "a.jsonl")) == 1


def test_judges_run_folder_pairs_and_failures(tmp_path):
    """A judges.run output folder: pairs are skipped, failure lines counted, never given a winner."""
    from analysis.report import main

    pair = dict(pair_id="p1", prompt="q", model_a="m1", model_b="m2", response_a="x", response_b="yy")
    write_records(tmp_path / "pairs.jsonl", [pair])
    rows = [{**pair, "pair_id": f"p{i}", "prompt": f"q{i}", "winner": "model_a", "judge": "j1"} for i in range(12)]
    write_records(tmp_path / "judge-j1.jsonl", rows)
    write_records(tmp_path / "judge-j1.failures.jsonl", [{**pair, "judge": "j1", "parse_error": "no [[A]] or [[B]]", "raw_output": "hmm"}])
    (tmp_path / "judge-j1.manifest.json").write_text("{}")
    result = import_paths([tmp_path])
    assert len(result.records) == 13
    assert any(i.path.endswith("pairs.jsonl") and "skipped" in i.message for i in result.issues)
    # An old failures line (no winner key) reads as a record without a verdict, never given one.
    (failure,) = [r for r in result.records if r.parse_error]
    assert failure.judge == "j1" and failure.winner is None and "no [[A]]" in failure.parse_error
    assert {r.winner for r in result.records if not r.parse_error} == {"model_a"}
    assert main(["--votes", str(tmp_path), "--out", str(tmp_path / "out"), "--quiet", "--rating-bootstrap", "0"]) == 0
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["judges"]["j1"]["n_records"] == 12 and data["judges"]["j1"]["n_parse_errors"] == 1


def test_pandalm_pairs_to_judge_are_distinct_text_pairs():
    from analysis.importers.pandalm import pairs_to_judge

    testset = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pandalm" / "testset-v1.json"
    pairs = pairs_to_judge(testset, 200)
    assert len(pairs) == 200 and len({p.pair_id for p in pairs}) == 200
    assert all(isinstance(p.response_a, str) and p.response_a != p.response_b for p in pairs)
    with pytest.raises(ValueError, match="fewer than"):
        pairs_to_judge(testset, 10**6)
