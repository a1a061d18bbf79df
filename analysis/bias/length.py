"""Length (verbosity) bias: does the longer response win more often than its quality earns?

Length is counted in characters of the response text.

* ``longer_rate``: among decisive records whose two responses differ in length, the share
  won by the longer one, with a Wilson interval. It mixes length bias with any real
  quality difference that correlates with length, so it is read next to the model below.
  The interval is clustered by ``pair_id`` (several votes on one pair are not
  independent; :func:`analysis.stats.clustered_rate_ci`).
* ``coef``: a logistic model of "first-shown wins" on the standardised length difference
  (characters) with Bradley-Terry strength terms for the two models (+1 for the
  first-shown model's column, -1 for the second's) and an intercept that absorbs position
  bias, fitted per rater with statsmodels, standard errors clustered by ``pair_id``.
  ``coef`` is the change in log-odds of winning per one standard deviation of length
  difference (the same SD for every rater, so raters compare). It is linear in the
  difference, so it is *not* the length term of AlpacaEval's length-controlled win rate
  (Dubois et al. 2024, eq. 2, which uses ``tanh`` of the standardised length difference:
  see :func:`analysis.ratings.win_rates`) nor Chatbot Arena's style term
  (Li et al. 2024, a normalised token difference ``(a - b) / (a + b + 1)``); its values are
  comparable across our raters only.
* ``first_rate_controlled``: the same model's intercept as P(first-shown wins) between
  equally strong models with equally long answers, ``sigmoid(intercept)`` with its
  clustered interval: the position term beside the raw first-shown rate, which alone
  mistakes "the earlier-listed model wins" for position bias where the display order is
  fixed by model (see :func:`analysis.bias.position.order_check`).
* :func:`length_curve`: the longer-wins rate in bins of relative length difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from analysis.stats import clustered_rate_ci, fit_logit, row_clusters, strength_columns

__all__ = ["LengthBias", "LengthBin", "length_bias", "length_curve", "length_sd", "RELATIVE_BINS"]

# Edges of |len_a - len_b| / (len_a + len_b): from near-equal lengths to one response
# several times the other.
RELATIVE_BINS = (0.0, 0.1, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class LengthBias:
    n_decisive_unequal: int
    longer_wins: int
    longer_rate: float | None
    longer_rate_ci: tuple[float, float] | None
    coef: float | None
    coef_ci: tuple[float, float] | None
    coef_p: float | None
    n_fit: int
    length_sd: float
    note: str | None = None  # why the model was not fitted, when it was not
    first_rate_controlled: float | None = None  # sigmoid(intercept): the position term
    first_rate_controlled_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class LengthBin:
    lo: float
    hi: float
    n: int
    longer_rate: float | None
    ci: tuple[float, float] | None


def length_sd(table: pd.DataFrame) -> float:
    """The scale of length differences shared by all raters: SD over every record; 0 where no
    record's two responses differ in length (a table of battles carries no texts)."""
    diff = (table["len_a"] - table["len_b"]).to_numpy(dtype=float)
    return float(np.std(diff)) if len(diff) else 0.0


def _design(rows: pd.DataFrame, sd: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """The model's columns (intercept, length difference in SDs, strengths), its outcomes, and
    whether the length column is there: not where no record's responses differ in length (a
    column of zeros would leave the fit singular, and the position term needs none)."""
    diff = rows["len_a"].to_numpy(dtype=float) - rows["len_b"].to_numpy(dtype=float)
    length = [diff / sd] if sd > 0 and diff.any() else []
    X = np.column_stack([np.ones(len(rows)), *length, strength_columns(rows)])
    return X, rows["first_wins"].to_numpy(dtype=float), bool(length)


def _no_length_difference(rows: pd.DataFrame) -> str:
    """Why there is no length coefficient where no decisive record's responses differ in length."""
    texts = rows["len_a"].to_numpy().any() or rows["len_b"].to_numpy().any()
    return ("no length coefficient: no decisive verdict's two responses differ in length" if texts else
            "no length coefficient: these records carry no response texts")


def length_bias(rows: pd.DataFrame, sd: float, n_boot: int = 1000, seed: int = 0) -> LengthBias:
    """Length-bias estimates for one rater (see the module docstring)."""
    # Only the columns read here are filtered (a judgment table has twenty).
    columns = ["pair_id", "len_a", "len_b", "first_wins", "model_a", "model_b", *(["cluster"] if "cluster" in rows else [])]
    decisive = rows[columns][rows["decisive"].to_numpy(dtype=bool)]
    unequal = decisive[decisive["len_a"] != decisive["len_b"]]
    a_longer = unequal["len_a"] > unequal["len_b"]
    longer_wins = int(((unequal["first_wins"] == 1) == a_longer).sum())
    n = len(unequal)
    coef = coef_ci = coef_p = None
    first_controlled = first_controlled_ci = None
    note = None
    if len(decisive) < 20 or decisive["pair_id"].nunique() < 10:
        note = f"too few decisive records ({len(decisive)}) for the logistic model"
    else:
        X, y, with_length = _design(decisive, sd)
        groups = pd.factorize(row_clusters(decisive))[0]
        try:
            fit = fit_logit(X, y, groups)
            if with_length:
                coef, coef_ci, coef_p = float(fit.params[1]), fit.interval(1), float(fit.pvalues[1])
            else:  # the position term between equally strong models is still read
                note = _no_length_difference(decisive)
            first_controlled = float(expit(fit.params[0]))
            first_controlled_ci = tuple(float(expit(x)) for x in fit.interval(0))
        except ValueError as exc:
            note = f"logistic model not fitted: {exc}"
    return LengthBias(
        n_decisive_unequal=n,
        longer_wins=longer_wins,
        longer_rate=longer_wins / n if n else None,
        longer_rate_ci=clustered_rate_ci(
            ((unequal["first_wins"] == 1) == a_longer).to_numpy(), np.ones(n), row_clusters(unequal), n_boot, seed
        ),
        coef=coef,
        coef_ci=coef_ci,
        coef_p=coef_p,
        n_fit=len(decisive),
        length_sd=sd,
        note=note,
        first_rate_controlled=first_controlled,
        first_rate_controlled_ci=first_controlled_ci,
    )


def length_curve(
    rows: pd.DataFrame, edges: tuple[float, ...] = RELATIVE_BINS, n_boot: int = 1000, seed: int = 0
) -> list[LengthBin]:
    """Longer-wins rate per bin of relative length difference, intervals clustered by pair."""
    decisive = rows[rows["decisive"] & (rows["len_a"] != rows["len_b"])]
    la, lb = decisive["len_a"].to_numpy(dtype=float), decisive["len_b"].to_numpy(dtype=float)
    rel = np.abs(la - lb) / (la + lb)
    longer_won = (decisive["first_wins"].to_numpy() == 1) == (la > lb)
    bins = []
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        last = i == len(edges) - 2
        mask = (rel >= lo) & ((rel <= hi) if last else (rel < hi))
        k, n = int(longer_won[mask].sum()), int(mask.sum())
        ci = clustered_rate_ci(longer_won[mask], np.ones(n), row_clusters(decisive).to_numpy()[mask], n_boot, seed)
        bins.append(LengthBin(lo, hi, n, k / n if n else None, ci))
    return bins
