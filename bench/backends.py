"""Backend benchmark (issue 2): load times, tokens/s, and what batching buys.

For each embedded model prints: cold load (GGUF dequantized into an empty cache) and
warm load (cached safetensors) seconds, after the libraries are imported, and the
import time that both pay on top, greedy tokens/s at batch size 1, and the
throughput ratio of batched (8 prompts at once) over one-at-a-time generation.
Targets: warm load >= 5x faster than cold; batched throughput >= 2x one-at-a-time.
Timings are medians over repeats; each load runs in a fresh process.

For a model whose template ends its answers at stop strings (Gemma 3 270M, a base model), also
one short ``generate()`` call (two prompts, 16 new tokens) with the stop criteria the backend
keeps, against the anchor: the same call with the criteria built again, as transformers builds
them from the whole vocabulary on every call given ``stop_strings``. The two alternate; the
ratio is of their medians.

    python bench/backends.py [--repeats 3] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairlab.backends.base import GenerationParams  # noqa: E402
from pairlab.models import get_model  # noqa: E402

MODELS = ("smollm2-135m-instruct", "gemma3-270m")
PROMPTS = [
    "Explain how a refrigerator keeps food cold.",
    "Write a short story about a lighthouse keeper.",
    "Describe the water cycle to a ten-year-old.",
    "What are the pros and cons of remote work?",
    "Give advice to someone learning to cook.",
    "Explain why the sky is blue.",
    "Describe a walk through a busy market.",
    "How do vaccines train the immune system?",
]


def load_seconds(model_id: str, cache: str) -> tuple[float, float]:
    """(model load, library imports) seconds in a fresh process. The imports (torch,
    transformers and its lazy tokenizer modules) cost the same cold or warm, so the
    target is judged on the model load; the total is printed beside it."""
    code = ("import time; t0=time.perf_counter(); import pairlab.backends.hf, transformers.models.auto.tokenization_auto; "
            "t1=time.perf_counter(); from pairlab.models import get_model; "
            f"get_model({model_id!r}); t2=time.perf_counter(); print(t2-t1, t1-t0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PAIRLAB_CACHE": cache})
    load, imports = out.stdout.strip().splitlines()[-1].split()
    return float(load), float(imports)


def stop_criteria_seconds(model, chats, repeats: int) -> dict[str, float]:
    """Median seconds of one ``generate()`` call with the backend's kept stop criteria, and with
    them built again before the call (the anchor), in alternating pairs."""
    params = GenerationParams(max_new_tokens=16)
    model.generate(chats, params)  # warm-up; builds the criteria once
    kept, built = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        model.generate(chats, params)
        kept.append(time.perf_counter() - start)
        model._stop_criteria.clear()
        start = time.perf_counter()
        model.generate(chats, params)
        built.append(time.perf_counter() - start)
    return {"stops_kept_s": statistics.median(kept), "stops_built_s": statistics.median(built)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    params = GenerationParams(max_new_tokens=args.max_new_tokens)
    chats = [[{"role": "user", "content": p}] for p in PROMPTS]
    results = {}
    for model_id in args.models.split(","):
        with tempfile.TemporaryDirectory() as cache:
            cold, cold_imports = load_seconds(model_id, cache)  # one cold load: it fills the cache
            warm_runs = [load_seconds(model_id, cache) for _ in range(args.repeats)]
            warm = statistics.median(w for w, _ in warm_runs)
            imports = statistics.median([cold_imports] + [i for _, i in warm_runs])
        model = get_model(model_id)
        model.generate(chats[:1], GenerationParams(max_new_tokens=4))  # warm-up
        single_tps, batched_tps = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            n = sum(model.generate([c], params, batch_size=1)[0].n_tokens for c in chats)
            single_tps.append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            n = sum(c.n_tokens for c in model.generate(chats, params, batch_size=8))
            batched_tps.append(n / (time.perf_counter() - start))
        r = {
            "cold_load_s": cold, "warm_load_s": warm, "load_speedup": cold / warm, "import_s": imports,
            "load_speedup_with_imports": (cold + imports) / (warm + imports),
            "tokens_per_s_batch1": statistics.median(single_tps),
            "tokens_per_s_batch8": statistics.median(batched_tps),
        }
        r["batch_speedup"] = r["tokens_per_s_batch8"] / r["tokens_per_s_batch1"]
        if model.default_stop:
            r.update(stop_criteria_seconds(model, chats[:2], max(args.repeats, 4)))
        results[model_id] = r
        print(f"{model_id}")
        print(f"  cold load {cold:7.2f} s   warm load (median) {warm:6.2f} s   ratio {r['load_speedup']:5.1f}x"
              f"  target >= 5x  {'PASS' if r['load_speedup'] >= 5 else 'FAIL'}")
        print(f"  (+ {imports:.2f} s importing torch/transformers in either case: process start to ready "
              f"{cold + imports:.2f} s cold, {warm + imports:.2f} s warm, ratio {r['load_speedup_with_imports']:.1f}x)")
        print(f"  tokens/s batch 1 (median) {r['tokens_per_s_batch1']:6.1f}   batch 8 {r['tokens_per_s_batch8']:6.1f}"
              f"   ratio {r['batch_speedup']:4.2f}x  target >= 2x  {'PASS' if r['batch_speedup'] >= 2 else 'FAIL'}")
        if "stops_kept_s" in r:
            print(f"  generate() with stop strings, 2 prompts x 16 tokens (median): criteria kept {r['stops_kept_s']:.2f} s,"
                  f" built on every call {r['stops_built_s']:.2f} s   ratio {r['stops_built_s'] / r['stops_kept_s']:.2f}x")
        del model
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
