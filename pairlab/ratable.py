"""Which votes ratings count: one rule for the arena's leaderboard, every command and the API.

A vote is *clean* when it was cast on anonymous models (``anony``), its answers named no
model (``identity_leak``) and vote hygiene set it aside for nothing (``flags``, see
``arena.hygiene``); each is the record's own field, else its ``meta``'s. A prompt-set vote
(``meta.mode == "prompt_set"``) is on fixed answers that a voter who once saw the reveal can
recognise, so the leaderboard leaves every one out, or, where the arena counts them
(``prompt_set_rated``), keeps only a logged-in voter's (``meta.voter`` starting with ``u-``)
first clean vote on each pair: only a login stops one person from voting as many. LLM
judges' verdicts carry none of these marks and always count.

:func:`ratable_mask` applies the rule to a record table (:mod:`analysis.record_table`: the
columns ``anony, identity_leak, flagged, mode, voter, pair_id``, rows in the order stored; a
missing column has the default of a record without that mark).
``arena.store.VoteStore.ratable`` states it in SQL for the database, with these constants;
the tests hold both to a record-by-record statement of the rule.
"""

from __future__ import annotations

from .records import Record

__all__ = ["AUTHENTICATED", "PROMPT_SET_MODE", "leaderboard_votes", "ratable_mask", "record_setting"]

PROMPT_SET_MODE = "prompt_set"
AUTHENTICATED = "u-"  # prefix of a logged-in voter's id


def record_setting(record: Record, name: str, default):
    """A record's own field ``name`` where set, else its ``meta``'s, else ``default``."""
    for source in (record.extra, record.meta):
        if isinstance(source, dict) and source.get(name) is not None:
            return source[name]
    return default


def ratable_mask(table, *, prompt_set_rated: bool = False, include_named: bool = False,
                 include_leaks: bool = False, include_flagged: bool = False, include_prompt_set: bool = False):
    """Per row of ``table``, whether ratings count it (a numpy bool array).

    The ``include_*`` options relax one part of the rule each (votes on named models, identity
    leaks, hygiene flags, prompt-set votes), as ``analysis.ratings`` offers; what stays clean
    decides a prompt-set pair's first vote, as in the store's SQL with ``counted=False``.
    """
    import numpy as np

    def flag(name: str, default: bool) -> np.ndarray:  # a table of battles may lack the arena's columns
        if name not in table:
            return np.full(len(table), default)
        return table[name].fillna(default).to_numpy(dtype=bool)

    clean = np.ones(len(table), dtype=bool)
    if not include_named:
        clean &= flag("anony", True)
    if not include_leaks:
        clean &= ~flag("identity_leak", False)
    if not include_flagged:
        clean &= ~flag("flagged", False)
    if "mode" not in table:
        return clean
    prompt_set = (table["mode"] == PROMPT_SET_MODE).fillna(False).to_numpy(dtype=bool)
    if include_prompt_set or not prompt_set.any():
        return clean
    keep = ~prompt_set
    if prompt_set_rated:
        first = prompt_set & clean & table["voter"].str.startswith(AUTHENTICATED).fillna(False).to_numpy(dtype=bool)
        rows = np.flatnonzero(first)
        repeated = table[["voter", "pair_id"]].iloc[rows].astype(object).duplicated().to_numpy()
        keep[rows[~repeated]] = True
    return clean & keep


def leaderboard_votes(table, *, all_votes: bool = False):
    """``(table, note)``: the rows the leaderboard counts (:func:`ratable_mask`), or every row
    with ``all_votes``; ``note`` says how many were left out, or kept (None where every row
    counts). For analyses that show every rater (the bias report), so that their people's
    numbers are the ratings command's and never silently differ."""
    counted = ratable_mask(table)
    left_out = len(counted) - int(counted.sum())
    kinds = "named models, identity leaks, vote-hygiene flags, prompt-set votes"
    if not left_out:
        return table, None
    if all_votes:
        return table, (f"every vote analysed (--all-votes), {left_out} of them votes the leaderboard does not count "
                       f"({kinds})")
    return (table[counted].reset_index(drop=True),
            f"left out {left_out} of {len(counted)} votes the leaderboard does not count ({kinds}), as analysis.ratings "
            "does; --all-votes (all_votes=True) keeps them")
