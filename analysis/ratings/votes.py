"""Rate a set of votes: the one function behind every caller that rates (the ratings command,
``pairlab.rate``, the arena's leaderboard and its campaign view).

:func:`rate_votes` takes battles already read and filtered (:func:`analysis.frames.load_frame`
or :func:`analysis.frames.select_battles`) and applies, once for all of them:

* **which raters count** (:func:`choose_raters`): people only where people and LLM judges
  both voted and no judge was named; each judge once (its order-averaged verdicts where it has
  them, not those beside its per-order ones);
* **the early estimate**: Bradley-Terry on battles without a maximum-likelihood rating (a model
  with only wins or only losses, Ford 1957) is fitted under the stated prior
  :data:`.bt.PRIOR_L2`, with or without a bootstrap, and says so;
* **the bootstrap fallback**: a bootstrap that cannot be fitted gives way to the sandwich
  interval, with a warning;
* **withholding**: intervals and ranks from fewer than :data:`.table.MIN_UNITS` units, or of
  zero width, are not claimed (:func:`.table.withhold_thin`).

Front ends parse their arguments, call :func:`rate_votes` and show its :class:`Ratings`.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats import Clustering, FitError, cluster_groups

from .registry import METHODS, rate
from .table import RatingTable, withhold_thin

__all__ = ["MAX_BOOTSTRAP", "WINRATE", "Ratings", "check_options", "choose_raters", "parse_anchor", "rate_battles",
           "rate_votes"]

# Not a rating on the Elo scale but a rate against one baseline (AlpacaEval's), so it has
# its own result type and lives beside the registry's methods, not in it.
WINRATE = "winrate"
# More rounds than this add nothing a percentile interval can show, and each round holds a
# copy of the parameters: a bound keeps a typo from asking for gigabytes.
MAX_BOOTSTRAP = 100_000
_BT = ("bt", "bt-davidson")


@dataclass(frozen=True)
class Ratings:
    """What rating a set of votes gives: the method's result (``result``: a
    :class:`.table.RatingTable`, a win-rate table or a prediction-powered one), the line saying
    whose votes were rated (``raters``; None for prediction-powered ratings, which use people
    and one judge by design), the battles rated, every warning a reader needs (``warnings``),
    whether the ratings are the early estimate under the prior (``early_estimate``), how many
    units (``unit``: pairs, else votes) the intervals rest on and how the votes cluster.

    In a notebook it shows as its table; ``to_frame()`` is the table as a DataFrame, and the
    DataFrame's columns and methods (``ratings["model"]``, ``.iloc``, ``.to_string()``) reach
    that table.
    """

    result: object
    raters: str | None
    battles: pd.DataFrame
    warnings: tuple[str, ...] = ()
    early_estimate: bool = False
    n_units: int = 0
    unit: str = "votes"
    clustering: Clustering | None = None  # the unit the intervals treat as independent

    @property
    def method(self) -> str:
        return getattr(self.result, "method", WINRATE if hasattr(self.result, "baseline") else "bt")

    @property
    def interval(self) -> str:
        table = getattr(self.result, "table", None)
        return getattr(self.result, "interval", "") or getattr(table, "interval", "")

    def to_frame(self) -> pd.DataFrame:
        """The ratings table (``pairlab ratings --json``'s rows) as a DataFrame."""
        table = self.result.table
        return (table.table if isinstance(table, RatingTable) else table).copy()

    def to_dict(self) -> dict:
        """``pairlab ratings --json``'s object."""
        out = self.result.to_dict()
        if self.raters is not None:
            out["raters"] = self.raters
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def _frame(self) -> pd.DataFrame:
        table = self.result.table
        return table.table if isinstance(table, RatingTable) else table

    def __getattr__(self, name: str):
        # DataFrame access for callers that had a DataFrame (``.iloc``, ``.columns``, ``.to_string``).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._frame(), name)

    def __getitem__(self, key):
        return self._frame()[key]

    def __len__(self) -> int:
        return len(self._frame())

    def __iter__(self):
        return iter(self._frame())

    def __repr__(self) -> str:
        head = f"Ratings({self.method}, {len(self)} models, {self.interval or 'no interval'})"
        lines = [head, self._frame().to_string(index=False, float_format=lambda v: f"{v:.1f}")]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        caption = html.escape(f"{self.method}: {self.interval}" + (f"; {self.raters}" if self.raters else ""))
        notes = "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
        table = self._frame().to_html(index=False, na_rep="-", float_format=lambda v: f"{v:.1f}")
        return f"<div><p>{caption}</p>{table}" + (f"<ul>{notes}</ul>" if notes else "") + "</div>"


def _base_judge(name: str) -> str:
    from pairlab.records import JUDGE_VARIANTS

    for suffix in JUDGE_VARIANTS:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _one_reading_per_judge(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Each LLM judge once: where one judge's verdicts come in several readings (per order, its
    order-averaged ones, its likelihood scores), the order-averaged ones where present, else the
    per-order ones; the readings left out are named."""
    from pairlab.records import LIKELIHOOD, ORDER_AVERAGED

    judges = frame.loc[(frame["judge_type"] != "human").fillna(True).to_numpy(), "judge"].dropna().astype(str).unique()
    readings: dict[str, list[str]] = {}
    for name in judges:
        readings.setdefault(_base_judge(name), []).append(name)
    preference = (ORDER_AVERAGED, "", LIKELIHOOD)
    dropped = []
    for base, names in readings.items():
        if len(names) > 1:
            kept = min(names, key=lambda n: preference.index(n[len(base):]) if n[len(base):] in preference else 3)
            dropped += [n for n in names if n != kept]
    if not dropped:
        return frame, ""
    keep = ~frame["judge"].isin(dropped).fillna(False).to_numpy(dtype=bool)
    return (frame[keep].reset_index(drop=True),
            f"; each judge counted once, left out {', '.join(sorted(dropped))} (another reading of a judge already "
            "counted; --judge NAME rates one reading)")


def choose_raters(frame: pd.DataFrame, judge: str | None) -> tuple[pd.DataFrame, str]:
    """People only when people and LLM judges both gave verdicts and no ``judge`` was named
    (their ratings answer different questions); ``"all"`` pools everyone. Without a named judge
    each judge counts once (:func:`_one_reading_per_judge`).

    Returns the battles kept and a line saying which raters they come from.
    """
    once = ""
    if judge is None:
        frame, once = _one_reading_per_judge(frame)
    humans = (frame["judge_type"] == "human").fillna(False).to_numpy(dtype=bool)
    # A table without a judge column (a plain CSV of battles) names no rater: say so rather than nothing.
    others = frame["judge"].iloc[:0] if humans.all() else frame.loc[~humans, "judge"]  # no copy when all are people
    counts = others.astype(object).fillna("unnamed (no judge column)").value_counts()
    if humans.any():
        counts = pd.concat([pd.Series({"people": int(humans.sum())}), counts]).sort_values(ascending=False,
                                                                                         kind="stable")
    listing = ", ".join(f"{name} {n}" for name, n in counts.items())
    if judge is None and humans.any() and not humans.all():
        left_out = ", ".join(f"{name} {n}" for name, n in counts.items() if name != "people")
        return (frame[humans].reset_index(drop=True),
                f"raters: people ({int(humans.sum())} battles); LLM judges left out ({left_out}): "
                "--judge NAME rates one judge, --judge all pools everyone")
    return frame, f"raters: {listing}" + (" (pooled)" if len(counts) > 1 else "") + once


def parse_anchor(anchor) -> tuple[str, float] | None:
    """``(model, rating)`` from the command line's ``MODEL=RATING`` or a pair; None stays None."""
    if anchor is None:
        return None
    if isinstance(anchor, str):
        model, sep, rating = anchor.rpartition("=")
        try:
            if not sep or not model:
                raise ValueError
            return model, float(rating)
        except ValueError:
            raise ValueError(f"anchor: expected MODEL=RATING or (model, rating), got {anchor!r}") from None
    try:
        model, rating = anchor
    except (TypeError, ValueError):
        raise ValueError(f"anchor: expected MODEL=RATING or (model, rating), got {anchor!r}") from None
    return str(model), rating


def check_options(method: str, *, bootstrap: int = 0, level: float = 0.95, anchor=None, k=None, **_) -> None:
    """Bounds on the options every front end shares: a value outside them is a ``ValueError``
    saying which, before anything is fitted."""
    if method not in (*METHODS, WINRATE):
        raise ValueError(f"unknown rating method {method!r}; choose from {', '.join(sorted([*METHODS, WINRATE]))}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise ValueError(f"bootstrap must be a whole number of rounds from 0 to {MAX_BOOTSTRAP:,}, got {bootstrap!r}")
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a coverage between 0 and 1 (e.g. 0.95), got {level!r}")
    if anchor is not None:
        model, rating = anchor
        if not isinstance(rating, (int, float)) or not math.isfinite(rating):
            raise ValueError(f"anchor rating must be a finite number, got {rating!r} for {model!r}")
    if k is not None and (not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0):
        raise ValueError(f"k (the Elo K-factor) must be a finite number > 0, got {k!r}")


def _units(frame: pd.DataFrame, clustering: Clustering) -> tuple[int, str]:
    """How many pairs the votes are on (votes where some vote has no pair_id)."""
    paired = "pair_id" in frame.columns and bool(frame["pair_id"].notna().all())
    if not paired:
        return len(frame), "votes"
    return (clustering.n if clustering.kind == "pair" else int(frame["pair_id"].nunique())), "pairs"


def rate_votes(frame: pd.DataFrame, method: str = "bt", *, judge: str | None = None, ppi: str | None = None,
               picks=None, bootstrap: int = 0, seed: int = 0, level: float = 0.95, cluster: str | None = None,
               **options) -> Ratings:
    """Rate the battles ``frame`` (see the module docstring) with ``method``: the registry's
    methods (:data:`.registry.METHODS`, their ``options``), ``"winrate"`` (``baseline=``) or, with
    ``ppi=JUDGE``, prediction-powered ratings from people's votes and JUDGE's verdicts (``picks``:
    the planner's inclusion probabilities). ``judge`` as the ratings command's ``--judge``;
    ``cluster`` as :func:`analysis.stats.cluster_groups`."""
    raters = None
    if ppi is None:
        frame, raters = choose_raters(frame, judge)
    if frame.empty:
        raise ValueError("no battles to rate" + (f" for judge {judge!r}" if judge not in (None, "all") else ""))
    return rate_battles(frame, method, ppi=ppi, picks=picks, bootstrap=bootstrap, seed=seed, level=level,
                        cluster=cluster, raters=raters, **options)


def rate_battles(frame: pd.DataFrame, method: str = "bt", *, ppi: str | None = None, picks=None, bootstrap: int = 0,
                 seed: int = 0, level: float = 0.95, cluster: str | None = None,
                 raters: str | None = None, **options) -> Ratings:
    """:func:`rate_votes` on battles whose raters are already chosen (one rater's, as the bias
    report rates each rater apart): the early estimate, the bootstrap fallback and withholding,
    without the rater rule. ``raters``: the line saying whose votes these are, if known."""
    check_options(method, bootstrap=bootstrap, level=level, **options)
    if frame.empty:
        raise ValueError("no battles to rate")
    frame, left_out = _between_two_models(frame)
    notes: list[str] = [] if left_out is None else [left_out]
    if ppi is not None and method == WINRATE:
        from .ppi import ppi_win_rates

        result = ppi_win_rates(frame, ppi, options.get("baseline"), level=level)
        return Ratings(result, None, frame, (*notes, *getattr(result, "warnings", ())))
    if ppi is not None:
        from .ppi import ppi_ratings

        result = ppi_ratings(frame, ppi, level=level, picks=picks, cluster=cluster)
        return Ratings(result, None, frame, (*notes, *result.warnings))
    if method == WINRATE:
        from .winrate import win_rates

        if bootstrap:
            raise ValueError("bootstrap does not apply to the win rate (its intervals are Wald)")
        return Ratings(win_rates(frame, options.get("baseline"), level=level), raters, frame, tuple(notes))
    clustering = cluster_groups(frame, cluster)  # once: the fit, the fallback and the caller share it
    prior = _early_l2(frame) if method in _BT and options.get("l2") is None else None
    early = prior is not None
    if early:
        from .bt import PRIOR_L2, PRIOR_SD_ELO

        options = {**options, "l2": prior}
        notes.append(f"early estimate: no maximum-likelihood rating exists for these battles (a model has only wins "
                     f"or only losses, Ford 1957), so the ratings are regularised towards 1000 by a Gaussian prior "
                     f"(--l2 {PRIOR_L2:g}: SD {PRIOR_SD_ELO:.0f} Elo points on each model's strength); another --l2 "
                     "(l2= in Python) chooses another prior")
    try:
        result = rate(frame, method, bootstrap=bootstrap, seed=seed, level=level, cluster=clustering, **options)
    except FitError as exc:
        if not bootstrap or options.get("ci") == "bootstrap":
            raise
        # Some resample cannot be fitted (few votes per pair): the sandwich needs no resample.
        result = rate(frame, method, bootstrap=0, seed=seed, level=level, cluster=clustering, **options)
        notes.append(f"the bootstrap could not be fitted ({str(exc).splitlines()[0]}); sandwich intervals instead")
    n_units, unit = _units(frame, clustering)
    result = withhold_thin(result, n_units, unit)
    result = dataclasses.replace(result, warnings=(*notes, *result.warnings))
    return Ratings(result, raters, frame, result.warnings, early_estimate=early, n_units=n_units, unit=unit,
                   clustering=clustering)


def _between_two_models(frame: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The battles of two different models, and a note on those of a model against itself, left
    out: its outcome drops out of every rating's likelihood (and an Elo update moves the model by
    nothing), so it says nothing of any model's strength; kept, it made every fit refuse all the
    votes. The other analyses keep them (a judge's position lean between two copies of one answer
    is position alone)."""
    a, b = frame["model_a"], frame["model_b"]
    try:
        same = a == b
    except TypeError:  # categoricals of different categories
        same = a.astype(str) == b.astype(str)
    same = same.to_numpy(dtype=bool, na_value=False)
    if not same.any():
        return frame, None
    where = (frame["pair_id"][same].astype(str).head(3).tolist() if "pair_id" in frame.columns
             else [f"row {k + 1}" for k in np.flatnonzero(same)[:3]])
    more = ", ..." if same.sum() > len(where) else ""
    note = (f"left out {int(same.sum())} of {len(frame)} battles of a model against itself "
            f"({', '.join(where)}{more}): they say nothing of any model's strength against another")
    return frame[~same].reset_index(drop=True), note


def _early_l2(frame: pd.DataFrame) -> float | None:
    from .bt import early_l2
    from .counts import aggregate

    return early_l2(aggregate(frame["model_a"], frame["model_b"], frame["winner"]))

