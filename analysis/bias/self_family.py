"""Self-family bias: does a judge favour responses from its own model family?

Wataoka et al. 2024, "Self-Preference Bias in LLM-as-a-Judge", measure self-preference as
an equal-opportunity gap (Hardt et al. 2016): among responses the humans preferred, how
much more often the judge also prefers them when they are its own than when they are
another model's. We generalise "its own" to "its family" (``judge_family`` against
``family_a`` / ``family_b``):

    delta = P(judge picks R | reference picked R, R same-family)
          - P(judge picks R | reference picked R, R other-family)

over pairs with exactly one same-family response, pairing every judge record with every
decisive reference vote on the pair (a judge tie counts as not picking R). The
reference is the human votes when people voted on the same pairs; otherwise another
judge, which turns the question into "does this judge favour its family more than that
judge does?". The interval is a bootstrap over ``pair_id`` clusters.

The GLM is the regression form of the same gap: one row per (judge record, decisive
reference vote) combination, logit P(judge picks the reference's pick R) = alpha +
gamma * [R is same-family] + beta * [R was shown first to the judge]. gamma is the log
odds ratio of agreeing on own-family picks; the position term keeps a judge's position
bias out of it. Standard errors are cluster-robust by ``pair_id`` (Liang & Zeger 1986).
A GLM of raw wins with model strengths shared between judge and reference would not do:
a noisier judge compresses every strength difference, which such a model reads as
family bias whenever the family's model is strong or weak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats import cluster_bootstrap, fit_logit, item_clusters, per_cluster, row_clusters

__all__ = ["SelfFamilyBias", "self_family_bias"]


@dataclass(frozen=True)
class SelfFamilyBias:
    judge: str
    judge_family: str | None
    reference: str | None
    n_pairs: int  # pairs with exactly one same-family response, voted on by both
    n_same: int  # (judge record, reference vote) combinations where R is same-family
    n_other: int
    rate_same: float | None
    rate_other: float | None
    delta: float | None
    ci: tuple[float, float] | None
    glm_coef: float | None
    glm_ci: tuple[float, float] | None
    glm_p: float | None
    glm_n: int
    note: str | None = None
    verdicts: str = "each judge record against each reference vote"


def _family_side(rows: pd.DataFrame, family: str) -> np.ndarray:
    """+1 if the canonical-first response is same-family, -1 if the other is, 0 if neither or both."""
    fa = (rows["family_a"] == family).to_numpy()
    fb = (rows["family_b"] == family).to_numpy()
    flip = rows["flip"].to_numpy()
    side_shown = fa.astype(np.int8) - fb.astype(np.int8)
    return np.where(flip, -side_shown, side_shown)


def _empty(judge: str, family: str | None, reference: str | None, note: str, verdicts: str) -> SelfFamilyBias:
    return SelfFamilyBias(judge, family, reference, 0, 0, 0, None, None, None, None, None, None, None, 0, note, verdicts)


def self_family_bias(
    judge_rows: pd.DataFrame,
    reference_rows: pd.DataFrame,
    judge: str,
    judge_family: str | None,
    reference: str | None,
    n_boot: int = 1000,
    seed: int = 0,
    verdicts: str | None = None,
) -> SelfFamilyBias:
    """Equal-opportunity gap and GLM for one judge against one reference rater.

    ``verdicts`` describes the rows when they are per-pair verdicts (see
    :func:`analysis.bias.position.debiased_rows`) rather than records; the GLM then has no
    display-position term, since a per-pair verdict has seen both orders.
    """
    per_pair = verdicts is not None
    verdicts = verdicts or SelfFamilyBias.verdicts
    if not judge_family or judge_family == "unknown":
        return _empty(judge, judge_family, reference, "judge family unknown", verdicts)
    if reference is None or reference_rows.empty:
        return _empty(judge, judge_family, reference, "no reference rater voted on the judge's pairs", verdicts)
    j = judge_rows.assign(side=_family_side(judge_rows, judge_family))
    r = reference_rows[reference_rows["decisive"]]
    r = r.assign(side=_family_side(r, judge_family))
    j = j[j["side"] != 0]
    r = r[(r["side"] != 0) & r["pair_id"].isin(j["pair_id"])]
    j = j[j["pair_id"].isin(r["pair_id"])]
    if j.empty:
        return _empty(
            judge, judge_family, reference,
            f"no pair with exactly one {judge_family} response has a verdict from the judge and a decisive one from the reference",
            verdicts,
        )
    jp = pd.DataFrame(
        {
            "pair_id": j["pair_id"],
            "n": 1,
            "pick_same": (j["canon"] == j["side"]).astype(int),
            "pick_other": (j["canon"] == -j["side"]).astype(int),
        }
    ).groupby("pair_id").sum()
    rp = pd.DataFrame(
        {"pair_id": r["pair_id"], "ref_same": (r["canon"] == r["side"]).astype(int), "ref_other": (r["canon"] == -r["side"]).astype(int)}
    ).groupby("pair_id").sum()
    both = jp.join(rp, how="inner")
    # Per pair: agreements and combinations, split by whether the reference's pick is same-family.
    sums = np.column_stack(
        [
            both["ref_same"] * both["pick_same"],
            both["ref_same"] * both["n"],
            both["ref_other"] * both["pick_other"],
            both["ref_other"] * both["n"],
        ]
    ).astype(float)
    tot = sums.sum(axis=0)
    rate_same = tot[0] / tot[1] if tot[1] else None
    rate_other = tot[2] / tot[3] if tot[3] else None
    delta = ci = None
    if rate_same is not None and rate_other is not None:
        delta = float(rate_same - rate_other)

        def gap(t: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore", invalid="ignore"):
                return t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3]

        ci = cluster_bootstrap(per_cluster(sums, item_clusters(judge_rows, both.index)), gap, n_boot=n_boot, seed=seed)
    glm_coef, glm_ci, glm_p, glm_n, note = _glm(j, r, position_term=not per_pair)
    return SelfFamilyBias(
        judge=judge, judge_family=judge_family, reference=reference, n_pairs=len(both),
        n_same=int(tot[1]), n_other=int(tot[3]), rate_same=None if rate_same is None else float(rate_same),
        rate_other=None if rate_other is None else float(rate_other),
        delta=delta, ci=ci, glm_coef=glm_coef, glm_ci=glm_ci, glm_p=glm_p, glm_n=glm_n, note=note, verdicts=verdicts,
    )


def _glm(j: pd.DataFrame, r: pd.DataFrame, position_term: bool):
    """Logistic regression of agreement on the same-family indicator (see module docstring)."""
    combos = j[["pair_id", "canon", "side", "flip", *(["cluster"] if "cluster" in j.columns else [])]].merge(
        r[["pair_id", "canon"]].rename(columns={"canon": "ref"}), on="pair_id"
    )
    n = len(combos)
    same = (combos["ref"] == combos["side"]).to_numpy(dtype=float)
    if n < 20 or combos["pair_id"].nunique() < 10 or same.min() == same.max():
        return None, None, None, n, f"too few combinations ({n}) of both kinds for the GLM"
    # R (canonical side `ref`) was shown first when the record is not flipped and ref is +1, or flipped and -1.
    shown_first = np.where(combos["flip"].to_numpy(), combos["ref"].to_numpy() == -1, combos["ref"].to_numpy() == 1)
    X = np.column_stack([np.ones(n), same, shown_first.astype(float)] if position_term else [np.ones(n), same])
    y = (combos["canon"] == combos["ref"]).to_numpy(dtype=float)
    groups = pd.factorize(row_clusters(combos))[0]
    try:
        fit = fit_logit(X, y, groups)
    except ValueError as exc:
        return None, None, None, n, f"GLM not fitted: {exc}"
    return float(fit.params[1]), fit.interval(1), float(fit.pvalues[1]), n, None
