"""Limits on what clients may ask: rates per session, per client address and for the
whole server, and the size of a request body (:class:`BodyLimit`, ASGI middleware).

A session limit alone trusts an identity the client picks: a client that starts a
fresh session per request is never limited. So every action also counts against the
client's network address (the one thing it cannot choose freely) and against one
global budget that protects the machine from many addresses at once. New sessions are
limited per address too, since each one is a fresh session-sized budget.

Behind a reverse proxy every request comes from the proxy's address; the client's is in
``X-Forwarded-For``, which only a trusted proxy may set (anyone can send the header).

An IPv6 client is one /64: a single home or host is routinely given a whole /64 and picks
any address in it, so each address on its own would be a fresh budget. An IPv4 address
written as IPv6 (``::ffff:a.b.c.d``) is that IPv4 address. Every request, on any route,
counts against its address too (:class:`RequestLimit`).

Rates alone do not protect one process from many addresses: 16 addresses within their
budgets ask for more than it answers. So page traffic (every request of a client with no
battle or vote in progress) also waits for one of a few places in the server, given first to
the addresses that asked least (:class:`Admission`), while voters' requests go ahead
(:class:`Voting`).
"""

from __future__ import annotations

import asyncio
import heapq
import ipaddress
import itertools
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.errors import RateLimited


# Page traffic in the server at once (Admission). One request keeps the one event loop busy
# (a page or Gradio's info holds it for tens of milliseconds) and leaves room for voters' requests
# however many addresses flood (with two at once, the review's flood of 16 addresses held up more
# than twice as many voters as with one), and a new visitor would rather wait for a place (as a browser
# waits for a slow page) than be turned away: the line sheds flooding addresses' requests first,
# so a visitor's leaves it only for its place (a waiting request costs a connection and no work).
# One address may hold several browsers' worth of requests (six connections each): a page left
# while loading keeps its requests in line until they are served or time out, and the next page
# of the same visitor must not be refused for them.
PAGE_SLOTS, PAGE_PER_ADDRESS, PAGE_WAITING, PAGE_WAIT_S = 1, 24, 128, 30.0


class SlidingWindow:
    """At most ``limit`` events per key in any ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float, what: str, max_keys: int = 100_000):
        self.limit = limit
        self.window_s = window_s
        self.what = what  # "this session", ... for the message
        self.max_keys = max_keys
        self._events: OrderedDict[str, deque] = OrderedDict()
        self._lock = threading.Lock()

    def recent(self, key: str | None) -> int:
        """Events of ``key`` in the window so far."""
        now = time.monotonic()
        with self._lock:
            return sum(now - t < self.window_s for t in self._events.get(key, ()))

    def check(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            events = self._events.pop(key, None) or deque()
            while events and now - events[0] >= self.window_s:
                events.popleft()
            self._events[key] = events  # most recent last, so eviction drops idle ones
            if len(self._events) > self.max_keys:
                self._events.popitem(last=False)
            if len(events) >= self.limit:
                wait = self.window_s - (now - events[0])
                raise RateLimited(f"Too many requests from {self.what}; try again in {max(wait, 1):.0f} s.")
            events.append(now)


class Voting:
    """Sessions with a battle or a vote in progress: served a battle, or voted, within ``grace_s``
    (a voter reads two answers and votes within minutes). Their requests go ahead of page traffic
    (:class:`Admission`). One process's memory: on another replica a voter is page traffic until
    it acts there."""

    def __init__(self, grace_s: float = 600.0, max_keys: int = 100_000):
        self.grace_s, self.max_keys = grace_s, max_keys
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def mark(self, session: str) -> None:
        with self._lock:
            self._seen.pop(session, None)
            self._seen[session] = time.monotonic()
            if len(self._seen) > self.max_keys:
                self._seen.popitem(last=False)

    def __contains__(self, session: str | None) -> bool:
        with self._lock:
            seen = self._seen.get(session) if session else None
        return seen is not None and time.monotonic() - seen < self.grace_s


class Limits:
    """The arena's limits; ``check`` before every action, ``check_new_session`` before issuing one.

    ``requests``: HTTP requests per address on any route; ``admission``: the places of page
    traffic (requests of clients with no battle or vote in progress) in the server; ``voting``:
    the sessions that go ahead of it."""

    def __init__(self, per_session: int, per_address: int, new_sessions: int, overall: int, window_s: float,
                 requests: int = 300):
        self.requests = SlidingWindow(requests, window_s, "your network address")
        self.admission = Admission(PAGE_SLOTS, PAGE_PER_ADDRESS, PAGE_WAITING, PAGE_WAIT_S)
        self.voting = Voting()
        self.session = SlidingWindow(per_session, window_s, "this session")
        self.address = SlidingWindow(per_address, window_s, "your network address")
        self.sessions = SlidingWindow(new_sessions, window_s, "your network address (new sessions)")
        # Page events join Gradio's queue before any handler sees a session: bounded per
        # address too, so invented sessions cannot keep the queue full.
        self.events = SlidingWindow(per_address, window_s, "your network address (page events)")
        self.overall = SlidingWindow(overall, window_s, "everyone at once: the server is busy")

    # The narrowest limit first: what one client's flood is refused for never reaches
    # (and so never spends) the budget that everyone shares.
    def check(self, session: str, address: str | None) -> None:
        if address is not None:
            self.address.check(address)
        self.session.check(session)
        self.overall.check("")

    def check_request(self, address: str | None) -> None:
        """Any request on any route (pages, Gradio's info and streams, the API)."""
        if address is not None:
            self.requests.check(address)

    def check_event(self, address: str | None) -> None:
        if address is not None:
            self.events.check(address)

    def check_new_session(self, address: str | None) -> None:
        if address is not None:
            self.sessions.check(address)
        self.overall.check("")


def client_address(peer: str | None, forwarded_for: str | None, trusted_proxies: Iterable[str]) -> str | None:
    """The client's address: the peer, or, when the peer is a trusted proxy, the nearest
    untrusted hop in ``X-Forwarded-For`` (read right to left: the right end is what our
    own proxies appended; whatever a client wrote sits further left)."""
    trusted = {client_group(p) for p in trusted_proxies}
    peer = client_group(peer)
    if peer not in trusted or not forwarded_for:
        return peer
    hops = [client_group(h.strip()) for h in forwarded_for.split(",") if h.strip()]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop
    return hops[0] if hops else peer


def client_group(address: str | None) -> str | None:
    """The client an address stands for: an IPv4 address as is (also written ``::ffff:a.b.c.d``),
    an IPv6 address as its /64 (``2001:db8:1:2::/64``); anything else unchanged."""
    try:
        ip = ipaddress.ip_address(address) if address else None
    except ValueError:
        return address
    if ip is None or ip.version == 4:
        return address if ip is None else str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))


class Busy(RateLimited):
    status = 503


class Admission:
    """Page traffic's places in the server: at most ``slots`` of its requests are worked on at
    once, ``per_address`` of them (working or waiting) per address, and up to ``waiting`` more wait,
    ``wait_s`` at most. A place that frees goes to the waiting request whose address sent the fewest
    requests lately (``recent``: a new visitor before a flooding address), and a full line turns
    away the request of the address that sent the most. One event loop serves every request, so a
    bound on page work in flight is what keeps voters' battles and votes moving under a flood.
    """

    def __init__(self, slots: int, per_address: int, waiting: int, wait_s: float):
        self.slots, self.per_address, self.waiting, self.wait_s = slots, per_address, waiting, wait_s
        self.working = 0
        self.held: Counter[str | None] = Counter()  # places (working or waiting) per address
        self._line: list[tuple[int, int, str | None, asyncio.Future]] = []  # (recent, arrival, address, place)
        self._arrival = itertools.count()

    async def enter(self, address: str | None, recent: int = 0) -> None:
        """Wait for a place (raise :class:`RateLimited` or :class:`Busy` when there is none); then
        :meth:`leave` once the response is sent. ``recent``: the address's requests lately."""
        if self.held[address] >= self.per_address:
            raise RateLimited("Too many requests from your network address at once; try again shortly.")
        if self.working < self.slots and not self._line:
            self.held[address] += 1
            self.working += 1
            return
        if len(self._line) >= self.waiting:
            self._turn_away(recent)
        place = asyncio.get_running_loop().create_future()
        self.held[address] += 1
        heapq.heappush(self._line, (recent, next(self._arrival), address, place))
        try:
            await asyncio.wait_for(asyncio.shield(place), self.wait_s)
        except BaseException as exc:  # waited too long, turned away, or the request was cancelled
            if place.done() and not place.cancelled() and place.exception() is None:
                self.leave(address)  # the place came as the wait ended: give it on
            else:
                place.cancel()
                self._line = [entry for entry in self._line if entry[3] is not place]
                heapq.heapify(self._line)
                self._forget(address)
            if isinstance(exc, (asyncio.TimeoutError, Busy)):
                raise Busy("The server is busy; try again in a few seconds.") from None
            raise

    def leave(self, address: str | None) -> None:
        self._forget(address)
        self.working -= 1
        while self._line and self.working < self.slots:
            *_, waiter, place = heapq.heappop(self._line)
            if not place.done():
                self.working += 1
                place.set_result(None)

    def _forget(self, address: str | None) -> None:
        self.held[address] -= 1
        if self.held[address] <= 0:
            del self.held[address]

    def _turn_away(self, recent: int) -> None:
        """The line is full: the latest waiting request of the address that sent the most lately
        loses its place, or the newcomer is refused if its own address sent as many."""
        live = [entry for entry in self._line if not entry[3].done()]
        heaviest = max(live, key=lambda entry: (entry[0], entry[1]), default=None)
        if heaviest is None or heaviest[0] <= recent:
            raise Busy("The server is busy; try again in a few seconds.")
        heaviest[3].set_exception(Busy("The server is busy; try again in a few seconds."))
        self._line.remove(heaviest)
        heapq.heapify(self._line)


class RequestLimit:
    """ASGI middleware: every HTTP request but a page's static files (``asset``) counts against its
    client address (:meth:`Limits.check_request`); a request of a client with no battle or vote in progress
    (``priority`` false), unless it is a long-lived event stream (``stream``), then waits for a
    place (:class:`Admission`). Over a limit: 429 (503 when the server is busy) before any work is done."""

    def __init__(self, app: ASGIApp, limits: Limits, address: Callable[[Scope], str | None],
                 priority: Callable[[Scope], bool] = lambda scope: False,
                 stream: Callable[[Scope], bool] = lambda scope: False,
                 asset: Callable[[Scope], bool] = lambda scope: False):
        self.app, self.limits, self.address, self.priority, self.stream = app, limits, address, priority, stream
        self.asset = asset

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        address, placed = self.address(scope), False
        try:
            # A page's static files (dozens per load) would spend an address's budget in a few
            # visits; they still wait for a place like any page traffic.
            if not self.asset(scope):
                self.limits.check_request(address)
            if not self.priority(scope) and not self.stream(scope):
                await self.limits.admission.enter(address, self.limits.requests.recent(address))
                placed = True
        except RateLimited as exc:
            return await JSONResponse({"error": str(exc)}, status_code=exc.status)(scope, receive, send)
        try:
            await self.app(scope, receive, send)
        finally:
            if placed:
                self.limits.admission.leave(address)


class BodyLimit:
    """Refuse a request body over ``max_bytes`` with 413, whether its length is declared or streamed.

    A streamed body is cut off at the limit (the app sees it end there, and whatever it
    answers is replaced by the 413), so no more than ``max_bytes`` is ever read.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = JSONResponse({"error": f"The request is larger than {self.max_bytes} bytes."}, status_code=413)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await too_large(scope, receive, send)
        received, cut = 0, False

        async def counted() -> Message:
            nonlocal received, cut
            if cut:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    cut = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def replaced(message: Message) -> None:
            if not cut:
                await send(message)
            elif message["type"] == "http.response.start":
                await too_large(scope, receive, send)

        await self.app(scope, counted, replaced)
