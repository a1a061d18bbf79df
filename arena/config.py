"""The arena's settings: which models fight, how pairs are drawn, limits, where votes go.

Read from a TOML file (the shipped ``data/arena.toml`` by default). Relative paths in the file
are resolved against the file's own folder, so a config and its prompt set travel together.
Votes go to ``arena.db`` in the working directory unless the config or ``--db`` says
otherwise: never beside the shipped config, which may lie in an installed package.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from pairlab.backends.base import GenerationParams
from pairlab.files import read_text
from pairlab.models import ENGINES
from pairlab.resources import data_dir, data_file

DEFAULT_CONFIG = data_file("arena.toml")
DEFAULT_DB = "arena.db"  # in the working directory
SAMPLERS = ("uniform", "weighted", "active")
REVEALS = ("common_pace", "when_done")


@dataclass(frozen=True)
class ArenaConfig:
    models: tuple[str, ...] = ()
    model_config: Path | None = None  # models.toml; None: pairlab's default
    db: str = field(default_factory=lambda: db_url(DEFAULT_DB))
    sampling: str = "uniform"
    weights: dict[str, float] = field(default_factory=dict)
    max_turns: int = 3
    max_prompt_chars: int = 2000
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_new_tokens=192))
    prompts: Path | None = None  # curated prompts for "draw a prompt"
    pairs: Path | None = None  # PAIRS.jsonl with pre-generated answers (prompt-set mode)
    # A labelling campaign: the planner's PICKS.jsonl (python -m analysis.plan); prompt-set
    # mode then serves only those pairs and records each vote's inclusion probability.
    picks: Path | None = None
    # The campaign's judge: its verdicts on the pairs (python -m judges.run --pairs PAIRS.jsonl);
    # the leaderboard then shows people + judge ratings (PPI) beside people's alone.
    verdicts: Path | None = None
    judge: str = ""  # the judge of ``verdicts`` to use; empty: the file's only judge
    rate_limit: int = 30  # actions (send, regenerate, vote) per session ...
    rate_window_s: float = 60.0  # ... in this many seconds (every limit below uses this window)
    address_rate_limit: int = 120  # actions per client address, all its sessions together
    address_new_sessions: int = 20  # sessions issued per client address
    global_rate_limit: int = 6000  # actions of all clients together
    # HTTP requests per client address, on any route (a page load makes ~30): a fraction of what
    # one process answers (README, "Spreading the load")
    address_requests: int = 300
    trusted_proxies: tuple[str, ...] = ()  # proxies whose X-Forwarded-For names the client
    queue_max_size: int = 16  # Gradio events waiting per page; more are turned away
    max_body_bytes: int = 1_000_000  # request bodies and uploads
    # Count logged-in voters' prompt-set votes (one per voter and pair): for closed panels
    # with private pairs only (a public pairs file names the model behind every answer).
    prompt_set_rated: bool = False
    voter_header: str = ""  # header naming the logged-in user, set by a trusted (authenticating) proxy
    reveal: str = "common_pace"  # common_pace: both panes grow together; when_done: nothing until both end
    unload_grace_s: float = 60.0  # a closed page's battle is kept this long (a reconnect finds it)
    # Battles streaming at once. 0: as many as the models' engines batch (the smallest
    # engine's in-flight cap); a per-request engine batches one.
    max_concurrent_generations: int = 0
    # How a local (transformers) model serves its streams: "continuous", one engine per model
    # batching every visitor's request (transformers' continuous batching), or "generate", a
    # generate() loop per stream. max_inflight: the requests one engine batches at once.
    engine: str = "continuous"
    max_inflight: int = 8
    # Battles waiting for a generation slot (arena.slots; no thread is held meanwhile):
    # queue_max_size in all, and at most these per client address and per session.
    waiting_per_address: int = 2
    waiting_per_session: int = 1
    bootstrap: int = 200  # leaderboard CIs
    daily_vote_cap: int = 200  # counted votes per voter per UTC day (0: no cap); more are stored, flagged
    daily_address_vote_cap: int = 100  # counted votes per client address (and session lineage) per UTC day
    burst_voters: int = 5  # a vote after this many other voters of its address in burst_window_s is set aside
    burst_window_s: float = 600.0
    max_votes_per_prompt: int = 50  # counted votes on one typed prompt (0: no cap); FastChat's de-duplication
    anomaly_alpha: float = 0.001  # level of the anomalous-voter test (arena.hygiene)
    synchronous: str = "FULL"  # SQLite: FULL survives power loss, NORMAL only a crash

    def __post_init__(self) -> None:
        if self.sampling not in SAMPLERS:
            raise ValueError(f"sampling must be one of {', '.join(SAMPLERS)}, got {self.sampling!r}")
        positive = ("max_turns", "max_prompt_chars", "rate_limit", "address_rate_limit", "address_new_sessions",
                    "address_requests", "global_rate_limit", "queue_max_size", "max_body_bytes", "waiting_per_address",
                    "waiting_per_session")
        if any(getattr(self, name) < 1 for name in positive):
            raise ValueError(f"{', '.join(positive)} must be positive")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.max_inflight < 1 or self.max_concurrent_generations < 0:
            raise ValueError("max_inflight must be positive and max_concurrent_generations at least 0")
        if self.reveal not in REVEALS:
            raise ValueError(f"reveal must be one of {', '.join(REVEALS)}, got {self.reveal!r}")
        if self.picks is not None and self.pairs is None:
            raise ValueError(f"picks = {self.picks} needs pairs: the campaign serves the picked pairs of a pairs file")
        if self.verdicts is not None and self.picks is None:
            raise ValueError(f"verdicts = {self.verdicts} needs picks: the judge's verdicts rate a labelling "
                             "campaign's votes")
        if self.prompt_set_rated and self.pairs is not None and data_dir().resolve() in Path(self.pairs).resolve().parents:
            raise ValueError(
                f"prompt_set_rated = true is for closed panels with private pairs, but {self.pairs} ships with "
                "pairlab, where anyone can read which model wrote each answer: rate a pairs file that "
                "is not public, or set prompt_set_rated = false")
        if self.synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, got {self.synchronous!r}")


def db_url(value: str, base: Path | None = None) -> str:
    """A SQLAlchemy URL as is; a bare path becomes a SQLite URL (relative to ``base``, by
    default the working directory)."""
    if "://" in value:
        return value
    return f"sqlite:///{((base or Path.cwd()) / value).resolve()}"


def load_config(path: str | os.PathLike | None = None, **overrides) -> ArenaConfig:
    path = Path(path) if path else DEFAULT_CONFIG
    raw = tomllib.loads(read_text(path)).get("arena", {})  # the one reader rule: a FIFO or device refused
    base = path.resolve().parent

    def local(name: str) -> Path | None:
        return (base / raw[name]).resolve() if raw.get(name) else None

    generation = raw.get("generation", {})
    limit = raw.get("rate_limit", {})
    config = ArenaConfig(
        models=tuple(raw.get("models", ())),
        model_config=local("model_config"),
        db=db_url(raw["db"], base) if raw.get("db") else db_url(DEFAULT_DB),
        sampling=raw.get("sampling", "uniform"),
        weights={k: float(v) for k, v in raw.get("weights", {}).items()},
        max_turns=int(raw.get("max_turns", 3)),
        max_prompt_chars=int(raw.get("max_prompt_chars", 2000)),
        params=GenerationParams(
            max_new_tokens=int(generation.get("max_new_tokens", 192)),
            temperature=float(generation.get("temperature", 0.0)),
            top_p=float(generation.get("top_p", 1.0)),
        ),
        prompts=local("prompts"),
        pairs=local("pairs"),
        picks=local("picks"),
        verdicts=local("verdicts"),
        judge=str(raw.get("judge", "")),
        rate_limit=int(limit.get("actions", 30)),
        rate_window_s=float(limit.get("per_seconds", 60.0)),
        address_rate_limit=int(limit.get("per_address", ArenaConfig.address_rate_limit)),
        address_new_sessions=int(limit.get("new_sessions_per_address", ArenaConfig.address_new_sessions)),
        global_rate_limit=int(limit.get("global", ArenaConfig.global_rate_limit)),
        address_requests=int(limit.get("requests_per_address", ArenaConfig.address_requests)),
        trusted_proxies=tuple(limit.get("trusted_proxies", ())),
        queue_max_size=int(raw.get("queue_max_size", ArenaConfig.queue_max_size)),
        max_body_bytes=int(raw.get("max_body_bytes", ArenaConfig.max_body_bytes)),
        prompt_set_rated=bool(raw.get("prompt_set_rated", False)),
        voter_header=raw.get("voter_header", ""),
        reveal=raw.get("reveal", ArenaConfig.reveal),
        unload_grace_s=float(raw.get("unload_grace_s", ArenaConfig.unload_grace_s)),
        max_concurrent_generations=int(raw.get("max_concurrent_generations", 0)),
        engine=raw.get("engine", ArenaConfig.engine),
        max_inflight=int(raw.get("max_inflight", ArenaConfig.max_inflight)),
        waiting_per_address=int(raw.get("waiting_per_address", ArenaConfig.waiting_per_address)),
        waiting_per_session=int(raw.get("waiting_per_session", ArenaConfig.waiting_per_session)),
        bootstrap=int(raw.get("bootstrap", 200)),
        daily_vote_cap=int(raw.get("daily_vote_cap", 200)),
        max_votes_per_prompt=int(raw.get("max_votes_per_prompt", 50)),
        daily_address_vote_cap=int(raw.get("daily_address_vote_cap", ArenaConfig.daily_address_vote_cap)),
        burst_voters=int(raw.get("burst_voters", ArenaConfig.burst_voters)),
        burst_window_s=float(raw.get("burst_window_s", ArenaConfig.burst_window_s)),
        anomaly_alpha=float(raw.get("anomaly_alpha", 0.001)),
        synchronous=raw.get("synchronous", "FULL"),
    )
    return replace(config, **overrides) if overrides else config
