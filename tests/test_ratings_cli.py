"""``python -m analysis.ratings``: the help is the documentation; JSON has the contract shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.records import Record, write_records

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis.ratings", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


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
            Record(pair_id=f"p{n}", prompt="q", model_a=names[a], model_b=names[b], response_a="x " * (n % 7 + 1),
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
    assert set(out) == {"method", "ratings"} and out["method"] == "bt"
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
    assert wrong_option.returncode == 1 and "--anchor does not apply" in wrong_option.stderr
    no_votes = run_cli("--votes", str(votes), "--judge", "nobody")
    assert no_votes.returncode == 1 and "no battles" in no_votes.stderr
