"""What is a judge worth in human votes? Prediction-powered ratings (:mod:`analysis.ratings.ppi`)
read as a design question: with people on some pairs and the judge on all, how many of
people's votes alone would give intervals as narrow (Angelopoulos, Duchi & Zrnic 2023,
PPI++; Boyeau et al. 2024 for Bradley-Terry ratings of LLMs).

Where people voted on most of the judge's pairs (PandaLM: every pair), the judge adds
nothing to votes already on every pair, so the number answers the question a user asks
before collecting votes: people on a random :data:`DESIGN_SHARE` of the judge's pairs,
drawn from the pairs people voted on. The curve of interval width against the number of
votes (people alone vs people plus the judge) subsamples people's pairs in the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.plan import projection
from analysis.ratings.bt import ELO_SCALE
from analysis.ratings.ppi import (PerModelPPI, PPIData, PPIFit, cross_fit_half, elo_table, fit_ppi_per_model_rounds,
                                  fit_ppi_stacked, ppi_data, sample_warnings)
from analysis.stats import z_two_sided
from analysis.stats import ratio_percentile_interval

__all__ = ["DESIGN_SHARE", "JudgeWorth", "WidthPoint", "judge_worth", "worth_interval"]

DESIGN_SHARE = 0.2  # people on a fifth of the pairs, as the coverage simulation
_SUBSAMPLE_ABOVE = 0.5  # people on more than half of the judge's pairs: the design is subsampled
_DRAWS = 10  # subsamples averaged per point
_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


@dataclass(frozen=True)
class WidthPoint:
    """Mean 95% interval width (Elo points) at ``n_votes`` human votes."""

    share: float  # of the pairs people voted on
    n_votes: float
    people: float
    people_and_judge: float


@dataclass(frozen=True, repr=False)
class JudgeWorth:
    """What a judge is worth in human votes (:func:`judge_worth`); shown, the sentence the report
    gives it, not its tables."""

    judge: str
    design: str  # what the effective votes refer to
    n_human: float  # human votes in that design
    n_human_pairs: int
    n_judge: int  # pairs the judge gave a verdict on
    lam: float
    effective_votes: float
    effective_ci: tuple[float, float] | None
    ratio: float  # effective / actual human votes: what one vote is worth with the judge (the
    # interval of the effective votes is this ratio's pair-bootstrap interval times n_human)
    ratio_ci: tuple[float, float] | None
    curve: tuple[WidthPoint, ...]
    ratings: pd.DataFrame  # model, people, people_lower, people_upper, judge, ..., ppi, ppi_lower, ppi_upper, rank_set
    lam_all: float  # lambda of the fit on every human vote
    n_dropped_votes: int  # human votes on pairs this judge never judged (left out here)
    all_labelled: bool = False  # people on every judged pair: the PPI ratings are people's own
    # Per model at the design's share, lambda tuned for each model (PPI++ per coordinate), the
    # fits the worth is read from: model, lam, width_ratio (its interval's width with the judge
    # over people's alone, above 1 where the judge widens it).
    per_model: pd.DataFrame | None = None
    no_interval: str | None = None  # why the worth has no interval (too few votes per model)

    @property
    def n_narrowed(self) -> int:
        """Models whose interval the judge narrows by more than 1% (per-model lambda)."""
        return 0 if self.per_model is None else int((self.per_model["width_ratio"] < 0.99).sum())
    # Expected mean width against votes past those in hand, active and uniform picks (analysis.plan).
    projection: pd.DataFrame | None = None

    def __repr__(self) -> str:
        def interval(ci, digits: str) -> str:
            return "" if ci is None else f" [{ci[0]:{digits}}, {ci[1]:{digits}}]"

        return (f"JudgeWorth({self.judge}: {self.n_human:.0f} human votes count as {self.effective_votes:.0f}"
                f"{interval(self.effective_ci, '.0f')} beside the judge, each {self.ratio:.2f}x"
                f"{interval(self.ratio_ci, '.2f')}; {self.design})")


def _labelled(data: PPIData) -> np.ndarray:
    """Per row, its clusters with people's votes (rows are kinds of clusters, ``weight`` their count)."""
    return np.where(data.n_human > 0, data.weight, 0.0)


def _design_rows(data: PPIData) -> PPIData:
    """``data``'s rows twice, first as they are, then without people's votes: a design that
    keeps people on ``keep`` of each row's clusters is then the weights ``keep`` and
    ``weight - keep`` on these rows (:func:`_people_on`), so every design and its bootstrap
    rounds share one set of rows and are fitted together (:func:`.fit_ppi_rounds`)."""
    gone = np.zeros_like(data.n_human)

    def twice(kept: np.ndarray, lost: np.ndarray) -> np.ndarray:
        return np.concatenate([kept, lost])

    return replace(data, pair=twice(data.pair, data.pair), n_judge=twice(data.n_judge, data.n_judge),
                   yhat_judge=twice(data.yhat_judge, data.yhat_judge), n_human=twice(data.n_human, gone),
                   y_human=twice(data.y_human, gone), yhat_human=twice(data.yhat_human, gone),
                   weight=twice(data.weight, np.zeros_like(data.weight)),
                   group=None if data.group is None else twice(data.group, data.group))


def _people_on(data: PPIData, keep: np.ndarray) -> np.ndarray:
    """The weights on :func:`_design_rows` that keep people's votes on ``keep`` of each row's clusters."""
    return np.concatenate([keep, data.weight - keep])


def _subsample(data: PPIData, size: int, rng: np.random.Generator) -> np.ndarray:
    """People's votes kept on ``size`` of their clusters drawn without replacement (weights
    on :func:`_design_rows`): over rows that stand for several clusters, the kept clusters
    per row are the counts that ``size`` clusters drawn one by one would give (a multivariate
    hypergeometric draw)."""
    labelled = _labelled(data).astype(np.int64)  # cluster counts: whole numbers
    # ``size`` of the clusters, each row's own numbered apart, drawn without replacement and
    # counted per row: the multivariate hypergeometric draw as one draw over every cluster
    # (NumPy's own goes row by row, and most rows hold one cluster).
    clusters = np.repeat(np.arange(len(labelled)), labelled)
    chosen = rng.choice(len(clusters), min(size, len(clusters)), replace=False)
    keep = np.bincount(clusters[chosen], minlength=len(labelled))
    return _people_on(data, np.where(data.n_human > 0, keep, data.weight))


def _bootstrapped(weight: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The Poisson bootstrap of the clusters (each cluster Poisson(1) times; Hanley &
    MacGibbon 2006) as weights: a row standing for ``w`` clusters draws Poisson(``w``)
    copies, the sum of its clusters' independent Poisson(1) draws, so rows of compressed
    data resample as the clusters they stand for. Rows of weight 0 (left out of a design)
    draw nothing."""
    out = np.zeros_like(weight)
    kept = weight > 0
    out[kept] = rng.poisson(weight[kept])
    return out


def _bootstrapped_halves(rows: PPIData, design: np.ndarray, rng: np.random.Generator, seed: int
                         ) -> tuple[np.ndarray, np.ndarray]:
    """A bootstrap round of ``design`` (weights on ``rows``) that keeps the worth's cross-fit
    honest: the design's clusters split in the cross-fit's halves first
    (:func:`analysis.ratings.ppi.cross_fit_half`), then each half resampled apart
    (:func:`_bootstrapped`), so that a cluster drawn twice has both copies in one half. The
    round's weights and its first half."""
    first = cross_fit_half(rows, design, seed)
    resampled = _bootstrapped(first, rng)
    return resampled + _bootstrapped(design - first, rng), resampled


def _width(sd: np.ndarray, level: float) -> float:
    return float(2 * z_two_sided(level) * ELO_SCALE * sd.mean())


_CURVE_SHARES = tuple(share for share in _FRACTIONS for _ in range(_DRAWS if share < 1 else 1))  # one per draw


def _curve_designs(data: PPIData, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The curve's subsamples, one per entry of :data:`_CURVE_SHARES`: its draw's weights."""
    n_labelled = round(_labelled(data).sum())
    return (_subsample(data, round(share * n_labelled), rng) for share in _CURVE_SHARES)


def _curve(shares: list[float], fits: list[PerModelPPI | Exception], level: float) -> tuple[WidthPoint, ...]:
    """Mean widths per share over its draws' fits, a draw whose votes do not connect the models
    left out; a share with fewer than half its draws fitted has no point."""
    points = []
    for share in _FRACTIONS:
        drawn = [f for s, f in zip(shares, fits) if s == share]
        fitted = [f for f in drawn if not isinstance(f, Exception)]
        if len(fitted) >= len(drawn) / 2:
            points.append(WidthPoint(
                share=share,
                n_votes=float(np.mean([f.n_human for f in fitted])),
                people=float(np.mean([_width(f.classical_sd, level) for f in fitted])),
                people_and_judge=float(np.mean([_width(f.sd, level) for f in fitted])),
            ))
    return tuple(points)


def _ratings(fit: PPIFit, judge_alone: pd.DataFrame | None, level: float) -> pd.DataFrame:
    n = np.zeros(len(fit.models), dtype=np.int64)
    ppi, sets = elo_table(fit, fit.theta, fit.covariance, n, level, "bt-ppi", "")
    people, _ = elo_table(fit, fit.classical_theta, fit.classical_covariance, n, level, "bt", "")
    out = ppi.table[["model", "rating", "lower", "upper"]].rename(
        columns={"rating": "ppi", "lower": "ppi_lower", "upper": "ppi_upper"})
    out["rank_set"] = out["model"].map(sets)
    people = people.table.set_index("model")
    for column in ("rating", "lower", "upper"):
        out["people" + ("" if column == "rating" else "_" + column)] = out["model"].map(people[column])
        source = None if judge_alone is None else judge_alone.set_index("model")[column]
        out["judge" + ("" if column == "rating" else "_" + column)] = (
            np.nan if source is None else out["model"].map(source))
    return out


def _projection(human: pd.DataFrame, judge: pd.DataFrame, name: str) -> pd.DataFrame | None:
    """The planner's expected widths past the votes in hand, from the votes on pairs the judge gave a verdict on."""
    judged = judge[judge["parse_error"].isna().to_numpy()] if "parse_error" in judge.columns else judge
    people = human[human["pair_id"].isin(judged["pair_id"]).to_numpy()].assign(judge_type="human")
    return projection(pd.concat([people, judged.assign(judge_type="llm")], ignore_index=True), name)


def judge_worth(human: pd.DataFrame, judge: pd.DataFrame, name: str, *, judge_alone: pd.DataFrame | None = None,
                rounds: int = 100, seed: int = 0, level: float = 0.95, cluster: str | None = "pair") -> JudgeWorth | None:
    """The judge's worth in human votes, with a pair-bootstrap interval; None without people on its pairs.

    ``human`` and ``judge`` are battle frames (pair_id, model_a, model_b, winner);
    ``judge_alone`` the judge's own Bradley-Terry table, shown beside the PPI ratings.
    ``cluster`` (:func:`analysis.stats.cluster_groups`): by prompt, the sandwich sums a
    prompt's pairs and the bootstrap draws whole prompts (Poisson(1) times each).
    """
    data = ppi_data(human, judge, repr(name), unjudged="leave out", cluster=cluster)
    if data.totals()[0] == 0:
        return None
    rng = np.random.default_rng(seed)
    n_labelled, n_judged = round(_labelled(data).sum()), round(data.totals()[1])
    subsampled = n_labelled > _SUBSAMPLE_ABOVE * n_judged
    size = round(DESIGN_SHARE * n_judged)
    collected = _people_on(data, data.weight)

    def draw_design() -> np.ndarray:
        # The design first (people on a random share of the pairs), then the resample of its
        # pairs: the interval carries both the choice of pairs and the sampling of pairs.
        return _subsample(data, size, rng) if subsampled else collected

    # Every fit of this judge is drawn first, in the order the draws were always made, then
    # fitted at once: the data as collected, the design's draws, the bootstrap rounds and
    # the curve's subsamples.
    n_point = _DRAWS if subsampled else 1
    n_fits = n_point + rounds + len(_CURVE_SHARES)
    rows = _design_rows(data)
    weights = np.empty((n_fits, 2 * len(data.pair)))  # filled in place, not copied from a list of the draws
    for k in range(n_point):
        weights[k] = draw_design()
    if data.group is None:  # each round drawn half by half, its first halves kept for the cross-fit
        prompt_draws, halves = None, np.empty_like(weights)
        for k in range(n_point, n_point + rounds):
            weights[k], halves[k] = _bootstrapped_halves(rows, draw_design(), rng, seed)
    else:  # whole prompts drawn: a prompt drawn k times multiplies its pairs' weights by k
        # (a prompt's copies stay in its half of the cross-fit: the halves split whole prompts)
        prompt_draws, halves = rng.poisson(1.0, size=(rounds, int(data.group.max()) + 1)).astype(float), None
        rows_group = np.r_[data.group, data.group]  # the rows of _design_rows
        for k, drawn in enumerate(prompt_draws, start=n_point):
            weights[k] = draw_design() * drawn[rows_group]
    for k, drawn in enumerate(_curve_designs(data, rng), start=n_point + rounds):
        weights[k] = drawn
    if halves is not None:  # the designs' own halves
        unresampled = np.r_[np.arange(n_point), np.arange(n_point + rounds, n_fits)]
        halves[unresampled] = cross_fit_half(rows, weights[unresampled], seed)
    # The ratings table as collected: every model at its own lambda, one sandwich over the stacked
    # equations for its gaps and rank sets.
    fit = fit_ppi_stacked(replace(rows, weight=collected))
    # The worth, its interval and the curve from PPI++'s per-model lambda (one lambda for every
    # model narrowed some models' intervals by widening others'), each model's width cross-fitted
    # (:func:`analysis.ratings.ppi.fit_ppi_per_model_rounds`): free to come out wider than
    # people's alone, so a useless judge's worth and its interval fall around 1x.
    draws = None
    if prompt_draws is not None:  # the other fits take every prompt once
        draws = np.ones((n_fits, prompt_draws.shape[1]))
        draws[n_point:n_point + rounds] = prompt_draws
    fits = fit_ppi_per_model_rounds(rows, weights, draws=draws, seed=seed, ratings=False, halves=halves)
    point, resampled, curve_fits = fits[:n_point], fits[n_point:n_point + rounds], fits[n_point + rounds:]
    for f in point:
        if isinstance(f, Exception):  # a design's fit: the judge gets none
            raise f
    n_votes = float(np.mean([f.n_human for f in point]))
    ratio = float(np.mean([f.ratio for f in point]))
    ratios = [f.ratio for f in resampled if not isinstance(f, Exception)]
    ratio_ci = worth_interval(ratios, rounds, level)
    no_interval, failed = None, 1 - len(ratios) / rounds
    if ratio_ci is None:
        per_model_votes = 2 * n_votes / data.n_models  # a vote counts for both its models
        no_interval = (f"too few human votes per model to price the judge: {per_model_votes:.0f} per model, and "
                       f"people's votes alone could not rate the models in {failed:.0%} of the bootstrap "
                       "resamples (an interval needs them rated in about three quarters or more)"
                       if failed >= 0.25 else "its bootstrap rounds gave no finite spread to read an interval from")
    per_model = pd.DataFrame({"model": rows.models.astype(str), "lam": np.mean([f.lam for f in point], axis=0),
                              "width_ratio": np.mean([f.width_ratio for f in point], axis=0)})
    design = (f"people on a random {DESIGN_SHARE:.0%} of the judge's {n_judged} pairs (drawn from the "
              f"{n_labelled} pairs people voted on), the judge on all of them" if subsampled else
              f"as collected: people on {n_labelled} of the judge's {n_judged} pairs, the judge on all of them")
    return JudgeWorth(
        judge=name,
        design=design,
        n_human=n_votes,
        n_human_pairs=round(DESIGN_SHARE * n_judged) if subsampled else n_labelled,
        n_judge=n_judged,
        lam=float(np.mean([f.lam for f in point])),  # over models and the design's draws
        effective_votes=ratio * n_votes,
        effective_ci=None if ratio_ci is None else (ratio_ci[0] * n_votes, ratio_ci[1] * n_votes),
        ratio=ratio,
        ratio_ci=ratio_ci,
        curve=_curve(list(_CURVE_SHARES), curve_fits, level),
        ratings=_ratings(fit, judge_alone, level),
        lam_all=fit.lam,
        n_dropped_votes=len(human) - round(data.totals()[0]),
        all_labelled=n_labelled == n_judged,
        per_model=per_model,
        no_interval=no_interval,
        projection=None if n_labelled == n_judged else _projection(human, judge, name),
    )


def worth_interval(ratios: list[float], rounds: int, level: float = 0.95) -> tuple[float, float] | None:
    """The interval of a judge's worth: the percentile interval of the ratios of its bootstrap
    rounds that were fitted (Efron & Tibshirani 1993, sec. 13.3;
    :func:`analysis.stats.ratio_percentile_interval`), each round drawn half by half for the
    worth's cross-fit (:func:`_bootstrapped_halves`; tests/test_worth_coverage.py has its
    coverage, and where it falls short). A round that was not fitted is one whose people's
    votes alone cannot rate the models (comparisons disconnected, a model with only wins or
    only losses): people's alone know nothing there, so its ratio is infinite and it counts at
    the top of the order (the upper end is infinite once they pass 2.5% of the rounds); leaving
    it out read the interval low (a 12-model design with 16 votes a model lost 30% of its
    rounds). None where more than about a quarter of the ``rounds`` were not fitted (too few
    votes per model)."""
    return ratio_percentile_interval(ratios, level, n_infinite=rounds - len(ratios))


def worth_of_judges(human: pd.DataFrame | None, judges: dict[str, tuple[pd.DataFrame, pd.DataFrame | None]],
                    seed: int = 0, cluster: str | None = "pair") -> tuple[tuple[JudgeWorth, ...], tuple[str, ...]]:
    """:func:`judge_worth` for every judge ``name -> (its battle frame, its own BT table)`` that
    people voted beside; the notes say why a judge got none."""
    if human is None or human.empty:
        return (), ()
    out, notes = [], []
    for name, (frame, alone) in judges.items():
        try:
            worth = judge_worth(human, frame, name, judge_alone=alone, seed=seed, cluster=cluster)
        except (ValueError, RuntimeError) as exc:  # e.g. people's votes do not connect the models
            notes.append(f"{name}: not rated with people (PPI): {exc}")
            continue
        if worth is not None:
            out.append(worth)
            if worth.no_interval:
                notes.append(f"{name}: no interval for its worth: {worth.no_interval}")
            # The worth is PPI's: it holds only if people's pairs are a random sample of the judged ones.
            notes += [f"{name}: {warning}" for warning in sample_warnings(human, frame)]
    return tuple(out), tuple(notes)
