"""Judging pairs with one judge model: both orders, batched or concurrent, resumable, reproducible.

Two ways to hand the work to the judge:

* Batched (a local engine: transformers, vLLM offline). The work is cut into chunks that
  depend only on the input pairs and the settings (pairs sorted by length, or grouped by
  question so that shared prefixes sit together, each chunk holding at most
  ``batch_size`` judge prompts), and each chunk is always sent to the model whole. So a
  batch always has the same composition (same padding, same seed), a rerun reproduces
  every record byte for byte, and a run resumed after a kill writes exactly what an
  uninterrupted run would have: a chunk that was cut short is recomputed whole and only
  its missing records are written.
* Concurrent (a server: ``concurrency=N``). Each judge prompt is one request; at most N
  are in flight, each slot refilled as its request returns, and each record is appended
  as soon as its judgment is complete. A prompt's retries draw seeds derived from the
  prompt itself, so a record's content never depends on which request finished first;
  only the order of the lines does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tqdm import tqdm

from pairlab.backends.base import BackendError, GenerationParams, Model
from pairlab.records import LIKELIHOOD, Pair, Record
from judges.forced_verdict import FORCED, FREE, can_force, force_verdicts
from judges.inflight import completed
from judges.reasoning import split_reasoning, strip_reasoning
from judges.run_files import RunFiles, TaskKey, task_key
from judges.templates import ABSOLUTE, JudgeTemplate
from judges.verdicts import (
    VerdictError,
    parse_verdict,
    prob_a_from_scores,
    prob_a_pairwise,
    prob_a_per_byte,
    strength_from_label,
    winner_from_label,
    winner_from_prob,
    winner_from_scores,
)

__all__ = ["Counts", "JudgeConfig", "Task", "judge_pairs", "logprob_context", "plan_chunks", "rater_id"]

MODES = ("logprob", "generate", "likelihood")
SLOW_S = 600.0  # a job that will take longer than this at the first judgments' pace is said to be slow
ORDERS = ("ab", "ba")  # "ab": as the PAIRS row lists them; "ba": swapped


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides what a run writes (the manifest records all of it)."""

    template: JudgeTemplate
    mode: str = "logprob"
    swap: bool = True
    seed: int = 0
    tie_band: float = 0.0
    retries: int = 2
    max_new_tokens: int = 256
    temperature: float = 0.0
    # A greedy retry would repeat the failed output; retries sample, each with a new seed.
    retry_temperature: float = 1.0
    retry_top_p: float = 0.9
    batch_size: int = 8
    # Generate mode: when no attempt held a verdict, read it at the verdict slot after the
    # judge's own text (judges.forced_verdict); records say so in meta.verdict_source.
    force_verdict: bool = True
    # Judged responses lose their reasoning traces before the judge sees them (and in the records).
    strip_reasoning: bool = False
    # Chunks group pairs by question so the prompts sharing a prefix sit together (vLLM's prefix cache).
    prefix_order: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == "logprob":
            self.template.scoring_split()  # fails early when the template cannot be scored
        if not 0.0 <= self.tie_band < 0.5:
            raise ValueError(f"tie band must be in [0, 0.5), got {self.tie_band}")
        if self.retries < 0 or self.batch_size < 1 or self.max_new_tokens < 1:
            raise ValueError("retries must be >= 0, batch size and max new tokens >= 1")

    @property
    def params(self) -> GenerationParams:
        return GenerationParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=self.seed)

    def retry_params(self, seed: int) -> GenerationParams:
        return GenerationParams(max_new_tokens=self.max_new_tokens, temperature=self.retry_temperature,
                                top_p=self.retry_top_p, seed=seed)

    def describe(self) -> dict:
        out = {"mode": self.mode, "swap": self.swap, "seed": self.seed, "tie_band": self.tie_band,
               "batch_size": self.batch_size, "strip_reasoning": self.strip_reasoning,
               "order": "by question, shared prefixes together" if self.prefix_order else "longest first"}
        if self.mode == "generate":
            out["decoding"] = self.params.to_dict()
            out["retries"] = self.retries
            out["retry_decoding"] = {k: v for k, v in self.retry_params(0).to_dict().items() if k != "seed"}
            out["retry_decoding"]["seed"] = ("derived from the run seed, the attempt and the chunk "
                                             "(batched) or the judge prompt (concurrent)")
            out["reasoning"] = "a judge's reasoning trace is set aside before its verdict is read (kept in raw_output)"
            out["verdict_slot"] = ("forced after the judge's text when it wrote no verdict "
                                   "(meta.verdict_source = forced-slot)"
                                   if self.force_verdict and can_force(self.template) else "off")
        elif self.mode == "likelihood":
            out["scoring"] = ("each answer alone, after the question in the judge's own chat format: its "
                              "log-probability per byte of text (GPTScore, Fu et al. 2023, normalised by bytes, not "
                              "tokens, so no tokenizer sways it; Gao 2021 compares the normalisations); prob_a is "
                              "the logistic of the two per-byte scores' difference times the pair's mean bytes per "
                              "token, an order, not a calibrated probability; the template is not used and both "
                              "orders get the same verdict")
        else:
            prefix, tokens = self.template.scoring_split()
            out["scoring"] = {"prefix": prefix, "verdict_tokens": tokens}
        return out


@dataclass
class Counts:
    pairs: int = 0
    tasks: int = 0
    skipped_existing: int = 0
    records_written: int = 0
    parse_failures: int = 0  # (pair, order)s with no verdict after all retries
    failed_attempts: int = 0  # judge outputs without a verdict, including those a retry fixed
    retries: int = 0
    forced: int = 0  # verdicts read at the verdict slot (judges.forced_verdict), not written by the judge
    reasoning_traces: int = 0  # judge outputs whose reasoning trace was set aside before parsing
    # What OUT holds for this run's tasks, earlier (interrupted) runs included:
    records: int = 0
    failures: int = 0
    ties: int = 0


@dataclass(frozen=True)
class Task:
    """One pair in one order; ``model_a`` of its record is the response shown first."""

    pair: Pair
    order: str
    prompts: tuple = field(compare=False)  # judge chats: one (pairwise) or one per response (absolute)

    @property
    def shown(self) -> dict:
        return _shown(self.pair, self.order)

    @property
    def prompt_keys(self) -> list[str]:
        return [json.dumps(m, sort_keys=True) for m in self.prompts]


def rater_id(judge: str, mode: str) -> str:
    """The judge name a run's records carry: likelihood mode is another way of judging (it
    never shows the judge the pair), so its verdicts are rated apart from the judge's own."""
    return judge + LIKELIHOOD if mode == "likelihood" else judge


def _answer_chats(prompt: str, shown: dict) -> list[list[dict]]:
    """Likelihood mode's judge prompts: each shown answer after the question, one chat each
    (the same two in both orders, so both orders share one scoring)."""
    return [[{"role": "user", "content": prompt}, {"role": "assistant", "content": shown[side]}]
            for side in ("response_a", "response_b")]


def _shown(p: Pair, order: str) -> dict:
    """The pair's fields as shown in this order: ``_a`` is always the first-shown side."""
    if order == "ab":
        return {"model_a": p.model_a, "model_b": p.model_b, "response_a": p.response_a,
                "response_b": p.response_b, "family_a": p.family_a, "family_b": p.family_b}
    return {"model_a": p.model_b, "model_b": p.model_a, "response_a": p.response_b,
            "response_b": p.response_a, "family_a": p.family_b, "family_b": p.family_a}


def _orders(pair: Pair, config: JudgeConfig) -> tuple[str, ...]:
    if config.swap:
        return ORDERS
    # Seeded by pair id, not position, so the choice survives --limit, reordering and resumes.
    rng = random.Random(f"{config.seed}\x1f{pair.pair_id}")
    return (rng.choice(ORDERS),)


# Share of the free GPU memory one judging batch may fill: the rest is the allocator's slack and
# what the estimate below leaves out (the last position's logits, attention workspaces).
GPU_MEMORY_SHARE = 0.7
# Past this a batch gains little on one card, and a bar that moves once a batch stands still long.
MAX_GPU_BATCH = 256


def token_bytes(config, dtype_bytes: int) -> int:
    """GPU memory one token of a batch row holds, for a decoder's config: its key/value cache
    (every layer, every key-value head) and one layer's activations at a time (residual stream,
    attention projections, the MLP's two intermediate products)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    cache = 2 * config.num_hidden_layers * kv_heads * head_dim
    activations = 4 * config.hidden_size + 3 * config.intermediate_size
    return (cache + activations) * dtype_bytes


def batch_size_for(free_bytes: int, prompt_tokens: Sequence[int], bytes_per_token: int,
                   new_tokens: int = 0) -> int:
    """The judging batch size that fits in free GPU memory: as many rows as the longest prompt
    (plus the tokens a generation adds) fit in ``GPU_MEMORY_SHARE`` of ``free_bytes``, at least 1,
    at most ``MAX_GPU_BATCH``. Batches are formed from prompts of similar length, so sizing for the
    longest is safe for every batch."""
    if free_bytes <= 0 or bytes_per_token <= 0 or not prompt_tokens:
        return 1
    row = (max(prompt_tokens) + new_tokens) * bytes_per_token
    return max(1, min(MAX_GPU_BATCH, int(free_bytes * GPU_MEMORY_SHARE // row)))


def gpu_batch_size(model, pairs: Sequence[Pair], config: JudgeConfig) -> int:
    """:func:`batch_size_for` a transformers judge on its GPU: the free memory now, the judge
    prompts' token counts as its tokenizer gives them."""
    import torch

    texts = [model.render(m) for chunk in plan_chunks(pairs, config) for task in chunk for m in task.prompts]
    lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=False).input_ids] if texts else []
    free, _ = torch.cuda.mem_get_info(model.model.device)
    new = config.max_new_tokens if config.mode == "generate" else 0
    return batch_size_for(free, lengths, token_bytes(model.model.config, model.model.dtype.itemsize), new)


def plan_chunks(pairs: Sequence[Pair], config: JudgeConfig) -> list[list[Task]]:
    """Tasks grouped into chunks of at most ``batch_size`` distinct judge prompts.

    Longest pairs first, so a batch too large for memory fails in the first minute rather
    than the last; both orders of a pair stay in one chunk (absolute grading shares its
    per-response prompts between them). With ``prefix_order`` the pairs of one question
    sit together (the questions with the longest pairs first), so the prompts that share
    the template and the question are neighbours for a prefix cache.
    """
    def length(p: Pair) -> int:
        return len(p.prompt) + len(p.response_a) + len(p.response_b) + len(p.reference or "")

    def question(p: Pair) -> tuple:
        return (p.prompt, p.reference or "")

    longest: dict[tuple, int] = {}
    if config.prefix_order:
        for p in pairs:
            longest[question(p)] = max(longest.get(question(p), 0), length(p))

    def order(p: Pair) -> tuple:
        if config.prefix_order:
            return (-longest[question(p)], question(p), -length(p), p.pair_id)
        return (-length(p), p.pair_id)

    chunks: list[list[Task]] = []
    current: list[Task] = []
    keys: set[str] = set()
    # A repeated pair_id is the same work: judged once, under its first row.
    distinct = list({p.pair_id: p for p in reversed(pairs)}.values())
    for pair in sorted(distinct, key=order):
        tasks = []
        for order in _orders(pair, config):
            shown = _shown(pair, order)
            prompts = (_answer_chats(pair.prompt, shown) if config.mode == "likelihood" else
                       config.template.messages(pair.prompt, shown["response_a"], shown["response_b"], pair.reference))
            tasks.append(Task(pair, order, prompts=tuple(prompts)))
        new = {k for t in tasks for k in t.prompt_keys}
        if current and len(keys | new) > config.batch_size:
            chunks.append(current)
            current, keys = [], set()
        current.extend(tasks)
        keys |= new
    if current:
        chunks.append(current)
    return chunks


def _quoted(pair: Pair, messages: list[dict]) -> tuple[str, ...]:
    """Texts the judge was shown, whose verbatim copies in its output are not its verdict.

    Lines of the judge prompt are included because small judges often restate the
    instructions, e.g. 'written exactly as "[RESULT] A" or "[RESULT] B"'.
    """
    lines = (line.strip() for m in messages for line in m["content"].splitlines())
    return (pair.prompt, pair.response_a, pair.response_b, pair.reference or "", *(x for x in lines if x))


def logprob_context(model: Model, template: JudgeTemplate, messages: list[dict]) -> str:
    """The text logprob mode scores the verdict tokens after: the rendered judge prompt,
    then the verdict prefix as the judge's first words.

    Chat templates end with the assistant header and a newline; a plain template ends
    with "Answer:", after which the judge's text starts with a space.
    """
    rendered = model.render(messages)
    prefix, _ = template.scoring_split()
    return rendered + _continued(rendered, prefix)


def _continued(rendered: str, text: str) -> str:
    """``text`` as the model's first words after ``rendered``: a plain format ends "Answer:", after
    which they start with a space; a chat template ends with a newline."""
    return f" {text}" if rendered and not rendered[-1].isspace() and text and not text[0].isspace() else text


def _derived_seed(*parts) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class _Outcome:
    """The judge's answer to one distinct judge prompt."""

    label: str | None = None
    error: str | None = None
    raw: str | None = None
    attempts: int = 0
    logprobs: list[float] | None = None
    forced: dict | None = None  # the verdict slot's reading, when the verdict was forced
    likelihood: tuple[float, int] | None = None  # likelihood mode: (summed log-probability, tokens)
    reasoning: bool = False  # a reasoning trace was set aside before the verdict was read


class _Judge:
    def __init__(self, model: Model, judge_id: str, judge_family: str | None, config: JudgeConfig, counts: Counts):
        self.model, self.judge_id, self.judge_family = model, judge_id, judge_family
        self.config, self.template, self.counts = config, config.template, counts
        self.stripped: set[str] = set()  # pairs whose responses lost a reasoning trace

    def key(self, task: Task) -> TaskKey:
        return task_key(task.pair.pair_id, task.order, self.judge_id, self.template.sha256, self.config.mode)

    def run_chunk(self, chunk: list[Task]) -> dict[str, _Outcome]:
        unique: dict[str, tuple[list[dict], tuple[str, ...]]] = {}
        for task in chunk:
            for key, messages in zip(task.prompt_keys, task.prompts):
                unique.setdefault(key, (messages, _quoted(task.pair, messages)))
        if self.config.mode == "logprob":
            return self._score(unique)
        if self.config.mode == "likelihood":
            return self._likelihood(unique)
        return self._generate(unique, chunk_id=f"{chunk[0].pair.pair_id}:{chunk[0].order}")

    def _score(self, unique: dict) -> dict[str, _Outcome]:
        _, tokens = self.template.scoring_split()
        contexts = [logprob_context(self.model, self.template, messages) for messages, _ in unique.values()]
        scores = self.model.score(contexts, tokens)
        return {key: _Outcome(logprobs=row) for key, row in zip(unique, scores)}

    def _likelihood(self, unique: dict) -> dict[str, _Outcome]:
        items = []
        for messages, _ in unique.values():
            context = self.model.render(messages[:1])
            items.append((context, _continued(context, messages[1]["content"])))
        scored = self.model.answer_logprobs(items)
        return {key: _Outcome(likelihood=pair) for key, pair in zip(unique, scored)}

    def _generate(self, unique: dict, chunk_id: str) -> dict[str, _Outcome]:
        outcomes = {key: _Outcome() for key in unique}
        pending = list(unique)
        for attempt in range(self.config.retries + 1):
            if not pending:
                break
            if attempt == 0:
                params = self.config.params
            else:
                params = self.config.retry_params(_derived_seed(self.config.seed, chunk_id, attempt))
                self.counts.retries += len(pending)
            completions = self.model.generate([unique[k][0] for k in pending], params)
            failed = []
            for key, completion in zip(pending, completions):
                outcome = outcomes[key]
                self._read(outcome, completion, unique[key][1], attempt)
                if outcome.error:
                    self.counts.failed_attempts += 1
                    failed.append(key)
            pending = failed
        self._force({k: (unique[k][0], outcomes[k]) for k in pending})
        self.counts.reasoning_traces += sum(o.reasoning for o in outcomes.values())
        return outcomes

    def _force(self, pending: dict[str, tuple[list[dict], _Outcome]]) -> None:
        """Outcomes still without a verdict after every attempt: read it at the verdict slot
        after the judge's own text (judges.forced_verdict), when the template has one."""
        if not pending or not (self.config.force_verdict and can_force(self.template)):
            return
        try:
            slots = force_verdicts(self.model, self.template, [(m, o.raw or "") for m, o in pending.values()])
        except BackendError as exc:  # e.g. a server that cannot score text: the failures stay failures
            for _, outcome in pending.values():
                outcome.error = f"{outcome.error}; the verdict slot could not be read ({exc})"
            return
        for (_, outcome), slot in zip(pending.values(), slots):
            outcome.forced = {**slot.meta(), "free_parse_error": outcome.error}
            outcome.label, outcome.error = slot.label, None

    def _read(self, outcome: _Outcome, completion, quoted: tuple[str, ...], attempt: int) -> None:
        """Fill ``outcome`` from one judge output: its verdict, read after any reasoning trace."""
        raw = completion.text
        if completion.meta.get("reasoning"):  # a server's reasoning parser returned the trace apart
            raw = f"<think>{completion.meta['reasoning']}</think>\n{raw}"
        trace, answer, unfinished = split_reasoning(raw)
        outcome.raw, outcome.attempts, outcome.reasoning = raw, attempt + 1, bool(trace)
        try:
            if unfinished and not answer:
                raise VerdictError("no verdict: the judgment ended inside its reasoning trace "
                                   "(raise --max-new-tokens)")
            outcome.label, outcome.error = parse_verdict(self.template, answer, quoted), None
        except VerdictError as exc:
            outcome.error = str(exc)

    def one(self, key: str, messages: list[dict], quoted: tuple[str, ...]) -> _Outcome:
        """The concurrent path's unit: one judge prompt, retried on its own; the retry seeds
        come from the prompt, not from what else was in flight."""
        if self.config.mode == "logprob":
            _, tokens = self.template.scoring_split()
            context = logprob_context(self.model, self.template, messages)
            return _Outcome(logprobs=self.model.score([context], tokens)[0])
        if self.config.mode == "likelihood":
            return self._likelihood({key: (messages, quoted)})[key]
        outcome = _Outcome()
        prompt_id = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        for attempt in range(self.config.retries + 1):
            params = (self.config.params if attempt == 0
                      else self.config.retry_params(_derived_seed(self.config.seed, prompt_id, attempt)))
            self._read(outcome, self.model.generate([messages], params)[0], quoted, attempt)
            if not outcome.error:
                break
        if outcome.error:
            self._force({key: (messages, outcome)})
        return outcome

    def record(self, task: Task, outcomes: dict[str, _Outcome]) -> Record:
        """The task's record; without a verdict (``winner`` None, ``parse_error`` set) when a
        judge output held none even after retries."""
        parts = [outcomes[k] for k in task.prompt_keys]
        meta = {"order": task.order, "mode": self.config.mode, "template_sha256": self.template.sha256,
                "seed": self.config.seed}
        p = task.pair
        # A judged text that holds a verdict marker may have steered the judge, defused or not.
        suspect = self.template.markers_in(prompt=p.prompt, **task.shown, reference=p.reference)
        if suspect:
            meta["suspect_verdict"] = suspect
        if p.pair_id in self.stripped:
            meta["reasoning_stripped"] = True
        fields = dict(pair_id=p.pair_id, prompt=p.prompt, **task.shown, judge=self.judge_id,
                      judge_family=self.judge_family, prompt_id=p.prompt_id, category=p.category,
                      reference=p.reference, template=self.template.name)
        if self.config.mode == "likelihood":
            return self._likelihood_record(fields, parts, meta)
        absolute = self.template.kind == ABSOLUTE
        if self.config.mode == "logprob":
            if not all(math.isfinite(lp) for x in parts for lp in x.logprobs):
                return Record(**fields, winner=None, meta=meta,
                              parse_error="the judge prompt with its answers is longer than the judge's context "
                                          "window: not judged")
            if absolute:
                prob, expected_a, expected_b = prob_a_from_scores(parts[0].logprobs, parts[1].logprobs)
                meta["expected_scores"] = [round(expected_a, 4), round(expected_b, 4)]
                meta["logprobs"] = [_labelled(self.template.labels, x.logprobs) for x in parts]
            else:
                prob = prob_a_pairwise(parts[0].logprobs[0], parts[0].logprobs[1])
                meta["logprobs"] = _labelled(self.template.labels, parts[0].logprobs)
            # The stored value decides the winner, so a reader can recompute it from the record.
            prob = round(prob, 6)
            return Record(**fields, winner=winner_from_prob(prob, self.config.tie_band), prob_a=prob, meta=meta)
        meta["attempts"] = max(x.attempts for x in parts)
        forced = [x.forced for x in parts]
        if not any(x.error for x in parts):
            meta["verdict_source"] = FORCED if any(forced) else FREE
            if any(forced):
                meta["forced_slot"] = forced if absolute else forced[0]
        if any(x.reasoning for x in parts):
            meta["reasoning_set_aside"] = True
        raw = parts[0].raw if not absolute else "\n\n".join(
            f"[judgment of response {side}]\n{x.raw}" for side, x in zip("AB", parts))
        errors = [x.error for x in parts if x.error]
        if errors:
            return Record(**fields, winner=None, parse_error="; ".join(errors), raw_output=raw, meta=meta)
        strength = None
        if absolute:
            score_a, score_b = int(parts[0].label), int(parts[1].label)
            meta["scores"] = [score_a, score_b]
            winner = winner_from_scores(score_a, score_b)
        else:
            winner = winner_from_label(self.template, parts[0].label)
            strength = strength_from_label(self.template, parts[0].label)
        return Record(**fields, winner=winner, raw_output=raw, meta=meta, strength=strength)

    def _likelihood_record(self, fields: dict, parts: list[_Outcome], meta: dict) -> Record:
        fields["template"] = None
        (sum_a, n_a), (sum_b, n_b) = parts[0].likelihood, parts[1].likelihood
        sides = (("response_a", sum_a, n_a), ("response_b", sum_b, n_b))
        empty = [side for side, _, n in sides if not n]
        if empty:
            return Record(**fields, winner=None, meta=meta, parse_error=f"{' and '.join(empty)} has no tokens: an "
                                                                        "empty answer has no likelihood to compare")
        too_long = [f"{side} ({n} tokens)" for side, total, n in sides if not math.isfinite(total)]
        if too_long:
            return Record(**fields, winner=None, meta=meta,
                          parse_error=f"{' and '.join(too_long)} with the question is longer than the judge's "
                                      "context window: not scored")
        bytes_a, bytes_b = (len(fields[side].encode("utf-8")) for side in ("response_a", "response_b"))
        meta["likelihood"] = {"logprob_per_byte": [round(sum_a / bytes_a, 6), round(sum_b / bytes_b, 6)],
                              "mean_logprob": [round(sum_a / n_a, 6), round(sum_b / n_b, 6)],
                              "tokens": [n_a, n_b], "bytes": [bytes_a, bytes_b]}
        prob = round(prob_a_per_byte((sum_a, n_a, bytes_a), (sum_b, n_b, bytes_b)), 6)
        return Record(**fields, winner=winner_from_prob(prob, self.config.tie_band), prob_a=prob, meta=meta)


def _labelled(labels: Sequence[str], logprobs: Sequence[float]) -> dict[str, float]:
    return {label: round(lp, 6) for label, lp in zip(labels, logprobs)}


def _strip_pairs(pairs: Sequence[Pair]) -> tuple[list[Pair], set[str]]:
    """Pairs whose responses lost their reasoning traces, and the ids of those that had one."""
    out, changed = [], set()
    for p in pairs:
        a, b = strip_reasoning(p.response_a), strip_reasoning(p.response_b)
        if (a, b) != (p.response_a.strip(), p.response_b.strip()):
            changed.add(p.pair_id)
            p = dataclasses.replace(p, response_a=a, response_b=b)
        out.append(p)
    return out, changed


def judge_pairs(
    model: Model,
    pairs: Sequence[Pair],
    config: JudgeConfig,
    files: RunFiles,
    *,
    judge_id: str | None = None,
    judge_family: str | None = None,
    progress: bool = True,
    concurrency: int | None = None,
    warn=None,
    slow_s: float = SLOW_S,
) -> Counts:
    """Judge every pair (both orders unless ``config.swap`` is off), appending to ``files``.

    Work already in the output or its failures file for the same (pair, order, judge,
    template hash, mode) is skipped, so an interrupted run is finished by running it
    again. ``concurrency=N`` sends one request per judge prompt with N in flight (for
    server backends); without it the work goes to the model in chunks (local engines)::

        with RunFiles("out.jsonl") as files:
            counts = judge_pairs(model, pairs, JudgeConfig(get_template("mt-bench-pair")), files)
    """
    judge_id = judge_id or model.id
    if judge_family is None:
        from pairlab.models import family_of

        judge_family = family_of(judge_id)
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    counts = Counts(pairs=len(pairs))
    judge = _Judge(model, judge_id, judge_family, config, counts)
    if config.strip_reasoning:
        pairs, judge.stripped = _strip_pairs(pairs)
    chunks = plan_chunks(pairs, dataclasses.replace(config, batch_size=1) if concurrency else config)
    counts.tasks = sum(len(c) for c in chunks)
    counts.skipped_existing = sum(files.seen(judge.key(t)) for c in chunks for t in c)
    bar = tqdm(total=counts.tasks, initial=counts.skipped_existing, unit="verdict", disable=not progress,
               desc=f"judging with {judge_id}", dynamic_ncols=True, smoothing=0.1)

    def write(task: Task, outcomes: dict[str, _Outcome]) -> None:
        record = judge.record(task, outcomes)
        if record.parse_error is None:
            files.write_record(judge.key(task), record)
            counts.records_written += 1
            counts.forced += record.meta.get("verdict_source") == FORCED
        else:
            files.write_failure(judge.key(task), record)
            counts.parse_failures += 1
        bar.update(1)

    pace = _Pace(counts.tasks - counts.skipped_existing, slow_s, warn)
    try:
        if concurrency:
            _judge_concurrently(judge, chunks, files, concurrency, write)
        else:
            for chunk in chunks:
                todo = [t for t in chunk if not files.seen(judge.key(t))]
                if todo:
                    outcomes = judge.run_chunk(chunk)
                    for task in todo:
                        write(task, outcomes)
                    pace.done(len(todo))
    finally:
        bar.close()
        keys = [judge.key(t) for c in chunks for t in c]
        counts.records = sum(k in files.done for k in keys)
        counts.failures = sum(k in files.failed for k in keys)
        counts.ties = sum(files.done.get(k) == "tie" for k in keys)
    return counts


class _Pace:
    """After the first judgments, say once when the whole job will take longer than ``slow_s``
    at their pace: the progress bar's ETA is there, but a user should hear it in words, early."""

    def __init__(self, total: int, slow_s: float, warn):
        self.total, self.slow_s, self.warn = total, slow_s, warn
        self.start, self.finished, self.said = time.perf_counter(), 0, False

    def done(self, n: int) -> None:
        self.finished += n
        if self.said or self.warn is None or not self.finished:
            return
        self.said = True
        elapsed = time.perf_counter() - self.start
        each = elapsed / self.finished
        left = each * (self.total - self.finished)
        if elapsed + left > self.slow_s:
            self.warn(f"slow judge: {self.finished} of {self.total} judgments took {elapsed:.0f} s ({each:.0f} s each "
                      f"here); the rest will take about {left / 60:.0f} min more. Faster: --mode logprob (one "
                      "forward pass a judgment), fewer pairs (--limit), a smaller --max-new-tokens, or a judge on a "
                      "GPU or an OpenAI-compatible server")


def _judge_concurrently(judge: _Judge, chunks: list[list[Task]], files: RunFiles, limit: int, write) -> None:
    """One request per distinct judge prompt, ``limit`` in flight; a task's record is written
    the moment its last prompt is answered (records appear in completion order)."""
    waiting: dict[str, list[Task]] = {}
    jobs = []
    for chunk in chunks:  # a chunk is one pair here: both orders share absolute grading's prompts
        for task in chunk:
            if files.seen(judge.key(task)):
                continue
            for key, messages in zip(task.prompt_keys, task.prompts):
                if key not in waiting:
                    waiting[key] = []
                    quoted = _quoted(task.pair, messages)
                    jobs.append((key, lambda k=key, m=messages, q=quoted: judge.one(k, m, q)))
                waiting[key].append(task)
    outcomes: dict[str, _Outcome] = {}
    remaining = {key: len(tasks) for key, tasks in waiting.items()}
    counts = judge.counts
    for key, outcome in completed(jobs, limit):
        outcomes[key] = outcome
        if judge.config.mode == "generate":
            counts.retries += outcome.attempts - 1
            counts.failed_attempts += outcome.attempts - (0 if outcome.error else 1)
            counts.reasoning_traces += outcome.reasoning
        for task in waiting[key]:
            if all(k in outcomes for k in task.prompt_keys) and not files.seen(judge.key(task)):
                write(task, outcomes)
                for k in task.prompt_keys:  # answers no task still waits for are let go
                    remaining[k] -= 1
                    if remaining[k] == 0:
                        del outcomes[k]
