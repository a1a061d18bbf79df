"""A client for any OpenAI-compatible server (vLLM, TGI, SGLang, or our ``arena.model_server``).

Named ``openai:http://host:8000/v1#model-name``. Several replicas of one model are named
``openai:http://h1:8000/v1,http://h2:8000/v1#model-name`` (or given as ``endpoints=``):
each request goes to the endpoint with the fewest requests in flight; 429 and 5xx are
retried with exponential backoff and jitter (``Retry-After`` honoured); an endpoint that
stops answering (refused or broken connection, timeout) is set aside for a cool-down that
doubles while it stays dead, and its requests go to the others. A router in front of the
replicas (vLLM's or SGLang's router, nginx) is simply one endpoint.

Chat completions with and without streaming, and candidate log-probabilities through
``/completions`` with ``echo``. The judge chat is rendered client-side for that:
``template="plain"`` (Question/Answer text) or a local tokenizer folder holding the
model's chat template (e.g. the ``hf:`` folder ``pairlab.prepare`` writes).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from pairlab.backends.base import BackendError, Completion, GenerationParams, Model, Prompt

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
# Generous: a busy GPU server answering 429 for a minute should slow a run, not end it.
DEFAULT_RETRIES = 8
MAX_BACKOFF_S = 30.0
MAX_SET_ASIDE_S = 60.0


def parse_source(source: str) -> tuple[list[str], str]:
    """``openai:URL[,URL...]#NAME`` -> (base URLs, model name)."""
    rest = source.split(":", 1)[1] if source.startswith("openai:") else source
    bases, sep, name = rest.partition("#")
    urls = [u.strip().rstrip("/") for u in bases.split(",") if u.strip()]
    if not sep or not name or not urls or not all(u.startswith(("http://", "https://")) for u in urls):
        raise BackendError(f"an openai model is named openai:http://host:port/v1#model-name, got {source!r}")
    return urls, name


def backoff_delay(attempt: int, base: float, retry_after: float | None = None, rng=random) -> float:
    """Exponential backoff with "equal jitter": half the step fixed, half random, so a crowd of
    clients that failed together does not come back together. A server's Retry-After wins."""
    if retry_after is not None:
        return min(retry_after, MAX_BACKOFF_S)
    step = min(MAX_BACKOFF_S, base * 2 ** attempt)
    return step / 2 + rng.uniform(0, step / 2)


# Threads per HTTP client: one client shared by hundreds of threads serialises them on its
# connection pool's lock, whose bookkeeping grows with its connections (measured: 256 threads
# on one client cost 5x the CPU of 64, and ran slower than 64); more clients split the load.
THREADS_PER_CLIENT = 32


class Endpoint:
    """One server of the pool, with the bookkeeping load spreading and set-asides need."""

    def __init__(self, url: str, clients: list[httpx.Client]):
        self.url, self.clients = url, clients
        self.in_flight = 0
        self.requests = 0
        self.failures = 0
        self.set_asides = 0
        self.down_until = 0.0
        self.cool_down = 0.0
        self.last_error: str | None = None

    @property
    def client(self) -> httpx.Client:
        return self.clients[threading.get_ident() % len(self.clients)]

    def describe(self) -> dict:
        return {"url": self.url, "requests": self.requests, "failures": self.failures,
                "set_asides": self.set_asides, "last_error": self.last_error}


class EndpointPool:
    """Replicas of one model. Thread-safe: a run's workers share it."""

    def __init__(self, urls: Sequence[str], *, api_key: str | None = None, timeout: float = 120.0,
                 retries: int = DEFAULT_RETRIES, backoff: float = 0.5, set_aside: float = 2.0,
                 concurrency: int = 8):
        if not urls:
            raise BackendError("an openai model needs at least one endpoint URL")
        key = api_key or os.environ.get("OPENAI_API_KEY", "EMPTY")
        # No cap on connections: the caller's in-flight limit is the one bound.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        headers = {"Authorization": f"Bearer {key}"}
        self.endpoints = [Endpoint(u, [httpx.Client(base_url=u, timeout=timeout, limits=limits, headers=headers)
                                       for _ in range(max(1, -(-concurrency // THREADS_PER_CLIENT)))])
                          for u in dict.fromkeys(urls)]
        self.retries, self.backoff, self.set_aside_s = retries, backoff, set_aside
        self._lock = threading.Lock()
        self._rng = random.Random()

    def _pick(self, avoid: Endpoint | None, probe: bool = False) -> Endpoint | None:
        """The live endpoint with the fewest requests in flight (ties: the least used); None when
        all are set aside. ``probe``: the one due back first, set aside or not."""
        with self._lock:
            now = time.monotonic()
            if probe:
                live = [min(self.endpoints, key=lambda e: e.down_until)]
            else:
                # One returning from a set-aside gets a single probe request until it answers again.
                live = [e for e in self.endpoints if e.down_until <= now and (e.cool_down == 0 or e.in_flight == 0)]
            if avoid is not None and len(live) > 1:
                live = [e for e in live if e is not avoid] or live
            if not live:
                return None
            best = min(live, key=lambda e: (e.in_flight, e.requests))
            best.in_flight += 1
            best.requests += 1
            return best

    def _release(self, endpoint: Endpoint, ok: bool, error: str | None = None, dead: bool = False) -> None:
        with self._lock:
            endpoint.in_flight -= 1
            if ok:
                endpoint.cool_down = 0.0
                return
            endpoint.failures += 1
            endpoint.last_error = error
            if dead and endpoint.down_until <= time.monotonic():
                endpoint.cool_down = min(MAX_SET_ASIDE_S, max(self.set_aside_s, endpoint.cool_down * 2))
                endpoint.down_until = time.monotonic() + endpoint.cool_down
                endpoint.set_asides += 1

    def pick(self) -> Endpoint:
        """The least-loaded live endpoint for one request (the first due back when all are set
        aside); give it back with ``_release``."""
        return self._pick(None) or self._pick(None, probe=True)

    def post(self, path: str, body: dict) -> dict:
        """POST to some live endpoint; the answer's JSON. Raises BackendError once retries are spent
        or on a refusal that retrying cannot fix (4xx other than 408/409/429)."""
        waits = 0  # backoff sleeps so far; a hop to another live endpoint costs none
        tries = 0
        probe = False
        previous: Endpoint | None = None
        errors: list[str] = []
        while True:
            endpoint = self._pick(previous, probe)
            if endpoint is None:  # every endpoint set aside: back off, then probe the first due back
                if waits >= self.retries:
                    raise BackendError(f"{path} failed after {tries} tries: {'; '.join(errors[-2:])}")
                time.sleep(backoff_delay(waits, self.backoff, rng=self._rng))
                waits += 1
                probe = True
                continue
            probe = False
            tries += 1
            retry_after = None
            try:
                response = endpoint.client.post(path, json=body)
            except httpx.TransportError as exc:
                error = f"{endpoint.url}{path}: {type(exc).__name__}: {exc}"
                self._release(endpoint, ok=False, error=error, dead=True)
                errors.append(error)
                previous = endpoint
                continue  # straight to another live endpoint; none live means a backoff above
            if response.status_code not in RETRY_STATUS:
                self._release(endpoint, ok=response.status_code < 400)
                if response.status_code >= 400:
                    raise BackendError(f"{endpoint.url}{path}: HTTP {response.status_code}: {response.text[:300]}")
                return response.json()
            error = f"{endpoint.url}{path}: HTTP {response.status_code}: {response.text[:200]}"
            self._release(endpoint, ok=False, error=error)
            errors.append(error)
            try:
                retry_after = float(response.headers["retry-after"])
            except (KeyError, ValueError):
                pass
            if waits >= self.retries:
                raise BackendError(f"{path} failed after {tries} tries: {error}")
            previous = endpoint
            time.sleep(backoff_delay(waits, self.backoff, retry_after, self._rng))
            waits += 1

    def check(self, name: str) -> list[str]:
        """Ask every endpoint for its models: set aside those that do not answer; raise when none
        does. Returns warnings (an endpoint down, the model not listed)."""
        warnings, alive = [], 0
        for endpoint in self.endpoints:
            try:
                response = endpoint.client.get("/models", timeout=10.0)
                response.raise_for_status()
                served = [m.get("id") for m in response.json().get("data", [])]
            except (httpx.HTTPError, ValueError, AttributeError) as exc:
                endpoint.last_error = f"{type(exc).__name__}: {exc}"
                endpoint.down_until = time.monotonic() + self.set_aside_s
                endpoint.set_asides += 1
                warnings.append(f"{endpoint.url} does not answer ({endpoint.last_error}); set aside for now")
                continue
            alive += 1
            if served and name not in served:
                warnings.append(f"{endpoint.url} serves {', '.join(map(str, served))}, not {name!r}")
        if not alive:
            raise BackendError("no endpoint answers: " + "; ".join(warnings))
        return warnings

    def describe(self) -> list[dict]:
        return [e.describe() for e in self.endpoints]

    def close(self) -> None:
        for e in self.endpoints:
            for client in e.clients:
                client.close()


class OpenAIModel(Model):
    backend = "openai"

    def __init__(self, model_id: str, base_url: str | Sequence[str], name: str, *, api_key: str | None = None,
                 timeout: float = 120.0, retries: int = DEFAULT_RETRIES, concurrency: int = 8,
                 backoff: float = 0.5, family: str | None = None, endpoints: Sequence[str] = (),
                 template: str | None = None):
        self.id = model_id
        self.name = name
        self.family = family
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        self.pool = EndpointPool([*urls, *endpoints], api_key=api_key, timeout=timeout, retries=retries,
                                 backoff=backoff, concurrency=concurrency)
        self.base_url = self.pool.endpoints[0].url
        self.concurrency = concurrency
        self.template_source = template
        self._tokenizer = None
        self._template = None
        if template and template not in ("plain", "chat"):
            self._tokenizer = _load_tokenizer(template)
            self._template = "chat"
        elif template == "plain":
            self._template = "plain"

    @classmethod
    def from_spec(cls, spec, **kwargs) -> OpenAIModel:
        urls, name = parse_source(spec.source)
        kwargs.setdefault("template", spec.template if spec.template == "plain" else None)
        return cls(spec.id, urls, name, family=spec.family, **kwargs)

    # -- HTTP -------------------------------------------------------------------------
    def _post(self, path: str, body: dict) -> dict:
        return self.pool.post(path, body)

    def check(self) -> list[str]:
        """Raise BackendError when no endpoint answers; warnings for the rest."""
        return self.pool.check(self.name)

    def _chat_body(self, prompt: Prompt, params: GenerationParams, **extra) -> dict:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        body = {
            "model": self.name,
            "messages": messages,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        body.update(extra)
        return body

    def _map(self, fn: Callable, items: Sequence) -> list:
        # One item: asked in the caller's thread, so a caller that bounds its own in-flight
        # requests (judges.run --concurrency) gets exactly that bound.
        if len(items) <= 1 or self.concurrency <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    # -- Model interface ------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        if isinstance(prompt, str):
            return prompt
        if self._template == "plain":
            from pairlab.backends.chat import plain_template

            return plain_template(prompt)
        if self._tokenizer is not None:
            return self._tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        raise BackendError(
            f"{self.id} is an openai: server, whose chat template this client cannot see, so logprob mode "
            "cannot render the judge prompt; pass --chat-template DIR (a local folder with the judge's "
            "tokenizer, e.g. its hf: folder) or --chat-template plain, or use --mode generate"
        )

    def _one(self, prompt: Prompt, params: GenerationParams, logprobs: bool) -> Completion:
        extra = {"logprobs": True, "top_logprobs": 5} if logprobs else {}
        data = self._post("/chat/completions", self._chat_body(prompt, params, **extra))
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"{self.base_url}/chat/completions gave no choice: {str(data)[:200]}") from None
        meta = {}
        if choice.get("logprobs"):
            meta["logprobs"] = choice["logprobs"]
        # Reasoning servers (vLLM/SGLang reasoning parsers) return the trace apart from the answer.
        reasoning = choice["message"].get("reasoning_content") or choice["message"].get("reasoning")
        if reasoning:
            meta["reasoning"] = reasoning
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            n_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
            meta=meta,
        )

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams,
                 logprobs: bool = False) -> list[Completion]:
        return self._map(lambda p: self._one(p, params, logprobs), list(prompts))

    def stream(self, prompt: Prompt, params: GenerationParams) -> Iterator[str]:
        """Streamed from the endpoint with the fewest requests in flight (FastChat's rule)."""
        body = self._chat_body(prompt, params, stream=True)
        endpoint = self.pool.pick()
        ok, dead, error = False, False, None
        try:
            with endpoint.client.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    error = f"{endpoint.url}/chat/completions: HTTP {response.status_code}: {response.text[:300]}"
                    raise BackendError(error)
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        break
                    delta = json.loads(payload)["choices"][0].get("delta", {})
                    if delta.get("content"):
                        yield delta["content"]
            ok = True
        except GeneratorExit:  # the consumer stopped reading: not the endpoint's fault
            ok = True
            raise
        except httpx.TransportError as exc:
            error, dead = f"{endpoint.url}: stream broke off: {exc}", True
            raise BackendError(error) from exc
        finally:
            self.pool._release(endpoint, ok, error, dead)

    def score(self, contexts: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        """Candidate log-probabilities from ``/completions`` with ``echo`` (vLLM supports it):
        the prompt is context + candidate and we sum the logprobs of the candidate's tokens.
        One context: its candidates are asked one after another in the caller's thread."""
        def one(job: tuple[str, str]) -> float:
            context, candidate = job
            data = self._post("/completions", {
                "model": self.name, "prompt": context + candidate, "max_tokens": 0,
                "echo": True, "logprobs": 0, "temperature": 0.0,
            })
            lp = (data.get("choices") or [{}])[0].get("logprobs") or {}
            offsets, values = lp.get("text_offset"), lp.get("token_logprobs")
            if offsets is None or values is None:
                raise BackendError(f"{self.base_url} returned no prompt logprobs; it cannot serve logprob mode")
            return float(sum(v for o, v in zip(offsets, values) if o >= len(context) and v is not None))

        jobs = [(c, k) for c in contexts for k in candidates]
        if len(contexts) == 1:
            flat = [one(job) for job in jobs]
        else:
            flat = self._map(one, jobs)
        n = len(candidates)
        return [flat[i * n:(i + 1) * n] for i in range(len(contexts))]

    def list_models(self) -> list[str]:
        response = self.pool.endpoints[0].client.get("/models")
        response.raise_for_status()
        return [m["id"] for m in response.json()["data"]]

    def info(self) -> dict:
        out = {"id": self.id, "backend": self.backend, "base_url": self.base_url, "model": self.name,
               "family": self.family, "weights_sha256": None}
        if len(self.pool.endpoints) > 1:
            out["endpoints"] = [e.url for e in self.pool.endpoints]
        if self.template_source:
            out["chat_template"] = self.template_source
        return out

    def close(self) -> None:
        self.pool.close()


def _load_tokenizer(directory: str):
    if not os.path.isdir(directory):
        raise BackendError(f"--chat-template {directory}: not a folder (give a tokenizer folder, or 'plain')")
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(directory)
    except (OSError, ValueError) as exc:
        raise BackendError(f"--chat-template {directory}: no tokenizer there ({exc})") from None
    if not getattr(tokenizer, "chat_template", None):
        raise BackendError(f"--chat-template {directory}: the tokenizer there has no chat template; "
                           "use --chat-template plain")
    return tokenizer
