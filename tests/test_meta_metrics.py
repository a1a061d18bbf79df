"""Arena-Hard-Auto's leaderboard meta-metrics: planted leaderboards and a plain-loop twin."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from analysis.judging.meta_metrics import leaderboard_agreement
from analysis.ratings import rate

STRENGTH = {"m1": 1.2, "m2": 0.8, "m3": 0.4, "m4": 0.0, "m5": -0.4, "m6": -0.8}


def battles(strength: dict[str, float], n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = list(strength)
    a = rng.integers(0, len(names), n)
    b = (a + rng.integers(1, len(names), n)) % len(names)
    s = np.array([strength[m] for m in names])
    first = rng.random(n) < 1 / (1 + np.exp(-(s[a] - s[b])))
    return pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b],
                         "winner": np.where(first, "model_a", "model_b")})


def table(strength, n, seed):
    return rate(battles(strength, n, seed), "bt", bootstrap=100, seed=seed).table


@pytest.fixture(scope="module")
def reference():
    return table(STRENGTH, 20_000, seed=1)


def test_a_judge_equal_to_the_reference_up_to_noise_scores_near_the_top(reference):
    got = leaderboard_agreement(table(STRENGTH, 20_000, seed=2), reference)
    assert got.n_models == 6 and got.n_pairs == 15
    assert got.spearman == pytest.approx(1.0) and got.kendall == pytest.approx(1.0)
    assert got.separability > 0.9 and got.agreement_ci > 0.9
    assert got.brier < 0.03


def test_a_judge_that_swaps_two_well_separated_models_is_penalised(reference):
    swapped = dict(STRENGTH, m1=STRENGTH["m4"], m4=STRENGTH["m1"])
    honest = leaderboard_agreement(table(STRENGTH, 20_000, seed=2), reference)
    wrong = leaderboard_agreement(table(swapped, 20_000, seed=2), reference)
    assert wrong.agreement_ci < honest.agreement_ci - 0.3
    assert wrong.brier > honest.brier + 0.2
    assert wrong.spearman < honest.spearman


def test_fewer_votes_lower_separability(reference):
    many = leaderboard_agreement(table(STRENGTH, 20_000, seed=3), reference)
    few = leaderboard_agreement(table(STRENGTH, 300, seed=3), reference)
    assert few.separability < many.separability - 0.3
    # Abstaining (overlapping intervals) costs half a point, never a whole one.
    assert 0.5 <= few.agreement_ci < many.agreement_ci


def _twin(judge: pd.DataFrame, ref: pd.DataFrame) -> dict:
    """The definitions in plain Python, one model pair at a time."""
    j = {r.model: (r.rating, r.lower, r.upper) for r in judge.itertuples()}
    r = {x.model: (x.rating, x.lower, x.upper) for x in ref.itertuples()}
    models = sorted(set(j) & set(r))

    def overlap(x, y):
        return min(x[2], y[2]) - max(x[1], y[1]) > 0

    sep, agree, brier = [], [], []
    for a, b in itertools.combinations(models, 2):
        sep.append(0.0 if overlap(j[a], j[b]) else 1.0)
        if not overlap(r[a], r[b]):
            if overlap(j[a], j[b]):
                agree.append(0.5)
            else:
                agree.append(1.0 if (j[a][0] < j[b][0]) == (r[a][0] < r[b][0]) else 0.0)
        var_a = ((j[a][2] - j[a][1]) / (2 * 1.959963984540054)) ** 2
        var_b = ((j[b][2] - j[b][1]) / (2 * 1.959963984540054)) ** 2
        z = (0 - (j[a][0] - j[b][0])) / math.sqrt(var_a + var_b)
        p = 0.5 * (1 + math.erf(z / math.sqrt(2)))
        brier.append((p - (1.0 if r[a][0] < r[b][0] else 0.0)) ** 2)
    return {"separability": sum(sep) / len(sep), "agreement_ci": sum(agree) / len(agree) if agree else None,
            "brier": sum(brier) / len(brier)}


def test_matches_the_plain_loop_definitions():
    ref = table(STRENGTH, 3000, seed=4)
    judge = table(dict(STRENGTH, m2=0.3), 1500, seed=5)
    got = leaderboard_agreement(judge, ref)
    want = _twin(judge, ref)
    assert got.separability == pytest.approx(want["separability"], abs=1e-12)
    assert got.agreement_ci == pytest.approx(want["agreement_ci"], abs=1e-12)
    assert got.brier == pytest.approx(want["brier"], abs=1e-12)


def test_what_cannot_be_computed_is_null_with_a_reason(reference):
    # Fewer than four models: no meta-metric at all (issue 16), rather than a separability of one pair.
    three = reference[reference["model"].isin(["m1", "m2", "m3"])]
    got = leaderboard_agreement(three, three)
    assert got.n_models == 3 and got.spearman is None and got.separability is None and "fewer than 4" in got.note
    one = leaderboard_agreement(reference.iloc[:1], reference)
    assert one.separability is None and one.brier is None and "fewer than 4" in one.note
    assert leaderboard_agreement(None, reference).note.startswith("no rating table")
    wide = reference.assign(lower=reference["rating"] - 1e4, upper=reference["rating"] + 1e4)
    flat = leaderboard_agreement(reference, wide)
    assert flat.agreement_ci is None and "overlap for every model pair" in flat.note and flat.n_separated_reference == 0


@pytest.mark.parametrize("n_models, says", [(5, True), (8, False)])
def test_fewer_than_eight_models_are_said_not_to_rank_judges(n_models, says):
    ratings = np.linspace(900, 1100, n_models)
    table = pd.DataFrame({"model": [f"m{k}" for k in range(n_models)], "rating": ratings,
                          "lower": ratings - 30, "upper": ratings + 30})
    note = leaderboard_agreement(table, table).note or ""
    assert ("too few models to rank judges" in note) is says


def test_reference_ceiling_with_eight_models_and_none_below():
    """The reference against itself on halves of its prompts: a noisy reference's ceiling is
    below 1, a sharp one's near 1; below eight models there is none."""
    from analysis.judging.meta_metrics import reference_ceiling

    def votes(n_models, spread, seed=0):
        rng = np.random.default_rng(seed)
        strength = np.linspace(-spread, spread, n_models)
        i, j = np.triu_indices(n_models, 1)
        prompt = np.repeat(np.arange(60), len(i))
        a, b = np.tile(i, 60), np.tile(j, 60)
        won = rng.random(len(a)) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
        return pd.DataFrame({"model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b],
                             "winner": np.where(won, "model_a", "model_b"), "prompt": prompt,
                             "pair_id": np.arange(len(a))})

    sharp, close = reference_ceiling(votes(8, 2.0)), reference_ceiling(votes(8, 0.1))
    assert sharp["spearman"] > 0.95 and close["spearman"] < sharp["spearman"]
    assert reference_ceiling(votes(6, 2.0)) is None


def test_the_ceiling_clusters_its_halves_as_asked_and_the_report_asks_its_own():
    """A taste shared by a prompt's pairs (each prompt favours one model): clustered by prompt,
    the halves' intervals are wider than by pair, so fewer model pairs separate; left to choose,
    each half picks the prompt (a prompt carries several pairs). The report's ceiling is the one
    clustered as the report is, whichever it is told."""
    from analysis.judging.meta_metrics import reference_ceiling
    from analysis.judgment_table import judgment_table
    from analysis.report import build_report
    from pairlab.records import Record
    from report_sample import iter_synthetic_records

    rng = np.random.default_rng(5)
    n_models, n_prompts = 8, 80
    strength = np.linspace(-1.0, 1.0, n_models)
    i, j = np.triu_indices(n_models, 1)
    prompt = np.repeat(np.arange(n_prompts), len(i))
    a, b = np.tile(i, n_prompts), np.tile(j, n_prompts)
    favourite = rng.integers(0, n_models, n_prompts)[prompt]
    taste = 3.0 * ((a == favourite).astype(float) - (b == favourite))
    won = rng.random(len(a)) < 1 / (1 + np.exp(-(strength[a] - strength[b] + taste)))
    rows = pd.DataFrame({"model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b],
                         "winner": np.where(won, "model_a", "model_b"), "prompt": prompt,
                         "pair_id": np.arange(len(a))})
    by_prompt, by_pair = reference_ceiling(rows, cluster="prompt"), reference_ceiling(rows, cluster="pair")
    assert by_prompt["separability"] < by_pair["separability"]
    assert reference_ceiling(rows) == by_prompt

    records = [Record.from_dict(row) for row in iter_synthetic_records(600, seed=2, pairs_per_prompt=4)]
    judged, _ = judgment_table(records, key_codes=True)
    people = judged[judged["rater"] == "human"]
    ceilings = {}
    for cluster in ("pair", "prompt"):
        report = build_report(records, n_boot=50, rating_bootstrap=20, cluster=cluster, workers=1)
        judge = next(r for r in report.raters if r.reference == "human" and r.leaderboard is not None)
        ceilings[cluster] = judge.leaderboard.ceiling
        assert ceilings[cluster] == reference_ceiling(people, cluster=cluster)
    assert ceilings["pair"] != ceilings["prompt"]
