"""A battle of a model against itself in the votes: its outcome drops out of every rating's
likelihood, so the ratings leave it out and say so, and rate the other battles as they would
alone. One such row among hundreds made every fit refuse all the votes ("a model cannot
battle itself"), with no word of which row, and the report lost people's ratings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pairlab

STRENGTH = {"strong": 1.0, "middle": 0.3, "weak": -0.4, "weakest": -1.0}


def _votes(with_self: bool) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    names = list(STRENGTH)
    rows = []
    for n in range(300):
        a, b = rng.choice(len(names), size=2, replace=False)
        p = 1 / (1 + np.exp(-(STRENGTH[names[a]] - STRENGTH[names[b]])))
        rows.append(dict(pair_id=f"p{n}", prompt=f"question {n}", model_a=names[a], model_b=names[b],
                         response_a="answer " * (n % 5 + 1), response_b="- a list\n- " + "of words " * (n % 3),
                         winner="tie" if n % 10 == 3 else ("model_a" if rng.random() < p else "model_b"),
                         judge="human", judge_type="human"))
        if with_self and n % 60 == 7:  # the weakest model "wins" against itself, shown first
            rows.append({**rows[-1], "pair_id": f"self{n}", "model_a": "weakest", "model_b": "weakest",
                         "winner": "model_a"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("method", ["bt", "bt-davidson", "elo", "trueskill", "bt-style"])
def test_ratings_leave_out_a_models_battles_against_itself_and_say_which(method):
    alone = pairlab.rate(_votes(False), method=method)
    rated = pairlab.rate(_votes(True), method=method)
    pd.testing.assert_frame_equal(rated.to_frame(), alone.to_frame())
    assert rated.warnings[0] == ("left out 5 of 305 battles of a model against itself (self7, self67, self127, ...): "
                                 "they say nothing of any model's strength against another")
    assert not any("itself" in w for w in alone.warnings)


def test_prediction_powered_ratings_and_the_report_rate_the_other_battles():
    people = _votes(True)
    judge = people.assign(judge="judge-x", judge_type="llm")
    # (rate(..., ppi=JUDGE) as the command's --judge human --ppi JUDGE: it had kept people's votes
    # only, then found no verdicts of JUDGE "in the input")
    ppi = pairlab.rate(pd.concat([people, judge], ignore_index=True), ppi="judge-x")
    assert len(ppi.to_frame()) == 4 and any("10 of 610 battles of a model against itself" in w for w in ppi.warnings)
    # The report (from a DataFrame of records, as a notebook has them) keeps people's ratings.
    ratings = pairlab.bias_report(people, bootstrap=50, rating_bootstrap=20).to_dict()["judges"]["human"]["ratings"]
    assert [row["model"] for row in ratings["bt"]] == ["strong", "middle", "weak", "weakest"]
    assert any("5 of 305 battles of a model against itself" in w for w in ratings["warnings"])


def test_a_dataframe_the_report_cannot_read_is_named_not_a_key_error():
    """A notebook's DataFrame of records or of battles is read as the file would be: the report
    had raised KeyError: 'mode' on any table that read_votes had not made."""
    battles = pd.DataFrame({"model_a": ["A", "B", "A"] * 10, "model_b": ["B", "C", "C"] * 10,
                            "winner": ["model_a", "model_b", "tie"] * 10})
    report = pairlab.bias_report(battles, bootstrap=20, rating_bootstrap=10).to_dict()
    assert report["judges"]["human"]["n_records"] == 30
    bad = _votes(False)
    bad.loc[17, "winner"] = "banana"
    with pytest.raises(ValueError, match="^row 18 of the table: unknown winner"):
        pairlab.bias_report(bad)
    with pytest.raises(ValueError, match="needs the columns model_a, model_b and winner"):
        pairlab.judge_worth(pd.DataFrame({"a": [1]}), "judge-x")
