"""A latency-simulating OpenAI-compatible judge, for the throughput bench and the fault tests.

    python tests/judge_sim.py --port 0 [--median 1.0] [--sigma 0.5] [--busy 2.0] [--think]

Each request is answered after a lognormal delay (median ``--median`` s, capped at
``--cap`` s), drawn from a hash of the request so the same judgment waits as long in
every run and for every client. Any number of requests are taken at once (up to
``--max-in-flight``, then 503); it listens on 127.0.0.1 only, and bodies over 1 MB are
refused. The verdict is a hash of the prompt too: ``[RESULT] A`` or ``[RESULT] B``
(``--think``: after a reasoning trace that names both). ``--busy S`` answers 429 to
everything for the first S seconds after the first request (a rate-limited server).
``/completions`` with ``echo`` scores whitespace-split tokens by hash (logprob mode).
``GET /stats`` gives requests, 429s and the largest number in flight at once
(``GET /stats/reset`` starts them again).

A simulated judge is right here: the bench measures how a client keeps requests in
flight, and the fault tests what it does when a server refuses; neither depends on what
a model would say.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path

MAX_BODY = 1 << 20


def _unit(text: str, salt: str) -> float:
    """A number in (0, 1) from a hash: the same text, the same number."""
    digest = hashlib.sha256(f"{salt}\x1f{text}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2 ** 64


def _normal(text: str) -> float:
    u1, u2 = _unit(text, "u1"), _unit(text, "u2")
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


class Judge:
    def __init__(self, median: float, sigma: float, cap: float, busy: float, think: bool, max_in_flight: int):
        self.median, self.sigma, self.cap, self.busy, self.think = median, sigma, cap, busy, think
        self.max_in_flight = max_in_flight
        self.in_flight = self.peak = self.requests = self.refused = 0
        self.first: float | None = None

    def delay(self, key: str) -> float:
        return min(self.cap, self.median * math.exp(self.sigma * _normal(key)))

    def answer(self, path: str, body: dict) -> dict:
        if path.endswith("/chat/completions"):
            messages = body.get("messages") or []
            text = messages[-1].get("content", "") if messages else ""
            label = "A" if _unit(text, "verdict") < 0.5 else "B"
            content = f"Both answers were weighed. [RESULT] {label}"
            if self.think:
                content = f"<think>Maybe [RESULT] A? Or [RESULT] B? Let me weigh them.</think>\n{content}"
            return {"id": "sim", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 12, "total_tokens": 12}}
        prompt = body.get("prompt", "")
        tokens, offsets, values, pos = [], [], [], 0
        for piece in prompt.split(" "):
            tokens.append(piece)
            offsets.append(pos)
            values.append(None if pos == 0 else -5 * _unit(prompt[:pos + len(piece)], "lp"))
            pos += len(piece) + 1
        return {"id": "sim", "object": "text_completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "text": prompt, "finish_reason": "length",
                             "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": values}}]}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"]
                await send({"type": kind + ".complete"})
                if kind == "lifespan.shutdown":
                    return
        chunks, size = [], 0
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_BODY:
                return await _reply(send, 413, {"error": "body too large"})
            if not message.get("more_body"):
                break
        path = scope["path"]
        if scope["method"] == "GET":
            if path.endswith("/stats/reset"):
                self.peak = self.in_flight
                self.requests = self.refused = 0
                return await _reply(send, 200, {"reset": True})
            if path.endswith("/models"):
                return await _reply(send, 200, {"object": "list", "data": [{"id": "sim-judge", "object": "model"}]})
            return await _reply(send, 200, {"requests": self.requests, "refused_429": self.refused,
                                            "max_in_flight": self.peak, "in_flight": self.in_flight})
        self.requests += 1
        now = time.monotonic()
        self.first = self.first if self.first is not None else now
        if now - self.first < self.busy:
            self.refused += 1
            return await _reply(send, 429, {"error": {"message": "rate limited, slow down"}})
        if self.in_flight >= self.max_in_flight:
            return await _reply(send, 503, {"error": {"message": "too many requests in flight"}})
        raw = b"".join(chunks)
        try:
            body = json.loads(raw)
        except ValueError:
            return await _reply(send, 400, {"error": "bad json"})
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay(json.dumps(body.get("messages") or body.get("prompt"), sort_keys=True)))
        finally:
            self.in_flight -= 1
        await _reply(send, 200, self.answer(path, body))


async def _reply(send, status: int, data: dict) -> None:
    payload = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/judge_sim.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--median", type=float, default=1.0, help="median latency, s")
    parser.add_argument("--sigma", type=float, default=0.5, help="lognormal sigma")
    parser.add_argument("--cap", type=float, default=6.0, help="longest latency, s")
    parser.add_argument("--busy", type=float, default=0.0, help="answer 429 for this long after the first request")
    parser.add_argument("--think", action="store_true", help="put a reasoning trace before the verdict")
    parser.add_argument("--max-in-flight", type=int, default=4096)
    args = parser.parse_args(argv)
    import socket

    import uvicorn

    port = args.port
    if port == 0:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    app = Judge(args.median, args.sigma, args.cap, args.busy, args.think, args.max_in_flight)
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=4096, timeout_keep_alive=30,
                lifespan="on")
    return 0


@contextlib.contextmanager
def sim_server(*args: str):
    """Start the simulated judge in its own process; yields its base URL."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"judge_sim did not start (exit {proc.poll()})")
        from support import answers, wait_until

        wait_until(answers(url + "/models", proc), 30, what="the simulated judge to answer")
        yield url
    finally:
        proc.kill()
        proc.wait()


def stats(url: str, reset: bool = False) -> dict:
    import httpx

    return httpx.get(url + ("/stats/reset" if reset else "/stats"), timeout=10).json()


if __name__ == "__main__":
    raise SystemExit(main())
