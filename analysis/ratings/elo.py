"""Online Elo ratings, as run over a stream of battles, and their order-averaged variant.

Update (Elo 1978; FastChat's ``compute_online_elo``): with expected score
``E_a = 1 / (1 + base ** ((R_b - R_a) / scale))`` and actual score ``S_a`` (1, 0, or 1/2
for a tie), ``R_a += k (S_a - E_a)`` and ``R_b -= k (S_a - E_a)``. Online Elo depends on
the order of the battles; Boubdir et al. 2023 ("Elo Uncovered", sec. 5) recommend the mean
over many random permutations, which :func:`online_elo` computes with ``orders``.

Bootstrap resamples (:func:`bootstrap_orders`) draw battles, or whole clusters of them
(the votes sharing a ``pair_id``), with replacement. Cluster resamples differ in length;
to stream them side by side the shorter ones are padded with the index ``n_battles``, a
battle that :func:`online_elo` runs as a no-op.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_orders", "online_elo", "random_orders"]


def _scores(outcome: np.ndarray) -> np.ndarray:
    # Outcome codes from .counts: 0 = A wins, 1 = B wins, 2 = tie.
    return np.array([1.0, 0.0, 0.5])[outcome]


def online_elo(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    n_models: int,
    *,
    k: float = 4.0,
    base: float = 10.0,
    scale: float = 400.0,
    init: float = 1000.0,
    orders: np.ndarray | None = None,
) -> np.ndarray:
    """Final Elo ratings after streaming the battles ``(a[t], b[t], outcome[t])``.

    ``a``/``b`` are model codes in ``range(n_models)``. Without ``orders`` the battles are
    taken as given and one rating vector ``(n_models,)`` is returned. ``orders`` of shape
    ``(rows, length)`` holds one sequence of battle indices per row (a permutation, or a
    bootstrap resample); all rows are streamed side by side and ``(rows, n_models)``
    ratings come back. In ``orders`` the index ``len(a)`` is padding and changes nothing.
    """
    score = _scores(outcome)
    if orders is None:
        # Plain floats: a scalar loop over Python lists is several times faster than
        # numpy scalar indexing for one stream.
        ratings = [float(init)] * n_models
        for i, j, s in zip(a.tolist(), b.tolist(), score.tolist()):
            delta = k * (s - 1.0 / (1.0 + base ** ((ratings[j] - ratings[i]) / scale)))
            ratings[i] += delta
            ratings[j] -= delta
        return np.array(ratings)
    # The pad: model 0 ties itself, so its delta is k (1/2 - 1/(1 + base^0)) = 0.0 exactly
    # and a padded row ends with bit-for-bit the ratings of its unpadded stream.
    a, b, score = np.r_[a, 0], np.r_[b, 0], np.r_[score, 0.5]
    rows = np.arange(len(orders))
    ratings = np.full((len(orders), n_models), float(init))
    for t in range(orders.shape[1]):
        idx = orders[:, t]
        i, j = a[idx], b[idx]
        delta = k * (score[idx] - 1.0 / (1.0 + base ** ((ratings[rows, j] - ratings[rows, i]) / scale)))
        ratings[rows, i] += delta
        ratings[rows, j] -= delta
    return ratings


def random_orders(n_battles: int, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` seeded random permutations of the battles."""
    return np.argsort(rng.random((rows, n_battles)), axis=1)


def bootstrap_orders(
    n_battles: int, rows: int, rng: np.random.Generator, *, clusters: np.ndarray | None = None
) -> np.ndarray:
    """``rows`` bootstrap resamples of the battles, each in random order.

    Without ``clusters`` a resample draws ``n_battles`` indices with replacement, as
    FastChat's ``get_bootstrap_result`` does with ``df.sample(frac=1.0, replace=True)``.
    With ``clusters`` (each battle's cluster, coded ``0..K-1``) it draws K clusters with
    replacement and takes every battle of each (Field & Welsh 2007), shuffled; rows shorter
    than the longest are padded with ``n_battles`` (see :func:`online_elo`).
    """
    n_clusters = n_battles if clusters is None else int(clusters.max()) + 1
    drawn = rng.integers(0, n_clusters, size=(rows, n_clusters))
    if clusters is None:
        return drawn
    sizes = np.bincount(clusters, minlength=n_clusters)
    if (sizes == 1).all():
        # One battle per cluster: the draws are already a resample in random order (with
        # codes in the battles' order, the very one the unclustered bootstrap draws).
        return np.argsort(clusters)[drawn]
    lengths = np.array([sizes[picks].sum() for picks in drawn])
    out = np.full((rows, lengths.max()), n_battles)
    battle = np.arange(n_battles)
    for row, picks, length in zip(out, drawn, lengths):
        # Order is shuffled below, so only how often each cluster was drawn matters.
        row[:length] = np.repeat(battle, np.bincount(picks, minlength=n_clusters)[clusters])
    return rng.permuted(out, axis=1, out=out)
