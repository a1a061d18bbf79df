"""Battles aggregated to one row per unordered pair of models.

Every Bradley-Terry likelihood here depends on the battles only through, for each pair
``i < j`` that met, the number of wins of ``i``, wins of ``j`` and ties. Aggregating first
makes a fit cost O(pairs that met) instead of O(battles), and makes the multinomial bootstrap
a resampling of a few thousand cells instead of millions of battles.

Battles that are not independent, e.g. three people voting on one pair or a judge seeing
both orders of it, are grouped into clusters (``groups``, the records' ``pair_id``): the
counts then also keep, per cluster, how many of its battles fell in each cell
(:class:`Clusters`), which is all the cluster-robust sandwich and the cluster bootstrap need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from analysis.stats import cluster_codes

__all__ = ["Clusters", "Incidence", "PairCounts", "aggregate", "bincount_rows", "encode_winners", "WIN_A", "WIN_B",
           "TIE"]

# Outcome codes; "tie (bothbad)" is a tie, as in FastChat's Elo code.
WIN_A, WIN_B, TIE = 0, 1, 2
_OUTCOME = {"model_a": WIN_A, "model_b": WIN_B, "tie": TIE, "tie (bothbad)": TIE}


@dataclass(frozen=True)
class PairCounts:
    """Outcome counts for each compared pair ``(i[k], j[k])`` with ``i[k] < j[k]``.

    ``wins_i``, ``wins_j``, ``ties`` have shape ``(pairs,)`` (or ``(rounds, pairs)`` for
    bootstrap replicates); they are floats because battles may carry weights.
    ``n_battles`` counts the (unweighted) battles each model took part in.
    ``clusters`` (None: every battle is its own cluster) says which cluster each battle's
    cell count belongs to, the cells ordered as :attr:`cells`.
    """

    models: pd.Index
    i: np.ndarray
    j: np.ndarray
    wins_i: np.ndarray
    wins_j: np.ndarray
    ties: np.ndarray
    n_battles: np.ndarray
    clusters: Clusters | None = None

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def totals(self) -> np.ndarray:
        return self.wins_i + self.wins_j + self.ties

    @property
    def cells(self) -> np.ndarray:
        """Counts per cell, pair by pair (wins of i, wins of j, ties): ``(3 pairs,)`` (or per round)."""
        return np.stack([self.wins_i, self.wins_j, self.ties], axis=-1).reshape(*self.wins_i.shape[:-1], -1)

    @property
    def n_clusters(self) -> int:
        return int(round(self.totals.sum())) if self.clusters is None else self.clusters.n

    def cell_products(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``sum over clusters of c c^T`` for each cluster's cell counts ``c``, as COO
        ``(rows, columns, values)`` (repeated entries add up).

        The middle of a cluster-robust sandwich is ``S^T (this) S`` for per-battle scores
        ``S`` (cells x parameters): battles of one cluster add their scores before squaring
        (Liang & Zeger 1986). Without clusters it is the diagonal of the cell counts.
        """
        if self.clusters is None:
            cells = self.cells
            return np.arange(len(cells)), np.arange(len(cells)), cells
        return self.clusters.products()

    def incidence(self) -> Incidence:
        """The ``(pairs, models)`` matrix with +1 at ``i`` and -1 at ``j`` per row."""
        return Incidence(self.i, self.j, self.n_models)

    def with_counts(self, wins_i: np.ndarray, wins_j: np.ndarray, ties: np.ndarray) -> PairCounts:
        return PairCounts(self.models, self.i, self.j, wins_i, wins_j, ties, self.n_battles, self.clusters)


@dataclass(frozen=True)
class Clusters:
    """Cell counts per cluster as entries sorted by cluster: cluster ``code[k]`` has
    ``weight[k]`` battles in cell ``cell[k]``; ``n`` clusters in all. Plain numpy arrays
    (a sparse ``(clusters, cells)`` matrix), so a fit needs no scipy.sparse import."""

    code: np.ndarray
    cell: np.ndarray
    weight: np.ndarray
    n: int

    def products(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """COO entries of ``sum_c c c^T``: every pair of entries within one cluster."""
        sizes = np.bincount(self.code, minlength=self.n)
        starts = np.cumsum(sizes) - sizes
        per_entry = sizes[self.code]
        first = np.repeat(np.arange(len(self.code)), per_entry)
        offset = np.arange(len(first)) - np.repeat(np.cumsum(per_entry) - per_entry, per_entry)
        second = starts[self.code[first]] + offset
        return self.cell[first], self.cell[second], self.weight[first] * self.weight[second]


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


def bincount_rows(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount(index, w, size)`` for each row ``w`` of ``weights`` (or for ``weights``
    itself when 1-D): one bincount over offset indices, so a batch of rounds costs one call
    however many rounds, and each row's sums are added in the order one bincount would."""
    if weights.ndim == 1:
        return np.bincount(index, weights, size)
    rows = len(weights)
    offset = (index + size * np.arange(rows)[:, None]).ravel()
    return np.bincount(offset, weights.ravel(), rows * size).reshape(rows, size)


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


def aggregate(model_a, model_b, winner, weights=None, groups=None) -> PairCounts:
    """Count wins and ties per unordered pair of models (models sorted by name).

    ``groups`` (e.g. the ``pair_id`` of each battle; a missing value is a cluster of its
    own) marks battles that are not independent of each other: see :class:`Clusters`.
    Self-battles (``model_a == model_b``) carry no information about ratings and raise.
    Only the pairs that met are kept (sorted, ``i < j``), so memory grows with the battles,
    not with the square of the models.
    """
    a, b, models = _encode_models(model_a, model_b)
    outcome = encode_winners(winner)
    if not len(a) == len(b) == len(outcome):
        raise ValueError("model_a, model_b and winner must have the same length")
    if (a == b).any():
        raise ValueError("a model cannot battle itself (model_a == model_b)")
    m = len(models)
    w = None if weights is None else np.asarray(weights, dtype=float)
    low, high, column = _cells(a, b, outcome)
    # Each battle's pair as one key; the pairs that met, sorted, are the rows of the counts.
    key = low.astype(np.int64) * m + high
    if m * m <= _DENSE_KEYS:  # few models: a direct count over every pair is the cheaper pass
        present = np.bincount(key, minlength=m * m) > 0
        met = np.flatnonzero(present)
        row = np.cumsum(present)[key] - 1
    else:
        met, row = np.unique(key, return_inverse=True)
        row = row.ravel()
    cells = np.bincount(row * 3 + column, weights=w, minlength=3 * len(met)).reshape(-1, 3).astype(float)
    n_battles = (np.bincount(a, minlength=m) + np.bincount(b, minlength=m)).astype(np.int64)
    # A pair whose battles all weigh zero says nothing and is left out.
    seen = cells.sum(axis=1) > 0
    clusters = None
    if groups is not None:
        clusters = _clusters(row, column, w, groups, seen)
    return PairCounts(
        models=models,
        i=(met[seen] // m).astype(np.intp),
        j=(met[seen] % m).astype(np.intp),
        wins_i=cells[seen, 0],
        wins_j=cells[seen, 1],
        ties=cells[seen, 2],
        n_battles=n_battles,
        clusters=clusters,
    )


# Models squared up to which pairs are found by a count over every pair rather than by sorting.
_DENSE_KEYS = 1 << 20


def _cells(a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each battle's pair (lower, higher model code) and its cell seen from the lower model:
    0 its win, 1 its loss, 2 a tie (A's win is the lower model's when it was shown first)."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    column = np.where(outcome == TIE, 2, np.where((outcome == WIN_A) == (a < b), 0, 1))
    return low, high, column


def _clusters(row, column, w, groups, seen: np.ndarray) -> Clusters:
    """The :class:`Clusters` of battles in pair rows ``row``, cell ``column``, keeping the pairs ``seen``."""
    codes = cluster_codes(groups)
    if len(codes) != len(row):
        raise ValueError("groups must have one value per battle")
    position = np.where(seen, np.cumsum(seen) - 1, -1)[row]
    weight = np.ones(len(row)) if w is None else w
    used = (position >= 0) & (weight != 0)  # a pair whose battles all weigh zero was left out
    cell = position * 3 + column
    n_cells = 3 * int(seen.sum())
    # Sum repeated (cluster, cell) entries and sort by cluster: one key per entry.
    key, inverse = np.unique(codes[used].astype(np.int64) * n_cells + cell[used], return_inverse=True)
    total = np.bincount(inverse.ravel(), weight[used], len(key))
    return Clusters(code=key // n_cells, cell=key % n_cells, weight=total, n=int(codes.max(initial=-1)) + 1)
