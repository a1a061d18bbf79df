"""AlpacaEval's instruction difficulty, from the joint fit over many models, and the prior
that stands in for its gamed-baseline rows (Dubois et al. 2024, arXiv:2404.04475, sec. 3;
AlpacaEval's ``notebooks/instruction_difficulty.ipynb``).

Input: AlpacaEval annotation rows with ``index`` (the instruction, 0-804), ``generator_2``
(the model), ``preference`` (in [1, 2]; 0 is a draw) and ``len_1``/``len_2`` (characters of
the baseline's and the model's outputs), as in
``../shared/data/alpaca_eval/alpaca_eval_2_annotations_55_models.jsonl.gz``.

* :func:`joint_difficulty`: the joint GLM over every model m and instruction i,

      logit p_mi = theta_m + phi_m * tanh(delta_mi / sd_m) + d_i,

  each model with its own bias and length slope, ``d`` the per-instruction term (d_0 = 0
  as AlpacaEval's dummy coding), fitted by maximum likelihood with p as a soft target.
  AlpacaEval picks an L1 penalty by cross-validation; the fit here is unpenalised.
* :func:`calibrate_prior`: the centre and precision of the Gaussian prior on a model's
  (length, difficulty) coefficients that reproduce the published LC win rates of the
  models in the joint fit best (least squares). AlpacaEval adds the annotations of the
  baseline's length-gamed copies to every fit instead (weight 0.2, no intercept); their
  rows are not in the shared data, and in the log-likelihood they act as such a quadratic
  pull on the two coefficients.
* :func:`model_lc`: one model's LC win rate from its rows with the difficulty and prior
  fixed (:func:`analysis.ratings.winrate.length_controlled`). ``by_position=True`` gives
  a model AlpacaEval's alignment: AlpacaEval looks the difficulty up by the row's position
  in the model's annotation file, so for a model that lacks an instruction every later
  row gets its neighbour's difficulty; the published numbers of those models carry that.

``scripts/alpaca_eval_difficulty.py`` runs these and writes the shipped files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from analysis.stats import FitError

from .winrate import length_controlled

__all__ = ["calibrate_prior", "joint_difficulty", "model_lc", "read_rows"]


def read_rows(path) -> pd.DataFrame:
    """Annotation rows, one per (model, instruction), with ``p`` = P(model better) and
    ``delta`` = the baseline's length minus the model's. Duplicate copies of a model's
    annotations, the baseline against itself and rows without a preference are left out."""
    rows = pd.read_json(path, lines=True)
    rows = rows.drop_duplicates(["generator_2", "index"])
    rows = rows[(rows["generator_2"] != rows["generator_1"]) & rows["preference"].notna()].copy()
    rows["p"] = rows["preference"].astype(float).replace({0.0: 1.5}) - 1.0
    rows["delta"] = (rows["len_1"] - rows["len_2"]).astype(float)
    return rows.reset_index(drop=True)


def joint_difficulty(rows: pd.DataFrame, n_instructions: int) -> pd.Series:
    """The per-instruction term ``d`` of the joint fit (see the module docstring)."""
    rows = rows[rows["len_2"] > 0]  # AlpacaEval's notebook leaves out empty outputs
    models = pd.Index(sorted(rows["generator_2"].unique()))
    m = models.get_indexer(rows["generator_2"])
    i = rows["index"].to_numpy()
    sd = rows.groupby("generator_2")["delta"].transform("std").to_numpy()
    x = np.tanh(rows["delta"].to_numpy() / sd)
    y = rows["p"].to_numpy()
    k = len(models)

    def loss(w):
        d = np.r_[0.0, w[2 * k:]]
        eta = w[:k][m] + w[k:2 * k][m] * x + d[i]
        value = (y * np.logaddexp(0, -eta) + (1 - y) * np.logaddexp(0, eta)).sum()
        r = 1 / (1 + np.exp(-eta)) - y
        grad = np.r_[np.bincount(m, r, k), np.bincount(m, r * x, k), np.bincount(i, r, n_instructions)[1:]]
        return value, grad

    fit = minimize(loss, np.zeros(2 * k + n_instructions - 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 10_000, "gtol": 1e-7})
    if not fit.success:
        raise FitError(f"the joint difficulty fit did not converge: {fit.message}")
    return pd.Series(np.r_[0.0, fit.x[2 * k:]], index=pd.RangeIndex(n_instructions, name="index"),
                     name="instruction_difficulty")


def model_lc(rows: pd.DataFrame, difficulty: pd.Series, prior, *, by_position: bool = False) -> dict:
    """One model's length-controlled fit (rows of one ``generator_2``), rates in percent."""
    where = np.arange(len(rows)) if by_position else rows["index"].to_numpy()
    return length_controlled(rows["p"].to_numpy(), rows["delta"].to_numpy(), difficulty.to_numpy()[where],
                             np.arange(len(rows)), prior=prior)


def calibrate_prior(rows: pd.DataFrame, difficulty: pd.Series, published: pd.Series,
                    n_instructions: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, precision) of the prior on (length, difficulty) coefficients that brings the
    LC win rates of the models in ``published`` (percent) closest to it (least squares)."""
    groups = {model: frame for model, frame in rows.groupby("generator_2") if model in published.index}
    position = {model: len(frame) < n_instructions for model, frame in groups.items()}

    def loss(v):
        prior = (v[:2], np.exp(v[2:]))
        total = 0.0
        for model, frame in groups.items():
            lc = model_lc(frame, difficulty, prior, by_position=position[model])["lc_win_rate"]
            total += (lc - published[model]) ** 2 if np.isfinite(lc) else 1e4
        return total

    start = np.array([-1.6, 1.0, np.log(10.0), np.log(10.0)])
    fit = minimize(loss, start, method="Nelder-Mead", options={"maxiter": 400, "xatol": 1e-3, "fatol": 1e-4})
    return fit.x[:2], np.exp(fit.x[2:])
