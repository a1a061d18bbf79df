"""Fast Bradley-Terry maximum likelihood on aggregated pair counts.

Model (Bradley & Terry 1952): ``P(i beats j) = pi_i / (pi_i + pi_j)`` with
``pi = exp(theta)``. The fit maximises the log-likelihood of the pair counts
(:mod:`.likelihoods`) by Newton's method with step halving; the Hessian is a Laplacian of
size models x models, singular along ``1`` (only differences are identified), so each step
solves ``(I + 1 1^T) step = gradient``, which keeps ``theta`` centred (mean 0).

Elo scale: a rating is ``ELO_SCALE * theta`` plus an offset, with
``ELO_SCALE = 400 / ln 10``, so 400 points mean a factor 10 in the odds of winning
(Elo 1978; FastChat's ``compute_elo_mle_with_tie`` uses the same SCALE=400, BASE=10).
By default the mean rating is ``CENTRE`` = 1000; ``anchor=(model, rating)`` pins one model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats import FitError, z_two_sided

from .counts import PairCounts, aggregate
from .likelihoods import LIKELIHOODS, PairLikelihood, meat
from .threads import one_blas_thread

__all__ = ["BTResult", "CENTRE", "DENSE_MODELS", "ELO_SCALE", "bradley_terry", "early_l2", "fit_counts", "newton", "newton_rounds", "to_elo_matrix"]

ELO_SCALE = 400.0 / math.log(10.0)
CENTRE = 1000.0
# Ridge on log-strengths when the MLE does not exist: l2/2 |theta|^2 is a N(0, 1/l2) prior. The arena's
# leaderboard and analysis.ratings use the same one.
PRIOR_L2 = 1.0
PRIOR_SD_ELO = ELO_SCALE / math.sqrt(PRIOR_L2)  # the prior's SD on the Elo scale
# Beyond this many models the fit keeps no models x models matrix: its Newton steps are solved by
# conjugate gradients on the sparse information, and the intervals, which need the dense inverse
# (a gigabyte at 11,000 models), are not computed.
DENSE_MODELS = 2_000
# |theta| beyond this (odds of e^40) only happens when the MLE does not exist, e.g. a
# model that never lost: Newton then marches off to infinity instead of converging.
_DIVERGED = 40.0


@dataclass(frozen=True)
class BTResult:
    """A Bradley-Terry fit.

    ``scores`` are centred log-strengths (natural-log odds units, mean 0), indexed by model
    name like evalica's ``BradleyTerryResult.scores`` (which holds ``exp`` of them,
    normalised). ``extra`` holds tie parameters (Davidson's ``log_nu``).
    """

    scores: pd.Series
    extra: dict[str, float]
    iterations: int
    counts: PairCounts
    likelihood: PairLikelihood
    l2: float

    @property
    def params(self) -> np.ndarray:
        return np.r_[self.scores.to_numpy(), list(self.extra.values())]

    def elo(self, anchor: tuple[str, float] | None = None) -> pd.Series:
        """Ratings on the Elo scale, centred on ``CENTRE`` or with ``anchor`` pinned."""
        theta = self.scores.to_numpy()
        if anchor is not None:
            theta = theta - theta[_anchor_index(self.counts.models, anchor)]
        return pd.Series(ELO_SCALE * theta + _offset(anchor), index=self.scores.index)

    def covariance(self, kind: str = "sandwich") -> np.ndarray:
        """Covariance of ``params``: ``"sandwich"`` (robust, I^-1 B I^-1) or ``"model"`` (I^-1).

        Inverses are taken on the centred subspace (``theta`` sums to 0), so the result is
        the covariance of the centred scores; the sandwich stays valid when ties are
        counted as half wins, where the model-based one is not (White 1982, Theorem 3.2),
        and is clustered when the counts carry clusters (:func:`.likelihoods.meat`).
        """
        if kind not in ("sandwich", "model"):
            raise ValueError(f"unknown covariance kind {kind!r}; use 'sandwich' or 'model'")
        with one_blas_thread():
            bread = _regularised_inverse(self.likelihood.information(self.params, self.counts), self.counts, self.l2)
            if kind == "model":
                return bread
            return bread @ meat(self.likelihood, self.params, self.counts) @ bread

    def elo_intervals(self, anchor=None, kind: str = "sandwich", level: float = 0.95):
        """Normal (Wald) intervals on the Elo scale from :meth:`covariance`."""
        m = self.counts.n_models
        transform = to_elo_matrix(self.counts.models, anchor)
        cov = transform @ self.covariance(kind)[:m, :m] @ transform.T
        z = z_two_sided(level)
        half = z * np.sqrt(np.clip(np.diag(cov), 0, None))
        centre = self.elo(anchor).to_numpy()
        return centre - half, centre + half


def _offset(anchor: tuple[str, float] | None) -> float:
    return CENTRE if anchor is None else float(anchor[1])


def _anchor_index(models: pd.Index, anchor: tuple[str, float]) -> int:
    if anchor[0] not in models:
        raise ValueError(f"anchor model {anchor[0]!r} is not among the rated models")
    return models.get_loc(anchor[0])


def to_elo_matrix(models: pd.Index, anchor: tuple[str, float] | None) -> np.ndarray:
    """Linear map from centred ``theta`` to Elo ratings (before adding the offset)."""
    out = np.eye(len(models))
    if anchor is not None:
        out[:, _anchor_index(models, anchor)] -= 1.0
    return ELO_SCALE * out


def _regularised_inverse(information: np.ndarray, counts: PairCounts, l2: float) -> np.ndarray:
    """Inverse of ``information + l2`` (ridge on theta) restricted to centred ``theta``.

    With ``u`` = 1 on the theta block, ``u`` is an eigenvector of the penalised information
    with eigenvalue ``l2`` (0 without a ridge). Adding ``u u^T`` makes the matrix invertible
    without touching the centred subspace; removing the ``u`` component of the inverse,
    ``u u^T / (m (m + l2))``, leaves the inverse on that subspace (the Moore-Penrose
    inverse when ``l2 = 0``), which is what the covariance of centred estimates needs.
    """
    m = counts.n_models
    u = np.zeros(information.shape[-1])
    u[:m] = 1.0
    lifted = information + np.outer(u, u)  # a stack (rounds, q, q) is inverted matrix by matrix
    lifted[..., :m, :m] += l2 * np.eye(m)
    return np.linalg.inv(lifted) - np.outer(u, u) / (m * (m + l2))


def _closure(adjacency: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure of a boolean m x m adjacency (who reaches whom), or of
    each of a stack ``(rounds, m, m)``.

    Repeated squaring of the small m x m matrix (m is the number of models), so the fit
    needs no scipy.sparse import (a quarter second at start-up).
    """
    reach = adjacency | np.eye(adjacency.shape[-1], dtype=bool)
    while True:
        wider = (reach.astype(np.float32) @ reach.astype(np.float32)) > 0
        if (wider == reach).all():
            return reach
        reach = wider


def _graph_components(m: int, source: np.ndarray, target: np.ndarray, strong: bool) -> tuple[int, np.ndarray]:
    """Components of the graph with edges ``source -> target`` on ``m`` models: (count, label
    per model); strongly connected ones when ``strong``. Up to :data:`DENSE_MODELS` models by
    the closure of a small dense matrix, beyond by scipy's sparse graph search."""
    if m > DENSE_MODELS:
        import scipy.sparse
        from scipy.sparse.csgraph import connected_components

        graph = scipy.sparse.csr_matrix((np.ones(len(source)), (source, target)), shape=(m, m))
        return connected_components(graph, directed=strong, connection="strong" if strong else "weak")
    adjacency = np.zeros((m, m), dtype=bool)
    adjacency[source, target] = True
    if not strong:
        adjacency |= adjacency.T
    reach = _closure(adjacency)
    reach &= reach.T  # mutual reach: the strongly connected components (all components when undirected)
    _, labels = np.unique(reach.argmax(axis=1), return_inverse=True)
    return int(labels.max()) + 1 if m else 0, labels


def _components(counts: PairCounts) -> tuple[int, np.ndarray]:
    """Connected components of the comparison graph: (count, label per model)."""
    return _graph_components(counts.n_models, counts.i, counts.j, strong=False)


def _check_connected(counts: PairCounts) -> None:
    n_parts, labels = _components(counts)
    if n_parts > 1:
        groups = [list(counts.models[labels == k][:3]) for k in range(min(n_parts, 3))]
        raise ValueError(
            f"the models fall into {n_parts} groups never compared with each other (e.g. {groups}); "
            "ratings across groups are not identified: rate each group separately or pass l2 > 0 (--l2 on the command line)"
        )


def mle_exists(counts: PairCounts) -> bool:
    """Whether the Bradley-Terry MLE exists (finite) for these battles, ties as half wins.

    Ford (1957) / Hunter (2004), Assumption 1: it exists iff, for every split of the models
    into two groups, some model in each group beat (or tied) some model in the other,
    i.e. the directed "won or tied against" graph is strongly connected. One vote, or a
    model with only wins or only losses, fails it; a tie adds an edge both ways.
    """
    if counts.n_models < 2:
        return False
    wins_i, wins_j, ties = (np.asarray(x).reshape(-1) for x in (counts.wins_i, counts.wins_j, counts.ties))
    forward, backward = (wins_i + ties) > 0, (wins_j + ties) > 0  # an edge i -> j: i won or tied against j
    source = np.r_[counts.i[forward], counts.j[backward]]
    target = np.r_[counts.j[forward], counts.i[backward]]
    return _graph_components(counts.n_models, source, target, strong=True)[0] == 1


def early_l2(counts: PairCounts) -> float | None:
    """The early estimate's ridge where these battles have no maximum-likelihood rating
    (:func:`mle_exists`): :data:`PRIOR_L2`, a N(0, 1/PRIOR_L2) prior on each log-strength. None
    where the MLE exists. Every fit that falls back to the early estimate asks here: the
    ratings (:func:`analysis.ratings.votes.rate_battles`) and the rounds that bound them."""
    return None if mle_exists(counts) else PRIOR_L2


def _diverged(x: np.ndarray, counts: PairCounts) -> FitError:
    worst = counts.models[np.argsort(-np.abs(x[: counts.n_models]))[:3]]
    return FitError(
        f"Bradley-Terry fit did not converge: ratings diverge (models {list(worst)} may have only "
        "wins or only losses); the MLE does not exist for these battles, pass l2 > 0 (--l2 on the command line) to regularise"
    )


def newton(
    likelihood: PairLikelihood,
    counts: PairCounts,
    start: np.ndarray,
    *,
    l2: float = 0.0,
    tol: float = 1e-9,
    max_iter: int = 100,
) -> tuple[np.ndarray, int]:
    """Maximise ``loglik - l2/2 |theta|^2`` by damped Newton; raise :class:`analysis.stats.FitError` if it fails."""
    m = counts.n_models
    incidence = counts.incidence()
    sparse = m > DENSE_MODELS
    if sparse and likelihood.extra:
        raise ValueError(f"more than {DENSE_MODELS:,} models are rated with ties as half wins only (ties='half')")
    if not sparse:
        u = np.zeros(len(start))
        u[:m] = 1.0
        lift = np.outer(u, u)
        lift[:m, :m] += l2 * np.eye(m)

    def objective(x: np.ndarray) -> float:
        return likelihood.loglik(x, counts) - 0.5 * l2 * float(x[:m] @ x[:m])

    x = np.array(start, dtype=float)
    value = objective(x)
    for iteration in range(1, max_iter + 1):
        gradient = likelihood.gradient(x, counts, incidence)
        gradient[:m] -= l2 * x[:m]
        try:
            if sparse:
                step = _sparse_step(x, counts, l2, gradient)
            else:
                step = np.linalg.solve(likelihood.information(x, counts) + lift, gradient)
        except np.linalg.LinAlgError:
            # Win probabilities saturated at 0 or 1: the information of some model vanished.
            raise _diverged(x, counts) from None
        # The log-likelihood is concave, so halving the step until it does not decrease
        # guarantees progress where a full Newton step would overshoot.
        scale = 1.0
        while True:
            candidate = x + scale * step
            new_value = objective(candidate)
            if new_value >= value - 1e-12 * abs(value) or scale < 1e-10:
                break
            scale /= 2
        x, value = candidate, new_value
        if np.max(np.abs(scale * step)) < tol:
            return x, iteration
        if np.max(np.abs(x[:m])) > _DIVERGED:
            raise _diverged(x, counts)
    raise _out_of_iterations(max_iter)


def _out_of_iterations(max_iter: int) -> FitError:
    return FitError(f"Bradley-Terry fit did not converge in {max_iter} Newton iterations")


def _sparse_step(x: np.ndarray, counts: PairCounts, l2: float, gradient: np.ndarray) -> np.ndarray:
    """The Newton step of ties-as-half-wins for many models: ``(L + l2 I) step = gradient`` on
    centred ``theta``, with ``L`` the information (a weighted graph Laplacian) kept sparse and
    solved by conjugate gradients with a diagonal preconditioner (the gradient sums to zero, so
    the singular system with ``l2 = 0`` is consistent and the iterates stay centred)."""
    import scipy.sparse
    from scipy.sparse.linalg import LinearOperator, cg

    m = counts.n_models
    p = 1.0 / (1.0 + np.exp(-(x[counts.i] - x[counts.j])))
    weight = counts.totals * p * (1.0 - p)
    degree = np.bincount(counts.i, weight, m) + np.bincount(counts.j, weight, m) + l2
    off = scipy.sparse.csr_matrix((np.r_[weight, weight], (np.r_[counts.i, counts.j], np.r_[counts.j, counts.i])),
                                  shape=(m, m))
    matrix = scipy.sparse.diags(degree) - off
    if (degree <= 0).any():
        raise np.linalg.LinAlgError("a model has no information")
    preconditioner = LinearOperator((m, m), matvec=lambda v: v / degree)
    step, info = cg(matrix, gradient, rtol=1e-12, atol=0.0, maxiter=10 * m, M=preconditioner)
    if info != 0:
        raise FitError(f"Bradley-Terry fit: the Newton step of {m:,} models did not converge")
    return step - step.mean() if l2 == 0 else step


def newton_rounds(
    likelihood: PairLikelihood, counts: PairCounts, start: np.ndarray, *, tol: float = 1e-9, max_iter: int = 100
) -> tuple[np.ndarray, dict[int, FitError]]:
    """:func:`newton` (without a ridge) for every round of batched counts ``(rounds, pairs)``
    at once, from ``start`` ``(rounds, q)``: round by round the same damped steps, each
    round stopping when its own step is below ``tol``, so a round comes out as its own fit
    would (to rounding), at the cost of a few array operations per step for all rounds.
    ``likelihood`` must take batches in ``loglik`` and ``information`` (:class:`HalfTie`).

    Returns the solutions and, by round, the error :func:`newton` raises where it raises
    (singular information, diverging ratings, out of iterations), made where the round stopped:
    a failed round is not fitted again to learn why (a round of a sparse design whose
    ratings diverge ran its hundred steps twice).
    """
    m = counts.n_models
    incidence = counts.incidence()
    lift = np.zeros((start.shape[-1],) * 2)
    lift[:m, :m] = 1.0
    x = np.array(start, dtype=float)
    value = likelihood.loglik(x, counts)
    errors: dict[int, FitError] = {}
    active = np.arange(len(x))

    def rows(k: np.ndarray) -> PairCounts:
        return counts.with_counts(counts.wins_i[k], counts.wins_j[k], counts.ties[k])

    for _ in range(max_iter):
        if not len(active):
            break
        sub = rows(active)
        gradient = likelihood.gradient(x[active], sub, incidence)
        information = likelihood.information(x[active], sub) + lift
        try:
            step = np.linalg.solve(information, gradient[..., None])[..., 0]
        except np.linalg.LinAlgError:  # some round's win probabilities saturated: solve one by one
            step = np.zeros_like(gradient)
            for k in range(len(active)):
                try:
                    step[k] = np.linalg.solve(information[k], gradient[k])
                except np.linalg.LinAlgError:
                    errors[int(active[k])] = _diverged(x[active[k]], counts)
            keep = ~np.isin(active, list(errors))
            active, step, sub = active[keep], step[keep], rows(active[keep])
        # The line search of newton, round by round: halve a round's step until its
        # log-likelihood does not decrease.
        scale = np.ones(len(active))
        candidate, new_value = x[active], value[active]
        pending = np.arange(len(active))
        while len(pending):
            trial = x[active[pending]] + scale[pending, None] * step[pending]
            trial_value = likelihood.loglik(trial, rows(active[pending]))
            old = value[active[pending]]
            done = (trial_value >= old - 1e-12 * np.abs(old)) | (scale[pending] < 1e-10)
            candidate[pending[done]], new_value[pending[done]] = trial[done], trial_value[done]
            scale[pending[~done]] /= 2
            pending = pending[~done]
        x[active], value[active] = candidate, new_value
        converged = np.max(np.abs(scale[:, None] * step), axis=1) < tol
        diverged = ~converged & (np.max(np.abs(candidate[:, :m]), axis=1) > _DIVERGED)
        errors.update({int(r): _diverged(x[r], counts) for r in active[diverged]})
        active = active[~converged & ~diverged]
    errors.update({int(r): _out_of_iterations(max_iter) for r in active})
    return x, errors


def fit_counts(
    counts: PairCounts, *, ties: str = "half", l2: float = 0.0, tol: float = 1e-9, max_iter: int = 100
) -> BTResult:
    """Fit Bradley-Terry to already aggregated counts (see :func:`bradley_terry`)."""
    if ties not in LIKELIHOODS:
        raise ValueError(f"unknown ties={ties!r}; use one of {', '.join(LIKELIHOODS)}")
    if l2 < 0:
        raise ValueError("l2 must be >= 0")
    if l2 == 0:
        _check_connected(counts)
    likelihood = LIKELIHOODS[ties]()
    with one_blas_thread():
        params, iterations = newton(likelihood, counts, likelihood.start(counts), l2=l2, tol=tol, max_iter=max_iter)
    m = counts.n_models
    return BTResult(
        scores=pd.Series(params[:m], index=counts.models, name="theta"),
        extra=dict(zip(likelihood.extra, params[m:].tolist())),
        iterations=iterations,
        counts=counts,
        likelihood=likelihood,
        l2=l2,
    )


def bradley_terry(
    model_a,
    model_b,
    winner,
    weights=None,
    *,
    ties: str = "half",
    l2: float = 0.0,
    tol: float = 1e-9,
    max_iter: int = 100,
) -> BTResult:
    """Bradley-Terry MLE for battles given as three parallel arrays (the evalica/choix shape).

    ``winner`` holds FastChat's values ``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``.
    ``ties="half"`` counts a tie as half a win for each side (evalica's default
    ``tie_weight=0.5``); ``ties="davidson"`` fits Davidson's (1970) tie parameter instead.
    ``weights`` multiply each battle's contribution. ``l2`` adds a ridge penalty
    ``l2/2 |theta|^2`` (a Gaussian prior) for data whose MLE does not exist.

    Battles are first aggregated to counts per pair of models (:func:`.counts.aggregate`),
    so the cost after one O(battles) counting pass is O(models^2) per Newton step.
    Raises :class:`analysis.stats.FitError` when Newton does not converge.
    """
    return fit_counts(aggregate(model_a, model_b, winner, weights), ties=ties, l2=l2, tol=tol, max_iter=max_iter)
