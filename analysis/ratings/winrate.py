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

Length control is AlpacaEval's ``length_controlled_v1`` GLM, fitted per model with p as a
soft target:

    logit p = theta + phi * tanh(delta / sd(delta)) + psi * difficulty_i

delta being the baseline's output minus the model's, in characters; the length-controlled
win rate is the fit's mean prediction over the model's instructions at delta = 0.
``difficulty_i`` is fixed, not fitted per model, and comes from one of two places
(``lc_difficulty`` says which):

* ``"alpaca_eval"``: AlpacaEval's own annotator and baseline (weighted_alpaca_eval_gpt4_turbo
  against gpt4_1106_preview). The difficulty is the per-instruction term of AlpacaEval's
  joint fit over many models (each with its own length slope and bias), derived by
  ``scripts/alpaca_eval_difficulty.py`` from the 55 models in
  ``../shared/data/alpaca_eval`` and shipped in ``data/alpaca_eval_instruction_difficulty.csv``.
  AlpacaEval also adds the annotations of two length-gamed copies of the baseline (its
  ``_verbose`` and ``_concise`` outputs) to every per-model fit, with weight 0.2 and no
  intercept: they pull phi and psi towards what a pure length change does to this judge.
  Those annotations are not public in the shared data, so their pull is stood in for by a
  Gaussian prior on (phi, psi) (a quadratic penalty, which is what the extra rows add to
  the log-likelihood up to second order) whose centre and precision the same script
  estimates from the published LC win rates of the models in the joint fit; models left
  out of both fits check it (see ``data/alpaca_eval_length_control.json``). AlpacaEval
  also picks an L1 penalty by cross-validation; with the prior it is left out;
* ``"leave-one-out proxy"``: any other data. For model m on instruction i, the mean logit
  of the *other* models' preferences on i (clipped to [0.001, 0.999]; instructions matched
  by ``prompt_id``), with no prior: a plain maximum-likelihood fit. With one model only (or
  no ``prompt_id``) the term is left out (``"none"``).

``lc_delta_method_se`` is the standard error of the LC win rate: the sandwich covariance
of the fit (clustered by ``pair_id`` where battles carry one; with one verdict per pair, as
in AlpacaEval's annotations, White's HC0), carried to the LC win rate by the delta method;
``lc_lower``/``lc_upper`` are built on it. AlpacaEval's leaderboard column
``lc_standard_error`` is a different number, given here as ``lc_instruction_spread_se``:
the standard deviation of the per-instruction length-controlled predictions over
sqrt(n). It measures how much the predictions vary between instructions, not how
uncertain the LC win rate is (it ignores the fit's own uncertainty), so no interval is
built on it. A model whose fit does not converge or whose outcomes are (quasi-)separated,
e.g. one that won every battle, has no LC win rate: NaN (null in JSON), and ``lc_note``
says why, instead of a 100 [100, 100] that only reflects a diverged fit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.stats import cluster_codes, fit_logit, z_two_sided
from pairlab.resources import data_file


__all__ = ["LengthControl", "WinRateTable", "alpaca_eval_length_control", "find_baseline", "length_controlled",
           "win_rates"]

LENGTH_CONTROL_FILE = data_file("alpaca_eval_length_control.json")

_TIE_SCORE = 0.5
# Preferences are clipped before taking logits for the difficulty proxy (weighted
# annotators give values like 1e-7).
_CLIP = 1e-3
_SCORE = {"model_a": 1.0, "model_b": 0.0, "tie": _TIE_SCORE, "tie (bothbad)": _TIE_SCORE}
_NO_LC = {"lc_win_rate": float("nan"), "lc_delta_method_se": float("nan"), "lc_lower": float("nan"),
          "lc_upper": float("nan"), "lc_instruction_spread_se": float("nan"), "length_coef": float("nan")}


@dataclass(frozen=True)
class WinRateTable:
    """One row per model against ``baseline``; rates in percent (see the module docstring)."""

    baseline: str
    table: pd.DataFrame
    level: float

    def to_dict(self) -> dict:
        rows = [{k: _plain(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {"method": "winrate", "baseline": self.baseline, "level": self.level, "ratings": rows}


@dataclass(frozen=True)
class LengthControl:
    """The fixed parts of AlpacaEval's length_controlled_v1 GLM for one annotator and baseline.

    ``difficulty``: the instruction-difficulty term by ``prompt_id``; ``prior_mean`` and
    ``prior_precision``: the Gaussian prior on (length coefficient, difficulty coefficient)
    that stands in for the gamed-baseline rows (see the module docstring).
    """

    annotator: str
    baseline: str
    difficulty: pd.Series
    prior_mean: np.ndarray
    prior_precision: np.ndarray

    def covers(self, judges: pd.Series, baseline: str, prompt_ids: pd.Series) -> bool:
        """Whether these battles are the ones the difficulty was fitted for."""
        return (baseline == self.baseline and judges is not None and bool((judges == self.annotator).all())
                and bool(prompt_ids.isin(self.difficulty.index).all()))


@lru_cache(maxsize=2)
def alpaca_eval_length_control(path: Path = LENGTH_CONTROL_FILE) -> LengthControl:
    """The shipped difficulty and prior (``scripts/alpaca_eval_difficulty.py`` writes them)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    table = pd.read_csv(path.parent / spec["difficulty_file"], dtype={"prompt_id": str})
    prior = spec["prior"]
    return LengthControl(
        annotator=spec["annotator"],
        baseline=spec["baseline"],
        difficulty=table.set_index("prompt_id")["instruction_difficulty"],
        prior_mean=np.array([prior["length"]["mean"], prior["difficulty"]["mean"]]),
        prior_precision=np.array([prior["length"]["precision"], prior["difficulty"]["precision"]]),
    )


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None  # JSON has no NaN or Infinity
    return value


def baseline_candidates(frame: pd.DataFrame) -> set:
    """The models that take part in every battle."""
    common: set | None = None
    for pair in frame[["model_a", "model_b"]].drop_duplicates().itertuples(index=False):
        common = set(pair) if common is None else common & set(pair)
    return common or set()


def find_baseline(frame: pd.DataFrame) -> str:
    """The model that takes part in every battle (AlpacaEval's and Arena-Hard's design).

    With two models both take part in every battle; then the battles' own word decides:
    the ``baseline`` the records name (AlpacaEval's ``generator_1``, kept in
    ``meta.baseline``), when it is one of them; else the candidates are named in the error.
    """
    common = baseline_candidates(frame)
    if len(common) == 1:
        return common.pop()
    named = _named_baselines(frame) & common if common else set()
    if len(named) == 1:
        return named.pop()
    if len(common) > 1:
        raise ValueError(f"{' and '.join(sorted(map(str, common)))} both take part in every battle; "
                         "name the baseline (--baseline MODEL)")
    raise ValueError("no single model takes part in every battle; name the baseline (--baseline MODEL)")


def _named_baselines(frame: pd.DataFrame) -> set:
    """Baselines the records name themselves (AlpacaEval's generator_1, see :mod:`analysis.frames`)."""
    return set(frame["baseline"].dropna()) if "baseline" in frame.columns else set()


def _first_preference(frame: pd.DataFrame) -> np.ndarray:
    """P(model_a better) per battle: prob_a where given, else from the winner."""
    from_winner = frame["winner"].map(_SCORE).to_numpy(dtype=float)
    if "prob_a" not in frame.columns:
        return from_winner
    prob_a = pd.to_numeric(frame["prob_a"], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(prob_a), from_winner, prob_a)


def win_rates(
    frame: pd.DataFrame, baseline: str | None = None, *, level: float = 0.95, instruction_difficulty: bool = True,
    length_control: LengthControl | None = None,
) -> WinRateTable:
    """Every model's win rate (and length-controlled win rate) against ``baseline``.

    ``frame`` holds battles (``model_a, model_b, winner``, optional ``prob_a``,
    ``response_a``/``response_b`` for length control, ``prompt_id``, ``parse_error``);
    rows with a ``parse_error`` are dropped and counted in ``n_dropped``.
    ``instruction_difficulty=False`` leaves the difficulty term out of the LC fit;
    ``length_control`` replaces the shipped AlpacaEval difficulty and prior (used where the
    battles are AlpacaEval's own, see the module docstring).
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
    difficulty, prior, source = None, None, "none"
    if instruction_difficulty:
        difficulty, prior, source = _difficulty_source(involved, baseline, other, p, failed, length_control)
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
               "n_dropped": int((mask & failed).sum()), **_NO_LC, "lc_difficulty": source,
               "lc_note": "not fitted: " + ("no verdicts" if has_texts else "the battles carry no response texts")}
        if n:
            mean = scores.mean()
            se = scores.std(ddof=1) / math.sqrt(n) if n > 1 else float("nan")
            discrete = ((scores > 0.5).sum() + (scores == 0.5).sum() / 2) / n
            row.update(win_rate=100 * mean, standard_error=100 * se, lower=100 * (mean - z * se),
                       upper=100 * (mean + z * se), discrete_win_rate=100 * discrete)
            if has_texts:
                row.update(length_controlled(scores, delta[keep], None if difficulty is None else difficulty[keep],
                                             groups[keep], level=level, prior=prior))
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("win_rate", ascending=False, ignore_index=True)
    return WinRateTable(baseline=baseline, table=table, level=level)


def _difficulty_source(frame, baseline, other, p, failed, length_control):
    """(difficulty per battle, prior, name): AlpacaEval's shipped term where it applies."""
    if "prompt_id" not in frame.columns or frame["prompt_id"].isna().any():
        return None, None, "none"
    control = length_control or alpaca_eval_length_control()
    if control.covers(frame.get("judge"), baseline, frame["prompt_id"]):
        difficulty = control.difficulty.reindex(frame["prompt_id"]).to_numpy(dtype=float)
        return difficulty, (control.prior_mean, control.prior_precision), "alpaca_eval"
    proxy = _difficulty(frame, other, p, failed)
    return proxy, None, "none" if proxy is None else "leave-one-out proxy"


def _difficulty(frame: pd.DataFrame, other: np.ndarray, p: np.ndarray, failed: np.ndarray) -> np.ndarray | None:
    """Per battle: the mean logit preference of the other models on the same instruction."""
    if len(set(other)) < 2:
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
    if not (count > 0).any():  # no instruction shared with another model: nothing to borrow
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (total["sum"].fillna(0).to_numpy() - own_sum) / count
    # An instruction no other model was judged on gets the average difficulty.
    return np.where(count > 0, out, out[count > 0].mean())


def length_controlled(
    scores: np.ndarray, delta: np.ndarray, difficulty: np.ndarray | None, groups: np.ndarray, *,
    level: float = 0.95, prior: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    """One model's length_controlled_v1 fit (see the module docstring), rates in percent.

    ``scores``: P(model better) per battle; ``delta``: baseline's length minus the model's;
    ``difficulty``: the fixed instruction term per battle (or None); ``groups``: clusters
    for the sandwich; ``prior``: (mean, precision) of a Gaussian prior on the length and
    difficulty coefficients, or None for plain maximum likelihood.
    """
    sd = delta.std(ddof=1) if len(delta) > 1 else 0.0
    columns = [np.ones(len(scores))]
    if sd > 0:
        columns.append(np.tanh(delta / sd))
    if difficulty is not None:
        columns.append(difficulty)
    x = np.column_stack(columns)
    try:
        if prior is None:
            fit = fit_logit(x, scores, groups, small_sample=False)
            params, cov = fit.params, fit.cov
        else:
            if x.shape[1] != 3:
                raise ValueError("the prior needs both the length and the difficulty term")
            # The intercept has no prior; the prior counts as known in the sandwich, so where the
            # data cannot tell the length slope from the bias the interval shows the data's noise.
            # A hopeless instruction is predicted near 0 by design: no certainty check.
            fit = fit_logit(x, scores, groups, penalty=np.r_[0.0, prior[1]], centre=np.r_[0.0, prior[0]],
                            small_sample=False, check_certainty=False)
            params, cov = fit.params, fit.cov
    except ValueError as exc:
        return {**_NO_LC, "lc_note": f"not fitted: {exc}"}
    # Prediction at delta = 0: the length column contributes nothing.
    counterfactual = x.copy()
    if sd > 0:
        counterfactual[:, 1] = 0.0
    predicted = 1 / (1 + np.exp(-(counterfactual @ params)))
    gradient = (predicted * (1 - predicted)) @ counterfactual / len(predicted)
    lc, se = float(predicted.mean()), float(np.sqrt(gradient @ cov @ gradient))
    spread = float(predicted.std(ddof=1) / math.sqrt(len(predicted))) if len(predicted) > 1 else float("nan")
    z = z_two_sided(level)
    return {
        "lc_win_rate": 100 * lc,
        "lc_delta_method_se": 100 * se,
        "lc_lower": 100 * (lc - z * se),
        "lc_upper": 100 * (lc + z * se),
        "lc_instruction_spread_se": 100 * spread,
        "length_coef": float(params[1]) if sd > 0 else float("nan"),
        "lc_note": None,
    }
