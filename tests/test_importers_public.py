"""AlpacaEval, Chatbot Arena and Arena-Hard-Auto files become records.

No real Arena or Arena-Hard files ship here, so the fixtures are small files written in
the published schemas, field for field (the Hugging Face dataset cards of
lmsys/chatbot_arena_conversations, lmsys/lmsys-arena-human-preference-55k,
lmarena-ai/arena-human-preference-100k and -140k; arena-hard-auto's gen_judgment.py).
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from analysis.frames import load_frame
from analysis.importers import FORMATS
from row_reader import import_paths, load_records
from pairlab.records import RecordError, read_records, write_records

CONV_A = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
          {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6, since 3+3=6."}]
CONV_B = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "Four."},
          {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "Six."}]


def arena_33k(i: int, winner: str = "model_a") -> dict:
    return {"question_id": f"q{i}", "model_a": "vicuna-13b", "model_b": "gpt-4", "winner": winner,
            "judge": f"arena_user_{i}", "conversation_a": CONV_A, "conversation_b": CONV_B, "turn": 2,
            "anony": i % 2 == 0, "language": "English", "tstamp": 1682351591.1322 + i,
            "openai_moderation": {"flagged": False}, "toxic_chat_tag": {"roberta-large": {"flagged": False}}}


def arena_55k(i: int, flags=(1, 0, 0)) -> dict:
    return {"id": 30192 + i, "model_a": "gpt-4-1106-preview", "model_b": "gpt-4-0613",
            "prompt": json.dumps(["Is it morally right to kill mosquitoes?", "Why?"]),
            "response_a": json.dumps(["It depends.", "Because they carry disease."]),
            "response_b": json.dumps(["No.", None]),
            "winner_model_a": flags[0], "winner_model_b": flags[1], "winner_tie": flags[2]}


def arena_140k(i: int, winner: str = "both_bad") -> dict:
    def side(text):
        return [{"role": "user", "content": [{"type": "text", "text": "Name a prime.", "image": None, "mimeType": None}]},
                {"role": "assistant", "content": [{"type": "text", "text": text, "image": None, "mimeType": None}]}]

    return {"id": f"c4b7-{i}", "model_a": "gemini-2.5-pro", "model_b": "claude-opus-4", "winner": winner,
            "evaluation_session_id": f"s{i}", "evaluation_order": 1, "conversation_a": side("7"),
            "conversation_b": side("11"), "full_conversation": [], "conv_metadata": {"sum_user_tokens": 4},
            "category_tag": {"math_v0.1": {"math": False}}, "language": "en", "is_code": False,
            "timestamp": "2025-05-01T12:00:00"}


def test_chatbot_arena_33k_json_keeps_turn_language_anony_tstamp(tmp_path):
    path = tmp_path / "arena33k.json"
    path.write_text(json.dumps([arena_33k(0), arena_33k(1, "tie (bothbad)")]))
    first, second = load_records(path)
    assert (first.prompt, first.response_a, first.response_b) == ("And 3+3?", "6, since 3+3=6.", "Six.")
    assert first.turn == 2 and first.tstamp == pytest.approx(1682351591.1322) and first.prompt_id == "q0"
    assert first.meta["language"] == "English" and first.meta["anony"] is True and second.meta["anony"] is False
    assert first.judge == "human:arena_user_0" and second.winner == "tie (bothbad)"
    assert first.family_b == "openai" and first.conversation["a"] == CONV_A
    # Named (non-anonymous) votes are left out of ratings by default, as before.
    assert len(load_frame(path)) == 1 and len(load_frame(path, anonymous_only=False)) == 2


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_chatbot_arena_55k_winner_flags_and_encoded_turns(tmp_path, suffix):
    rows = [arena_55k(0, (1, 0, 0)), arena_55k(1, (0, 1, 0)), arena_55k(2, (0, 0, 1))]
    path = tmp_path / f"train{suffix}"
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    records = load_records(path)
    assert [r.winner for r in records] == ["model_a", "model_b", "tie"]
    # The last turn; a reply the release stores as null becomes empty text, not a crash.
    assert (records[0].prompt, records[0].response_a, records[0].response_b) == ("Why?", "Because they carry disease.", "")
    assert records[0].judge == "human" and records[0].prompt_id == "30192"
    bad = tmp_path / f"bad{suffix}"
    frame = pd.DataFrame([arena_55k(0, (1, 1, 0))])
    frame.to_csv(bad, index=False) if suffix == ".csv" else frame.to_parquet(bad)
    with pytest.raises(RecordError, match="exactly one of winner_model_a"):
        load_records(bad)


def test_chatbot_arena_100k_parquet_and_140k_jsonl_and_parquet(tmp_path):
    hundred = tmp_path / "arena100k.parquet"
    rows = [{**arena_33k(i), "conv_metadata": {"sum_user_tokens": 9}, "is_code": False, "is_refusal": False,
             "category_tag": {"criteria_v0.1": {"specificity": True}}, "dedup_tag": {"high_freq": False}}
            for i in range(4)]
    for row in rows:
        del row["openai_moderation"], row["toxic_chat_tag"]
    pd.DataFrame(rows).to_parquet(hundred)
    records = load_records(hundred)
    assert len(records) == 4 and records[0].response_a == "6, since 3+3=6." and records[0].meta["is_code"] is False
    # Parquet gives the nested columns back as Python structures; they survive a JSONL round trip.
    write_records(tmp_path / "out.jsonl", records)
    assert read_records(tmp_path / "out.jsonl")[0].meta["category_tag"] == {"criteria_v0.1": {"specificity": True}}

    jsonl = tmp_path / "arena140k.jsonl"
    jsonl.write_text("\n".join(json.dumps(arena_140k(i, w)) for i, w in enumerate(["both_bad", "model_b"])) + "\n")
    parquet = tmp_path / "arena140k.parquet"
    pd.DataFrame([arena_140k(i) for i in range(3)]).to_parquet(parquet)
    for path in (jsonl, parquet):
        record = load_records(path)[0]
        assert (record.prompt, record.response_a, record.response_b) == ("Name a prime.", "7", "11")
        assert record.winner == "tie (bothbad)" and record.meta["language"] == "en"
        assert record.tstamp == pytest.approx(pd.Timestamp("2025-05-01T12:00:00", tz="UTC").timestamp())
    assert load_records(jsonl)[1].winner == "model_b"


def test_alpaca_eval_rows_null_preference_is_a_parse_failure_not_a_tie(tmp_path):
    base = {"instruction": "Say hi.", "output_1": "Hello!", "generator_1": "gpt4_1106_preview",
            "output_2": "Hi", "generator_2": "tiny-model", "annotator": "weighted_alpaca_eval_gpt4_turbo",
            "price_per_example": 0.008, "time_per_example": 0.4, "dataset": "helpful_base"}
    rows = [{**base, "preference": p} for p in (1.25, 1.9, 1.5, 0, None)]
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(rows))
    records = load_records(path)
    assert [r.winner for r in records] == ["model_a", "model_b", "tie", "tie", None]
    assert [r.prob_a for r in records] == [pytest.approx(0.75), pytest.approx(0.1), 0.5, 0.5, None]
    assert records[4].parse_error and records[0].parse_error is None
    assert records[0].judge == "weighted_alpaca_eval_gpt4_turbo" and records[0].judge_family == "openai"
    assert records[0].family_a == "openai" and records[0].meta["price_per_example"] == 0.008
    # Ratings never see the row without a verdict; winrate counts it.
    assert len(load_frame(path)) == 4
    from analysis.ratings.winrate import win_rates

    # Two models take part in every battle: AlpacaEval's generator_1 names the baseline.
    assert win_rates(load_frame(path)).baseline == "gpt4_1106_preview"
    row = win_rates(load_frame(path, with_failures=True), "gpt4_1106_preview").table.iloc[0]
    assert (row["baseline"], row["n"], row["n_dropped"]) == ("gpt4_1106_preview", 4, 1)
    assert row["win_rate"] == pytest.approx(100 * (0.25 + 0.9 + 0.5 + 0.5) / 4)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**base, "preference": 2.5}]))
    with pytest.raises(RecordError, match=r"bad.json: item 0: preference must be in \[1, 2\]"):
        load_records(bad)


def test_alpaca_eval_order_shown_is_read_from_the_judges_answer(tmp_path):
    """AlpacaEval shows the outputs in a random order as m (first) and M (second) and
    stores the preference in file order; the completion's P(M) tells the two apart."""
    def completion(p_second: float) -> dict:
        top = [{"token": "M", "logprob": math.log(p_second)}, {"token": "m", "logprob": math.log(1 - p_second)}]
        return {"logprobs": {"content": [{"token": "M", "top_logprobs": top}]}, "text": "M"}

    base = {"instruction": "Say hi.", "output_1": "Hello there!", "generator_1": "gpt4_1106_preview",
            "output_2": "Hi", "generator_2": "tiny-model", "annotator": "weighted_alpaca_eval_gpt4_turbo"}
    rows = [
        {**base, "preference": 1.8, "raw_completion": completion(0.8)},  # M = output_2: file order shown
        {**base, "preference": 1.8, "raw_completion": completion(0.2)},  # M = output_1: output_2 shown first
        {**base, "preference": 1.8, "raw_completion": str(completion(0.2))},  # the same, kept as a Python repr
        {**base, "preference": 2.0, "raw_completion": {"text": "### Concise explanation ... m"}},  # text only
        {**base, "preference": 1.8},  # nothing to read: file order, flagged
    ]
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(rows))
    records = load_records(path)
    assert [r.meta["shown_order"] for r in records] == ["as in file", "swapped", "swapped", "swapped", "unknown"]
    kept, swapped = records[0], records[1]
    assert (kept.model_a, kept.response_a, kept.winner, kept.prob_a) == ("gpt4_1106_preview", "Hello there!", "model_b", pytest.approx(0.2))
    assert (swapped.model_a, swapped.response_a, swapped.winner, swapped.prob_a) == ("tiny-model", "Hi", "model_a", pytest.approx(0.8))
    assert kept.pair_id == swapped.pair_id and records[3].model_a == "tiny-model" and records[3].winner == "model_a"
    # The win rate does not depend on the order shown.
    from analysis.ratings.winrate import win_rates

    table = win_rates(load_frame(path), "gpt4_1106_preview").table
    assert table.loc[0, "win_rate"] == pytest.approx(100 * (0.8 * 4 + 1.0) / 5)


def arena_hard_game(question: str, answer_a: str, answer_b: str, score: str | None) -> dict:
    prompt = (f"<|User Prompt|>\n{question}\n\n<|The Start of Assistant A's Answer|>\n{answer_a}\n"
              f"<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n{answer_b}\n"
              "<|The End of Assistant B's Answer|>")
    return {"user_prompt": prompt, "judgment": f"My answer ... My final verdict is [[{score}]].", "score": score}


def test_arena_hard_folder_two_records_per_question_with_strength(tmp_path):
    folder = tmp_path / "model_judgment" / "gpt-4-1106-preview"
    folder.mkdir(parents=True)
    q = "Write a haiku about rust.\nMake it short."
    rows = [
        {"question_id": "328c149ed45a41c0b9d6f14659e63599", "model": "llama-3-8b", "judge": "gpt-4-1106-preview",
         "games": [arena_hard_game(q, "Base answer.", "Model answer.", "A>>B"),
                   arena_hard_game(q, "Model answer.", "Base answer.", "B>A")]},
        {"question_id": "q2", "model": "llama-3-8b", "judge": "gpt-4-1106-preview",
         "games": [arena_hard_game("Q2?", "b", "m", "A=B"), arena_hard_game("Q2?", "m", "b", None)]},
    ]
    (folder / "llama-3-8b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = import_paths([tmp_path / "model_judgment"]).records
    assert len(records) == 4
    g1, g2, g3, g4 = records
    assert (g1.model_a, g1.model_b, g1.winner, g1.strength) == ("gpt-4-0314", "llama-3-8b", "model_a", 2)
    assert (g2.model_a, g2.model_b, g2.winner, g2.strength) == ("llama-3-8b", "gpt-4-0314", "model_b", 1)
    assert g1.pair_id == g2.pair_id and g1.prompt == q and g1.response_b == g2.response_a == "Model answer."
    assert g1.judge == "gpt-4-1106-preview" and g1.judge_family == "openai" and g1.meta == {"game": 1, "score": "A>>B"}
    assert (g3.winner, g3.strength) == ("tie", 0)
    assert g4.winner is None and g4.parse_error and g4.strength is None and g4.raw_output
    # v2.0 rows name their baseline and keep the judge chat as `prompt`.
    v2 = {"uid": "u1", "category": "hard_prompt", "model": "m2", "judge": "gemini-2.5", "baseline": "o3-mini",
          "games": [{"score": "B>>A", "judgment": {"answer": "[[B>>A]]"},
                     "prompt": [{"role": "system", "content": "judge"},
                                {"role": "user", "content": arena_hard_game("Q", "x", "y", None)["user_prompt"]}]},
                    {"score": "A>B", "judgment": {"answer": "[[A>B]]"}, "prompt": arena_hard_game("Q", "y", "x", None)["user_prompt"]}]}
    (folder / "m2.jsonl").write_text(json.dumps(v2) + "\n")
    v2_records = load_records(folder / "m2.jsonl")
    assert [(r.model_a, r.winner, r.strength, r.category, r.prompt_id) for r in v2_records] == [
        ("o3-mini", "model_b", 2, "hard_prompt", "u1"), ("m2", "model_a", 1, "hard_prompt", "u1")]


def test_bad_rows_named_by_file_and_line_and_skipped_only_when_asked(tmp_path):
    path = tmp_path / "votes.jsonl"
    lines = [json.dumps(arena_33k(0)), "{not json", json.dumps({**arena_33k(2), "winner": "left"}),
             json.dumps(arena_33k(3)), json.dumps({"model_a": "x"})]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError, match=r"votes.jsonl:2: invalid JSON"):
        load_records(path)
    result = import_paths([path], skip_bad=True)
    assert len(result.records) == 2
    assert [(i.item, i.message.split(":")[0]) for i in result.issues] == [
        ("line 2", "skipped"), ("line 3", "skipped"), ("line 5", "skipped")]
    assert "unknown winner 'left'" in result.issues[1].message
    assert "not a chatbot-arena row" in result.issues[2].message


def test_unknown_format_lists_the_formats_we_read(tmp_path):
    path = tmp_path / "mystery.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a", "score": 3}) + "\n")
    with pytest.raises(RecordError) as info:
        load_records(path)
    message = str(info.value)
    assert f"{path}:1: unknown format" in message
    # One line, as the commands print errors: the list must survive being cut to its first line.
    assert "\n" not in message
    for name in [m.NAME for m in FORMATS] + ["pandalm"]:
        assert name in message
    other = tmp_path / "votes.txt"
    other.write_text("a,b\n")
    with pytest.raises(RecordError, match="(?s)unknown file type '.txt'.*alpaca-eval"):
        load_records(other)


def test_ratings_and_report_help_name_every_format():
    from analysis.ratings.cli import build_parser
    from analysis.report.cli import _parser

    for text in (build_parser().format_help(), _parser().format_help()):
        for name in [m.NAME for m in FORMATS] + ["pandalm"]:
            assert f"{name}: " in text


def test_report_reads_the_public_formats_mixed_with_our_records(tmp_path, shared_data):
    """`python -m analysis.report --votes` on AlpacaEval + Arena-Hard + records at once."""
    from analysis.report import main

    folder = tmp_path / "model_judgment" / "gpt-4-1106-preview"
    folder.mkdir(parents=True)
    rows = []
    for i in range(30):
        games = [arena_hard_game(f"Q{i}?", f"base {i}", f"model answer {i} " * (1 + i % 3), "B>A" if i % 3 else "A>>B"),
                 arena_hard_game(f"Q{i}?", f"model answer {i} " * (1 + i % 3), f"base {i}", None if i == 0 else "A>B")]
        rows.append({"question_id": f"q{i}", "model": "llama-3-8b", "judge": "gpt-4-1106-preview", "games": games})
    (folder / "llama-3-8b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ours = [dict(pair_id=f"p{i}", prompt=f"q{i}", model_a="m1", model_b="m2", response_a="x" * (i + 1),
                 response_b="y", winner=("model_a", "model_b", "tie")[i % 3], judge="human:v1") for i in range(30)]
    write_records(tmp_path / "ours.jsonl", ours)
    out = tmp_path / "report"
    alpaca = shared_data / "alpaca_eval" / "alpaca-7b.annotations.json"
    assert main(["--votes", str(alpaca), str(tmp_path / "model_judgment"), str(tmp_path / "ours.jsonl"),
                 "--out", str(out), "--quiet", "--bootstrap", "50", "--rating-bootstrap", "0"]) == 0
    judges = json.loads((out / "report.json").read_text())["judges"]
    assert set(judges) == {"weighted_alpaca_eval_gpt4_turbo", "gpt-4-1106-preview", "human"}
    assert judges["weighted_alpaca_eval_gpt4_turbo"]["n_records"] == 805
    hard = judges["gpt-4-1106-preview"]
    assert hard["n_records"] == 59 and hard["n_parse_errors"] == 1
    assert hard["position"]["n_swapped_pairs"] == 29
    # With the order shown recovered, AlpacaEval's judge is not mistaken for a first-position lover.
    assert judges["weighted_alpaca_eval_gpt4_turbo"]["position"]["first_rate"] < 0.6


def test_ratings_cli_stops_at_a_bad_row_unless_asked_to_skip(tmp_path, capsys):
    from analysis.ratings.cli import main

    path = tmp_path / "votes.jsonl"
    rows = [arena_33k(i, ("model_a", "model_b", "tie")[i % 3]) for i in range(0, 12, 2)]
    lines = [json.dumps(r) for r in rows]
    lines.insert(3, json.dumps({**arena_33k(99), "winner": "left"}))
    path.write_text("\n".join(lines) + "\n")
    assert main(["--votes", str(path), "--json"]) == 2
    assert f"{path}:4: unknown winner 'left'" in capsys.readouterr().err
    assert main(["--votes", str(path), "--json", "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "line 4: skipped: unknown winner 'left'" in captured.err
    assert {r["model"] for r in json.loads(captured.out)["ratings"]} == {"vicuna-13b", "gpt-4"}
