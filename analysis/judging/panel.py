"""A judge panel: every LLM judge pooled into one virtual judge.

Verga et al. 2024, "Replacing Judges with Juries: Evaluating LLM Generations with a Panel
of Diverse Models" (PoLL), pool several judges' verdicts by voting. Here each member has
one vote per pair, its both-orders verdict (the winner it gives in every order it saw, a
tie when it changes with the order, FastChat's rule), so a member that judged both orders
does not outvote one that judged one; the panel's verdict is the most frequent of its
members' votes (a tie when two outcomes share the top count), and its ``prob_a`` is the
mean of the members' probabilities when every record carries one. Its verdict never saw a
display order, so the report gives the panel no position numbers. The
panel is written as one record per pair, in the display order of the first member record
on it, so the report treats it like any judge (its members' records in the other order
are already pooled into the verdict). Only pairs that two or more members judged enter:
one judge's verdict is not a panel's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from pairlab import record_table
from pairlab.records import JUDGE_VARIANTS, Record

__all__ = ["PANEL", "PanelSummary", "panel_records", "panel_summary", "panel_table"]

PANEL = "panel"
_CANON = {"model_a": 1, "model_b": -1, "tie": 0, "tie (bothbad)": 0}


def panel_records(records: Sequence[Record], is_person: Callable[[Record], bool], name: str = PANEL) -> list[Record]:
    """:func:`panel_table` for records: the panel's records, their ``meta`` naming the members."""
    panel = panel_table(record_table.from_records(records), np.array([is_person(r) for r in records], dtype=bool),
                        name)
    fields = ("pair_id", "prompt", "model_a", "model_b", "response_a", "response_b", "winner", "family_a",
              "family_b", "prompt_id", "category")
    rows = panel.astype(object).where(panel.notna(), None).to_dict("records")
    return [Record(**{f: row[f] for f in fields}, judge=name, judge_type="llm", prob_a=row["prob_a"],
                   meta={"panel_members": row["panel_members"], "n_verdicts": row["n_verdicts"]}) for row in rows]


def panel_table(table: pd.DataFrame, person: np.ndarray, name: str = PANEL) -> pd.DataFrame:
    """The panel's rows of a record table (module docstring), with the columns ``panel_members``
    (sorted member names) and ``n_verdicts``; empty when fewer than two LLM judges voted.

    ``table`` holds usable records (no ``parse_error``); ``person`` marks people's votes,
    left out of the panel.
    """
    # Only the columns the votes need are filtered (the text columns are the table's bulk);
    # the panel's rows are taken from the table once, at the end.
    # A judge's order-averaged or likelihood variant is that judge again: one voice each.
    variant = table["judge"].astype(str).str.endswith(JUDGE_VARIANTS).to_numpy()
    at = np.flatnonzero(~np.asarray(person, dtype=bool) & ~variant)
    llm = table[["judge", "pair_id", "winner", "prob_a", "response_a", "response_b"]].iloc[at]
    judges, judge_names = pd.factorize(llm["judge"])
    judge_names = np.asarray(judge_names, dtype=object)
    if len(judge_names) < 2:
        return table.iloc[:0].assign(panel_members=[], n_verdicts=[])
    pairs, pair_ids = pd.factorize(llm["pair_id"])
    n = len(pair_ids)
    # Each pair's first member record: codes number the pairs in order of first appearance, so
    # a pair's first record is where the codes pass their running maximum (no sort).
    lead = np.flatnonzero(np.r_[True, pairs[1:] > np.maximum.accumulate(pairs)[:-1]]) if len(pairs) else pairs
    response_a = record_table.text_codes(llm)[0]
    # +1 when a record shows the texts in its pair's lead order, -1 when swapped.
    orient = np.where(response_a == response_a[lead][pairs], 1, -1).astype(np.int8)
    said, verdicts = pd.factorize(llm["winner"])  # each distinct verdict mapped once
    vote = pd.Series(verdicts).map(_CANON).to_numpy(dtype=np.int8)[said] * orient
    # Each member's one vote per pair: its verdict when every record of it on the pair agrees, else a tie.
    n_judges = len(judge_names)
    member_key = pairs.astype(np.int64) * n_judges + judges
    keys, key_of = _sorted_unique(member_key, n * n_judges)
    n_rec = np.bincount(key_of)
    member_vote = np.where(np.bincount(key_of, weights=vote == 1) == n_rec, 1,
                           np.where(np.bincount(key_of, weights=vote == -1) == n_rec, -1, 0))
    key_pair = keys // n_judges
    counts = np.column_stack([np.bincount(key_pair, weights=member_vote == v, minlength=n) for v in (1, -1, 0)])
    top = counts.max(axis=1)
    unique_top = (counts == top[:, None]).sum(axis=1) == 1
    verdict = np.where(unique_top, np.array([1, -1, 0])[counts.argmax(axis=1)], 0)
    prob = llm["prob_a"].to_numpy(dtype=float)
    prob = np.where(orient == 1, prob, 1.0 - prob)
    has_prob = np.bincount(pairs, weights=~np.isnan(prob), minlength=n)
    # The mean over members of each member's mean probability (one voice per member here, too).
    member_prob = np.bincount(key_of, weights=np.nan_to_num(prob)) / n_rec
    mean_prob = np.bincount(key_pair, weights=member_prob, minlength=n) / np.maximum(np.bincount(key_pair, minlength=n), 1)
    n_verdicts = np.bincount(pairs, minlength=n)
    n_members = np.bincount(key_pair, minlength=n)
    chosen = np.flatnonzero(n_members >= 2)
    out = table.iloc[at[lead[chosen]]].reset_index(drop=True)
    # Text columns made from Arrow arrays, not from Python objects; verdict -1 takes index 2.
    out["winner"] = pd.Series(pd.array(pa.array(["tie", "model_a", "model_b"]).take(verdict[chosen] % 3), dtype="str"))
    out["judge"] = name
    out["judge_type"] = "llm"
    for column in ("judge_family", "parse_error", "template", "mode", "baseline"):
        out[column] = pd.Series(pd.array(pa.nulls(len(out), pa.string()), dtype="str"))
    out["strength"] = np.nan
    out["suspect"], out["anony"], out["identity_leak"] = False, True, False
    out["prob_a"] = np.where(has_prob[chosen] == n_verdicts[chosen], np.clip(mean_prob[chosen], 0.0, 1.0), np.nan)
    out["panel_members"] = _member_lists(keys % n_judges, key_pair, judge_names, chosen, n)
    out["n_verdicts"] = n_verdicts[chosen].astype(int)
    return out


def _sorted_unique(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers in [0, bound): counted rather than
    sorted where the bound is not far above their number."""
    if bound > 4 * len(values) + 1024:
        return np.unique(values, return_inverse=True)
    present = np.bincount(values, minlength=bound) > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[values]


def _member_lists(member: np.ndarray, pair: np.ndarray, names: np.ndarray, chosen: np.ndarray, n: int) -> list:
    """Each chosen pair's member names, sorted: a list per pair, made once per set of members
    (pairs share a handful of sets, so this is far cheaper than splitting the members per pair)."""
    rank = np.argsort(np.argsort(names.astype(str), kind="stable"), kind="stable")  # bit of each judge: names' order
    if len(names) > 52:  # beyond a float's exact integers: per pair
        lists = np.split(member, np.cumsum(np.bincount(pair, minlength=n))[:-1])
        return [sorted(names[lists[p]].tolist()) for p in chosen]
    sets = np.bincount(pair, weights=np.ldexp(1.0, rank[member]), minlength=n)[chosen]
    distinct, which = np.unique(sets, return_inverse=True)
    by_rank = np.argsort(rank)
    named = [[str(names[k]) for k in by_rank if int(s) >> int(rank[k]) & 1] for s in distinct]
    return [list(named[w]) for w in which.reshape(-1)]


@dataclass(frozen=True)
class PanelSummary:
    """What the panel is worth beside its members, against people."""

    members: tuple[tuple[str, str | None], ...]  # (member, its family)
    tie_rate: float | None  # share of the panel's verdicts that are ties
    tie_rate_ci: tuple[float, float] | None
    reference_tie_rate: float | None  # people's, on the same pairs
    reference_tie_rate_ci: tuple[float, float] | None
    best_member: str | None  # the member with the highest S1 agreement with people
    s1_difference: float | None  # panel minus best member, S1 on the pairs both judged
    s1_difference_ci: tuple[float, float] | None  # paired bootstrap over items
    s2_difference: float | None
    s2_difference_ci: tuple[float, float] | None
    own_family_models: tuple[tuple[str, str], ...]  # (model, member) pairs where a member judges its own family
    note: str | None = None


def panel_summary(panel_rows: pd.DataFrame, member_rows: Mapping[str, pd.DataFrame], reference_rows: pd.DataFrame,
                  families: Mapping[str, str | None], n_boot: int = 1000, seed: int = 0) -> PanelSummary:
    """Tie rate beside people's, the panel against its best member (paired bootstrap over
    items), and which members judge models of their own family.

    ``panel_rows`` / ``member_rows`` / ``reference_rows`` are judgment-table rows (people's
    for the reference); ``families`` maps each member to its family.
    """
    from analysis.judging.agreement import agreement_sums
    from analysis.stats.resample import paired_totals
    from analysis.judgment_table import positions
    from analysis.stats import clustered_rate_ci, percentile_interval, wilson_interval

    members = tuple((m, families.get(m)) for m in sorted(member_rows))
    # An index lookup, not Series.isin: isin on Arrow-backed strings converts every value (seconds at 100k rows).
    pairs = pd.Index(panel_rows["pair_id"].unique())

    def on_panel_pairs(rows: pd.DataFrame) -> pd.DataFrame:
        return rows[positions(pairs, rows["pair_id"]) >= 0]

    ref = on_panel_pairs(reference_rows)
    ties = (panel_rows["canon"].to_numpy() == 0)
    tie_rate = float(ties.mean()) if len(ties) else None
    tie_ci = wilson_interval(int(ties.sum()), len(ties)) if len(ties) else None
    ref_ties = (ref["canon"].to_numpy() == 0).astype(float)
    ref_rate = float(ref_ties.mean()) if len(ref_ties) else None
    ref_ci = clustered_rate_ci(ref_ties, np.ones(len(ref_ties)), ref["pair_id"].to_numpy(), n_boot=n_boot, seed=seed) \
        if len(ref_ties) else None
    own = []
    for m, fam in members:
        if fam is None:
            continue
        rows = member_rows[m]
        for col_model, col_family in (("model_a", "family_a"), ("model_b", "family_b")):
            own += [(str(x), m) for x in rows.loc[rows[col_family] == fam, col_model].unique()]
    own = tuple(sorted(set(own)))
    if ref.empty:
        return PanelSummary(members, tie_rate, tie_ci, None, None, None, None, None, None, None, own,
                            "no reference votes on the panel's pairs")
    panel_sums = agreement_sums(panel_rows, ref)
    member_sums = {m: agreement_sums(on_panel_pairs(rows), ref) for m, rows in member_rows.items()}
    s1 = {m: s["same"].sum() / s["total"].sum() for m, s in member_sums.items() if s["total"].sum() > 0}
    if not s1:
        return PanelSummary(members, tie_rate, tie_ci, ref_rate, ref_ci, None, None, None, None, None, own,
                            "no member shares pairs with the reference")
    best = max(s1, key=lambda m: (s1[m], m))
    items = panel_sums.index.intersection(member_sums[best].index)
    a, b = panel_sums.loc[items].to_numpy(), member_sums[best].loc[items].to_numpy()
    # Paired: items drawn as kinds of identical (panel, member) sums, the same draws for both.
    ta, tb = paired_totals([a, b], len(items), n_boot, seed)
    out = []
    for num, den in ((0, 1), (2, 3)):
        if a[:, den].sum() == 0 or b[:, den].sum() == 0:
            out += [None, None]
            continue
        point = a[:, num].sum() / a[:, den].sum() - b[:, num].sum() / b[:, den].sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            diffs = ta[:, num] / ta[:, den] - tb[:, num] / tb[:, den]
        diffs = diffs[np.isfinite(diffs)]
        lo, hi = percentile_interval(diffs)
        out += [float(point), (float(lo), float(hi))]
    return PanelSummary(members, tie_rate, tie_ci, ref_rate, ref_ci, best, *out, own)
