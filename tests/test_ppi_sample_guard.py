"""The guard for people who are not a random sample of the judged pairs, on the frames the rating
path and the worth section build (battle frames carry ``prompt_id``, not the prompt text).

A PRD-like set: 60 prompts of different lengths, every pair of five models on each; the judge on
every pair, people only on the pairs of the longest prompts. PPI assumes people's pairs are a
random sample of the judged ones: the ratings and the judge's worth must say they are not, and
stay quiet when people are on a random share of the pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.judging.worth import worth_of_judges
from analysis.ratings.ppi import ppi_ratings

THETA = np.array([0.6, 0.3, 0.0, -0.3, -0.6])
I, J = np.triu_indices(5, 1)


def frames(people_on: str, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_prompts = 60
    length = rng.lognormal(6, 1, n_prompts)  # characters of each prompt
    prompt = np.repeat(np.arange(n_prompts), len(I))
    i, j = np.tile(I, n_prompts), np.tile(J, n_prompts)
    eta = THETA[i] - THETA[j] + rng.normal(0, 1, (n_prompts, 5))[prompt, i] * 0.5

    def battles(won, rater, kind):
        return pd.DataFrame({"model_a": np.array(["m0", "m1", "m2", "m3", "m4"])[i],
                             "model_b": np.array(["m0", "m1", "m2", "m3", "m4"])[j],
                             "winner": np.where(won, "model_a", "model_b"), "pair_id": [f"p{k}" for k in range(len(i))],
                             "prompt_id": [f"q{k}" for k in prompt], "judge": rater, "judge_type": kind})

    judge = battles(rng.random(len(eta)) < 1 / (1 + np.exp(-eta)), "J", "llm")
    if people_on == "longest prompts":
        labelled = length[prompt] >= np.quantile(length, 0.6)
    else:
        labelled = rng.random(len(eta)) < 0.4
    people = battles(rng.random(len(eta)) < 1 / (1 + np.exp(-eta)), "human", "human")[labelled]
    return people, judge


def test_people_on_the_longest_prompts_only_are_warned_about_on_the_rating_path():
    people, judge = frames("longest prompts")
    assert "prompt" not in judge.columns
    warnings = ppi_ratings(pd.concat([judge, people], ignore_index=True), "J").warnings
    assert any("not a random sample of the judged ones by prompt" in w for w in warnings), warnings


def test_people_on_a_random_share_of_the_pairs_are_not_warned_about():
    people, judge = frames("random")
    assert ppi_ratings(pd.concat([judge, people], ignore_index=True), "J").warnings == ()


@pytest.mark.parametrize("people_on", ["longest prompts", "random"])
def test_the_worth_of_a_judge_carries_the_warning(people_on):
    people, judge = frames(people_on)
    found, notes = worth_of_judges(people, {"J": (judge, None)}, cluster="prompt")
    assert len(found) == 1
    warned = [n for n in notes if "not a random sample" in n]
    assert bool(warned) == (people_on == "longest prompts"), notes
