"""One logit fit: a (fractional, optionally ridge-penalised) logistic regression by damped
Newton, which is also row-level Bradley-Terry (:func:`contrast` columns, +1 for one model, -1
for the other). A fit that does not converge, or whose data are separated, raises
:class:`FitError` instead of returning numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats.intervals import normal_sf, z_two_sided
from analysis.stats.sandwich import sandwich

__all__ = ["FitError", "LogitFit", "contrast", "fit_logit", "strength_columns"]


class FitError(ValueError, RuntimeError):
    """A fit that did not converge or whose estimate does not exist (separated data)."""


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
        with np.errstate(divide="ignore", invalid="ignore"):
            return 2 * normal_sf(np.abs(self.params / self.bse))

    def interval(self, i: int, level: float = 0.95) -> tuple[float, float]:
        z = z_two_sided(level)
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
