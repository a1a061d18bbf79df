"""Agreement between a judge and people (or another judge), and between people.

Follows FastChat's ``llm_judge/compute_agreement.py`` (Zheng et al. 2023, Section 4.2):
on every item (``pair_id``) rated by both, each of the judge's verdicts is paired with
each reference vote; agreement is the share of equal pairs. Setup S1 keeps ties (a tie
equals a tie, "tie (bothbad)" included); setup S2 drops every pair in which either side
is a tie. The judge's verdict on an item is its position-debiased verdict (one per item:
unanimous over the orders it saw, else a tie), as FastChat's pairwise GPT-4 verdicts
are. Cohen's kappa (Cohen 1960) is computed on the S1 pairs over the three categories
(the pair's alphabetically first model wins, the other model wins, tie): each pair is
oriented by model name, so a rater's lean to one model is a category share kappa corrects
for (oriented by the texts' sort order, two independent raters who both favour one model
looked like they agreed beyond chance).

Denominators: S2 rests on the vote pairs (and items) without a tie on either side, often
far fewer than S1's; both counts are kept. :func:`baseline_items` names the items the
human-human baseline rests on (two or more voters), so a judge can be compared with people
on those same items.

The human-human baseline pairs votes of *different* voters on the same item (FastChat
pairs every two human votes; we leave out two votes of one voter, which would inflate
agreement). Its kappa uses the pooled category shares for both sides, since the pairs
are unordered. Kappa's interval resamples whole clusters, as S1's and S2's do: the agreeing
pairs and both sides' category weights are summed per cluster and kappa recomputed on each
resample.

Rank agreement compares two rating tables (e.g. human BT vs a judge's BT) with
Spearman's rho and Kendall's tau-b over the models both rate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.bias.position import debiased_verdicts
from analysis.judgment_table import positions, string_values
from analysis.stats import cluster_bootstrap_many, item_clusters, per_cluster, wilson_interval
from analysis.stats.correlation import average_ranks, kendall_tau, spearman_rho

__all__ = ["Agreement", "RankAgreement", "agreement", "agreement_sums", "agreement_with_sums", "baseline_items",
           "human_baseline", "kendall_p", "rank_agreement", "spearman_permutation_p"]

_CATS = (1, -1, 0)


@dataclass(frozen=True)
class Agreement:
    vs: str | None
    with_ties: float | None
    with_ties_ci: tuple[float, float] | None
    without_ties: float | None
    without_ties_ci: tuple[float, float] | None
    cohen_kappa: float | None
    n: int  # S1 vote pairs
    n_without_ties: int  # S2 vote pairs
    n_items: int
    n_items_without_ties: int = 0  # items with at least one S2 vote pair
    cohen_kappa_ci: tuple[float, float] | None = None  # resampling whole clusters, as the S1/S2 intervals


@dataclass(frozen=True)
class RankAgreement:
    n_models: int
    spearman: float | None
    spearman_p: float | None
    kendall: float | None
    kendall_p: float | None


def _counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Votes per item and canonical category: columns 1, -1, 0; items sorted."""
    if rows.empty:
        return pd.DataFrame(columns=list(_CATS), dtype=int)
    # A bincount over factorized items: a two-key groupby and unstack is far slower at a million rows.
    items, names = pd.factorize(rows["pair_id"], sort=True)
    cats = pd.Index(_CATS).get_indexer(rows["canon"].to_numpy())
    keep = (items >= 0) & (cats >= 0)
    table = np.bincount(items[keep] * len(_CATS) + cats[keep], minlength=len(names) * len(_CATS))
    return pd.DataFrame(table.reshape(-1, len(_CATS)), index=pd.Index(names, name="pair_id"),
                        columns=pd.Index(list(_CATS), name="canon"))


def _name_orientation(rows: pd.DataFrame) -> pd.Series:
    """Per item: -1 when its canonical +1 text is the response of the alphabetically later
    model (kappa's categories are then swapped), else +1."""
    if rows.empty:
        return pd.Series(dtype=float)
    pair = rows["pair_id"]
    first = np.flatnonzero(~pair.duplicated().to_numpy())  # each item's first row (drop_duplicates')
    flip = rows["flip"].to_numpy(dtype=bool)[first]
    a, b = string_values(rows["model_a"])[first], string_values(rows["model_b"])[first]
    plus, minus = np.where(flip, b, a), np.where(flip, a, b)
    return pd.Series(np.where(plus > minus, -1, 1), index=pair.to_numpy()[first])


def _by_name(counts: np.ndarray, orientation: np.ndarray) -> np.ndarray:
    """Category counts (first text, second text, tie) re-ordered as (first model, other, tie)."""
    out = counts.copy()
    swap = orientation < 0
    out[swap, 0], out[swap, 1] = counts[swap, 1], counts[swap, 0]
    return out


def _kappa(p_o: float, p_left: np.ndarray, p_right: np.ndarray) -> float | None:
    p_e = float(np.dot(p_left, p_right))
    return None if p_e >= 1.0 else (p_o - p_e) / (1.0 - p_e)


def _kappa_rows(t: np.ndarray) -> np.ndarray:
    """Kappa of each row of summed columns: agreeing pairs, all pairs, the judge's three category
    weights, the reference's three (each weight summed as in :func:`agreement_with_sums`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_e = (t[:, 2:5] * t[:, 5:8]).sum(axis=1) / t[:, 1] ** 2
        return (t[:, 0] / t[:, 1] - p_e) / (1.0 - p_e)


def _pooled_kappa_rows(t: np.ndarray) -> np.ndarray:
    """Kappa of each row of summed columns: agreeing pairs, all pairs, and one set of three category
    weights both sides share (people with people, as :func:`human_baseline`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = t[:, 2:5] / t[:, 2:5].sum(axis=1, keepdims=True)
        p_e = (shares * shares).sum(axis=1)
        return (t[:, 0] / t[:, 1] - p_e) / (1.0 - p_e)


def _kappa_ci(columns: np.ndarray, statistic, n_boot: int, seed: int,
              clusters: np.ndarray | None) -> tuple[float, float] | None:
    """Cohen's kappa's interval by resampling whole clusters (a bootstrap of its own, so the S1/S2
    intervals keep their resamples)."""
    return cluster_bootstrap_many(per_cluster(columns, clusters), [statistic], n_boot=n_boot, seed=seed)[0]


def _ratio(num: int, den: int):
    def stat(t: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return t[:, num] / t[:, den]

    return stat


def _cis(sums: np.ndarray, tot: np.ndarray, n_boot: int, seed: int, clusters: np.ndarray | None = None):
    """Bootstrap intervals of S1 (columns 0/1) and S2 (columns 2/3) on the same resamples.

    At an agreement of exactly 0 or 1 every resample repeats it; a Wilson interval with the
    number of items as n (conservative for several votes per item) stands in. ``clusters``
    (each item's, :func:`analysis.stats.item_clusters`) resample prompts, not items.
    """
    cis = cluster_bootstrap_many(per_cluster(sums, clusters), [_ratio(0, 1), _ratio(2, 3)], n_boot=n_boot, seed=seed)
    out = []
    for ci, num, den in zip(cis, (0, 2), (1, 3)):
        n_items = int((sums[:, den] > 0).sum())
        if not tot[den]:
            out.append(None)
        elif tot[num] in (0, tot[den]):
            out.append(wilson_interval(n_items * tot[num] / tot[den], n_items))
        else:
            out.append(ci)
    return out


def _order_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """A judge's one verdict per pair and display order: the most frequent of its records'
    verdicts in that order (the first-listed on a tie of counts)."""
    if rows.empty:
        return rows[["pair_id", "canon"]]
    counted = rows.groupby(["pair_id", "flip", "canon"], sort=False).size().rename("n").reset_index()
    return counted.sort_values("n", ascending=False, kind="stable").drop_duplicates(["pair_id", "flip"])[["pair_id", "canon"]]


def agreement_sums(judge_rows: pd.DataFrame, reference_rows: pd.DataFrame, each_order: bool = False) -> pd.DataFrame:
    """Per item: S1 agreeing and total vote pairs, S2 agreeing and total (columns same, total,
    s2_same, s2_total), the numbers behind :func:`agreement` (and its paired bootstraps)."""
    return agreement_with_sums(judge_rows, reference_rows, None, each_order=each_order)[1]


def _aligned(judge_rows, reference_rows, each_order):
    judged = _counts(_order_verdicts(judge_rows) if each_order else item_verdicts(judge_rows))
    ref = _counts(reference_rows)
    # The items both rated, in the reference's order (Index.intersection's); one hash lookup
    # instead of an intersection and two .loc lookups by label.
    at = positions(judged.index, ref.index)
    both = at >= 0
    items = ref.index[both]
    j = judged.to_numpy(dtype=float)[at[both]]  # columns: first text, second text, tie
    c = ref.to_numpy(dtype=float)[both]
    n_votes = c.sum(axis=1)
    if each_order:  # each pair's votes as shares: a pair counts once per order, however many voted
        c = c / n_votes[:, None]
    return j, c, n_votes, items


def _sums(j: np.ndarray, c: np.ndarray) -> np.ndarray:
    same = (j * c).sum(axis=1)  # per item: every (judge verdict, reference vote) combination
    total = j.sum(axis=1) * c.sum(axis=1)
    s2_total = (j[:, 0] + j[:, 1]) * (c[:, 0] + c[:, 1])
    s2_same = j[:, 0] * c[:, 0] + j[:, 1] * c[:, 1]
    return np.column_stack([same, total, s2_same, s2_total])


def agreement(
    judge_rows: pd.DataFrame,
    reference_rows: pd.DataFrame,
    vs: str | None,
    n_boot: int = 1000,
    seed: int = 0,
    each_order: bool = False,
) -> Agreement:
    """S1/S2 agreement and Cohen's kappa of a judge against a reference rater's votes.

    The reference's votes are taken one by one (people); when the reference is another
    judge, pass its rows through :func:`analysis.bias.position.debiased_rows` first so that it,
    too, has one position-debiased verdict per item. With ``each_order`` ("as given") the
    judge has one verdict per pair and display order instead of one per pair, each scored by
    the share of the reference's votes on the pair it matches: every pair and order counts
    once, however many records the judge left or people voted (pairing every record with
    every vote let pairs with many votes, or a judge's repeated records, weigh more).
    """
    return agreement_with_sums(judge_rows, reference_rows, vs, n_boot, seed, each_order)[0]


def agreement_with_sums(judge_rows: pd.DataFrame, reference_rows: pd.DataFrame, vs: str | None, n_boot: int = 1000,
                        seed: int = 0, each_order: bool = False) -> tuple[Agreement, pd.DataFrame]:
    """:func:`agreement` and its per-item sums (:func:`agreement_sums`) from one alignment of
    the verdicts (a paired bootstrap over variants needs both)."""
    j, c, n_votes, items = _aligned(judge_rows, reference_rows, each_order)
    sums = _sums(j, c)
    frame = pd.DataFrame(sums, index=items, columns=["same", "total", "s2_same", "s2_total"])
    if vs is None or len(items) == 0:
        return Agreement(vs, None, None, None, None, None, 0, 0, 0), frame
    orientation = _name_orientation(reference_rows).reindex(items).fillna(1).to_numpy()
    tot = sums.sum(axis=0)
    n_judge, weight_ref = j.sum(axis=1), c.sum(axis=1)
    p_judge = (_by_name(j, orientation) * weight_ref[:, None]).sum(axis=0) / tot[1]
    p_ref = (_by_name(c, orientation) * n_judge[:, None]).sum(axis=0) / tot[1]
    clusters = item_clusters(judge_rows, items)
    s1_ci, s2_ci = _cis(sums, tot, n_boot, seed, clusters)
    weights = np.column_stack([sums[:, :2], _by_name(j, orientation) * weight_ref[:, None],
                               _by_name(c, orientation) * n_judge[:, None]])
    return Agreement(
        vs=vs,
        with_ties=float(tot[0] / tot[1]) if tot[1] else None,
        with_ties_ci=s1_ci,
        without_ties=float(tot[2] / tot[3]) if tot[3] else None,
        without_ties_ci=s2_ci,
        cohen_kappa=_kappa(tot[0] / tot[1], p_judge, p_ref) if tot[1] else None,
        n=int(round(tot[1])),  # with each_order: pair-orders (votes count as shares)
        n_without_ties=int(round(tot[3])),
        n_items=len(items),
        n_items_without_ties=int((sums[:, 3] > 0).sum()),
        cohen_kappa_ci=_kappa_ci(weights, _kappa_rows, n_boot, seed, clusters) if tot[1] else None,
    ), frame


def item_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """A judge's one verdict per item: its position-debiased verdict (columns pair_id, canon)."""
    return debiased_verdicts(rows)[["pair_id", "canon"]].drop_duplicates("pair_id")


def human_baseline(rows: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> Agreement:
    """Agreement between different human voters on the same items (S1, S2, kappa)."""
    if rows.empty:
        return Agreement("human", None, None, None, None, None, 0, 0, 0)
    per_item = _counts(rows).to_numpy(dtype=float)
    per_voter = (
        rows.groupby(["pair_id", "voter", "canon"]).size().unstack("canon", fill_value=0)
        .reindex(columns=list(_CATS), fill_value=0)
    )
    items = _counts(rows).index
    orientation = _name_orientation(rows).reindex(items).fillna(1).to_numpy()

    def pairs(x: np.ndarray) -> np.ndarray:
        return x * (x - 1) / 2

    # Pairs of votes within an item, minus pairs made of one voter's own votes.
    own = pd.DataFrame(pairs(per_voter.to_numpy(dtype=float)), index=per_voter.index, columns=list(_CATS))
    own_by_item = own.groupby(level="pair_id").sum().reindex(items).to_numpy()
    own_total = (
        pd.Series(pairs(per_voter.sum(axis=1).to_numpy(dtype=float)), index=per_voter.index)
        .groupby(level="pair_id").sum().reindex(items).to_numpy()
    )
    same_cat = pairs(per_item) - own_by_item  # per category: agreeing cross-voter pairs
    total = pairs(per_item.sum(axis=1)) - own_total
    same = same_cat.sum(axis=1)
    decisive = per_item[:, 0] + per_item[:, 1]
    own_decisive = (
        pd.Series(pairs(per_voter[[1, -1]].sum(axis=1).to_numpy(dtype=float)), index=per_voter.index)
        .groupby(level="pair_id").sum().reindex(items).to_numpy()
    )
    s2_total = pairs(decisive) - own_decisive
    s2_same = same_cat[:, 0] + same_cat[:, 1]
    keep = total > 0
    sums = np.column_stack([same, total, s2_same, s2_total])[keep]
    tot = sums.sum(axis=0)
    if tot[1] == 0:
        return Agreement("human", None, None, None, None, None, 0, 0, 0)
    # A vote's weight in the category shares is the number of cross-voter pairs it is in.
    n_item = pd.Series(per_item.sum(axis=1), index=items)
    voter_n = per_voter.sum(axis=1)
    voter_items = per_voter.index.get_level_values("pair_id")
    partners = n_item.reindex(voter_items).to_numpy() - voter_n.to_numpy()
    voter_orientation = pd.Series(orientation, index=items).reindex(voter_items).to_numpy()
    by_voter = _by_name(per_voter.to_numpy(dtype=float), voter_orientation) * partners[:, None]
    p = by_voter.sum(axis=0)
    p = p / p.sum()
    clusters = item_clusters(rows, items[keep])
    s1_ci, s2_ci = _cis(sums, tot, n_boot, seed, clusters)
    at = items.get_indexer(voter_items)  # each voter-item row's item
    by_item = np.stack([np.bincount(at, by_voter[:, k], len(items)) for k in range(len(_CATS))], axis=1)[keep]
    return Agreement(
        vs="human",
        with_ties=float(tot[0] / tot[1]),
        with_ties_ci=s1_ci,
        without_ties=float(tot[2] / tot[3]) if tot[3] else None,
        without_ties_ci=s2_ci,
        cohen_kappa=_kappa(tot[0] / tot[1], p, p),
        n=int(tot[1]),
        n_without_ties=int(tot[3]),
        n_items=int(keep.sum()),
        n_items_without_ties=int((sums[:, 3] > 0).sum()),
        cohen_kappa_ci=_kappa_ci(np.column_stack([sums[:, :2], by_item]), _pooled_kappa_rows, n_boot, seed, clusters),
    )


def baseline_items(rows: pd.DataFrame) -> pd.Index:
    """The items the human-human baseline rests on: votes of two or more different voters."""
    if rows.empty:
        return pd.Index([])
    voters = rows.groupby("pair_id")["voter"].nunique()
    return voters.index[voters.to_numpy() >= 2]


def rank_agreement(left: pd.DataFrame, right: pd.DataFrame) -> RankAgreement:
    """Spearman and Kendall correlation of two rating tables (columns model, rating)."""
    merged = left[["model", "rating"]].merge(right[["model", "rating"]], on="model")
    n = len(merged)
    # Ratings all equal on a side (a judge that rated every model alike) rank nothing: no correlation.
    if n < 3 or merged["rating_x"].nunique() < 2 or merged["rating_y"].nunique() < 2:
        return RankAgreement(n, None, None, None, None)
    x, y = merged["rating_x"].to_numpy(dtype=float), merged["rating_y"].to_numpy(dtype=float)
    return RankAgreement(n, spearman_rho(x, y), spearman_permutation_p(x, y), kendall_tau(x, y), kendall_p(x, y))


@functools.lru_cache(maxsize=8)
def _permutations(n: int) -> np.ndarray:
    """Every ordering of ``n`` items, one a row (40,320 rows for eight: built once, not per call)."""
    from itertools import chain, permutations
    from math import factorial

    out = np.fromiter(chain.from_iterable(permutations(range(n))), dtype=np.intp, count=n * factorial(n)).reshape(-1, n)
    out.flags.writeable = False
    return out


def spearman_permutation_p(x, y, seed: int = 0) -> float | None:
    """Two-sided permutation p-value of Spearman's rho: the share of orderings of ``y`` whose
    |rho| reaches the observed one. Exact (every permutation) up to 8 models, else 9,999
    random permutations (scipy). The t approximation scipy's ``spearmanr`` reports is far
    off for a handful of models (rho = 1 on five models gave 1.4e-24; the exact p is 1/60).
    """
    rx, ry = average_ranks(x), average_ranks(y)
    n = len(rx)
    if n < 3 or np.all(rx == rx[0]) or np.all(ry == ry[0]):
        return None
    cx, cy = rx - rx.mean(), ry - ry.mean()
    scale = np.sqrt((cx**2).sum() * (cy**2).sum())
    observed = abs(cx @ cy) / scale
    if n <= 8:
        perms = _permutations(n)
        rhos = np.abs(cy[perms] @ cx) / scale
        return float(np.mean(rhos >= observed - 1e-12))
    from scipy import stats

    res = stats.permutation_test((rx, ry), lambda a, b: abs(np.corrcoef(a, b)[0, 1]), permutation_type="pairings",
                                 n_resamples=9999, alternative="greater", random_state=seed)
    return float(res.pvalue)


def kendall_p(x, y) -> float:
    """Two-sided p-value of Kendall's tau: up to 8 models without ties, exact (the share of
    orderings of ``y`` whose |tau| reaches the observed one, the exact null distribution
    scipy's ``kendalltau`` sums for such data); otherwise scipy's."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n <= 8 and len(np.unique(x)) == n and len(np.unique(y)) == n:
        i, j = np.triu_indices(n, 1)
        sx = np.sign(x[i] - x[j])
        permuted = y[_permutations(n)]
        taus = np.abs(np.sign(permuted[:, i] - permuted[:, j]) @ sx)
        return float(np.mean(taus >= abs(sx @ np.sign(y[i] - y[j])) - 1e-9))
    from scipy import stats

    return float(stats.kendalltau(x, y).pvalue)
