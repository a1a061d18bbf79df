"""Vote hygiene: which stored votes the leaderboard and the export set aside, and why.

Anchored on FastChat's ``clean_battle_data.py`` / monitor and Chiang et al. 2024 (Chatbot
Arena, sec. 5, "Detecting anomalous users"). Nothing is deleted: a vote keeps its flags
(``votes.flags``; ``meta.flags`` in exported records) and only votes without flags are
counted. Five flags:

* ``daily_cap``: the voter already had ``daily_vote_cap`` counted votes that UTC day;
* ``duplicate_prompt``: ``max_votes_per_prompt`` counted votes already exist on the same
  prompt (whitespace and case folded), FastChat's de-duplication of repeated prompts;
* ``anomalous_voter``: the voter's votes disagree with the current ratings more than
  chance allows: a sequential Fisher test (:func:`anomalous_voters`);
* ``address_cap``: the client address, or the session's lineage (the address its session
  was issued to), already had ``daily_address_vote_cap`` counted votes that UTC day: a
  fresh cookie is a fresh voter, an address is not;
* ``address_burst``: ``burst_voters`` other voters already voted from the same address in
  the last ``burst_window_s`` (a script minting sessions; a household rarely votes so).

Logged-in voters (a trusted proxy names them) are known people: the address rules skip
them. All but the anomaly flag are decided when the vote is stored; that one is
recomputed from all counted votes whenever the leaderboard is (see
``VoteStore.refresh_anomalies``).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import chdtri  # chi2's upper quantile; scipy.stats' import alone takes most of a second

DAILY_CAP, DUPLICATE, ANOMALOUS = "daily_cap", "duplicate_prompt", "anomalous_voter"
ADDRESS_CAP, BURST = "address_cap", "address_burst"
FLAGS = (DAILY_CAP, DUPLICATE, ANOMALOUS, ADDRESS_CAP, BURST)


@dataclass(frozen=True)
class Caps:
    """Limits applied when a vote is stored (0 = no limit)."""

    daily_votes: int = 0
    per_prompt: int = 0
    daily_per_address: int = 0  # counted votes per client address, and per session lineage, per UTC day
    burst_voters: int = 0  # other voters of the same address within burst_window_s
    burst_window_s: float = 600.0


def prompt_key(conversation_prompts: Sequence[str]) -> str:
    """A short key identifying a prompt (all user turns), whitespace and case folded."""
    text = "\x1e".join(" ".join(p.split()).casefold() for p in conversation_prompts)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def day_start(tstamp: float) -> float:
    """The UTC midnight at or before ``tstamp`` (the daily cap's day)."""
    return math.floor(tstamp / 86400) * 86400.0


def vote_pvalues(strength: dict[str, float], model_a: Sequence[str], model_b: Sequence[str],
                 winner: Sequence[str], seed: int = 0) -> np.ndarray:
    """Randomised one-sided p-value of each vote against the ratings (log-strengths ``strength``).

    With ``q`` the Bradley-Terry probability of the side the voter chose, the ordering
    "a vote for the less likely side is more extreme" gives P(more extreme) = 0 or
    ``1 - q`` below and ``q`` at the observed outcome; the randomised p-value
    ``P(more extreme) + U q`` (U uniform, seeded) is exactly uniform under the ratings,
    so Fisher's combination keeps its level on discrete votes. Ties and models without
    a rating carry no evidence: their p is uniform too.
    """
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=len(winner))
    out = u.copy()
    for k, (a, b, w) in enumerate(zip(model_a, model_b, winner)):
        if w not in ("model_a", "model_b") or a not in strength or b not in strength:
            continue
        p_a = 1.0 / (1.0 + math.exp(strength[b] - strength[a]))
        chosen = p_a if w == "model_a" else 1.0 - p_a
        more_extreme = 0.0 if chosen <= 0.5 else 1.0 - chosen  # the other side, when it is the rarer one
        out[k] = more_extreme + u[k] * chosen
    return out


def checkpoints(n: int, first: int = 5) -> list[int]:
    """Vote counts at which a voter is tested: 5, 10, 20, 40, ... (up to ``n``)."""
    out, j = [], first
    while j <= n:
        out.append(j)
        j *= 2
    return out


def sequential_fisher(pvalues: Sequence[float], alpha: float, max_votes: int = 100_000) -> bool:
    """Whether Fisher's combination ``-2 Σ log p_i ~ χ²(2j)`` rejects at any checkpoint ``j``.

    Chiang et al. 2024 (sec. 5) test each user's votes sequentially with Fisher's
    combination; testing at several checkpoints is corrected by Bonferroni over all the
    checkpoints a voter could reach (``max_votes``), so the test's level stays ``alpha``.
    """
    level = alpha / len(checkpoints(max_votes))
    stat = -2.0 * np.cumsum(np.log(np.clip(np.asarray(pvalues, dtype=float), 1e-300, 1.0)))
    return any(stat[j - 1] > chdtri(2 * j, level) for j in checkpoints(len(stat)))


def anomalous_voters(voters: Sequence[str], model_a: Sequence[str], model_b: Sequence[str],
                     winner: Sequence[str], alpha: float = 0.001) -> set[str]:
    """Voters whose votes (in the order given) reject the current ratings at level ``alpha``.

    The ratings are a Bradley-Terry fit to all the votes given (ties as half wins, a
    small ridge so one-sided data still give finite strengths).
    """
    from analysis.ratings import aggregate, fit_counts

    if len(set(model_a) | set(model_b)) < 2:
        return set()
    fit = fit_counts(aggregate(list(model_a), list(model_b), list(winner)), l2=0.01)
    strength = fit.scores.to_dict()
    p = vote_pvalues(strength, model_a, model_b, winner)
    by_voter: dict[str, list[float]] = defaultdict(list)
    for voter, value in zip(voters, p):
        by_voter[voter].append(value)
    return {v for v, values in by_voter.items() if sequential_fisher(values, alpha)}
