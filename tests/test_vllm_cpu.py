"""vLLM for real with its CPU build. `make test-vllm` builds that build's virtualenv and runs this
file with it; the suite's `make test` does not collect it.

`--backend vllm` and a vLLM server (`openai:`) judge as the transformers backend does: both judge
the embedded SmolLM2 (its converted folder, the one the transformers backend loads) in logprob
mode on data/obvious_pairs.jsonl, and are held to the transformers backend's verdicts: the same
winner on every record, prob_a within a tolerance set by the dtype vLLM ran in.

The arena's `vllm:` model, vLLM's async engine, streams concurrent requests batched by its own
scheduler, each seeded, and aborts a request whose stream is closed; the arena's battles on it
store each turn's seed and what vLLM's seed guarantees.

One vLLM engine at a time (the machine is shared): each test's engine is gone before the next
one loads, the in-process async engine last of all.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest

from pairlab.backends.base import BackendError, GenerationParams
from pairlab.models import engine_options, get_model, resolve
from pairlab.weights import prepared_dir
from support import answers, wait_until

# Engines in this process and in the processes it starts: the slow tier's markers.
pytestmark = [pytest.mark.model, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "data" / "obvious_pairs.jsonl"
MAX_MODEL_LEN = 2048  # the judge prompts on these pairs are a few hundred tokens
# An engine load takes 1.5 to 3 minutes on a shared 2-core machine.
LOAD_S = 900

# The tolerance on prob_a by the dtype vLLM ran in. float32 on both sides (judges.run --dtype
# float32, the server started with --dtype float32): the same weights and arithmetic up to
# summation order, so prob_a agrees to the records' 6 decimals (measured: within 2e-6).
# bfloat16 (what vLLM makes of the float32 weights when left to choose): 8 bits of mantissa,
# about 0.4% relative error on each logit of the A/B softmax; on these pairs prob_a moved by up
# to 0.012 (0.011 on the quick start's), so 0.03 leaves room for another CPU's kernels while the
# winners are held equal apart.
TOLERANCE = {"torch.float32": 1e-4, "torch.bfloat16": 0.03}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_CPU_KVCACHE_SPACE": "1"}


def _judge(out: Path, judge: str, *extra: str) -> tuple[dict, dict]:
    """Run judges.run on the pairs; its records by (pair, display order), and its manifest."""
    cmd = [sys.executable, "-m", "judges.run", "--pairs", str(PAIRS), "--judge", judge, "--mode", "logprob",
           "--out", str(out), "--quiet", *extra]
    done = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=LOAD_S)
    assert done.returncode == 0, done.stderr[-4000:]
    records = {}
    for line in out.read_text().splitlines():
        r = json.loads(line)
        records[(r["pair_id"], r["meta"]["order"])] = r
    return records, json.loads(out.with_name(out.stem + ".manifest.json").read_text())


def _agree(got: dict, want: dict, tolerance: float) -> None:
    assert got.keys() == want.keys() and len(want) == 2 * len(PAIRS.read_text().splitlines())
    for key, r in want.items():
        assert got[key]["winner"] == r["winner"], key
        assert got[key]["prob_a"] == pytest.approx(r["prob_a"], abs=tolerance), key


@pytest.fixture(scope="module")
def smollm_dir() -> Path:
    return prepared_dir(resolve("smollm2-135m-instruct").source)[0]


@pytest.fixture(scope="module")
def transformers_records(smollm_dir, tmp_path_factory):
    records, manifest = _judge(tmp_path_factory.mktemp("tf") / "tf.jsonl", f"hf:{smollm_dir}",
                               "--backend", "transformers")
    assert manifest["judge"]["dtype"] == "torch.float32"
    return records


@pytest.fixture
def server(smollm_dir):
    """One vLLM OpenAI-compatible server on a free loopback port, serving SmolLM2 as `smollm2`;
    stopped after its test, before the next engine loads."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # `python -m`: the dist is vllm-cpu, and its `vllm` console script looks up a dist named vllm.
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(smollm_dir),
           "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(MAX_MODEL_LEN), "--dtype", "float32"]
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm-server-{port}.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(answers(f"http://127.0.0.1:{port}/health", proc), timeout=LOAD_S, interval=1.0,
                   what=f"the vLLM server's /health (log: {log.name})")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.parametrize("dtype", [None, "float32"])
def test_offline_engine_judges_as_transformers_does(smollm_dir, transformers_records, tmp_path, dtype):
    extra = ("--dtype", dtype) if dtype else ()
    records, manifest = _judge(tmp_path / "vllm.jsonl", f"hf:{smollm_dir}", "--backend", "vllm", *extra)
    assert manifest["backend"] == "vllm" and manifest["judge"]["backend"] == "vllm"
    assert manifest["versions"]["vllm"] == metadata.version("vllm-cpu") == manifest["judge"]["vllm"]
    if dtype:  # judges.run's precision reached the engine
        assert manifest["judge"]["dtype"] == f"torch.{dtype}"
    _agree(records, transformers_records, TOLERANCE[manifest["judge"]["dtype"]])


def test_server_judges_as_transformers_does(server, smollm_dir, transformers_records, tmp_path):
    records, manifest = _judge(tmp_path / "served.jsonl", f"openai:{server}#smollm2",
                               "--chat-template", str(smollm_dir))
    assert manifest["backend"] == "openai"
    _agree(records, transformers_records, TOLERANCE["torch.float32"])


# The arena's vLLM model: its async engine, loaded as arena/app.py loads a model.
IN_FLIGHT = 4
LONG = ["Write a long story about a lighthouse keeper.", "Explain in detail how a bicycle works.",
        "Describe the history of the printing press at length.", "Write a long letter to a friend about autumn."]


def _chat(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def _seeded(seed: int, max_new_tokens: int = 64) -> GenerationParams:
    return GenerationParams(max_new_tokens=max_new_tokens, temperature=1.0, top_p=0.95, seed=seed)


@pytest.fixture(scope="module")
def streaming(smollm_dir):
    """SmolLM2 on vLLM's async engine, float32 as the transformers backend runs it on CPU."""
    name = f"vllm:{smollm_dir}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # the engine process reads it when it starts
        model = get_model(name, **engine_options(name, "continuous", IN_FLIGHT), max_model_len=MAX_MODEL_LEN,
                          dtype="float32")
    yield model
    model.close()


def test_concurrent_streams_are_batched_each_streamed_and_seeded(streaming):
    assert streaming.concurrency == IN_FLIGHT  # what the arena admits (arena.battles.admitted)
    pieces: dict[int, list[str]] = {i: [] for i in range(len(LONG))}
    in_flight: list[int] = []
    # Each stream waits for the others' first pieces before reading on: the engine then holds
    # all four requests at once, and its scheduler decodes them in one batch.
    together = threading.Barrier(len(LONG), action=lambda: in_flight.append(
        streaming.engine.engine.get_num_unfinished_requests()))
    errors = []

    def run(i: int) -> None:
        try:
            for piece in streaming.stream(_chat(LONG[i]), _seeded(i)):
                if not pieces[i]:
                    together.wait(timeout=LOAD_S)
                pieces[i].append(piece)
        except Exception as exc:  # reported by the assertion below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(LONG))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=LOAD_S)
    assert not errors and in_flight == [len(LONG)]
    assert all(len(p) > 1 for p in pieces.values())  # each request streamed, piece by piece
    # The seed fixes a request's draws whatever is batched beside it; in float32 on this CPU the
    # logits come out the same alone and in the batch, so each answer replays from its seed alone.
    for i, prompt in enumerate(LONG):
        assert "".join(streaming.stream(_chat(prompt), _seeded(i))) == "".join(pieces[i]), i
    # ... and the seed is what fixes it: another seed, another answer.
    assert "".join(streaming.stream(_chat(LONG[0]), _seeded(99))) != "".join(pieces[0])


def test_closing_a_stream_aborts_its_request(streaming):
    engine = streaming.engine.engine
    stream = streaming.stream(_chat(LONG[0]), _seeded(5, max_new_tokens=1000))
    next(stream)
    assert engine.get_num_unfinished_requests() == 1
    stream.close()  # what the arena does when a visitor leaves or the other pane fails
    assert engine.get_num_unfinished_requests() == 0
    # The engine serves on: greedy text through generate() (judges.generate's call) is the stream's.
    greedy = GenerationParams(max_new_tokens=16)
    streamed = "".join(streaming.stream(_chat(LONG[1]), greedy))
    assert streaming.generate([_chat(LONG[1])], greedy)[0].text == streamed.strip()


def test_records_name_the_engine_and_what_its_seed_guarantees(streaming):
    info = streaming.info()
    assert info["engine"] == "vllm-async" and info["dtype"] == "torch.float32"
    assert info["vllm"] == metadata.version("vllm-cpu")
    assert "batch" in info["seeding"] and "seed" in info["seeding"]


def test_arena_battles_on_a_vllm_model_store_each_seed_and_what_it_guarantees(streaming, tmp_path):
    """The arena's own battle path, a vllm: model against the transformers SmolLM2, battles at once."""
    from arena.battles import Arena, admitted
    from arena.config import ArenaConfig
    from arena.store import VoteStore

    rival = get_model("smollm2-135m-instruct", **engine_options("smollm2-135m-instruct", "continuous", IN_FLIGHT))
    config = ArenaConfig(db=f"sqlite:///{tmp_path / 'votes.db'}", rate_limit=100,
                         params=GenerationParams(max_new_tokens=16, temperature=0.7, top_p=0.9))
    store = VoteStore(config.db)
    try:
        # Seeded sides and sampling seeds: the same battles every run.
        arena = Arena(config, store, {streaming.id: streaming, rival.id: rival}, rng=random.Random(20261127))
        assert admitted(config, arena.models.values()) == IN_FLIGHT
        battles = [arena.start(f"s{i}", prompt) for i, prompt in enumerate(LONG)]
        threads = [threading.Thread(target=lambda b=b: list(arena.stream(b))) for b in battles]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=LOAD_S)
        records = [arena.vote(f"s{i}", b.id, "tie") for i, b in enumerate(battles)]
    finally:
        rival.close()
        store.close()
    for battle, record in zip(battles, records):
        assert record.response_a and record.response_b
        assert record.meta["seeds"] == [battle.turns[0].seed]
        engines = dict(zip((record.model_a, record.model_b), record.meta["engines"]))
        assert engines[streaming.id] == {"engine": "vllm-async", "seeding": streaming.seeding}


def test_closing_the_model_ends_a_stream_being_read(streaming):
    """Last in the file: it closes the module's engine (closing again at teardown is a no-op)."""
    stream = streaming.stream(_chat(LONG[2]), _seeded(7, max_new_tokens=1000))
    next(stream)
    streaming.close()
    with pytest.raises(BackendError, match="closed"):
        for _ in stream:
            pass
