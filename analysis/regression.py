"""The statistical core: how the data repeat, one logit fit, one sandwich, one interval.

Every estimator of the lab (Bradley-Terry and its style-controlled form, PPI, a judge's
worth, self-preference, agreement, the leaderboard meta-metrics) takes from here:

* **the cluster** (:func:`cluster_groups`): the unit that repeats. In a prompt set each
  model's answer to a prompt sits in several pairs and a prompt's difficulty touches all of
  them, so whenever a prompt carries more than one pair the default unit is the prompt
  (``prompt_id``, else the prompt text); otherwise it is the pair (``pair_id``: several
  people on one pair, a judge seeing both orders). ``cluster="pair"`` or ``"prompt"`` forces
  one. Sandwich covariances sum scores within a cluster; bootstraps resample clusters.
* **the fit** (:func:`fit_logit`): a (fractional, optionally ridge-penalised) logistic
  regression by damped Newton, which is also row-level Bradley-Terry (:func:`contrast`
  columns, +1 for one model, -1 for the other). A fit that does not converge, or whose data
  are separated, raises :class:`FitError` instead of returning numbers.
* **the covariance** (:func:`sandwich`): ``A^-1 B A^-1`` with ``B`` the outer product of
  per-cluster score sums (Liang & Zeger 1986; White 1982 for the fractional logit,
  Papke & Wooldridge 1996), with statsmodels' small-sample factor G/(G-1) (N-1)/(N-K) when
  asked for (``Logit(...).fit(cov_type="cluster")``, the slow twin of the tests).
* **the interval** (:func:`percentile_interval`): percentiles of bootstrap replicates
  (:func:`log_normal_interval` for a positive ratio whose replicates are shifted and skewed);
  :func:`cluster_bootstrap` resamples whole clusters, :func:`clustered_rate_ci` is a rate's
  interval (Wilson's when every cluster holds one trial).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.resample import distinct_rows, kind_draws

__all__ = ["CLUSTERS", "Z95", "Clustering", "FitError", "LogitFit", "cluster_bootstrap", "cluster_bootstrap_many",
           "cluster_codes", "cluster_groups", "clustered_rate_ci", "contrast", "fit_logit", "item_clusters",
           "log_normal_interval", "per_cluster",
           "percentile_interval", "row_clusters", "sandwich", "strength_columns", "wilson_interval"]

Z95 = 1.959963984540054
MIN_CLUSTERS = 10  # fewest clusters a bootstrap interval is computed from
CLUSTERS = ("pair", "prompt")


class FitError(ValueError, RuntimeError):
    """A fit that did not converge or whose estimate does not exist (separated data)."""


def cluster_codes(groups) -> np.ndarray:
    """Integer cluster codes of ``groups``; a row without a group (None, NaN) is a cluster of
    its own rather than one cluster of all the missing ones."""
    codes, uniques = pd.factorize(pd.Series(groups, copy=False))
    alone = codes < 0
    codes[alone] = len(uniques) + np.arange(alone.sum())
    return codes


@dataclass(frozen=True)
class Clustering:
    """Which unit a frame's intervals treat as independent: ``kind`` is ``"prompt"``,
    ``"pair"`` or ``"none"`` (every row its own); ``groups`` one value per row (None for
    ``"none"``); ``n`` the number of clusters."""

    kind: str
    groups: pd.Series | None
    n: int

    def describe(self) -> str:
        if self.kind == "none":
            return "every vote independent (no pair_id)"
        if self.kind == "prompt":
            return f"clustered by prompt ({self.n} prompt{'' if self.n == 1 else 's'})"
        return f"clustered by pair_id ({self.n} pair{'' if self.n == 1 else 's'})"


def _prompt_column(frame: pd.DataFrame) -> pd.Series | None:
    prompt = None
    for name in ("prompt_id", "prompt"):
        if name in frame.columns:
            prompt = frame[name] if prompt is None else prompt.fillna(frame[name])
    if prompt is None or prompt.isna().all():
        return None
    return prompt


def cluster_groups(frame: pd.DataFrame, cluster: str | None = None) -> Clustering:
    """The clusters of a battle frame (module docstring).

    ``cluster`` None picks the prompt when some prompt carries more than one pair (more than
    one ``pair_id``, or without pair ids more than one pair of models), else the pair, and
    without pair ids no cluster (every vote independent).
    Asking for ``"prompt"`` on a frame without prompts, or ``"pair"`` without pair ids, raises.
    """
    if cluster not in (None, *CLUSTERS):
        raise ValueError(f"unknown cluster {cluster!r}; use one of {', '.join(CLUSTERS)}")
    pair = frame["pair_id"] if "pair_id" in frame.columns and frame["pair_id"].notna().any() else None
    prompt = _prompt_column(frame)
    if cluster is None:
        if prompt is not None:
            if pair is not None:
                per_prompt = pd.DataFrame({"p": prompt.to_numpy(), "k": pair.to_numpy()}).dropna()
            else:
                lo = np.minimum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                hi = np.maximum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                per_prompt = pd.DataFrame({"p": prompt.to_numpy(), "k": (lo + "\x00" + hi).to_numpy()}).dropna()
            if len(per_prompt) and per_prompt.groupby("p")["k"].nunique().max() > 1:
                cluster = "prompt"
        if cluster is None and pair is not None:
            cluster = "pair"
    if cluster is None:
        return Clustering("none", None, len(frame))
    groups = prompt if cluster == "prompt" else pair
    if groups is None:
        need = "prompt_id or prompt" if cluster == "prompt" else "pair_id"
        raise ValueError(f"--cluster {cluster}: the votes carry no {need}")
    return Clustering(cluster, groups, int(cluster_codes(groups).max(initial=-1)) + 1)


def row_clusters(rows: pd.DataFrame) -> pd.Series:
    """The cluster of each judgment-table row: its ``cluster`` column where the report set one
    (:func:`cluster_groups`' choice, coded), else its ``pair_id``."""
    return rows["cluster"] if "cluster" in rows.columns else rows["pair_id"]


def item_clusters(rows: pd.DataFrame, items) -> np.ndarray | None:
    """The cluster of each item (a ``pair_id`` of ``rows``), or None when the items are the
    clusters (no ``cluster`` column): per-item sums are summed per cluster before a bootstrap."""
    if "cluster" not in rows.columns:
        return None
    of_item = rows.drop_duplicates("pair_id").set_index("pair_id")["cluster"]
    return cluster_codes(of_item.reindex(pd.Index(items)).to_numpy())


def per_cluster(sums: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """``sums`` (items x k) summed within each item's cluster; unchanged without clusters."""
    if clusters is None:
        return sums
    n = int(clusters.max(initial=-1)) + 1
    return np.stack([np.bincount(clusters, sums[:, c], n) for c in range(sums.shape[1])], axis=1)


def sandwich(bread: np.ndarray, scores: np.ndarray, groups=None, *, small_sample: bool = False) -> np.ndarray:
    """``bread @ B @ bread.T`` with ``B`` the outer product of ``scores`` (rows x params)
    summed within each cluster of ``groups`` (None: every row its own cluster).

    ``small_sample`` multiplies by G/(G-1) (N-1)/(N-K), statsmodels' ``use_correction``.
    """
    scores = np.asarray(scores, dtype=float)
    n, k = scores.shape
    if groups is None:
        sums, g = scores, n
    else:
        codes = cluster_codes(groups)
        g_all = int(codes.max(initial=-1)) + 1
        sums = np.zeros((g_all, k))
        for c in range(k):
            sums[:, c] = np.bincount(codes, scores[:, c], g_all)
        g = int((np.bincount(codes, minlength=g_all) > 0).sum())
    factor = g / (g - 1) * (n - 1) / (n - k) if small_sample and g > 1 and n > k else 1.0
    return factor * bread @ (sums.T @ sums) @ bread.T


@dataclass(frozen=True)
class LogitFit:
    """A logit's coefficients, their sandwich covariance (clustered as asked) and the
    bread (inverse penalised information) the covariance was made from."""

    params: np.ndarray
    cov: np.ndarray
    bread: np.ndarray
    iterations: int

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    @property
    def pvalues(self) -> np.ndarray:
        from scipy import stats

        with np.errstate(divide="ignore", invalid="ignore"):
            return 2 * stats.norm.sf(np.abs(self.params / self.bse))

    def interval(self, i: int, level: float = 0.95) -> tuple[float, float]:
        from scipy import stats

        z = Z95 if level == 0.95 else float(stats.norm.ppf(0.5 + level / 2))
        return (float(self.params[i] - z * self.bse[i]), float(self.params[i] + z * self.bse[i]))


def _loss(X, y, w, beta, penalty, centre) -> float:
    eta = X @ beta
    value = (w * (y * np.logaddexp(0, -eta) + (1 - y) * np.logaddexp(0, eta))).sum()
    d = beta - centre
    return float(value + 0.5 * (penalty * d) @ d)


def fit_logit(
    X: np.ndarray,
    y: np.ndarray,
    groups=None,
    *,
    weights: np.ndarray | None = None,
    penalty: np.ndarray | float | None = None,
    centre: np.ndarray | None = None,
    centred: int = 0,
    small_sample: bool = True,
    check_certainty: bool = True,
    tol: float = 1e-9,
    max_iter: int = 100,
) -> LogitFit:
    """Logistic regression of ``y`` (0/1 or a probability: the fractional logit) on ``X``,
    by damped Newton, with the sandwich covariance clustered by ``groups``.

    ``penalty`` (per column or one number) adds ``penalty/2 (beta - centre)^2``: a ridge
    (FastChat's style control) or a Gaussian prior (AlpacaEval's length control), counted
    as known in the covariance. ``centred`` > 0 says the first ``centred`` columns are
    Bradley-Terry indicators of every model, identified only up to a constant: their mean is
    held at 0 (the lift of :mod:`analysis.ratings.bt`). ``weights`` multiply each row's
    contribution. ``small_sample`` is statsmodels' correction (:func:`sandwich`).

    Raises :class:`FitError` when Newton does not converge, the estimates diverge, every
    0/1 outcome is the same, or (``check_certainty``) some fitted value is within 1e-6 of 0
    or 1 for 0/1 outcomes (quasi-separation: the estimate does not exist).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, k = X.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    pen = np.zeros(k) if penalty is None else np.broadcast_to(np.asarray(penalty, dtype=float), (k,)).copy()
    mid = np.zeros(k) if centre is None else np.asarray(centre, dtype=float)
    lift = np.zeros((k, k))
    if centred:
        lift[:centred, :centred] = 1.0
    binary = bool(np.all((y == 0) | (y == 1)))
    if n and binary and np.all(y == y[0]) and not np.all(pen > 0):
        raise FitError("separated data: every outcome is the same")
    beta = mid.copy()
    current = _loss(X, y, w, beta, pen, mid)
    for iteration in range(1, max_iter + 1):
        p = 1.0 / (1.0 + np.exp(-(X @ beta)))
        gradient = X.T @ (w * (y - p)) - pen * (beta - mid)
        information = (X * (w * p * (1 - p))[:, None]).T @ X + np.diag(pen)
        try:
            step = np.linalg.solve(information + lift, gradient)
        except np.linalg.LinAlgError:
            raise FitError("the fit failed (singular information: a degenerate design or separated data)") from None
        scale = 1.0
        # The loss is convex: halving a step until it does not increase guarantees progress.
        while True:
            candidate = beta + scale * step
            value = _loss(X, y, w, candidate, pen, mid)
            if value <= current + 1e-12 * abs(current) or scale < 1e-10:
                break
            scale /= 2
        beta, current = candidate, value
        if np.max(np.abs(scale * step), initial=0.0) < tol:
            break
        if np.max(np.abs(beta), initial=0.0) > 50:
            raise FitError("the fit diverges (separated data: some outcome is predicted with certainty)")
    else:
        raise FitError(f"the fit did not converge in {max_iter} Newton steps (separated data or a degenerate design)")
    if not np.all(np.isfinite(beta)):
        raise FitError("the fit produced non-finite estimates")
    p = 1.0 / (1.0 + np.exp(-(X @ beta)))
    if check_certainty and binary and not pen.any() and np.any((p < 1e-6) | (p > 1 - 1e-6)):
        raise FitError("quasi-separated data: some outcomes are predicted with certainty")
    information = (X * (w * p * (1 - p))[:, None]).T @ X + np.diag(pen)
    try:
        bread = np.linalg.inv(information + lift)
    except np.linalg.LinAlgError:
        raise FitError("the fit failed (singular information)") from None
    if centred:
        bread = bread - lift / centred**2
    cov = sandwich(bread, X * (w * (y - p))[:, None], groups, small_sample=small_sample)
    return LogitFit(beta, cov, bread, iteration)


def contrast(x: np.ndarray, y: np.ndarray, n_models: int, baseline: int | None = 0) -> np.ndarray:
    """Bradley-Terry columns of battles between models coded ``x`` and ``y``: +1 in ``x``'s
    column, -1 in ``y``'s; ``baseline``'s column left out (only differences are identified),
    or every column kept with ``baseline=None`` (then fit with ``centred``)."""
    out = np.zeros((len(x), n_models))
    at = np.arange(len(x))
    np.add.at(out, (at, np.asarray(x)), 1.0)
    np.add.at(out, (at, np.asarray(y)), -1.0)
    return out if baseline is None else np.delete(out, baseline, axis=1)


def strength_columns(rows: pd.DataFrame) -> np.ndarray:
    """Bradley-Terry strength columns of a logit on shown-order outcomes: +1 in the column of
    the first-shown model, -1 in the second's; the most-rated model is the baseline and
    has no column (only differences of strengths are identified)."""
    counts = pd.concat([rows["model_a"], rows["model_b"]]).value_counts()
    others = pd.Index(sorted(set(counts.index) - {counts.index[0]}))
    out = np.zeros((len(rows), len(others)))
    at = np.arange(len(rows))
    for column, sign in (("model_a", 1.0), ("model_b", -1.0)):
        index = others.get_indexer(rows[column])
        out[at[index >= 0], index[index >= 0]] += sign
    return out


def percentile_interval(samples, level: float = 0.95, axis: int = 0, *, nan: bool = False):
    """The percentile bootstrap interval (Efron & Tibshirani 1993, ch. 13) of ``samples``
    along ``axis``: ``(lower, upper)``, arrays for several statistics; ``nan`` ignores NaN."""
    alpha = 100 * (1 - level) / 2
    take = np.nanpercentile if nan else np.percentile
    lo, hi = take(np.asarray(samples, dtype=float), [alpha, 100 - alpha], axis=axis)
    return lo, hi



def log_normal_interval(samples, estimate: float, level: float = 0.95, n_infinite: int = 0
                        ) -> tuple[float, float] | None:
    """``estimate * exp(-+ z * s)``: a normal interval on the log scale (the delta method for a
    positive ratio) whose standard error ``s`` is the bootstrap replicates' spread of
    ``log(samples)``, read robustly as their interquartile range over 1.349 (the normal's;
    Efron & Tibshirani 1993, sec. 6 and 13.3). A judge's worth is such a ratio: its replicates
    sit above its estimate (each refits the judge's weight on a resample and overfits it a
    little more) and in sparse designs a few replicates, near-separated for people alone, run
    far out; the percentile interval followed the first (in tests/test_worth_coverage.py's sparse
    design it lay above the true ratio in 7.5% of runs), the bias-corrected one over-corrected
    it (below in 10%) and a plain standard deviation follows the second. ``n_infinite`` more
    replicates are infinite (a resample whose denominator does not exist): they take the top of
    the order instead of being left out, which would read the quartiles low. None without two
    positive finite replicates, without a positive estimate, or when the upper quartile is
    infinite (about a quarter of the replicates or more)."""
    from scipy.stats import norm

    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples) & (samples > 0)]
    if len(samples) < 2 or not estimate > 0:
        return None
    logs = np.r_[np.sort(np.log(samples)), np.full(n_infinite, np.inf)]
    position = (len(logs) - 1) * np.array([0.25, 0.75])  # np.percentile's (linear) positions
    below, share = np.floor(position).astype(int), position % 1
    above = np.minimum(below + 1, len(logs) - 1)
    if not np.isfinite(logs[above[1]] if share[1] > 0 else logs[below[1]]):
        return None
    q1, q3 = logs[below] + share * (logs[above] - logs[below])
    half = norm.ppf(0.5 + level / 2) * (q3 - q1) / (2 * norm.ppf(0.75))
    return float(estimate * np.exp(-half)), float(estimate * np.exp(half))


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (Wilson 1927); None when n == 0."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def cluster_bootstrap(
    cluster_sums: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of a statistic of column totals, resampling whole clusters.

    ``cluster_sums`` is (clusters x k): each row the totals one cluster (a ``pair_id``)
    contributes; ``statistic`` maps an (n x k) array of resampled totals to n values.
    Resampling pairs rather than records keeps the dependence between votes on the same
    pair (Efron & Tibshirani 1993, ch. 6; Field & Welsh 2007 for clustered data).
    Replicates whose statistic is undefined (NaN) are dropped; None if most are, or if
    there are fewer than :data:`MIN_CLUSTERS` clusters (a percentile interval from a
    handful of pairs is an artefact, not an interval).
    """
    return cluster_bootstrap_many(cluster_sums, [statistic], n_boot, seed, level)[0]


def cluster_bootstrap_many(
    cluster_sums: np.ndarray,
    statistics: Sequence[Callable[[np.ndarray], np.ndarray]],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[tuple[float, float] | None]:
    """:func:`cluster_bootstrap` for several statistics on the same resamples."""
    sums = np.asarray(cluster_sums, dtype=float)
    k = len(sums)
    if k < MIN_CLUSTERS:
        return [None] * len(statistics)
    rng = np.random.default_rng(seed)
    values: list[list[np.ndarray]] = [[] for _ in statistics]
    # Clusters usually contribute a handful of distinct count rows; resampling k clusters
    # is then a multinomial draw over the distinct rows (analysis.resample: the same
    # distribution, far cheaper).
    rows, counts = distinct_rows(sums)
    if len(rows) <= 2000:
        totals = np.concatenate([draws @ rows for draws in kind_draws(counts, n_boot, rng, sums.shape[1])])
        for out, statistic in zip(values, statistics):
            out.append(statistic(totals))
    else:
        # Chunks bound the gathered (chunk x clusters x columns) array at about 50 MB.
        chunk = max(1, min(n_boot, 6_000_000 // (k * sums.shape[1])))
        done = 0
        while done < n_boot:
            size = min(chunk, n_boot - done)
            totals = sums[rng.integers(0, k, size=(size, k))].sum(axis=1)
            for out, statistic in zip(values, statistics):
                out.append(statistic(totals))
            done += size
    intervals = []
    for out in values:
        stats = np.concatenate(out)
        stats = stats[np.isfinite(stats)]
        if len(stats) < n_boot / 2:
            intervals.append(None)
            continue
        lo, hi = percentile_interval(stats, level)
        intervals.append((float(lo), float(hi)))
    return intervals


def clustered_rate_ci(
    successes: np.ndarray, trials: np.ndarray, groups, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float] | None:
    """Interval for ``sum(successes) / sum(trials)`` when rows of one group (a ``pair_id``)
    are not independent: several people voting on one pair, a judge seeing both orders.

    Groups holding one trial each are independent trials: Wilson's interval. Otherwise
    whole groups are resampled (:func:`cluster_bootstrap`); with fewer than
    :data:`MIN_CLUSTERS` groups, Wilson's interval with the number of groups as its n (the
    conservative design-effect correction of Kish 1965, as for consistency).
    """
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    n = trials.sum()
    if n == 0:
        return None
    codes = cluster_codes(groups)
    per_group = np.c_[np.bincount(codes, successes), np.bincount(codes, trials)]
    per_group = per_group[per_group[:, 1] > 0]
    if per_group[:, 1].max() <= 1:
        return wilson_interval(successes.sum(), int(n))
    ci = cluster_bootstrap(per_group, lambda t: t[:, 0] / t[:, 1], n_boot=n_boot, seed=seed)
    if ci is None:
        k = len(per_group)
        return wilson_interval(successes.sum() / n * k, k)
    return ci
