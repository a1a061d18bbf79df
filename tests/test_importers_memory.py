"""Importing a large vote file holds a small multiple of it in memory, not the file several
times over: rows are streamed (JSONL line by line, Parquet batch by batch, a JSON array's
items released as they are converted) and the records share their texts with the parsed
rows.

Measured in a fresh subprocess: the growth of peak RSS (``VmHWM``) while
``load_records`` runs, after every import is done.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import HIGH_WATER

ROOT = Path(__file__).resolve().parents[1]
N_ROWS = 12_000
# Peak growth over the size of the rows as JSON text (for Parquet too: its file is
# compressed, the records are not). The records themselves keep every text plus Python
# object overhead, about 2x (measured 2.2x); a reader that held the parsed file and the
# records side by side would need 3x and more. Parquet adds Arrow's decoding buffers
# (measured 3.6-4.0x in all; 5.2-5.4x before reading without pre-buffering, one thread). A JSON
# array has to be parsed whole, but each parsed row is let go once it is a record (2.9x).
BOUND = {"jsonl": 2.75, "json": 3.5, "parquet": 4.75}

_MEASURE = HIGH_WATER + """
import json, sys
sys.path.insert(0, "tests")
from row_reader import load_records
import pyarrow.parquet  # noqa: F401  (imports are not what is measured)

before = high_water()
records = load_records(sys.argv[1])
print(json.dumps({"n": len(records), "peak_growth": high_water() - before}))
"""


def _rows(n: int) -> list[dict]:
    rng = random.Random(0)
    words = ("the of and to in is that for it as was with be by on not this are or from at which but have an "
             "they you were there one all we their model answer prompt").split()

    def text(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k))

    rows = []
    for i in range(n):
        question = text(40)
        rows.append({
            "question_id": f"q{i}", "model_a": f"model-{i % 100}", "model_b": f"model-{(i + 1) % 100}",
            "winner": rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"]), "judge": f"arena_user_{i}",
            "conversation_a": [{"role": "user", "content": question}, {"role": "assistant", "content": text(200)}],
            "conversation_b": [{"role": "user", "content": question}, {"role": "assistant", "content": text(200)}],
            "turn": 1, "anony": True, "language": "English", "tstamp": 1.7e9 + i,
        })
    return rows


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    folder = tmp_path_factory.mktemp("large")
    rows = _rows(N_ROWS)
    jsonl = folder / "arena.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    array = folder / "arena.json"
    array.write_text(json.dumps(rows))
    parquet = folder / "arena.parquet"
    pd.DataFrame(rows).to_parquet(parquet)
    return {"jsonl": jsonl, "json": array, "parquet": parquet, "text_bytes": jsonl.stat().st_size}


@pytest.mark.process  # the reader's own peak memory, in a fresh interpreter
@pytest.mark.parametrize("kind", ["jsonl", "json", "parquet"])
def test_peak_memory_is_a_small_multiple_of_the_rows(large, kind):
    path = large[kind]
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    measured = json.loads(result.stdout)
    assert measured["n"] == N_ROWS
    ratio = measured["peak_growth"] / large["text_bytes"]
    print(f"{kind}: file {path.stat().st_size / 2**20:.1f} MiB, rows as JSON {large['text_bytes'] / 2**20:.1f} MiB, "
          f"peak growth {measured['peak_growth'] / 2**20:.1f} MiB = {ratio:.2f}x")
    assert ratio < BOUND[kind]
