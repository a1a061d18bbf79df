"""Generate mode on a GPU defaults to vLLM where it is installed and can load the judge;
transformers stays the reference, chosen with --backend, and the other modes keep it."""

from __future__ import annotations

import pytest

from judges import run as judges_run


def settings(monkeypatch, *options, gpu=True, vllm=True):
    monkeypatch.setattr(judges_run, "_gpu", lambda: gpu)
    monkeypatch.setattr(judges_run, "_vllm_installed", lambda: vllm)
    args = judges_run.build_parser().parse_args(["--pairs", "p.jsonl", "--out", "o.jsonl", *options])
    return judges_run._settings(judges_run.build_parser(), args)


def test_vllm_loads_directories_and_repository_names_not_gguf_files():
    assert judges_run.vllm_loads("hf:/models/prometheus-7b")
    assert judges_run.vllm_loads("vllm:org/name")
    assert not judges_run.vllm_loads("embedded:smollm2-135m-instruct")
    assert not judges_run.vllm_loads("gguf:/models/x.gguf")
    assert not judges_run.vllm_loads("openai:http://127.0.0.1:8000/v1#m")


def test_generate_on_a_gpu_with_vllm_runs_on_vllm_with_its_batching(monkeypatch):
    backend, config = settings(monkeypatch, "--judge", "hf:/models/judge", "--mode", "generate")
    assert backend == "vllm"
    assert config.batch_size == judges_run.DEFAULT_BATCH["vllm"]
    assert config.prefix_order  # pairs of one question side by side, for the prefix cache


@pytest.mark.parametrize("options, gpu, vllm", [
    (("--mode", "generate", "--backend", "transformers"), True, True),  # the reference, asked for
    (("--mode", "logprob",), True, True),
    (("--mode", "generate",), False, True),  # no GPU
    (("--mode", "generate",), True, False),  # vLLM not installed
])
def test_otherwise_transformers(monkeypatch, options, gpu, vllm):
    backend, _ = settings(monkeypatch, "--judge", "hf:/models/judge", *options, gpu=gpu, vllm=vllm)
    assert backend == "transformers"


def test_an_embedded_gguf_judge_stays_on_transformers(monkeypatch):
    backend, _ = settings(monkeypatch, "--judge", "smollm2-135m-instruct", "--mode", "generate")
    assert backend == "transformers"
