"""The HTTP API beside the UI: battles (open prompt or prompt set), follow-up turns and
votes, for scripts and load tests.

* ``POST /arena-api/battles`` with ``{"prompt": ...}``: two models drawn by the configured
  sampler answer; without a prompt, a prompt-set pair. Both answers, no model names.
* ``POST /arena-api/battles/{id}/turns`` with ``{"prompt": ...}``: a follow-up turn.
* ``POST /arena-api/votes`` with ``{"battle_id", "choice"}``: the vote reveals the names.
* ``GET /arena-api/status``: how many battles this process is generating and how many
  wait for a generation slot (what a client is refused or queued for anyway; no model names).

Same rules as the UI, through the same :class:`~arena.battles.Arena` and so the same
single write path. The session is an HttpOnly cookie the server issues and signs with
the first battle (a cookie it did not sign is ignored); a vote must carry the cookie of
the session the battle was served to. Errors other than refusals answer a generic 500:
their text (SQL parameters, model names) goes to the log only.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from pydantic import BaseModel

from arena.battles import Arena
from arena.errors import ModelFailed, Refused, UnknownBattle
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


class PromptIn(BaseModel):
    prompt: str | None = None


class VoteIn(BaseModel):
    battle_id: str
    choice: str  # a | b | tie | bothbad


def api_router(arena: Arena) -> APIRouter:
    router = APIRouter(prefix=PREFIX)

    # Cheap handlers are plain `def`s: FastAPI runs them in its thread pool, where waiting
    # on the store's writer does not block the event loop that also serves the UI. The
    # pool (40 threads) is shared with the pages, so a battle waits for its generation
    # slot on the event loop (arena.slots), holding no thread, and gives its place up
    # when its client hangs up.
    @router.post("/battles")
    async def serve_pair(request: Request, response: Response, body: PromptIn | None = None):
        """A battle on ``prompt`` (or a prompt-set pair without one): both answers, no model names."""
        new = arena.sessions.verify(request.cookies.get(SESSION_COOKIE)) is None
        voter = request_voter(arena, request, response)
        try:
            if body is not None and body.prompt is not None:
                battle = await generate(request, voter, lambda: arena.start(voter, body.prompt))
            else:
                battle = await run_in_threadpool(arena.serve_pair, voter)
        except Refused as exc:  # answered here, so a new session's cookie still reaches the voter
            refused = _refusal(exc)
            if new:
                set_session_cookie(refused, voter.token)
            return refused
        arena.limits.voting.mark(voter.token)
        return _shown(battle)

    @router.post("/battles/{battle_id}/turns")
    async def follow_up(battle_id: str, body: PromptIn, request: Request) -> dict:
        """Another user turn in an open-prompt battle; both models answer it."""
        voter = request_voter(arena, request)

        def begin():
            battle = arena.find(voter, battle_id)
            if battle.mode == "prompt_set":
                raise Refused("A prompt-set battle has one fixed turn; vote on it, or start a new one.")
            return arena.follow_up(voter, battle, body.prompt or "")
        shown = _shown(await generate(request, voter, begin))
        arena.limits.voting.mark(voter.token)
        return shown

    async def generate(request: Request, voter: Voter, begin):
        """Wait for a generation slot, then ``begin()`` the turn and answer it; stop when the client leaves."""
        slot = await arena.slots.wait(voter.token, voter.address, gone=request.is_disconnected)
        left = threading.Event()

        async def watch() -> None:
            while not left.is_set():
                await asyncio.sleep(0.5)
                if await request.is_disconnected():
                    left.set()

        watcher = asyncio.create_task(watch())
        try:
            battle = await run_in_threadpool(begin)
            return await run_in_threadpool(arena.answer, battle, slot, left)
        finally:
            left.set()  # also stops the models if this request was cancelled (shutdown)
            watcher.cancel()
            arena.slots.release(slot)  # a no-op once the stream gave it back

    @router.get("/status")
    async def status(request: Request) -> dict:
        """Battles holding a generation slot and battles waiting for one, on this process; to a
        caller whose battle waits for admission, also its ``place`` in line (1: next)."""
        generating, waiting = arena.slots.counts()
        answer = {"generating": generating, "waiting": waiting}
        try:
            place = arena.slots.place(request_voter(arena, request).token)
        except UnknownBattle:  # no session: nothing of its waits
            place = None
        if place is not None:
            answer["place"] = place
        return answer

    @router.post("/votes")
    def vote(body: VoteIn, request: Request) -> dict:
        """Store the vote; the answer reveals both models."""
        voter = request_voter(arena, request)
        record = arena.vote(voter, body.battle_id, body.choice)
        arena.limits.voting.mark(voter.token)
        return {"stored": True, "battle_id": body.battle_id, "winner": record.winner,
                "model_a": record.model_a, "model_b": record.model_b}

    return router


def _refusal(exc: Refused) -> JSONResponse:
    body = {"error": str(exc)}
    if isinstance(exc, ModelFailed):  # the failed battle exists; say which, so a client can see it is closed
        body["battle_id"] = exc.battle_id
    return JSONResponse(body, status_code=exc.status)


def _shown(battle) -> dict:
    turn = battle.turns[-1]
    return {"battle_id": battle.id, "turn": len(battle.turns), "prompt": turn.prompt,
            "response_a": turn.response_a, "response_b": turn.response_b}


def install(app: FastAPI, arena: Arena) -> None:
    app.include_router(api_router(arena))

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> JSONResponse:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"error": f"Malformed request ({where}); nothing was stored."}, status_code=422)

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        return _refusal(exc)

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": GENERIC_ERROR}, status_code=500)
