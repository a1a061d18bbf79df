"""Echo scoring keeps one log-probability per token, not the vocabulary for every position.

Gemma's 262k vocabulary makes a full float32 log-softmax 1 MiB a token (100,000 characters,
about 25k tokens, would be 26 GB). Measured in a fresh subprocess on the real model: the
growth of peak RSS (``VmHWM``) while ``prompt_logprobs`` scores a 1,600-token text, after a
warm-up call. At 400 tokens the fixed part (a 64 MiB block of logits, its exp, the
activations: about 216 MiB) was more than half of the full log-softmax (400 MiB), and
whether it showed at all depended on the model's loading peak, which the cache layout moved;
at 1,600 tokens it is 292 MiB against 1,600 MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[1]
N_TOKENS = 1600

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
