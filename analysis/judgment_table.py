"""The judgment table: one row per usable record, the columns every bias estimator reads.

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

from collections.abc import Iterable

import numpy as np
import pandas as pd

from analysis.ratings.style import STYLE_FEATURES, style_features
from analysis.stats import prompt_key
from pairlab import record_table
from pairlab.records import HUMAN, Record

__all__ = ["HUMAN_RATER", "MARKDOWN", "judgment_table", "positions", "string_values"]

# The style elements of ``bt-style`` besides length (which ``len_a``/``len_b`` carry in
# characters): their counts per response are the columns ``style_<name>_a`` and ``_b``.
MARKDOWN = tuple(name for name in STYLE_FEATURES if name != "length")

HUMAN_RATER = HUMAN  # every human voter is pooled under this rater name


# Ids as Python strings, each distinct one made once (_python_strings): the estimators group,
# match and count on these columns many times, and pandas hashes object arrays far faster than
# it converts Arrow strings (seconds a call at a million rows). "rater" and "voter" are made
# from "judge", "winner" with the verdict's codes.
_IDS = ("model_a", "model_b", "family_a", "family_b", "judge_family")
# Keys only grouped and matched on, never shown: integers in the order of their texts.
_KEYS = ("pair_id",)  # the prompt is a key already (analysis.stats.prompt_key)


def _python_strings(column) -> tuple[np.ndarray, np.ndarray]:
    """``column``'s codes and its distinct values as Python objects, None last: code -1
    (missing) takes it."""
    codes, distinct = pd.factorize(column)
    return codes, np.append(np.asarray(distinct, dtype=object), None)


def judgment_table(records: Iterable[Record] | pd.DataFrame, human_prefix: str | None = None,
                   key_codes: bool = False) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per usable record, and the number of records left out per rater.

    ``records`` are records or their table (:mod:`pairlab.record_table`). A record is left
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
    # Counted once per distinct text by bt-style's own counter, so a judge's style lean in the
    # self-preference model is read on the features style-controlled ratings hold fixed.
    counts = style_features(distinct)[:, [STYLE_FEATURES.index(name) for name in MARKDOWN]].astype(np.int32)
    style = {f"style_{name}_{side}": counts[codes, k] for k, name in enumerate(MARKDOWN)
             for side, codes in (("a", code_a), ("b", code_b))}
    table = pd.DataFrame({
        "rater": pd.Series(rater[~failed], dtype=object, index=usable.index),
        "voter": pd.Series(voter[~failed], dtype=object, index=usable.index), "is_human": human[~failed],
        "pair_id": usable["pair_id"],
        "model_a": usable["model_a"], "model_b": usable["model_b"], "family_a": usable["family_a"],
        "family_b": usable["family_b"], "judge_family": usable["judge_family"], "winner": usable["winner"],
        "len_a": len_a, "len_b": len_b, "flip": flip, "prob_a": usable["prob_a"].astype(float),
        "prompt": _prompts(usable), "category": usable["category"],
        "strength": usable["strength"].astype(float),
        "suspect": usable["suspect"].astype(bool), **style,
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


def _prompts(usable: pd.DataFrame) -> pd.Series:
    """Each row's prompt key (:func:`analysis.stats.prompt_key`, numbered in the texts' sorted
    order), NA where a row has none: plain integers when every row has one."""
    key = prompt_key(usable, sort=True)
    if key is None:
        return pd.Series(pd.array([pd.NA] * len(usable), dtype="Int64"), index=usable.index)
    return key.astype(np.int64) if key.notna().all() else key


def string_values(column: pd.Series) -> np.ndarray:
    """``column.astype(str).to_numpy()``, an object column of strings as it stands (the judgment
    table's ids: converting them to Arrow strings and back cost more than what they were for)."""
    values = column.to_numpy()
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return column.astype(str).to_numpy()


def positions(index: pd.Index, values) -> np.ndarray:
    """``index.get_indexer(values)``: where each value sits in the unique ``index``, -1 when it
    is not there (a missing value matches nothing). Strings (Python or Arrow) are looked up by Arrow's hash join,
    which beats pandas' object hash table on millions of ids even counting the conversion."""
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
