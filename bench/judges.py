"""Judge throughput against its anchors: logprob mode vs one bare forward pass, batched vs batch size 1.

Judges the same pairs (PandaLM test set rows, both orders) with the embedded judge and
prints pairs/s for logprob mode and generate mode (feedback capped at 128 new tokens),
each batched and at batch size 1, next to one bare forward pass of the backend over the
very prompts logprob mode scores (its floor: scoring can only add tokenizing, reading
two logits and writing records). Runs are interleaved so drifting machine load hits
every variant alike; medians are reported.

Targets: logprob mode within 1.25x of the floor; generate mode batched at least 2.5x
faster than batch size 1.

Usage: python bench/judges.py [--pairs 16] [--batch-size 8] [--repeats 3] [--gen-repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `python bench/judges.py` puts bench/ first on sys.path, where this very file would
# shadow the judges package; the repository root must come first instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from pairlab.models import get_model  # noqa: E402
from analysis.importers.pandalm import pairs_to_judge  # noqa: E402
from pairlab.records import Pair  # noqa: E402
from judges.runner import JudgeConfig, judge_pairs, logprob_context, plan_chunks  # noqa: E402
from judges.run_files import RunFiles  # noqa: E402
from judges.templates import BUILTIN  # noqa: E402

PANDALM = ROOT.parent / "shared" / "data" / "pandalm" / "testset-v1.json"
TEMPLATE = BUILTIN["prometheus-relative"]


def load_pairs(n: int) -> list[Pair]:
    try:
        return pairs_to_judge(PANDALM, n)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def scored_contexts(model, pairs: list[Pair], config: JudgeConfig) -> list[str]:
    """Exactly the texts logprob mode sends through the model."""
    seen = {}
    for chunk in plan_chunks(pairs, config):
        for task in chunk:
            for key, messages in zip(task.prompt_keys, task.prompts):
                seen.setdefault(key, logprob_context(model, TEMPLATE, messages))
    return list(seen.values())


def time_judging(model, pairs: list[Pair], config: JudgeConfig) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with RunFiles(Path(tmp) / "out.jsonl", log=lambda msg: None) as files:
            counts = judge_pairs(model, pairs, config, files, progress=False)
        return time.perf_counter() - start, {"records": counts.records_written, "failures": counts.parse_failures}


def time_floor(model, contexts: list[str], batch_size: int) -> float:
    start = time.perf_counter()
    model.forward(contexts, batch_size=batch_size)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/judges.py", description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="smollm2-135m-instruct")
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="logprob and floor timings per batch size")
    parser.add_argument("--gen-repeats", type=int, default=1, help="generate-mode timings per batch size")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args(argv)

    pairs = load_pairs(args.pairs)
    sizes = (args.batch_size, 1)
    # One loaded model per batch size: the backend's batch size is fixed at load time.
    models = {bs: get_model(args.judge, batch_size=bs) for bs in sizes}
    if not hasattr(models[1], "forward"):
        raise SystemExit(f"the floor needs the transformers backend's bare forward pass; {args.judge} has none")
    contexts = scored_contexts(models[1], pairs, JudgeConfig(template=TEMPLATE))
    lengths = [len(models[1].tokenizer(c).input_ids) for c in contexts]
    print(f"judges bench: judge {args.judge}, template {TEMPLATE.name}, {len(pairs)} pairs x 2 orders = "
          f"{len(contexts)} judge prompts ({min(lengths)}-{max(lengths)} tokens, median "
          f"{statistics.median(lengths):.0f}); torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"repeats: logprob/floor {args.repeats}, generate {args.gen_repeats}; medians in seconds", flush=True)

    times: dict[tuple[str, int], list[float]] = {}
    outcomes: dict[tuple[str, int], dict] = {}
    for _ in range(args.repeats):
        for bs in sizes:
            times.setdefault(("floor", bs), []).append(time_floor(models[bs], contexts, bs))
            config = JudgeConfig(template=TEMPLATE, mode="logprob", batch_size=bs)
            seconds, outcomes[("logprob", bs)] = time_judging(models[bs], pairs, config)
            times.setdefault(("logprob", bs), []).append(seconds)
            print(f"  bs {bs}: floor {times[('floor', bs)][-1]:.2f}s, logprob {seconds:.2f}s", flush=True)
    for _ in range(args.gen_repeats):
        for bs in sizes:
            # No retries: this measures decoding throughput, not how often the judge misformats.
            config = JudgeConfig(template=TEMPLATE, mode="generate", batch_size=bs, retries=0,
                                 max_new_tokens=args.max_new_tokens)
            seconds, outcomes[("generate", bs)] = time_judging(models[bs], pairs, config)
            times.setdefault(("generate", bs), []).append(seconds)
            print(f"  bs {bs}: generate {seconds:.2f}s", flush=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    n = len(pairs)
    print()
    print(f"{'variant':<34}{'median s':>10}{'pairs/s':>10}")
    for bs in sizes:
        print(f"{f'floor: bare forward pass, bs {bs}':<34}{med[('floor', bs)]:>10.2f}{n / med[('floor', bs)]:>10.3f}")
        print(f"{f'logprob mode, bs {bs}':<34}{med[('logprob', bs)]:>10.2f}{n / med[('logprob', bs)]:>10.3f}")
    for bs in sizes:
        o = outcomes[("generate", bs)]
        label = f"generate mode (<= {args.max_new_tokens} tok), bs {bs}"
        print(f"{label:<34}{med[('generate', bs)]:>10.2f}{n / med[('generate', bs)]:>10.3f}"
              f"   ({o['records']} records, {o['failures']} parse failures)")
    print()
    big = args.batch_size
    lp_ratio = med[("logprob", big)] / med[("floor", big)]
    lp1_ratio = med[("logprob", 1)] / med[("floor", 1)]
    speedup = med[("generate", 1)] / med[("generate", big)]
    print(f"logprob / floor, bs {big}: {lp_ratio:.3f}x (target <= 1.25x: {'PASS' if lp_ratio <= 1.25 else 'FAIL'})")
    print(f"logprob / floor, bs 1: {lp1_ratio:.3f}x (target <= 1.25x: {'PASS' if lp1_ratio <= 1.25 else 'FAIL'})")
    print(f"generate bs {big} vs bs 1: {speedup:.2f}x faster (target >= 2.5x: {'PASS' if speedup >= 2.5 else 'FAIL'})")
    print(f"logprob bs {big} vs bs 1: {med[('logprob', 1)] / med[('logprob', big)]:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
