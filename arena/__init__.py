"""The arena: crowd votes on anonymous model pairs, stored once each, served by ``app.py``.

Modules: :mod:`.battles` (serving, streaming, voting), :mod:`.store` (the vote store and
its one write path), :mod:`.sampling` (which pair fights next), :mod:`.leak` (answers
that name a model), :mod:`.leaderboard`, :mod:`.ui` (Gradio pages), :mod:`.api` (HTTP),
:mod:`.web` (the server), :mod:`.export` (CLI), :mod:`.config`, :mod:`.errors`,
:mod:`.sessions` (signed session ids), :mod:`.limits` (rate and size limits),
:mod:`.listeners` (which pages read their event streams).
"""

import importlib

# Where each public name lives: imported when first asked for, so that `arena.app --help` and
# the arena's config and CLI parsers load without the arena's web and database packages.
_HOMES = {
    "CHOICES": "battles", "Arena": "battles", "Battle": "battles", "build_record": "battles",
    "ArenaConfig": "config", "load_config": "config",
    "AlreadyVoted": "errors", "NotReady": "errors", "RateLimited": "errors", "Refused": "errors",
    "UnknownBattle": "errors", "Voter": "sessions", "VoteStore": "store",
}

__all__ = [
    "AlreadyVoted",
    "Arena",
    "ArenaConfig",
    "Battle",
    "CHOICES",
    "NotReady",
    "RateLimited",
    "Refused",
    "UnknownBattle",
    "Voter",
    "VoteStore",
    "build_record",
    "load_config",
]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'arena' has no attribute {name!r}")
    return getattr(importlib.import_module(f"arena.{_HOMES[name]}"), name)
