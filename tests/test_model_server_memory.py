"""Echo scoring keeps one log-probability per token, not the vocabulary for every position.

Gemma's 262k vocabulary makes a full float32 log-softmax 1 MiB a token (100,000 characters,
about 25k tokens, would be 26 GB). Measured in a fresh subprocess on the real model: the
growth of peak RSS (``VmHWM``) while ``prompt_logprobs`` scores an 800-token text, after a
warm-up call. At 400 tokens the fixed part (a 64 MiB block of logits, its exp, the
activations: about 216 MiB) was more than half of the full log-softmax (400 MiB), and
whether it showed at all depended on the model's loading peak, which the cache layout moved.
At 800 tokens it grew 128 MiB against a bound of 400 MiB, and the full log-softmax of the old
code, run in the same script, grew 1,600 MiB (twice the 800 MiB of one full log-softmax); at
1,600 tokens, as first written, the test took twice as long for the same verdicts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[1]
N_TOKENS = 800

_MEASURE = """
import json, sys
from pairlab.models import get_model

def high_water():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))

model = get_model("gemma3-270m")
text = " ".join(["alpha", "beta", "gamma", "delta"] * int(sys.argv[1]))
ids = model.tokenizer(text).input_ids[:int(sys.argv[1])]
text = model.tokenizer.decode(ids, skip_special_tokens=True)
model.prompt_logprobs("warm up once")
before = high_water()
scored = model.prompt_logprobs(text)
print(json.dumps({"n_tokens": len(scored), "vocab": model.model.config.vocab_size,
                  "peak_growth": high_water() - before}))
"""


def test_echo_scoring_peak_memory_does_not_grow_with_the_vocabulary_times_positions():
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(N_TOKENS)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    full = measured["n_tokens"] * measured["vocab"] * 4  # one float32 log-softmax over every position
    print(f"{measured['n_tokens']} tokens: peak growth {measured['peak_growth'] / 2**20:.0f} MiB; "
          f"a full log-softmax is {full / 2**20:.0f} MiB")
    assert measured["n_tokens"] >= N_TOKENS - 5
    # Logits go a block at a time (64 MiB and its exp); the old code held logits and their
    # log-softmax whole, twice `full`.
    assert measured["peak_growth"] < full / 2


def test_gathered_token_logprobs_equal_the_full_log_softmax(smollm):
    import torch

    text = "The capital of France is Paris, and the capital of Italy is Rome."
    scored = smollm.prompt_logprobs(text)
    ids = smollm.tokenizer(text, add_special_tokens=smollm._encode_flags([text])).input_ids
    with torch.inference_mode():
        full = torch.log_softmax(smollm.model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
    expected = [float(full[p - 1, t]) for p, t in enumerate(ids) if p > 0]
    assert scored[0][2] is None
    assert [v for _, _, v in scored[1:]] == pytest.approx(expected, abs=1e-4)
    assert "".join(t for t, _, _ in scored) == text


_ENGINES = """
import json, sys
from pairlab.backends.base import GenerationParams
from pairlab.models import get_model

def high_water():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))

models = [get_model(name, engine="continuous", max_inflight=8) for name in ("smollm2-135m-instruct", "gemma3-270m")]
loaded = high_water()
prompt = "Summarise this: " + "The quick brown fox jumps over the lazy dog. " * 120  # about 1,300 tokens
pieces = [list(m.stream(prompt, GenerationParams(max_new_tokens=4, temperature=0.7, top_p=0.9, seed=1)))
          for m in models]
print(json.dumps({"loaded": loaded, "peak": high_water(), "streamed": [len(p) for p in pieces]}))
"""


def test_an_app_process_worth_of_engines_holds_the_weights_and_a_few_gigabytes_not_eight():
    """The arena's two embedded models, each behind its batching engine (the shipped arena.toml),
    after one long prompt each. The engine's step buffers are sized by the tokens one step may
    take; at the library's default (8,192) this process peaked at 8 GB, and three app processes
    of a test, beside another run of the suite, filled the machine."""
    result = subprocess.run([sys.executable, "-c", _ENGINES], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"weights loaded: {measured['loaded'] / 2**30:.2f} GiB; peak after a long prompt on each engine: "
          f"{measured['peak'] / 2**30:.2f} GiB")
    assert all(n >= 1 for n in measured["streamed"])
    assert measured["peak"] - measured["loaded"] < 4 * 2**30
