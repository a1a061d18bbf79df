"""The vote store: battles served and votes cast, in one SQL database.

SQLite by default (one file, WAL journal) or any SQLAlchemy URL, e.g. PostgreSQL when
several app replicas share one store. Every write goes through one writer thread
(:class:`_Writer`): it serialises writes so SQLite never sees two writers from this
process, and commits whatever queued up together in one transaction (group commit), so
50 voters waiting on one fsync each do not queue behind 50 fsyncs. A caller returns only
after its transaction committed: an acknowledged vote is on disk.

Each vote is stored once: ``votes.battle_id`` is unique, and the writer checks it before
inserting so a second vote is refused with a message rather than an integrity error.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    and_,
    create_engine,
    event,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from arena.errors import AlreadyVoted, NotReady, Refused, UnknownBattle
from core.records import Record

log = logging.getLogger(__name__)
metadata = MetaData()
AUTHENTICATED = "u-"  # prefix of a logged-in voter's id

settings = Table(
    "arena_settings", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
)

battles = Table(
    "battles", metadata,
    Column("id", String(64), primary_key=True),
    Column("session", String(32), nullable=False, index=True),  # hashed, never the token
    Column("mode", String(16), nullable=False),
    Column("anony", Boolean, nullable=False),
    Column("model_a", String(256), nullable=False),  # left pane
    Column("model_b", String(256), nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
    Column("payload", JSON, nullable=False),
)

votes = Table(
    "votes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("battle_id", String(64), ForeignKey("battles.id"), nullable=False, unique=True),
    Column("voter", String(32), nullable=False, index=True),
    Column("judge", String(64), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("anony", Boolean, nullable=False),
    Column("identity_leak", Boolean, nullable=False),
    Column("winner", String(16), nullable=False),
    Column("model_a", String(256), nullable=False),
    Column("model_b", String(256), nullable=False),
    Column("pair_id", String(64), nullable=False),
    Column("tstamp", Float, nullable=False),
    Column("record", JSON, nullable=False),
)


def _sqlite_engine(url: str, synchronous: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        # pysqlite's own transaction handling skips BEGIN before SELECT, which would let
        # the writer's check-then-insert read outside its transaction; take it over.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        # Checkpoints (copying the WAL into the database file, with an fsync) would run
        # inside whichever commit crosses the threshold and stall every vote queued behind
        # it; the store's checkpointer thread runs them instead (see VoteStore).
        cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        # The writer's transactions take the write lock up front (IMMEDIATE), waiting up
        # to busy_timeout for it. A plain BEGIN reads first and asks for the lock later;
        # when another process committed meanwhile, SQLite fails the write at once (the
        # read is stale) and no busy_timeout helps. Readers keep a plain BEGIN.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("writer") else "BEGIN")

    return engine


class _Writer(threading.Thread):
    """The one write path: jobs ``fn(conn) -> result`` run here, batched per commit."""

    def __init__(self, engine: Engine, max_batch: int = 128):
        super().__init__(name="arena-store-writer", daemon=True)
        self.engine = engine
        self.max_batch = max_batch
        self.jobs: queue.Queue = queue.Queue()

    def submit(self, fn: Callable[[Connection], Any]) -> Any:
        if not self.is_alive():
            raise RuntimeError("the vote store is closed")
        future: Future = Future()
        self.jobs.put((fn, future))
        return future.result()

    def run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < self.max_batch:
                try:
                    job = self.jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    self._commit(batch)
                    return
                batch.append(job)
            self._commit(batch)

    def _commit(self, batch: list) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            with self.engine.begin() as conn:
                for fn, _ in batch:
                    try:
                        outcomes.append((True, fn(conn)))
                    except Refused as exc:  # refused before writing anything
                        outcomes.append((False, exc))
        except Exception:
            if len(batch) == 1:
                self._commit_alone(*batch[0])
                return
            # One job broke the shared transaction: give each its own, so only it fails.
            for fn, future in batch:
                self._commit_alone(fn, future)
            return
        for (fn, future), (ok, value) in zip(batch, outcomes):
            future.set_result(value) if ok else future.set_exception(value)

    def _commit_alone(self, fn, future: Future) -> None:
        try:
            with self.engine.begin() as conn:
                result = fn(conn)
        except Exception as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)

    def close(self) -> None:
        self.jobs.put(None)
        self.join()


class VoteStore:
    """Battles and votes. ``url``: any SQLAlchemy URL; SQLite files get WAL mode."""

    def __init__(self, url: str, synchronous: str = "FULL", prompt_set_rated: bool = False):
        self.url = url
        self.prompt_set_rated = prompt_set_rated
        if url.startswith("sqlite"):
            self.engine = _sqlite_engine(url, synchronous)
        else:
            self.engine = create_engine(url, pool_pre_ping=True)
        metadata.create_all(self.engine)
        self._writer = _Writer(self.engine.execution_options(writer=True))
        self._writer.start()
        self._salt = self._writer.submit(_ensure_salt)
        self._closing = threading.Event()
        self._checkpointer = None
        if url.startswith("sqlite"):
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="arena-store-checkpoint",
                                                  daemon=True)
            self._checkpointer.start()

    def _checkpoint_loop(self, every_s: float = 1.0) -> None:
        # PASSIVE never waits for (or blocks) readers and the writer; it copies what it can.
        while not self._closing.wait(every_s):
            try:
                with self.engine.connect() as conn:
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
            except Exception:  # a busy moment; the next round catches up
                log.warning("WAL checkpoint failed; retrying", exc_info=True)

    def close(self) -> None:
        self._writer.close()
        self._closing.set()
        if self._checkpointer is not None:
            self._checkpointer.join()
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        self.engine.dispose()

    def secret(self, purpose: str) -> bytes:
        """A key for ``purpose`` (e.g. signing sessions), derived from the store's salt:
        the same on every replica of this store and after a restart."""
        return hashlib.sha256(f"{self._salt}\x1f{purpose}".encode()).digest()

    def hash_id(self, raw: str) -> str:
        """A stable pseudonym for a session or voter token; the token itself is never stored."""
        return hashlib.sha256(f"{self._salt}\x1f{raw}".encode()).hexdigest()[:16]

    def voter_id(self, token: str, authenticated: bool = False) -> str:
        """The stored voter: the token's pseudonym, marked ``u-`` for a logged-in voter."""
        return (AUTHENTICATED if authenticated else "") + self.hash_id(token)

    # -- writes (all through the writer) ------------------------------------------------
    def save_battle(self, payload: dict) -> None:
        """Insert or update a served battle (``payload`` from ``Battle.to_payload``)."""
        now = time.time()
        row = {
            "session": payload["session"], "mode": payload["mode"], "anony": payload["anony"],
            "model_a": payload["models"][0], "model_b": payload["models"][1],
            "updated": now, "payload": payload,
        }

        def write(conn: Connection) -> None:
            exists = conn.execute(select(battles.c.id).where(battles.c.id == payload["id"])).first()
            if exists:
                conn.execute(update(battles).where(battles.c.id == payload["id"]).values(**row))
            else:
                conn.execute(insert(battles).values(id=payload["id"], created=now, **row))

        self._writer.submit(write)

    def cast_vote(self, battle_id: str, session: str, make_record: Callable[[dict, float], Record],
                  authenticated: bool = False) -> Record:
        """Store the vote on ``battle_id`` cast by ``session`` (raw token), once.

        ``make_record(payload, tstamp)`` builds the record from the stored battle, so the
        vote is bound to exactly what the server served. Raises :class:`Refused`.
        """
        hashed = self.voter_id(session, authenticated)

        def write(conn: Connection) -> Record:
            row = conn.execute(
                select(battles.c.session, battles.c.payload, votes.c.id.label("vote"))
                .outerjoin(votes, votes.c.battle_id == battles.c.id)
                .where(battles.c.id == battle_id)
            ).first()
            # A battle of another session reads as unknown: do not confirm that it exists.
            if row is None or row.session != hashed:
                raise UnknownBattle("This battle was not served to you; start a new round.")
            if row.vote is not None:
                raise AlreadyVoted("You already voted on this battle; start a new round.")
            if row.payload.get("state") == "failed":
                raise NotReady("This battle failed before both answers were complete; start a new round.")
            if row.payload.get("state") != "ready":
                raise NotReady("Wait until both answers are complete, then vote.")
            record = make_record(row.payload, time.time())
            conn.execute(insert(votes).values(
                battle_id=battle_id, voter=record.meta["voter"], judge=record.judge,
                mode=record.meta["mode"], anony=record.meta["anony"],
                identity_leak=record.meta["identity_leak"], winner=record.winner,
                model_a=record.model_a, model_b=record.model_b, pair_id=record.pair_id,
                tstamp=record.tstamp, record=record.to_dict(),
            ))
            return record

        try:
            return self._writer.submit(write)
        except IntegrityError:  # another replica stored it between our check and insert?
            with self.engine.connect() as conn:
                stored = conn.execute(select(votes.c.id).where(votes.c.battle_id == battle_id)).first()
            if stored is None:  # no: some other constraint failed, and the vote is not stored
                raise
            raise AlreadyVoted("You already voted on this battle; start a new round.") from None

    # -- reads ---------------------------------------------------------------------------
    def ratable(self):
        """The votes ratings count: anonymous, leak-free, and no prompt-set votes unless
        ``prompt_set_rated``; then only logged-in voters' first vote on each pair. (A
        prompt-set pair's answers are fixed texts, so a voter who saw one reveal knows who
        wrote them; only a login stops one person from voting as many.)"""
        clean = and_(votes.c.anony.is_(True), votes.c.identity_leak.is_(False))
        live = votes.c.mode != "prompt_set"
        if not self.prompt_set_rated:
            return and_(clean, live)
        first = (select(func.min(votes.c.id))
                 .where(clean, votes.c.mode == "prompt_set", votes.c.voter.startswith(AUTHENTICATED))
                 .group_by(votes.c.voter, votes.c.pair_id))
        return and_(clean, or_(live, votes.c.id.in_(first)))

    def records(self, ratable: bool = False) -> list[Record]:
        """All stored votes in commit order; ``ratable``: those ratings count (:meth:`ratable`)."""
        query = select(votes.c.record).order_by(votes.c.id)
        if ratable:
            query = query.where(self.ratable())
        with self.engine.connect() as conn:
            return [Record.from_dict(r) for (r,) in conn.execute(query)]

    def outcome_counts(self) -> list[tuple[str, str, str, int]]:
        """(model_a, model_b, winner, count) over ratable votes: what the pair sampler needs."""
        query = (
            select(votes.c.model_a, votes.c.model_b, votes.c.winner, func.count())
            .where(self.ratable())
            .group_by(votes.c.model_a, votes.c.model_b, votes.c.winner)
        )
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]

    def count_votes(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(votes)).scalar_one()


def _ensure_salt(conn: Connection) -> str:
    row = conn.execute(select(settings.c.value).where(settings.c.key == "voter_salt")).first()
    if row:
        return row.value
    salt = secrets.token_hex(16)
    conn.execute(insert(settings).values(key="voter_salt", value=salt))
    return salt
