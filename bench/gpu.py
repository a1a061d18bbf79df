"""The project's GPU bench: the arena's battle path and the three judging modes on one card,
each beside its anchor, with the ratio.

Models are random weights of real shapes built on the device from their configs (no hub:
weights do not change speed): a Mistral-7B-shaped model beside the SmolLM2-135M shape, bf16 on
CUDA. The tokenizer is built in code: a word-level vocabulary ``t0 .. tN`` covering the model's
ids, so a text of n words is n tokens and a streamed answer's tokens are its words.

Prints, for the engine it ran (transformers' continuous batching through ``TransformersModel``;
vLLM is not used here):

* arena: panes streamed through ``TransformersModel.stream`` at 1, 4 and 16 concurrent visitors,
  first the big model alone (one model per process, as ``arena.model_server`` serves it: CUDA
  graphs; on CUDA also with the library's KV padding preset instead of the engine's
  ``GRAPH_KV_TOKENS``, and the ratio), then both panes of a battle, the big model beside the
  small one in one process (no graphs): tok/s per pane, in all, first token p50/p99; anchor: raw
  ``model.generate`` of the big model at batch 1 and 64, timed before any engine starts;
* judging: ``judges.runner.judge_pairs`` (``judges.run``'s code path) in logprob, likelihood and
  generate mode: verdicts/s against the bare batched forward pass over the same texts, and
  against the compute limit (FLOPs / measured matmul peak) or, for generate, the bandwidth
  limit (weight bytes / measured copy bandwidth per decode step).

Peaks are measured on the device (a large bf16 matmul, a large copy), not taken from a data
sheet, so the limits are what this card reaches, a little under its nominal figures.
Finishes in about 2.5 minutes on one H200 (under the 6 minutes budgeted). ``--tiny`` (the default without
CUDA) runs tiny shapes on CPU in well under a minute.

    python bench/gpu.py [--tiny] [--new-tokens 128] [--prompt-tokens 960] [--pairs 64]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig, MistralConfig, PreTrainedTokenizerFast  # noqa: E402

from judges.runner import JudgeConfig, gpu_batch_size, judge_pairs, logprob_context  # noqa: E402
from judges.run_files import RunFiles  # noqa: E402
from judges.templates import BUILTIN  # noqa: E402
from pairlab.backends import batching  # noqa: E402
from pairlab.backends.base import GenerationParams  # noqa: E402
from pairlab.backends.hf import TransformersModel  # noqa: E402
from pairlab.records import Pair  # noqa: E402

# Mistral-7B-v0.1 and SmolLM2-135M, from their published config.json files.
REAL = {
    "big": ("mistral-7b-shape", MistralConfig, dict(
        vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=32768, rope_theta=10000.0,
        sliding_window=None)),
    "small": ("smollm2-135m-shape", LlamaConfig, dict(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192, rope_theta=100000.0,
        tie_word_embeddings=True)),
}
TINY = {
    "big": ("tiny-mistral-shape", MistralConfig, dict(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, sliding_window=None)),
    "small": ("tiny-llama-shape", LlamaConfig, dict(
        vocab_size=384, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True)),
}
SPECIALS = ("<unk>", "<s>", "</s>")
TEMPLATE = BUILTIN["prometheus-relative"]
ARENA_PARAMS = dict(temperature=0.7, top_p=0.9)  # the shipped arena.toml's sampling


def word_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    """Every id a word (``<unk> <s> </s> t3 .. tN``), whitespace split: no hub, no files."""
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    vocab.update({f"t{i}": i for i in range(len(SPECIALS), vocab_size)})
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                  pad_token="</s>")
    # A chat template of its own: the plain Question/Answer format's stop strings would need a
    # subword vocabulary (transformers' stop-string matcher), which a word vocabulary is not.
    tok.chat_template = "<s> {% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}assistant"
    return tok


def served(name: str, model, tokenizer, max_inflight: int) -> TransformersModel:
    """A loaded model behind the backend, streaming through its own continuous-batching engine."""
    return TransformersModel(name, Path("."), template="chat", device=str(model.device), engine="continuous",
                             max_inflight=max_inflight, loaded=(model, tokenizer))


def build(shape, device: str, dtype: torch.dtype, max_inflight: int) -> TransformersModel:
    name, config_class, dims = shape
    config = config_class(bos_token_id=1, eos_token_id=2, pad_token_id=2, **dims)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # initialised in the target dtype: a 7B in float32 would take 28 GB
    try:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    model.eval()
    return served(name, model, word_tokenizer(config.vocab_size), max_inflight)


def words(rng: torch.Generator, n: int, vocab: int) -> str:
    ids = torch.randint(len(SPECIALS), vocab, (n,), generator=rng).tolist()
    return " ".join(f"t{i}" for i in ids)


def sync(device) -> None:
    # A model's device reads "cuda:0": compared with "cuda" it never synchronised, and each
    # timing ended while the card still ran the work it had queued.
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# -- the card's limits -----------------------------------------------------------------------
def measure_peaks(device: str, dtype: torch.dtype, tiny: bool) -> tuple[float, float]:
    """(FLOP/s of a large matmul, bytes/s of a large copy) on this device, best of a few."""
    n = 1024 if tiny else 8192
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    src = torch.empty(2**24 if tiny else 2**29, device=device, dtype=torch.uint8)
    dst = torch.empty_like(src)
    best_flops = best_bw = 0.0
    for _ in range(4):
        sync(device)
        t = time.perf_counter()
        a @ b
        sync(device)
        best_flops = max(best_flops, 2 * n**3 / (time.perf_counter() - t))
        t = time.perf_counter()
        dst.copy_(src)
        sync(device)
        best_bw = max(best_bw, 2 * src.numel() / (time.perf_counter() - t))  # read and write
    return best_flops, best_bw


def weight_bytes(model: TransformersModel) -> int:
    return sum(p.numel() * p.element_size() for p in model.model.parameters())


def decode_bytes(model: TransformersModel) -> int:
    """Weight bytes one decode step reads: all of them but the input embeddings, of which a
    step reads one row each (unless tied to the output layer, which reads them all)."""
    embeddings = model.model.get_input_embeddings().weight
    tied = embeddings is model.model.get_output_embeddings().weight
    return weight_bytes(model) - (0 if tied else embeddings.numel() * embeddings.element_size())


def forward_flops(model: TransformersModel, tokens: int) -> float:
    """Matmul FLOPs of one causal forward pass over ``tokens`` tokens: 2 per weight per token,
    plus attention's scores and mix (causal: half the square)."""
    config = model.model.config
    n_params = sum(p.numel() for p in model.model.parameters())
    return 2 * n_params * tokens + 2 * config.num_hidden_layers * tokens**2 * config.hidden_size


# -- arena -----------------------------------------------------------------------------------
def battle(models: tuple[TransformersModel, ...], prompt: str, seed: int, new_tokens: int, panes: list) -> None:
    """One visitor: its panes at once, each a stream, as the arena runs them."""

    def pane(model: TransformersModel) -> None:
        params = GenerationParams(max_new_tokens=new_tokens, seed=seed, **ARENA_PARAMS)
        start = time.perf_counter()
        first, text = None, ""
        for piece in model.stream(prompt, params):
            first = first or time.perf_counter() - start
            text += piece
        panes.append({"model": model.id, "first": first or float("nan"), "tokens": len(text.split()),
                      "seconds": time.perf_counter() - start})

    threads = [threading.Thread(target=pane, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def arena(models: tuple[TransformersModel, ...], visitors: int, new_tokens: int, prompt_tokens: int, rng) -> dict:
    prompts = [words(rng, prompt_tokens, 300) for _ in range(visitors)]
    panes: list = []
    start = time.perf_counter()
    threads = [threading.Thread(target=battle, args=(models, p, i, new_tokens, panes))
               for i, p in enumerate(prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    expected = len(models) * visitors
    if len(panes) != expected:  # a pane's thread failed (its error is printed above)
        raise SystemExit(f"{expected - len(panes)} of {expected} panes failed")
    firsts = [p["first"] for p in panes]
    return {"pane": {m.id: statistics.median(p["tokens"] / p["seconds"] for p in panes if p["model"] == m.id)
                     for m in models},
            "all": sum(p["tokens"] for p in panes) / wall, "p50": pct(firsts, 0.5), "p99": pct(firsts, 0.99),
            "tokens": sum(p["tokens"] for p in panes)}


def arena_rows(models, visitors, new_tokens, rng, reference) -> dict:
    """Warm-up at the largest batch (engines started, graphs captured), then a row per load."""
    arena(models, max(visitors), 8, 16, rng)
    big = models[0]
    print(f"engine: {big.info()['engine']}, CUDA graphs: {big.engine.graphs}")
    print("visitors | " + " | ".join(f"{m.id} pane tok/s" for m in models)
          + " | in all tok/s | first token p50 / p99 s | big pane / raw batch 1 | in all / raw largest batch")
    rows = {}
    for v in visitors:
        r = rows[v] = arena(models, v, new_tokens, 16, rng)
        print(f"{v:>8} | " + " | ".join(f"{r['pane'][m.id]:.1f}" for m in models)
              + f" | {r['all']:.1f} | {r['p50']:.3f} / {r['p99']:.3f} | {r['pane'][big.id] / reference[1]:.2f}x"
              f" | {r['all'] / max(reference.values()):.2f}x")
    return rows


def raw_generate(model: TransformersModel, batch: int, new_tokens: int, prompt_tokens: int, rng) -> float:
    """tok/s of ``model.generate`` itself, greedy, every row exactly ``new_tokens`` long."""
    vocab = model.model.config.vocab_size
    ids = torch.randint(len(SPECIALS), vocab, (batch, prompt_tokens), generator=rng).to(model.model.device)
    sync(model.device)
    start = time.perf_counter()
    with torch.inference_mode():
        model.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=2)
    sync(model.device)
    return batch * new_tokens / (time.perf_counter() - start)


# -- judging ---------------------------------------------------------------------------------
def judge_pairs_of(n: int, answer_tokens: int, vocab: int, rng) -> list[Pair]:
    return [Pair(pair_id=f"p{i}", prompt=words(rng, 32, vocab), model_a="a", model_b="b",
                 response_a=words(rng, answer_tokens, vocab), response_b=words(rng, answer_tokens, vocab))
            for i in range(n)]


def timed_judging(model, pairs, mode: str, batch_size: int, new_tokens: int) -> tuple[float, int]:
    config = JudgeConfig(TEMPLATE, mode=mode, batch_size=batch_size, max_new_tokens=new_tokens, retries=0,
                         force_verdict=False)
    with tempfile.TemporaryDirectory() as tmp, RunFiles(Path(tmp) / "out.jsonl", log=lambda m: None) as files:
        sync(model.device)
        start = time.perf_counter()
        counts = judge_pairs(model, pairs, config, files, progress=False)
        sync(model.device)
        seconds = time.perf_counter() - start
    return seconds, counts.tasks


def judge_texts(model, pairs, mode: str) -> list[str]:
    """The texts each mode's model call reads, for the bare forward pass over the same work."""
    from judges.runner import _continued, plan_chunks

    config = JudgeConfig(TEMPLATE, mode=mode, batch_size=len(pairs) * 2)
    texts = []
    for chunk in plan_chunks(pairs, config):
        for task in chunk:
            for messages in task.prompts:
                if mode == "likelihood":
                    context = model.render(messages[:1])
                    texts.append(context + _continued(context, messages[1]["content"]))
                else:
                    texts.append(logprob_context(model, TEMPLATE, messages))
    return list(dict.fromkeys(texts))  # as the runner scores them: once each (likelihood's two orders share)


def bare_forward(model, texts: list[str], batch_size: int) -> float:
    sync(model.device)
    start = time.perf_counter()
    model.forward(texts, batch_size=batch_size)
    sync(model.device)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on CPU (the default without CUDA)")
    parser.add_argument("--new-tokens", type=int, help="tokens each stream / generation decodes (128; tiny 16)")
    parser.add_argument("--prompt-tokens", type=int, help="tokens of a judged answer (400, ~960-token prompts)")
    parser.add_argument("--pairs", type=int, help="pairs judged in each mode, both orders (64; tiny 8)")
    parser.add_argument("--batch-size", type=int, help="judging batch size (default: judges.run's rule)")
    parser.add_argument("--visitors", default="1,4,16", help="concurrent arena visitors, comma-separated")
    args = parser.parse_args(argv)
    tiny = args.tiny or not torch.cuda.is_available()
    device = "cpu" if tiny else "cuda"
    dtype = torch.float32 if tiny else torch.bfloat16
    new_tokens = args.new_tokens or (16 if tiny else 128)
    answer_tokens = args.prompt_tokens or (40 if tiny else 400)
    n_pairs = args.pairs or (8 if tiny else 64)
    visitors = [int(v) for v in args.visitors.split(",")]
    rng = torch.Generator().manual_seed(0)
    threads = torch.get_num_threads()
    if tiny:
        torch.set_num_threads(1)
    try:
        return run(args, tiny, device, dtype, new_tokens, answer_tokens, n_pairs, visitors, rng)
    finally:
        torch.set_num_threads(threads)


def run(args, tiny, device, dtype, new_tokens, answer_tokens, n_pairs, visitors, rng) -> int:
    shapes = TINY if tiny else REAL
    began = time.perf_counter()
    name = torch.cuda.get_device_name() if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"device: {name}; dtype {str(dtype).removeprefix('torch.')}; torch {torch.__version__}")
    peak_flops, bandwidth = measure_peaks(device, dtype, tiny)
    print(f"measured peaks: matmul {peak_flops / 1e12:.2f} TFLOP/s, copy {bandwidth / 1e9:.1f} GB/s")
    inflight = max(visitors)
    big = build(shapes["big"], device, dtype, inflight)
    print(f"models: {big.id} {weight_bytes(big) / 1e9:.2f} GB, {shapes['small'][0]}; max_inflight {inflight}")
    print(f"\n== arena: panes streamed through the engines, {new_tokens} new tokens, seeded sampling ==")
    batches = (1, 64 if not tiny else 8)
    for b in batches:  # warm-up: the first call at a shape pays for its kernels' set-up
        raw_generate(big, b, 4, 16, rng)
    reference = {b: raw_generate(big, b, new_tokens, 16, rng) for b in batches}  # before any engine starts
    step_floor = decode_bytes(big) / bandwidth
    print(f"anchor: raw {big.id} model.generate: " + ", ".join(
        f"batch {b} {v:.1f} tok/s" for b, v in reference.items())
        + f"; bandwidth limit batch 1: {1 / step_floor:.1f} tok/s")
    alone = big
    if device == "cuda":
        # The engine's one speed setting on a GPU, beside the library's preset on the same weights.
        print(f"\n-- {big.id} alone, the library's KV padding preset (each captured step reads 16,384 slots) --")
        saved, batching.GRAPH_KV_TOKENS = batching.GRAPH_KV_TOKENS, 0
        try:
            preset = arena_rows((big,), visitors, new_tokens, rng, reference)
        finally:
            batching.GRAPH_KV_TOKENS = saved
            big.close()
        alone = served(big.id, big.model, big.tokenizer, inflight)
    print(f"\n-- one model per process ({big.id} alone, as python -m arena.model_server serves it) --")
    ours = arena_rows((alone,), visitors, new_tokens, rng, reference)
    alone.close()  # its engine; the weights stay for the next section and the judging
    if device == "cuda":
        print("engine's padding / library preset: " + ", ".join(
            f"{v} visitors: a pane {ours[v]['pane'][big.id] / preset[v]['pane'][big.id]:.2f}x, "
            f"in all {ours[v]['all'] / preset[v]['all']:.2f}x" for v in visitors))
    print("\n-- both models in one process (the arena's own engines, sharing the GPU) --")
    # A fresh engine over the big model's weights: an engine decides its CUDA graphs once, at its start.
    both = (served(big.id, big.model, big.tokenizer, inflight), build(shapes["small"], device, dtype, inflight))
    arena_rows(both, visitors, new_tokens, rng, reference)
    for m in both:
        m.close()

    pairs = judge_pairs_of(n_pairs, answer_tokens, big.model.config.vocab_size, rng)
    batch = args.batch_size or judging_batch(big, pairs, device, new_tokens)
    big.batch_size = batch  # the model's own batches inside each chunk, as judges.run loads it
    print(f"(arena section: {time.perf_counter() - began:.0f} s since start)")
    print(f"\n== judging: judges.run's code path, {big.id}, {n_pairs} pairs x 2 orders, batch {batch} ==")
    timed_judging(big, pairs[:2], "logprob", batch, 4)  # warm-up
    print("mode | verdicts/s | bare forward rows/s | our time / the forward's | compute limit rows/s | "
          "ours / limit")
    for mode in ("logprob", "likelihood"):
        seconds, verdicts = timed_judging(big, pairs, mode, batch, new_tokens)
        texts = judge_texts(big, pairs, mode)
        floor = bare_forward(big, texts, batch)
        lengths = [len(big.tokenizer(t).input_ids) for t in texts]
        limit = len(texts) / sum(forward_flops(big, n) / peak_flops for n in lengths)
        ours = verdicts / seconds
        rows = len(texts) / floor
        # likelihood scores each answer alone: a row per answer, the two orders sharing them
        per_verdict = len(texts) / verdicts
        print(f"{mode} | {ours:.2f} | {rows:.2f} | {seconds / floor:.2f}x | {limit:.1f} "
              f"({mean(lengths):.0f}-token rows) | {limit / per_verdict / ours:.1f}x slower")
    gen_pairs = pairs[: max(1, batch // 2)]
    seconds, verdicts = timed_judging(big, gen_pairs, "generate", batch, new_tokens)
    ours = verdicts * new_tokens / seconds  # at most: a judge that stops early decodes fewer
    steps = math.ceil(verdicts / batch) * new_tokens
    prompt = round(mean([len(big.tokenizer(t).input_ids) for t in judge_texts(big, gen_pairs, "logprob")]))
    raw_generate(big, min(batch, verdicts), 2, prompt, rng)  # warm-up at this shape
    raw = raw_generate(big, min(batch, verdicts), new_tokens, prompt, rng)  # the judge prompts' length
    print(f"generate | {verdicts / seconds:.2f} verdicts/s, <= {ours:.1f} tok/s, {seconds / steps * 1e3:.2f} ms a step "
          f"| raw generate batch {min(batch, verdicts)}: {raw:.1f} tok/s, {ours / raw:.2f}x | bandwidth floor "
          f"(weights) {step_floor * 1e3:.2f} ms a step | {seconds / steps / step_floor:.1f}x the floor")
    print(f"\nfinished in {time.perf_counter() - began:.0f} s")
    return 0


def mean(values) -> float:
    return sum(values) / len(values)


def judging_batch(model, pairs, device: str, new_tokens: int) -> int:
    """judges.run's choice without --batch-size: from free GPU memory and the prompts' lengths
    on CUDA (sized for generate mode, the largest rows), its CPU default otherwise."""
    if device != "cuda":
        return 8
    return gpu_batch_size(model, pairs, JudgeConfig(TEMPLATE, mode="generate", max_new_tokens=new_tokens))


if __name__ == "__main__":
    raise SystemExit(main())
