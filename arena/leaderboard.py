"""The leaderboard tab's numbers: Bradley-Terry ratings with CIs, win-rate and count matrices.

Only ratable votes count: anonymous battles whose answers did not name a model (see
``VoteStore.records(ratable=True)``). The rating math is ``analysis.ratings``'.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from arena.store import VoteStore
from core.records import Record


@dataclass(frozen=True)
class Leaderboard:
    summary: str
    ratings: pd.DataFrame
    win_rates: pd.DataFrame
    counts: pd.DataFrame


def matrices(records: list[Record]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(win rate of row model over column model, battles per pair); a tie scores ½ each."""
    models = sorted({m for r in records for m in (r.model_a, r.model_b)})
    score = pd.DataFrame(0.0, index=models, columns=models)
    count = pd.DataFrame(0, index=models, columns=models)
    for r in records:
        a, b = r.model_a, r.model_b
        s = {"model_a": 1.0, "model_b": 0.0}.get(r.winner, 0.5)
        score.loc[a, b] += s
        score.loc[b, a] += 1.0 - s
        count.loc[a, b] += 1
        count.loc[b, a] += 1
    rates = (score / count.where(count > 0)).round(3)
    for frame in (rates, count):
        frame.index.name = "model"
    return rates.reset_index(), count.reset_index()


def compute(store: VoteStore, bootstrap: int = 200, seed: int = 0) -> Leaderboard:
    everything = store.count_votes()
    records = store.records(ratable=True)
    excluded = everything - len(records)
    prompt_set = ("prompt-set votes other than a logged-in voter's first on each pair" if store.prompt_set_rated
                  else "prompt-set votes, whose fixed answers a voter can recognise")
    note = (f"{len(records)} rated votes; {excluded} more stored but not rated "
            f"(named side-by-side votes, {prompt_set}, or answers that named a model).")
    if len({m for r in records for m in (r.model_a, r.model_b)}) < 2:
        empty = pd.DataFrame()
        return Leaderboard("No rated votes yet. " + note, empty, empty, empty)
    from analysis.frames import records_to_frame
    from analysis.ratings import rate

    table = rate(records_to_frame(records), "bt", bootstrap=bootstrap, seed=seed).table
    table = table[["rank", "model", "rating", "lower", "upper", "n"]].round(1)
    rates, count = matrices(records)
    return Leaderboard(note, table, rates, count)
