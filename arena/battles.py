"""Battles: what the server serves, streams, and accepts one vote on.

The server holds the truth: which model sits in which pane, the conversation, and the
vote token (the battle id). Front ends (the Gradio UI, the HTTP API) pass an opaque
session string and a choice; they never need a model id before the vote, so they never
receive one.

A battle lives in memory while it streams and is written to the store whenever a turn
completes, so a vote is checked against, and recorded from, exactly what was served.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import random
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from arena.config import ArenaConfig
from arena.errors import AlreadyVoted, ModelFailed, NotReady, Refused, UnknownBattle
from arena.hygiene import Caps
from arena.leak import LeakDetector
from arena.limits import Limits
from arena.sampling import PairSampler
from arena.sessions import SessionSigner, Voter
from arena.slots import Slot, Slots
from arena.store import VoteStore
from pairlab.backends.base import BackendError, GenerationParams, Model, PromptTooLong
from pairlab.models import DEFAULT_CONFIG as MODELS_CONFIG
from pairlab.models import family_of, resolve
from pairlab.records import Pair, Record, make_pair_id, read_pairs
from pairlab.prompts import PromptItem, load_prompts

# Voter's button -> the record's winner value (FastChat's vocabulary).
CHOICES = {"a": "model_a", "b": "model_b", "tie": "tie", "bothbad": "tie (bothbad)"}
MODES = ("battle", "side_by_side", "prompt_set")
# Streaming updates are coalesced to this interval: each one re-sends both panes.
STREAM_INTERVAL_S = 0.05
# Generation runs at a lower CPU priority than request handling: on a small machine two
# models decoding would otherwise take the cores from the event loop, and every page,
# vote and refusal would wait behind them. Linux keeps a nice value per thread, and the
# threads a pane's thread starts (the backend's decoding thread) inherit it.
GENERATION_NICE = 10


def _generation_priority() -> None:
    """Lower this thread's CPU priority to ``GENERATION_NICE`` (lowering needs no privilege)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), GENERATION_NICE)
    except (OSError, AttributeError):  # not Linux: the priority stays as it is
        pass


log = logging.getLogger(__name__)


def _voter(session: str | Voter) -> Voter:
    """Front ends pass a :class:`Voter`; scripts and tests may pass a bare session token."""
    return session if isinstance(session, Voter) else Voter(session)


class Pace:
    """What the voter sees of both panes while they stream (``reveal = "common_pace"``).

    A pane that streams faster names its model (each model has its own pace), so both
    panes grow together: as far as the slower one got while both run, then, once one has
    ended, on at the pace they shared (``rate``, chars per second, never below
    ``MIN_RATE``, and never ahead of a pane still streaming) until both are whole. So the end of a battle shows no backlog landing in
    one frame and no pane crawling at its own model's pace. ``when_done``: nothing until
    both are done, then both whole.
    """

    MIN_RATE = 50.0

    def __init__(self, reveal: str):
        self.reveal = reveal
        self.cap = 0.0
        self.started: float | None = None
        self.rate: float | None = None  # set once a pane has ended
        self.at: float = 0.0

    def shown(self, texts: Mapping[str, str], running: set[str], now: float) -> tuple[str, str]:
        if self.reveal == "when_done":
            return ("", "") if running else (texts["a"], texts["b"])
        if self.started is None:
            self.started = now
        if len(running) == 2:
            self.cap = float(min(len(texts["a"]), len(texts["b"])))
        else:
            if self.rate is None:
                self.rate = max(self.cap / max(now - self.started, 1e-3), self.MIN_RATE)
                self.at = now
            self.cap += self.rate * (now - self.at)
            self.at = now
            if running:  # never ahead of the pane still streaming: both stay level
                self.cap = min(self.cap, float(min(len(texts[side]) for side in running)))
        cap = int(self.cap)
        return texts["a"][:cap], texts["b"][:cap]

    def whole(self, texts: Mapping[str, str]) -> bool:
        return self.reveal == "when_done" or self.cap >= max(len(texts["a"]), len(texts["b"]))


@dataclass
class Turn:
    prompt: str
    seed: int | None = None
    response_a: str = ""
    response_b: str = ""
    latency: dict = field(default_factory=dict)  # seconds: queued, ttft_a/b, total_a/b; started (unix)


@dataclass
class Battle:
    id: str
    session: str  # hashed session token
    mode: str
    models: tuple[str, str]  # (left pane, right pane)
    families: tuple[str, str]
    params: dict | None  # decoding parameters (None: pre-generated answers)
    turns: list[Turn] = field(default_factory=list)
    state: str = "streaming"  # streaming -> ready (votable) | failed
    voted: bool = False
    regenerations: int = 0
    created: float = field(default_factory=time.time)
    ready_at: float | None = None  # when the last turn finished: votable from then on
    pair_id: str | None = None  # prompt-set battles keep their pair's id
    prompt_id: str | None = None
    category: str | None = None
    source: str | None = None  # the PAIRS file a prompt-set battle came from
    inclusion_prob: float | None = None  # a campaign's pair: the probability the planner drew it with
    leaks: dict = field(default_factory=lambda: {"a": [], "b": [], "prompt": []})  # names found, by where
    tab: str = ""  # the page of the session it was served to (sessions.Voter.tab)
    # Per pane: the engine that answered and what its seed guarantees about the text.
    engines: list = field(default_factory=list)

    @property
    def anony(self) -> bool:
        return self.mode != "side_by_side"

    def messages(self, side: str) -> list[dict]:
        """The chat one pane's model sees: every turn so far, the last one unanswered."""
        out = []
        for turn in self.turns:
            out.append({"role": "user", "content": turn.prompt})
            answer = turn.response_a if side == "a" else turn.response_b
            if turn is not self.turns[-1]:
                out.append({"role": "assistant", "content": answer})
        return out

    def to_payload(self) -> dict:
        data = asdict(self)
        data["anony"] = self.anony
        return data

    @classmethod
    def from_payload(cls, data: Mapping) -> Battle:
        data = dict(data)
        data.pop("anony", None)
        data.pop("closed", None)  # the store's, not the battle's
        data["turns"] = [Turn(**t) for t in data["turns"]]
        data["models"] = tuple(data["models"])
        data["families"] = tuple(data["families"])
        return cls(**data)


def campaign_pairs(pairs: list[Pair], picks_path: Path) -> tuple[list[Pair], dict[str, float], str]:
    """The pairs a labelling campaign serves (those the planner picked), their inclusion
    probabilities and the planner's strategy. A pick naming a pair the pairs file lacks raises
    ``ValueError`` naming how many: people could not vote on it, and the design would silently
    differ from the plan."""
    from analysis.plan import read_picks  # the picks' one reader

    picks = read_picks(str(picks_path))
    inclusion = dict(zip(picks["pair_id"], picks["inclusion_prob"]))
    served = [p for p in pairs if p.pair_id in inclusion]
    missing = len(inclusion) - len({p.pair_id for p in served})
    if missing:
        raise ValueError(f"{picks_path}: {missing} picks name pairs that the pairs file does not hold "
                         "(plan from the verdicts on these pairs)")
    return served, inclusion, str(picks["strategy"].iloc[0])


def campaign_verdicts(path: Path, judge: str, inclusion: dict[str, float]):
    """The campaign judge's verdicts (:func:`arena.leaderboard.read_verdicts`); picks it gave no
    verdict on raise ``ValueError`` naming how many: people's votes on them would have no prediction."""
    from arena.leaderboard import read_verdicts

    verdicts = read_verdicts(path, judge)
    unjudged = set(inclusion) - set(verdicts.table["pair_id"].astype(str))
    if unjudged:
        raise ValueError(f"verdicts {path}: {verdicts.judge} gave no verdict on {len(unjudged)} of the "
                         f"{len(inclusion)} picks (plan from this judge's verdicts on these pairs)")
    return verdicts


def build_record(payload: Mapping, winner: str, tstamp: float) -> Record:
    """The record of a vote on a stored battle (``model_a`` = the left pane)."""
    battle = Battle.from_payload(payload)
    last = battle.turns[-1]
    conversation = {"model_a": [], "model_b": []}
    for turn in battle.turns:
        for key, answer in (("model_a", turn.response_a), ("model_b", turn.response_b)):
            conversation[key] += [{"role": "user", "content": turn.prompt},
                                  {"role": "assistant", "content": answer}]
    # One turn: the judges' pair id for the same prompt and answers. Several: the whole
    # user side of the conversation identifies the prompt.
    prompt_key = last.prompt if len(battle.turns) == 1 else json.dumps([t.prompt for t in battle.turns])
    leak = any(battle.leaks.values())
    meta = {
        "battle_id": battle.id,
        "voter": battle.session,
        "mode": battle.mode,
        "anony": battle.anony,
        "identity_leak": leak,
        "served_at": battle.created,
        "ready_at": battle.ready_at,
    }
    if battle.params is not None:  # generated here, not read from a PAIRS file
        meta.update(params=battle.params, seeds=[t.seed for t in battle.turns],
                    latency=[t.latency for t in battle.turns], regenerations=battle.regenerations,
                    engines=battle.engines)
    if leak:
        meta["identity_leak_names"] = battle.leaks
    if battle.source:
        meta["source"] = battle.source
    if battle.inclusion_prob is not None:  # rate with analysis.ratings --ppi JUDGE --picks PICKS.jsonl
        meta["inclusion_prob"] = battle.inclusion_prob
    return Record(
        pair_id=battle.pair_id or make_pair_id(prompt_key, last.response_a, last.response_b),
        prompt=last.prompt,
        model_a=battle.models[0],
        model_b=battle.models[1],
        response_a=last.response_a,
        response_b=last.response_b,
        winner=winner,
        judge=f"human:{battle.session}",
        judge_type="human",
        family_a=battle.families[0],
        family_b=battle.families[1],
        prompt_id=battle.prompt_id,
        category=battle.category,
        turn=len(battle.turns),
        tstamp=tstamp,
        conversation=conversation,
        meta=meta,
    )


def admitted(config: ArenaConfig, models) -> int:
    """Battles let in at once: as many as the engines batch (a battle runs one request on each of
    its two models, so the smallest engine's cap), or the config's cap when it sets one."""
    engines = min((model.concurrency for model in models), default=1)
    return min(engines, config.max_concurrent_generations) if config.max_concurrent_generations else engines


class Arena:
    """Serves battles, streams both panes, and takes votes through the one store."""

    def __init__(self, config: ArenaConfig, store: VoteStore, models: Mapping[str, Model],
                 rng: random.Random | None = None, max_live: int = 10_000):
        self.config = config
        self.store = store
        self.models = dict(models)
        self.rng = rng or random.Random()
        self.model_config = config.model_config or MODELS_CONFIG
        self.sampler = None
        if len(self.models) >= 2:
            self.sampler = PairSampler(list(self.models), config.sampling, config.weights,
                                       outcomes=store.outcome_counts, rng=self.rng)
        self.prompts: list[PromptItem] = load_prompts(config.prompts) if config.prompts else []
        self.pairs: list[Pair] = read_pairs(config.pairs) if config.pairs else []
        self.inclusion: dict[str, float] = {}  # a campaign's picks: pair_id -> inclusion probability
        self.strategy = ""  # the planner's design of the picks (active or uniform)
        if config.picks is not None:
            self.pairs, self.inclusion, self.strategy = campaign_pairs(self.pairs, config.picks)
        self.verdicts = None  # the campaign judge's verdicts: the leaderboard's people + judge ratings
        if config.verdicts is not None:
            self.verdicts = campaign_verdicts(config.verdicts, config.judge, self.inclusion)
        names = set(self.models) | {m for p in self.pairs for m in (p.model_a, p.model_b)}
        self.leaks = LeakDetector([word for n in sorted(names) for word in self._identity(n)])
        self.limits = Limits(config.rate_limit, config.address_rate_limit, config.address_new_sessions,
                             config.global_rate_limit, config.rate_window_s, config.address_requests)
        self.sessions = SessionSigner(store.secret("arena-session"))
        self.max_live = max_live
        self._live: OrderedDict[str, Battle] = OrderedDict()  # battle id -> battle
        # (token, tab, mode) -> the battle id that page shows
        self._current: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._drawn: OrderedDict[tuple[str, str], PromptItem] = OrderedDict()  # (token, tab) -> last drawn
        # (token, tab) -> (forget at, voter id); what was forgotten, to close in the store
        self._unloaded: OrderedDict[tuple[str, str], tuple[float, str]] = OrderedDict()
        self._expired: list[tuple[str, str, tuple[str, ...]]] = []
        self._lock = threading.Lock()
        # Every page (anonymous, named) and the API streams through here: one cap for the machine.
        self.slots = Slots(admitted(config, self.models.values()), config.queue_max_size,
                           config.waiting_per_address, config.waiting_per_session)
        self._closing = threading.Event()
        self._decoding = 0

    def close(self) -> None:
        """Shutdown: generations stop, waiting battles are sent away (each left failed)."""
        self._closing.set()
        self.slots.close()

    def _identity(self, name: str) -> list[str]:
        """Words that would give ``name`` away: its id, family and vendor."""
        try:
            spec = resolve(name, self.model_config)
            words = [spec.id, spec.family, spec.vendor or ""]
        except BackendError:  # a model named only in a PAIRS file
            words = [name, family_of(name, self.model_config)]
        return [w for w in words if w and w != "unknown"]

    # -- session bookkeeping -------------------------------------------------------------
    def new_session(self, address: str | None) -> str:
        """A signed session id for a client that has none (limited per address)."""
        self.limits.check_new_session(address)
        return self.sessions.issue(self.store.hash_id(f"address\x1f{address}"))

    def _check(self, voter: Voter) -> None:
        self.limits.check(voter.token, voter.address)

    def _voter_id(self, voter: Voter) -> str:
        return self.store.voter_id(voter.token, voter.authenticated)

    # The store holds every battle and which one is each page's current one, so any
    # replica can continue, regenerate or vote on a battle another one served. Memory
    # only holds what this process is streaming right now (and a cache of the rest).
    def current(self, session: str | Voter, mode: str) -> Battle | None:
        """The page's battle in ``mode`` (None after a new round), wherever it was served."""
        voter = _voter(session)
        with self._lock:
            self._sweep()
            self._unloaded.pop((voter.token, voter.tab), None)  # the page is back
            battle_id = self._current.get((voter.token, voter.tab, mode))
            cached = self._live.get(battle_id) if battle_id else None
        self._close_expired()
        if cached is not None and cached.state == "streaming":
            return cached  # being answered here; the store has its last completed turn
        if cached is not None:
            payload = self.store.load_battle(cached.id)  # another replica may have moved it on
        else:
            payload = self.store.current_battle(self._voter_id(voter), voter.tab, mode)
        if payload is None or payload.get("closed"):
            return None
        battle = Battle.from_payload(payload)
        if battle == cached:
            return cached
        self._remember(voter, battle)
        return battle

    def _remember(self, voter: Voter, battle: Battle) -> None:
        key = (voter.token, voter.tab, battle.mode)
        with self._lock:
            self._sweep()
            self._live[battle.id] = battle
            self._current[key] = battle.id
            self._current.move_to_end(key)
            while len(self._live) > self.max_live:
                self._live.popitem(last=False)
            while len(self._current) > self.max_live:
                self._current.popitem(last=False)

    def forget(self, session: str | Voter, modes: Sequence[str] = MODES, grace: bool = False) -> None:
        """Close a page's current battles, here and in the store (what was stored stays stored).

        New round forgets one mode's battle, so the next prompt starts a new battle. A
        closed page (``grace``) forgets them all after ``unload_grace_s``, unless the page
        comes back first (to this replica or another): a dropped connection that
        reconnects keeps its battle.
        """
        voter = _voter(session)
        with self._lock:
            if grace:
                deadline = time.monotonic() + self.config.unload_grace_s
                self._unloaded[(voter.token, voter.tab)] = (deadline, self._voter_id(voter))
                self._sweep()
            else:
                self._drop(voter.token, voter.tab, modes)
                self._expired.append((self._voter_id(voter), voter.tab, tuple(modes)))
        self._close_expired()

    def _drop(self, token: str, tab: str, modes: Sequence[str]) -> None:  # holding self._lock
        for mode in modes:
            battle_id = self._current.pop((token, tab, mode), None)
            if battle_id:
                self._live.pop(battle_id, None)
        if len(modes) == len(MODES):
            self._drawn.pop((token, tab), None)

    def _sweep(self) -> None:  # holding self._lock; deadlines are in insertion order
        now = time.monotonic()
        while self._unloaded:
            (token, tab), (deadline, voter_id) = next(iter(self._unloaded.items()))
            if deadline > now:
                break
            del self._unloaded[(token, tab)]
            self._drop(token, tab, MODES)
            self._expired.append((voter_id, tab, MODES))

    def _close_expired(self) -> None:
        """Close in the store what was dropped here, so no replica brings it back (not holding the lock)."""
        with self._lock:
            expired, self._expired = self._expired, []
        for voter_id, tab, modes in expired:
            self.store.close_battles(voter_id, tab, modes)

    def draw_prompt(self, session: str | Voter) -> PromptItem:
        if not self.prompts:
            raise Refused("No curated prompt set is configured.")
        voter = _voter(session)
        key = (voter.token, voter.tab)
        drawn = self.rng.choice(self.prompts)
        with self._lock:
            self._drawn[key] = drawn
            self._drawn.move_to_end(key)
            while len(self._drawn) > self.max_live:
                self._drawn.popitem(last=False)
        return drawn

    # -- live battles -------------------------------------------------------------------
    def _check_prompt(self, prompt: str) -> str:
        prompt = (prompt or "").strip()
        if not prompt:
            raise Refused("Type a prompt first.")
        if len(prompt) > self.config.max_prompt_chars:
            raise Refused(
                f"Your prompt has {len(prompt)} characters; the limit is {self.config.max_prompt_chars}."
            )
        return prompt

    def start(self, session: str | Voter, prompt: str, models: Sequence[str] | None = None) -> Battle:
        """A new battle on ``prompt``: sampled anonymous models, or the ``models`` named.

        The caller then runs :meth:`stream`. Left/right order is random either way.
        """
        voter = _voter(session)
        prompt = self._check_prompt(prompt)
        if models is None:
            if self.sampler is None:
                raise Refused("Battles need at least two models; this server has fewer.")
            mode, pair = "battle", list(self.sampler.sample())
            self.rng.shuffle(pair)
        else:
            unknown = [m for m in models if m not in self.models]
            if len(models) != 2 or unknown or models[0] == models[1]:
                raise Refused("Pick two different models from the list.")
            mode, pair = "side_by_side", list(models)
        self._check(voter)
        # Seeds are per turn (a regenerated turn gets a new one); the rest is per battle.
        params = {k: v for k, v in self.config.params.to_dict().items() if k != "seed"}
        battle = Battle(
            id=secrets.token_urlsafe(18),
            session=self.store.voter_id(voter.token, voter.authenticated),
            tab=voter.tab,
            mode=mode,
            models=(pair[0], pair[1]),
            families=(family_of(pair[0], self.model_config), family_of(pair[1], self.model_config)),
            params=params,
            turns=[Turn(prompt=prompt, seed=self._seed())],
            engines=[self._engine(name) for name in pair],
        )
        with self._lock:
            drawn = self._drawn.get((voter.token, voter.tab))
        if drawn and drawn.prompt == prompt:  # a curated prompt sent as drawn keeps its id
            battle.prompt_id, battle.category = drawn.prompt_id, drawn.category
        self._remember(voter, battle)
        return battle

    def follow_up(self, session: str | Voter, battle: Battle, prompt: str) -> Battle:
        prompt = self._check_prompt(prompt)
        if battle.voted:
            raise Refused("You voted on this battle; start a new round.")
        if battle.state == "streaming":
            raise Refused("Wait until both answers are complete.")
        if len(battle.turns) >= self.config.max_turns:
            raise Refused(
                f"This battle reached its limit of {self.config.max_turns} turns: vote, or start a new round."
            )
        self._check(_voter(session))
        turns = [*battle.turns, Turn(prompt=prompt, seed=self._seed())]
        return self._begin_turn(battle, turns, battle.regenerations)

    def regenerate(self, session: str | Voter, battle: Battle) -> Battle:
        """Answer the last turn again (same models, a fresh seed)."""
        if battle.voted:
            raise Refused("You voted on this battle; start a new round.")
        if battle.state == "streaming":
            raise Refused("Wait until both answers are complete.")
        self._check(_voter(session))
        turns = [*battle.turns[:-1], Turn(prompt=battle.turns[-1].prompt, seed=self._seed())]
        return self._begin_turn(battle, turns, battle.regenerations + 1)

    def _begin_turn(self, battle: Battle, turns: list[Turn], regenerations: int) -> Battle:
        """The store first: from now on no replica takes a vote on the earlier turn (and a
        vote another replica took already stops this turn)."""
        payload = {**battle.to_payload(), "turns": [asdict(t) for t in turns], "state": "streaming",
                   "regenerations": regenerations}
        try:
            self.store.begin_turn(payload)
        except AlreadyVoted:
            battle.voted = True
            raise Refused("This battle was voted on; start a new round.") from None
        battle.turns, battle.regenerations, battle.state = turns, regenerations, "streaming"
        return battle

    def _engine(self, name: str) -> dict:
        info = self.models[name].info()
        return {"engine": info.get("engine", info.get("backend")), "seeding": info.get("seeding")}

    def _seed(self) -> int:
        return self.rng.randrange(2**31)

    def stream(self, battle: Battle, slot: Slot | None = None, stop: threading.Event | None = None,
               paced: bool = True) -> Iterator[tuple[str, str]]:
        """Answer the battle's last turn with both models at once; yield (text A, text B).

        ``slot``: a generation slot the caller already waited for (:meth:`Slots.wait`, which
        holds no thread); without one, this thread waits for it. Each pane's model runs in
        its own thread (torch releases the GIL), so both start decoding immediately; what is
        yielded grows at a pace common to both panes (:class:`Pace`), to the end
        (``paced=False``: only the final answers, for the HTTP API). When both finish, the
        battle is stored and only then votable. A model error, a failed save, ``stop``
        (the client left) or a consumer that stops reading (a dropped connection) leaves
        the battle failed, in memory and in the store.
        """
        turn = battle.turns[-1]
        params = GenerationParams(**{**battle.params, "stop": tuple(battle.params["stop"])}, seed=turn.seed)
        pieces: queue.Queue = queue.Queue()
        cancel = threading.Event()  # set once the generation slot is given back
        abandon = threading.Event()  # one pane failed: the other stops too
        turn.latency = {"started": time.time()}

        def run(side: str, model: Model, messages: list[dict]) -> None:
            _generation_priority()
            decoding = False
            try:
                for piece in model.stream(messages, params):
                    if not decoding:
                        decoding = True
                        self._count_decoding(1)
                    pieces.put((side, piece))
                    if cancel.is_set() or abandon.is_set():
                        break
            except Exception as exc:  # reported to the consumer, which fails the battle
                pieces.put((side, exc))
            finally:
                if decoding:
                    self._count_decoding(-1)
                pieces.put((side, None))

        workers = [
            threading.Thread(target=run, args=(side, self.models[name], battle.messages(side)), daemon=True)
            for side, name in zip("ab", battle.models)
        ]
        texts = {"a": "", "b": ""}
        running, errors, last_yield, last_shown = {"a", "b"}, [], 0.0, ("", "")
        too_long = False
        pace = Pace(self.config.reveal)
        queued = time.perf_counter()
        if slot is None:
            slot = self.slots.acquire(battle.session)
        started = time.perf_counter()  # first-token times count from when the models start
        turn.latency["queued"] = round(started - queued, 4)
        finished = False
        try:
            if self._closing.is_set():
                raise Refused("The server is shutting down; start a new round in a minute.")
            for worker in workers:
                worker.start()
            while running:
                if (stop is not None and stop.is_set()) or self._closing.is_set():
                    raise Refused("The battle was given up (the client left, or the server is shutting down).")
                try:
                    side, piece = pieces.get(timeout=STREAM_INTERVAL_S)
                except queue.Empty:
                    side, piece = "", ""
                now = time.perf_counter() - started
                if piece is None:
                    running.discard(side)
                    turn.latency[f"total_{side}"] = round(now, 4)
                elif isinstance(piece, Exception):
                    errors.append((side, f"{side} ({battle.models['ab'.index(side)]}): {piece!r}"))
                    too_long = too_long or isinstance(piece, PromptTooLong)
                    abandon.set()  # the battle cannot be voted on: stop the other pane too
                elif side:
                    turn.latency.setdefault(f"ttft_{side}", round(now, 4))
                    texts[side] += piece
                if not paced or not running:
                    continue
                visible = pace.shown(texts, running, now)
                if visible != last_shown and now - last_yield >= STREAM_INTERVAL_S:
                    last_yield, last_shown = now, visible
                    yield visible
            cancel.set()
            self.slots.release(slot)
            turn.response_a, turn.response_b = texts["a"].strip(), texts["b"].strip()
            if errors:
                log.error("battle %s failed: %s", battle.id, "; ".join(text for _, text in errors))
                # The voter's message names the pane, never the model (its error text may name it).
                panes = " and ".join(f"Model {side.upper()}" for side in sorted(side for side, _ in errors))
                why = ("cannot take a conversation this long" if too_long
                       else "stopped answering (its server failed or is unreachable)")
                raise ModelFailed(f"{panes} {why}, so this battle cannot be voted on. Start a new round.",
                                  battle.id)
            self._finish(battle)
            finished = True
        finally:
            if not cancel.is_set():  # the consumer left mid-stream (GeneratorExit) or a worker never started
                cancel.set()
                self.slots.release(slot)
            if not finished:
                self._fail(battle)
        # Both are done and stored; the panes reach their ends at the pace they shared
        # (no slot is held meanwhile).
        final = {"a": turn.response_a, "b": turn.response_b}
        while paced and not pace.whole(final) and not self._closing.is_set():
            time.sleep(STREAM_INTERVAL_S)
            visible = pace.shown(final, set(), time.perf_counter() - started)
            if visible != last_shown:
                last_shown = visible
                yield visible
        yield turn.response_a, turn.response_b

    def _count_decoding(self, change: int) -> None:
        with self._lock:
            self._decoding += change

    def decoding(self) -> int:
        """Model answers under way: their first piece is out, their last not yet. Not for the
        status route: when each of a battle's two answers starts and ends would tell a voter
        how fast each model is, which the panes' common pace hides."""
        with self._lock:
            return self._decoding

    def _fail(self, battle: Battle) -> None:
        """Mark the battle failed, and store that, so no vote lands on an earlier turn."""
        battle.state = "failed"
        try:
            self.store.save_battle(battle.to_payload())
        except Exception:  # memory says failed, and Arena.vote reads memory first
            log.exception("could not store battle %s as failed", battle.id)

    def answer(self, battle: Battle, slot: Slot | None = None, stop: threading.Event | None = None) -> Battle:
        """Run :meth:`stream` to the end: both answers of the last turn, for the HTTP API."""
        for _ in self.stream(battle, slot, stop, paced=False):
            pass
        return battle

    def find(self, session: str | Voter, battle_id: str) -> Battle:
        """``session``'s battle ``battle_id``, wherever it was served (see :meth:`current`)."""
        voter = _voter(session)
        with self._lock:
            battle = self._live.get(battle_id)
        if battle is None or battle.state != "streaming":
            payload = self.store.load_battle(battle_id)
            battle = Battle.from_payload(payload) if payload else None
        # A battle of another session reads as unknown: do not confirm that it exists.
        if battle is None or battle.session != self._voter_id(voter):
            raise UnknownBattle("This battle was not served to you; start a new round.")
        self._remember(voter, battle)
        return battle


    def warm_up(self) -> None:
        """Stream two tokens from every model, both at once, as battles do.

        A model's first generation pays one-off costs (kernel selection, tokenizer
        caches) worth seconds here; the first voter should not.
        """
        params = GenerationParams(max_new_tokens=2)

        def warm(model: Model) -> None:
            _generation_priority()
            list(model.stream([{"role": "user", "content": "Hi"}], params))

        workers = [threading.Thread(target=warm, args=(m,)) for m in self.models.values()]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    def _finish(self, battle: Battle) -> None:
        """Store the completed battle, then make it votable: a vote binds to what was stored."""
        answers = [(t.response_a, t.response_b) for t in battle.turns]
        # Union with the earlier flags: a regenerated turn replaces an answer, not what
        # the voter already read in it.
        leaks = {
            "a": {n for a, _ in answers for n in self.leaks.find(a)} | set(battle.leaks["a"]),
            "b": {n for _, b in answers for n in self.leaks.find(b)} | set(battle.leaks["b"]),
            # A prompt that names a model ("Are you SmolLM?") asks the answers to say who wrote them.
            "prompt": {n for t in battle.turns for n in self.leaks.find(t.prompt)} | set(battle.leaks.get("prompt", ())),
        }
        payload = battle.to_payload()
        payload.update(state="ready", ready_at=time.time(), leaks={k: sorted(v) for k, v in leaks.items()})
        try:
            # Never over a vote: the turn's answers must not land on a voted battle.
            self.store.save_battle(payload, unvoted=True)
        except Exception:
            log.exception("could not store battle %s", battle.id)
            raise Refused("Your answers could not be saved; start a new round.") from None
        battle.leaks, battle.ready_at, battle.state = payload["leaks"], payload["ready_at"], "ready"

    # -- prompt-set battles ---------------------------------------------------------------
    def serve_pair(self, session: str | Voter) -> Battle:
        """A pre-generated pair from the prompt set, in random left/right order, votable at once."""
        if not self.pairs:
            raise Refused("No prompt set with pre-generated answers is configured.")
        voter = _voter(session)
        self._check(voter)
        pair = self.rng.choice(self.pairs)
        sides = [(pair.model_a, pair.family_a, pair.response_a), (pair.model_b, pair.family_b, pair.response_b)]
        self.rng.shuffle(sides)
        (left, fam_l, resp_l), (right, fam_r, resp_r) = sides
        battle = Battle(
            id=secrets.token_urlsafe(18),
            session=self.store.voter_id(voter.token, voter.authenticated),
            tab=voter.tab,
            mode="prompt_set",
            models=(left, right),
            families=(fam_l or family_of(left, self.model_config), fam_r or family_of(right, self.model_config)),
            params=None,
            turns=[Turn(prompt=pair.prompt, response_a=resp_l, response_b=resp_r)],
            pair_id=pair.pair_id,
            prompt_id=pair.prompt_id,
            category=pair.category,
            source=Path(self.config.pairs).name,
            inclusion_prob=self.inclusion.get(pair.pair_id),
        )
        self._finish(battle)
        self._remember(voter, battle)
        return battle

    # -- votes ----------------------------------------------------------------------------
    def vote(self, session: str | Voter, battle_id: str, choice: str) -> Record:
        """Store ``session``'s vote on ``battle_id``, once. Raises :class:`Refused`."""
        if choice not in CHOICES:
            raise Refused(f"Unknown choice {choice!r}; use one of {', '.join(CHOICES)}.")
        voter = _voter(session)
        self._check(voter)
        with self._lock:
            battle = self._live.get(battle_id)
        # Another session's battle is left to the store, which answers "not served to you"
        # whatever its state: its state is not this voter's business.
        if battle is not None and battle.session != self.store.voter_id(voter.token, voter.authenticated):
            battle = None
        # The store holds the last completed turn; a turn still streaming is not votable.
        if battle is not None and battle.state == "streaming":
            raise NotReady("Wait until both answers are complete, then vote.")
        if battle is not None and battle.state == "failed":
            raise NotReady("This battle failed before both answers were complete; start a new round.")
        winner = CHOICES[choice]
        caps = Caps(self.config.daily_vote_cap, self.config.max_votes_per_prompt,
                    self.config.daily_address_vote_cap, self.config.burst_voters, self.config.burst_window_s)
        record = self.store.cast_vote(battle_id, voter.token, lambda payload, t: build_record(payload, winner, t),
                                      authenticated=voter.authenticated, caps=caps, address=voter.address)
        if battle is not None:
            battle.voted = True
        return record
