"""The vote rule stated record by record: the slow twin of :func:`pairlab.ratable.ratable_mask`.

This was the rule's only statement before it became one vectorised function over the record
table; the tests hold the function and the arena store's SQL to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pairlab.ratable import AUTHENTICATED, PROMPT_SET_MODE, record_setting
from pairlab.records import Record


def is_clean(record: Record) -> bool:
    """Anonymous, no identity leak, no vote-hygiene flag."""
    return (bool(record_setting(record, "anony", True)) and not record_setting(record, "identity_leak", False)
            and not record_setting(record, "flags", None))


def prompt_set_left_out(records: Iterable[Record], *, prompt_set_rated: bool = False) -> list[bool]:
    """Per record (in the order stored), whether it is a prompt-set vote the leaderboard leaves out."""
    counted: set[tuple[str, str]] = set()
    out = []
    for record in records:
        if record_setting(record, "mode", None) != PROMPT_SET_MODE:
            out.append(False)
            continue
        voter = str(record_setting(record, "voter", ""))
        key = (voter, record.pair_id)
        first = prompt_set_rated and is_clean(record) and voter.startswith(AUTHENTICATED) and key not in counted
        if first:
            counted.add(key)
        out.append(not first)
    return out


def ratable(records: Iterable[Record], *, prompt_set_rated: bool = False) -> list[bool]:
    """Per record, whether the leaderboard rates it: clean and not a left-out prompt-set vote."""
    records = list(records)
    left_out = prompt_set_left_out(records, prompt_set_rated=prompt_set_rated)
    return [is_clean(r) and not gone for r, gone in zip(records, left_out)]
