"""Serve a model over an OpenAI-compatible HTTP API, so GPU hosts can serve models to an
arena (or judges) running elsewhere.

    python -m arena.model_server --model smollm2-135m-instruct --port 8000

Routes: ``GET /v1/models``, ``POST /v1/chat/completions`` (with ``stream``), and
``POST /v1/completions`` (text generation, and ``echo`` with ``logprobs`` for scoring).

Requests are checked before any work: sampling settings in their ranges, ``n`` = 1 (one
choice is all this server makes), well-formed messages, at most 4 stop strings, and
caps on ``max_tokens`` and on prompt size; anything else is refused with 400/422. With
``--api-key`` (or ``PAIRLAB_SERVE_API_KEY``) every route wants ``Authorization: Bearer KEY``
(our OpenAI client sends ``OPENAI_API_KEY``).

Echo scoring runs the model over the whole prompt at once, so it is capped by tokens
(``--max-echo-tokens``), and a server that listens beyond localhost scores echoes only
for callers with the API key: without ``--api-key`` it refuses them (403).
"""

from __future__ import annotations

import argparse
import ipaddress
import itertools
import json
import os
import secrets
import time
import uuid
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field, StringConstraints

from arena.limits import BodyLimit
from pairlab.backends.base import GenerationParams, Model, PromptTooLong

API_KEY_ENV = "PAIRLAB_SERVE_API_KEY"
Stop = Annotated[str, StringConstraints(max_length=64)]


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Sampling(BaseModel):
    model: str
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    stop: Stop | list[Stop] | None = Field(default=None, max_length=4)
    n: int = Field(default=1, ge=1, le=1, description="this server makes one choice per request")


class ChatRequest(Sampling):
    messages: list[Message] = Field(min_length=1, max_length=256)
    max_tokens: int | None = Field(default=None, ge=0)
    stream: bool = False


class CompletionRequest(Sampling):
    prompt: str
    max_tokens: int = Field(default=16, ge=0)
    echo: bool = False
    logprobs: int | None = Field(default=None, ge=0, le=5)


def _params(req, default_max: int) -> GenerationParams:
    stop = (req.stop,) if isinstance(req.stop, str) else tuple(req.stop or ())
    return GenerationParams(
        max_new_tokens=default_max if req.max_tokens is None else req.max_tokens,
        temperature=req.temperature, top_p=req.top_p, seed=req.seed or 0, stop=stop,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: assume it is reachable from outside
        return False


def build_app(model: Model, default_max_tokens: int = 256, max_tokens_limit: int = 2048,
              max_prompt_chars: int = 100_000, api_key: str | None = None, max_echo_tokens: int = 4096,
              host: str = "127.0.0.1") -> FastAPI:
    """``host`` is the address the server listens on: beyond localhost, echo scoring
    needs ``api_key``."""
    echo_open = api_key is not None or _loopback(host)

    def authorised(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("authorization", "")
        if not secrets.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    app = FastAPI(title=f"pairlab serve: {model.id}", dependencies=[Depends(authorised)])
    # Room for the largest prompt (up to 4 bytes a character) plus the request's other fields.
    app.add_middleware(BodyLimit, max_bytes=4 * max_prompt_chars + 65_536)

    def check(req, prompt_chars: int) -> None:
        if req.model != model.id:
            raise HTTPException(404, f"model {req.model!r} is not served here; this server serves {model.id!r}")
        if (req.max_tokens or 0) > max_tokens_limit:
            raise HTTPException(400, f"max_tokens is {req.max_tokens}; this server allows at most {max_tokens_limit}")
        if prompt_chars > max_prompt_chars:
            raise HTTPException(400, f"the prompt has {prompt_chars} characters; this server allows {max_prompt_chars}")

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": model.id, "object": "model", "owned_by": "pairlab"}]}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest):
        check(req, sum(len(m.content) for m in req.messages))
        params = _params(req, min(default_max_tokens, max_tokens_limit))
        messages = [m.model_dump() for m in req.messages]
        created, rid = int(time.time()), f"chatcmpl-{uuid.uuid4().hex}"
        if req.stream:
            pieces = model.stream(messages, params)
            try:  # a request the model refuses (longer than its engine holds) is a 400, not a broken stream
                first = next(pieces, None)
            except PromptTooLong as exc:
                raise HTTPException(400, str(exc)) from None

            def chunk(delta: dict, finish: str | None) -> str:
                body = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model.id,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                return f"data: {json.dumps(body)}\n\n"

            def events() -> Iterator[str]:
                try:
                    yield chunk({"role": "assistant", "content": ""}, None)
                    for piece in itertools.chain([first] if first is not None else [], pieces):
                        yield chunk({"content": piece}, None)  # each piece goes out as it is decoded
                    yield chunk({}, "stop")
                    yield "data: [DONE]\n\n"
                finally:  # a client that left: the engine drops its request
                    pieces.close()
            return StreamingResponse(events(), media_type="text/event-stream")
        done = model.generate([messages], params)[0]
        prompt_tokens = len(model.tokenizer(model.render(messages)).input_ids) if hasattr(model, "tokenizer") else 0
        return {
            "id": rid, "object": "chat.completion", "created": created, "model": model.id,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": done.text},
                         "finish_reason": done.finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": done.n_tokens,
                      "total_tokens": prompt_tokens + done.n_tokens},
        }

    @app.post("/v1/completions")
    def completions(req: CompletionRequest):
        check(req, len(req.prompt))
        text, logprobs = "", None
        if req.echo:
            if not echo_open:
                raise HTTPException(403, "echo scoring needs an API key on a server that listens beyond "
                                         "localhost; start it with --api-key")
            if not hasattr(model, "prompt_logprobs"):
                raise HTTPException(400, "echo is not supported by this backend")
            try:
                tokens = model.prompt_logprobs(req.prompt, max_tokens=max_echo_tokens)
            except PromptTooLong as exc:
                raise HTTPException(400, f"{exc} (echo)") from None
            text = req.prompt
            logprobs = {"tokens": [t for t, _, _ in tokens], "text_offset": [o for _, o, _ in tokens],
                        "token_logprobs": [v for _, _, v in tokens]}
        finish = "length"
        if req.max_tokens > 0:
            done = model.generate([req.prompt], _params(req, req.max_tokens))[0]
            text += done.text
            finish = done.finish_reason
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": model.id,
                "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}]}

    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.model_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model id or name, e.g. smollm2-135m-instruct or hf:/dir")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=256, help="default max_tokens when a request names none")
    parser.add_argument("--max-tokens-limit", type=int, default=2048,
                        help="largest max_tokens a request may ask for (default: %(default)s)")
    parser.add_argument("--max-prompt-chars", type=int, default=100_000,
                        help="largest prompt, in characters over all messages (default: %(default)s)")
    parser.add_argument("--max-echo-tokens", type=int, default=4096,
                        help="largest prompt, in tokens, that echo scoring runs on (default: %(default)s)")
    parser.add_argument("--api-key", default=os.environ.get(API_KEY_ENV),
                        help=f"require 'Authorization: Bearer KEY' on every route (default: ${API_KEY_ENV}; "
                             "none: open to anyone who can reach the port)")
    parser.add_argument("--engine", choices=("continuous", "generate"), default="continuous",
                        help="continuous: concurrent requests share one batching engine (on a GPU, with CUDA "
                             "graphs: this process holds one model); generate: a generate() loop per request "
                             "(default: %(default)s)")
    parser.add_argument("--max-inflight", type=int,
                        help="requests the engine batches at once; more wait in its queue "
                             "(default: 64 on a GPU, 8 on CPU)")
    args = parser.parse_args(argv)

    import uvicorn

    from pairlab.models import get_model

    from pairlab.backends.hf import torch_gpu

    inflight = args.max_inflight or (64 if torch_gpu() else 8)
    model = get_model(args.model, backend="transformers", engine=args.engine, max_inflight=inflight)
    print(f"serving {model.id} on http://{args.host}:{args.port}/v1", flush=True)
    app = build_app(model, args.max_tokens, args.max_tokens_limit, args.max_prompt_chars, args.api_key,
                    args.max_echo_tokens, args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
