"""The slow, obviously correct twin of :func:`analysis.ratings.bt.bradley_terry`, for tests.

One term per battle, no aggregation, a generic optimiser: the per-battle log-likelihood of
Bradley & Terry (1952), ``y log p + (1 - y) log(1 - p)`` with ``p = sigmoid(theta_a -
theta_b)`` and ``y`` = 1, 0 or 1/2 for a tie, maximised by BFGS with the first model fixed
at 0, then centred.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["reference_bradley_terry"]

_Y = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}


def reference_bradley_terry(model_a, model_b, winner) -> pd.Series:
    """Centred log-strengths (natural units) by plain per-battle maximum likelihood."""
    models = sorted(set(model_a) | set(model_b))
    position = {name: k for k, name in enumerate(models)}
    a = np.array([position[x] for x in model_a])
    b = np.array([position[x] for x in model_b])
    y = np.array([_Y[w] for w in winner])

    def negative_loglik(free: np.ndarray) -> float:
        theta = np.r_[0.0, free]
        d = theta[a] - theta[b]
        return float(-np.sum(y * d - np.logaddexp(0.0, d)))

    import scipy.optimize  # the slow twin only; kept off the CLI's start-up

    result = scipy.optimize.minimize(negative_loglik, np.zeros(len(models) - 1), method="BFGS", options={"gtol": 1e-10})
    theta = np.r_[0.0, result.x]
    return pd.Series(theta - theta.mean(), index=models)
