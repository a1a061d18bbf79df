"""Bootstraps that resample whole clusters, and a rate's interval when rows of one cluster
are not independent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from analysis.stats.clusters import cluster_codes
from analysis.stats.intervals import percentile_interval, wilson_interval
from analysis.stats.resample import distinct_rows, kind_draws

__all__ = ["MIN_CLUSTERS", "cluster_bootstrap", "cluster_bootstrap_many", "clustered_rate_ci"]


MIN_CLUSTERS = 10  # fewest clusters a bootstrap interval is computed from


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
    # is then a multinomial draw over the distinct rows (analysis.stats.resample: the same
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
