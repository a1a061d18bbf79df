"""Answer prompts with several models and write every model pair per prompt as PAIRS.jsonl.

Each model answers every prompt (batched, seeded; one model in memory at a time); then
for each prompt and each two models (in --models order: the earlier one is model_a)
one row is written with a pair_id that does not depend on the order of the two
responses. OUT.manifest.json names the models (weights hashes), decoding, seed,
versions and counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from pairlab.backends.base import Completion, Model
from pairlab.records import Pair, RecordError, make_pair_id, write_records
from judges.manifest import library_versions, manifest_path, sha256_file, write_manifest
from pairlab.prompts import PromptItem, load_prompts
from pairlab.cli import prog_name

__all__ = ["CUT_MARK", "answer", "build_pairs", "end_at_sentence", "main"]

# What an answer cut at the length cap ends with, so a reader knows the model had more to say.
CUT_MARK = " […]"
# A sentence end (with any closing quote or bracket) followed by white space.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")
_LIST_MARKER = re.compile(r"\s*\d+\.")  # "3." opening a numbered item ends no sentence


def end_at_sentence(text: str) -> str:
    """An answer that hit the length cap, cut after its last full sentence (or line) and
    marked with ``CUT_MARK``; when that would drop more than half of it, only marked."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text + " ")
            if not _LIST_MARKER.fullmatch(text[text.rfind("\n", 0, m.start()) + 1:m.end()])]
    ends += [i for i, c in enumerate(text) if c == "\n"]
    cut = max(ends, default=0)
    kept = text[:cut].rstrip() if cut >= len(text) / 2 else text.rstrip()
    if kept.count("```") % 2:  # a code block opened and not closed: end before it
        kept = kept[:kept.rfind("```")].rstrip() or kept
    return kept + CUT_MARK


def answer(model: Model, prompts: Sequence[PromptItem], params, batch_size: int,
           progress: bool = True, cut_at_sentence: bool = False) -> list[Completion]:
    """One completion per prompt, in input order; batches hold prompts of similar length.
    With ``cut_at_sentence``, an answer that hit the length cap ends at a sentence, marked
    (:func:`end_at_sentence`)."""
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i].prompt), i))
    out: list[Completion | None] = [None] * len(prompts)
    with tqdm(total=len(prompts), unit="prompt", desc=f"answering with {model.id}", disable=not progress,
              dynamic_ncols=True) as bar:
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            chats = [[{"role": "user", "content": prompts[i].prompt}] for i in batch]
            for i, completion in zip(batch, model.generate(chats, params)):
                if cut_at_sentence and completion.finish_reason == "length":
                    completion = dataclasses.replace(completion, text=end_at_sentence(completion.text))
                out[i] = completion
            bar.update(len(batch))
    return out


def build_pairs(prompts: Sequence[PromptItem], answers: dict[str, list[Completion]],
                families: dict[str, str]) -> list[Pair]:
    """Every pair of models for every prompt, prompts in file order."""
    pairs = []
    models = list(answers)
    for i, item in enumerate(prompts):
        for a, b in itertools.combinations(models, 2):
            ra, rb = answers[a][i].text, answers[b][i].text
            pairs.append(Pair(pair_id=make_pair_id(item.prompt, ra, rb), prompt=item.prompt, model_a=a, model_b=b,
                              response_a=ra, response_b=rb, reference=item.reference, family_a=families[a],
                              family_b=families[b], prompt_id=item.prompt_id, category=item.category))
    return pairs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog_name("python -m judges.generate"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", required=True, help="MT-Bench question.jsonl (first turn used), or a "
                        "JSONL/CSV file with a 'prompt' column (+ prompt_id/id, category, reference)")
    parser.add_argument("--models", required=True, help="comma-separated model names, at least two "
                        "(e.g. smollm2-135m-instruct,gemma3-270m)")
    parser.add_argument("--out", required=True, help="PAIRS.jsonl to write (replaced)")
    parser.add_argument("--limit", type=int, help="use only the first N prompts")
    parser.add_argument("--max-new-tokens", type=int, help="answer length cap (default: each model's configured one)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default: %(default)s)")
    parser.add_argument("--cut-at-sentence", action="store_true",
                        help=f"end an answer that hits the length cap after its last full sentence, marked "
                        f"{CUT_MARK.strip()!r} (for answers people read, such as the arena's prompt set)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per batch (default: %(default)s)")
    parser.add_argument("--skip-bad", action="store_true", help="skip malformed prompt rows instead of stopping")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="transformers models on CPU: torch threads (default: the CPUs the 1-minute load "
                        "average leaves free, at least 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def check_models(names: Sequence[str]) -> dict:
    """Every model's spec, or a BackendError naming the first that cannot be used, before
    anything is generated (a typo in the last name must not cost the first model's run)."""
    from pairlab.backends.base import BackendError
    from pairlab.models import resolve

    specs = {}
    for name in names:
        spec = resolve(name)
        kind, _, rest = spec.source.partition(":")
        local = rest.split("#", 1)[0]
        if kind in ("hf", "gguf") and local.startswith(("/", ".", "~")) and not Path(local).expanduser().exists():
            raise BackendError(f"model {name!r}: {local} does not exist")
        specs[name] = spec
    return specs


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command = ["python", "-m", "judges.generate", *(sys.argv[1:] if argv is None else argv)]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if len(models) < 2 or len(set(models)) != len(models):
        parser.error(f"--models needs at least two different models, got {args.models!r}")
    if args.batch_size < 1 or (args.max_new_tokens is not None and args.max_new_tokens < 1):
        parser.error("--batch-size and --max-new-tokens must be at least 1")

    from pairlab.backends.base import BackendError
    from pairlab.backends.hf import torch_gpu, use_free_cpus
    from pairlab.models import get_model

    try:
        specs = check_models(models)
    except BackendError as exc:
        parser.error(str(exc))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    def error(msg: str) -> int:
        log(f"{parser.prog}: error: {msg}")
        return 2

    errors: list[RecordError] = []
    try:
        prompts = load_prompts(args.prompts, skip_bad=args.skip_bad, errors=errors)
    except (RecordError, OSError) as exc:
        return error(str(exc))
    for err in errors[:10]:
        log(f"skipped: {err}")
    if len(errors) > 10:
        log(f"skipped {len(errors) - 10} more bad row(s)")
    prompts = prompts[: args.limit] if args.limit is not None else prompts
    if not prompts:
        return error(f"no prompts in {args.prompts}")

    t0 = time.perf_counter()
    answers: dict[str, list[Completion]] = {}
    described: dict[str, dict] = {}
    families: dict[str, str] = {}
    for name in models:
        spec = specs[name]
        try:
            kwargs = {"batch_size": args.batch_size} if spec.backend == "transformers" else {}
            if spec.backend == "transformers" and not torch_gpu():
                use_free_cpus(args.threads)
            model = get_model(name, **kwargs)
        except BackendError as exc:
            return error(f"cannot load {name!r}: {exc}")
        params = dataclasses.replace(spec.defaults, temperature=args.temperature, seed=args.seed,
                                     max_new_tokens=args.max_new_tokens or spec.defaults.max_new_tokens)
        started = time.perf_counter()
        answers[name] = answer(model, prompts, params, args.batch_size, progress=not args.quiet,
                               cut_at_sentence=args.cut_at_sentence)
        families[name] = spec.family
        described[name] = {**model.info(), "family": spec.family, "decoding": params.to_dict(),
                           "seconds": round(time.perf_counter() - started, 3),
                           "tokens": sum(c.n_tokens for c in answers[name]),
                           "truncated": sum(c.finish_reason == "length" for c in answers[name]),
                           # answers that hit the cap and were ended at a sentence (None: not asked)
                           "cut_at_sentence": sum(c.finish_reason == "length" for c in answers[name])
                           if args.cut_at_sentence else None}
        model.close()

    pairs = build_pairs(prompts, answers, families)
    out = Path(args.out)
    write_records(out, pairs)  # written whole and renamed: an interrupted run leaves no half PAIRS file
    write_manifest(manifest_path(out), args.command, {
        "status": "complete",
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": {"prompts": str(args.prompts), "sha256": sha256_file(args.prompts), "bad_rows": len(errors),
                   "limit": args.limit, "used_prompts": len(prompts)},
        "models": described,
        "seed": args.seed,
        "batch_size": args.batch_size,
        "counts": {"prompts": len(prompts), "models": len(models), "pairs": len(pairs)},
        "wall_time_s": round(time.perf_counter() - t0, 3),
        "versions": library_versions(),
    })
    log(f"{out}: {len(pairs)} pair(s) from {len(prompts)} prompt(s) x {len(models)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
