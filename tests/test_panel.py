"""The judge panel: majority of every LLM judge's verdicts per pair (Verga et al. 2024)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from analysis.judging.panel import panel_records
from analysis.report import build_report, report_json
from pairlab.records import Record, is_human, make_pair_id


def _person(r):
    return is_human(r.judge)


def _rec(i, first_wins, judge, swapped=False, prob=None, tie=False):
    texts = (f"answer one {i}", f"answer two {i}")
    a, b = (texts[1], texts[0]) if swapped else texts
    ma, mb = ("m2", "m1") if swapped else ("m1", "m2")
    winner = "tie" if tie else ("model_a" if first_wins else "model_b")
    return Record(pair_id=make_pair_id(f"q{i}", *texts), prompt=f"q{i}", model_a=ma, model_b=mb, response_a=a,
                  response_b=b, winner=winner, judge=judge, prob_a=prob)


def test_majority_ties_orientation_and_probabilities():
    recs = [
        # pair 0: j1 and j2 pick m1 (j2 in the swapped order), j3 picks m2 -> m1
        _rec(0, True, "j1"), _rec(0, False, "j2", swapped=True), _rec(0, False, "j3"),
        # pair 1: one vote each for m1, m2 and a tie -> tie
        _rec(1, True, "j1"), _rec(1, False, "j2"), _rec(1, True, "j3", tie=True),
        # pair 2: only one judge -> no panel verdict
        _rec(2, True, "j1"),
        # pair 3: probabilities everywhere -> mean in the lead order (0.8, 1 - 0.3, 0.4)
        _rec(3, True, "j1", prob=0.8), _rec(3, True, "j2", swapped=True, prob=0.3), _rec(3, False, "j3", prob=0.4),
        _rec(0, True, "human:x"),
    ]
    panel = {r.prompt: r for r in panel_records(recs, _person)}
    assert set(panel) == {"q0", "q1", "q3"}
    assert panel["q0"].winner == "model_a" and panel["q0"].model_a == "m1"
    assert panel["q0"].meta == {"panel_members": ["j1", "j2", "j3"], "n_verdicts": 3}
    assert panel["q1"].winner == "tie"
    assert panel["q3"].prob_a == pytest.approx((0.8 + 0.7 + 0.4) / 3)
    assert panel["q0"].prob_a is None  # not every verdict has a probability
    assert panel_records([r for r in recs if r.judge in ("j1", "human:x")], _person) == []


def _plain_panel(records):
    """The definition with a Counter per pair (the slow, obvious twin)."""
    by_pair = {}
    for r in records:
        if not _person(r):
            by_pair.setdefault(r.pair_id, []).append(r)
    out = {}
    for pid, rs in by_pair.items():
        if len({r.judge for r in rs}) < 2:
            continue
        lead = rs[0]
        member = {}
        for r in rs:  # each member's verdicts on the pair, in the lead order
            member.setdefault(r.judge, set()).add(
                {"model_a": 1, "model_b": -1}.get(r.winner, 0) * (1 if r.response_a == lead.response_a else -1))
        votes = Counter(next(iter(v)) if len(v) == 1 else 0 for v in member.values())
        (top, k), *rest = votes.most_common()
        out[pid] = 0 if rest and rest[0][1] == k else top
    return out


def test_vectorised_panel_equals_the_plain_definition():
    rng = np.random.default_rng(0)
    recs = []
    for i in range(400):
        for j in rng.choice(["j1", "j2", "j3", "j4"], size=rng.integers(1, 5), replace=False):
            for swapped in (False, True)[: rng.integers(1, 3)]:
                recs.append(_rec(i, rng.random() < 0.6, str(j), swapped=swapped, tie=rng.random() < 0.15))
    got = {r.pair_id: {"model_a": 1, "model_b": -1, "tie": 0}[r.winner] for r in panel_records(recs, _person)}
    assert got == _plain_panel(recs)


def test_a_panel_of_independent_judges_agrees_with_people_more_than_each_member():
    """Three judges, each right 70% of the time independently: the majority is right 78.4%."""
    rng = np.random.default_rng(1)
    recs = []
    for i in range(3000):
        truth = rng.random() < 0.5
        recs.append(_rec(i, truth, "human:h"))
        for j in ("j1", "j2", "j3"):
            recs.append(_rec(i, truth if rng.random() < 0.7 else not truth, j))
    data = report_json(build_report(recs, n_boot=200, rating_bootstrap=20))
    panel = data["judges"]["panel"]["agreement"]
    assert panel["details"]["without_ties_ci"][0] <= 0.784 <= panel["details"]["without_ties_ci"][1]
    for j in ("j1", "j2", "j3"):
        assert data["judges"][j]["agreement"]["without_ties"] < panel["without_ties"] - 0.04
    assert data["judges"]["panel"]["panel_members"] == ["j1", "j2", "j3"]
    assert data["judges"]["panel"]["n_records"] == 3000


def test_the_panel_can_be_left_out():
    recs = [_rec(0, True, "j1"), _rec(0, False, "j2"), _rec(0, True, "human:h")]
    assert "panel" not in report_json(build_report(recs, panel=False, n_boot=20, rating_bootstrap=0))["judges"]


def test_each_member_votes_once_per_pair_whatever_orders_it_saw():
    """j1 judged both orders (m1 both times), j2 and j3 one order each (m2): two members to one for m2.
    Counting every record would make it two records to two, a tie."""
    recs = [_rec(0, True, "j1"), _rec(0, False, "j1", swapped=True), _rec(0, False, "j2"), _rec(0, False, "j3"),
            # j1 changes its verdict with the order: its vote is a tie, j2's m1 then stands alone against j3's tie.
            _rec(1, True, "j1"), _rec(1, True, "j1", swapped=True), _rec(1, True, "j2"), _rec(1, True, "j3", tie=True)]
    panel = {r.prompt: r for r in panel_records(recs, _person)}
    assert panel["q0"].winner == "model_b" and panel["q0"].model_b == "m2"
    assert panel["q1"].winner == "tie"  # one vote each: tie (j1), m1 (j2), tie (j3) -> the two ties win


def test_the_report_sets_the_panel_beside_its_best_member_and_people():
    rng = np.random.default_rng(3)
    recs = []
    for i in range(600):
        truth = rng.random() < 0.5
        for voter in ("human:a", "human:b"):
            recs.append(_rec(i, truth if rng.random() < 0.9 else not truth, voter, tie=rng.random() < 0.1))
        for j, right in (("j1", 0.85), ("j2", 0.6), ("j3", 0.6)):
            recs.append(_rec(i, truth if rng.random() < right else not truth, j))
    data = report_json(build_report(recs, n_boot=200, rating_bootstrap=10))["judges"]
    summary = data["panel"]["panel"]
    assert summary["best_member"] == "j1"
    lo, hi = summary["s1_difference_ci"]
    assert lo <= summary["s1_difference"] <= hi and hi < 0  # two weak members outvote the good one
    assert summary["reference_tie_rate"] == pytest.approx(0.1, abs=0.03) and summary["tie_rate"] == 0.0
    assert [m for m, _ in summary["members"]] == ["j1", "j2", "j3"]
    assert data["panel"]["position"]["first_rate"] is None and "never saw" in data["panel"]["position"]["note"]
