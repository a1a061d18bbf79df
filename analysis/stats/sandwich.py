"""The cluster-robust covariance ``A^-1 B A^-1``, ``B`` the outer product of per-cluster score
sums (Liang & Zeger 1986; White 1982 for the fractional logit, Papke & Wooldridge 1996), with
statsmodels' small-sample factor G/(G-1) (N-1)/(N-K) when asked for
(``Logit(...).fit(cov_type="cluster")``, the slow twin of the tests).
"""

from __future__ import annotations

import numpy as np

from analysis.stats.clusters import cluster_codes

__all__ = ["sandwich"]


def sandwich(bread: np.ndarray, scores: np.ndarray, groups=None, *, small_sample: bool = False) -> np.ndarray:
    """``bread @ B @ bread.T`` with ``B`` the outer product of ``scores`` (rows x params)
    summed within each cluster of ``groups`` (None: every row its own cluster).

    ``small_sample`` multiplies by G/(G-1) (N-1)/(N-K), statsmodels' ``use_correction``.
    """
    scores = np.asarray(scores, dtype=float)
    n, k = scores.shape
    if groups is None:
        sums, g = scores, n
    else:
        codes = cluster_codes(groups)
        g_all = int(codes.max(initial=-1)) + 1
        sums = np.zeros((g_all, k))
        for c in range(k):
            sums[:, c] = np.bincount(codes, scores[:, c], g_all)
        g = int((np.bincount(codes, minlength=g_all) > 0).sum())
    factor = g / (g - 1) * (n - 1) / (n - k) if small_sample and g > 1 and n > k else 1.0
    return factor * bread @ (sums.T @ sums) @ bread.T
