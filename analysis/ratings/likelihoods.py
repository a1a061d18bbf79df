"""Bradley-Terry log-likelihoods on aggregated pair counts, with their derivatives.

Parameters are log-strengths ``theta`` (one per model, natural-log odds units), followed
by any tie parameters. Every function accepts one parameter vector with counts of shape
``(pairs,)``, and the gradient also a batch ``(rounds, q)`` with counts ``(rounds, pairs)``,
so the bootstrap can take one step for all replicates at once; :class:`HalfTie`'s
log-likelihood and information take a batch too (one value, one matrix per round), for the
batched Newton fit of :func:`.bt.newton_rounds`.

``information`` is the negative Hessian (observed Fisher information). :func:`meat` is the
middle of the sandwich ``I^-1 B I^-1`` (Huber 1967; White 1982, eq. 2.1): the sum over
clusters of the outer product of each cluster's summed per-battle scores (Liang & Zeger
1986), so votes of several people on one pair, or one judge's verdicts on both orders,
count as the one piece of evidence they are; with one battle per cluster it is the plain
sum over battles. A battle's score is ``s * (e_i - e_j)`` in the ``theta`` block, with
``s`` depending only on the pair and the outcome (:meth:`outcome_scores`).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .counts import Incidence, PairCounts, bincount_rows

__all__ = ["Davidson", "HalfTie", "PairLikelihood", "LIKELIHOODS", "meat"]


def _laplacian(counts: PairCounts, weight: np.ndarray) -> np.ndarray:
    """Dense ``sum_k weight_k (e_i - e_j)(e_i - e_j)^T``; ``(rounds, m, m)`` for a batch of weights."""
    m = counts.n_models
    out = np.zeros((*weight.shape[:-1], m, m))
    out[..., counts.i, counts.j] = -weight
    out[..., counts.j, counts.i] = -weight
    diagonal = np.arange(m)
    out[..., diagonal, diagonal] = bincount_rows(counts.i, weight, m) + bincount_rows(counts.j, weight, m)
    return out


def _scatter(per_pair: np.ndarray, incidence: Incidence) -> np.ndarray:
    """``sum_k per_pair_k (e_i - e_j)`` for a vector or each row of a batch."""
    if per_pair.ndim == 1:
        return incidence.T @ per_pair
    return (incidence.T @ per_pair.T).T


def _diff(theta: np.ndarray, counts: PairCounts) -> np.ndarray:
    return theta[..., counts.i] - theta[..., counts.j]


class PairLikelihood(Protocol):
    """What the Newton fit, the sandwich and the bootstrap need from a tie model."""

    extra: tuple[str, ...]

    def start(self, counts: PairCounts) -> np.ndarray: ...
    def loglik(self, params: np.ndarray, counts: PairCounts) -> float: ...
    def gradient(self, params: np.ndarray, counts: PairCounts, incidence: Incidence) -> np.ndarray: ...
    def information(self, params: np.ndarray, counts: PairCounts) -> np.ndarray: ...
    def outcome_scores(self, params: np.ndarray, counts: PairCounts) -> tuple[np.ndarray, np.ndarray]:
        """Per-battle scores by pair and outcome (i wins, j wins, tie): the ``theta`` gap part
        ``(pairs, 3)`` and the tie-parameter part ``(pairs, 3, len(extra))``."""
        ...


def meat(likelihood: PairLikelihood, params: np.ndarray, counts: PairCounts) -> np.ndarray:
    """``sum_c g_c g_c^T`` over clusters ``c`` of summed per-battle scores ``g_c`` (dense, q x q).

    With ``W = sum_c c c^T`` over the clusters' cell counts (:meth:`.PairCounts.cell_products`)
    and the per-battle score ``s_k`` of cell ``k``, this is ``sum_kl W_kl s_k s_l^T``; a
    cell's score has two ``theta`` entries (+-gap at i and j) and the tie parameters'.
    """
    gap, extra = likelihood.outcome_scores(params, counts)
    m, n_extra = counts.n_models, extra.shape[-1]
    q = m + n_extra
    pair = np.arange(3 * len(counts.i)) // 3
    index = np.column_stack([counts.i[pair], counts.j[pair], np.broadcast_to(m + np.arange(n_extra), (len(pair), n_extra))])
    value = np.column_stack([gap.ravel(), -gap.ravel(), extra.reshape(len(pair), n_extra)])
    rows, cols, weight = counts.cell_products()
    flat = (index[rows][:, :, None] * q + index[cols][:, None, :]).ravel()
    contribution = (weight[:, None, None] * value[rows][:, :, None] * value[cols][:, None, :]).ravel()
    return np.bincount(flat, contribution, q * q).reshape(q, q)


class HalfTie:
    """Bradley-Terry (1952) with a tie counted as half a win for each side.

    ``P(i beats j) = sigmoid(theta_i - theta_j)``; a tie contributes
    ``0.5 log p + 0.5 log(1 - p)``. This is the convention of evalica (``tie_weight=0.5``)
    and of FastChat's ``compute_elo_mle_with_tie`` (a tie is one A-win plus one B-win of
    duplicated battles), so ratings match theirs. It is a quasi-likelihood: use sandwich
    or bootstrap intervals with it, not the model-based ones.
    """

    extra: tuple[str, ...] = ()

    def start(self, counts: PairCounts) -> np.ndarray:
        return np.zeros(counts.n_models)

    def loglik(self, params, counts):
        d = _diff(params, counts)
        won = counts.wins_i + 0.5 * counts.ties
        if d.ndim > 1:  # a batch: one value per round (bt.newton_rounds)
            return np.sum(won * d - counts.totals * np.logaddexp(0.0, d), axis=-1)
        return float(np.sum(won * d - counts.totals * np.logaddexp(0.0, d)))

    def gradient(self, params, counts, incidence):
        p = 1.0 / (1.0 + np.exp(-_diff(params, counts)))
        return _scatter(counts.wins_i + 0.5 * counts.ties - counts.totals * p, incidence)

    def information(self, params, counts):  # (rounds, m, m) for a batch
        p = 1.0 / (1.0 + np.exp(-_diff(params, counts)))
        return _laplacian(counts, counts.totals * p * (1.0 - p))

    def outcome_scores(self, params, counts):
        p = 1.0 / (1.0 + np.exp(-_diff(params, counts)))
        return np.stack([1 - p, -p, 0.5 - p], axis=-1), np.zeros((len(p), 3, 0))


class Davidson:
    """Davidson's (1970) tie model, parameters ``(theta, log nu)``.

    With ``pi = exp(theta)``: ``P(i wins) = pi_i / Z``, ``P(tie) = nu sqrt(pi_i pi_j) / Z``,
    ``Z = pi_i + pi_j + nu sqrt(pi_i pi_j)`` (Davidson 1970, eqs. 2.1-2.2). Among decisive
    battles it is plain Bradley-Terry, so ``theta`` sits on the same Elo scale.
    """

    extra: tuple[str, ...] = ("log_nu",)

    def start(self, counts: PairCounts) -> np.ndarray:
        tie_rate = counts.ties.sum() / counts.totals.sum()
        if tie_rate == 0:
            raise ValueError("the Davidson tie model needs at least one tie (nu would be 0)")
        # At equal strengths P(tie) = nu / (2 + nu).
        return np.r_[np.zeros(counts.n_models), np.log(2 * tie_rate / (1 - tie_rate))]

    @staticmethod
    def _probs(params, counts):
        d = _diff(params[..., :-1], counts)
        eta = params[..., -1:] if params.ndim > 1 else params[-1]
        log_z = np.logaddexp(np.logaddexp(d / 2, -d / 2), eta)
        return d, eta, np.exp(d / 2 - log_z), np.exp(-d / 2 - log_z), np.exp(eta - log_z), log_z

    def loglik(self, params, counts):
        d, eta, *_, log_z = self._probs(params, counts)
        return float(np.sum((counts.wins_i - counts.wins_j) * d / 2 + counts.ties * eta - counts.totals * log_z))

    def gradient(self, params, counts, incidence):
        _, _, p_i, p_j, p_t, _ = self._probs(params, counts)
        g_theta = _scatter((counts.wins_i - counts.wins_j) / 2 - counts.totals * (p_i - p_j) / 2, incidence)
        g_eta = np.sum(counts.ties - counts.totals * p_t, axis=-1)
        return np.concatenate([g_theta, np.asarray(g_eta)[..., None]], axis=-1)

    def _assemble(self, counts, dd, d_eta, eta_eta):
        m = counts.n_models
        out = np.empty((m + 1, m + 1))
        out[:m, :m] = _laplacian(counts, dd)
        cross = _scatter(d_eta, counts.incidence())
        out[:m, m] = out[m, :m] = cross
        out[m, m] = eta_eta
        return out

    def information(self, params, counts):
        _, _, p_i, p_j, p_t, _ = self._probs(params, counts)
        half_gap = (p_i - p_j) / 2
        n = counts.totals
        return self._assemble(
            counts,
            n * ((p_i + p_j) / 4 - half_gap**2),
            -n * half_gap * p_t,
            float(np.sum(n * (p_t - p_t**2))),
        )

    def outcome_scores(self, params, counts):
        _, _, p_i, p_j, p_t, _ = self._probs(params, counts)
        half_gap = (p_i - p_j) / 2
        gap = np.stack([0.5 - half_gap, -0.5 - half_gap, -half_gap], axis=-1)
        return gap, np.stack([-p_t, -p_t, 1 - p_t], axis=-1)[..., None]


LIKELIHOODS: dict[str, type] = {"half": HalfTie, "davidson": Davidson}
