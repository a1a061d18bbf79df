"""Small hand-worked cases for the bias estimators' definitions."""

from __future__ import annotations

import pytest

from analysis.judging.agreement import agreement, human_baseline
from analysis.bias.position import debiased_verdicts, position_bias
from analysis.judgment_table import judgment_table
from analysis.stats import cluster_bootstrap, wilson_interval
from pairlab.records import Record, make_pair_id

X, Y = "text x", "text y (a little longer)"  # X sorts before Y


def vote(prompt, first, second, winner, judge, **kw):
    models = {X: "mx", Y: "my"}
    return Record(
        pair_id=make_pair_id(prompt, first, second), prompt=prompt,
        model_a=models.get(first, "m-" + first[-1]), model_b=models.get(second, "m-" + second[-1]),
        response_a=first, response_b=second, winner=winner, judge=judge, **kw,
    )


def test_wilson_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((8, 10), (0, 7), (50, 50), (431, 997)):
        assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)
    assert wilson_interval(0, 0) is None


def test_parse_errors_are_left_out_and_counted():
    records = [vote("p", X, Y, "model_a", "j"), vote("p", Y, X, "tie", "j", parse_error="no verdict", raw_output="??")]
    table, errors = judgment_table(records)
    assert len(table) == 1 and errors == {"j": 1}


def test_zheng_table2_split():
    records = [
        # p1: first-shown wins in both orders -> primacy.
        vote("p1", X, Y, "model_a", "j"), vote("p1", Y, X, "model_a", "j"),
        # p2: X wins in both orders -> consistent.
        vote("p2", X, Y, "model_a", "j"), vote("p2", Y, X, "model_b", "j"),
        # p3: second-shown wins in both orders -> recency.
        vote("p3", X, Y, "model_b", "j"), vote("p3", Y, X, "model_b", "j"),
        # p4: the first-shown side wins in one order, a tie in the other -> primacy (Shi et al.).
        vote("p4", X, Y, "model_a", "j"), vote("p4", Y, X, "tie", "j"),
        # p5: one order only -> not a swapped pair.
        vote("p5", X, Y, "model_a", "j"),
    ]
    table, _ = judgment_table(records)
    est = position_bias(table)
    assert (est.n_swapped_pairs, est.n_consistent, est.n_first_biased, est.n_second_biased, est.n_other_inconsistent) == (4, 1, 2, 1, 0)
    assert est.consistency == 0.25 and est.preference_fairness == pytest.approx((1 - 2) / 4)
    assert est.first_rate == pytest.approx(5 / 8)
    verdicts = debiased_verdicts(table).set_index("pair_id")["canon"]
    pid = {p: make_pair_id(p, X, Y) for p in ("p1", "p2", "p3", "p4", "p5")}
    assert [verdicts[pid[p]] for p in ("p1", "p2", "p3", "p4", "p5")] == [0, 1, 0, 0, 1]


def test_a_win_and_a_tie_count_by_the_position_that_won_as_shi_et_al_count_them():
    # The second-shown side wins in one order, a tie in the other -> recency.
    records = [vote("p", X, Y, "tie", "j"), vote("p", Y, X, "model_b", "j")]
    est = position_bias(judgment_table(records)[0])
    assert (est.n_first_biased, est.n_second_biased, est.n_other_inconsistent) == (0, 1, 0)
    assert est.preference_fairness == 1.0


def test_identical_texts_from_two_model_pairs_are_not_one_pair_swapped():
    """Same prompt and texts (one pair_id), but model pair (a, b) shown one way and (c, d)
    the other: not the same comparison in both orders."""
    first = Record(pair_id=make_pair_id("p", X, Y), prompt="p", model_a="a", model_b="b", response_a=X,
                   response_b=Y, winner="model_a", judge="j")
    second = Record(pair_id=make_pair_id("p", Y, X), prompt="p", model_a="c", model_b="d", response_a=Y,
                    response_b=X, winner="model_a", judge="j")
    assert first.pair_id == second.pair_id
    assert position_bias(judgment_table([first, second])[0]).n_swapped_pairs == 0


def test_fixed_display_order_triggers_the_warning_and_random_order_does_not():
    import numpy as np

    from analysis.bias.position import order_check

    rng = np.random.default_rng(0)
    models = ["m0", "m1", "m2", "m3"]
    records_fixed, records_random = [], []
    for k in range(120):
        i, j = sorted(rng.choice(4, 2, replace=False))
        texts = (f"answer {k} by {models[i]}", f"answer {k} by {models[j]}")
        winner = "model_a" if rng.random() < 0.5 else "model_b"
        # Fixed: the earlier-listed model is always shown first, as in the PandaLM test set.
        records_fixed.append(Record(pair_id=f"p{k}", prompt=f"q{k}", model_a=models[i], model_b=models[j],
                                    response_a=texts[0], response_b=texts[1], winner=winner, judge="human:1"))
        flip = rng.random() < 0.5
        order = (j, i) if flip else (i, j)
        shown = (texts[1], texts[0]) if flip else texts
        records_random.append(Record(pair_id=f"p{k}", prompt=f"q{k}", model_a=models[order[0]],
                                     model_b=models[order[1]], response_a=shown[0], response_b=shown[1],
                                     winner=winner, judge="human:1"))
    fixed = order_check(judgment_table(records_fixed)[0])
    assert fixed.randomised is False and fixed.minority_share == 0.0 and fixed.never_first == ("m3",)
    random_ = order_check(judgment_table(records_random)[0])
    assert random_.randomised is True and random_.minority_share > 0.3 and random_.never_first == ()
    assert position_bias(judgment_table(records_fixed)[0]).order.randomised is False


def test_consistency_never_mixes_two_voters():
    # Two people, each seeing one order and preferring the first-shown text: not an inconsistency.
    records = [vote("p", X, Y, "model_a", "human:1"), vote("p", Y, X, "model_a", "human:2")]
    table, _ = judgment_table(records)
    assert position_bias(table).n_swapped_pairs == 0


def test_fastchat_agreement_with_and_without_ties():
    judge = [
        vote("p1", X, Y, "model_a", "j"), vote("p1", Y, X, "model_b", "j"),  # X both times -> X
        vote("p2", X, Y, "model_a", "j"), vote("p2", Y, X, "model_a", "j"),  # inconsistent -> tie
    ]
    humans = [
        vote("p1", X, Y, "model_a", "human:1"), vote("p1", Y, X, "model_b", "human:2"), vote("p1", X, Y, "tie", "human:3"),
        vote("p2", X, Y, "model_a", "human:1"), vote("p2", X, Y, "model_b", "human:2"),
    ]
    jt, _ = judgment_table(judge)
    ht, _ = judgment_table(humans)
    est = agreement(jt, ht, "human", n_boot=50)
    # S1: p1 agrees with 2 of 3 votes, p2 (judge tie) with none of 2. S2 drops ties on either side.
    assert (est.with_ties, est.n) == (pytest.approx(2 / 5), 5)
    assert (est.without_ties, est.n_without_ties) == (1.0, 2)
    # Kappa from the 5 S1 pairs: judge (X, X, X, tie, tie), humans (X, X, tie, X, Y).
    p_o, p_e = 2 / 5, (3 / 5) * (3 / 5) + (2 / 5) * (1 / 5)
    assert est.cohen_kappa == pytest.approx((p_o - p_e) / (1 - p_e))


def test_human_baseline_pairs_only_different_voters():
    humans = [
        vote("p1", X, Y, "model_a", "human:1"), vote("p1", Y, X, "model_b", "human:1"),  # one voter twice
        vote("p1", X, Y, "model_b", "human:2"),
    ]
    table, _ = judgment_table(humans)
    est = human_baseline(table, n_boot=20)
    assert est.n == 2 and est.with_ties == 0.0


def test_cluster_bootstrap_needs_ten_clusters():
    assert cluster_bootstrap([[1.0, 2.0]] * 9, lambda t: t[:, 0] / t[:, 1]) is None
    ci = cluster_bootstrap([[1.0, 1.0], [0.0, 1.0]] * 20, lambda t: t[:, 0] / t[:, 1], n_boot=500)
    assert ci[0] < 0.5 < ci[1]


def test_length_model_reports_separation_instead_of_garbage():
    from analysis.bias.length import length_bias

    # The longer response always wins: the logistic fit separates perfectly.
    records = []
    for i in range(40):
        short, long = f"{i}", f"{i} " + "z" * (10 + i)
        records += [vote(f"p{i}", short, long, "model_b", "j"), vote(f"p{i}", long, short, "model_a", "j")]
    table, _ = judgment_table(records)
    est = length_bias(table, sd=10.0)
    assert est.longer_rate == 1.0 and est.longer_rate_ci[0] > 0.9
    assert est.coef is None and est.coef_ci is None and "not fitted" in est.note


def test_cluster_bootstrap_paths_agree():
    """Few distinct cluster rows take the multinomial shortcut, many take the gather path."""
    import numpy as np

    rng = np.random.default_rng(0)
    discrete = np.column_stack([rng.integers(0, 3, 4000), np.full(4000, 2)]).astype(float)
    jitter = discrete + rng.normal(0, 1e-6, discrete.shape)  # > 2000 distinct rows, same totals
    ratio = lambda t: t[:, 0] / t[:, 1]  # noqa: E731
    fast = cluster_bootstrap(discrete, ratio, n_boot=2000, seed=1)
    slow = cluster_bootstrap(jitter, ratio, n_boot=2000, seed=2)
    assert fast == pytest.approx(slow, abs=0.006)
    assert fast[0] < discrete[:, 0].sum() / discrete[:, 1].sum() < fast[1]


def test_calibrated_verdict_averages_prob_a_over_both_orders():
    from analysis.bias.position import calibrated_verdicts

    records = [
        # Always "A", but more sure when X is first: calibrated mean p(X) = (0.9 + 0.2) / 2 > 0.5.
        vote("p1", X, Y, "model_a", "j", prob_a=0.9), vote("p1", Y, X, "model_a", "j", prob_a=0.8),
        # The other way round: p(X) = (0.7 + 0.1) / 2 < 0.5.
        vote("p2", X, Y, "model_a", "j", prob_a=0.7), vote("p2", Y, X, "model_a", "j", prob_a=0.9),
        # No probabilities: the unanimity rule (inconsistent -> tie).
        vote("p3", X, Y, "model_a", "j"), vote("p3", Y, X, "model_a", "j"),
    ]
    table, _ = judgment_table(records)
    got = calibrated_verdicts(table).set_index("pair_id")["canon"]
    assert [got[make_pair_id(p, X, Y)] for p in ("p1", "p2", "p3")] == [1, -1, 0]
