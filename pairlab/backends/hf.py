"""The transformers backend: embedded GGUF models, ``hf:`` directories and ``gguf:`` files.

CPU here (float32), CUDA with bf16 and ``device_map="auto"`` when a GPU is present.
A GGUF file is dequantized once and cached as safetensors, keyed by the file's sha256
(see ``pairlab.weights``), so later loads take seconds instead of tens of seconds.
Streams run a ``generate()`` loop each, or (``engine="continuous"``) join one batching engine
per model (``pairlab.backends.batching``); ``generate`` and the scorers batch their own inputs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import torch
from transformers import (AutoModelForCausalLM, AutoTokenizer, LogitsProcessor, LogitsProcessorList,
                          StoppingCriteria, StoppingCriteriaList, StopStringCriteria, TemperatureLogitsWarper,
                          TextIteratorStreamer, TopPLogitsWarper)

from pairlab.backends.base import ENGINES, BackendError, Completion, GenerationParams, Model, Prompt, PromptTooLong
from pairlab.backends.chat import PLAIN_STOP, pick_template, render
from pairlab.weights import prepared_dir

# Logits computed at once when scoring whole sequences (rows x positions x vocabulary):
# 2**24 float32 values are 64 MiB, 64 positions of Gemma's 262k vocabulary.
_LOGIT_BLOCK = 2**24
# Stop strings' criteria kept per model (as many as the library keeps for itself).
STOP_CRITERIA_KEPT = 8
# The per-request path's seeded sampler draws from a generator of its own, one stream per generate().
PER_REQUEST_SEEDING = ("the seed fixes the answer: the same seed, model, prompt, parameters, device and thread "
                       "count give the same text")


def _truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def _partial_stop(text: str, stops: Sequence[str]) -> int:
    """Length of the longest tail of ``text`` that is a proper prefix of a stop string."""
    return max((k for s in stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)


def _until_stop(pieces: Iterator[str], stops: Sequence[str]) -> Iterator[str]:
    """The text of ``pieces`` up to the first stop string, holding back a tail that could be
    the start of one."""
    seen, emitted = "", 0
    for piece in pieces:
        seen += piece
        visible, stopped = _truncate_at_stop(seen, stops)
        safe = len(visible) if stopped else len(visible) - _partial_stop(visible, stops)
        if safe > emitted:
            yield visible[emitted:safe]
            emitted = safe
        if stopped:
            return
    visible, _ = _truncate_at_stop(seen, stops)
    if len(visible) > emitted:
        yield visible[emitted:]


def _new_text(tokenizer, token_lists: Iterator[list[int]]) -> Iterator[str]:
    """Text pieces from a stream of growing token lists; a tail that decodes to an unfinished
    character (U+FFFD) waits for the tokens that complete it."""
    shown = ""
    with closing(token_lists):
        for tokens in token_lists:
            text = tokenizer.decode(tokens, skip_special_tokens=True).rstrip("\ufffd")
            if len(text) > len(shown) and text.startswith(shown):
                yield text[len(shown):]
                shown = text


class _StopOnEvent(StoppingCriteria):
    """Lets the streaming caller end generation early (stop string seen, consumer gone)."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids, scores, **kwargs) -> bool:
        return self.event.is_set()


class _SeededSampler(LogitsProcessor):
    """Seeded sampling from a generator of its own, run inside greedy decoding.

    ``generate()`` takes no generator: its sampling draws from torch's global RNG, which
    every thread shares, so two generations at once (the arena's two panes) interleave
    their draws and a stored seed no longer reproduces what was shown. This processor
    warps the scores as transformers' sampling does (temperature, then top-p), draws one
    token per row from its own generator and leaves only that token finite, so the greedy
    step picks it. On CPU the draws are those ``torch.manual_seed(seed)`` gave transformers'
    own sampling, so seeds stored before still give the same text. Sampling is exactly the
    params' temperature and top-p; other warpers a model's generation config may name
    (min_p, typical_p) do not apply.
    """

    def __init__(self, params: GenerationParams):
        warpers = []
        if params.temperature != 1.0:
            warpers.append(TemperatureLogitsWarper(params.temperature))
        self.warpers = LogitsProcessorList(warpers)
        self.top_p = TopPLogitsWarper(params.top_p) if params.top_p < 1.0 else None
        self.seed = params.seed
        self.generator: torch.Generator | None = None  # made on the scores' device at the first step

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.generator is None:
            self.generator = torch.Generator(scores.device).manual_seed(self.seed)
        scores = self.warpers(input_ids, scores)
        if self.top_p is not None:
            scores = _top_p(self.top_p, input_ids, scores)
        probs = torch.softmax(scores, dim=-1)
        drawn = torch.multinomial(probs, num_samples=1, generator=self.generator)
        return torch.full_like(scores, float("-inf")).scatter_(1, drawn, 0.0)


def _top_p(warper: TopPLogitsWarper, input_ids, scores: torch.FloatTensor) -> torch.FloatTensor:
    """``warper(input_ids, scores)`` on CPU without its sort of token indices, which dominates a
    sampled step over a large vocabulary. The tokens it removes are a prefix of the scores in
    ascending order, so the cut is a count: :func:`_cut_from_the_top` finds it from the largest
    scores alone where it can, else the sorted values (numpy's sort, several times faster than the
    warper's) give the same cumulative probabilities and so the same cut; a cut inside a run of
    equal scores, where the warper's own sort decides which of them go, is left to the warper."""
    if scores.device.type != "cpu" or scores.dtype not in (torch.float32, torch.float64) \
            or warper.min_tokens_to_keep != 1:
        return warper(input_ids, scores)
    values = scores.numpy()
    thresholds = [_cut_from_the_top(row, warper.top_p) for row in values]
    if all(t is not None for t in thresholds):
        return scores.masked_fill(scores < torch.tensor(thresholds, dtype=scores.dtype).unsqueeze(-1),
                                  warper.filter_value)
    ordered = torch.from_numpy(np.sort(values, axis=-1))
    removed = (ordered.softmax(dim=-1).cumsum(dim=-1) <= (1 - warper.top_p))
    removed[..., -1] = False
    cuts = removed.sum(dim=-1).tolist()
    rows = torch.arange(len(cuts))
    cut = torch.tensor(cuts)
    if any(c > 0 and ordered[r, c - 1] == ordered[r, c] for r, c in enumerate(cuts)):
        return warper(input_ids, scores)
    return scores.masked_fill(scores < ordered[rows, cut].unsqueeze(-1), warper.filter_value)


# The largest scores :func:`_cut_from_the_top` reads, and how far from the cut the cumulative
# probability must lie for its float64 sums to decide as the warper's float32 ones do (their
# rounding moves it by about 1e-6 on a 262k vocabulary).
_TOP = 1024
_MARGIN = 1e-4


def _cut_from_the_top(row: np.ndarray, top_p: float) -> float | None:
    """The smallest score the top-p warper keeps in ``row``, from its ``_TOP`` largest scores and
    the softmax's normaliser, with no sort of the whole row: the warper keeps a token when the
    probability of the tokens above it is under ``top_p``. None where the row's top holds too
    little of the probability, where the cumulative probability lies within ``_MARGIN`` of the
    threshold, or where the kept and the first removed score are equal: the full sort decides."""
    n = row.shape[0]
    if n <= 2 * _TOP:
        return None
    top = np.partition(row, n - _TOP)[n - _TOP:]
    top = np.sort(top)[::-1].astype(np.float64)
    peak = top[0]
    if not np.isfinite(peak):  # a row masked whole: the full sort says what the warper does
        return None
    total = np.exp(row - row.dtype.type(peak)).sum(dtype=np.float64)
    above = np.concatenate(([0.0], np.cumsum(np.exp(top - peak) / total)))  # above[k]: the k largest
    # The warper removes a token when the probability up to it, in ascending order, is at most
    # 1 - top_p (compared in the scores' precision): when the probability above it is at least this.
    threshold = 1.0 - float(row.dtype.type(1 - top_p))
    kept = int(np.searchsorted(above[:_TOP], threshold, side="left")) - 1  # the last k with above[k] < threshold
    if kept + 1 >= _TOP:
        return None
    if threshold - above[kept] <= _MARGIN or above[kept + 1] - threshold <= _MARGIN:
        return None
    if top[kept] == top[kept + 1]:
        return None
    return float(top[kept])


class TransformersModel(Model):
    backend = "transformers"

    def __init__(self, model_id: str, directory: Path, *, template: str = "chat", batch_size: int = 8,
                 device: str | None = None, weights_sha256: str | None = None, family: str | None = None,
                 dtype: str | None = None, engine: str = "generate", max_inflight: int = 8,
                 loaded: tuple | None = None):
        """``loaded``: a ``(model, tokenizer)`` built in memory (the GPU bench's random weights of a
        real shape) instead of reading ``directory``."""
        self.id = model_id
        self.family = family
        self.directory = Path(directory)
        self.batch_size = batch_size
        self.weights_sha256 = weights_sha256
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        load_kwargs = {"dtype": torch.float32}
        if device == "cuda":
            load_kwargs = {"dtype": torch.bfloat16, "device_map": "auto"}
        if dtype is not None:
            load_kwargs["dtype"] = getattr(torch, dtype)
        if loaded is not None:
            self.model, self.tokenizer = loaded
        else:
            self.tokenizer = AutoTokenizer.from_pretrained(self.directory)
            self.model = AutoModelForCausalLM.from_pretrained(self.directory, **load_kwargs)
        if device != "cuda":
            self.model.to(device)
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        # "plain" is forced for base models; "chat" falls back to plain when there is no template.
        self.template = pick_template(template, self.tokenizer)
        self.default_stop = PLAIN_STOP if self.template == "plain" else ()
        self._lock = threading.Lock()
        self._stop_criteria: dict[tuple[str, ...], StopStringCriteria] = {}
        if engine not in ENGINES:
            raise BackendError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        # "continuous": every stream joins one engine's batch; "generate": a generate() loop per stream.
        self.engine = None
        if engine == "continuous":
            from pairlab.backends.batching import BatchingEngine

            self.engine = BatchingEngine(self.model, self.tokenizer, max_inflight, _SeededSampler)
            self.concurrency = max_inflight

    @classmethod
    def from_spec(cls, spec, **kwargs) -> TransformersModel:
        directory, sha = prepared_dir(spec.source)
        return cls(spec.id, directory, template=spec.template, weights_sha256=sha, family=spec.family, **kwargs)

    # -- prompts --------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        return render(prompt, self.template, self.tokenizer)

    def _encode(self, texts: Sequence[str]) -> dict:
        enc = self.tokenizer(list(texts), return_tensors="pt", padding=True,
                             add_special_tokens=self._encode_flags(texts))
        return {k: v.to(self.model.device) for k, v in enc.items()}

    def _batches(self, texts: Sequence[str], batch_size: int) -> Iterator[list[int]]:
        """Indices grouped into batches of similar token length, so padding stays small."""
        lengths = [len(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]

    def _gen_kwargs(self, params: GenerationParams) -> dict:
        """Arguments for one ``model.generate`` call; a fresh sampler each call, so every
        call (every batch) starts from ``params.seed``."""
        kwargs = {
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": self.tokenizer.pad_token_id,
            # Always greedy for transformers (sampling is _SeededSampler's), with the
            # sampling defaults some generation configs carry silenced.
            "do_sample": False, "temperature": None, "top_p": None, "top_k": None,
        }
        if not params.greedy:
            kwargs["logits_processor"] = LogitsProcessorList([_SeededSampler(params)])
        return kwargs

    # -- generation -----------------------------------------------------------------
    def generate(self, prompts: Sequence[Prompt], params: GenerationParams,
                 batch_size: int | None = None) -> list[Completion]:
        texts = [self.render(p) for p in prompts]
        stops = tuple(params.stop) or self.default_stop
        out: list[Completion | None] = [None] * len(texts)
        eos = self.tokenizer.eos_token_id
        for batch in self._batches(texts, batch_size or self.batch_size):
            enc = self._encode([texts[i] for i in batch])
            with self._lock, torch.inference_mode():
                ids = self.model.generate(**enc, **self._gen_kwargs(params), **self._stopping(stops))
            new = ids[:, enc["input_ids"].shape[1]:]
            for row, i in enumerate(batch):
                tokens = new[row].tolist()
                ended = eos in tokens or self.tokenizer.pad_token_id in tokens
                if eos in tokens:
                    tokens = tokens[:tokens.index(eos)]
                tokens = [t for t in tokens if t != self.tokenizer.pad_token_id]
                text, stopped = _truncate_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), stops)
                finish = "stop" if (ended or stopped or len(tokens) < params.max_new_tokens) else "length"
                out[i] = Completion(text=text.strip(), n_tokens=len(tokens), finish_reason=finish)
        return out

    def _stopping(self, stops: tuple[str, ...]) -> dict:
        """``generate()``'s stopping criteria for ``stops``, kept for the last few stops used: the
        library builds them from the whole vocabulary on every call given ``stop_strings``
        (Gemma's 262,144 tokens), and a plain-template model passes its stops on every call. Few
        are kept because each holds a table over the vocabulary and a server's callers choose
        their own stops."""
        if not stops:
            return {}
        criteria = self._stop_criteria.pop(stops, None) or StopStringCriteria(self.tokenizer, list(stops))
        self._stop_criteria[stops] = criteria  # the most recently used last
        while len(self._stop_criteria) > STOP_CRITERIA_KEPT:
            del self._stop_criteria[next(iter(self._stop_criteria))]
        return {"stopping_criteria": StoppingCriteriaList([criteria])}

    def stream(self, prompt: Prompt, params: GenerationParams) -> Iterator[str]:
        text = self.render(prompt)
        stops = tuple(params.stop) or self.default_stop
        if self.engine is not None:
            # The ids as a list, never on the device: a copy to a GPU from this thread could land
            # while the engine's thread captures a graph.
            ids = self.tokenizer(text, add_special_tokens=self._encode_flags([text])).input_ids
            pieces = _new_text(self.tokenizer, self.engine.stream(ids, params))
        else:
            pieces = self._generate_thread(self._encode([text]), params)
        with closing(pieces):  # a stop string or a consumer that left ends the generation
            yield from _until_stop(pieces, stops)

    def _generate_thread(self, enc: dict, params: GenerationParams) -> Iterator[str]:
        """One ``generate()`` of its own in a thread, its text pieces as they are decoded."""
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        halt = threading.Event()
        kwargs = dict(**enc, **self._gen_kwargs(params), streamer=streamer,
                      stopping_criteria=StoppingCriteriaList([_StopOnEvent(halt)]))

        error: list[BaseException] = []

        def run() -> None:
            try:
                with torch.inference_mode():
                    self.model.generate(**kwargs)
            except BaseException as exc:  # surface it in the consumer instead of hanging it
                error.append(exc)
                streamer.end()

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        exhausted = False
        try:
            yield from streamer
            exhausted = True
            if error:
                raise error[0]
        finally:
            halt.set()
            if not exhausted:  # stopped early: drain so the worker never blocks on the queue
                for _ in streamer:
                    pass
            worker.join()

    # -- scoring --------------------------------------------------------------------
    def score(self, contexts: Sequence[str], candidates: Sequence[str],
              batch_size: int | None = None) -> list[list[float]]:
        """Log-probabilities of each candidate continuation after each context.

        When every candidate is a single token after its context (the judges' verdict
        tokens), one forward pass per context suffices: read the next-token
        distribution at the context's last position. Otherwise each (context,
        candidate) sequence is scored in its own row. A context longer, with its candidates,
        than the model's positions gets NaN for each.
        """
        add_special = self._encode_flags(contexts)
        ctx_ids = [self.tokenizer(c, add_special_tokens=add_special).input_ids for c in contexts]
        cand_ids = [[self._tail(c, ids, cand, add_special) for cand in candidates]
                    for c, ids in zip(contexts, ctx_ids)]
        window = self._window()
        fits = [len(ids) + max(map(len, row), default=0) <= window for ids, row in zip(ctx_ids, cand_ids)]
        out: list[list[float]] = [[0.0 if ok else float("nan")] * len(candidates) for ok in fits]
        single = all(len(t) == 1 for row in cand_ids for t in row)
        if single:
            seqs = [(i, None, ctx_ids[i], None) for i in range(len(contexts)) if fits[i]]
        else:
            seqs = [(i, j, ctx_ids[i], cand_ids[i][j]) for i in range(len(contexts)) if fits[i]
                    for j in range(len(candidates))]
        bs = batch_size or self.batch_size
        seqs.sort(key=lambda s: len(s[2]) + (len(s[3]) if s[3] else 0))
        for start in range(0, len(seqs), bs):
            chunk = seqs[start:start + bs]
            rows = [ctx + (cand or []) for _, _, ctx, cand in chunk]
            if single:
                last = self._forward_logprobs(rows, last_only=True)[:, -1]
                for r, (i, _, _, _) in enumerate(chunk):
                    for jj, tail in enumerate(cand_ids[i]):
                        out[i][jj] = float(last[r, tail[0]])
            else:
                # Entry p is log p(token p+1); rows are left-padded, so a candidate's tokens end each row.
                token_lp = self._token_logprobs(rows)
                for r, (i, j, _, cand) in enumerate(chunk):
                    out[i][j] = float(token_lp[r, -len(cand):].sum())
        return out

    def answer_logprobs(self, items: Sequence[tuple[str, str]],
                        batch_size: int | None = None) -> list[tuple[float, int]]:
        """(summed log-probability, token count) of each answer after its context; NaN for one
        longer, with its context, than the model's positions (it would be read past its window)."""
        add_special = self._encode_flags([context for context, _ in items])
        rows = []
        for context, answer in items:
            ids = self.tokenizer(context, add_special_tokens=add_special).input_ids
            rows.append((ids, self._tail(context, ids, answer, add_special)))
        lengths = [len(ids) + len(tail) for ids, tail in rows]
        window = self._window()
        out = [(0.0, 0) if n <= window else (float("nan"), len(tail)) for n, (_, tail) in zip(lengths, rows)]
        order = sorted((i for i, n in enumerate(lengths) if n <= window), key=lengths.__getitem__)
        bs = batch_size or self.batch_size
        for start in range(0, len(order), bs):
            chunk = order[start:start + bs]
            token_lp = self._token_logprobs([rows[i][0] + rows[i][1] for i in chunk])
            for r, i in enumerate(chunk):
                n = len(rows[i][1])
                out[i] = (float(token_lp[r, -n:].sum()) if n else 0.0, n)
        return out

    def _window(self) -> float:
        """The positions the model was trained on. A sequence past them would be read anyway (a
        RoPE model answers from positions it never learned), so the scorers leave it unscored (NaN)."""
        return getattr(self.model.config, "max_position_embeddings", None) or float("inf")

    def _tail(self, context: str, context_ids: list[int], candidate: str, add_special: bool) -> list[int]:
        """The candidate's tokens after the context. Tokenization can merge across the
        boundary; then the candidate is tokenized alone, as the model would see it after
        the context."""
        full = self.tokenizer(context + candidate, add_special_tokens=add_special).input_ids
        if full[:len(context_ids)] == context_ids:
            return full[len(context_ids):]
        return self.tokenizer(candidate, add_special_tokens=False).input_ids

    def _encode_flags(self, texts: Sequence[str]) -> bool:
        """Whether to add special tokens: not when a rendered chat template already
        carries the BOS text (a second BOS changes the model's output)."""
        bos = self.tokenizer.bos_token
        return not (bos and all(t.startswith(bos) for t in texts))

    def _padded(self, rows: list[list[int]]) -> dict:
        """Model inputs for left-padded rows. Positions count real tokens only, so left
        padding cannot shift a row's scores (it matters for absolute position embeddings;
        RoPE models are unaffected)."""
        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=self.model.device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=self.model.device)
        # No KV cache: one pass, and a cache for 20k tokens is another gigabyte.
        if all(len(r) == width for r in rows):  # no padding to hide: plain causal attention
            return {"input_ids": ids, "use_cache": False}
        return {"input_ids": ids, "attention_mask": mask, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0),
                "use_cache": False}

    def _forward_logprobs(self, rows: list[list[int]], last_only: bool = False) -> torch.Tensor:
        """Log-softmax over the vocabulary for left-padded rows; only the last position
        when ``last_only``. Scoring whole sequences goes through :meth:`_token_logprobs`."""
        with self._lock, torch.inference_mode():
            hidden = self.model.base_model(**self._padded(rows)).last_hidden_state
            logits = self._logits(hidden[:, -1:] if last_only else hidden)
        return torch.log_softmax(logits, dim=-1)

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The model's logits (float32) for backbone states ``hidden``, as its own forward makes
        them, from its float32 output layer: the batching engine may generate with a bfloat16
        copy (:class:`~pairlab.backends.batching._Bfloat16Head`), scores never do."""
        from pairlab.backends.batching import float32_head

        logits = float32_head(self.model)(hidden).float()
        softcap = getattr(self.model.config, "final_logit_softcapping", None)
        if softcap is not None:  # as the model's own forward does (Gemma 2)
            logits = torch.tanh(logits / softcap) * softcap
        return logits

    def _token_logprobs(self, rows: list[list[int]]) -> torch.Tensor:
        """``out[r, p]`` = log p(token p+1 | tokens up to p) for left-padded rows.

        Never holds the vocabulary for every position: full logits for 20k tokens of a 262k
        vocabulary are 20 GB. The backbone's last hidden states are projected onto the
        vocabulary a block of positions at a time, and each block keeps only its
        log-normaliser (logsumexp) and the logit of the token that follows.
        """
        with self._lock, torch.inference_mode():
            inputs = self._padded(rows)
            hidden = self.model.base_model(**inputs).last_hidden_state[:, :-1]
            targets = inputs["input_ids"][:, 1:]
            n_rows, n_pos = targets.shape
            from pairlab.backends.batching import float32_head

            vocab = getattr(float32_head(self.model), "out_features", None) or self.model.config.vocab_size
            block = max(1, _LOGIT_BLOCK // (n_rows * vocab))
            out = torch.empty((n_rows, n_pos), dtype=torch.float32)
            for start in range(0, n_pos, block):
                logits = self._logits(hidden[:, start:start + block])
                picked = logits.gather(-1, targets[:, start:start + block, None])[..., 0]
                out[:, start:start + block] = (picked - torch.logsumexp(logits, dim=-1)).cpu()
        return out

    def prompt_logprobs(self, text: str, max_tokens: int | None = None) -> list[tuple[str, int, float | None]]:
        """(token text, character offset, log p(token | tokens before)) for each token of
        ``text``; the first token has no context and gets ``None``. Serves ``echo`` scoring.
        A text of more than ``max_tokens`` tokens raises :class:`PromptTooLong` before any
        forward pass."""
        enc = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=self._encode_flags([text]))
        ids = enc.input_ids
        if max_tokens is not None and len(ids) > max_tokens:
            raise PromptTooLong(f"the prompt has {len(ids)} tokens; at most {max_tokens} can be scored")
        token_lp = self._token_logprobs([ids])[0].tolist() if len(ids) > 1 else []
        return [(text[start:end], start, None if p == 0 else token_lp[p - 1])
                for p, (start, end) in enumerate(enc.offset_mapping)]

    def forward(self, contexts: Sequence[str], batch_size: int | None = None) -> None:
        """One bare forward pass over the contexts: the floor that scoring is measured against."""
        add_special = self._encode_flags(contexts)
        ids = [self.tokenizer(c, add_special_tokens=add_special).input_ids for c in contexts]
        ids.sort(key=len)
        bs = batch_size or self.batch_size
        for start in range(0, len(ids), bs):
            self._forward_logprobs(ids[start:start + bs], last_only=True)

    def info(self) -> dict:
        import transformers

        return {
            "id": self.id,
            "backend": self.backend,
            "family": self.family,
            "weights_sha256": self.weights_sha256,
            "template": self.template,
            "device": str(self.model.device),
            # GPU kernels and CPU thread counts change the float sums, and so can change greedy text.
            "gpu": torch.cuda.get_device_name(self.model.device) if self.model.device.type == "cuda" else None,
            "torch_threads": torch.get_num_threads(),
            "dtype": str(self.model.dtype),
            # The batching engine on a CPU with bfloat16 instructions scores the vocabulary in bfloat16.
            "output_dtype": str(self.model.get_output_embeddings().weight.dtype),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "engine": self.engine.name if self.engine else "transformers-generate",
            "seeding": self.seeding,
        }

    @property
    def seeding(self) -> str:
        if self.engine is None:
            return PER_REQUEST_SEEDING
        from pairlab.backends.batching import SEED_GUARANTEE

        return SEED_GUARANTEE

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()


def torch_gpu() -> bool:
    return torch.cuda.is_available()


def use_free_cpus(threads: int | None = None) -> int:
    """Set torch's CPU threads for an offline job (judging, generating pairs) and return them:
    ``threads``, or the CPUs the 1-minute load average leaves idle, at least 1. On a machine
    busy with other work, threads that outnumber the idle cores wait for each other, and a
    generation runs several times slower than on fewer threads."""
    if threads is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        threads = max(1, cpus - round(os.getloadavg()[0]))
    torch.set_num_threads(threads)
    return threads
