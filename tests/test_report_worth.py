"""The report opens with the answer (one block per judge) and says what each judge is worth
in human votes (prediction-powered ratings), on PandaLM with and without its people."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from row_reader import load_records
from analysis.report import main
from pairlab.records import is_human, write_records

JUDGES = ("gpt-3.5-turbo", "pandalm-7b")


@pytest.fixture(scope="module")
def with_people(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("worth")
    assert main(["--votes", str(shared_data / "pandalm"), "--out", str(out), "--quiet", "--rating-bootstrap", "20"]) == 0
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), (out / "report.html").read_text()


@pytest.fixture(scope="module")
def without_people(tmp_path_factory, shared_data):
    """PandaLM's two judges with the three people's votes removed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test set's known bad rows
        records = [r for r in load_records(shared_data / "pandalm") if not is_human(r.judge)]
    out = tmp_path_factory.mktemp("no_people")
    write_records(out / "judges.jsonl", records)
    assert main(["--votes", str(out / "judges.jsonl"), "--out", str(out), "--quiet", "--rating-bootstrap", "20"]) == 0
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), (out / "report.html").read_text()


def test_each_pandalm_judge_is_worth_more_than_its_human_votes_with_an_interval(with_people):
    doc, md, html = with_people
    for judge in JUDGES:
        ppi = doc["judges"][judge]["ppi"]
        assert ppi["n_human_pairs"] == round(0.2 * ppi["n_judge"])  # people on every pair: the 20% design
        lo, hi = ppi["effective_human_votes_ci"]
        # Worth more than the votes, and not 10x; the interval's lower end may reach below the votes
        # (pandalm-7b: 0.99x), as an interval covering the true worth 95% of the time does here.
        assert 0.9 * ppi["n_human"] < lo < ppi["effective_human_votes"] < hi
        assert ppi["n_human"] < ppi["effective_human_votes"]
        assert hi < 3 * ppi["n_human"]
        assert 0 < ppi["lambda"] <= 1
        # The width curve: people + judge never wider than people alone, equal when people are on every pair.
        curve = ppi["width_curve"]
        assert all(p["people_and_judge"] <= p["people"] + 1e-9 for p in curve)
        assert curve[-1]["share"] == 1.0 and curve[-1]["people_and_judge"] == pytest.approx(curve[-1]["people"])
        assert [p["n_votes"] for p in curve] == sorted(p["n_votes"] for p in curve)
        # Ratings: people's own where people voted on every pair; the judge alone beside them.
        for row in ppi["ratings"]:
            assert row["rank_set"][0] <= row["rank_set"][1]
        assert any(abs(r["judge"] - r["people"]) > 10 for r in ppi["ratings"])
    assert doc["judges"]["gpt-3.5-turbo"]["ppi"]["n_dropped_votes"] == 75  # its 25 unparseable verdicts
    assert doc["judges"]["human"]["ppi"] is None
    assert "## What is this judge worth?" in md
    assert 'alt="interval width against human votes' in html


def _opening(md: str) -> str:
    """The opening section: the table at a glance and one block per judge, before any section's table."""
    return md.split("## In short")[1].split("\n## ")[0]


def test_report_opens_with_one_block_per_judge_before_any_table(with_people):
    doc, md, html = with_people
    answer = _opening(md)
    for judge in (*JUDGES, "panel"):
        assert f"**{judge}**" in answer
    assert answer.count("Agrees with people on") == 3
    assert answer.count("people agree with each other on") == 3
    assert answer.count("human votes alone") == 3
    assert answer.count("Strongest bias against people") == 3 and answer.count("**What to do:**") == 3
    # Agreement carries intervals, ties counted first with kappa, then without ties.
    assert re.search(r"Agrees with people on \d+% \\\[\d+, \d+\\\] of vote pairs, ties counted \(Cohen's kappa "
                     r"0\.\d+ \\\[0\.\d+, 0\.\d+\\\]\); on the \d+% of vote pairs where neither side tied, on \d+% "
                     r"\\\[\d+, \d+\\\]", answer)
    blocks = {b["judge"]: b for b in doc["summary"]}
    for judge in JUDGES:
        b = blocks[judge]
        assert b["has_people"] and b["worth"]["effective_human_votes"] > b["worth"]["n_human"]
        assert b["agreement"]["without_ties_ci"] and b["agreement"]["people_without_ties"] > 0.9
    assert html.index('id="answer"') < html.index("<table")


def test_without_people_the_block_says_so_and_sections_needing_people_are_left_out(without_people):
    doc, md, html = without_people
    answer = _opening(md)
    assert answer.count("No human votes in the data") == 3  # both judges and their panel
    assert "Position consistency: no pair was judged in both orders" in answer
    assert answer.count("Length preference: the longer response wins") == 3
    # A strongest bias the table shows in points is in the judge's block too, the number inside its interval.
    by_length = [b for b in doc["summary"] if b["strongest_bias"] and b["strongest_bias"]["kind"] == "length"]
    assert by_length  # PandaLM's judges lean toward the longer answer
    for block in by_length:
        size = block["strongest_bias"]["size"]
        line = next(x for x in block["lines"] if x.startswith("Strongest bias"))
        assert f"{abs(100 * size):.0f} points" in line and "(above)" not in line, line
    assert "Agrees with people" not in md and "human votes alone" not in md
    assert "What is this judge worth" not in md and 'id="worth"' not in html
    assert all(b["worth"] is None and not b["has_people"] for b in doc["summary"])
    assert all(j["ppi"] is None for j in doc["judges"].values())
