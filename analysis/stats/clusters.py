"""How the data repeat: the cluster, the unit every interval treats as independent.

In a prompt set each model's answer to a prompt sits in several pairs and a prompt's difficulty
touches all of them, so whenever a prompt carries more than one pair the default unit is the
prompt (``prompt_id``, else the prompt text); otherwise it is the pair (``pair_id``: several
people on one pair, a judge seeing both orders). ``cluster="pair"`` or ``"prompt"`` forces one.
Sandwich covariances sum scores within a cluster; bootstraps resample clusters.

One rule for what is missing, in every command: a missing or blank prompt is no prompt (a
plain ``model_a,model_b,winner`` table is not one prompt of every vote), a prompt text is a
prompt though no ``prompt_id`` names it, and a row without a group is a cluster of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CLUSTERS", "Clustering", "ci_label", "cluster_codes", "cluster_groups", "described_unit", "item_clusters",
           "per_cluster", "prompt_column", "prompt_key", "row_clusters"]


CLUSTERS = ("pair", "prompt")


@dataclass(frozen=True)
class Clustering:
    """Which unit a frame's intervals treat as independent: ``kind`` is ``"prompt"``,
    ``"pair"`` or ``"none"`` (every row its own); ``groups`` one value per row (None for
    ``"none"``); ``n`` the number of clusters."""

    kind: str
    groups: pd.Series | None
    n: int

    def describe(self) -> str:
        if self.kind == "none":
            return "every vote independent (no pair_id)"
        if self.kind == "prompt":
            return f"clustered by prompt ({self.n} prompt{'' if self.n == 1 else 's'})"
        return f"clustered by pair_id ({self.n} pair{'' if self.n == 1 else 's'})"


def described_unit(described: str) -> str:
    """What a report clustered as ``described`` (:meth:`Clustering.describe`, report.json's
    ``clustering``) resamples: ``"prompt"``, ``"pair"`` or ``"vote"``."""
    if described.startswith("clustered by prompt"):
        return "prompt"
    if described.startswith("every vote independent"):
        return "vote"
    return "pair"  # also a report saved before it said (pairs were the rule then)


def ci_label(described: str) -> str:
    """An interval's label in such a report: what its 95% interval treats as independent."""
    unit = described_unit(described)
    return "95% CI, votes independent" if unit == "vote" else f"95% CI clustered by {unit}"


def cluster_codes(groups) -> np.ndarray:
    """Integer cluster codes of ``groups``; a row without a group (None, NaN, blank text) is a
    cluster of its own rather than one cluster of all the missing ones."""
    codes, n = _given_codes(pd.Series(groups, copy=False))
    alone = codes < 0
    codes[alone] = n + np.arange(alone.sum())
    return codes


def prompt_column(frame: pd.DataFrame) -> pd.Series | None:
    """Each row's prompt: its ``prompt_id``, else its prompt text; None when no row has one."""
    prompt = None
    for name in ("prompt_id", "prompt"):
        if name in frame.columns:
            prompt = frame[name] if prompt is None else prompt.fillna(frame[name])
    if prompt is None or prompt.isna().all():
        return None
    return prompt


def _given_codes(column: pd.Series, sort: bool = False) -> tuple[np.ndarray, int]:
    """``column``'s codes with -1 where it has no value: missing, or text that is blank."""
    codes, uniques = pd.factorize(column, sort=sort)
    if len(uniques):
        # Blank texts are looked for among the distinct values, not in every row.
        values = pd.Series(uniques)
        blank = (np.zeros(len(values), dtype=bool) if pd.api.types.is_numeric_dtype(values.dtype)
                 else values.astype(str).str.strip().eq("").to_numpy(dtype=bool))
        if blank.any():  # renumbered without the blank values
            kept = np.where(blank, -1, np.cumsum(~blank) - 1)
            return np.where(codes >= 0, kept[np.maximum(codes, 0)], -1), int((~blank).sum())
    return codes, len(uniques)


def _keys(key: np.ndarray, given: np.ndarray, index: pd.Index) -> pd.Series:
    """Integer keys, NA where not ``given``."""
    return pd.Series(pd.arrays.IntegerArray(np.where(given, key, 0).astype(np.int64), ~given), index=index)


def prompt_key(frame: pd.DataFrame, sort: bool = False) -> pd.Series | None:
    """Each row's prompt as an integer key: its ``prompt_id``, else its prompt text (an id and a
    text never share a key), NA where it has neither (missing or blank); None when no row has one.
    ``sort``: keys numbered in the ids' and then the texts' sorted order."""
    key, offset = np.full(len(frame), -1, dtype=np.int64), 0
    for name in ("prompt_id", "prompt"):
        if name in frame.columns:
            codes, n = _given_codes(frame[name], sort)
            fill = (key < 0) & (codes >= 0)
            key[fill] = codes[fill] + offset
            offset += n
    if (key < 0).all():
        return None
    return _keys(key, key >= 0, frame.index)


def _prompt_groups(prompt: pd.Series, pair_codes: np.ndarray | None) -> pd.Series:
    """The clusters by prompt: a row without a prompt is its pair's cluster (a pair sits inside
    one prompt), and without a pair_id too, a cluster of its own."""
    if pair_codes is None or prompt.notna().all():
        return prompt
    pair_codes = pair_codes.astype(np.int64)
    given = prompt.notna().to_numpy()
    key = np.where(given, prompt.fillna(0).to_numpy(np.int64), int(prompt.max()) + 1 + pair_codes)
    return _keys(key, given | (pair_codes >= 0), prompt.index)


def cluster_groups(frame: pd.DataFrame, cluster: str | None = None) -> Clustering:
    """The clusters of a battle frame (module docstring).

    ``cluster`` None picks the prompt when some prompt carries more than one pair (more than
    one ``pair_id``, or without pair ids more than one pair of models), else the pair, and
    without pair ids no cluster (every vote independent).
    Asking for ``"prompt"`` on a frame without prompts, or ``"pair"`` without pair ids, raises.
    """
    if cluster not in (None, *CLUSTERS):
        raise ValueError(f"unknown cluster {cluster!r}; use one of {', '.join(CLUSTERS)}")
    # pair_id is coded once: over a million pair ids, hashing them is most of a fit's reading time.
    pair = pair_codes = None
    if "pair_id" in frame.columns:
        codes, n_pairs = _given_codes(frame["pair_id"])
        if (codes >= 0).any():
            pair, pair_codes = frame["pair_id"], codes
    prompt = prompt_key(frame)
    if cluster is None:
        if prompt is not None:
            if pair is not None:
                per_prompt = pd.DataFrame({"p": prompt.array, "k": pair_codes}).dropna()
                per_prompt = per_prompt[per_prompt["k"] >= 0]
            else:
                lo = np.minimum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                hi = np.maximum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                per_prompt = pd.DataFrame({"p": prompt.array, "k": (lo + "\x00" + hi).to_numpy()}).dropna()
            if len(per_prompt) and per_prompt.groupby("p")["k"].nunique().max() > 1:
                cluster = "prompt"
        if cluster is None and pair is not None:
            cluster = "pair"
    if cluster is None:
        return Clustering("none", None, len(frame))
    groups = _prompt_groups(prompt, pair_codes) if cluster == "prompt" and prompt is not None else (
        prompt if cluster == "prompt" else pair)
    if groups is None:
        need = "prompt_id or prompt" if cluster == "prompt" else "pair_id"
        raise ValueError(f"--cluster {cluster}: the votes carry no {need}")
    if groups is pair:  # cluster_codes' count: the given pair ids, and each row without one alone
        return Clustering(cluster, groups, n_pairs + int((pair_codes < 0).sum()))
    return Clustering(cluster, groups, int(cluster_codes(groups).max(initial=-1)) + 1)


def row_clusters(rows: pd.DataFrame) -> pd.Series:
    """The cluster of each judgment-table row: its ``cluster`` column where the report set one
    (:func:`cluster_groups`' choice, coded), else its ``pair_id``."""
    return rows["cluster"] if "cluster" in rows.columns else rows["pair_id"]


def item_clusters(rows: pd.DataFrame, items) -> np.ndarray | None:
    """The cluster of each item (a ``pair_id`` of ``rows``), or None when the items are the
    clusters (no ``cluster`` column): per-item sums are summed per cluster before a bootstrap."""
    if "cluster" not in rows.columns:
        return None
    of_item = rows.drop_duplicates("pair_id").set_index("pair_id")["cluster"]
    return cluster_codes(of_item.reindex(pd.Index(items)).to_numpy())


def per_cluster(sums: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """``sums`` (items x k) summed within each item's cluster; unchanged without clusters."""
    if clusters is None:
        return sums
    n = int(clusters.max(initial=-1)) + 1
    return np.stack([np.bincount(clusters, sums[:, c], n) for c in range(sums.shape[1])], axis=1)
