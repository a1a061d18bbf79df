"""Self-preference that length and topic cannot fake (issue 26, section 2).

Five models in four families (the "long" family has two), every model also a judge that sees
every pair in both orders; three human votes per pair; 100 prompts, every pair of models on
each, half the prompts in category "a" and half in "b". Two confounders, no self bias planted:

* length: judges weigh the log length ratio five times more than people do, and the two-model
  family writes longer answers;
* topic: one family is strong on the "a" prompts and weak on the "b" prompts, and its judge is
  sharp on "a" and noisy on "b".

* style: the two-model family writes many more markdown list items and headers (lengths alike),
  and judges weigh those elements (bt-style's normalised differences) six times more than people.

The judge's model with its own length and markdown leans and its slope (and the strengths) per
category must cover 0 in at least 90% of seeds for every judge, and find +0.4 log-odds planted
for one judge alone in at least 60%. The model without them (strength, one slope, position,
self term, by pair; for style, the model with length and categories but no markdown leans)
flags judges in every scenario.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.bias.self_preference import JudgeRows, Verdicts, controlled_self_preference, fit_reference, fit_self_term
from analysis.ratings.style import normalised_difference

NAMES = ["long-a", "long-b", "topic", "plain", "weak"]
FAMILY = np.array(["long", "long", "topic", "plain", "weak"], dtype=object)
STRENGTH = np.array([0.5, 0.3, 0.1, -0.1, -0.5])
LEAN = np.array([0.2, 0.0, 0.1, -0.2, 0.1])  # each judge's first-shown lean
N_PROMPTS = 100
SEEDS = range(50)
I, J = np.triu_indices(5, 1)


def simulate(seed: int, scenario: str, planted: dict[int, float] | None = None, sibling: float = 0.0):
    """(human verdicts, {judge: verdicts}) coded as the fit takes them; X is the lower model code."""
    rng = np.random.default_rng(seed)
    planted = planted or {}
    prompt = np.repeat(np.arange(N_PROMPTS), len(I))
    x, y = np.tile(I, N_PROMPTS), np.tile(J, N_PROMPTS)
    category = (prompt % 2).astype(np.int64)
    pair = np.arange(len(x))
    strength = np.tile(STRENGTH, (2, 1))
    if scenario == "topic":  # "topic" strong on category 0, weak on 1
        strength[0, 2], strength[1, 2] = 0.9, -0.7
    gap = strength[category, x] - strength[category, y]
    # Each model's answer to a prompt has one length, shared by every pair it sits in.
    log_len = 5.5 + rng.normal(0, 0.4, (N_PROMPTS, 5)) + (0.7 * (FAMILY == "long") if scenario == "length" else 0)
    length = log_len[prompt, x] - log_len[prompt, y]
    people_len, judge_len = (0.3, 1.5) if scenario == "length" else (0.0, 0.0)
    n = len(x)
    # Headers and list items per answer; the style lean is on their summed normalised differences.
    style, style_names, people_style, judge_style = None, (), 0.0, 0.0
    if scenario == "style":
        long = FAMILY == "long"
        counts = [rng.poisson(np.where(long, rate_long, rate), (N_PROMPTS, 5)) for rate_long, rate in ((3, 0.3), (8, 1))]
        style = np.column_stack([normalised_difference(c[prompt, x], c[prompt, y]) for c in counts])
        style_names, people_style, judge_style = ("headers", "lists"), 0.25, 1.5
    lean = 0.0 if style is None else style.sum(axis=1)
    first = rng.random((3, n)) < 0.5
    won = rng.random((3, n)) < 1 / (1 + np.exp(-(gap + people_len * length + people_style * lean)))
    tiled = None if style is None else np.tile(style, (3, 1))
    humans = Verdicts(np.tile(x, 3), np.tile(y, 3), won.ravel().astype(float), np.where(first.ravel(), 1.0, -1.0),
                      np.tile(pair, 3), np.tile(prompt, 3), length=np.tile(length, 3), category=np.tile(category, 3),
                      style=tiled, style_names=style_names)
    judges = {}
    for m in range(5):
        own = (FAMILY[x] == FAMILY[m]).astype(float) - (FAMILY[y] == FAMILY[m])
        own_model = (x == m).astype(float) - (y == m)
        slope = np.ones(n)
        if scenario == "topic" and m == 2:
            slope = np.where(category == 0, 2.0, 0.3)
        position = np.r_[np.ones(n), -np.ones(n)]
        logit = (np.tile(slope * gap + judge_len * length + judge_style * lean, 2) + LEAN[m] * position
                 + planted.get(m, 0.0) * np.tile(own, 2) + sibling * (m == 0) * np.tile(own - own_model, 2))
        verdict = (rng.random(2 * n) < 1 / (1 + np.exp(-logit))).astype(float)
        judges[m] = Verdicts(np.tile(x, 2), np.tile(y, 2), verdict, position, np.tile(pair, 2), np.tile(prompt, 2),
                             own=np.tile(own, 2), length=np.tile(length, 2), category=np.tile(category, 2),
                             own_model=np.tile(own_model, 2), style=None if style is None else np.tile(style, (2, 1)),
                             style_names=style_names)
    return humans, judges


def plain(v: Verdicts) -> Verdicts:
    """The verdicts as the model without length and category leans reads them."""
    return Verdicts(v.x, v.y, v.won, v.position, v.pair, v.prompt, v.own)


def no_style(v: Verdicts) -> Verdicts:
    """The verdicts as the model without markdown leans reads them (length and category held)."""
    return replace(v, style=None, style_names=())


def rates(scenario: str, planted=None, controlled: bool = True) -> dict[int, tuple[float, float, float]]:
    """Per judge: shares of seeds whose self term's interval covers 0, lies above 0, below 0."""
    out = np.zeros((5, 3))
    without_style = scenario == "style" and not controlled  # the model before markdown leans
    controlled = controlled or without_style
    for seed in SEEDS:
        humans, judges = simulate(seed, scenario, planted)
        if without_style:
            humans, judges = no_style(humans), {m: no_style(v) for m, v in judges.items()}
        if controlled:
            reference, k = fit_reference(humans, 5, 2), 2
        else:
            humans, reference, k = plain(humans), fit_reference(plain(humans), 5), 1
        for m, verdicts in judges.items():
            fit = fit_self_term(humans, verdicts if controlled else plain(verdicts), 5, reference, n_categories=k)
            lo, hi = fit.interval(fit.at("self"), by_prompt=controlled)
            out[m] += (lo <= 0 <= hi, lo > 0, hi < 0)
    return {m: tuple(out[m] / len(SEEDS)) for m in range(5)}


@pytest.mark.simulation
@pytest.mark.parametrize("scenario", ["length", "topic", "style"])
def test_no_self_bias_is_not_flagged_by_length_topic_or_style(scenario):
    got = rates(scenario)
    for m, (cover, _, _) in got.items():
        assert cover >= 0.90, (scenario, NAMES[m], got)


@pytest.mark.simulation
@pytest.mark.parametrize("scenario", ["length", "topic", "style"])
def test_planted_bias_for_one_judge_is_found(scenario):
    got = rates(scenario, planted={3: 0.4})
    assert got[3][1] >= 0.60, (scenario, got)
    for m in (0, 1, 2, 4):
        assert got[m][0] >= 0.90, (scenario, NAMES[m], got)


@pytest.mark.simulation
@pytest.mark.parametrize("scenario", ["length", "topic", "style"])
def test_the_model_without_its_leans_flags_judges(scenario):
    """Why the terms are there: without them, no bias planted, some judge is flagged in most seeds."""
    got = rates(scenario, controlled=False)
    worst = min(cover for cover, _, _ in got.values())
    assert worst < 0.5, (scenario, got)


def test_own_model_and_siblings_are_reported_apart():
    """Judge long-a favours its sibling long-b (+1.0) and not itself: the split finds the sibling
    term, while the own-model term covers 0 (the report path, judgment-table rows)."""
    humans, judges = simulate(5, "length", sibling=1.0)

    def frame(v: Verdicts, rater: str) -> pd.DataFrame:
        first_x = v.position == 1
        a, b = np.where(first_x, v.x, v.y), np.where(first_x, v.y, v.x)
        la = np.exp(5.5 + np.where(first_x, 1, -1) * v.length / 2)  # lengths with the right log ratio
        lb = np.exp(5.5 - np.where(first_x, 1, -1) * v.length / 2)
        return pd.DataFrame({
            "rater": rater, "voter": rater, "pair_id": v.pair, "prompt": v.prompt, "category": np.where(v.category == 0, "a", "b"),
            "model_a": np.array(NAMES, dtype=object)[a], "model_b": np.array(NAMES, dtype=object)[b],
            "family_a": FAMILY[a], "family_b": FAMILY[b], "flip": ~first_x, "decisive": True,
            "canon": np.where(v.won == 1, 1, -1).astype(np.int8), "len_a": la - 1, "len_b": lb - 1})

    people = frame(humans, "human")
    got = controlled_self_preference({"long-a": JudgeRows("long", frame(judges[0], "long-a"), people, model="long-a")},
                                     cluster="prompt")["long-a"]
    assert got.cluster == "prompt" and got.categories == ("a", "b") and got.length is not None
    assert got.siblings_ci[0] > 0, got
    assert got.own_model_ci[0] <= 0 <= got.own_model_ci[1], got


def style_records(seed: int) -> list:
    """The style scenario as records with texts: each model's answer to a prompt holds its
    headers and list items and is padded to one length, so only the markdown differs."""
    from pairlab.records import Record

    rng = np.random.default_rng(seed)
    long = FAMILY == "long"
    headers, lists = (rng.poisson(np.where(long, a, b), (N_PROMPTS, 5)) for a, b in ((3, 0.3), (8, 1)))
    body = "Plain words about the question. " * 40

    def answer(p: int, m: int) -> str:
        text = ("".join(f"# Part {k}\n" for k in range(headers[p, m]))
                + "".join(f"- point {k}\n" for k in range(lists[p, m])))
        return (text + body)[:700]

    style = lambda p, x, y: sum(normalised_difference(c[p, x], c[p, y]) for c in (headers, lists))  # noqa: E731
    records = []
    for p in range(N_PROMPTS):
        for x, y in zip(I, J):
            gap, lean = STRENGTH[x] - STRENGTH[y], style(p, x, y)
            raters = [("human", 0.25, (True,) * 3)] + [(NAMES[m], 1.5, (True, False)) for m in range(5)]
            for rater, weight, orders in raters:
                for first_x in orders:
                    a, b = (x, y) if first_x else (y, x)
                    shown = 0 if rater == "human" else LEAN[NAMES.index(rater)] * (1 if first_x else -1)
                    logit = gap + weight * lean + shown
                    x_won = rng.random() < 1 / (1 + np.exp(-logit))
                    records.append(Record(
                        pair_id=f"p{p}-{x}{y}", prompt=f"q{p}", model_a=NAMES[a], model_b=NAMES[b],
                        response_a=answer(p, a), response_b=answer(p, b), judge=rater,
                        winner="model_a" if x_won == first_x else "model_b", family_a=FAMILY[a], family_b=FAMILY[b],
                        judge_family=None if rater == "human" else FAMILY[NAMES.index(rater)]))
    return records


def test_the_report_path_reads_markdown_leans_off_the_texts():
    """Records carry the texts: the judgment table counts their headers and list items with
    bt-style's counter, and the long family's judges, weighing lists and headers six times more
    than people with no self bias planted, are not flagged (before: flagged in every seed)."""
    from analysis.judgment_table import judgment_table

    seeds = range(6)
    covered = np.zeros(2)
    for seed in seeds:
        table, _ = judgment_table(style_records(seed))
        people = table[(table["rater"] == "human").to_numpy()]
        specs = {NAMES[m]: JudgeRows(FAMILY[m], table[(table["rater"] == NAMES[m]).to_numpy()], people, model=NAMES[m])
                 for m in (0, 1)}
        got = controlled_self_preference(specs, cluster="prompt")
        covered += [got[NAMES[m]].ci[0] <= 0 <= got[NAMES[m]].ci[1] for m in (0, 1)]
    assert (covered >= len(seeds) - 1).all(), covered
    assert got["long-a"].style == ("headers", "lists") and got["long-a"].length is None
