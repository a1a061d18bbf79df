"""The one model interface shared by the arena and the judges.

Every backend (transformers, an OpenAI-compatible server, vLLM) answers the same four
calls: ``render`` a chat into the model's prompt text, ``generate`` completions for a
batch, ``stream`` one completion token by token, and ``score`` the log-probability of
given candidate continuations after a prompt (the judges' logprob mode). Local engines
also score a whole answer after its question (``answer_logprobs``, likelihood mode).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Union

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}
Messages = list[Message]
# A prompt is either a chat (rendered with the model's template) or raw text sent as is.
Prompt = Union[Messages, str]


# How a transformers model serves streams: "continuous", one engine batching every request
# (transformers' continuous batching), or "generate", a generate() loop per stream.
ENGINES = ("continuous", "generate")


@dataclass(frozen=True)
class GenerationParams:
    """Decoding parameters. ``temperature == 0`` means greedy; otherwise seeded sampling."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass
class Completion:
    text: str
    n_tokens: int
    finish_reason: str  # "stop" (end of sequence or a stop string) or "length"
    meta: dict = field(default_factory=dict)


class BackendError(RuntimeError):
    """A backend that cannot be used here (missing package, no GPU, unreachable server)."""


class PromptTooLong(ValueError):
    """A text longer (in tokens) than the caller allows to be scored."""


class Model(ABC):
    """A loaded model. ``id`` is the string it was asked for by (see ``pairlab.models``)."""

    id: str
    backend: str
    # Streams this model's engine decodes in one batch: how many the arena lets in at once.
    # 1: each stream decodes on its own (a generate() loop, or one request to a server).
    concurrency: int = 1

    @abstractmethod
    def render(self, prompt: Prompt) -> str:
        """The exact text the model is conditioned on for this prompt."""

    @abstractmethod
    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        """One completion per prompt, in input order."""

    @abstractmethod
    def stream(self, prompt: Prompt, params: GenerationParams) -> Iterator[str]:
        """Yield text pieces of one completion as they are decoded."""

    @abstractmethod
    def score(self, contexts: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        """``out[i][j]`` = log p(candidates[j] | contexts[i]), summed over its tokens.

        Contexts are rendered text (see :meth:`render`), so a caller can append an
        assistant prefix such as ``"[RESULT]"`` before scoring the verdict tokens.
        """

    def answer_logprobs(self, items: Sequence[tuple[str, str]]) -> list[tuple[float, int]]:
        """``(log p(answer | context) summed over its tokens, its number of tokens)`` for each
        ``(context, answer)``: the judges' likelihood mode, which scores each answer alone."""
        raise BackendError(f"the {self.backend} backend cannot score an answer's likelihood; --mode likelihood "
                           "needs a transformers judge (a configured id, hf:DIR or gguf:FILE)")

    @property
    def seeding(self) -> str:
        """What a request's seed guarantees about its text, for manifests and vote records."""
        return "as the backend honours a request's seed"

    def info(self) -> dict:
        """What a run manifest needs to name this model exactly."""
        return {"id": self.id, "backend": self.backend, "seeding": self.seeding}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, GPU memory)."""
