"""The commands keep the report's promises (issue 30, items 5-7): the recommended PPI command
runs on the files the report was built from, no interval or rank is claimed from a handful of
pairs or with zero width, and mistakes end in one line naming the fix, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pairlab.records import Record, make_pair_id, write_records
from support import run_module

ROOT = Path(__file__).resolve().parents[1]


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return run_module(module, *args, cwd=ROOT)


def _both_orders(n_pairs: int, winner: str, judge: str = "always-a") -> list[Record]:
    """A judge that gives ``winner`` in both display orders of every pair."""
    out = []
    for k in range(n_pairs):
        prompt, x, y = f"question {k}", f"answer x {k}", f"answer y {k}"
        for first, second, ra, rb in (("M1", "M2", x, y), ("M2", "M1", y, x)):
            out.append(Record(pair_id=make_pair_id(prompt, x, y), prompt=prompt, model_a=first, model_b=second,
                              response_a=ra, response_b=rb, winner=winner, judge=judge))
    return out


def test_the_reports_recommended_ppi_command_runs_and_says_what_it_left_out(shared_data):
    done = cli("analysis.ratings", "--votes", str(shared_data / "pandalm"), "--judge", "human",
               "--ppi", "gpt-3.5-turbo", "--json")
    assert done.returncode == 0, done.stderr
    ppi = json.loads(done.stdout)["ppi"]
    assert ppi["n_human_left_out"] > 0 and ppi["n_human"] > 0  # votes on its unparseable verdicts' pairs
    table = cli("analysis.ratings", "--votes", str(shared_data / "pandalm"), "--judge", "human",
                "--ppi", "gpt-3.5-turbo")
    assert f"{ppi['n_human_left_out']} human votes left out" in table.stdout


def test_ppi_with_an_absent_judge_lists_the_judges_present(shared_data):
    done = cli("analysis.ratings", "--votes", str(shared_data / "pandalm"), "--judge", "human", "--ppi", "gpt-4")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "gpt-3.5-turbo" in last and "pandalm-7b" in last


def test_an_always_first_judge_gets_no_zero_width_interval(tmp_path):
    path = tmp_path / "always_a.jsonl"
    write_records(path, _both_orders(12, "model_a"))
    done = cli("analysis.ratings", "--votes", str(path), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["ratings"]
    assert all(r["lower"] is None and r["upper"] is None and r["rank"] is None for r in rows)
    assert "zero width" in done.stderr
    table = cli("analysis.ratings", "--votes", str(path))
    assert "[1000.0, 1000.0]" not in table.stdout and "1000.0    1000.0    1000.0" not in table.stdout


def test_two_votes_rank_nothing_and_a_missing_mle_is_regularised_saying_so(tmp_path):
    two = [Record(pair_id=make_pair_id(p, "a", "b"), prompt=p, model_a=a, model_b=b, response_a="a", response_b="b",
                  winner=w, judge="human") for p, a, b, w in (("p", "M1", "M2", "model_a"), ("q", "M2", "M1", "model_b"))]
    path = tmp_path / "two.jsonl"
    write_records(path, two)
    done = cli("analysis.ratings", "--votes", str(path), "--json")
    assert done.returncode == 0, done.stderr  # M1 has only wins: it used to exit 1, "pass l2 > 0"
    rows = {r["model"]: r for r in json.loads(done.stdout)["ratings"]}
    assert rows["M1"]["rating"] > rows["M2"]["rating"]
    assert all(r["rank"] is None and r["lower"] is None for r in rows.values())
    assert "--l2 1" in done.stderr and "regularised" in done.stderr and "only 2 pairs" in done.stderr


def test_a_csv_without_a_judge_column_names_its_raters(tmp_path):
    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner\n"
                    + "".join(f"M{k % 2 + 1},M{2 - k % 2},{w}\n"
                              for k, w in enumerate(["model_a", "model_b", "model_b", "model_a", "tie"])))
    done = cli("analysis.ratings", "--votes", str(path))
    assert done.returncode == 0, done.stderr
    raters = next(line for line in done.stdout.splitlines() if line.startswith("raters"))
    assert raters.startswith("raters: ") and raters.strip() != "raters:"  # names who voted, never nothing


def test_output_paths_of_the_wrong_kind_are_one_line_errors(tmp_path):
    votes = tmp_path / "v.jsonl"
    write_records(votes, _both_orders(3, "model_a"))
    report = cli("analysis.report", "--votes", str(votes), "--out", str(votes), "--quiet")
    assert report.returncode == 2 and "Traceback" not in report.stderr
    assert "is a file" in report.stderr.strip().splitlines()[-1]
