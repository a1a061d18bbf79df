"""Battles aggregated to one row per unordered pair of models.

Every Bradley-Terry likelihood here depends on the battles only through, for each pair
``i < j``, the number of wins of ``i``, wins of ``j`` and ties. Aggregating first makes a
fit cost O(pairs) = O(models^2) instead of O(battles), and makes the multinomial bootstrap
a resampling of a few thousand cells instead of millions of battles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

__all__ = ["Incidence", "PairCounts", "aggregate", "encode_winners", "WIN_A", "WIN_B", "TIE"]

# Outcome codes; "tie (bothbad)" is a tie, as in FastChat's Elo code.
WIN_A, WIN_B, TIE = 0, 1, 2
_OUTCOME = {"model_a": WIN_A, "model_b": WIN_B, "tie": TIE, "tie (bothbad)": TIE}


@dataclass(frozen=True)
class PairCounts:
    """Outcome counts for each compared pair ``(i[k], j[k])`` with ``i[k] < j[k]``.

    ``wins_i``, ``wins_j``, ``ties`` have shape ``(pairs,)`` (or ``(rounds, pairs)`` for
    bootstrap replicates); they are floats because battles may carry weights.
    ``n_battles`` counts the (unweighted) battles each model took part in.
    """

    models: pd.Index
    i: np.ndarray
    j: np.ndarray
    wins_i: np.ndarray
    wins_j: np.ndarray
    ties: np.ndarray
    n_battles: np.ndarray

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def totals(self) -> np.ndarray:
        return self.wins_i + self.wins_j + self.ties

    def incidence(self) -> Incidence:
        """The ``(pairs, models)`` matrix with +1 at ``i`` and -1 at ``j`` per row."""
        return Incidence(self.i, self.j, self.n_models)

    def with_counts(self, wins_i: np.ndarray, wins_j: np.ndarray, ties: np.ndarray) -> PairCounts:
        return PairCounts(self.models, self.i, self.j, wins_i, wins_j, ties, self.n_battles)


@dataclass(frozen=True)
class Incidence:
    """The ``(pairs, models)`` incidence matrix, kept as its two index arrays.

    Only its transpose is ever applied: ``incidence.T @ x`` scatters per-pair quantities
    onto models (a gradient), for ``x`` of shape ``(pairs,)`` (a fit: ``np.bincount``) or
    ``(pairs, k)`` (a batch of bootstrap rounds: a scipy.sparse product, several times
    faster there). scipy.sparse is imported only for batches: its import is a quarter of a
    rating run's start-up.
    """

    i: np.ndarray
    j: np.ndarray
    n_models: int

    @property
    def T(self) -> _Scatter:  # noqa: N802 (matrix notation)
        return _Scatter(self)

    @cached_property
    def sparse(self):
        import scipy.sparse

        rows = np.arange(len(self.i))
        return scipy.sparse.csr_matrix(
            (np.r_[np.ones(len(rows)), -np.ones(len(rows))], (np.r_[rows, rows], np.r_[self.i, self.j])),
            shape=(len(rows), self.n_models),
        )


@dataclass(frozen=True)
class _Scatter:
    incidence: Incidence

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            i, j, m = self.incidence.i, self.incidence.j, self.incidence.n_models
            return np.bincount(i, x, m) - np.bincount(j, x, m)
        return self.incidence.sparse.T @ x


def encode_winners(winner: Sequence[str] | np.ndarray | pd.Series) -> np.ndarray:
    """Map FastChat winner strings to outcome codes; unknown values raise ``ValueError``."""
    codes, uniques = pd.factorize(pd.Series(winner, copy=False), use_na_sentinel=True)
    table = np.empty(len(uniques) + 1, dtype=np.int8)
    unknown = [u for u in uniques if u not in _OUTCOME]
    if unknown or (codes < 0).any():
        shown = ", ".join(map(repr, unknown[:5])) or "missing values"
        raise ValueError(f"unknown winner values: {shown}; expected one of {', '.join(_OUTCOME)}")
    table[: len(uniques)] = [_OUTCOME[u] for u in uniques]
    return table[codes]


def _encode_models(model_a, model_b) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    # Factorising each column separately is several times faster than factorising their
    # concatenation (pandas keeps the string dtype); the small uniques are merged after.
    codes_a, uniq_a = pd.factorize(pd.Series(model_a, copy=False))
    codes_b, uniq_b = pd.factorize(pd.Series(model_b, copy=False))
    if (codes_a < 0).any() or (codes_b < 0).any():
        raise ValueError("model_a and model_b must not contain missing values")
    models = pd.Index(uniq_a).union(pd.Index(uniq_b)).sort_values()
    return models.get_indexer(uniq_a)[codes_a], models.get_indexer(uniq_b)[codes_b], models


def aggregate(model_a, model_b, winner, weights=None) -> PairCounts:
    """Count wins and ties per unordered pair of models (models sorted by name).

    Self-battles (``model_a == model_b``) carry no information about ratings and raise.
    """
    a, b, models = _encode_models(model_a, model_b)
    outcome = encode_winners(winner)
    if not len(a) == len(b) == len(outcome):
        raise ValueError("model_a, model_b and winner must have the same length")
    m = len(models)
    # One pass over the battles counts (model_a, model_b, outcome) cells; everything after
    # works on the m x m x 3 table, whatever the number of battles.
    key = (a * m + b) * 3 + outcome
    w = None if weights is None else np.asarray(weights, dtype=float)
    ordered = np.bincount(key, weights=w, minlength=m * m * 3).reshape(m, m, 3).astype(float)
    if np.diagonal(ordered, axis1=0, axis2=1).any():
        raise ValueError("a model cannot battle itself (model_a == model_b)")
    if w is None:
        per_model = ordered.sum(axis=2)
    else:
        per_model = np.bincount(a * m + b, minlength=m * m).reshape(m, m)
    n_battles = (per_model.sum(axis=0) + per_model.sum(axis=1)).astype(np.int64)
    i, j = np.triu_indices(m, 1)
    # Seen from the lower-index model i: its wins as A plus its wins as B, and so on.
    wins_i = ordered[i, j, WIN_A] + ordered[j, i, WIN_B]
    wins_j = ordered[i, j, WIN_B] + ordered[j, i, WIN_A]
    ties = ordered[i, j, TIE] + ordered[j, i, TIE]
    # A pair never compared, or whose battles all weigh zero, says nothing and is left out.
    seen = (wins_i + wins_j + ties) > 0
    return PairCounts(
        models=models,
        i=i[seen],
        j=j[seen],
        wins_i=wins_i[seen],
        wins_j=wins_j[seen],
        ties=ties[seen],
        n_battles=n_battles,
    )
