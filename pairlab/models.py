"""Model names -> loaded models: the one registry of model backends and model config.

A model is named by one string:

* an id from ``data/models.toml`` (``smollm2-135m-instruct``, ``gemma3-270m``),
* ``hf:/path/or/repo`` or ``gguf:/path/file.gguf`` (transformers backend),
* ``openai:http://host:8000/v1#model-name`` (any OpenAI-compatible server),
* ``vllm:org/name`` (vLLM: its offline engine for judging, its async engine for the arena's streams).

Heavy libraries are imported only when their backend is asked for.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cache

from pairlab.backends.base import ENGINES, BackendError, GenerationParams, Model
from pairlab.resources import data_file

DEFAULT_CONFIG = data_file("models.toml")
BACKENDS = ("transformers", "openai", "vllm")

# Known families by a substring of the model's name; used when config does not say.
_FAMILY_HINTS = (
    ("cerebras", "cerebras"),  # before "gpt-": Cerebras-GPT is not an OpenAI model
    ("smollm", "smollm"), ("gemma", "gemma"), ("llama", "llama"), ("mistral", "mistral"),
    ("mixtral", "mistral"), ("qwen", "qwen"), ("gpt-", "openai"), ("claude", "anthropic"),
    ("prometheus", "mistral"), ("pandalm", "llama"), ("vicuna", "llama"), ("alpaca", "llama"),
    ("bloom", "bloom"), ("opt-", "opt"), ("cerebras", "cerebras"), ("pythia", "pythia"),
    ("phi", "phi"), ("falcon", "falcon"), ("deepseek", "deepseek"),
)


def guess_family(name: str) -> str:
    low = name.lower()
    for hint, family in _FAMILY_HINTS:
        if hint in low:
            return family
    return "unknown"


@dataclass(frozen=True)
class ModelSpec:
    """How to load one model, and what it is (family, vendor) for bias analysis."""

    id: str
    source: str  # embedded:NAME, hf:DIR, gguf:FILE, openai:URL#NAME, vllm:NAME
    family: str
    vendor: str | None = None
    template: str = "chat"  # "chat": the model's chat template; "plain": Question/Answer text
    defaults: GenerationParams = field(default_factory=GenerationParams)

    @property
    def backend(self) -> str:
        kind = self.source.split(":", 1)[0]
        return {"embedded": "transformers", "hf": "transformers", "gguf": "transformers"}.get(kind, kind)


@cache
def load_config(path: str | os.PathLike = DEFAULT_CONFIG) -> dict[str, ModelSpec]:
    from pairlab.files import read_text  # the one reader rule: a FIFO or a device refused

    raw = tomllib.loads(read_text(path))
    specs = {}
    for model_id, entry in raw.get("models", {}).items():
        params = GenerationParams(
            max_new_tokens=int(entry.get("max_new_tokens", 256)),
            temperature=float(entry.get("temperature", 0.0)),
            top_p=float(entry.get("top_p", 1.0)),
        )
        specs[model_id] = ModelSpec(
            id=model_id,
            source=entry["source"],
            family=entry.get("family") or guess_family(model_id),
            vendor=entry.get("vendor"),
            template=entry.get("template", "chat"),
            defaults=params,
        )
    return specs


def resolve(name: str, config: str | os.PathLike = DEFAULT_CONFIG) -> ModelSpec:
    """The spec for a model string: a configured id, or a prefixed source string."""
    specs = load_config(str(config))
    if name in specs:
        return specs[name]
    kind, sep, rest = name.partition(":")
    if not sep or kind not in ("hf", "gguf", "openai", "vllm", "embedded"):
        known = ", ".join(sorted(specs)) or "none"
        raise BackendError(
            f"unknown model {name!r}: use a configured id ({known}) or a prefixed name "
            "hf:DIR, gguf:FILE, openai:URL#NAME, vllm:NAME"
        )
    label = rest.split("#", 1)[1] if kind == "openai" and "#" in rest else rest
    return ModelSpec(id=name, source=name, family=guess_family(label))


def family_of(name: str, config: str | os.PathLike = DEFAULT_CONFIG) -> str:
    try:
        return resolve(name, config).family
    except BackendError:
        return guess_family(name)


def engine_options(name: str, engine: str, max_inflight: int,
                   config: str | os.PathLike = DEFAULT_CONFIG) -> dict:
    """``get_model`` options that pick a model's serving engine for the arena: a transformers
    model's own (``engine``); a ``vllm:`` model's async engine, which always batches, with
    ``max_inflight`` requests in its running batch; a server (``openai:``) batches on its side."""
    backend = resolve(name, config).backend
    if backend == "vllm":
        return {"engine": "async", "max_inflight": max_inflight}
    if backend != "transformers":
        return {}
    return {"engine": engine, "max_inflight": max_inflight}


def get_model(name: str, backend: str | None = None, config: str | os.PathLike = DEFAULT_CONFIG, **kwargs) -> Model:
    """Load the model named ``name``. ``backend`` overrides the one its name implies."""
    spec = resolve(name, config)
    backend = backend or spec.backend
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "transformers":
        from pairlab.backends.hf import TransformersModel

        return TransformersModel.from_spec(spec, **kwargs)
    if backend == "openai":
        from pairlab.backends.openai_client import OpenAIModel

        return OpenAIModel.from_spec(spec, **kwargs)
    from pairlab.backends.vllm_engine import VLLMModel

    return VLLMModel.from_spec(spec, **kwargs)
