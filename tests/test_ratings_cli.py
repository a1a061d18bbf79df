"""``python -m analysis.ratings``: the help is the documentation; JSON has the contract shape."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pairlab.records import Record, write_records
from support import run_module

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_module("analysis.ratings", *args, cwd=REPO)


@pytest.fixture(scope="module")
def votes(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    strength = {"strong": 1.0, "middle": 0.0, "weak": -1.0}
    names = list(strength)
    records = []
    for n in range(600):
        a, b = rng.choice(3, size=2, replace=False)
        p = 1 / (1 + np.exp(-(strength[names[a]] - strength[names[b]])))
        winner = "tie" if rng.random() < 0.1 else ("model_a" if rng.random() < p else "model_b")
        records.append(
            Record(pair_id=f"p{n}", prompt=f"q{n}", model_a=names[a], model_b=names[b], response_a="x " * (n % 7 + 1),
                   response_b="**y**", winner=winner, judge="human:v" + str(n % 5))
        )
    path = tmp_path_factory.mktemp("votes") / "votes.jsonl"
    write_records(path, records)
    return path


def test_help_documents_the_contract():
    result = run_cli("--help")
    assert result.returncode == 0
    for phrase in ("--votes", "--method", "--bootstrap", "--judge", "--json", "bt-style", "trueskill",
                   "400 points", "rank = 1 +", "sandwich", "--anchor", "pair_id", "ridge"):
        assert phrase in result.stdout, phrase


def test_json_output_has_the_contract_shape(votes):
    result = run_cli("--votes", str(votes), "--bootstrap", "100", "--judge", "human", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"clustering", "method", "ratings", "raters"} and out["method"] == "bt"
    assert out["raters"] == "raters: people 600"
    assert [r["model"] for r in out["ratings"]] == ["strong", "middle", "weak"]
    for row in out["ratings"]:
        assert set(row) == {"model", "rating", "lower", "upper", "rank", "n"}
        assert row["lower"] < row["rating"] < row["upper"]
        assert isinstance(row["rank"], int) and isinstance(row["n"], int)
    assert sum(r["n"] for r in out["ratings"]) == 2 * 600


def test_style_method_reports_coefficients(votes):
    out = json.loads(run_cli("--votes", str(votes), "--method", "bt-style", "--json").stdout)
    assert out["method"] == "bt-style"
    assert {c["name"] for c in out["coefficients"]} <= {"length", "headers", "lists", "bold"}
    assert all(c["lower"] < c["coef"] < c["upper"] for c in out["coefficients"])


def test_table_output_on_the_pandalm_test_set(shared_data):
    result = run_cli("--votes", str(shared_data / "pandalm"), "--judge", "pandalm-7b", "--method", "elo")
    assert result.returncode == 0, result.stderr
    assert "method: elo" in result.stdout
    assert "warning: online Elo bootstrap intervals understate" in result.stderr
    for model in ("llama-7b", "bloom-7b", "opt-7b", "pythia-6.9b", "cerebras-gpt-6.7B"):
        assert model in result.stdout


def test_errors_exit_non_zero_with_a_message(votes):
    wrong_option = run_cli("--votes", str(votes), "--method", "elo", "--anchor", "strong=1200")
    assert wrong_option.returncode == 2 and "--anchor does not apply" in wrong_option.stderr
    no_votes = run_cli("--votes", str(votes), "--judge", "nobody")
    assert no_votes.returncode == 2 and "no battles" in no_votes.stderr


def test_winrate_against_a_baseline_absent_from_some_battles_gives_a_table(shared_data):
    """It used to end in "Mean of empty slice" and statsmodels' MissingDataError traceback:
    no instruction is shared with another model, so the difficulty proxy has nothing to borrow."""
    result = run_cli("--votes", str(shared_data / "pandalm"), "--method", "winrate", "--baseline", "llama-7b")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Mean of empty slice" not in result.stderr
    assert "baseline: llama-7b" in result.stdout
    for model in ("bloom-7b", "opt-7b", "pythia-6.9b", "cerebras-gpt-6.7B"):
        assert model in result.stdout


def test_bad_input_is_one_argparse_style_line_with_exit_code_2(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    result = run_cli("--votes", str(empty))
    assert result.returncode == 2
    assert result.stderr == f"python -m analysis.ratings: error: {empty}: empty file (no header, no rows)\n"
    blank = tmp_path / "empty.jsonl"
    blank.write_text("")
    result = run_cli("--votes", str(blank))
    assert result.returncode == 2
    assert result.stderr == f"python -m analysis.ratings: error: no battles to rate in {blank}\n"


def test_elo_points_lie_inside_their_own_intervals(shared_data):
    """The interval is a bootstrap of the same estimator: resampled battles streamed in the
    file's order, as the rating is (random orders used to put llama-7b's 1074.1 outside
    [1079.0, 1145.3] on PandaLM, people and judges pooled)."""
    from analysis.frames import load_frame
    from analysis.ratings import rate

    table = rate(load_frame(shared_data / "pandalm"), "elo", bootstrap=0, seed=0).table
    for row in table.to_dict(orient="records"):
        assert row["lower"] <= row["rating"] <= row["upper"], row
    assert "in the file's order" in rate(load_frame(shared_data / "pandalm"), "elo", bootstrap=0, seed=0).interval


def test_people_and_llm_judges_are_not_pooled_silently(shared_data):
    """PandaLM holds people's votes and two LLM judges' verdicts: by default only people's
    are rated and the output says what was left out; --judge all pools them and says so."""
    default = run_cli("--votes", str(shared_data / "pandalm"))
    assert default.returncode == 0, default.stderr
    clustering, header = default.stdout.splitlines()[:2]
    assert clustering == "intervals clustered by prompt (170 prompts)"  # PandaLM: 1-10 pairs a prompt
    assert header.startswith("raters: people (2997 battles); LLM judges left out (")
    assert "pandalm-7b 999" in header and "gpt-3.5-turbo 974" in header
    assert "battles: 2997" in default.stdout
    pooled = run_cli("--votes", str(shared_data / "pandalm"), "--judge", "all")
    assert pooled.returncode == 0, pooled.stderr
    assert pooled.stdout.splitlines()[1] == "raters: people 2997, pandalm-7b 999, gpt-3.5-turbo 974 (pooled)"
    assert f"battles: {2997 + 999 + 974}" in pooled.stdout


def test_winrate_with_two_models_names_both_candidates(tmp_path):
    """Both models take part in every battle and nothing names a baseline: say which two."""
    path = tmp_path / "two.csv"
    pd.DataFrame({"model_a": ["x", "y"] * 5, "model_b": ["y", "x"] * 5, "winner": ["model_a"] * 10}).to_csv(path)
    result = run_cli("--votes", str(path), "--method", "winrate")
    assert result.returncode == 2
    assert result.stderr == ("python -m analysis.ratings: error: x and y both take part in every battle; "
                             "name the baseline (--baseline MODEL)\n")
