"""Debiasing variants: which reading of a judge's verdicts comes closest to people.

Planted: a judge with a strong first-position lean that still leans the right way in its
probabilities. Averaging its probabilities over both orders (balanced position
calibration) agrees with people best once ties count (S1); combining both orders turns
its flip-flops into ties, which S1 counts against it and S2 leaves out.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.judging.agreement import agreement
from analysis.bias.position import debiased_rows
from analysis.report import build_report, report_json
from analysis.judgment_table import judgment_table
from analysis.judging.variants import VARIANTS
from pairlab.records import Record, make_pair_id

MODELS = {"m1": 0.8, "m2": 0.3, "m3": 0.0, "m4": -0.5}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def simulate(n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    names = list(MODELS)
    out = []
    for i in range(n):
        m1, m2 = rng.choice(names, 2, replace=False)
        # Answers of several lengths: style control has a style to hold fixed.
        texts = {m1: f"{i} answer of {m1}" + " at length" * (i % 3), m2: f"{i} reply from {m2}" + " in brief" * (i % 2)}
        pid = make_pair_id(str(i), texts[m1], texts[m2])
        truth = MODELS[m1] - MODELS[m2] + rng.normal(0, 0.8)  # this pair's quality gap

        def rec(a, b, winner, judge, prob=None):
            return Record(pair_id=pid, prompt=str(i), model_a=a, model_b=b, response_a=texts[a], response_b=texts[b],
                          winner=winner, judge=judge, prob_a=prob)

        sign = 1 if truth > 0 else -1
        out.append(rec(m1, m2, "model_a" if rng.random() < _sigmoid(3 * truth) else "model_b", "human:h"))
        for a, b, s in ((m1, m2, sign), (m2, m1, -sign)):
            p = float(_sigmoid(1.5 * s * min(abs(truth), 1.5) + 1.2))  # +1.2: a first-position lean
            out.append(rec(a, b, "model_a" if p > 0.5 else "model_b", "leaning", prob=p))
    return out


@pytest.fixture(scope="module")
def data():
    return report_json(build_report(simulate(), n_boot=200, rating_bootstrap=50, panel=False))


def test_calibration_beats_both_orders_beats_records_as_given(data):
    v = data["judges"]["leaning"]["variants"]
    assert set(v) == set(VARIANTS)
    s1 = {name: v[name]["with_ties"] for name in ("as_given", "both_orders", "calibrated")}
    s2 = {name: v[name]["without_ties"] for name in ("as_given", "both_orders", "calibrated")}
    # With ties kept (S1), a flip-flop turned tie counts against both orders; calibration keeps a verdict.
    assert s1["both_orders"] < s1["as_given"] < s1["calibrated"], s1
    # Without ties (S2) both orders keeps only the pairs it is sure of, and calibration beats the records.
    assert s2["as_given"] < s2["calibrated"] < s2["both_orders"], s2
    best = data["judges"]["leaning"]["best_variant"]
    assert (best["with_ties"], best["without_ties"]) == ("calibrated", "both_orders")
    assert v["calibrated"]["spearman"] == pytest.approx(1.0)
    lc = v["style_controlled"]
    assert lc["with_ties"] is None and "not single verdicts" in lc["note"] and lc["spearman"] is not None


def test_variant_numbers_equal_their_direct_computation(data):
    """Each variant's agreement is agreement() on the matching rows, computed here directly."""
    table, _ = judgment_table(simulate())
    judge, human = table[table["rater"] == "leaning"], table[table["rater"] == "human"]
    v = data["judges"]["leaning"]["variants"]
    as_given = agreement(judge, human, "human", n_boot=10, each_order=True)
    calibrated = agreement(debiased_rows(judge, calibrate=True), human, "human", n_boot=10)
    both = agreement(judge, human, "human", n_boot=10)
    assert v["as_given"]["with_ties"] == pytest.approx(as_given.with_ties)
    assert v["calibrated"]["without_ties"] == pytest.approx(calibrated.without_ties)
    assert v["both_orders"]["with_ties"] == pytest.approx(data["judges"]["leaning"]["agreement"]["with_ties"])
    assert v["both_orders"]["without_ties"] == pytest.approx(both.without_ties)
    # As given, by hand: one verdict per pair and order, scored by the share of people's votes it matches.
    votes = human.groupby("pair_id")["canon"].apply(list).to_dict()
    scores = [np.mean([c == h for h in votes[p]]) for p, c in zip(judge["pair_id"], judge["canon"]) if p in votes]
    assert v["as_given"]["with_ties"] == pytest.approx(np.mean(scores))
    assert as_given.with_ties == pytest.approx(np.mean(scores))


def test_without_probabilities_calibration_is_null_with_a_reason():
    recs = [r for r in simulate(300) if r.judge == "human:h"]
    recs += [Record(**{**r.to_dict(), "prob_a": None, "version": 1}) for r in simulate(300) if r.judge == "leaning"]
    got = report_json(build_report(recs, n_boot=50, rating_bootstrap=20, panel=False))["judges"]["leaning"]["variants"]
    assert got["calibrated"]["with_ties"] is None and got["calibrated"]["note"] == "the records carry no prob_a"


def test_the_judges_leaderboard_and_its_as_given_variant_share_their_intervals():
    """The as-given variant's leaderboard is the judge's own: the variants table and the judge's
    leaderboard print the same intervals, from one set of rounds, and with graded verdicts both
    resample the verdicts as the ratings weighted them (a strong one three times)."""
    records = [dataclasses.replace(r, strength=2 if r.prob_a is not None and abs(r.prob_a - 0.5) > 0.3 else 1)
               if r.judge == "leaning" else r for r in simulate(600, seed=1)]
    judge = report_json(build_report(records, n_boot=100, rating_bootstrap=20, panel=False))["judges"]["leaning"]
    board, as_given = judge["leaderboard"], judge["variants"]["as_given"]
    assert judge["ratings"]["weighting"]  # the graded verdicts were weighted in its ratings
    assert board["intervals"]["brier"] is not None
    shown = [m for m in board["intervals"] if f"{m}_interval" in as_given]  # the table prints four of the five
    assert {"spearman", "brier"} <= set(shown)
    for metric in shown:
        interval = board["intervals"][metric]
        assert as_given[f"{metric}_interval"] == (None if interval is None else list(interval)), metric
