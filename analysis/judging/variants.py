"""Which debiasing fix brings a judge closest to the reference?

For each judge, the same verdicts read four ways, each scored against the reference
(people where they voted) at the verdict level (FastChat's S1/S2 agreement, with
bootstrap CIs over pairs) and at the leaderboard level (:mod:`analysis.judging.meta_metrics`):

* ``as_given``: the verdicts as the judge gave them, one per pair and display order, each
  scored by the share of the reference's votes on the pair it matches (every pair and order
  counts once); ratings from every record. When every pair was judged in one order only these
  are the both-orders verdicts, scored as the agreement table scores them;
* ``both_orders``: one verdict per pair, kept when the judge gives it in every order it
  saw and a tie otherwise (FastChat's rule; Zheng et al. 2023, sec. 3.4);
* ``calibrated``: one verdict per pair from ``prob_a`` averaged over both orders
  (balanced position calibration, Wang et al. 2023), when the records carry ``prob_a``;
* ``style_controlled``: the style-controlled Bradley-Terry ratings (Chatbot Arena's
  style control: length and markdown terms held out), scored against the reference's
  style-controlled ratings (the matching target: against people's raw ratings style control
  would only measure how much style moves people). Style control acts on the ratings, not
  on single verdicts, so this variant has no verdict-level agreement.

A variant is marked best for a metric only when a paired bootstrap says it beats every
other variant that has the metric: items resampled for S1/S2, prompts for the leaderboard
metrics (both leaderboards refitted each round, :func:`analysis.judging.meta_metrics.metric_rounds`),
the 95% percentile interval of each difference excluding 0. Otherwise none is marked and the
report says no variant is clearly better. The style-controlled ratings are not refitted in
the rounds, so that variant is never marked best on a leaderboard metric.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace as dc_replace

import pandas as pd

import numpy as np

from analysis.bias.position import debiased_rows
from analysis.judging.agreement import Agreement, agreement_sums, agreement_with_sums
from analysis.judging.meta_metrics import (
    BOOT_ROUNDS, METRICS, LeaderboardAgreement, leaderboard_agreement, metric_rounds, rows_prompts,
)
from analysis.stats import percentile_interval
from analysis.stats.resample import paired_totals

__all__ = ["BEST_RULE", "VARIANTS", "Variant", "best_variants", "judge_variants", "variant_rounds", "with_intervals"]

BEST_RULE = ("marked best only when a paired bootstrap (items for S1/S2, prompts for the leaderboard metrics) "
             "puts its difference from every other variant's value above 0 (below, for Brier) at 95%")

VARIANTS = {
    "as_given": "as given: one verdict per pair and order, scored by the share of people's votes it matches",
    "both_orders": "both orders combined (FastChat: a verdict that flips with the order is a tie)",
    "calibrated": "prob_a averaged over both orders (Wang et al. 2023)",
    "style_controlled": "style-controlled BT ratings against the reference's style-controlled ratings (Chatbot Arena style control: length and markdown held out; not a length-only control)",
}
# Metric -> True when higher is better.
_DIRECTION = {"with_ties": True, "without_ties": True, "spearman": True, "separability": True,
              "agreement_ci": True, "brier": False}


@dataclass(frozen=True)
class Variant:
    name: str
    agreement: Agreement | None
    leaderboard: LeaderboardAgreement | None
    note: str | None = None
    ratings: pd.DataFrame | None = None  # the variant's BT table (model, rating, lower, upper, ...)
    rows: pd.DataFrame | None = None  # the verdict rows it is read from (for the paired bootstraps)
    each_order: bool = False
    sums: pd.DataFrame | None = None  # per-item agreement sums (analysis.judging.agreement.agreement_sums)

    def metric(self, name: str) -> float | None:
        if name in ("with_ties", "without_ties"):
            return None if self.agreement is None else getattr(self.agreement, name)
        return None if self.leaderboard is None else getattr(self.leaderboard, name)


def judge_variants(
    rows: pd.DataFrame,
    reference_rows: pd.DataFrame,
    vs: str | None,
    ratings: pd.DataFrame | None,
    controlled: pd.DataFrame | None,
    reference_ratings: pd.DataFrame | None,
    rate_rows: Callable[[pd.DataFrame], tuple[pd.DataFrame | None, str | None]],
    n_boot: int = 1000,
    seed: int = 0,
    both_orders: Agreement | None = None,
    reference_controlled: pd.DataFrame | None = None,
) -> tuple[Variant, ...]:
    """The four variants of one judge (module docstring).

    ``rows`` are the judge's judgment-table rows, ``reference_rows`` the reference votes
    as :func:`analysis.judging.agreement.agreement` takes them; ``ratings`` / ``controlled`` the
    judge's BT and style-controlled BT tables, ``reference_ratings`` / ``reference_controlled``
    the reference's; ``rate_rows`` fits a BT table (with CIs) to per-pair verdict rows, or None,
    and says what a reader must know of it (the early estimate), or None.
    ``both_orders`` is the judge's usual agreement when already computed (the same numbers).
    """

    def scored(verdicts: pd.DataFrame, table: pd.DataFrame | None, each: bool, note=None, known=None) -> tuple:
        # One alignment gives the agreement and the sums variant_rounds resamples.
        agree, sums = (known, None) if known else agreement_with_sums(verdicts, reference_rows, vs, n_boot=n_boot,
                                                                      seed=seed, each_order=each)
        board = leaderboard_agreement(table, reference_ratings) if reference_ratings is not None else None
        return agree, board, note, table, verdicts, each, sums

    one_order = not _both_orders_seen(rows)
    same = "every pair was judged in one order only, so this is the records as given" if one_order else None
    # Judged in one order only, the records as given are the both-orders verdicts: scored per pair
    # and order instead, a pair's weight (one, or its number of votes) alone made the same verdicts
    # differ from the agreement table, and the bootstrap could mark one of them best.
    out = [Variant("as_given", *scored(rows, ratings, not one_order, known=both_orders if one_order else None))]
    debiased = debiased_rows(rows)
    table, said = rate_rows(debiased)
    out.append(Variant("both_orders", *scored(debiased, table, False, _joined(same, said), both_orders)))
    if rows["prob_a"].notna().any():
        calibrated = debiased_rows(rows, calibrate=True)
        table, said = rate_rows(calibrated)
        out.append(Variant("calibrated", *scored(calibrated, table, False, _joined(same, said))))
    else:
        out.append(Variant("calibrated", None, None, "the records carry no prob_a"))
    if reference_controlled is not None:
        styled, target = leaderboard_agreement(controlled, reference_controlled), "the reference's style-controlled ratings"
    else:
        styled, target = None, None
    out.append(Variant("style_controlled", None, styled,
                       "style control adjusts ratings, not single verdicts: no verdict-level agreement; scored against "
                       + (target or "nothing: the reference has no style-controlled ratings")
                       + "; no intervals (the style-controlled fit is not refitted in the bootstrap rounds)", controlled))
    if reference_ratings is None:
        out = [dc_replace(v, leaderboard=None, note=_joined(v.note, "no reference ratings")) for v in out]
    return tuple(out)


def _joined(*notes: str | None) -> str | None:
    return "; ".join(filter(None, notes)) or None


def _both_orders_seen(rows: pd.DataFrame) -> bool:
    """Was some pair judged in both display orders? (a pair's ``flip`` takes both values)"""
    pair, _ = pd.factorize(rows["pair_id"])
    known = pair >= 0
    pair, flip = pair[known], rows["flip"].to_numpy(dtype=bool)[known]
    shown = np.bincount(pair, flip)
    return bool(((shown > 0) & (shown < np.bincount(pair))).any())


def _beats(diffs: np.ndarray, higher: bool) -> bool:
    diffs = diffs[np.isfinite(diffs)]
    if len(diffs) == 0:
        return False
    lo, hi = percentile_interval(diffs)
    return lo > 0 if higher else hi < 0


def variant_rounds(variants: tuple[Variant, ...], reference_rows: pd.DataFrame | None = None,
                   reference_ratings: pd.DataFrame | None = None, reference_board_rows: pd.DataFrame | None = None,
                   n_boot: int = BOOT_ROUNDS, seed: int = 0, board_boot: int | None = None
                   ) -> dict[str, dict[str, np.ndarray]]:
    """Variant -> metric -> its value in every paired bootstrap round (module docstring): items
    resampled for S1/S2 (``n_boot`` rounds), prompts for the leaderboard metrics (``board_boot``
    rounds, ``n_boot`` if None), the same draws for every variant. ``reference_rows`` are those
    :func:`judge_variants` scored the variants against (the per-item sums it kept are reused);
    ``reference_board_rows`` the verdicts the reference's ratings were fitted on, and each
    variant's ``rows`` those of its own ratings (a ``weight`` column where graded verdicts
    were weighted: :func:`analysis.judging.meta_metrics.metric_rounds`)."""
    rounds: dict[str, dict[str, np.ndarray]] = {}
    verdict_level = [v for v in variants if v.agreement is not None and v.rows is not None]
    if reference_rows is not None and len(verdict_level) >= 1:
        sums = {v.name: v.sums if v.sums is not None else agreement_sums(v.rows, reference_rows, v.each_order)
                for v in verdict_level}
        items = functools.reduce(pd.Index.union, (s.index for s in sums.values()))  # sorted: a fixed order of kinds
        if len(items) >= 10:
            # Items with the same sums under every variant are drawn as one kind; keyed jointly, the
            # variants keep sharing each round's draws.
            tables = [frame.reindex(items, fill_value=0.0).to_numpy() for frame in sums.values()]
            for name, totals in zip(sums, paired_totals(tables, len(items), n_boot, seed)):
                with np.errstate(divide="ignore", invalid="ignore"):
                    rounds.setdefault(name, {})["with_ties"] = totals[:, 0] / totals[:, 1]
                    rounds[name]["without_ties"] = totals[:, 2] / totals[:, 3]
    boards = [v for v in variants if v.leaderboard is not None and v.leaderboard.spearman is not None
              and v.rows is not None and v.ratings is not None and v.name != "style_controlled"]
    if reference_board_rows is not None and reference_ratings is not None and boards:
        prompts = rows_prompts(reference_board_rows, *(v.rows for v in boards))
        if len(prompts) >= 10:
            values = metric_rounds([(v.rows, v.ratings) for v in boards], reference_board_rows, reference_ratings,
                                   prompts, n_boot if board_boot is None else board_boot, seed)
            for v, metrics in zip(boards, values):
                rounds.setdefault(v.name, {}).update(metrics)
    return rounds


def with_intervals(variants: tuple[Variant, ...], rounds: dict[str, dict[str, np.ndarray]]) -> tuple[Variant, ...]:
    """Each variant's leaderboard metrics with 95% percentile intervals from its rounds."""
    out = []
    for v in variants:
        mine = rounds.get(v.name, {})
        if v.leaderboard is None or not any(m in mine for m in METRICS):
            out.append(v)
            continue
        intervals = {}
        for m in METRICS:
            values = mine.get(m)
            values = values[np.isfinite(values)] if values is not None else None
            ok = values is not None and getattr(v.leaderboard, m) is not None and len(values) >= len(mine[m]) / 2
            intervals[m] = tuple(float(x) for x in percentile_interval(values)) if ok else None
        out.append(dc_replace(v, leaderboard=dc_replace(v.leaderboard, intervals=intervals)))
    return tuple(out)


def best_variants(variants: tuple[Variant, ...], rounds: dict[str, dict[str, np.ndarray]]) -> dict[str, str | None]:
    """Metric -> the variant the paired bootstrap ``rounds`` (:func:`variant_rounds`) say beats
    every other variant that has the metric, or None when none clearly does."""
    best: dict[str, str | None] = {}
    for metric, higher in _DIRECTION.items():
        scored = [(v.metric(metric), v.name) for v in variants if v.metric(metric) is not None]
        if len(scored) < 2:
            continue
        top = (max if higher else min)(scored, key=lambda t: t[0])[1]
        others = [name for _, name in scored if name != top]
        ok = metric in rounds.get(top, {}) and all(
            metric in rounds.get(o, {}) and _beats(rounds[top][metric] - rounds[o][metric], higher) for o in others)
        best[metric] = top if ok else None
    return best
