"""Win rate against a baseline, as AlpacaEval computes it, and its length-controlled twin.

Dubois, Y. et al. (2023). AlpacaFarm / AlpacaEval; Dubois, Y., Galambosi, B., Liang, P. &
Hashimoto, T. (2024). Length-controlled AlpacaEval: a simple way to debias automatic
evaluators. arXiv:2404.04475.

Per battle against the baseline, the model's preference is ``p`` = P(model better): from
``prob_a`` where the judge gave one (AlpacaEval's weighted annotators do), else 1, 0 or
1/2 from the winner (ties of every kind are 1/2; AlpacaEval's draws are preferences of 0
or 1.5). Then, in percent:

* ``win_rate`` = mean(p); ``standard_error`` = sd(p) / sqrt(n) with the n - 1 sample sd;
  ``lower``/``upper`` the Wald interval win_rate +- z * standard_error;
* ``discrete_win_rate`` = (#{p > 1/2} + #{p = 1/2} / 2) / n;
* ``n`` counts battles with a verdict; ``n_dropped`` those without (AlpacaEval's null
  preferences, our parse failures): dropped, never counted as draws.

Length control follows AlpacaEval's ``length_controlled_v1`` GLM, logit p = theta_model +
phi * tanh(delta / sd(delta)) + psi * instruction_difficulty, delta being the difference in
characters between the two outputs, fitted with p as a soft target; the length-controlled
win rate is the fit's mean prediction over the instructions at delta = 0. AlpacaEval takes
each instruction's difficulty (fitted once over its whole leaderboard) and extra rows of
length-gamed baselines that regularise the fit (weight 0.2) from files it downloads at
run time; we have neither. Instead:

* instruction difficulty: for model m on instruction i, the mean logit of the *other*
  models' preferences on i (clipped to [0.001, 0.999]; instructions are matched by
  ``prompt_id``). AlpacaEval's difficulty is also fitted from many models' judgments of
  the same instruction; leaving m out keeps its own outcome off the right-hand side.
  With one model only (or no ``prompt_id``) the term is left out;
* no gamed-baseline rows, and an unpenalised maximum-likelihood fit (a Binomial GLM with
  fractional response) where AlpacaEval uses an L1-penalised logistic regression with
  cross-validated strength.

``lc_standard_error`` comes from the sandwich covariance through the delta method,
clustered by ``pair_id`` where battles carry one (several verdicts on one pair are not
independent; with one verdict per pair, as in AlpacaEval's annotations, it is White's
HC0). A model whose fit does not converge or whose outcomes are (quasi-)separated, e.g.
one that won every battle, has no LC win rate: NaN (null in JSON), and ``lc_note`` says
why, instead of a 100 [100, 100] that only reflects a diverged fit. The checks are
:func:`analysis.stats.fit_logit`'s. The tests show how far this lands from the published
LC numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats import cluster_codes, fit_logit

from .table import z_two_sided

__all__ = ["WinRateTable", "find_baseline", "win_rates"]

_TIE_SCORE = 0.5
# Preferences are clipped before taking logits for the difficulty proxy (weighted
# annotators give values like 1e-7).
_CLIP = 1e-3
_SCORE = {"model_a": 1.0, "model_b": 0.0, "tie": _TIE_SCORE, "tie (bothbad)": _TIE_SCORE}
_NO_LC = {"lc_win_rate": float("nan"), "lc_standard_error": float("nan"), "lc_lower": float("nan"),
          "lc_upper": float("nan"), "length_coef": float("nan")}


@dataclass(frozen=True)
class WinRateTable:
    """One row per model against ``baseline``; rates in percent (see the module docstring)."""

    baseline: str
    table: pd.DataFrame
    level: float

    def to_dict(self) -> dict:
        rows = [{k: _plain(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {"method": "winrate", "baseline": self.baseline, "level": self.level, "ratings": rows}


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None  # JSON has no NaN or Infinity
    return value


def find_baseline(frame: pd.DataFrame) -> str:
    """The model that takes part in every battle (AlpacaEval's and Arena-Hard's design).

    With only two models either could be the baseline (AlpacaEval even shows them in a
    random order), so it must be named.
    """
    common: set | None = None
    for pair in frame[["model_a", "model_b"]].drop_duplicates().itertuples(index=False):
        common = set(pair) if common is None else common & set(pair)
    if not common or len(common) != 1:
        raise ValueError("no single model takes part in every battle; name the baseline (--baseline MODEL)")
    return common.pop()


def _first_preference(frame: pd.DataFrame) -> np.ndarray:
    """P(model_a better) per battle: prob_a where given, else from the winner."""
    from_winner = frame["winner"].map(_SCORE).to_numpy(dtype=float)
    if "prob_a" not in frame.columns:
        return from_winner
    prob_a = pd.to_numeric(frame["prob_a"], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(prob_a), from_winner, prob_a)


def win_rates(
    frame: pd.DataFrame, baseline: str | None = None, *, level: float = 0.95, instruction_difficulty: bool = True
) -> WinRateTable:
    """Every model's win rate (and length-controlled win rate) against ``baseline``.

    ``frame`` holds battles (``model_a, model_b, winner``, optional ``prob_a``,
    ``response_a``/``response_b`` for length control, ``prompt_id``, ``parse_error``);
    rows with a ``parse_error`` are dropped and counted in ``n_dropped``.
    ``instruction_difficulty=False`` leaves the difficulty proxy out of the LC fit.
    ``lc_note`` is null where the LC win rate was fitted and says why it is NaN otherwise.
    """
    baseline = baseline or find_baseline(frame)
    involved = frame[((frame["model_a"] == baseline) ^ (frame["model_b"] == baseline)).to_numpy()]
    if involved.empty:
        raise ValueError(f"no battles against the baseline {baseline!r}")
    failed = involved["parse_error"].notna().to_numpy() if "parse_error" in involved else np.zeros(len(involved), bool)
    baseline_first = (involved["model_a"] == baseline).to_numpy()
    other = np.where(baseline_first, involved["model_b"], involved["model_a"])
    first = _first_preference(involved)
    p = np.where(baseline_first, 1.0 - first, first)
    if np.isnan(p[~failed]).any():
        raise ValueError("a battle has neither a known winner nor prob_a")
    has_texts = {"response_a", "response_b"} <= set(involved.columns) and involved[["response_a", "response_b"]].notna().all().all()
    if has_texts:
        length_a = involved["response_a"].str.len().to_numpy(dtype=float)
        length_b = involved["response_b"].str.len().to_numpy(dtype=float)
        delta = np.where(baseline_first, length_a - length_b, length_b - length_a)  # baseline minus model
    difficulty = _difficulty(involved, other, p, failed) if instruction_difficulty else None
    groups = cluster_codes(involved["pair_id"] if "pair_id" in involved.columns else np.arange(len(involved)))
    z = z_two_sided(level)
    rows = []
    for model in sorted(set(other)):
        mask = other == model
        keep = mask & ~failed
        scores = p[keep]
        n = len(scores)
        row = {"model": model, "baseline": baseline, "win_rate": float("nan"), "standard_error": float("nan"),
               "lower": float("nan"), "upper": float("nan"), "discrete_win_rate": float("nan"), "n": n,
               "n_dropped": int((mask & failed).sum()), **_NO_LC,
               "lc_note": "not fitted: " + ("no verdicts" if has_texts else "the battles carry no response texts")}
        if n:
            mean = scores.mean()
            se = scores.std(ddof=1) / math.sqrt(n) if n > 1 else float("nan")
            discrete = ((scores > 0.5).sum() + (scores == 0.5).sum() / 2) / n
            row.update(win_rate=100 * mean, standard_error=100 * se, lower=100 * (mean - z * se),
                       upper=100 * (mean + z * se), discrete_win_rate=100 * discrete)
            if has_texts:
                row.update(_length_controlled(scores, delta[keep], None if difficulty is None else difficulty[keep],
                                              groups[keep], z))
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("win_rate", ascending=False, ignore_index=True)
    return WinRateTable(baseline=baseline, table=table, level=level)


def _difficulty(frame: pd.DataFrame, other: np.ndarray, p: np.ndarray, failed: np.ndarray) -> np.ndarray | None:
    """Per battle: the mean logit preference of the other models on the same instruction."""
    if "prompt_id" not in frame.columns or frame["prompt_id"].isna().any() or len(set(other)) < 2:
        return None
    clipped = np.clip(p, _CLIP, 1 - _CLIP)
    logit = pd.Series(np.log(clipped / (1 - clipped)))
    prompt = frame["prompt_id"].to_numpy()
    known = ~failed & ~np.isnan(p)
    table = pd.DataFrame({"prompt": prompt[known], "model": other[known], "logit": logit[known].to_numpy()})
    by_prompt = table.groupby("prompt")["logit"].agg(["sum", "count"])
    own = table.groupby(["prompt", "model"])["logit"].agg(["sum", "count"])
    keys = pd.MultiIndex.from_arrays([prompt, other])
    own_sum = own["sum"].reindex(keys).fillna(0).to_numpy()
    own_count = own["count"].reindex(keys).fillna(0).to_numpy()
    total = by_prompt.reindex(prompt)
    count = total["count"].fillna(0).to_numpy() - own_count
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (total["sum"].fillna(0).to_numpy() - own_sum) / count
    # An instruction no other model was judged on gets the average difficulty.
    return np.where(count > 0, out, np.nanmean(np.where(count > 0, out, np.nan)))


def _length_controlled(
    scores: np.ndarray, delta: np.ndarray, difficulty: np.ndarray | None, groups: np.ndarray, z: float
) -> dict:
    """AlpacaEval's length_controlled_v1 GLM (see the module docstring for what differs)."""
    sd = delta.std(ddof=1) if len(delta) > 1 else 0.0
    columns = [np.ones(len(scores))]
    if sd > 0:
        columns.append(np.tanh(delta / sd))
    if difficulty is not None:
        columns.append(difficulty)
    x = np.column_stack(columns)
    try:
        fit = fit_logit(x, scores, groups, small_sample=False)
    except ValueError as exc:
        return {**_NO_LC, "lc_note": f"not fitted: {exc}"}
    # Prediction at delta = 0: the length column contributes nothing.
    counterfactual = x.copy()
    if sd > 0:
        counterfactual[:, 1] = 0.0
    predicted = 1 / (1 + np.exp(-(counterfactual @ fit.params)))
    gradient = (predicted * (1 - predicted)) @ counterfactual / len(predicted)
    lc, se = float(predicted.mean()), float(np.sqrt(gradient @ fit.cov @ gradient))
    return {
        "lc_win_rate": 100 * lc,
        "lc_standard_error": 100 * se,
        "lc_lower": 100 * (lc - z * se),
        "lc_upper": 100 * (lc + z * se),
        "length_coef": float(fit.params[1]) if sd > 0 else float("nan"),
        "lc_note": None,
    }
