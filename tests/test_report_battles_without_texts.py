"""The report of a table of battles without texts (model_a, model_b, winner), a new user's first
input: nothing is said of lengths or style that the records cannot hold, and the position term
with model strengths held fixed is still read.

It read "log-odds per SD (1 characters)", its position term "not fitted: singular information"
(a column of zero length differences in the model), and a style-controlled column of numbers
that held no style fixed (BT's ratings under another name)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from analysis.bias.length import length_bias
from analysis.ratings.votes import rate_battles
from analysis.report.cli import main

STRENGTH = {"a": 1.0, "b": 0.4, "c": -0.2, "d": -0.8}
LEAN = 0.4  # log-odds toward the first-shown model, between equally strong ones


def _battles(path: Path, n: int = 1200, seed: int = 3) -> Path:
    """A planted position lean, confounded: the stronger model is shown first in 80% of battles,
    so the raw first-shown rate carries strength as well as the lean."""
    rng = np.random.default_rng(seed)
    names = list(STRENGTH)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["model_a", "model_b", "winner"])
        for _ in range(n):
            x, y = sorted(rng.choice(len(names), size=2, replace=False))  # x the stronger
            first, second = (names[x], names[y]) if rng.random() < 0.8 else (names[y], names[x])
            p = expit(STRENGTH[first] - STRENGTH[second] + LEAN)
            out.writerow([first, second, "model_a" if rng.random() < p else "model_b"])
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("battles")
    votes = _battles(tmp / "battles.csv")
    assert main(["--votes", str(votes), "--out", str(tmp / "out"), "--quiet", "--bootstrap", "200",
                 "--rating-bootstrap", "50"]) == 0
    return {"json": json.loads((tmp / "out" / "report.json").read_text()),
            "md": (tmp / "out" / "report.md").read_text(), "html": (tmp / "out" / "report.html").read_text(),
            "votes": votes}


def test_the_position_term_is_read_without_lengths_and_recovers_the_planted_lean(report):
    position = report["json"]["judges"]["human"]["position"]
    length = report["json"]["judges"]["human"]["length"]
    details = length["details"]
    held = details["first_rate_controlled"]
    lo, hi = details["first_rate_controlled_ci"]
    assert lo <= expit(LEAN) <= hi and lo > 0.5, (held, lo, hi)
    # The confounder: the raw rate carries the stronger model's wins too, and reads well above the lean.
    assert position["first_rate"] > hi
    assert length["coef"] is None and "no response texts" in details["note"]


def test_nothing_is_said_of_lengths_or_style_the_records_do_not_hold(report):
    md, html = report["md"], report["html"]
    assert "SD (" not in md and "SD (" not in html
    assert "no response texts" in md and "singular" not in md
    assert 'alt="length bias curves"' not in html
    ratings = report["json"]["judges"]["human"]["ratings"]
    assert ratings["style_controlled"] is None and ratings["bt"]
    assert "style-controlled BT ratings not fitted: bt-style has no style to hold fixed" in md
    assert "SC intervals" not in md


def test_bt_style_refuses_battles_without_style_and_says_why(report):
    from analysis.importers.columnar import read_table
    from analysis.frames import battle_frame

    table, _ = read_table([report["votes"]])
    with pytest.raises(ValueError, match="no style to hold fixed.*carry no response texts"):
        rate_battles(battle_frame(table), "bt-style")


def test_a_rater_whose_pairs_differ_in_length_keeps_its_length_coefficient():
    """The length column is left out only where no decisive record's responses differ in length."""
    rng = np.random.default_rng(0)
    n = 400
    import pandas as pd

    rows = pd.DataFrame({
        "pair_id": [f"p{k}" for k in range(n)], "model_a": rng.choice(["x", "y", "z"], n),
        "len_a": rng.integers(100, 900, n), "len_b": rng.integers(100, 900, n), "decisive": True,
    })
    rows["model_b"] = np.where(rows["model_a"] == "x", "y", "x")
    rows["first_wins"] = (rng.random(n) < expit(0.002 * (rows["len_a"] - rows["len_b"]))).astype(int)
    found = length_bias(rows, sd=float(np.std(rows["len_a"] - rows["len_b"])), n_boot=50)
    assert found.coef is not None and found.coef > 0 and found.note is None
