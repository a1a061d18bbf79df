"""The result every rating method returns: ratings with intervals and ranks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["MIN_UNITS", "RatingTable", "make_table", "rank_with_uncertainty", "withhold_thin"]

# Intervals and ranks need this many clustered units (pairs; votes where there is no pair_id).
# A cluster-robust variance from G clusters rests on about G - 1 degrees of freedom, and with
# fewer than about ten its Wald intervals cover far less than stated (Cameron and Miller 2015,
# "A Practitioner's Guide to Cluster-Robust Inference", sec. VI); a bootstrap over a handful of
# pairs has the same problem, since it can only redraw those few.
MIN_UNITS = 10
# An interval narrower than this (Elo points) is zero width once printed.
_FLAT = 0.05

_COLUMNS = ["model", "rating", "lower", "upper", "rank", "n"]


def rank_with_uncertainty(lower: np.ndarray, upper: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """``1 +`` the number of models whose lower bound is above this model's upper bound.

    The rule of Chatbot Arena's leaderboard (Chiang et al. 2024, sec. 5): models whose
    intervals overlap share a rank, so a rank is only claimed when the data support it.
    A model without a finite interval has no rank (NA) and counts for no other model's
    (NaN compares false, so it would otherwise silently rank first).
    """
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    known = np.isfinite(lower) & np.isfinite(upper)
    # Counted by a search in the sorted lower bounds: no models x models comparison.
    above = np.sort(lower[known])
    rank = 1 + len(above) - np.searchsorted(above, np.where(known, upper, 0.0), side="right")
    return pd.arrays.IntegerArray(rank.astype(np.int64), mask=~known)


@dataclass(frozen=True)
class RatingTable:
    """Ratings on the Elo scale (400 points per factor 10 in the odds of winning).

    ``table`` has columns ``model, rating, lower, upper, rank, n``, sorted by rating
    (highest first); ``n`` is the number of battles the model took part in.
    ``coefficients`` (style control only) has ``name, coef, lower, upper, n_pairs,
    sparse``. ``interval`` says how ``lower``/``upper`` were obtained; ``warnings`` what a
    reader must know before trusting them.
    """

    method: str
    table: pd.DataFrame
    coefficients: pd.DataFrame | None = None
    interval: str = ""
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The CLI's JSON: ``{"method", "ratings": [...]}`` plus ``coefficients`` if any."""
        out: dict = {
            "method": self.method,
            "ratings": [
                {
                    "model": str(row.model),
                    "rating": _number(row.rating),
                    "lower": _number(row.lower),
                    "upper": _number(row.upper),
                    "rank": None if pd.isna(row.rank) else int(row.rank),
                    "n": int(row.n),
                }
                for row in self.table.itertuples(index=False)
            ],
        }
        if self.coefficients is not None:
            out["coefficients"] = [
                {k: _number(v) if k != "name" else str(v) for k, v in row.items()}
                for row in self.coefficients.to_dict("records")
            ]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def withhold_thin(result: RatingTable, n_units: int, unit: str = "pairs") -> RatingTable:
    """``result`` without the interval claims the data cannot carry: every interval and rank
    blanked below :data:`MIN_UNITS` clustered units, and any interval of zero width (e.g. a
    judge that always picks the first-shown response, seen in both orders: each pair's votes
    cancel, so every resample, and the clustered variance, see no spread), each with a warning."""
    table, warns = result.table.copy(), list(result.warnings)
    if n_units < MIN_UNITS:
        blank = np.ones(len(table), dtype=bool)
        warns.append(f"only {n_units} {unit}: no intervals or ranks below {MIN_UNITS} (clustered intervals from so "
                     "few units cover far less than they state); the ratings are point estimates only")
    else:
        blank = (table["upper"] - table["lower"]).to_numpy(dtype=float) < _FLAT
        if blank.any():
            warns.append(f"no interval for {', '.join(table.loc[blank, 'model'].astype(str))}: it would have zero "
                         "width (the votes on each pair cancel, e.g. a judge that picks one display position in "
                         "both orders), which is no measure of how sure the rating is")
    if not blank.any():
        return result
    table.loc[blank, ["lower", "upper"]] = np.nan
    table["rank"] = rank_with_uncertainty(table["lower"], table["upper"])
    return RatingTable(method=result.method, table=table, coefficients=result.coefficients,
                       interval=result.interval, warnings=tuple(warns))


def _number(value):
    """A JSON-safe value: non-finite floats (NaN, +-inf) become None, which JSON can hold."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None


def make_table(
    method: str,
    models,
    rating,
    lower,
    upper,
    n,
    *,
    interval: str,
    coefficients: pd.DataFrame | None = None,
    warnings: tuple[str, ...] = (),
    rank=None,
) -> RatingTable:
    """Assemble, rank and sort a :class:`RatingTable` (``rank``: the ranks where the caller has
    them, else :func:`rank_with_uncertainty` of the intervals)."""
    names = pd.Index(models).astype(str)
    rating, lower, upper = (np.asarray(x, dtype=float) for x in (rating, lower, upper))
    # Highest rating first, ties by name, a missing rating last: sorted with numpy, as the
    # frame's sort_values on two columns cost most of the table's two milliseconds.
    order = np.lexsort((np.asarray(names, dtype=object), -rating))
    frame = pd.DataFrame(
        {
            "model": names[order],
            "rating": rating[order],
            "lower": lower[order],
            "upper": upper[order],
            "rank": (rank_with_uncertainty(lower, upper) if rank is None else rank)[order],
            "n": np.asarray(n, dtype=np.int64)[order],
        }
    )
    return RatingTable(method=method, table=frame, coefficients=coefficients, interval=interval, warnings=warnings)
