"""Self-preference against a taste every LLM judge shares, with several judges tested at once and few prompts.

Five models in four families (the "long" family has two), every model also a judge that sees
every pair of models on every prompt in both orders; three people's votes per pair, by model
strength alone. Scenarios, no self bias unless planted:

* ``shared``: every judge rewards the "long" family's wording by +0.5 log-odds and people do
  not. Held against people alone, the long judges' own-family lean is about +0.5 (and the other
  judges' leans move too: the long answers meet theirs); the judge x family contrast (its lean
  less the other families' judges' lean for the same family) is 0 for every judge.
* ``planted``: +0.4 log-odds for the "plain" judge's own family, 80 prompts: found (Holm-adjusted
  at 5%) in at least 60% of seeds.
* ``few``: 12 prompts, no bias on average (a judge's own-family lean varies from prompt to prompt
  around 0): with t quantiles on the prompts less one and Holm's adjustment, each unbiased judge is
  flagged in at most 10% of seeds (normal quantiles, unadjusted, flagged up to 12% here), and the
  report says there are too few prompts to tell.

Answers are shared by a prompt's pairs: each model's answer to a prompt is better or worse than the
model is (people and judges see it alike), and each judge has its own view of each answer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.bias.self_preference import JudgeRows, controlled_self_preference, holm

NAMES = np.array(["long-a", "long-b", "topic", "plain", "weak"], dtype=object)
FAMILY = np.array(["long", "long", "topic", "plain", "weak"], dtype=object)
STRENGTH = np.array([0.5, 0.3, 0.1, -0.1, -0.5])
LEAN = np.array([0.2, 0.0, 0.1, -0.2, 0.1])  # each judge's first-shown lean
I, J = np.triu_indices(5, 1)
SEEDS = range(30)
ANSWER_SD = 0.5
JUDGE_SD = 0.3


def _rows(rater: str, x, y, x_first, x_won, pair, prompt) -> pd.DataFrame:
    """Judgment-table rows: X (the lower model code) is the canonical, sorted-first text."""
    a, b = np.where(x_first, x, y), np.where(x_first, y, x)
    return pd.DataFrame({
        "rater": rater, "voter": rater, "pair_id": pair, "prompt": prompt,
        "model_a": NAMES[a], "model_b": NAMES[b], "family_a": FAMILY[a], "family_b": FAMILY[b],
        "flip": ~x_first, "decisive": True, "canon": np.where(x_won, 1, -1).astype(np.int8),
        "winner": np.where(x_won == x_first, "model_a", "model_b"),
    })


def simulate(seed: int, n_prompts: int, taste: float = 0.0, planted: dict[int, float] | None = None,
             self_sd: float = 0.0):
    rng = np.random.default_rng(seed)
    planted = planted or {}
    prompt_code = np.repeat(np.arange(n_prompts), len(I))
    x, y = np.tile(I, n_prompts), np.tile(J, n_prompts)
    pair = np.array([f"p{k}" for k in range(len(x))], dtype=object)
    prompt = np.array([f"q{k}" for k in prompt_code], dtype=object)
    # Each model's answer to a prompt is better or worse than the model is, for people and judges
    # alike: a prompt's pairs share their answers, so the prompt is the unit that repeats.
    answer = STRENGTH + rng.normal(0, ANSWER_SD, (n_prompts, 5))
    gap = answer[prompt_code, x] - answer[prompt_code, y]
    n = len(x)
    won = rng.random((3, n)) < 1 / (1 + np.exp(-gap))
    first = rng.random((3, n)) < 0.5
    people = _rows("human", np.tile(x, 3), np.tile(y, 3), first.ravel(), won.ravel(), np.tile(pair, 3),
                   np.tile(prompt, 3))
    liked = (FAMILY[x] == "long").astype(float) - (FAMILY[y] == "long")
    specs = {}
    for m in range(5):
        own = (FAMILY[x] == FAMILY[m]).astype(float) - (FAMILY[y] == FAMILY[m])
        x_first = np.r_[np.ones(n, bool), np.zeros(n, bool)]
        # ... and each judge has its own view of each answer, shared by the pairs it sits in.
        seen = answer + rng.normal(0, JUDGE_SD, (n_prompts, 5))
        judged_gap = seen[prompt_code, x] - seen[prompt_code, y]
        # Its lean for its own family's answers changes from prompt to prompt, 0 on average.
        lean = planted.get(m, 0.0) + rng.normal(0, self_sd, n_prompts)[prompt_code]
        logit = (np.tile(judged_gap + taste * liked + lean * own, 2)
                 + LEAN[m] * np.where(x_first, 1.0, -1.0))
        verdict = rng.random(2 * n) < 1 / (1 + np.exp(-logit))
        rows = _rows(NAMES[m], np.tile(x, 2), np.tile(y, 2), x_first, verdict, np.tile(pair, 2), np.tile(prompt, 2))
        specs[NAMES[m]] = JudgeRows(FAMILY[m], rows, people, model=NAMES[m])
    return specs


def flag_rates(n_prompts: int, seeds=SEEDS, **scenario) -> tuple[dict[str, float], list]:
    """Per judge, the share of seeds it is flagged in (Holm-adjusted p under 5%); one seed's results."""
    flagged = dict.fromkeys(NAMES, 0)
    last = None
    for seed in seeds:
        last = controlled_self_preference(simulate(seed, n_prompts, **scenario), cluster="prompt")
        for name, c in last.items():
            flagged[name] += c.flagged
    return {k: v / len(seeds) for k, v in flagged.items()}, last


@pytest.mark.simulation
def test_a_taste_every_judge_shares_is_not_self_preference():
    rates, one = flag_rates(80, taste=0.5)
    assert all(rate <= 0.10 for rate in rates.values()), rates
    # The lean against people alone is there, and the report says it is shared.
    long_a = one["long-a"]
    assert long_a.lean > 0.25 and long_a.shared > 0.25 and abs(long_a.coef) < 0.25, long_a
    # Every judge's lean against people alone is mostly the part the others share.
    assert all(abs(c.coef) < 0.3 and c.coef == pytest.approx(c.lean - c.shared) for c in one.values()), one
    assert set(long_a.compared_with) == {"topic", "plain", "weak"}


@pytest.mark.simulation
def test_a_planted_own_family_lean_is_found_with_80_prompts():
    rates, one = flag_rates(80, planted={3: 0.4})
    assert rates["plain"] >= 0.60, rates
    assert all(rate <= 0.10 for name, rate in rates.items() if name != "plain"), rates
    assert one["plain"].p_holm >= one["plain"].p


@pytest.mark.simulation
def test_with_12_prompts_unbiased_judges_are_rarely_flagged_and_the_report_says_too_few():
    # A judge's lean for its own family varies by prompt (0 on average): 12 prompts are few units.
    rates, one = flag_rates(12, seeds=range(60), self_sd=0.6)
    assert all(rate <= 0.10 for rate in rates.values()), rates
    c = one["plain"]
    assert c.n_clusters == 12 and any("too few to tell" in note for note in c.caveats), c


def test_holm_adjusts_the_smallest_p_most_and_keeps_the_order():
    got = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": None})
    assert got == {"a": pytest.approx(0.03), "b": pytest.approx(0.06), "c": pytest.approx(0.06), "d": None}


def _slope_check_rates(scenario: str, seeds) -> np.ndarray:
    """Per judge of :mod:`test_self_preference_confounders`' design, read without its categories:
    the share of seeds whose per-prompt slope check rejects at 5%."""
    from test_self_preference_confounders import plain, simulate as topical

    from analysis.bias.self_preference import fit_reference, fit_self_term, slope_check

    hits = np.zeros(5)
    for seed in seeds:
        people, judges = topical(seed, scenario)
        reference = fit_reference(plain(people), 5)
        for m, verdicts in judges.items():
            fit = fit_self_term(plain(people), plain(verdicts), 5, reference)
            hits[m] += slope_check(fit, plain(verdicts)) < 0.05
    return hits / len(seeds)


@pytest.mark.simulation
def test_the_per_prompt_slope_check_finds_a_judge_sharp_on_some_topics_only():
    """No category recorded: the judge sharp on its family's strong topic (slope 2 there, 0.3
    elsewhere) is found; judges equally sharp everywhere are not."""
    topic = _slope_check_rates("topic", range(15))
    assert topic[2] >= 0.80 and all(topic[m] <= 0.2 for m in (0, 1, 3, 4)), topic
    none = _slope_check_rates("none", range(40))
    assert all(rate <= 0.125 for rate in none), none


def test_the_report_says_the_term_assumes_one_sharpness_without_categories():
    got = controlled_self_preference(simulate(0, 30), cluster="prompt")["plain"]
    assert got.slope_check_p is not None
    assert any("assumes the judge equally sharp on every prompt" in note for note in got.caveats), got.caveats


def test_the_table_names_the_cluster_of_the_interval_it_prints():
    """The column said "by pair" and printed the prompt-clustered interval."""
    from types import SimpleNamespace

    from analysis.report.judge_sections import _controlled_row, controlled_json

    c = controlled_self_preference(simulate(0, 30), cluster="prompt")["plain"]
    entry = {"family": "plain", "reference": "human", "self_family": {
        "delta": None, "ci": None, "controlled": controlled_json(SimpleNamespace(controlled=c, reference="human"))}}
    row = _controlled_row("plain", entry)
    assert c.cluster == "prompt" and row["ci"].endswith("by prompt")
    from pathlib import Path

    for name in ("judging.md.j2", "judging.html.j2"):
        text = (Path(__file__).parents[1] / "analysis/report/templates" / name).read_text()
        assert "CI, by pair]" not in text and "CI by pair]" not in text
