"""One rater per judge and setting: a judge run in two modes or with two templates is two raters.

``judges.run`` stamps every record with its template (``template``) and mode
(``meta.mode``). The same judge model read by its verdict-token probabilities and by its
generated text, or under two prompts, can differ in every bias measured, so pooling them
under one name would report a mixture of two judges as one. A judge seen with a single
setting keeps its plain name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from pairlab import record_table
from pairlab.records import Record

__all__ = ["setting_label", "split_settings"]


def setting_label(judge: str, mode: str | None, template: str | None) -> str:
    """``"smollm2-135m-instruct (logprob, prometheus-relative)"``; parts not known are left out."""
    parts = [x for x in (mode, template) if x]
    return f"{judge} ({', '.join(parts)})" if parts else f"{judge} (no setting recorded)"


def split_settings(records: Sequence[Record] | pd.DataFrame,
                   is_person: Callable[[Record], bool] | np.ndarray) -> tuple[list[Record] | pd.DataFrame, list[str]]:
    """The records (or their table, :mod:`pairlab.record_table`, with ``is_person`` a mask)
    with each LLM judge seen under several settings renamed per setting, and a note for each
    judge split so (people are never split)."""
    if isinstance(records, pd.DataFrame):
        return _split_table(records, np.asarray(is_person, dtype=bool))
    table, notes = _split_table(record_table.from_records(records), np.array([is_person(r) for r in records], dtype=bool))
    return [r if r.judge == judge else dataclasses.replace(r, judge=judge)
            for r, judge in zip(records, table["judge"])], notes


def _split_table(table: pd.DataFrame, person: np.ndarray) -> tuple[pd.DataFrame, list[str]]:
    # Each distinct (judge, mode, template) of the judges' rows, first seen first, found on the
    # columns' codes, never by converting every row to Python objects.
    columns = ["judge", "mode", "template"]
    at = np.flatnonzero(~person)
    key = np.zeros(len(at), dtype=np.int64)
    for name in columns:
        codes, distinct = pd.factorize(table[name])
        # Renumbered at each step, so the key stays below (rows + 1) ** 2; code -1: missing.
        key = pd.factorize(key * (len(distinct) + 1) + codes[at] + 1)[0].astype(np.int64)
    first = np.sort(np.unique(key, return_index=True)[1])
    judges = table[columns].iloc[at[first]].astype(object)
    judges = judges.where(judges.notna(), None)
    several = {judge: {(m, t) for m, t in zip(rows["mode"], rows["template"])}
               for judge, rows in judges.groupby("judge", sort=False) if len(rows) > 1}
    if not several:
        return table, []
    renamed = ~person & table["judge"].isin(list(several)).to_numpy()
    labels = [setting_label(j, None if pd.isna(m) else m, None if pd.isna(t) else t)
              for j, m, t in zip(table["judge"][renamed], table["mode"][renamed], table["template"][renamed])]
    table = table.copy()
    table.loc[renamed, "judge"] = labels
    return table, _notes(several)


def _notes(several: dict[str, set]) -> list[str]:
    return [f"judge {judge} was run with {len(found)} settings (mode, template); each is reported as its own "
            f"rater: " + "; ".join(sorted(setting_label(judge, *s) for s in found))
            for judge, found in sorted(several.items())]
