"""The record type: validation, round trips that keep unknown fields, located errors."""

import json

import pytest

from pairlab.records import Pair, Record, RecordError, make_pair_id, read_pairs, read_records, write_records

BASE = dict(pair_id="p1", prompt="Say hi", model_a="m1", model_b="m2", response_a="hi", response_b="hello",
            winner="model_a", judge="human:abc")


def test_round_trip_keeps_unknown_fields(tmp_path):
    rec = Record.from_dict({**BASE, "custom_field": {"x": [1, 2]}, "meta": {"battle_id": "b"}})
    path = tmp_path / "r.jsonl"
    write_records(path, [rec])
    back = read_records(path)[0]
    assert back.extra == {"custom_field": {"x": [1, 2]}}
    assert back.meta == {"battle_id": "b"}
    assert json.loads(path.read_text())["custom_field"] == {"x": [1, 2]}
    assert back == rec


def test_judge_type_inferred():
    assert Record.from_dict(BASE).judge_type == "human"
    assert Record.from_dict({**BASE, "judge": "human"}).judge_type == "human"
    assert Record.from_dict({**BASE, "judge": "gpt-4"}).judge_type == "llm"


def test_pair_id_is_order_independent():
    assert make_pair_id("q", "a", "b") == make_pair_id("q", "b", "a")
    assert make_pair_id("q", "a", "b") != make_pair_id("q2", "a", "b")


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "invalid JSON"),
        (json.dumps({k: v for k, v in BASE.items() if k != "winner"}), "missing required field 'winner'"),
        (json.dumps({**BASE, "response_b": True}), "field 'response_b' must be a string, got bool"),
        (json.dumps({**BASE, "winner": "left"}), "unknown winner 'left'"),
        (json.dumps({**BASE, "prob_a": 1.5}), "prob_a must be a number in [0, 1]"),
        (json.dumps([1, 2]), "must be a JSON object"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "votes.jsonl"
    path.write_text(json.dumps(BASE) + "\n\n" + line + "\n")
    with pytest.raises(RecordError) as info:
        read_records(path)
    assert info.value.line == 3  # blank lines still count
    assert str(info.value).startswith(f"{path}:3: ")
    assert message in str(info.value)


def test_skip_bad_collects_errors_and_keeps_going(tmp_path):
    path = tmp_path / "votes.jsonl"
    lines = [json.dumps(BASE), "{oops", json.dumps({**BASE, "winner": "x"}), json.dumps({**BASE, "pair_id": "p2"})]
    path.write_text("\n".join(lines) + "\n")
    errors = []
    records = read_records(path, skip_bad=True, errors=errors)
    assert [r.pair_id for r in records] == ["p1", "p2"]
    assert [e.line for e in errors] == [2, 3]
    with pytest.raises(ValueError, match="errors"):
        read_records(path, skip_bad=True)


def test_pairs_reader(tmp_path):
    path = tmp_path / "pairs.jsonl"
    row = {k: v for k, v in BASE.items() if k not in ("winner", "judge")}
    path.write_text(json.dumps({**row, "prompt_id": 81, "note": "kept"}) + "\n" + json.dumps({**row, "prompt": 3}) + "\n")
    errors = []
    pairs = read_pairs(path, skip_bad=True, errors=errors)
    assert pairs == [Pair(**row, prompt_id="81", extra={"note": "kept"})]
    assert errors[0].line == 2 and "'prompt' must be a string" in errors[0].message


def test_strength_is_an_optional_whole_number():
    base = dict(pair_id="p", prompt="q", model_a="a", model_b="b", response_a="x", response_b="y", winner="model_a", judge="j")
    assert Record.from_dict({**base, "strength": 2}).to_dict()["strength"] == 2
    assert "strength" not in Record.from_dict(base).to_dict()
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(RecordError, match="strength"):
            Record.from_dict({**base, "strength": bad})


def test_a_record_without_a_verdict_says_why():
    """One convention: winner None only together with parse_error; written as "winner": null."""
    base = dict(pair_id="p", prompt="q", model_a="a", model_b="b", response_a="x", response_b="y", judge="j")
    with pytest.raises(RecordError, match="parse_error"):
        Record(**base, winner=None)
    record = Record(**base, winner=None, parse_error="no verdict found", raw_output="hmm")
    line = json.loads(json.dumps(record.to_dict()))
    assert line["winner"] is None and Record.from_dict(line) == record
    with pytest.raises(RecordError, match="missing required field 'winner'"):
        Record.from_dict({**base})
