"""Agreement tables that show their denominators (issue 16, item 3).

* Cohen's kappa orients each pair by model name: two independent raters who both favour
  one model agree by chance only, kappa about 0 (oriented by the texts' sort order they
  looked like they agreed beyond chance, kappa about 0.36).
* S2 keeps its own counts (vote pairs and items without a tie), beside S1's.
* The human-human baseline and every judge are also compared on the same items.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.judging.agreement import agreement, baseline_items
from analysis.judgment_table import judgment_table
from pairlab.records import Record


def _record(i, judge, a_first: bool, a_wins: bool | None, rng_texts):
    texts = rng_texts[i]
    first, second = ("alpha", "beta") if a_first else ("beta", "alpha")
    winner = "tie" if a_wins is None else ("model_a" if (first == "alpha") == a_wins else "model_b")
    return Record(pair_id=f"p{i}", prompt=f"q{i}", model_a=first, model_b=second, response_a=texts[first],
                  response_b=texts[second], winner=winner, judge=judge)


def test_kappa_orients_pairs_by_model_name():
    rng = np.random.default_rng(0)
    n = 4000
    # Which model's text sorts first is random, so by text the "alpha" lean is hidden.
    texts = [{"alpha": f"{'a' if rng.random() < 0.5 else 'z'} alpha {i}", "beta": f"m beta {i}"} for i in range(n)]
    records = []
    for i in range(n):
        records.append(_record(i, "human:h", rng.random() < 0.5, bool(rng.random() < 0.8), texts))
        records.append(_record(i, "judge", rng.random() < 0.5, bool(rng.random() < 0.8), texts))
    table, _ = judgment_table(records)
    got = agreement(table[table["rater"] == "judge"], table[table["rater"] == "human"], "human", n_boot=50)
    assert got.with_ties == pytest.approx(0.68, abs=0.02)  # 0.8 * 0.8 + 0.2 * 0.2
    assert abs(got.cohen_kappa) < 0.05, got.cohen_kappa


def test_without_ties_shows_its_own_denominator():
    rng = np.random.default_rng(1)
    texts = [{"alpha": f"a{i}", "beta": f"b{i}"} for i in range(300)]
    records = []
    for i in range(300):
        records.append(_record(i, "human:h", True, bool(rng.random() < 0.7), texts))
        # The judge ties on 5 of every 6 pairs.
        records.append(_record(i, "judge", True, None if i % 6 else bool(rng.random() < 0.7), texts))
    table, _ = judgment_table(records)
    got = agreement(table[table["rater"] == "judge"], table[table["rater"] == "human"], "human", n_boot=50)
    assert (got.n, got.n_items) == (300, 300)
    assert (got.n_without_ties, got.n_items_without_ties) == (50, 50)


def test_the_baseline_and_the_judges_are_also_compared_on_the_same_items():
    from analysis.report import build_report, report_json

    rng = np.random.default_rng(2)
    texts = [{"alpha": f"a{i}", "beta": f"b{i}"} for i in range(200)]
    records = []
    for i in range(200):
        voters = ("human:h1", "human:h2") if i < 60 else ("human:h1",)
        for v in voters:
            records.append(_record(i, v, bool(rng.random() < 0.5), bool(rng.random() < 0.7), texts))
        records.append(_record(i, "judge", bool(rng.random() < 0.5), bool(rng.random() < 0.7), texts))
    table, _ = judgment_table(records)
    assert len(baseline_items(table[table["rater"] == "human"])) == 60
    judges = report_json(build_report(records, n_boot=50, rating_bootstrap=10, panel=False))["judges"]
    human, judge = judges["human"]["agreement"], judges["judge"]["agreement"]
    assert judge["n_items"] == 200 and judge["same_pairs"]["n_items"] == 60
    assert human["same_pairs"]["n_items"] == 60 and human["n_items"] == 60
    assert judge["n_without_ties"] == judge["n"] and "model name" in judge["kappa_categories"]
