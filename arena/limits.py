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
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.errors import RateLimited


class SlidingWindow:
    """At most ``limit`` events per key in any ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float, what: str, max_keys: int = 100_000):
        self.limit = limit
        self.window_s = window_s
        self.what = what  # "this session", ... for the message
        self.max_keys = max_keys
        self._events: OrderedDict[str, deque] = OrderedDict()
        self._lock = threading.Lock()

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


class Limits:
    """The arena's limits; ``check`` before every action, ``check_new_session`` before issuing one."""

    def __init__(self, per_session: int, per_address: int, new_sessions: int, overall: int, window_s: float,
                 requests: int = 600):
        self.requests = SlidingWindow(requests, window_s, "your network address")
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


class RequestLimit:
    """ASGI middleware: every HTTP request counts against its client address
    (:meth:`Limits.check_request`); over the limit, 429 before any work is done."""

    def __init__(self, app: ASGIApp, limits: Limits, address: Callable[[Scope], str | None]):
        self.app, self.limits, self.address = app, limits, address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                self.limits.check_request(self.address(scope))
            except RateLimited as exc:
                return await JSONResponse({"error": str(exc)}, status_code=exc.status)(scope, receive, send)
        await self.app(scope, receive, send)


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
