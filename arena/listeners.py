"""Which pages are listening: the event streams open per Gradio session hash.

A page starts an event with ``POST /gradio_api/queue/join`` and reads its output on
``GET /gradio_api/queue/data?session_hash=...``. A client can post the join and never open
(or soon close) the stream; Gradio runs the event all the same, and a generation would then
run both models for nobody while real visitors wait for the slot. The web app counts the
open streams (:class:`StreamTracker`); a generation starts only for a page that listens,
and stops when the page stops listening.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

# A browser opens the stream as soon as its join is answered; the event may start first.
GRACE_S = 3.0
POLL_S = 0.05


class Listeners:
    def __init__(self):
        self._open: Counter = Counter()
        self._lock = threading.Lock()

    def opened(self, session_hash: str) -> None:
        with self._lock:
            self._open[session_hash] += 1

    def closed(self, session_hash: str) -> None:
        with self._lock:
            self._open[session_hash] -= 1
            if self._open[session_hash] <= 0:
                del self._open[session_hash]

    def listening(self, session_hash: str | None) -> bool:
        return bool(session_hash) and self._open.get(session_hash, 0) > 0

    async def gone(self, session_hash: str | None) -> bool:
        """For :meth:`arena.slots.Slots.wait`: the page stopped listening."""
        return not self.listening(session_hash)

    async def arrive(self, session_hash: str | None, grace_s: float = GRACE_S) -> bool:
        """Whether the page listens, waiting up to ``grace_s`` for its stream to open."""
        waited = 0.0
        while not self.listening(session_hash):
            if waited >= grace_s:
                return False
            await asyncio.sleep(POLL_S)
            waited += POLL_S
        return True


class StreamTracker:
    """ASGI middleware: counts each page's open ``queue/data`` stream in ``listeners``
    from the moment it is requested until its response ends (done, or the client left)."""

    def __init__(self, app: ASGIApp, listeners: Listeners):
        self.app, self.listeners = app, listeners

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not scope["path"].endswith("/gradio_api/queue/data"):
            return await self.app(scope, receive, send)
        session_hash = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_hash", [""])[0]
        if not session_hash:
            return await self.app(scope, receive, send)
        self.listeners.opened(session_hash)
        try:
            await self.app(scope, receive, send)
        finally:
            self.listeners.closed(session_hash)
