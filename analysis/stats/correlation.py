"""Rank correlations of two rankings: Spearman's rho and Kendall's tau-b, of one pair of
rankings or of a batch (one pair a row, as a bootstrap's rounds).

Written here rather than taken from ``scipy.stats`` (the tests' reference) for its import,
most of a second in the report's main process. Both are the textbook statistics, on a few
hundred models at most: rho is Pearson's correlation of the average ranks (Spearman 1904),
tau-b counts concordant less discordant pairs over the pairs untied in each ranking (Kendall
1945); both are NaN where a ranking is constant.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["average_ranks", "kendall_tau", "spearman_rho"]


def average_ranks(x) -> np.ndarray:
    """Ranks from 1 along the last axis, ties sharing the mean of their places."""
    x = np.asarray(x, dtype=float)
    return pd.DataFrame(x.reshape(-1, x.shape[-1])).rank(axis=1).to_numpy().reshape(x.shape)


def _correlation(x: np.ndarray, y: np.ndarray):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (x * y).sum(axis=-1) / np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    return float(out) if out.ndim == 0 else out


def spearman_rho(x, y):
    """Spearman's rho of ``x`` and ``y`` along their last axis: Pearson's correlation of the
    average ranks. A float for two rankings, an array for a batch."""
    rx, ry = average_ranks(x), average_ranks(y)
    return _correlation(rx - rx.mean(axis=-1, keepdims=True), ry - ry.mean(axis=-1, keepdims=True))


def kendall_tau(x, y):
    """Kendall's tau-b of ``x`` and ``y`` along their last axis: ``sum sign(dx) sign(dy) /
    sqrt(pairs untied in x * pairs untied in y)`` over every pair of items. A float for two
    rankings, an array for a batch."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], 1)
    return _correlation(np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j]))
