"""Which arena votes ratings count: one rule for the arena's leaderboard and for analysis.

A vote is *clean* when it was cast on anonymous models (``meta.anony``), its answers named
no model (``meta.identity_leak``) and vote hygiene set it aside for nothing
(``meta.flags``, see ``arena.hygiene``). A prompt-set vote (``meta.mode ==
"prompt_set"``) is on fixed answers that a voter who once saw the reveal can recognise,
so the leaderboard leaves every one out, or, where the arena counts them
(``prompt_set_rated``), keeps only a logged-in voter's (``meta.voter`` starting with
``u-``) first clean vote on each pair: only a login stops one person from voting as many.

``arena.store.VoteStore.ratable`` states the same rule in SQL for the database, with these
constants; ``analysis.frames.load_frame`` applies :func:`prompt_set_left_out` to exported
records, so the analysis CLIs leave out the votes the leaderboard leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable

from .records import Record

__all__ = ["AUTHENTICATED", "PROMPT_SET_MODE", "is_clean", "prompt_set_left_out", "ratable", "record_setting"]

PROMPT_SET_MODE = "prompt_set"
AUTHENTICATED = "u-"  # prefix of a logged-in voter's id


def record_setting(record: Record, name: str, default):
    """A record's own field ``name`` where set, else its ``meta``'s, else ``default``."""
    for source in (record.extra, record.meta):
        if isinstance(source, dict) and source.get(name) is not None:
            return source[name]
    return default


def is_clean(record: Record) -> bool:
    """Anonymous, no identity leak, no vote-hygiene flag."""
    return (bool(record_setting(record, "anony", True)) and not record_setting(record, "identity_leak", False)
            and not record_setting(record, "flags", None))


def prompt_set_left_out(records: Iterable[Record], *, prompt_set_rated: bool = False) -> list[bool]:
    """Per record (in the order stored), whether it is a prompt-set vote the leaderboard
    leaves out (see the module docstring); every other record is False."""
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
