"""The HTTP API beside the UI: prompt-set battles and votes, for scripts and load tests.

Same rules as the UI, through the same :class:`~arena.battles.Arena` and so the same
single write path. The session is an HttpOnly cookie the server issues and signs with
the first battle (a cookie it did not sign is ignored); a vote must carry the cookie of
the session the battle was served to. Errors other than refusals answer a generic 500:
their text (SQL parameters, model names) goes to the log only.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from arena.battles import Arena
from arena.errors import Refused, UnknownBattle
from arena.limits import client_address
from arena.sessions import SESSION_COOKIE, Voter

PREFIX = "/arena-api"
GENERIC_ERROR = "Something went wrong on the server; nothing was stored. Try again or start a new round."
log = logging.getLogger(__name__)


def request_address(arena: Arena, request) -> str | None:
    """The client's address for its limits (a FastAPI or Gradio request)."""
    peer = request.client.host if request.client else None
    return client_address(peer, request.headers.get("x-forwarded-for"), arena.config.trusted_proxies)


def logged_in(arena: Arena, request) -> str | None:
    """The user an authenticating proxy names in ``voter_header``; only a trusted proxy's word counts."""
    header = arena.config.voter_header
    peer = request.client.host if request.client else None
    if not header or peer not in arena.config.trusted_proxies:
        return None
    return request.headers.get(header) or None


def request_voter(arena: Arena, request, response: Response | None = None, tab: str = "") -> Voter:
    """The request's voter: a logged-in user, its signed session, or (with ``response``)
    a new session set as cookie."""
    address = request_address(arena, request)
    user = logged_in(arena, request)
    if user:
        return Voter(f"user:{user}", address, tab, authenticated=True)
    token = arena.sessions.verify(request.cookies.get(SESSION_COOKIE))
    if token is None:
        if response is None:
            raise UnknownBattle("This battle was not served to you; start a new round.")
        token = arena.new_session(address)
        set_session_cookie(response, token)
    return Voter(token, address, tab)


def set_session_cookie(response: Response, token: str) -> None:
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict", max_age=30 * 86400)


class VoteIn(BaseModel):
    battle_id: str
    choice: str  # a | b | tie | bothbad


def api_router(arena: Arena) -> APIRouter:
    router = APIRouter(prefix=PREFIX)

    # Plain `def` handlers: FastAPI runs them in its thread pool, where waiting on the
    # store's writer does not block the event loop that also serves the UI.
    @router.post("/battles")
    def serve_pair(request: Request, response: Response) -> dict:
        """A prompt-set battle: the prompt and both answers, no model names."""
        battle = arena.serve_pair(request_voter(arena, request, response))
        turn = battle.turns[-1]
        return {"battle_id": battle.id, "prompt": turn.prompt,
                "response_a": turn.response_a, "response_b": turn.response_b}

    @router.post("/votes")
    def vote(body: VoteIn, request: Request) -> dict:
        """Store the vote; the answer reveals both models."""
        record = arena.vote(request_voter(arena, request), body.battle_id, body.choice)
        return {"stored": True, "battle_id": body.battle_id, "winner": record.winner,
                "model_a": record.model_a, "model_b": record.model_b}

    return router


def install(app: FastAPI, arena: Arena) -> None:
    app.include_router(api_router(arena))

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": GENERIC_ERROR}, status_code=500)
