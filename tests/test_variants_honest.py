"""Debiasing variants scored honestly (issue 16, item 4).

* The style-controlled variant is scored against people's style-controlled ratings.
* "As given" counts one verdict per pair and order, each against the share of people's votes
  it matches: a pair many people voted on weighs no more than another.
* A variant is marked best only when a paired bootstrap says it beats the others.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.judging.meta_metrics import leaderboard_agreement
from analysis.report import build_report, report_json
from pairlab.records import Record, make_pair_id

MODELS = {"m1": 0.9, "m2": 0.4, "m3": 0.0, "m4": -0.6}


def _rec(i, a, b, a_wins, judge, texts):
    return Record(pair_id=make_pair_id(str(i), texts[a], texts[b]), prompt=str(i), model_a=a, model_b=b,
                  response_a=texts[a], response_b=texts[b], winner="model_a" if a_wins else "model_b", judge=judge)


def _table(rows):
    import pandas as pd

    return pd.DataFrame(rows)


def test_style_control_is_scored_against_peoples_style_controlled_ratings():
    """People and judge both love long answers; strengths differ from lengths. The judge's
    style-controlled leaderboard matches people's style-controlled one, not their raw one."""
    rng = np.random.default_rng(0)
    names = list(MODELS)
    length = {"m1": 1, "m2": 6, "m3": 3, "m4": 8}  # paragraphs; unrelated to strength
    recs = []
    for i in range(1500):
        a, b = rng.choice(names, 2, replace=False)
        texts = {m: f"{i} {m}\n\n" + "\n\n".join(["- words words words"] * (length[m] + int(rng.integers(0, 3)))) for m in (a, b)}
        gap = MODELS[a] - MODELS[b] + 0.25 * (texts[a].count("\n") - texts[b].count("\n"))
        recs.append(_rec(i, a, b, rng.random() < 1 / (1 + np.exp(-gap)), "human:h", texts))
        for x, y in ((a, b), (b, a)):
            g = MODELS[x] - MODELS[y] + 0.25 * (texts[x].count("\n") - texts[y].count("\n"))
            recs.append(_rec(i, x, y, rng.random() < 1 / (1 + np.exp(-g)), "judge", texts))
    data = report_json(build_report(recs, n_boot=50, rating_bootstrap=20, panel=False))["judges"]
    styled = data["judge"]["variants"]["style_controlled"]
    want = leaderboard_agreement(_table(data["judge"]["ratings"]["style_controlled"]),
                                 _table(data["human"]["ratings"]["style_controlled"]))
    assert styled["brier"] == pytest.approx(want.brier) and styled["spearman"] == pytest.approx(want.spearman)
    assert "style-controlled ratings" in styled["note"]


def _uneven_people(judge_orders) -> list:
    """Pairs 0-99: nine people, unanimous for m1, and the judge agrees; pairs 100-199: one person,
    and the judge disagrees. The judge's records of pair ``i`` are in the orders ``judge_orders(i)``."""
    recs = []
    for i in range(200):
        texts = {"m1": f"{i} first", "m2": f"{i} second"}
        many = i < 100
        for v in range(9 if many else 1):
            recs.append(_rec(i, "m1", "m2", True, f"human:{v}", texts))
        for a, b in judge_orders(i):
            recs.append(_rec(i, a, b, (a == "m1") == many, "judge", texts))
    return recs


def test_as_given_counts_each_pair_and_order_once():
    """Pairs 0-99: nine people, unanimous, and the judge agrees in both orders; pairs 100-199: one
    person, and the judge disagrees in both orders. Each pair and order once: 0.5 (every record
    against every vote made it 18 agreeing of 20 vote pairs, 0.9)."""
    recs = _uneven_people(lambda i: (("m1", "m2"), ("m2", "m1")))
    got = report_json(build_report(recs, n_boot=50, rating_bootstrap=10, panel=False))["judges"]["judge"]["variants"]
    assert got["as_given"]["with_ties"] == pytest.approx(0.5)


def test_no_variant_is_marked_best_when_none_clearly_is():
    """A judge without a position lean: its records as given and its both-orders verdicts are
    the same verdicts; no bootstrap can tell them apart, so nothing is marked."""
    rng = np.random.default_rng(1)
    names = list(MODELS)
    recs = []
    for i in range(800):
        a, b = rng.choice(names, 2, replace=False)
        texts = {a: f"{i} {a} x", b: f"{i} {b} y"}
        p = 1 / (1 + np.exp(-(MODELS[a] - MODELS[b])))
        recs.append(_rec(i, a, b, rng.random() < p, "human:h", texts))
        a_wins = rng.random() < p
        recs += [_rec(i, a, b, a_wins, "judge", texts), _rec(i, b, a, not a_wins, "judge", texts)]
    data = report_json(build_report(recs, n_boot=200, rating_bootstrap=20, panel=False))["judges"]["judge"]
    assert all(v is None for v in data["best_variant"].values()), data["best_variant"]
    assert "paired bootstrap" in data["best_variant_rule"]


def test_one_order_records_as_given_score_as_the_agreement_table():
    """Issue 30, item 11: every pair judged in one order only, people's votes uneven over pairs
    (nine on pairs 0-99, where the judge agrees; one on pairs 100-199, where it does not). The
    records as given are then the both-orders verdicts: each pair once made as given 0.5 beside the
    agreement table's 0.9, and the bootstrap marked both orders best over the same verdicts."""
    recs = _uneven_people(lambda i: (("m1", "m2") if i % 2 else ("m2", "m1"),))
    data = report_json(build_report(recs, n_boot=200, rating_bootstrap=10, panel=False))["judges"]["judge"]
    variants, table = data["variants"], data["agreement"]
    assert table["with_ties"] == pytest.approx(0.9)
    for name in ("as_given", "both_orders"):
        assert variants[name]["with_ties"] == pytest.approx(table["with_ties"]), name
        assert variants[name]["without_ties"] == pytest.approx(table["without_ties"]), name
    assert data["best_variant"]["with_ties"] is None, data["best_variant"]
