"""Generation slots: the machine runs ``slots`` battles at once; the rest wait in one line.

A battle waiting for a slot holds no worker thread: the HTTP API and the pages wait with
:meth:`Slots.wait` on the event loop, so pages, prompt-set battles, votes and the
leaderboard are served while generations queue. The line is bounded three ways, so one
client cannot fill it: per session, per client address, and in all. A waiter whose client
left (``gone``) gives its place up, and :meth:`Slots.close` (shutdown) sends every waiter
away at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

from arena.errors import RateLimited, Refused

POLL_S = 0.05  # how often an async waiter looks at its place (no thread is held meanwhile)
GONE_EVERY_S = 0.5  # how often it asks whether its client is still there


class Busy(RateLimited):
    status = 503


@dataclass(eq=False)
class Slot:
    """One place in the line, then (``granted``) one generation slot until released."""

    session: str
    address: str | None
    granted: threading.Event = field(default_factory=threading.Event)
    released: bool = False


class Slots:
    def __init__(self, slots: int, max_waiting: int, per_address: int, per_session: int):
        self.size = self.free = slots
        self.max_waiting, self.per_address, self.per_session = max_waiting, per_address, per_session
        self._line: deque[Slot] = deque()
        self._addresses: Counter = Counter()
        self._sessions: Counter = Counter()
        self._lock = threading.Lock()
        self._closed = False

    def counts(self) -> tuple[int, int]:
        """(battles holding a slot, battles waiting in line) right now."""
        with self._lock:
            return self.size - self.free, len(self._line)

    def _join(self, session: str, address: str | None) -> Slot:
        slot = Slot(session, address)
        with self._lock:
            if self._closed:
                raise Busy("The server is shutting down; try again in a minute.")
            if self.free > 0 and not self._line:
                self.free -= 1
                slot.granted.set()
                return slot
            if self._sessions[session] >= self.per_session:
                raise RateLimited("You already have a battle waiting for the models; wait for it to start.")
            if address is not None and self._addresses[address] >= self.per_address:
                raise RateLimited("Too many battles from your network address are waiting for the models; "
                                  "try again when they are answered.")
            if len(self._line) >= self.max_waiting:
                raise Busy("Too many battles are waiting for the models; try again in a minute.")
            self._line.append(slot)
            self._sessions[session] += 1
            if address is not None:
                self._addresses[address] += 1
        return slot

    def _leave_line(self, slot: Slot) -> None:  # holding self._lock
        self._line.remove(slot)
        self._sessions[slot.session] -= 1
        if not self._sessions[slot.session]:
            del self._sessions[slot.session]
        if slot.address is not None:
            self._addresses[slot.address] -= 1
            if not self._addresses[slot.address]:
                del self._addresses[slot.address]

    def _give_up(self, slot: Slot) -> None:
        with self._lock:
            if not slot.granted.is_set():
                self._leave_line(slot)
                return
        self.release(slot)  # granted meanwhile: pass it on

    def release(self, slot: Slot) -> None:
        with self._lock:
            if slot.released:
                return
            slot.released = True
            if self._line and not self._closed:
                nxt = self._line[0]
                self._leave_line(nxt)
                nxt.granted.set()
            else:
                self.free += 1

    def acquire(self, session: str, address: str | None = None) -> Slot:
        """Wait for a slot in this thread (library callers and tests; the servers use :meth:`wait`)."""
        slot = self._join(session, address)
        while not slot.granted.wait(GONE_EVERY_S):
            if self._closed:
                self._give_up(slot)
                raise Busy("The server is shutting down; try again in a minute.")
        return slot

    def place(self, session: str) -> int | None:
        """The place in line (1: next to be admitted) of ``session``'s waiting battle; None when
        it has none waiting."""
        return self._place(lambda slot: slot.session == session)

    def _place(self, match: Callable[[Slot], bool]) -> int | None:
        with self._lock:
            return next((i for i, slot in enumerate(self._line, 1) if match(slot)), None)

    async def line_up(self, session: str, address: str | None = None,
                      gone: Callable[[], Awaitable[bool]] | None = None) -> AsyncIterator[int | Slot]:
        """Wait for a slot on the event loop, yielding the place in line (1: next) each time it
        changes, then the granted :class:`Slot`. Refused when the line is full for this client,
        given up when ``gone()`` says the client left (then :class:`Refused`) or the iterator is
        closed before the slot came."""
        slot = self._join(session, address)
        shown = None
        waited = 0.0
        try:
            while not slot.granted.is_set():
                if self._closed:
                    raise Busy("The server is shutting down; try again in a minute.")
                place = self._place(lambda waiting: waiting is slot)
                if place is not None and place != shown:
                    shown = place
                    yield place
                    continue
                await asyncio.sleep(POLL_S)
                waited += POLL_S
                if gone is not None and waited >= GONE_EVERY_S:
                    waited = 0.0
                    if await gone():
                        raise Refused("The client left before the models were free.")
        except BaseException:  # refused, left, closed or cancelled: the place goes to the next one
            self._give_up(slot)
            raise
        yield slot  # outside the guard: the caller owns the slot now, and releases it

    async def wait(self, session: str, address: str | None = None,
                   gone: Callable[[], Awaitable[bool]] | None = None) -> Slot:
        """Wait for a slot on the event loop (:meth:`line_up` without the places)."""
        async with aclosing(self.line_up(session, address, gone)) as line:
            async for step in line:
                if isinstance(step, Slot):
                    return step
        raise AssertionError("unreachable: a line-up ends with its slot or an error")

    def close(self) -> None:
        """Shutdown: no new waiter, and every waiting one is sent away."""
        with self._lock:
            self._closed = True
