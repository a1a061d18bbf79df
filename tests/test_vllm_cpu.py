"""`--backend vllm` and a vLLM server (`openai:`) judge as the transformers backend does, run
for real with vLLM's CPU build (issue 30, item 3). `make test-vllm` builds that build's
virtualenv and runs this file with it; the suite's `make test` does not collect it.

Both vLLM paths judge the embedded SmolLM2 (its converted folder, the one the transformers
backend loads) in logprob mode on data/obvious_pairs.jsonl, and are held to the transformers
backend's verdicts: the same winner on every record, prob_a within a tolerance set by the
dtype vLLM ran in.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from pairlab.models import resolve
from pairlab.weights import prepared_dir
from support import answers, wait_until

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


@pytest.fixture(scope="module")
def server(smollm_dir):
    """One vLLM OpenAI-compatible server on a free loopback port, serving SmolLM2 as `smollm2`."""
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
