"""Judge pairs offline with an open judge model, in both orders, resumably.

Writes one record per judged (pair, order) to OUT (model_a = the response shown first),
the (pair, order)s whose output held no verdict even after retries to
OUT.failures.jsonl (records with winner null, raw text and parse error kept; the analyses
count them as parse failures; delete the file to try them again), and
OUT.manifest.json (judge and weights hash, template hash, decoding, seed, versions,
counts, wall time, throughput). Rerunning the same command skips the work already in
OUT, so a run killed at any point is finished by starting it again. Records are written
as they are judged (not in input order); pair_id and meta.order identify them.

A local judge (transformers, vLLM offline) gets the work in batches of --batch-size
prompts. A judge on a server (openai:URL#NAME: vLLM, SGLang, TGI, arena.model_server) gets one
request per judge prompt with --concurrency of them in flight, each slot refilled as its
answer arrives. Replicas of the judge are more --endpoint URLs: requests go to the least
busy one, 429/5xx answers are retried with backoff, and a replica that stops answering
is set aside while the others carry on. A router in front of the replicas (vLLM's or
SGLang's router, nginx) is given as the one URL of the judge instead.

Exit status: 0 done; 1 the run failed or more than half of its judgments held no
verdict; 2 bad input or options; 130/143 interrupted (Ctrl-C/SIGTERM: the manifest
says so, and the same command resumes).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import signal
import sys
import time
from collections import Counter
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from pairlab.cli import prog_name
from pairlab.files import read_text
from pairlab.records import RecordError, read_pairs, read_records, write_records
from judges.averaged import order_averaged, pairs_path
from judges.manifest import library_versions, machine, manifest_path, sha256_file, write_manifest
from judges.runner import MODES, JudgeConfig, gpu_batch_size, judge_pairs, rater_id
from judges.run_files import OutputLocked, RunFiles
from judges.templates import BUILTIN, TemplateError, get_template

BACKENDS = ("transformers", "vllm", "openai")
PROG = "python -m judges.run"  # the name when not run as `pairlab judge`
DEFAULT_CONCURRENCY = 64  # arena-hard-auto's pool size: enough to keep one GPU server busy
DEFAULT_BATCH = {"transformers": 8, "vllm": 1024}  # vLLM's scheduler wants all it can get


class Interrupted(Exception):
    """SIGTERM, turned into an exception so the manifest is closed on the way out."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog_name(PROG), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", help="PAIRS.jsonl: pair_id, prompt, model_a, model_b, "
                        "response_a, response_b (+ reference, family_a, family_b, prompt_id, category)")
    parser.add_argument("--judge", help="judge model: a configured id (smollm2-135m-instruct), "
                        "hf:DIR, gguf:FILE, openai:URL#NAME (replicas: openai:URL1,URL2#NAME) or vllm:NAME")
    parser.add_argument("--out", help="records JSONL to append to (created if missing)")
    parser.add_argument("--template", default="prometheus-relative",
                        help=f"{' | '.join(BUILTIN)} | FILE: a jinja2 template whose leading "
                        "{# verdict: REGEX #} comment declares its verdict (default: %(default)s)")
    parser.add_argument("--mode", choices=MODES, default="logprob",
                        help="logprob: one forward pass per order, prob_a from the verdict tokens' "
                        "probabilities (cannot fail to parse); generate: decode a judgment and parse its "
                        "last verdict; likelihood: score each answer alone by its log-probability per byte "
                        "after the question (GPTScore), no template, no display position, rated as "
                        "JUDGE:likelihood (transformers judges; default: %(default)s)")
    parser.add_argument("--no-swap", action="store_true",
                        help="judge one order per pair, picked at random (seeded) instead of both")
    parser.add_argument("--backend", choices=BACKENDS, help="override the backend the judge's name implies")
    parser.add_argument("--batch-size", type=int,
                        help="local judges: judge prompts per batch (default: 8 for transformers on CPU, on a GPU as many as "
                        "its free memory holds for the longest judge prompt; 1 in generate mode "
                        "without a GPU, so progress shows per judgment; 1024 for vllm, whose scheduler batches best "
                        "when handed many prompts at once)")
    parser.add_argument("--concurrency", type=int,
                        help=f"server judges (openai:): requests in flight, refilled as each returns (default: "
                        f"{DEFAULT_CONCURRENCY}). Pick about the server's batch capacity times its replicas: "
                        "vLLM/SGLang on a GPU take 128-256 per replica (vLLM's --max-num-seqs, 256 by default; "
                        "more only queues there); a CPU server such as arena.model_server wants 1-4")
    parser.add_argument("--endpoint", action="append", default=[], metavar="URL",
                        help="another replica of an openai: judge (repeat for more); requests go to the least "
                        "busy, a replica that stops answering is set aside. Behind a router give only its URL")
    parser.add_argument("--chat-template", metavar="plain|DIR",
                        help="logprob mode with an openai: judge: how to render the judge chat into the text "
                        "/completions scores (the server's template is not visible): a local folder with the "
                        "judge's tokenizer (e.g. its hf: folder) or 'plain' (Question/Answer text)")
    parser.add_argument("--strip-reasoning", action="store_true",
                        help="remove reasoning traces (<think>...</think> and the like) from the judged "
                        "responses before the judge sees them; the judge's own trace is always set aside "
                        "before its verdict is read")
    parser.add_argument("--limit", type=int, help="judge only the first N pairs")
    parser.add_argument("--seed", type=int, default=0, help="seed for order choice and sampling (default: 0)")
    parser.add_argument("--retries", type=int,
                        help="generate mode: re-ask a judge whose output has no verdict up to N times, "
                        "sampling with a new seed each time (default: 0, as the verdict slot reads a verdict "
                        "anyway; 2 with --no-forced-verdict)")
    parser.add_argument("--no-forced-verdict", action="store_true",
                        help="generate mode: keep a judgment whose text holds no verdict (after retries) as a "
                        "parse failure; by default its verdict is read at the verdict slot after the judge's "
                        "own text, restricted to the verdict labels, and the record says "
                        "meta.verdict_source = forced-slot")
    parser.add_argument("--max-new-tokens", type=int,
                        help="generate mode: length cap of a judgment (default: 256; 128 for a transformers judge "
                        "without a GPU, where the embedded judges' texts ran to the cap and their verdicts came "
                        "from the verdict slot all the same)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="generate mode: first attempt's temperature, 0 = greedy (default: %(default)s)")
    parser.add_argument("--retry-temperature", type=float, default=1.0,
                        help="generate mode: sampling temperature of retries (default: %(default)s)")
    parser.add_argument("--tie-band", type=float, default=0.0,
                        help="logprob mode: call it a tie when |prob_a - 0.5| <= W (default: %(default)s)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip malformed PAIRS lines (listed in a summary) instead of stopping at the first")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                        help="local judges: the weights' precision, one of the known causes of verdicts that differ "
                        "between machines (default: transformers float32 on CPU and bfloat16 on a GPU; vLLM its own "
                        "choice, bfloat16 on CPU; a server's is the server's)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="transformers judge on CPU: torch threads (default: the CPUs the 1-minute load average "
                        "leaves free, at least 1: on a busy machine two threads fighting for one core ran a "
                        "generation nine times slower than one thread)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (nor the weights' loading bar)")
    check = parser.add_argument_group("reproduce a finished run (instead of --pairs, --judge, --out)")
    check.add_argument("--reproduce", metavar="MANIFEST",
                       help="rerun a random sample of the run's batches (each whole) with the settings its "
                       "OUT.manifest.json records, and report identical verdicts, the drift of prob_a and which "
                       "recorded facts (CPU and vector extensions or GPU, torch threads, dtype, batch size, backend, "
                       "library versions) differ here. Exit 0 when every verdict is identical, 1 otherwise")
    check.add_argument("--trust-manifest", action="store_true",
                       help="--reproduce: run a manifest that names a server judge (openai:, --endpoint: the pairs' "
                       "text and OPENAI_API_KEY go to it) or files outside its folder and the working folder; "
                       "without it such a manifest is refused, after saying what it would do")
    check.add_argument("--sample", type=int, default=20, metavar="N",
                       help="--reproduce: judgments to rerun, at least (whole batches; default: %(default)s)")
    return parser


def vllm_loads(source: str) -> bool:
    """Whether vLLM's offline engine can load a model named by this source: a directory or a
    repository name (hf:, vllm:), not the GGUF files the embedded models are."""
    return source.partition(":")[0] in ("hf", "vllm")


def _vllm_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def _gpu() -> bool:
    from pairlab.backends.hf import torch_gpu  # imports torch, as the transformers judge will anyway

    return torch_gpu()


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _error(msg: str, code: int = 2) -> int:
    _log(f"{prog_name(PROG)}: error: {msg}")
    return code


def _load_pairs(args) -> tuple[list, dict]:
    errors: list[RecordError] = []
    pairs = read_pairs(args.pairs, skip_bad=args.skip_bad, errors=errors)
    if errors:
        _log(f"skipped {len(errors)} bad line(s) of {args.pairs}:")
        for err in errors[:10]:
            _log(f"  {err}")
        if len(errors) > 10:
            _log(f"  ... and {len(errors) - 10} more")
    seen: set[str] = set()
    unique = []
    for pair in pairs:
        if pair.pair_id not in seen:
            seen.add(pair.pair_id)
            unique.append(pair)
    duplicates = len(pairs) - len(unique)
    if duplicates:
        repeated = [pid for pid, n in Counter(p.pair_id for p in pairs).items() if n > 1]
        _log(f"{args.pairs}: {duplicates} repeated pair_id row(s) judged once (e.g. {repeated[0]})")
    if args.limit is not None:
        unique = unique[: args.limit]
    inputs = {"pairs": str(args.pairs), "sha256": sha256_file(args.pairs), "bad_lines": len(errors),
              "duplicate_rows": duplicates, "limit": args.limit, "judged_pairs": len(unique)}
    return unique, inputs


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command = ["python", "-m", "judges.run", *(sys.argv[1:] if argv is None else argv)]
    if args.reproduce:
        return _reproduce(args)
    missing = [flag for flag in ("--pairs", "--judge", "--out") if getattr(args, flag[2:]) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)} (or --reproduce MANIFEST)")
    backend, config = _settings(parser, args)
    try:
        pairs, inputs = _load_pairs(args)
    except (RecordError, OSError) as exc:
        return _error(str(exc))
    if not pairs:
        return _error(f"no pairs in {args.pairs}")
    if Path(args.out).is_dir():
        return _error(f"--out {args.out} is a folder; name the records file to write, e.g. "
                      f"{Path(args.out) / 'verdicts.jsonl'}")

    def terminate(signum, frame):
        raise Interrupted(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with RunFiles(args.out, log=_log) as files:
            return _judge(args, backend, config, pairs, inputs, files)
    except (OutputLocked, RecordError, TemplateError) as exc:  # a render past its bounds, too
        return _error(str(exc))
    except (KeyboardInterrupt, Interrupted) as exc:
        _log(f"interrupted; {args.out} holds every record finished so far: run the same command again to resume")
        return 143 if isinstance(exc, Interrupted) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _settings(parser: argparse.ArgumentParser, args) -> tuple[str, JudgeConfig]:
    """The backend and the run's settings from the options (usage errors exit 2)."""
    from pairlab.backends.base import BackendError
    from pairlab.models import resolve

    try:
        template = get_template(args.template)
        spec = resolve(args.judge)
    except (TemplateError, BackendError) as exc:
        parser.error(str(exc))
    backend = args.backend or spec.backend
    if args.backend is None and backend == "transformers" and args.mode == "generate" and _gpu() \
            and vllm_loads(spec.source) and _vllm_installed():
        backend = "vllm"
        _log(f"{args.judge}: generate mode on a GPU runs on vLLM (continuous batching, prefix caching); "
             "--backend transformers for the reference backend")
    if backend == "openai":
        if args.batch_size is not None:
            parser.error("--batch-size is for local judges; a server judge takes --concurrency")
        args.concurrency = DEFAULT_CONCURRENCY if args.concurrency is None else args.concurrency
        if args.concurrency < 1:
            parser.error("--concurrency must be at least 1")
        if args.dtype:
            parser.error("--dtype is for local judges; a server judge runs at the precision its server loaded")
    else:
        for flag, given in (("--concurrency", args.concurrency is not None), ("--endpoint", args.endpoint),
                            ("--chat-template", args.chat_template)):
            if given:
                parser.error(f"{flag} is for server judges (openai:URL#NAME); {args.judge!r} runs on {backend}")
    if args.mode == "likelihood" and backend != "transformers":
        parser.error(f"--mode likelihood scores answers with a local transformers judge; {args.judge!r} runs on "
                     f"{backend}")
    batch_size = args.batch_size or DEFAULT_BATCH.get(backend, 8)
    if args.batch_size is None and backend == "transformers" and args.mode == "generate" and not _gpu():
        # On CPU a batch of long generations barely beats one at a time, and the bar would stand
        # still for a whole batch: one judgment at a time shows progress (and an ETA) per judgment.
        batch_size = 1
    if args.max_new_tokens is None:
        args.max_new_tokens = 128 if backend == "transformers" and args.mode == "generate" and not _gpu() else 256
    if args.retries is None:
        # With the verdict slot on, a judge whose text held no verdict still gets one there; sampled
        # retries rarely help a small judge and took three times as long. Without it, retry twice.
        args.retries = 2 if args.no_forced_verdict else 0
    try:
        config = JudgeConfig(template=template, mode=args.mode, swap=not args.no_swap, seed=args.seed,
                             tie_band=args.tie_band, retries=args.retries, max_new_tokens=args.max_new_tokens,
                             temperature=args.temperature, retry_temperature=args.retry_temperature,
                             batch_size=batch_size, strip_reasoning=args.strip_reasoning,
                             prefix_order=backend == "vllm", force_verdict=not args.no_forced_verdict)
    except (TemplateError, ValueError) as exc:
        parser.error(str(exc))
    return backend, config


def _other_strip_setting(manifest, out, strip: bool) -> str | None:
    """Why OUT cannot be resumed with this ``--strip-reasoning`` setting, or None.

    A verdict on a response with its reasoning trace and one on the trace-free text are
    verdicts on different inputs; the resume key (pair, order, judge, template, mode) cannot
    tell them apart, so resuming with the other setting would keep the earlier verdicts as
    if they were this run's.
    """
    if not Path(out).exists() or Path(out).stat().st_size == 0:
        return None
    try:
        before = (json.loads(manifest.read_text(encoding="utf-8")).get("settings") or {}).get("strip_reasoning")
    except (OSError, json.JSONDecodeError):
        return None  # no readable manifest: nothing says how the records were made
    if before is None or bool(before) == strip:
        return None
    said = "with" if before else "without"
    return (f"{out} holds verdicts judged {said} --strip-reasoning (its manifest says so); resume with the same "
            f"setting, or write the other setting's verdicts to another --out")


def _previous_runs(manifest, log) -> list[dict]:
    """Summaries of the earlier runs into the same OUT (an interrupted run's time counts too)."""
    try:
        old = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError) as exc:
        log(f"{manifest}: earlier manifest unreadable ({exc}); its history is not carried over")
        return []
    summary = {k: old.get(k) for k in ("status", "started_at", "finished_at", "wall_time_s", "counts")}
    summary.update(judge=(old.get("judge") or {}).get("id"), template=(old.get("template") or {}).get("name"),
                   mode=(old.get("settings") or {}).get("mode"))
    return [*old.get("previous_runs", []), summary]


def _load_judge(args, backend: str):
    """The judge model, checked before any work: a server that answers, a chat it can render."""
    from pairlab.models import get_model

    if backend == "openai":
        kwargs = {"concurrency": args.concurrency, "endpoints": args.endpoint}
        if args.chat_template:
            kwargs["template"] = args.chat_template
    else:
        kwargs = {"batch_size": args.batch_size or DEFAULT_BATCH[backend]} if backend == "transformers" else {}
        if args.dtype:
            kwargs["dtype"] = args.dtype
    if backend == "transformers":
        from transformers.utils import logging as hf_logging

        from pairlab.backends.hf import torch_gpu, use_free_cpus

        if not torch_gpu():
            use_free_cpus(args.threads)
        if args.quiet:  # the weights' loading bar too
            hf_logging.disable_progress_bar()
    model = get_model(args.judge, backend=backend, **kwargs)
    if backend == "openai":
        for warning in model.check():
            _log(f"{args.judge}: {warning}")
        if args.mode == "logprob":
            model.render([{"role": "user", "content": "?"}])  # fails now, not after the first request
    return model


def _judge(args, backend: str, config: JudgeConfig, pairs: list, inputs: dict, files: RunFiles) -> int:
    from pairlab.backends.base import BackendError
    from pairlab.models import family_of

    manifest = manifest_path(args.out)
    mixed = _other_strip_setting(manifest, args.out, config.strip_reasoning)
    if mixed:
        return _error(mixed)
    try:
        model = _load_judge(args, backend)
    except (BackendError, OSError) as exc:
        return _error(f"cannot use judge {args.judge!r}: {exc}")
    family = family_of(args.judge)
    batch_rule = "--batch-size" if args.batch_size else f"the {backend} default"
    if args.batch_size is None and backend == "transformers" and getattr(model, "device", "cpu") == "cuda":
        config = dataclasses.replace(config, batch_size=gpu_batch_size(model, pairs, config))
        model.batch_size = config.batch_size
        batch_rule = "free GPU memory and the longest judge prompt (judges.runner.batch_size_for)"
        _log(f"{args.judge}: batch size {config.batch_size}, from {batch_rule}")
    t0 = time.perf_counter()
    in_flight = args.concurrency if backend == "openai" else None
    body = {
        "status": "running",
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "judge": {**model.info(), "family": family},
        "rater": rater_id(args.judge, config.mode),  # the judge name its records carry
        "backend": backend,
        "template": config.template.describe(),
        "settings": config.describe(),
        "inputs": inputs,
        "outputs": {"records": str(args.out), "failures": str(files.failures)},
        "throughput": {"in_flight_limit": in_flight, "batch_size": None if in_flight else config.batch_size,
                       "batch_size_from": None if in_flight else batch_rule},
        "versions": library_versions(),
        "machine": machine(),
        "previous_runs": _previous_runs(manifest, _log),
    }
    write_manifest(manifest, args.command, body)
    counts = None
    status = "interrupted"
    try:
        counts = judge_pairs(model, pairs, config, files, judge_id=rater_id(args.judge, config.mode),
                             judge_family=family, warn=_log, progress=not args.quiet, concurrency=in_flight)
        status = "complete"
    except BackendError as exc:
        status = "failed"
        return _error(f"judge {args.judge!r} failed mid-run: {exc}; {args.out} holds every record finished so "
                      "far: run the same command again to resume", code=1)
    except (KeyboardInterrupt, Interrupted) as exc:
        body["signal"] = str(exc) if isinstance(exc, Interrupted) else "SIGINT"
        raise
    except TemplateError:
        status = "failed"
        raise
    finally:
        wall = time.perf_counter() - t0
        body.update(status=status, wall_time_s=round(wall, 3),
                    finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        if counts is not None:
            body["counts"] = asdict(counts)
            judged = counts.records_written + counts.parse_failures
        else:  # what this run wrote before it stopped (so seconds per judgment stay honest)
            judged = len(files.written)
            failed = sum(k in files.failed for k in files.written)
            body["counts"] = {"records_written": judged - failed, "parse_failures": failed, "partial": True}
            body["counts_so_far"] = {"records": len(files.done), "failures": len(files.failed)}
        body["throughput"].update(verdicts=judged, verdicts_per_s=round(judged / wall, 4) if wall > 0 else None)
        body["pairs_per_s"] = round(judged / (2 if config.swap else 1) / wall, 4) if wall > 0 else None
        if hasattr(model, "pool"):
            body["endpoints"] = model.pool.describe()
        write_manifest(manifest, args.command, body)
        model.close()
    _log(f"{args.out}: {counts.records_written} record(s) written, {counts.skipped_existing} already there, "
         f"{counts.parse_failures} parse failure(s)"
         + (f" -> {files.failures}" if counts.parse_failures else "")
         + f", {counts.retries} retry(ies), {counts.ties} tie(s)"
         + (f", {counts.forced} verdict(s) read at the verdict slot (the judge wrote none; "
            "meta.verdict_source = forced-slot)" if counts.forced else "")
         + f"; {body['throughput']['verdicts_per_s']} verdicts/s; manifest {manifest}")
    if config.swap and config.mode != "likelihood":  # likelihood verdicts are the same in both orders
        _write_order_averaged(args, config, pairs)
    finished = counts.records + counts.failures
    if finished and counts.failures * 2 > finished and config.mode == "likelihood":
        return _error(f"{counts.failures} of {finished} judgments could not be scored ({counts.failures / finished:.0%}): "
                      f"each record's parse_error in {files.failures} says why (an empty answer, or one longer than "
                      "the judge's context window)", code=1)
    if finished and counts.failures * 2 > finished:
        return _error(
            f"{counts.failures} of {finished} judgments held no verdict ({counts.failures / finished:.0%}): this "
            "judge cannot follow the template's verdict format. Try --mode logprob (reads the verdict from the "
            "verdict tokens' probabilities, never fails to parse), a template that asks for the verdict first, "
            f"a larger --max-new-tokens, or a stronger judge; the raw outputs are in {files.failures}", code=1)
    return 0


def _write_order_averaged(args, config: JudgeConfig, pairs: list) -> None:
    """OUT.pairs.jsonl from every record OUT holds for this judge, template and mode (earlier,
    resumed runs' included), and one line saying whether the orders agreed."""
    sha = config.template.sha256
    mine = [r for r in read_records(args.out) if r.judge == args.judge and r.meta.get("template_sha256") == sha
            and r.meta.get("mode") == config.mode]
    averaged = order_averaged(mine, pairs, config.tie_band)
    path = pairs_path(args.out)
    write_records(path, averaged)
    if not averaged:
        return
    same = sum(r.extra["consistent"] for r in averaged)
    _log(f"{path}: {len(averaged)} order-averaged verdict(s); the two orders named the same winner on {same} of "
         f"{len(averaged)} pairs" + (": the per-order verdicts follow the display order, not the answers; use the "
                                     "order-averaged ones" if same <= 0.2 * len(averaged) else ""))


def _reproduce(args) -> int:
    """``--reproduce MANIFEST --sample N`` (judges.reproduce): rerun sampled batches, compare, print."""
    import tempfile

    from pairlab.backends.base import BackendError
    from pairlab.models import family_of
    from judges.manifest import reproducibility_facts
    from judges.reproduce import compare_records, differing_facts, sample_chunks
    from judges.runner import plan_chunks

    where = Path(args.reproduce)
    try:
        manifest = json.loads(read_text(where))  # the one reader rule: a FIFO or a device is refused
        command = manifest["command"]
    except (RecordError, json.JSONDecodeError, RecursionError, KeyError, TypeError) as exc:
        return _error(f"--reproduce {where}: not a readable judges.run manifest ({exc})")
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command) \
            or command[:3] != ["python", "-m", "judges.run"]:
        return _error(f"--reproduce {where}: its command is not a judges.run command")
    run = _manifest_run(where, command[3:])
    if isinstance(run, str):
        return _error(run)
    if args.pairs is not None:  # the user names the pairs: the manifest's path is not used
        run.pairs = args.pairs
    run.command = command
    refused = _untrusted(args, where, manifest, run)
    if refused:
        return _error(refused)
    # The backend and batch size the run used, chosen or given (a GPU picks both: vLLM, a batch
    # from free memory), so the rerun batches as it did.
    if run.backend is None and manifest.get("backend") in BACKENDS:
        run.backend = manifest["backend"]
    recorded_batch = (manifest.get("throughput") or {}).get("batch_size")
    if run.batch_size is None and isinstance(recorded_batch, int) and recorded_batch >= 1:
        run.batch_size = recorded_batch
    parser = build_parser()
    backend, config = _settings(parser, run)
    if config.template.sha256 != (manifest.get("template") or {}).get("sha256"):
        return _error(f"--reproduce {where}: template {run.template!r} is not the text the run used (its sha256 "
                      "differs); restore the run's template file first")
    try:
        pairs, inputs = _load_pairs(run)
        run_records = [r for r in read_records(_beside(where, manifest["outputs"]["records"]))
                       if r.judge == rater_id(run.judge, config.mode)
                       and r.meta.get("template_sha256") == config.template.sha256 and r.meta.get("mode") == config.mode]
    except (RecordError, OSError, KeyError) as exc:
        return _error(f"--reproduce {where}: {exc}")
    try:
        model = _load_judge(run, backend)
    except (BackendError, OSError) as exc:
        return _error(f"cannot use judge {run.judge!r}: {exc}")
    concurrency = run.concurrency if backend == "openai" else None
    plan = plan_chunks(pairs, dataclasses.replace(config, batch_size=1) if concurrency else config)
    chosen = sample_chunks(plan, args.sample, args.seed)
    now = {"judge": model.info(), "machine": machine(), "versions": library_versions(), "backend": backend,
           "settings": {"batch_size": config.batch_size}}
    with tempfile.TemporaryDirectory() as tmp:
        with RunFiles(Path(tmp) / "rerun.jsonl", log=_log) as files:
            for chunk in chosen:
                judge_pairs(model, list({t.pair.pair_id: t.pair for t in chunk}.values()), config, files,
                            judge_id=rater_id(run.judge, config.mode), judge_family=family_of(run.judge),
                            progress=False,
                            concurrency=concurrency)
        rerun = read_records(files.out) if files.out.exists() else []
    model.close()
    result = compare_records(run_records, rerun)
    facts = differing_facts(reproducibility_facts(manifest), reproducibility_facts(now))
    if inputs["sha256"] != (manifest.get("inputs") or {}).get("sha256"):
        facts["pairs_sha256"] = ((manifest.get("inputs") or {}).get("sha256"), inputs["sha256"])
    print(f"reproduce {where}: reran {sum(len(c) for c in chosen)} judgment(s) in {len(chosen)} whole batch(es) "
          f"of the run's {sum(len(c) for c in plan)}")
    for line in result.lines():
        print(f"  {line}")
    print("  recorded facts that differ here: " + ("none" if not facts else "; ".join(
        f"{k} {before!r} -> {after!r}" for k, (before, after) in facts.items())))
    return 0 if result.n and result.same_verdict == result.n and not result.missing else 1


def _manifest_run(where: Path, argv: list[str]) -> argparse.Namespace | str:
    """The run a manifest's command describes, or why it describes none (help, no pairs, ...)."""
    parser = build_parser()
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):  # not the manifest's words
        try:
            run = parser.parse_args(argv)
        except SystemExit:
            run = None
    if run is None or run.reproduce or None in (run.pairs, run.judge, run.out):
        return (f"--reproduce {where}: its command judges nothing (a run names --pairs, --judge and --out): "
                f"{' '.join(argv)[:200]!r}")
    return run


def _untrusted(args, where: Path, manifest: dict, run: argparse.Namespace) -> str | None:
    """Say what the manifest would do; the reason to refuse it unless ``--trust-manifest``.

    A manifest travels, so it is untrusted input: it must not send the pairs' text (or the
    API key a server judge is sent) to a server that only the manifest names, nor read files
    outside the manifest's folder and the working folder that the user did not name."""
    from pairlab.backends.base import BackendError
    from pairlab.models import resolve

    try:
        spec = resolve(run.judge)
    except BackendError as exc:
        return f"--reproduce {where}: {exc}"
    backend = run.backend or spec.backend
    records = _beside(where, str((manifest.get("outputs") or {}).get("records", "")))
    _log(f"reproduce {where}: judge {run.judge} ({backend}"
         + (f", replicas {', '.join(run.endpoint)}" if run.endpoint else "") + f"), pairs {run.pairs}, "
         f"template {run.template}, records to compare {records}")
    reasons = []
    if backend == "openai" or run.endpoint:
        hosts = [spec.source.partition(":")[2].split("#")[0] if spec.source.startswith("openai:") else "",
                 *run.endpoint]
        reasons.append(f"it sends the pairs' text (and OPENAI_API_KEY, if set) to a server it names: "
                       f"{', '.join(h for h in hosts if h)}")
    named = {Path(args.pairs).resolve()} if args.pairs else set()
    roots = (where.resolve().parent, Path.cwd().resolve())
    paths = [("pairs", run.pairs), ("records", records)]
    if run.template not in BUILTIN:
        paths.append(("template", run.template))
    if run.chat_template not in (None, "plain"):
        paths.append(("chat template", run.chat_template))
    if spec.source.split(":", 1)[0] in ("hf", "gguf"):
        paths.append(("judge weights", spec.source.split(":", 1)[1]))
    for what, path in paths:
        full = Path(path).resolve()
        if full not in named and not any(full.is_relative_to(root) for root in roots):
            reasons.append(f"it reads {what} {path}, outside its folder and the working folder")
    if not reasons or args.trust_manifest:
        return None
    pairs_outside = any(r.startswith("it reads pairs") for r in reasons)
    return (f"--reproduce {where}: refused: " + "; ".join(reasons) + ". A manifest is untrusted input: run it "
            "only if you wrote it or trust who did, with --trust-manifest"
            + (" (or name the pairs yourself with --pairs)" if pairs_outside else ""))


def _beside(manifest: Path, recorded: str) -> Path:
    """A path the manifest recorded, as run from its own folder when not found as given."""
    path = Path(recorded)
    return path if path.exists() or path.is_absolute() else manifest.parent / path.name


if __name__ == "__main__":
    sys.exit(main())
