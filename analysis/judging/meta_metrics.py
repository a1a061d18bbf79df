"""How well a judge's leaderboard reproduces the reference's: Arena-Hard-Auto's meta-metrics.

Both leaderboards are Bradley-Terry rating tables with 95% intervals (columns ``model,
rating, lower, upper``, as :func:`analysis.ratings.rate` returns them); only the models
both rate are compared. Following Li et al. 2024, "From Crowdsourced Data to High-Quality
Benchmarks: Arena-Hard and BenchBuilder Pipeline" (sec. 3 and the notebook
``benchmark_for_benchmarks.ipynb`` of arena-hard-auto, commit c39d1b7):

* Spearman's rho and Kendall's tau-b of the two point ratings;
* separability: the share of model pairs whose two judge intervals do not overlap (how
  many of its orderings the judge's leaderboard claims with confidence);
* agreement with confidence: over the model pairs whose *reference* intervals do not
  overlap, 1 when the judge's intervals do not overlap either and it orders the pair as
  the reference does, 0 when they do not overlap and it orders them the other way, 0.5
  when the judge's intervals overlap (it abstains); divided by the number of such pairs;
* pair-rank Brier score: for every model pair (a, b), the judge's probability that a
  ranks below b, ``p = P(X < 0)`` with ``X ~ Normal(r_a - r_b, var_a + var_b)`` from the
  judge's ratings and their variances, scored as ``(p - y)^2`` against the reference's
  order of the two point ratings (``y = 1`` when the reference rates a below b); the mean
  over pairs. 0 is perfect, 0.25 is a coin flip.

Intervals overlap when ``min(upper) - max(lower) > 0`` (touching intervals do not). A
rating's variance is read off its interval as ``((upper - lower) / (2 z))^2``, the
normal approximation the Brier score itself assumes, so whatever produced the interval
(bootstrap percentiles or the sandwich) also sets the variance.

Uncertainty (:func:`leaderboard_intervals`): every metric gets a 95% percentile interval from
a bootstrap that resamples prompts (the unit that repeats across models and raters), the
judge's and the reference's verdicts on a prompt together. Each round refits both
Bradley-Terry leaderboards (ties as half wins, as the report's ratings) and recomputes the
metrics with each rating's interval half-widths held at their full-data values (a resample
of the same size has about the same widths; re-bootstrapping inside every round would cost
a nested bootstrap). Prompts whose count tables, the judge's and the reference's together, are
identical are drawn as one kind (:mod:`analysis.stats.resample`): the same bootstrap in
distribution, at a cost per round that does not grow with the number of prompts.

With fewer than :data:`MIN_MODELS` real models (or placeholder model names such as
LLMBar's ``output_1``/``output_2``, which name a position, not a model) there is no
leaderboard to judge: :func:`leaderboard_agreement` returns no numbers and says why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.stats.resample import paired_totals
from analysis.judgment_table import positions
from analysis.stats import Z95, normal_sf, percentile_interval
from analysis.stats.correlation import kendall_tau, spearman_rho

__all__ = ["METRICS", "MIN_MODELS", "RANKING_MODELS", "LeaderboardAgreement", "few_models_note", "leaderboard_agreement",
           "leaderboard_intervals", "placeholder_models", "reference_ceiling"]

METRICS = ("spearman", "kendall", "separability", "agreement_ci", "brier")
MIN_MODELS = 4  # with three models there are three model pairs: no meta-metric means much
# Below this many models the metrics are given but said not to rank judges: with 5 models a
# Spearman interval of [0.6, 1.0] says nothing, and with 8 close models the interval covered
# its true value in 64.5% of simulated runs.
RANKING_MODELS = 8


def few_models_note(n: int) -> str | None:
    """What the meta-metrics of ``n`` models (at least :data:`MIN_MODELS`, else withheld) say, wherever
    they are printed (the judge's leaderboard and every debiasing variant's): None from
    :data:`RANKING_MODELS` models on."""
    if n >= RANKING_MODELS:
        return None
    return (f"too few models to rank judges ({n} models, fewer than {RANKING_MODELS}): these numbers "
            "describe this judge on these models, not how it ranks others")
_BT_TOL = 1e-10  # a round's leaderboard is fitted when its last step moves no strength by more
_RIDGE = 1e-6  # l2 on the strengths: finite for a round with an unbeaten model, negligible otherwise
BOOT_ROUNDS = 2000  # seeds 0-3 then agree to well within a quarter of each interval's width
# Names that stand for a position in a file, not a model (LLMBar, AlpacaEval without generators).
_PLACEHOLDER = re.compile(r"^(out(put)?[_ -]?\d+|model[_ -]?[ab12]|response[_ -]?[ab12]|[ab])$", re.IGNORECASE)


def placeholder_models(models) -> list[str]:
    """The model names that are placeholders for a position (``output_1``, ``out2``, ...)."""
    return sorted(str(m) for m in models if _PLACEHOLDER.match(str(m)))


@dataclass(frozen=True)
class LeaderboardAgreement:
    n_models: int
    spearman: float | None
    kendall: float | None
    separability: float | None
    agreement_ci: float | None
    brier: float | None
    n_pairs: int  # model pairs compared
    n_separated_reference: int  # pairs the reference separates (agreement_ci's denominator)
    note: str | None = None
    intervals: dict[str, tuple[float, float] | None] | None = None  # metric -> 95% interval
    interval_method: str | None = None
    n_prompts: int = 0  # prompts the bootstrap resampled
    # The reference against itself (:func:`reference_ceiling`): each metric's mean over random
    # halves of its prompts, the most a judge could reach at this noise; None below RANKING_MODELS.
    ceiling: dict[str, float | None] | None = None


def _overlap(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Pairwise: do the intervals of models i and j overlap? (n x n, symmetric)."""
    return np.minimum(upper[:, None], upper[None, :]) - np.maximum(lower[:, None], lower[None, :]) > 0


def _board(judge: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """The models both tables rate, in name order, with both tables' columns (``_j``, ``_r``)."""
    cols = ["model", "rating", "lower", "upper"]
    # The tables rate each model once: an inner join by name is a lookup (pandas' merge cost
    # milliseconds on eight rows, and the bootstraps build boards by the dozen).
    mine, theirs = judge["model"].to_numpy(dtype=object), reference["model"].to_numpy(dtype=object)
    if len(set(mine)) < len(mine) or len(set(theirs)) < len(theirs):
        return judge[cols].merge(reference[cols], on="model", suffixes=("_j", "_r")).sort_values("model")
    at = {m: k for k, m in enumerate(theirs)}
    both = sorted((m, k, at[m]) for k, m in enumerate(mine) if m in at)
    j_at, r_at = [k for _, k, _ in both], [k for _, _, k in both]
    out = {"model": judge["model"].iloc[j_at].reset_index(drop=True)}
    out.update({f"{c}_j": judge[c].to_numpy()[j_at] for c in cols[1:]})
    out.update({f"{c}_r": reference[c].to_numpy()[r_at] for c in cols[1:]})
    return pd.DataFrame(out)


def leaderboard_agreement(judge: pd.DataFrame | None, reference: pd.DataFrame | None) -> LeaderboardAgreement:
    """The meta-metrics of ``judge``'s leaderboard against ``reference``'s (module docstring)."""
    if judge is None or reference is None:
        return LeaderboardAgreement(0, None, None, None, None, None, 0, 0, "no rating table for the judge or the reference")
    merged = _board(judge, reference)
    n = len(merged)
    fake = placeholder_models(merged["model"])
    if fake:
        return LeaderboardAgreement(n, None, None, None, None, None, 0, 0, (
            f"no leaderboard: the 'models' ({', '.join(fake)}) are placeholders for a position in the file, "
            "not models"))
    if n < MIN_MODELS:
        return LeaderboardAgreement(n, None, None, None, None, None, 0, 0, (
            f"no leaderboard meta-metrics: {n} model(s) rated by both, fewer than {MIN_MODELS} (with so few model "
            "pairs a rank correlation or a Brier score says nothing about the judge)"))
    rj, lj, uj = (merged[f"{c}_j"].to_numpy(dtype=float) for c in ("rating", "lower", "upper"))
    rr, lr, ur = (merged[f"{c}_r"].to_numpy(dtype=float) for c in ("rating", "lower", "upper"))
    i, j = np.triu_indices(n, 1)
    judge_overlap = _overlap(lj, uj)[i, j]
    ref_overlap = _overlap(lr, ur)[i, j]
    separability = float(1.0 - judge_overlap.mean())
    separated = ~ref_overlap
    notes = []
    if few_models_note(n):
        notes.append(few_models_note(n))
    if separated.any():
        same_order = np.sign(rj[i] - rj[j]) == np.sign(rr[i] - rr[j])
        score = np.where(judge_overlap, 0.5, same_order.astype(float))[separated]
        agreement_ci = float(score.mean())
    else:
        agreement_ci = None
        notes.append("agreement with confidence: the reference's intervals overlap for every model pair")
    var = ((uj - lj) / (2 * Z95)) ** 2
    sd = np.sqrt(var[i] + var[j])
    if np.all(np.isfinite(sd)) and np.all(sd > 0):
        p_below = normal_sf((rj[i] - rj[j]) / sd)
        y = (rr[i] < rr[j]).astype(float)
        brier = float(np.mean((p_below - y) ** 2))
    else:
        brier = None
        notes.append("Brier score: a judge rating has no interval")
    spearman = kendall = None
    if n >= 3:
        spearman = spearman_rho(rj, rr)
        kendall = kendall_tau(rj, rr)
    else:
        notes.append("rank correlations need three or more models")
    return LeaderboardAgreement(
        n_models=n, spearman=_finite(spearman), kendall=_finite(kendall), separability=separability,
        agreement_ci=agreement_ci, brier=brier, n_pairs=len(i), n_separated_reference=int(separated.sum()),
        note="; ".join(notes) or None,
    )


def _finite(x: float | None) -> float | None:
    # A constant leaderboard has no rank correlation (scipy returns NaN).
    return None if x is None or not np.isfinite(x) else x


def _batch_metrics(rj, hj_lo, hj_hi, rr, hr_lo, hr_hi) -> dict[str, np.ndarray]:
    """The five metrics for a batch of leaderboards: ``rj``/``rr`` are (rounds x models)
    ratings, the ``h*`` arrays each model's distance from its rating to its lower and upper
    bound (held fixed). The same definitions as :func:`leaderboard_agreement`."""
    n = rj.shape[1]
    i, j = np.triu_indices(n, 1)
    lj, uj, lr, ur = rj - hj_lo, rj + hj_hi, rr - hr_lo, rr + hr_hi
    judge_overlap = (np.minimum(uj[:, i], uj[:, j]) - np.maximum(lj[:, i], lj[:, j])) > 0
    ref_overlap = (np.minimum(ur[:, i], ur[:, j]) - np.maximum(lr[:, i], lr[:, j])) > 0
    dj, dr = np.sign(rj[:, i] - rj[:, j]), np.sign(rr[:, i] - rr[:, j])
    score = np.where(judge_overlap, 0.5, (dj == dr).astype(float))
    separated = ~ref_overlap
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement_ci = np.where(separated.any(axis=1), (score * separated).sum(axis=1) / separated.sum(axis=1), np.nan)
    sd = np.sqrt((((hj_lo + hj_hi) / (2 * Z95)) ** 2)[i] + (((hj_lo + hj_hi) / (2 * Z95)) ** 2)[j])
    with np.errstate(divide="ignore", invalid="ignore"):
        p_below = np.where(sd > 0, normal_sf((rj[:, i] - rj[:, j]) / sd), np.nan)
    brier = np.mean((p_below - (rr[:, i] < rr[:, j])) ** 2, axis=1)
    return {"spearman": spearman_rho(rj, rr), "kendall": kendall_tau(rj, rr),
            "separability": 1.0 - judge_overlap.mean(axis=1), "agreement_ci": agreement_ci, "brier": brier}


def _bt_batch(totals: np.ndarray, i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Bradley-Terry strengths (natural log-odds, mean 0) for a batch of count tables, by the
    ratings' Bradley-Terry family (:func:`analysis.ratings.bootstrap.refit_rounds`).

    ``totals`` is (rounds x 2 x pairs): model i's and model j's wins (ties as half) per model
    pair. A small ridge (1e-6) keeps a round whose data leave a model unbeaten finite (such a
    round has no MLE; its percentile rank is what counts). Where the data themselves have no MLE
    (a model that only won or only lost in every round), the ratings are the early estimate
    (:func:`analysis.ratings.votes.rate_battles`), and the rounds are fitted under the same prior
    (:func:`analysis.ratings.bt.early_l2`), so they scatter around the point they bound.
    Every round starts from the fit to the rounds' mean table and takes chord steps from it (a
    round's information differs from the mean's by the resampling noise); a round they do not
    settle is fitted by Newton's method.
    """
    from analysis.ratings.bootstrap import refit_rounds
    from analysis.ratings.bt import early_l2, fit_counts
    from analysis.ratings.counts import PairCounts

    if not len(totals):
        return np.zeros((0, n))
    wins_i, wins_j = totals[:, 0], totals[:, 1]
    no_ties = np.zeros_like(wins_i)
    mean = PairCounts(pd.RangeIndex(n), i, j, wins_i.mean(axis=0), wins_j.mean(axis=0), no_ties[0],
                      n_battles=np.zeros(n, dtype=np.int64))
    prior = early_l2(mean)
    fit = fit_counts(mean, l2=_RIDGE if prior is None else prior, tol=_BT_TOL)
    theta, _ = refit_rounds(fit, wins_i, wins_j, no_ties, tol=_BT_TOL)
    return theta


def _coded(index: pd.Index, column: pd.Series) -> np.ndarray:
    """:func:`analysis.judgment_table.positions` of a column, looked up once per distinct value (a
    column of a few models or prompts repeated over tens of thousands of rows)."""
    codes, distinct = pd.factorize(column.to_numpy())
    return np.append(positions(index, distinct), -1)[codes]


def _count_entries(rows: pd.DataFrame, models: pd.Index, prompts: pd.Index, i, j) -> tuple:
    """Per prompt, each model pair's wins of its first and second model (ties as half, and
    each row weighted by its ``weight`` column when there is one), in the long form
    :func:`analysis.stats.resample.paired_totals` takes: column ``q`` for model pair ``q``'s first
    model, ``len(i) + q`` for its second."""
    a, b = _coded(models, rows["model_a"]), _coded(models, rows["model_b"])
    p = _coded(prompts, rows["prompt"])
    winner, said = pd.factorize(rows["winner"].to_numpy())
    keep = (a >= 0) & (b >= 0) & (a != b) & (p >= 0) & (winner >= 0)
    a, b, p, winner = a[keep], b[keep], p[keep], winner[keep]
    weight = rows["weight"].to_numpy(dtype=float)[keep] if "weight" in rows else np.ones(len(a))
    a_won, b_won = (np.asarray(said) == "model_a")[winner], (np.asarray(said) == "model_b")[winner]
    a_score = np.where(a_won, 1.0, np.where(b_won, 0.0, 0.5)) * weight
    b_score = weight - a_score
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo_score = np.where(a < b, a_score, b_score)
    pair_of = np.full((len(models), len(models)), -1)
    pair_of[i, j] = np.arange(len(i))
    col = pair_of[lo, hi]
    return (np.r_[p, p], np.r_[col, len(i) + col], np.r_[lo_score, (a_score + b_score) - lo_score], 2 * len(i))


def metric_rounds(boards: Sequence[tuple[pd.DataFrame, pd.DataFrame]], reference_rows: pd.DataFrame,
                  reference: pd.DataFrame, prompts: pd.Index, n_boot: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Each metric in every bootstrap round, for each ``(judge_rows, judge_table)`` board
    against the reference: prompts resampled, both leaderboards refitted on the drawn prompts,
    interval widths held at the tables' own.

    Every board and the reference are summed over the same draws (a paired bootstrap: the
    variants of :mod:`analysis.judging.variants` are compared round by round). A prompt
    contributes its count tables; prompts whose tables are identical, jointly over every
    board and the reference, are drawn as one kind (:func:`analysis.stats.resample.paired_totals`),
    so a round costs O(kinds), never O(prompts).
    """
    from analysis.ratings.bt import ELO_SCALE

    setups, tables, reference_at = [], [], {}
    for rows, table in boards:
        merged = _board(table, reference)
        models = pd.Index(merged["model"])
        i, j = np.triu_indices(len(models), 1)
        # The reference's counts are over the models this board rates (its BT fit needs no others);
        # boards rating the same models share them.
        if tuple(models) not in reference_at:
            reference_at[tuple(models)] = len(tables)
            tables.append(_count_entries(reference_rows, models, prompts, i, j))
        setups.append((merged, i, j, len(tables), reference_at[tuple(models)]))
        tables.append(_count_entries(rows, models, prompts, i, j))
    totals = paired_totals(tables, len(prompts), n_boot, seed)
    fitted: dict[int, np.ndarray] = {}  # table -> its leaderboards in every round (the reference's fitted once)
    out = []
    for merged, i, j, mine, theirs in setups:
        n = len(merged)
        for k in (mine, theirs):
            if k not in fitted:
                fitted[k] = _bt_batch(totals[k].reshape(n_boot, 2, len(i)), i, j, n) * ELO_SCALE
        ratings = [fitted[mine], fitted[theirs]]
        half = {s: (merged[f"rating{s}"].to_numpy() - merged[f"lower{s}"].to_numpy(),
                    merged[f"upper{s}"].to_numpy() - merged[f"rating{s}"].to_numpy()) for s in ("_j", "_r")}
        out.append(_batch_metrics(ratings[0], *half["_j"], ratings[1], *half["_r"]))
    return out


def rows_prompts(*frames: pd.DataFrame) -> pd.Index:
    return pd.Index(pd.unique(pd.concat([f["prompt"] for f in frames]).dropna()))


def leaderboard_intervals(point: LeaderboardAgreement, judge_rows: pd.DataFrame, reference_rows: pd.DataFrame,
                          judge: pd.DataFrame, reference: pd.DataFrame, n_boot: int = BOOT_ROUNDS,
                          seed: int = 0, level: float = 0.95,
                          rounds: dict[str, np.ndarray] | None = None) -> LeaderboardAgreement:
    """``point`` with a percentile interval for each metric (module docstring).

    ``judge_rows`` / ``reference_rows`` are the verdicts the two rating tables were fitted on
    (columns ``prompt, model_a, model_b, winner`` and optionally ``weight``); ``judge`` /
    ``reference`` those tables (``model, rating, lower, upper``, on the Elo scale).
    ``rounds``: the metrics' values in the ``n_boot`` rounds of a paired bootstrap that already
    resampled these prompts with this ``seed`` (:func:`metric_rounds` of this board among
    others, as :func:`analysis.judging.variants.variant_rounds` draws them), read instead of
    drawing again: a table that prints this board beside others then shows the same interval.
    """
    if point.spearman is None and point.separability is None:
        return point
    prompts = rows_prompts(judge_rows, reference_rows)
    if len(prompts) < 10:
        return replace(point, note="; ".join(filter(None, [point.note, "too few prompts for intervals"])))
    have = rounds is not None and all(m in rounds and len(rounds[m]) == n_boot for m in METRICS)
    values = rounds if have else metric_rounds([(judge_rows, judge)], reference_rows, reference, prompts, n_boot,
                                                seed)[0]
    intervals = {}
    for metric in METRICS:
        v = values[metric][np.isfinite(values[metric])]
        if getattr(point, metric) is None or len(v) < n_boot / 2:
            intervals[metric] = None
        else:
            lo, hi = percentile_interval(v, level)
            intervals[metric] = (float(lo), float(hi))
    method = (f"bootstrap percentile {level:.0%}, {n_boot} rounds resampling {len(prompts)} prompts (judge and "
              f"reference together), seed {seed}; each round refits both Bradley-Terry leaderboards with the ratings' "
              "interval widths held at their full-data values")
    return replace(point, intervals=intervals, interval_method=method, n_prompts=len(prompts))


def reference_ceiling(reference_rows: pd.DataFrame, n_splits: int = 10, seed: int = 0,
                      cluster: str | None = None) -> dict[str, float | None] | None:
    """The reference's agreement with itself: its prompts split at random into two halves, a
    Bradley-Terry leaderboard fitted on each by the rating rule every caller uses
    (:func:`analysis.ratings.votes.rate_battles`: ties as half wins, sandwich intervals, the
    early estimate where a half has no MLE), and the meta-metrics of one half against the other,
    averaged over ``n_splits`` splits. A judge's metrics read against this ceiling separate the
    reference's noise from the judge's error (half the prompts: a conservative ceiling).
    ``cluster``: the unit the halves' intervals treat as independent, as the leaderboards'
    (:func:`analysis.stats.cluster_groups`; None: chosen for each half).
    None with fewer than :data:`RANKING_MODELS` models or a split whose halves cannot be fitted."""
    from analysis.ratings.votes import rate_battles

    prompts = rows_prompts(reference_rows)
    models = pd.unique(pd.concat([reference_rows["model_a"], reference_rows["model_b"]]))
    if len(models) < RANKING_MODELS or len(prompts) < 20:
        return None
    rng = np.random.default_rng(seed)
    columns = [c for c in ("model_a", "model_b", "winner", "pair_id", "prompt") if c in reference_rows.columns]
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    for _ in range(n_splits):
        half = positions(pd.Index(rng.permutation(prompts)[: len(prompts) // 2]), reference_rows["prompt"]) >= 0
        try:
            a = rate_battles(reference_rows.loc[half, columns], "bt", cluster=cluster).result.table
            b = rate_battles(reference_rows.loc[~half, columns], "bt", cluster=cluster).result.table
        except ValueError:  # a half whose comparisons are disconnected, or a fit that failed (FitError)
            return None
        board = leaderboard_agreement(a, b)
        for m in METRICS:
            if getattr(board, m) is not None:
                values[m].append(getattr(board, m))
    return {m: float(np.mean(v)) if v else None for m, v in values.items()}
