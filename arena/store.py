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
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
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
    false,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from arena import hygiene
from arena.errors import AlreadyVoted, NotReady, Refused, UnknownBattle
from arena.sessions import lineage
from pairlab.ratable import AUTHENTICATED, PROMPT_SET_MODE
from pairlab.records import Record

log = logging.getLogger(__name__)
metadata = MetaData()

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
    Column("tab", String(64), nullable=True),  # the page it was served to (sessions.Voter.tab)
    # "New round" closes the page's battle of that mode: no replica continues it.
    Column("closed", Boolean, nullable=False, server_default=false()),
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
    # Vote hygiene (arena.hygiene): why a vote is set aside; ``counted`` = no flags.
    Column("prompt_key", String(16), nullable=True, index=True),
    Column("flags", JSON, nullable=True),
    Column("counted", Boolean, nullable=False, server_default=true(), index=True),
    # Pseudonyms of the client address and of the session's lineage (sessions.lineage), for
    # the address rules of vote hygiene; None for logged-in voters.
    Column("address", String(16), nullable=True, index=True),
    Column("lineage", String(16), nullable=True, index=True),
)
# Columns added after the first release: stores created before get them on open.
_ADDED = {"votes": ("prompt_key", "flags", "counted", "address", "lineage"), "battles": ("tab", "closed")}


_BUSY_TIMEOUT_S = 30


def _journal_wal(cur) -> None:
    """Put the file in WAL mode. Replicas opening a new file together race for the switch,
    and SQLite answers the losers "database is locked" at once, without its busy handler
    (the switch needs the file to itself): retry within the busy timeout."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_engine(url: str, synchronous: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": _BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        # pysqlite's own transaction handling skips BEGIN before SELECT, which would let
        # the writer's check-then-insert read outside its transaction; take it over.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_S * 1000}")
        _journal_wal(cur)
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute("PRAGMA foreign_keys=ON")
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
        _create_schema(self.engine)
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
    def save_battle(self, payload: dict, unvoted: bool = False) -> None:
        """Insert or update a served battle (``payload`` from ``Battle.to_payload``);
        ``unvoted``: only while no vote on it is stored (else :class:`AlreadyVoted`)."""
        now = time.time()
        row = {
            "session": payload["session"], "mode": payload["mode"], "anony": payload["anony"],
            "model_a": payload["models"][0], "model_b": payload["models"][1],
            "updated": now, "payload": payload, "tab": payload.get("tab", ""),
        }

        def write(conn: Connection) -> None:
            if unvoted:
                _lock_battle(conn, payload["id"])
                if conn.execute(select(votes.c.id).where(votes.c.battle_id == payload["id"])).first() is not None:
                    raise AlreadyVoted("This battle was voted on; start a new round.")
            # One statement, so two replicas saving the same battle cannot both insert it.
            statement = _insert(conn, battles).values(id=payload["id"], created=now, **row)
            conn.execute(statement.on_conflict_do_update(index_elements=[battles.c.id], set_=row))

        self._writer.submit(write)

    def begin_turn(self, payload: dict) -> None:
        """Store that ``payload``'s battle is generating a turn (``state = "streaming"``), so no
        replica takes a vote on its earlier turn meanwhile; refused (:class:`AlreadyVoted`) when
        a vote on it is stored already. The store decides, under the battle's lock."""
        self.save_battle(payload, unvoted=True)

    def cast_vote(self, battle_id: str, session: str, make_record: Callable[[dict, float], Record],
                  authenticated: bool = False, caps: hygiene.Caps = hygiene.Caps(),
                  address: str | None = None) -> Record:
        """Store the vote on ``battle_id`` cast by ``session`` (raw token), once.

        ``make_record(payload, tstamp)`` builds the record from the stored battle, so the
        vote is bound to exactly what the server served. Raises :class:`Refused`. A vote
        over one of ``caps`` is stored with its flag in ``meta["flags"]`` and not counted.
        ``address``: the client's (stored as a pseudonym, for the address rules).
        """
        hashed = self.voter_id(session, authenticated)
        origin = None if authenticated else {
            "address": self.hash_id(f"address\x1f{address}") if address else None,
            "lineage": lineage(session)}

        def write(conn: Connection) -> Record:
            _lock_battle(conn, battle_id)
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
            key = hygiene.prompt_key([m["content"] for m in (record.conversation or {}).get("model_a", [])
                                      if m["role"] == "user"] or [record.prompt])
            flags = _cap_flags(conn, record, key, caps, origin)
            if flags:
                record.meta["flags"] = flags
            conn.execute(insert(votes).values(
                prompt_key=key, flags=flags, counted=not flags, **(origin or {}),
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
    def load_battle(self, battle_id: str) -> dict | None:
        """The stored payload of ``battle_id`` (as ``Battle.to_payload`` wrote it, ``voted`` from
        the votes table, ``closed`` by a new round), or None."""
        return self._battle(battles.c.id == battle_id)

    def current_battle(self, session_hash: str, tab: str, mode: str) -> dict | None:
        """The payload of the page's latest battle in ``mode`` that no new round closed, or None."""
        return self._battle(battles.c.session == session_hash, battles.c.tab == tab, battles.c.mode == mode,
                            battles.c.closed.is_(False))

    def _battle(self, *where) -> dict | None:
        query = (select(battles.c.payload, battles.c.closed, votes.c.id.label("vote"))
                 .outerjoin(votes, votes.c.battle_id == battles.c.id).where(*where)
                 .order_by(battles.c.created.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else {**row.payload, "voted": row.vote is not None, "closed": row.closed}

    def close_battles(self, session_hash: str, tab: str, modes: Sequence[str]) -> None:
        """Close the page's battles in ``modes`` (a new round); they stay stored, votable by id."""
        def write(conn: Connection) -> None:
            conn.execute(update(battles).where(battles.c.session == session_hash, battles.c.tab == tab,
                                               battles.c.mode.in_(modes), battles.c.closed.is_(False))
                         .values(closed=True))

        self._writer.submit(write)

    def ratable(self, counted: bool = True):
        """The votes ratings count, as :mod:`pairlab.ratable` defines them (the rule analysis
        applies to exported records), in SQL: anonymous, leak-free, not set aside by vote
        hygiene (``counted``; see :mod:`arena.hygiene`), and no prompt-set votes unless
        ``prompt_set_rated``; then only logged-in voters' first vote on each pair."""
        clean = and_(votes.c.anony.is_(True), votes.c.identity_leak.is_(False),
                     *([votes.c.counted.is_(True)] if counted else []))
        live = votes.c.mode != PROMPT_SET_MODE
        if not self.prompt_set_rated:
            return and_(clean, live)
        first = (select(func.min(votes.c.id))
                 .where(clean, votes.c.mode == PROMPT_SET_MODE, votes.c.voter.startswith(AUTHENTICATED))
                 .group_by(votes.c.voter, votes.c.pair_id))
        return and_(clean, or_(live, votes.c.id.in_(first)))

    def records(self, ratable: bool = False) -> list[Record]:
        """All stored votes in commit order, hygiene flags in ``meta["flags"]``;
        ``ratable``: those ratings count (:meth:`ratable`)."""
        query = select(votes.c.record, votes.c.flags).order_by(votes.c.id)
        if ratable:
            query = query.where(self.ratable())
        out = []
        with self.engine.connect() as conn:
            for data, flags in conn.execute(query):
                record = Record.from_dict(data)
                record.meta.pop("flags", None)
                if flags:  # the row's flags are current (anomaly flags change later)
                    record.meta["flags"] = list(flags)
                out.append(record)
        return out

    def refresh_anomalies(self, alpha: float = 0.001) -> set[str]:
        """Re-run the anomalous-voter test on the votes otherwise counted; store the flags.

        Returns the hashed voters flagged now. Votes of a voter no longer flagged are
        counted again: nothing is deleted, flags follow the current ratings.
        """
        others = [f for f in hygiene.FLAGS if f != hygiene.ANOMALOUS]
        query = (select(votes.c.id, votes.c.voter, votes.c.model_a, votes.c.model_b, votes.c.winner, votes.c.flags)
                 .where(self.ratable(counted=False)).order_by(votes.c.id))
        with self.engine.connect() as conn:
            rows = [r for r in conn.execute(query) if not set(r.flags or ()) & set(others)]
        flagged = hygiene.anomalous_voters([r.voter for r in rows], [r.model_a for r in rows],
                                           [r.model_b for r in rows], [r.winner for r in rows], alpha=alpha)
        changes = []
        for r in rows:
            old = list(r.flags or ())
            new = sorted(set(old) - {hygiene.ANOMALOUS} | ({hygiene.ANOMALOUS} if r.voter in flagged else set()))
            if new != sorted(old):
                changes.append((r.id, new))

        def write(conn: Connection) -> None:
            for vote_id, new in changes:
                conn.execute(update(votes).where(votes.c.id == vote_id).values(flags=new, counted=not new))

        if changes:
            self._writer.submit(write)
        return flagged

    def outcome_counts(self) -> list[tuple[str, str, str, int]]:
        """(model_a, model_b, winner, count) over ratable votes: what the pair sampler needs."""
        query = (
            select(votes.c.model_a, votes.c.model_b, votes.c.winner, func.count())
            .where(self.ratable())
            .group_by(votes.c.model_a, votes.c.model_b, votes.c.winner)
        )
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]

    def set_aside(self) -> dict[str, int]:
        """How many stored votes each hygiene rule set aside (a vote may have several flags)."""
        counts = dict.fromkeys(hygiene.FLAGS, 0)
        with self.engine.connect() as conn:
            for (flags,) in conn.execute(select(votes.c.flags).where(votes.c.counted.is_(False))):
                for flag in flags or ():
                    counts[flag] = counts.get(flag, 0) + 1
        return counts

    def count_votes(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(votes)).scalar_one()


def _cap_flags(conn: Connection, record: Record, key: str, caps: hygiene.Caps,
               origin: dict | None = None) -> list[str]:
    """The hygiene flags a new vote gets from the votes already stored (see arena.hygiene);
    ``origin``: the vote's address and lineage pseudonyms (None: a logged-in voter)."""
    flags = []
    if caps.daily_per_address and origin:
        for column in (votes.c.address, votes.c.lineage):
            if origin[column.name] is None:
                continue
            _lock_key(conn, f"{column.name}:{origin[column.name]}")
            today = conn.execute(select(func.count()).select_from(votes).where(
                column == origin[column.name], votes.c.counted.is_(True),
                votes.c.tstamp >= hygiene.day_start(record.tstamp))).scalar_one()
            if today >= caps.daily_per_address:
                flags.append(hygiene.ADDRESS_CAP)
                break
    if caps.burst_voters and origin and origin["address"]:
        others = conn.execute(select(func.count(func.distinct(votes.c.voter))).where(
            votes.c.address == origin["address"], votes.c.voter != record.meta["voter"],
            votes.c.tstamp >= record.tstamp - caps.burst_window_s)).scalar_one()
        if others >= caps.burst_voters:
            flags.append(hygiene.BURST)
    if caps.daily_votes:
        _lock_key(conn, "voter:" + record.meta["voter"])
        today = conn.execute(select(func.count()).select_from(votes).where(
            votes.c.voter == record.meta["voter"], votes.c.counted.is_(True),
            votes.c.tstamp >= hygiene.day_start(record.tstamp))).scalar_one()
        if today >= caps.daily_votes:
            flags.append(hygiene.DAILY_CAP)
    if caps.per_prompt and record.meta["mode"] != "prompt_set":  # a prompt set repeats by design
        _lock_key(conn, "prompt:" + key)
        same = conn.execute(select(func.count()).select_from(votes).where(
            votes.c.prompt_key == key, votes.c.counted.is_(True))).scalar_one()
        if same >= caps.per_prompt:
            flags.append(hygiene.DUPLICATE)
    return flags


def _lock_key(conn: Connection, key: str) -> None:
    """On PostgreSQL, serialise transactions about ``key`` across replicas until commit
    (a count is read, then a vote written); SQLite's writer already holds its write lock."""
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(key))))


def _create_schema(engine: Engine) -> None:
    """Create the tables, and add the columns this version defines to a store created by an
    older one (nullable or defaulted), in one transaction under a lock: replicas started
    together otherwise each see no table and all but one fail on CREATE ("relation already
    exists", or a duplicate key in PostgreSQL's catalogue). PostgreSQL takes a transaction-scoped
    advisory lock; SQLite's writer transaction (BEGIN IMMEDIATE) already excludes other
    processes. Both roll DDL back with the transaction, so a replica that fails leaves nothing half made."""
    from sqlalchemy import inspect
    from sqlalchemy.schema import CreateColumn

    with engine.execution_options(writer=True).begin() as conn:
        _lock_key(conn, "arena schema")
        metadata.create_all(conn)
        inspector = inspect(conn)
        for table_name, names in _ADDED.items():
            existing = {c["name"] for c in inspector.get_columns(table_name)}
            for name in names:
                if name not in existing:
                    column = metadata.tables[table_name].c[name]
                    ddl = CreateColumn(column).compile(dialect=engine.dialect)
                    conn.exec_driver_sql(f"ALTER TABLE {table_name} ADD COLUMN {ddl}")


def _insert(conn: Connection, table: Table):
    """The dialect's INSERT, which has ``on_conflict_do_*`` (SQLite and PostgreSQL both do)."""
    if conn.dialect.name == "postgresql":
        return pg_insert(table)
    return sqlite_insert(table)


def _lock_battle(conn: Connection, battle_id: str) -> None:
    """Serialise read-then-write on one battle across replicas (PostgreSQL's BEGIN IMMEDIATE).

    SQLite takes its write lock at BEGIN and this process has one writer; PostgreSQL's
    READ COMMITTED lets two replicas read the same "not voted yet" and both go on, so
    the battle row is locked FOR UPDATE first: the second voter waits, and its next
    statement (a fresh snapshot) sees the first one's committed vote.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(select(battles.c.id).where(battles.c.id == battle_id).with_for_update())


def _ensure_salt(conn: Connection) -> str:
    # Replicas starting together: the first salt written wins, every replica reads it.
    conn.execute(_insert(conn, settings).values(key="voter_salt", value=secrets.token_hex(16))
                 .on_conflict_do_nothing(index_elements=[settings.c.key]))
    return conn.execute(select(settings.c.value).where(settings.c.key == "voter_salt")).scalar_one()
