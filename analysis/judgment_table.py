"""Shared pieces of the bias lab: the judgment table and interval estimators.

The judgment table is one row per usable record with the columns every bias estimator
needs. Verdicts are read in two frames:

* the *shown* frame: ``first_wins`` is 1 when the first-shown response won, 0 when the
  second won, NaN for ties (position bias is read here);
* the *canonical* frame, independent of display order: the two response texts are
  sorted (as :func:`pairlab.records.make_pair_id` does), ``canon`` is +1 when the
  sorted-first text won, -1 when the other did, 0 for a tie. Two records of the same
  pair shown in opposite orders agree exactly when their ``canon`` values are equal.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import record_table
from analysis.resample import distinct_rows, kind_draws
from pairlab.records import HUMAN, Record

__all__ = [
    "HUMAN_RATER",
    "Z95",
    "cluster_bootstrap",
    "cluster_bootstrap_many",
    "cluster_codes",
    "positions",
    "string_values",
    "clustered_rate_ci",
    "strength_columns",
    "fit_logit",
    "judgment_table",
    "wilson_interval",
]

Z95 = 1.959963984540054
MIN_CLUSTERS = 10  # fewest pairs a bootstrap interval is computed from
HUMAN_RATER = HUMAN  # every human voter is pooled under this rater name


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (Wilson 1927); None when n == 0."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


# Ids as Python strings, each distinct one made once (_python_strings): the estimators group,
# match and count on these columns many times, and pandas hashes object arrays far faster than
# it converts Arrow strings (seconds a call at a million rows). "rater" and "voter" are made
# from "judge", "winner" with the verdict's codes.
_IDS = ("model_a", "model_b", "family_a", "family_b", "judge_family")
# Keys only grouped and matched on, never shown: integers in the order of their texts.
_KEYS = ("pair_id", "prompt")


def _python_strings(column) -> tuple[np.ndarray, np.ndarray]:
    """``column``'s codes and its distinct values as Python objects, None last: code -1
    (missing) takes it."""
    codes, distinct = pd.factorize(column)
    return codes, np.append(np.asarray(distinct, dtype=object), None)


def judgment_table(records: Iterable[Record] | pd.DataFrame, human_prefix: str | None = None,
                   key_codes: bool = False) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per usable record, and the number of records left out per rater.

    ``records`` are records or their table (:mod:`analysis.record_table`). A record is left
    out when it carries a ``parse_error`` (no verdict: ``winner`` is null). ``rater`` is
    the judge id, or ``"human"`` for every human voter (``human_prefix`` widens who counts
    as human, e.g. ``"expert"``); ``voter`` keeps the individual id so per-voter
    quantities (order consistency, human-human agreement) never mix two people.
    ``suspect`` marks a judge verdict on texts that hold a verdict marker
    (``meta.suspect_verdict``, see ``judges.runner``). With ``key_codes``, ``pair_id`` and
    ``prompt`` are integers numbered in their texts' sorted order (the report's choice: it
    groups and matches on them and shows none; every order by them is the texts' order).
    """
    source = records if isinstance(records, pd.DataFrame) else record_table.from_records(list(records))
    human = record_table.is_person(source, human_prefix)
    # The voters, and the raters: people pooled under one name.
    judge_codes, judges = _python_strings(source["judge"])
    voter = judges[judge_codes]
    rater = voter.copy()
    rater[human] = HUMAN_RATER
    failed = source["parse_error"].notna().to_numpy()
    parse_errors = {str(k): int(v) for k, v in pd.Series(rater[failed], dtype=object).value_counts(sort=False).items()}
    # The usable rows, in record order; a table without failures is read as it stands.
    usable = source[~failed] if failed.any() else source
    code_a, code_b, distinct = record_table.text_codes(usable)
    lengths = distinct.str.len().to_numpy(dtype=np.int64)
    len_a, len_b, flip = lengths[code_a], lengths[code_b], code_a > code_b
    table = pd.DataFrame({
        "rater": pd.Series(rater[~failed], dtype=object, index=usable.index),
        "voter": pd.Series(voter[~failed], dtype=object, index=usable.index), "is_human": human[~failed],
        "pair_id": usable["pair_id"],
        "model_a": usable["model_a"], "model_b": usable["model_b"], "family_a": usable["family_a"],
        "family_b": usable["family_b"], "judge_family": usable["judge_family"], "winner": usable["winner"],
        "len_a": len_a, "len_b": len_b, "flip": flip, "prob_a": usable["prob_a"].astype(float),
        "prompt": usable["prompt_id"].fillna(usable["prompt"]), "strength": usable["strength"].astype(float),
        "suspect": usable["suspect"].astype(bool),
    }, index=usable.index).reset_index(drop=True)
    for name in _IDS:
        codes, distinct = _python_strings(table[name])
        table[name] = pd.Series(distinct[codes], dtype=object)
    codes, verdicts = _python_strings(table["winner"])
    table["winner"] = pd.Series(verdicts[codes], dtype=object)
    # The verdict read once per distinct value, not compared row by row.
    decisive = np.array([w in ("model_a", "model_b") for w in verdicts])[codes]
    shown = np.array([{"model_a": 1, "model_b": -1}.get(w, 0) for w in verdicts], dtype=np.int8)[codes]
    for name in _KEYS if key_codes else ():
        # Codes numbered in the texts' sorted order, so every sort by them (groupby's) keeps the
        # order the texts had: a million string comparisons per sort become integer ones.
        codes, _ = pd.factorize(table[name], sort=True)
        table[name] = codes.astype(np.int64)
    table["decisive"] = decisive
    table["first_wins"] = np.where(decisive, (shown == 1).astype(float), np.nan)
    # flip: response_a is the sorted-second text, so the canonical frame is mirrored.
    table["canon"] = np.where(flip, -shown, shown).astype(np.int8)
    return table, parse_errors


def cluster_bootstrap(
    cluster_sums: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of a statistic of column totals, resampling whole clusters.

    ``cluster_sums`` is (clusters x k): each row the totals one cluster (a ``pair_id``)
    contributes; ``statistic`` maps an (n x k) array of resampled totals to n values.
    Resampling pairs rather than records keeps the dependence between votes on the same
    pair (Efron & Tibshirani 1993, ch. 6; Field & Welsh 2007 for clustered data).
    Replicates whose statistic is undefined (NaN) are dropped; None if most are, or if
    there are fewer than :data:`MIN_CLUSTERS` clusters (a percentile interval from a
    handful of pairs is an artefact, not an interval).
    """
    return cluster_bootstrap_many(cluster_sums, [statistic], n_boot, seed, level)[0]


def cluster_bootstrap_many(
    cluster_sums: np.ndarray,
    statistics: Sequence[Callable[[np.ndarray], np.ndarray]],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[tuple[float, float] | None]:
    """:func:`cluster_bootstrap` for several statistics on the same resamples."""
    sums = np.asarray(cluster_sums, dtype=float)
    k = len(sums)
    if k < MIN_CLUSTERS:
        return [None] * len(statistics)
    rng = np.random.default_rng(seed)
    values: list[list[np.ndarray]] = [[] for _ in statistics]
    # Clusters usually contribute a handful of distinct count rows; resampling k clusters
    # is then a multinomial draw over the distinct rows (analysis.resample: the same
    # distribution, far cheaper).
    rows, counts = distinct_rows(sums)
    if len(rows) <= 2000:
        totals = np.concatenate([draws @ rows for draws in kind_draws(counts, n_boot, rng, sums.shape[1])])
        for out, statistic in zip(values, statistics):
            out.append(statistic(totals))
    else:
        # Chunks bound the gathered (chunk x clusters x columns) array at about 50 MB.
        chunk = max(1, min(n_boot, 6_000_000 // (k * sums.shape[1])))
        done = 0
        while done < n_boot:
            size = min(chunk, n_boot - done)
            totals = sums[rng.integers(0, k, size=(size, k))].sum(axis=1)
            for out, statistic in zip(values, statistics):
                out.append(statistic(totals))
            done += size
    alpha = (1 - level) / 2
    intervals = []
    for out in values:
        stats = np.concatenate(out)
        stats = stats[np.isfinite(stats)]
        if len(stats) < n_boot / 2:
            intervals.append(None)
            continue
        lo, hi = np.quantile(stats, [alpha, 1 - alpha])
        intervals.append((float(lo), float(hi)))
    return intervals


def clustered_rate_ci(
    successes: np.ndarray, trials: np.ndarray, groups, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float] | None:
    """Interval for ``sum(successes) / sum(trials)`` when rows of one group (a ``pair_id``)
    are not independent: several people voting on one pair, a judge seeing both orders.

    Groups holding one trial each are independent trials: Wilson's interval. Otherwise
    whole groups are resampled (:func:`cluster_bootstrap`); with fewer than
    :data:`MIN_CLUSTERS` groups, Wilson's interval with the number of groups as its n (the
    conservative design-effect correction of Kish 1965, as for consistency).
    """
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    n = trials.sum()
    if n == 0:
        return None
    codes = cluster_codes(groups)
    per_group = np.c_[np.bincount(codes, successes), np.bincount(codes, trials)]
    per_group = per_group[per_group[:, 1] > 0]
    if per_group[:, 1].max() <= 1:
        return wilson_interval(successes.sum(), int(n))
    ci = cluster_bootstrap(per_group, lambda t: t[:, 0] / t[:, 1], n_boot=n_boot, seed=seed)
    if ci is None:
        k = len(per_group)
        return wilson_interval(successes.sum() / n * k, k)
    return ci


def cluster_codes(groups) -> np.ndarray:
    """Integer cluster codes of ``groups`` (e.g. ``pair_id``); a row without a group (None,
    NaN) is a cluster of its own rather than one cluster of all the missing ones."""
    codes, uniques = pd.factorize(pd.Series(groups, copy=False))
    alone = codes < 0
    codes[alone] = len(uniques) + np.arange(alone.sum())
    return codes


def string_values(column: pd.Series) -> np.ndarray:
    """``column.astype(str).to_numpy()``, an object column of strings as it stands (the judgment
    table's ids: converting them to Arrow strings and back cost more than what they were for)."""
    values = column.to_numpy()
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return column.astype(str).to_numpy()


def positions(index: pd.Index, values) -> np.ndarray:
    """``index.get_indexer(values)``: where each value sits in the unique ``index``, -1 when it
    is not there (a missing value matches nothing). Strings (Python or Arrow) are looked up by Arrow's hash join:
    pandas' object hash table took 0.4 s for a million ids, Arrow 0.08 with the conversion."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def textual(dtype) -> bool:
        return dtype == object or isinstance(dtype, pd.StringDtype)

    values = pd.Series(values, copy=False)
    if textual(values.dtype) and textual(index.dtype):
        try:
            found = pc.index_in(pa.array(values, type=pa.string(), from_pandas=True),
                                value_set=pa.array(index, type=pa.string(), from_pandas=True), skip_nulls=True)
            return found.fill_null(-1).to_numpy().astype(np.intp)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass  # not all strings (numbers, mixed objects): pandas' lookup
    found = index.get_indexer(values)
    found[values.isna().to_numpy()] = -1
    return found


def strength_columns(rows: pd.DataFrame) -> np.ndarray:
    """Bradley-Terry strength columns of a logit on shown-order outcomes: +1 in the column of
    the first-shown model, -1 in the second's; the most-rated model is the baseline and
    has no column (only differences of strengths are identified)."""
    counts = pd.concat([rows["model_a"], rows["model_b"]]).value_counts()
    others = pd.Index(sorted(set(counts.index) - {counts.index[0]}))
    out = np.zeros((len(rows), len(others)))
    at = np.arange(len(rows))
    for column, sign in (("model_a", 1.0), ("model_b", -1.0)):
        index = others.get_indexer(rows[column])
        out[at[index >= 0], index[index >= 0]] += sign
    return out


@dataclass(frozen=True)
class LogitFit:
    params: np.ndarray
    bse: np.ndarray
    pvalues: np.ndarray
    cov: np.ndarray  # of params, the clustered sandwich (for delta-method intervals)

    def interval(self, i: int) -> tuple[float, float]:
        return (float(self.params[i] - Z95 * self.bse[i]), float(self.params[i] + Z95 * self.bse[i]))


def fit_logit(X: np.ndarray, y: np.ndarray, groups: np.ndarray, *, small_sample: bool = True) -> LogitFit:
    """Logistic regression (Newton) with standard errors clustered by ``groups``.

    ``y`` is 0/1 or a probability (a fractional logit, Papke & Wooldridge 1996: the same
    Bernoulli quasi-likelihood, so only the sandwich covariance is valid).
    ``small_sample=False`` leaves out statsmodels' factor G/(G-1) * (N-1)/(N-K), so with
    one row per group the covariance is White's HC0.

    Raises ValueError instead of returning numbers from a fit that did not converge or
    whose data are (quasi-)separated, where the maximum likelihood estimate does not exist.
    statsmodels' PerfectSeparationWarning alone is not taken as a failure: it fires when the
    fitted values equal ``y``, which for 0/1 outcomes the certainty check below catches and
    for probabilities is a perfect (noise-free) fit, not a separation.
    """
    from statsmodels.discrete.discrete_model import Logit
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationError

    y = np.asarray(y, dtype=float)
    if len(y) and np.all(y == y[0]) and y[0] in (0.0, 1.0):
        raise ValueError("separated data: every outcome is the same")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = Logit(y, X).fit(method="newton", maxiter=100, disp=False, cov_type="cluster",
                                  cov_kwds={"groups": groups, "use_correction": small_sample})
        except (PerfectSeparationError, np.linalg.LinAlgError) as exc:
            raise ValueError(f"the fit failed ({exc})") from None
        fitted = fit.predict()  # overflows to exactly 0 or 1 on a diverged fit: the check below
    problems = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    if problems or not fit.mle_retvals.get("converged", False):
        raise ValueError("the fit did not converge (separated data or a degenerate design)")
    if np.any((fitted < 1e-6) | (fitted > 1 - 1e-6)):
        raise ValueError("quasi-separated data: some outcomes are predicted with certainty")
    if not (np.all(np.isfinite(fit.params)) and np.all(np.isfinite(fit.bse))):
        raise ValueError("the fit produced non-finite estimates")
    return LogitFit(np.asarray(fit.params), np.asarray(fit.bse), np.asarray(fit.pvalues), np.asarray(fit.cov_params()))


def as_interval(ci: Sequence[float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]
