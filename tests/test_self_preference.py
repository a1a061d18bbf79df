"""Self-preference that a judge's sharpness cannot fake, on synthetic votes with known truth.

Five models in four families (the strong family has two), each model also a judge that
judges every pair in both orders; three human votes per pair, by model strength alone. The
scenarios of issue 16: no bias with equally sharp judges; no bias with the strong family's
judges twice as sharp as people; no bias with the weakest family's judge three times noisier
(a third of people's slope); +0.8 log-odds planted for two judges. Over fixed seeds, every
no-bias interval must cover 0 in at least 90% of seeds and every planted term must be
significant in at least 80%. The seed loops call the array-level fit (a few milliseconds a
seed); one seed of each scenario also goes through :func:`controlled_self_preference` on
judgment-table rows, the path the report takes (and the one the old shared-family-effects
model failed: it read the sharp and the noisy judges as biased).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.bias.self_preference import (
    SPECIFICATION, JudgeRows, Verdicts, controlled_self_preference, fit_reference, fit_self_term,
)

NAMES = ["strong-a", "strong-b", "mid", "low", "weak"]
FAMILY = np.array(["strong", "strong", "mid", "low", "weak"], dtype=object)
STRENGTH = np.array([1.0, 0.6, 0.2, -0.2, -0.8])  # log-odds, as people see them
LEAN = np.array([0.3, 0.0, 0.2, -0.2, 0.1])  # each judge's own lean to the first-shown response
SCENARIOS = {
    "equal": {},
    "sharp": {"sharp": {0: 2.0, 1: 2.0}},  # the strong family's judges twice as sharp as people
    "noisy": {"sharp": {4: 1 / 3}},  # the weakest family's judge three times noisier
    "planted": {"planted": {2: 0.8, 4: 0.8}},
}
N_PAIRS = 600
SEEDS = range(60)


def simulate(seed: int, sharp=None, planted=None, n_pairs: int = N_PAIRS):
    """(human votes, {judge: its verdicts}) as coded arrays: model codes of X and Y, 1 when X
    won, X's display position, the pair; X is the lower model code (the canonical frame)."""
    rng = np.random.default_rng(seed)
    sharp, planted = sharp or {}, planted or {}
    x = rng.integers(0, 5, n_pairs)
    y = (x + rng.integers(1, 5, n_pairs)) % 5
    x, y = np.minimum(x, y), np.maximum(x, y)
    pair = np.arange(n_pairs)
    gap = STRENGTH[x] - STRENGTH[y]
    human_first = rng.random((3, n_pairs)) < 0.5
    human_won = rng.random((3, n_pairs)) < 1 / (1 + np.exp(-gap))
    humans = Verdicts(np.tile(x, 3), np.tile(y, 3), human_won.ravel().astype(float),
                      np.where(human_first.ravel(), 1.0, -1.0), np.tile(pair, 3))
    judges = {}
    for m in range(5):
        own = (FAMILY[x] == FAMILY[m]).astype(float) - (FAMILY[y] == FAMILY[m])
        position = np.r_[np.ones(n_pairs), -np.ones(n_pairs)]  # both orders
        logit = sharp.get(m, 1.0) * np.tile(gap, 2) + LEAN[m] * position + planted.get(m, 0.0) * np.tile(own, 2)
        won = (rng.random(2 * n_pairs) < 1 / (1 + np.exp(-logit))).astype(float)
        judges[m] = Verdicts(np.tile(x, 2), np.tile(y, 2), won, position, np.tile(pair, 2), own=np.tile(own, 2))
    return humans, judges


def rates(scenario: str, seeds=SEEDS) -> dict[int, tuple[float, float]]:
    """Per judge: (share of seeds whose interval covers 0, share significantly above 0)."""
    covers, above = np.zeros(5), np.zeros(5)
    for seed in seeds:
        humans, judges = simulate(seed, **SCENARIOS[scenario])
        reference = fit_reference(humans, 5)
        for m, verdicts in judges.items():
            fit = fit_self_term(humans, verdicts, 5, reference)
            lo, hi = fit.interval(len(fit.theta) - 1)
            covers[m] += lo <= 0 <= hi
            above[m] += lo > 0
    return {m: (covers[m] / len(seeds), above[m] / len(seeds)) for m in range(5)}


@pytest.mark.parametrize("scenario", ["equal", "sharp", "noisy"])
def test_no_bias_is_not_found_however_sharp_or_noisy_the_judges(scenario):
    got = rates(scenario)
    for m, (cover, _) in got.items():
        assert cover >= 0.90, (scenario, NAMES[m], got)


def test_planted_self_preference_is_recovered_for_those_judges_only():
    got = rates("planted")
    for m in (2, 4):
        assert got[m][1] >= 0.80, (NAMES[m], got)
    for m in (0, 1, 3):
        assert got[m][0] >= 0.90, (NAMES[m], got)


def judgment_rows(humans: Verdicts, judges: dict[int, Verdicts]):
    """The same verdicts as judgment-table rows (what the report passes)."""

    def frame(v: Verdicts, rater: str) -> pd.DataFrame:
        first_x = v.position == 1
        a, b = np.where(first_x, v.x, v.y), np.where(first_x, v.y, v.x)
        x_won = v.won == 1
        # Response texts sort as the model codes do, so X's text is the sorted-first one.
        return pd.DataFrame({
            "rater": rater, "voter": rater, "pair_id": [f"p{p}" for p in v.pair], "prompt": [f"q{p // 2}" for p in v.pair],
            "model_a": np.array(NAMES, dtype=object)[a], "model_b": np.array(NAMES, dtype=object)[b],
            "family_a": FAMILY[a], "family_b": FAMILY[b], "flip": ~first_x, "decisive": True,
            "canon": np.where(x_won, 1, -1).astype(np.int8),
            "winner": np.where(x_won == first_x, "model_a", "model_b"),
        })

    people = frame(humans, "human")
    return {NAMES[m]: JudgeRows(FAMILY[m], frame(v, NAMES[m]), people) for m, v in judges.items()}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_report_path_gives_the_same_numbers_and_reads_no_sharpness_as_bias(scenario):
    humans, judges = simulate(3, **SCENARIOS[scenario])
    got = controlled_self_preference(judgment_rows(humans, judges))
    reference = fit_reference(humans, 5)
    planted = SCENARIOS[scenario].get("planted", {})
    for m, name in enumerate(NAMES):
        c = got[name]
        fit = fit_self_term(humans, judges[m], 5, reference)
        assert c.lean == pytest.approx(fit.theta[-1], abs=1e-9) and c.lean_ci == pytest.approx(fit.interval(2), abs=1e-9)
        # the term is the lean less the other families' judges' lean for the same family
        assert c.coef == pytest.approx(c.lean - c.shared, abs=1e-9) and len(c.compared_with) >= 3
        assert c.n_rows == 2 * N_PAIRS and c.n_judges == 5 and c.note is None
        assert c.ci_by_prompt is not None and c.position is not None
        if m in planted:
            assert c.ci[0] > 0, (name, c)
        else:
            assert c.ci[0] <= 0 <= c.ci[1], (name, c)
    if scenario == "sharp":  # each judge's slope is its sharpness relative to people
        assert got["strong-a"].slope_ci[0] > 1.4 and got["mid"].slope_ci[0] < 1 < got["mid"].slope_ci[1]
    if scenario == "noisy":
        assert got["weak"].slope_ci[1] < 0.6


def test_point_estimates_match_statsmodels_two_step():
    """Reference BT with a first-shown term, then the judge's logit on the gap: statsmodels."""
    import statsmodels.api as sm

    humans, judges = simulate(7, **SCENARIOS["sharp"])
    D = np.zeros((len(humans.x), 5))
    D[np.arange(len(D)), humans.x] += 1
    D[np.arange(len(D)), humans.y] -= 1
    ref = sm.Logit(humans.won, np.c_[D[:, 1:], humans.position]).fit(disp=False)
    strength = np.r_[0.0, ref.params[:4]]
    for m, v in judges.items():
        Z = np.c_[strength[v.x] - strength[v.y], v.position, v.own]
        expected = sm.Logit(v.won, Z).fit(disp=False)
        got = fit_self_term(humans, v, 5)
        assert got.theta == pytest.approx(expected.params, abs=1e-6)
        # Carrying the reference's uncertainty widens the self term's interval.
        naive = sm.Logit(v.won, Z).fit(disp=False, cov_type="cluster", cov_kwds={"groups": v.pair})
        assert got.cov[2, 2] > naive.cov_params()[2, 2]


def test_a_judge_of_unknown_or_absent_family_gets_a_note_not_a_number():
    humans, judges = simulate(3)
    specs = judgment_rows(humans, judges)
    specs["outsider"] = JudgeRows("openai", specs["mid"].rows, specs["mid"].reference_rows)
    specs["nameless"] = JudgeRows(None, specs["mid"].rows, specs["mid"].reference_rows)
    got = controlled_self_preference(specs)
    assert got["outsider"].coef is None and "exactly one openai response" in got["outsider"].note
    assert got["nameless"].coef is None and got["nameless"].note == "judge family unknown"
    assert got["mid"].coef is not None


def test_too_few_rows_are_reported_not_fitted():
    humans, judges = simulate(3, n_pairs=8)
    got = controlled_self_preference(judgment_rows(humans, judges))
    assert all(c.coef is None and "too few rows" in c.note for c in got.values())


def test_a_one_model_family_against_one_opponent_is_not_identified():
    """Two models only: the self term is the gap itself."""
    humans, judges = simulate(3, n_pairs=400)
    keep = lambda v: (v.x == 2) & (v.y == 4)  # noqa: E731 - mid against weak only
    cut = lambda v: Verdicts(*(None if a is None else a[keep(v)] for a in (v.x, v.y, v.won, v.position, v.pair, v.prompt, v.own)))  # noqa: E731
    specs = judgment_rows(cut(humans), {m: cut(v) for m, v in judges.items() if m in (2, 4)})
    got = controlled_self_preference(specs)
    assert all(c.coef is None for c in got.values())
    assert all("not identified" in c.note or "Bradley-Terry" in c.note for c in got.values())


def test_the_specification_says_what_it_controls():
    assert "slope" in SPECIFICATION and "position" in SPECIFICATION and "sharpness" in SPECIFICATION
    assert "cluster-robust by the report's cluster (prompt or pair)" in SPECIFICATION and "length" in SPECIFICATION


def test_without_people_each_judge_is_held_against_another_judge_in_the_report():
    """No human votes: each judge's per-pair verdicts against its reference judge's, via records."""
    from analysis.report import build_report, report_json
    from pairlab.records import Record

    humans, judges = simulate(11, n_pairs=500)
    records = []
    for m, v in judges.items():
        for x, y, won, pos, pair in zip(v.x, v.y, v.won, v.position, v.pair):
            a, b = (x, y) if pos == 1 else (y, x)
            texts = {x: f"{pair} a {NAMES[x]}", y: f"{pair} b {NAMES[y]}"}
            records.append(Record(
                pair_id=f"p{pair}", prompt=f"q{pair}", model_a=NAMES[a], model_b=NAMES[b], response_a=texts[a],
                response_b=texts[b], winner="model_a" if (won == 1) == (pos == 1) else "model_b", judge=NAMES[m],
                family_a=FAMILY[a], family_b=FAMILY[b], judge_family=FAMILY[m]))
    judged = report_json(build_report(records, n_boot=100, rating_bootstrap=10, panel=False))["judges"]
    for name, entry in judged.items():
        c = entry["self_family"]["controlled"]
        assert set(c) >= {"coef", "ci", "p", "n_rows", "n_judges", "slope", "ci_by_prompt"}
        assert c["reference"] not in (None, "human", name)
        assert c["coef"] is None or c["ci"][0] <= 0 <= c["ci"][1], (name, c)
