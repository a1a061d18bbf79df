"""How the data repeat: the cluster, the unit every interval treats as independent.

In a prompt set each model's answer to a prompt sits in several pairs and a prompt's difficulty
touches all of them, so whenever a prompt carries more than one pair the default unit is the
prompt (``prompt_id``, else the prompt text); otherwise it is the pair (``pair_id``: several
people on one pair, a judge seeing both orders). ``cluster="pair"`` or ``"prompt"`` forces one.
Sandwich covariances sum scores within a cluster; bootstraps resample clusters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CLUSTERS", "Clustering", "cluster_codes", "cluster_groups", "item_clusters", "per_cluster", "prompt_column",
           "row_clusters"]


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


def cluster_codes(groups) -> np.ndarray:
    """Integer cluster codes of ``groups``; a row without a group (None, NaN) is a cluster of
    its own rather than one cluster of all the missing ones."""
    codes, uniques = pd.factorize(pd.Series(groups, copy=False))
    alone = codes < 0
    codes[alone] = len(uniques) + np.arange(alone.sum())
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


def cluster_groups(frame: pd.DataFrame, cluster: str | None = None) -> Clustering:
    """The clusters of a battle frame (module docstring).

    ``cluster`` None picks the prompt when some prompt carries more than one pair (more than
    one ``pair_id``, or without pair ids more than one pair of models), else the pair, and
    without pair ids no cluster (every vote independent).
    Asking for ``"prompt"`` on a frame without prompts, or ``"pair"`` without pair ids, raises.
    """
    if cluster not in (None, *CLUSTERS):
        raise ValueError(f"unknown cluster {cluster!r}; use one of {', '.join(CLUSTERS)}")
    pair = frame["pair_id"] if "pair_id" in frame.columns and frame["pair_id"].notna().any() else None
    prompt = prompt_column(frame)
    if cluster is None:
        if prompt is not None:
            if pair is not None:
                per_prompt = pd.DataFrame({"p": prompt.to_numpy(), "k": pair.to_numpy()}).dropna()
            else:
                lo = np.minimum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                hi = np.maximum(frame["model_a"].astype(str), frame["model_b"].astype(str))
                per_prompt = pd.DataFrame({"p": prompt.to_numpy(), "k": (lo + "\x00" + hi).to_numpy()}).dropna()
            if len(per_prompt) and per_prompt.groupby("p")["k"].nunique().max() > 1:
                cluster = "prompt"
        if cluster is None and pair is not None:
            cluster = "pair"
    if cluster is None:
        return Clustering("none", None, len(frame))
    groups = prompt if cluster == "prompt" else pair
    if groups is None:
        need = "prompt_id or prompt" if cluster == "prompt" else "pair_id"
        raise ValueError(f"--cluster {cluster}: the votes carry no {need}")
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
