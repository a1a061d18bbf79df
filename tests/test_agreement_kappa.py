"""Cohen's kappa carries a 95% interval, resampling whole clusters as S1 and S2 do: on synthetic
votes with a planted kappa the interval covers it about 95% of the time, and covers 0 for a judge
that ignores the answers; the human-human baseline's kappa likewise.

Two people vote on each pair; the second copies the first with probability p, else draws from
the same category shares (kappa p). The judge copies the first person with probability q, else
draws from the shares: its kappa is q against the first and q * p against the second, so q (1 + p) / 2
against people's votes pooled."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.judging.agreement import agreement, human_baseline
from analysis.judgment_table import judgment_table
from pairlab.records import Record

SHARES = (0.45, 0.35, 0.20)  # alpha wins, beta wins, tie
WINNERS = ("model_a", "model_b", "tie")


def _votes(rng, n_pairs: int, q_judge: float, q_people: float) -> list[Record]:
    records = []
    for i in range(n_pairs):
        first = rng.choice(3, p=SHARES)
        second = first if rng.random() < q_people else rng.choice(3, p=SHARES)
        judge = first if rng.random() < q_judge else rng.choice(3, p=SHARES)
        for voter, verdict in (("human:a", first), ("human:b", second), ("judge", judge)):
            records.append(Record(pair_id=f"p{i}", prompt=f"q{i}", model_a="alpha", model_b="beta",
                                  response_a=f"a{i}", response_b=f"b{i}", winner=WINNERS[verdict], judge=voter))
    return records


def _intervals(seed: int, q_judge: float, q_people: float, n_pairs: int = 250):
    table, _ = judgment_table(_votes(np.random.default_rng(seed), n_pairs, q_judge, q_people))
    people = table[table["rater"] == "human"]
    judge = agreement(table[table["rater"] == "judge"], people, "human", n_boot=300, seed=seed)
    return judge, human_baseline(people, n_boot=300, seed=seed)


def test_kappa_has_an_interval_around_its_estimate():
    judge, people = _intervals(0, 0.6, 0.3)
    for got in (judge, people):
        lo, hi = got.cohen_kappa_ci
        assert lo < got.cohen_kappa < hi and hi - lo < 0.3


@pytest.mark.simulation
@pytest.mark.parametrize("q_judge", [0.0, 0.5])
def test_kappa_intervals_cover_the_planted_kappa(q_judge):
    runs = 60
    covered_judge = covered_people = 0
    for seed in range(runs):
        judge, people = _intervals(seed, q_judge, 0.4)
        planted = q_judge * (1 + 0.4) / 2
        covered_judge += judge.cohen_kappa_ci[0] <= planted <= judge.cohen_kappa_ci[1]
        covered_people += people.cohen_kappa_ci[0] <= 0.4 <= people.cohen_kappa_ci[1]
    # 95% intervals: at 60 runs, 51 or more covered unless coverage is clearly short (binomial 2.5% tail at 0.95).
    assert covered_judge >= 51, covered_judge
    assert covered_people >= 51, covered_people
