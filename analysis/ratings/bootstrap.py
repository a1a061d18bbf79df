"""Bootstrap of a Bradley-Terry fit, all replicates solved together.

Resampling draws whole clusters (the battles of one ``pair_id``: several people's votes on
a pair, a judge's verdicts on both orders) with replacement, as the clusters, not the
battles, are what is independent (Field & Welsh 2007); without clusters every battle is
its own. Clusters with the same cell counts are interchangeable, so drawing K clusters is
a draw from Multinomial(K, shares of the distinct clusters) (Efron & Tibshirani 1993,
ch. 6; the grouping is :func:`analysis.stats.resample.distinct_units`, the draws
:func:`analysis.stats.resample.kind_draws`), and a round costs O(distinct clusters), not
O(battles). Each replicate starts from the full-data MLE and
is solved by the chord method: Newton steps that reuse the full-data information matrix,
inverted once (Kelley 1995, sec. 5.4); one matrix product per step serves every replicate
at once. A replicate not converged after ``max_iter`` chord steps gets a full Newton fit
of its own; one whose MLE does not exist (a model that only won or only lost in that
resample) is fitted with the weak stated prior :data:`REPLICATE_L2`, and such rounds are
counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.stats import FitError
from analysis.stats.resample import distinct_units, kind_draws

from .bt import BTResult, _regularised_inverse, newton
from .counts import PairCounts
from .threads import one_blas_thread

__all__ = ["REPLICATE_L2", "Replicates", "bootstrap_params", "refit_rounds"]

# Ridge l2/2 |theta|^2, a N(0, 10^2) prior on log-strengths (sd 10 = about 1,700 Elo), used
# only in rounds whose MLE does not exist: it keeps them finite without narrowing the rest.
REPLICATE_L2 = 0.01


@dataclass(frozen=True)
class Replicates:
    """``params`` of each round ``(rounds, q)``; ``n_prior``: rounds fitted with the prior;
    ``n_clusters``: the units resampled (battles when the counts carry no clusters)."""

    params: np.ndarray
    n_prior: int
    n_clusters: int


def bootstrap_params(
    fit: BTResult,
    rounds: int,
    *,
    seed: int = 0,
    tol: float = 1e-9,
    max_iter: int = 50,
    chunk: int = 250,
) -> Replicates:
    """Parameters of ``rounds`` bootstrap refits (see the module docstring).

    Seeded: the same ``seed`` gives the same replicates. Needs unweighted (integer) counts.
    A model none of whose clusters is drawn in a round has no information there and keeps
    its full-data estimate in that round; with a handful of battles per model, prefer the
    sandwich interval or more data.
    """
    with one_blas_thread():
        return _bootstrap(fit, rounds, seed=seed, tol=tol, max_iter=max_iter, chunk=chunk)


def _units(counts: PairCounts):
    """Distinct resampling units as a sparse ``(kinds, cells)`` matrix of cell counts, and
    how many clusters are of each kind."""
    import scipy.sparse  # only the bootstrap needs it: a fit starts faster without

    n_cells = 3 * len(counts.i)
    if counts.clusters is None:
        cells = counts.cells
        nonzero = np.flatnonzero(cells)
        units = scipy.sparse.csr_matrix((np.ones(len(nonzero)), (np.arange(len(nonzero)), nonzero)), shape=(len(nonzero), n_cells))
        return units, cells[nonzero]
    clusters = counts.clusters
    sizes = np.bincount(clusters.code, minlength=clusters.n)
    matrix = scipy.sparse.csr_matrix(
        (clusters.weight, clusters.cell, np.r_[0, np.cumsum(sizes)]), shape=(clusters.n, n_cells)
    )
    kinds = distinct_units(clusters.code, clusters.cell, clusters.weight, clusters.n)
    return matrix[kinds.first], kinds.counts.astype(float)


def refit_rounds(fit: BTResult, wins_i: np.ndarray, wins_j: np.ndarray, ties: np.ndarray, *, tol: float = 1e-9,
                 max_iter: int = 50) -> tuple[np.ndarray, int]:
    """``fit``'s model refitted to each round of count tables ``(rounds, pairs)`` over ``fit``'s
    pairs: chord steps from ``fit``'s parameters for every round at once (see the module
    docstring), Newton's method for a round they leave unconverged, and the weak prior
    :data:`REPLICATE_L2` for a round whose fit fails (a model that only won or only lost there).
    Returns the parameters ``(rounds, q)`` and how many rounds needed the prior."""
    counts, likelihood, l2 = fit.counts, fit.likelihood, fit.l2
    m = counts.n_models
    step_matrix = _regularised_inverse(likelihood.information(fit.params, counts), counts, l2)
    incidence = counts.incidence()
    x = np.tile(fit.params, (len(wins_i), 1))
    active = np.arange(len(wins_i))
    with np.errstate(over="ignore"):  # a round far from the fit may overflow: Newton takes it below
        for _ in range(max_iter):
            sub = counts.with_counts(wins_i[active], wins_j[active], ties[active])
            gradient = likelihood.gradient(x[active], sub, incidence)
            gradient[:, :m] -= l2 * x[active, :m]
            step = gradient @ step_matrix
            x[active] += step
            active = active[~(np.max(np.abs(step), axis=1) < tol)]
            if not len(active):
                break
    n_prior = 0
    for row in active:
        single = counts.with_counts(wins_i[row], wins_j[row], ties[row])
        try:
            x[row], _ = newton(likelihood, single, fit.params, l2=l2, tol=tol)
        except FitError:  # a model only won or only lost in this round
            x[row], _ = newton(likelihood, single, fit.params, l2=max(l2, REPLICATE_L2), tol=tol)
            n_prior += 1
    return x, n_prior


def _bootstrap(fit: BTResult, rounds: int, *, seed: int, tol: float, max_iter: int, chunk: int) -> Replicates:
    counts = fit.counts
    if not np.allclose(counts.cells, np.round(counts.cells)):
        raise ValueError("the bootstrap needs unweighted battles (integer counts)")
    units, kinds = _units(counts)
    unit_cells = units.T.tocsr()  # (cells, kinds): a draw of kinds -> cell counts
    rng = np.random.default_rng(seed)
    out = np.empty((rounds, len(fit.params)))
    n_prior, begin = 0, 0
    for block in kind_draws(kinds, rounds, rng, unit_cells.shape[0]):
        for drawn in np.array_split(block, -(-len(block) // chunk)):  # at most ``chunk`` rounds refitted together
            size = len(drawn)
            drawn = np.asarray(unit_cells @ drawn.T).T.reshape(size, -1, 3)
            out[begin : begin + size], prior = refit_rounds(fit, drawn[..., 0], drawn[..., 1], drawn[..., 2],
                                                            tol=tol, max_iter=max_iter)
            n_prior, begin = n_prior + prior, begin + size
    return Replicates(out, n_prior, int(round(kinds.sum())))
