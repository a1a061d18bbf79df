"""Position bias: does the order in which two responses are shown decide the verdict?

Estimators (all take rows of :func:`analysis.judgment_table.judgment_table` for one rater):

* first-shown win rate among decisive records (for people: the left pane; for judges:
  "Response A"), its interval clustered by ``pair_id`` (several votes on one pair are not
  independent); beside it (in the report) the position term of the logit of
  :mod:`analysis.bias.length`, which holds the two models' Bradley-Terry strengths and the
  length difference fixed: P(first-shown wins) between equally strong, equally long answers.
  Where the display order is not randomised within model pairs (e.g. the PandaLM test set
  lists the models of a pair in a fixed order), the raw rate measures "the earlier-listed
  model wins" as much as position: :func:`order_check` detects this, and only the
  controlled term (identified, if at all, through comparisons across model pairs) speaks
  to position;
* swapped-order consistency and the split of inconsistent pairs into "biased toward
  first" (primacy), "biased toward second" (recency) and other, as in Zheng et al. 2023,
  "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", Table 2;
* preference fairness as Shi et al. 2024, "Judging the Judges: A Systematic Investigation
  of Position Bias in Pairwise Comparative Assessments by LLMs", compute it:
  ``(recency - primacy) / swapped pairs`` on [-1, 1] (0 fair, negative primacy, positive
  recency), where, as in their code, an inconsistent pair with a win in one order and a
  tie in the other counts as primacy or recency by the position of the side that won;
* the position-debiased verdict per pair: the verdict a rater gives in every order it
  saw, or a tie when its verdicts disagree (the conservative rule of Zheng et al. 2023,
  Section 3.4).

A "swapped pair" is one voter's records of one ``pair_id`` and one pair of models that
show the same model first in one record and second in another: the same (prompt, model
pair) in both orders. Two different model pairs that happen to give identical texts share
a ``pair_id`` but are not one comparison swapped. Consistency is always measured within
one voter, so two people who disagree never count as one inconsistent judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.judgment_table import string_values
from analysis.stats import clustered_rate_ci, row_clusters, wilson_interval

__all__ = [
    "OrderCheck",
    "PositionBias",
    "calibrated_verdicts",
    "debiased_rows",
    "debiased_verdicts",
    "order_check",
    "position_bias",
]

# Randomised order shows each model of a pair first about half the time; below this share
# of records in their model pair's less common order, the order is taken as fixed.
MIN_MINORITY_SHARE = 0.1
MIN_ORDER_RECORDS = 20  # fewer records (in model pairs seen twice or more) cannot tell


@dataclass(frozen=True)
class OrderCheck:
    """Is the display order randomised within model pairs?

    ``minority_share``: records shown in the less common order of their model pair, over
    all records of model pairs seen at least twice (about 0.5 when randomised, 0 when the
    order is fixed). ``randomised`` is None when there are too few records to tell.
    ``never_first``: models that took part in at least ten records and were never shown first.
    """

    randomised: bool | None
    minority_share: float | None
    n_records: int
    never_first: tuple[str, ...]


def order_check(rows: pd.DataFrame, model_codes=None) -> OrderCheck:
    """Detect display orders fixed by model (see :class:`OrderCheck`). ``model_codes``:
    :func:`_model_codes` of ``rows`` where the caller has them."""
    codes, models = model_codes or _model_codes(rows)
    a, b = codes
    low_first = a <= b
    pair = np.minimum(a, b) * len(models) + np.maximum(a, b)  # the unordered model pair
    size = np.bincount(pair)
    ones = np.bincount(pair, low_first)
    seen = size >= 2
    n = int(size[seen].sum())
    minority = np.minimum(ones[seen], size[seen] - ones[seen]).sum()
    share = float(minority / n) if n else None
    appearances = np.bincount(np.r_[a, b], minlength=len(models))
    first = np.bincount(a, minlength=len(models))
    never = tuple(sorted(str(m) for m in np.asarray(models)[(appearances >= 10) & (first == 0)]))
    randomised = None if n < MIN_ORDER_RECORDS else bool(share >= MIN_MINORITY_SHARE)
    return OrderCheck(randomised=randomised, minority_share=share, n_records=n, never_first=never)


@dataclass(frozen=True)
class PositionBias:
    n_records: int
    n_decisive: int
    first_wins: int
    first_rate: float | None
    first_rate_ci: tuple[float, float] | None
    n_swapped_pairs: int
    n_consistent: int
    n_first_biased: int  # both orders: the first-shown response won (primacy)
    n_second_biased: int  # both orders: the second-shown response won (recency)
    n_other_inconsistent: int  # e.g. a tie in one order, a win in the other
    consistency: float | None
    consistency_ci: tuple[float, float] | None
    preference_fairness: float | None
    order: OrderCheck | None = None
    display_order: bool = True  # False: the verdicts never saw one (no position numbers to read)


def _model_codes(rows: pd.DataFrame) -> tuple[tuple[np.ndarray, np.ndarray], pd.Index]:
    """Codes of ``model_a`` and ``model_b`` numbered in the names' sorted order (comparing
    codes compares the names), and the names."""
    a, b = string_values(rows["model_a"]), string_values(rows["model_b"])
    both, models = pd.factorize(np.concatenate([a, b]), sort=True)
    return (both[: len(a)], both[len(a):]), models


def _codes(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Non-negative integer codes of a key (-1 where missing) and an upper bound of them."""
    if key.dtype.kind in "iu" and (not len(key) or key.min() >= 0):
        return key.astype(np.int64, copy=False), int(key.max()) + 1 if len(key) else 1
    codes, distinct = pd.factorize(key)
    return codes, max(len(distinct), 1)


def _groups(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group number of every row with all keys present (``groupby(keys, sort=False)``'s
    numbering: groups in the order their first row comes), and those rows' positions."""
    coded = [_codes(key) for key in keys]
    present = np.logical_and.reduce([c >= 0 for c, _ in coded])
    at = np.flatnonzero(present)
    gid = coded[0][0][at]
    for c, bound in coded[1:]:
        # Renumbered after each key (first appearances first), so the combined number stays below rows x bound.
        gid, _ = pd.factorize(gid * bound + c[at])
    if len(coded) == 1:
        gid, _ = pd.factorize(gid)
    return gid, at


@dataclass(frozen=True)
class _VoterPairs:
    """Per (voter, pair_id) group, and with ``by_models`` per unordered model pair as well,
    numbered in the order their first row comes (``groupby(sort=False)``'s order): the key
    values (``levels``), the group of each row with all keys (``gid``, rows ``at``), each
    group's first row, and the flags and counts the estimators need."""

    names: list[str]
    levels: list
    gid: np.ndarray
    at: np.ndarray
    first_row: np.ndarray
    flip_min: np.ndarray
    flip_max: np.ndarray
    canon_min: np.ndarray
    canon_max: np.ndarray
    n: np.ndarray
    decisive: np.ndarray
    first: np.ndarray

    @property
    def swapped(self) -> np.ndarray:
        return self.flip_min != self.flip_max

    @property
    def consistent(self) -> np.ndarray:
        return self.canon_min == self.canon_max

    @property
    def verdict(self) -> np.ndarray:
        """The unanimity rule's verdict: the group's verdict when all its records agree, else a tie."""
        return np.where(self.consistent, self.canon_min, 0).astype(np.int8)


def _voter_pairs(rows: pd.DataFrame, by_models: bool = False, model_codes=None) -> _VoterPairs:
    """The groups of :class:`_VoterPairs`, counted with numpy on factorised keys (pandas'
    groupby with seven aggregations cost a tenth of a second per call, and the report
    groups a rater's rows a dozen times)."""
    voter, pair = rows["voter"].to_numpy(), rows["pair_id"].to_numpy()
    keys, names = [voter, pair], ["voter", "pair_id"]
    if by_models:
        # Model names numbered in their sorted order: comparing numbers compares the names.
        (code_a, code_b), models = model_codes or _model_codes(rows)
        # Shown order: by which model came first per model pair.
        flip = (code_a > code_b).astype(np.int8)
        low, high = np.minimum(code_a, code_b), np.maximum(code_a, code_b)
        keys, names = keys + [low * len(models) + high], names + ["low", "high"]
    else:
        flip = rows["flip"].to_numpy().astype(np.int8)  # shown order: by text for one pair_id
    gid, at = _groups(keys)
    order = at[np.argsort(gid, kind="stable")]
    n = np.bincount(gid)
    starts = np.cumsum(n) - n
    first_row = order[starts]  # each group's first row (rows of a group keep their order)

    def lowest(x):
        return np.minimum.reduceat(x[order], starts) if len(order) else x[:0]

    def highest(x):
        return np.maximum.reduceat(x[order], starts) if len(order) else x[:0]

    canon = rows["canon"].to_numpy()
    decisive = rows["decisive"].to_numpy().astype(np.int8)
    first = (rows["first_wins"].to_numpy() == 1).astype(np.int8)
    levels = [voter[first_row], pair[first_row]]
    if by_models:
        names_of = np.asarray(models, dtype=object)
        levels += [names_of[low[first_row]], names_of[high[first_row]]]
    return _VoterPairs(
        names=names, levels=levels, gid=gid, at=at, first_row=first_row, flip_min=lowest(flip),
        flip_max=highest(flip), canon_min=lowest(canon), canon_max=highest(canon), n=n.astype(np.int64),
        # int8 sums, as pandas' groupby sums of these int8 columns were
        decisive=np.bincount(gid, decisive[at], minlength=len(n)).astype(np.int8),
        first=np.bincount(gid, first[at], minlength=len(n)).astype(np.int8),
    )


def _per_voter_pair(rows: pd.DataFrame, by_models: bool = False, model_codes=None) -> pd.DataFrame:
    """:func:`_voter_pairs` as a frame indexed by the keys. ``swapped``: both display orders were seen."""
    g = _voter_pairs(rows, by_models, model_codes)
    index = pd.MultiIndex.from_arrays([pd.Index(level, dtype=rows[name].dtype if name in rows else "str")
                                       for level, name in zip(g.levels, g.names)], names=g.names)
    return pd.DataFrame({
        "flip_min": g.flip_min, "flip_max": g.flip_max, "canon_min": g.canon_min, "canon_max": g.canon_max,
        "n": g.n, "decisive": g.decisive, "first": g.first, "swapped": g.swapped, "consistent": g.consistent,
    }, index=index)


def no_display_order(n_records: int) -> PositionBias:
    """A rater whose verdicts never saw a display order (a panel, order-averaged verdicts,
    answers scored alone): its listing order says nothing about position bias."""
    return PositionBias(n_records=n_records, n_decisive=0, first_wins=0, first_rate=None, first_rate_ci=None,
                        n_swapped_pairs=0, n_consistent=0, n_first_biased=0, n_second_biased=0,
                        n_other_inconsistent=0, consistency=None, consistency_ci=None, preference_fairness=None,
                        display_order=False)


def position_bias(rows: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> PositionBias:
    """Position-bias estimates for one rater (see the module docstring)."""
    decisive = rows["decisive"].to_numpy(dtype=bool)
    won_first = rows["first_wins"].to_numpy()[decisive] == 1
    first_wins = int(won_first.sum())
    n_dec = int(decisive.sum())
    model_codes = _model_codes(rows)  # the model pairs' groups and the order check share them
    groups = _per_voter_pair(rows, by_models=True, model_codes=model_codes)
    swapped = groups[groups["swapped"]]
    n_sw = len(swapped)
    inconsistent = swapped[~swapped["consistent"]]
    # Shi et al.'s rule: the decisive verdicts of an inconsistent pair (ties aside) all
    # went to one position -> primacy or recency; a win plus a tie counts too.
    leans = inconsistent["decisive"] > 0
    n_first = int((leans & (inconsistent["first"] == inconsistent["decisive"])).sum())
    n_second = int((leans & (inconsistent["first"] == 0)).sum())
    n_cons = int(swapped["consistent"].sum())
    # Several voters may rate the same pair, and their consistency is correlated through
    # its content: the Wilson interval takes the number of distinct pairs as its n (a
    # conservative design-effect correction, Kish 1965); for a single judge it is plain.
    n_distinct = swapped.index.get_level_values("pair_id").nunique()
    consistency_ci = wilson_interval(n_cons / n_sw * n_distinct, n_distinct) if n_sw else None
    return PositionBias(
        n_records=len(rows),
        n_decisive=n_dec,
        first_wins=first_wins,
        first_rate=first_wins / n_dec if n_dec else None,
        first_rate_ci=clustered_rate_ci(
            won_first, np.ones(n_dec), row_clusters(rows).to_numpy()[decisive], n_boot, seed
        ),
        n_swapped_pairs=n_sw,
        n_consistent=n_cons,
        n_first_biased=n_first,
        n_second_biased=n_second,
        n_other_inconsistent=len(inconsistent) - n_first - n_second,
        consistency=n_cons / n_sw if n_sw else None,
        consistency_ci=consistency_ci,
        preference_fairness=(n_second - n_first) / n_sw if n_sw else None,
        order=order_check(rows, model_codes),
    )


def debiased_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One verdict per (voter, pair_id) in the canonical frame: +1, -1, or 0 (tie).

    The verdict stands when every record of that voter on the pair agrees (in both
    display orders when both were shown), and becomes a tie otherwise. Columns:
    ``voter, pair_id, canon, n_records, swapped, consistent``.
    """
    g = _voter_pairs(rows)
    return _verdict_frame(rows, g, g.verdict, n_records=g.n, swapped=g.swapped, consistent=g.consistent)


def _verdict_frame(rows: pd.DataFrame, g: _VoterPairs, canon: np.ndarray, **more) -> pd.DataFrame:
    return pd.DataFrame({"voter": pd.Series(g.levels[0], dtype=rows["voter"].dtype),
                         "pair_id": pd.Series(g.levels[1], dtype=rows["pair_id"].dtype), "canon": canon, **more})


def calibrated_verdicts(rows: pd.DataFrame) -> pd.DataFrame:
    """One verdict per (voter, pair_id) from the judge's probabilities, calibrated for position.

    Balanced position calibration (Wang et al. 2023, "Large Language Models are not Fair
    Evaluators", Section 3.2): average the probability that a response is better over the
    orders it was shown in, then pick the response above 0.5. A judge that always says
    "A" with probability 0.8-0.9 still reveals which response it leans to. Groups where a
    record lacks ``prob_a`` keep the unanimity rule of :func:`debiased_verdicts`.
    Columns: ``voter, pair_id, canon``.
    """
    g = _voter_pairs(rows)
    return _verdict_frame(rows, g, _calibrated(rows, g))


def _calibrated(rows: pd.DataFrame, g: _VoterPairs) -> np.ndarray:
    prob = rows["prob_a"].to_numpy(dtype=float)
    p_first_text = np.where(rows["flip"].to_numpy(dtype=bool), 1.0 - prob, prob)[g.at]
    # pandas' group mean (compensated sums), as the estimate always used; groups are the rows' own.
    mean = pd.Series(p_first_text).groupby(g.gid, sort=False).mean().to_numpy()
    complete = np.bincount(g.gid, ~np.isnan(p_first_text), minlength=len(g.n)) == g.n
    with np.errstate(invalid="ignore"):
        calibrated = np.sign(mean - 0.5)  # NaN where a record has no prob_a: replaced below
    return np.where(complete, calibrated, g.verdict).astype(np.int8)


def debiased_rows(rows: pd.DataFrame, calibrate: bool = False) -> pd.DataFrame:
    """Judgment-table rows collapsed to one per (voter, pair_id), carrying the debiased verdict.

    Used when a judge's verdict on a pair, rather than each order's, is what counts (a
    judge that always picks the first response would otherwise vote for both). With
    ``calibrate`` the verdict comes from :func:`calibrated_verdicts`.
    """
    g = _voter_pairs(rows)
    # Each group's first row, in the order the groups come (drop_duplicates' rows, in its order).
    out = rows.iloc[g.first_row].drop(columns=["canon"]).reset_index(drop=True)
    out["canon"] = _calibrated(rows, g) if calibrate else g.verdict
    out["decisive"] = out["canon"] != 0
    shown_first = np.where(out["flip"], -1, 1)  # canon value meaning "this row's first-shown text won"
    out["first_wins"] = np.where(out["decisive"], (out["canon"] == shown_first).astype(float), np.nan)
    out["winner"] = np.where(out["decisive"], np.where(out["first_wins"] == 1, "model_a", "model_b"), "tie")
    return out
