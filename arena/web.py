"""The web app: the HTTP API and the three Gradio pages on one FastAPI server.

Plain ASGI middleware sits in front of everything: limits per address and on page traffic
(whose requests wait for a place, behind voters' battles and votes: :mod:`arena.limits`), a
cap on request bodies, the session cookie, issued and signed when a page is loaded without
one (see :mod:`arena.sessions`), a per-address limit on starting Gradio events (by any
route), a refusal of uploads, and the count of open event streams per page
(:mod:`arena.listeners`: no generation for a page that does not listen).
"""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena import api
from arena.battles import Arena
from arena.errors import RateLimited
from arena.limits import BodyLimit, RequestLimit
from arena.listeners import Listeners, StreamTracker
from arena.sessions import SESSION_COOKIE
from arena.ui import CSS, LEADERBOARD_PATH, SIDE_BY_SIDE_PATH, battle_page, leaderboard_page, side_by_side_page

# System fonts: the default Google Fonts would be fetched from the internet on every page.
THEME = gr.themes.Soft(font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])
PAGES = {"", SIDE_BY_SIDE_PATH, LEADERBOARD_PATH}


class SessionCookie:
    """A page loaded without a valid session cookie gets a new signed one (limited per address).

    Gradio's own session id is chosen by the browser, so handlers take the voter from this
    cookie; a client over its limit of new sessions gets the page and no session.
    """

    def __init__(self, app: ASGIApp, arena: Arena):
        self.app, self.arena = app, arena

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"].rstrip("/") not in PAGES:
            return await self.app(scope, receive, send)
        request = Request(scope)
        if self.arena.sessions.verify(request.cookies.get(SESSION_COOKIE)):
            return await self.app(scope, receive, send)
        try:
            token = self.arena.new_session(api.request_address(self.arena, request))
        except RateLimited:
            return await self.app(scope, receive, send)

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = Response()
                api.set_session_cookie(cookie, token)
                message = {**message, "headers": [*message.get("headers", []),
                                                  *[(k, v) for k, v in cookie.raw_headers if k == b"set-cookie"]]}
            await send(message)

        await self.app(scope, receive, with_cookie)


def _redirect(target: str):
    def redirect(request: Request) -> RedirectResponse:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(target + query, status_code=307)
    return redirect


def _gradio_route(path: str) -> str:
    """What follows ``/gradio_api/`` in a page's path ("queue/join", "call/fn", ...), or ""."""
    _, found, rest = path.partition("/gradio_api/")
    return rest if found else ""


# Every Gradio route that starts an event: the page's own, the "simple" API, the
# predict routes (which refuse queued functions, but are counted all the same).
EVENT_ROUTES = ("queue/join", "call/", "run/", "api/")


# Events of one address waiting in a page's queue (not started yet): Gradio's queue has
# queue_max_size places for everyone, and an event whose client never reads its stream
# keeps its place.
PENDING_PER_ADDRESS = 4
# How often a page's queue looks for new events while it has none (Gradio's default is 1 ms).
QUEUE_POLL_S = 0.02


class EventLimit:
    """Starting a page event, by any route, counts against the client's address: a rate
    (429 when over) and a bound on its events waiting in the page's queue, so one client
    cannot fill the places everyone shares. Uploads are refused, since no page has an
    upload component (403)."""

    def __init__(self, app: ASGIApp, arena: Arena, pages: dict[str, gr.Blocks]):
        self.app, self.arena, self.pages = app, arena, pages

    def _pending(self, path: str, address: str | None) -> int:
        """The address's events waiting in the queue of the page ``path`` belongs to."""
        prefix = path.partition("/gradio_api/")[0].rstrip("/") or "/"
        page = self.pages.get(prefix)
        queue = getattr(page, "_queue", None)  # Gradio's own queue: its events keep their request
        if queue is None or address is None:
            return 0
        return sum(1 for line in list(queue.event_queue_per_concurrency_id.values()) for event in list(line.queue)
                   if api.request_address(self.arena, event.request) == address)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        route = _gradio_route(scope["path"])
        if route.rstrip("/") == "upload":
            refused = JSONResponse({"error": "This arena accepts no uploads."}, status_code=403)
            return await refused(scope, receive, send)
        if scope["method"] == "POST" and route.startswith(EVENT_ROUTES):
            address = api.request_address(self.arena, Request(scope))
            try:
                self.arena.limits.check_event(address)
                if self._pending(scope["path"], address) >= PENDING_PER_ADDRESS:
                    raise RateLimited("Too many events from your network address are waiting; try again shortly.")
            except RateLimited as exc:
                return await JSONResponse({"error": str(exc)}, status_code=exc.status)(scope, receive, send)
        await self.app(scope, receive, send)


# Long-lived event streams (a page's queue stream and its heartbeat) hold no place for page
# traffic: they wait, costing nothing, and StreamTracker counts them.
STREAM_ROUTES = ("queue/data", "heartbeat/")
# Actions (battles, turns, votes, page events) have limits of their own (Limits.check, the
# event limit, generation slots): they are never page traffic.
ACTION_PATHS = (f"{api.PREFIX}/battles", f"{api.PREFIX}/votes")


def is_asset(scope: Scope) -> bool:
    """A page's static file: Gradio's bundles, served under each page's ``assets/``."""
    return scope["method"] in ("GET", "HEAD") and "/assets/" in scope["path"]


def is_stream(scope: Scope) -> bool:
    return scope["method"] == "GET" and _gradio_route(scope["path"]).startswith(STREAM_ROUTES)


def goes_first(arena: Arena, scope: Scope) -> bool:
    """Whether a request goes ahead of page traffic: an action, or any request of a voter with
    a battle or vote in progress (:class:`arena.limits.Voting`) or a logged-in one."""
    if scope["method"] == "POST" and (scope["path"].startswith(ACTION_PATHS)
                                      or _gradio_route(scope["path"]).startswith(EVENT_ROUTES)):
        return True
    request = Request(scope)
    return request.cookies.get(SESSION_COOKIE) in arena.limits.voting or api.logged_in(arena, request) is not None


def build_app(arena: Arena) -> FastAPI:
    app = FastAPI(title="Pairwise Arena", docs_url=None, redoc_url=None)
    api.install(app, arena)
    # A mounted page answers only below its prefix ("/leaderboard/..."), and the "/" page
    # would answer "/leaderboard" with a 404: send the bare paths to the pages.
    for path in (SIDE_BY_SIDE_PATH, LEADERBOARD_PATH):
        app.add_api_route(path, _redirect(path + "/"), methods=["GET", "HEAD"], include_in_schema=False)
    # Gradio pages are mounted sub-apps; "/" goes last because a mount matches by prefix.
    listeners = Listeners()
    pages = [(SIDE_BY_SIDE_PATH, side_by_side_page(arena, listeners)), (LEADERBOARD_PATH, leaderboard_page(arena)),
             ("/", battle_page(arena, listeners))]
    for path, page in pages:
        # A full queue turns new events away at once rather than keeping a voter waiting.
        page.queue(default_concurrency_limit=None, max_size=arena.config.queue_max_size)
        # Gradio's queue looks for new events every millisecond while it has none, and for
        # progress to send every 10 ms, so three idle pages kept the arena busy polling; at
        # QUEUE_POLL_S (progress at five times that) an idle arena rests, and an event waits at
        # most QUEUE_POLL_S more to start.
        page._queue.sleep_when_free, page._queue.progress_update_sleep_when_free = QUEUE_POLL_S, 5 * QUEUE_POLL_S
        # show_error=False: an exception's text (SQL parameters hold model names) never
        # reaches the page; handlers show their own generic message and log the details.
        gr.mount_gradio_app(app, page, path=path, footer_links=[], run_history=False, css=CSS,
                            theme=THEME, show_error=False, max_file_size=arena.config.max_body_bytes)
    app.add_middleware(SessionCookie, arena=arena)
    app.add_middleware(StreamTracker, listeners=listeners)
    app.add_middleware(EventLimit, arena=arena, pages={path.rstrip("/") or "/": page for path, page in pages})
    app.add_middleware(BodyLimit, max_bytes=arena.config.max_body_bytes)
    # Outermost: a request over its address's budget is refused before any other work; page
    # traffic waits for a place (arena.limits.Admission), voters' requests do not.
    app.add_middleware(RequestLimit, limits=arena.limits,
                       address=lambda scope: api.request_address(arena, Request(scope)),
                       priority=lambda scope: goes_first(arena, scope), stream=is_stream, asset=is_asset)
    return app
