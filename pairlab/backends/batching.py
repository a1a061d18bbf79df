"""One continuous-batching engine per transformers model: transformers' own
``ContinuousBatchingManager`` (paged KV cache, its scheduler), shared by every stream.

Every visitor's request joins the engine's running batch, so concurrent streams decode in one
forward pass per step instead of one ``generate()`` loop each; each request still streams on
its own. The scheduling is the library's; this module only routes each request's outputs to its
caller and keeps the seeded sampling.

Seeds. The manager's own sampling draws every row of a batch from torch's global generator
(one seed for the whole engine), so a request's draws would depend on what else was in the
batch. Here the engine decodes greedily and a per-request processor makes the draw: the request's
own :class:`~pairlab.backends.hf._SeededSampler` (temperature, top-p, then a draw from a generator
seeded with the request's seed), the same draws the per-request path makes. What the seed fixes:
the random numbers of a request, whatever else runs beside it. What it does not fix: the logits
they are applied to, which are float sums whose order depends on the batch's shape (paged
attention over the batch's other rows, CPU thread count, GPU kernels); a token whose probability
sits on a draw's boundary can then differ, and the text after it. Replaying a seed alone
reproduces the shown answer when the logits come out the same (typically on CPU, one request
alone), not bit for bit under every batch.

On a GPU the engine replays each decode step as a captured CUDA graph, which a per-request
generator (a host-side loop over rows) cannot run inside. There the draw is counter-based, as
vLLM's seeded sampler draws from (seed + position): temperature and top-p are the library's own
per-request processors, and the draw is Gumbel-max over uniforms hashed from (seed, the token's
position in the answer, token id), so it has no state and no row depends on another. The seed's
guarantee is the same; the draws themselves differ from the CPU's generator draws.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
import weakref
from collections.abc import Iterator, Sequence

import torch
from transformers import GenerationConfig, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper
from transformers.generation.configuration_utils import ContinuousBatchingConfig
from transformers.generation.continuous_batching.cb_logits_processors import (
    ContinuousBatchingLogitsProcessor, ContinuousBatchingLogitsProcessorList,
    ContinuousBatchingTemperatureLogitsWarper, ContinuousBatchingTopPLogitsWarper)

from pairlab.backends.base import BackendError, GenerationParams, PromptTooLong

# Tokens of KV cache a request is given on average (the engine's pages are shared: a long
# request takes more, the scheduler waits when they run out), and the page size.
TOKENS_PER_REQUEST = 1024
PAGE_TOKENS = 256
# Tokens one step may feed the model on CPU (longer prefills go in chunks). The library's
# default, 8,192, sizes its step buffers and attention masks for that many: an app process with
# the two embedded models then held 8 GB, 3.7 GB with this. On a GPU the library sizes them
# from the card's free memory.
CPU_STEP_TOKENS = 1024
# Keys and values a captured decode step reads, padded up to a multiple of this (a graph per
# size). The library pads to 16,384 tokens so that few graphs are captured; under a mask that
# has every step attend over that many slots, whatever the batch holds (one arena request: about
# 150 tokens). One request's share of the cache keeps a graph per request-length of cache read.
GRAPH_KV_TOKENS = TOKENS_PER_REQUEST
SEED_GUARANTEE = ("the seed fixes each request's random draws whatever else is batched with it (on CPU a generator "
                  "of the request's own, on a GPU a hash of the seed and each token's position); the logits they "
                  "apply to may differ in their last bits with the batch's shape, so a replay reproduces the text "
                  "only where those logits come out the same")


class _SeededRows(ContinuousBatchingLogitsProcessor):
    """Per-request seeded sampling inside the engine's batch: row r is drawn by the sampler of
    the request it belongs to (the key the request was added with), other rows stay greedy."""

    supported_kwargs = {"sampler": int}
    ignored_kwargs = ()

    def __init__(self) -> None:
        self.samplers: dict[int, object] = {}

    def fill_defaults(self, int32_tensor: torch.Tensor) -> None:
        int32_tensor.fill_(-1)

    def prepare_tensor_args(self, requests_with_new_token) -> torch.Tensor:
        keys = [r.state.logit_processor_kwargs.get("sampler", -1) for r in requests_with_new_token]
        return torch.tensor(keys, dtype=torch.int32)

    def __call__(self, scores: torch.Tensor, tensor_arg: torch.Tensor) -> torch.Tensor:
        keys = tensor_arg[: scores.size(0)].tolist()
        for row, key in enumerate(keys):
            sampler = self.samplers.get(key)
            if sampler is not None:  # gone: the request ended or was cancelled, its row is dropped
                scores[row:row + 1] = sampler(None, scores[row:row + 1])
        return scores


M32 = 0xFFFFFFFF


def _mix32(x):
    """A 32-bit integer hash (Wellons' two-multiply xorshift form), for Python ints and int64
    tensors alike. Multipliers under 2**31 keep every product of a 32-bit value inside int64."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & M32
    x = x ^ (x >> 15)
    x = (x * 0x2C1B3C6D) & M32
    return x ^ (x >> 16)


def draw_key(seed: int, position: int) -> int:
    """The key of one draw: a request's seed and the position in its answer of the token drawn,
    as a non-negative int32 (a row's key of -1 means no draw: greedy)."""
    return _mix32((seed & M32) ^ _mix32((position * 0x9E3779B1 + 1) & M32)) & 0x7FFFFFFF


def gumbel_noise(keys: torch.Tensor, vocab: int) -> torch.Tensor:
    """Standard Gumbel noise of shape ``[len(keys), vocab]``, a function of (key, token id) alone:
    ``argmax(scores + noise)`` is a draw from ``softmax(scores)``."""
    tokens = torch.arange(vocab, device=keys.device, dtype=torch.int64)
    x = _mix32(_mix32(keys.to(torch.int64) & M32).unsqueeze(-1) ^ ((tokens * 0x9E3779B1) & M32))
    uniform = ((x >> 8).to(torch.float32) + 0.5) * 2.0**-24  # 24 bits: exact in float32, never 0 or 1
    return -torch.log(-torch.log(uniform))


class _CountedDraws(ContinuousBatchingLogitsProcessor):
    """The seeded draw inside the engine's CUDA graph: each row's key (its request's seed and
    the answer position it draws) selects the row's Gumbel noise, added to the scores the
    library's temperature and top-p processors left; the engine's greedy step then picks the
    drawn token. Rows without a seed get no noise and stay greedy."""

    supported_kwargs = {"seed": int}
    ignored_kwargs = ()

    def fill_defaults(self, int32_tensor: torch.Tensor) -> None:
        int32_tensor.fill_(-1)

    def prepare_tensor_args(self, requests_with_new_token) -> torch.Tensor:
        keys = []
        for r in requests_with_new_token:
            seed = r.state.logit_processor_kwargs.get("seed")
            # Batching is synchronous (the engine's config says so): a request's generated tokens
            # are all known here, so their count is the position of the token this step draws.
            keys.append(-1 if seed is None else draw_key(seed, len(r.state.generated_tokens)))
        return torch.tensor(keys, dtype=torch.int32)

    def __call__(self, scores: torch.Tensor, tensor_arg: torch.Tensor) -> torch.Tensor:
        keys = tensor_arg[: scores.size(0)]
        noise = gumbel_noise(keys, scores.size(-1))
        return scores + torch.where(keys.unsqueeze(-1) >= 0, noise, 0.0)


def counted_processors() -> ContinuousBatchingLogitsProcessorList:
    """Per-request temperature, top-p (the library's) and the counted draw, in that order; a
    request without these kwargs is greedy (temperature 1, top-p 1, no draw)."""
    processors = ContinuousBatchingLogitsProcessorList(LogitsProcessorList([
        ContinuousBatchingTemperatureLogitsWarper(TemperatureLogitsWarper(1.0)),
        ContinuousBatchingTopPLogitsWarper(TopPLogitsWarper(1.0)),
        _CountedDraws()]))
    processors.tensors_required = 3  # the list counts only processors it converted itself
    return processors


# The engines on CUDA devices in this process. A graph capture on one engine's loop thread fails
# when another engine's thread runs eager work on the same GPU meanwhile ("operation not permitted
# when stream is capturing", seen on an H200 with two models' engines starting at once), so an
# engine captures graphs only when it is the one engine on its GPU: one model per process.
_CUDA_ENGINES: weakref.WeakSet = weakref.WeakSet()


class _Bfloat16Head(torch.nn.Module):
    """The output layer of an engine's model on a CPU that multiplies bfloat16 natively
    (AVX512-BF16, AMX), in bfloat16, its logits back in float32 for the sampler.

    A step's largest product is the one that scores every token of the vocabulary (Gemma 3:
    262,144 rows of 640 weights, 671 MB in float32, read once a step whatever the batch). oneDNN's
    bfloat16 kernel reads half the bytes and accumulates in float32; a logit moves by about
    1/256 of its size (the inputs' rounding), which a draw at temperature does not tell from the
    float32 one. The weights are a copy: the input embeddings they may be tied to stay float32, and
    so does the layer itself (``float32``), which scoring reads (log-probabilities are compared
    with other backends' to a thousandth, :func:`float32_head`).
    """

    def __init__(self, head: torch.nn.Linear):
        super().__init__()
        self.float32 = head
        self.register_buffer("weight", head.weight.detach().to(torch.bfloat16), persistent=False)
        self.bias = None if head.bias is None else head.bias.detach().to(torch.bfloat16)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden.to(torch.bfloat16), self.weight, self.bias).float()


def float32_head(model) -> torch.nn.Module:
    """The model's output layer in its own precision, whatever the engine generates with."""
    head = model.get_output_embeddings()
    return head.float32 if isinstance(head, _Bfloat16Head) else head


def engine_config(device_type: str, max_inflight: int, graphs: bool) -> ContinuousBatchingConfig:
    """The library's batching settings for an engine of ``max_inflight`` requests."""
    # Synchronous batching: the counted draw reads each request's generated tokens at the step
    # that draws (the asynchronous mode schedules a step before the last ends).
    return ContinuousBatchingConfig(
        max_requests_per_batch=max_inflight, page_size=PAGE_TOKENS, seed=0,
        max_batch_tokens=CPU_STEP_TOKENS if device_type == "cpu" else None,
        num_blocks=math.ceil(max_inflight * TOKENS_PER_REQUEST / PAGE_TOKENS) + 8,
        kv_padding_interval_size=GRAPH_KV_TOKENS if graphs else 0,
        use_cuda_graph=graphs, use_async_batching=False)


class BatchingEngine:
    """transformers' continuous batching for one loaded model; at most ``max_inflight``
    requests in its batch (the arena admits that many battles), the rest wait in its queue."""

    name = "transformers-continuous-batching"

    def __init__(self, model, tokenizer, max_inflight: int, sampler_factory):
        self.model = model
        self.tokenizer = tokenizer
        self.max_inflight = max_inflight
        self._sampler_factory = sampler_factory
        self._manager = None
        self._rows = _SeededRows()
        self._routes: dict[str, queue.Queue] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()
        # Decided when the engine starts: CUDA graphs (each step replays a captured graph, the
        # counted draw inside it) where this is the one engine on its GPU, eager steps otherwise.
        self.graphs: bool | None = None
        if model.device.type == "cuda":
            if any(e.graphs and e.model.device == model.device for e in _CUDA_ENGINES):
                raise BackendError(
                    f"a model on {model.device} already serves with CUDA graphs, which another model's engine "
                    "would break: load every model before the first request (they then share the GPU without "
                    "graphs), or serve each model in a process of its own (python -m arena.model_server)")
            _CUDA_ENGINES.add(self)
        eos = model.generation_config.eos_token_id
        eos = eos if eos is not None else tokenizer.eos_token_id
        self.eos = list(eos) if isinstance(eos, (list, tuple)) else [eos]

    @property
    def capacity(self) -> int:
        """Tokens one request may hold, its prompt and its answer: the cache holds that many for a
        request alone. A longer one could never be scheduled, and the library then stops its loop,
        failing every request in it and every one after."""
        return self.max_inflight * TOKENS_PER_REQUEST

    def alone_on_gpu(self) -> bool:
        return [e for e in _CUDA_ENGINES if e.model.device == self.model.device] == [self]

    def _start(self):
        with self._lock:
            if self._manager is not None:
                return self._manager
            if self.graphs is None:
                self.graphs = self.alone_on_gpu()
            config = engine_config(self.model.device.type, self.max_inflight, self.graphs)
            generation = GenerationConfig(do_sample=False, eos_token_id=self.eos,
                                          pad_token_id=self.tokenizer.pad_token_id)
            if self.model.device.type == "cpu":
                # One loop thread per model: with torch's default of a thread per core, two
                # models' loops on a small machine wait on each other's OpenMP barriers and
                # decode several times slower than with one thread each.
                torch.set_num_threads(1)
                head = self.model.get_output_embeddings()
                if head.weight.dtype == torch.float32 and torch.ops.mkldnn._is_mkldnn_bf16_supported():
                    self.model.set_output_embeddings(_Bfloat16Head(head))
            manager = self.model.init_continuous_batching(generation_config=generation,
                                                          continuous_batching_config=config)
            # The manager builds its processors from the generation config (none: greedy); the
            # seeded draw is added before its loop starts, the one place it reads them.
            if self.graphs:
                processors = counted_processors()
            else:
                processors = ContinuousBatchingLogitsProcessorList(LogitsProcessorList([self._rows]))
                processors.tensors_required = 1  # the list counts only processors it converted itself
            manager.logit_processor = processors
            # The loop thread is daemonic as the thread that starts it is: an engine never keeps
            # the process from exiting (its loop does not end on its own).
            starter = threading.Thread(target=manager.start, daemon=True)
            starter.start()
            starter.join()
            threading.Thread(target=self._route, args=(manager,), daemon=True, name="cb-router").start()
            self._manager = manager
            return manager

    def _route(self, manager) -> None:
        """Hand each output to its request's queue (the manager has one queue for all)."""
        while manager.is_running():
            out = manager.get_result(timeout=0.2)
            if out is not None and (q := self._routes.get(out.request_id)) is not None:
                q.put(out)
        error = manager.background_thread_status.fatal_error or "the engine stopped"
        for q in list(self._routes.values()):
            q.put(error)

    def stream(self, ids: Sequence[int], params: GenerationParams) -> Iterator[list[int]]:
        """The tokens generated so far, after each step of the engine, until the request ends
        (end of sequence or ``max_new_tokens``). Closing the iterator cancels the request; one
        longer than :attr:`capacity` raises :class:`PromptTooLong` before any work."""
        if len(ids) + params.max_new_tokens > self.capacity:
            raise PromptTooLong(f"the prompt has {len(ids)} tokens and may be answered with {params.max_new_tokens} "
                                f"more; this model's engine holds at most {self.capacity} tokens a request")
        manager = self._start()
        key = next(self._keys)
        request_id = f"r{key}"
        route: queue.Queue = queue.Queue()
        self._routes[request_id] = route
        extra = {}
        if not params.greedy and self.graphs:
            extra = {"temperature": float(params.temperature), "top_p": float(params.top_p), "seed": int(params.seed)}
        elif not params.greedy:
            self._rows.samplers[key] = self._sampler_factory(params)
            extra["sampler"] = key
        finished = False
        try:
            if manager.add_request(list(ids), request_id=request_id, max_new_tokens=params.max_new_tokens,
                                   streaming=True, eos_token_id=self.eos, **extra) is None:
                raise BackendError("the batching engine is not accepting requests (it stopped)")
            while not finished:
                out = route.get()
                if isinstance(out, (str, BaseException)):
                    raise BackendError(f"the batching engine failed: {out}")
                if out.error:
                    raise BackendError(f"the batching engine failed this request: {out.error}")
                finished = out.is_finished()
                yield list(out.generated_tokens)
        finally:
            if not finished:
                manager.cancel_request(request_id)
            self._routes.pop(request_id, None)
            self._rows.samplers.pop(key, None)

    def close(self) -> None:
        _CUDA_ENGINES.discard(self)
        with self._lock:
            if self._manager is not None:
                self._manager.stop(block=True)
                self._manager = None
