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
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
from collections.abc import Iterator, Sequence

import torch
from transformers import GenerationConfig, LogitsProcessorList
from transformers.generation.configuration_utils import ContinuousBatchingConfig
from transformers.generation.continuous_batching.cb_logits_processors import (
    ContinuousBatchingLogitsProcessor, ContinuousBatchingLogitsProcessorList)

from pairlab.backends.base import BackendError, GenerationParams

# Tokens of KV cache a request is given on average (the engine's pages are shared: a long
# request takes more, the scheduler waits when they run out), and the page size.
TOKENS_PER_REQUEST = 1024
PAGE_TOKENS = 256
SEED_GUARANTEE = ("the seed fixes each request's random draws whatever else is batched with it; the logits they "
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
        eos = model.generation_config.eos_token_id
        eos = eos if eos is not None else tokenizer.eos_token_id
        self.eos = list(eos) if isinstance(eos, (list, tuple)) else [eos]

    def _start(self):
        with self._lock:
            if self._manager is not None:
                return self._manager
            config = ContinuousBatchingConfig(
                max_requests_per_batch=self.max_inflight, page_size=PAGE_TOKENS, seed=0,
                num_blocks=math.ceil(self.max_inflight * TOKENS_PER_REQUEST / PAGE_TOKENS) + 8)
            generation = GenerationConfig(do_sample=False, eos_token_id=self.eos,
                                          pad_token_id=self.tokenizer.pad_token_id)
            if self.model.device.type == "cpu":
                # One loop thread per model: with torch's default of a thread per core, two
                # models' loops on a small machine wait on each other's OpenMP barriers and
                # decode several times slower than with one thread each.
                torch.set_num_threads(1)
            manager = self.model.init_continuous_batching(generation_config=generation,
                                                          continuous_batching_config=config)
            # The manager builds its processors from the generation config (none: greedy); the
            # seeded draw is added before its loop starts, the one place it reads them.
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
        (end of sequence or ``max_new_tokens``). Closing the iterator cancels the request."""
        manager = self._start()
        key = next(self._keys)
        request_id = f"r{key}"
        route: queue.Queue = queue.Queue()
        self._routes[request_id] = route
        extra = {}
        if not params.greedy:
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
        with self._lock:
            if self._manager is not None:
                self._manager.stop(block=True)
                self._manager = None
