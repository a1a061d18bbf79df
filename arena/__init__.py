"""The arena: crowd votes on anonymous model pairs, stored once each, served by ``app.py``.

Modules: :mod:`.battles` (serving, streaming, voting), :mod:`.store` (the vote store and
its one write path), :mod:`.sampling` (which pair fights next), :mod:`.leak` (answers
that name a model), :mod:`.leaderboard`, :mod:`.ui` (Gradio pages), :mod:`.api` (HTTP),
:mod:`.web` (the server), :mod:`.export` (CLI), :mod:`.config`, :mod:`.errors`,
:mod:`.sessions` (signed session ids), :mod:`.limits` (rate and size limits),
:mod:`.listeners` (which pages read their event streams).
"""

from arena.battles import CHOICES, Arena, Battle, build_record
from arena.config import ArenaConfig, load_config
from arena.errors import AlreadyVoted, NotReady, RateLimited, Refused, UnknownBattle
from arena.sessions import Voter
from arena.store import VoteStore

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
