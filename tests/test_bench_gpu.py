"""bench/gpu.py keeps working: its tiny shapes on CPU print every section with finite numbers."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "gpu.py"
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|\bnan\b|\binf\b", re.IGNORECASE)


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_bench_prints_every_section_with_finite_numbers(capsys):
    bench = load_bench()
    assert bench.main(["--tiny", "--new-tokens", "6", "--pairs", "3", "--prompt-tokens", "12"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()

    def row(prefix: str) -> str:
        found = [line for line in lines if line.strip().startswith(prefix)]
        assert found, f"no line starting {prefix!r} in:\n{out}"
        return found[0]

    assert row("device:") and "engine: transformers-continuous-batching" in out
    assert "== arena" in out and "== judging" in out
    assert re.search(r"batch 1 [\d.]+ tok/s, batch 8 [\d.]+ tok/s", row("anchor:"))
    assert "-- one model per process" in out and "-- both models in one process" in out
    for visitors in ("1 |", "4 |", "16 |"):
        # The big model alone, then both models: a pane column per model, in all, first token, two ratios.
        rows = [line for line in lines if line.strip().startswith(visitors)]
        assert [len(line.split("|")) for line in rows] == [6, 7], rows
    for mode in ("logprob |", "likelihood |", "generate |"):
        assert row(mode).count("|") >= 4
        assert "x" in row(mode)  # each mode prints its ratios
    measured = [line for line in lines if "|" in line and not line.startswith(("visitors", "mode"))]
    measured += [row("measured peaks:"), row("anchor:")]
    for line in measured:
        values = [float(v) for v in NUMBER.findall(line)]
        assert values, line
        assert all(math.isfinite(v) for v in values), line
    # rates are rates: nothing measured came out zero or negative
    for line in lines:
        if line.strip().startswith(("1 |", "4 |", "16 |")):
            assert all(float(v) > 0 for v in NUMBER.findall(line)), line
