"""Annotator cards: structure preference, parse failures, seconds per 1,000 judgments."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.judging.annotator import annotator_card, read_run_timings
from analysis.frames import records_to_frame
from analysis.ratings import add_style_features
from pairlab.records import Record, make_pair_id

PLAIN = "Paris is the capital of France, and it has been for a long time."
LISTED = "The capital:\n- Paris\n- since the 10th century\n\n**Paris**"


def _frame(p_structured: float, n: int = 1500, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        listed_first = rng.random() < 0.5
        a, b = (LISTED + str(i), PLAIN + str(i)) if listed_first else (PLAIN + str(i), LISTED + str(i))
        pick_listed = rng.random() < p_structured
        rows.append(Record(pair_id=make_pair_id(str(i), a, b), prompt=str(i), model_a="m1", model_b="m2",
                           response_a=a, response_b=b, judge="j",
                           winner="model_a" if pick_listed == listed_first else "model_b"))
    return add_style_features(records_to_frame(rows))


def test_a_planted_structure_preference_is_recovered():
    card = annotator_card(_frame(0.8), n_parse_errors=0, timing=None)
    lo, hi = card.prefers_structure_ci
    assert lo <= 0.8 <= hi and card.n_structure == 1500
    fair = annotator_card(_frame(0.5, seed=1), n_parse_errors=0, timing=None)
    assert fair.prefers_structure_ci[0] <= 0.5 <= fair.prefers_structure_ci[1]
    assert "no judges.run manifest" in card.note


def test_parse_failure_rate_counts_outputs_without_a_verdict():
    card = annotator_card(_frame(0.5, n=90), n_parse_errors=10, timing=None)
    assert card.parse_failure_rate == pytest.approx(10 / 100) and card.n_outputs == 100
    assert card.parse_failure_ci[0] < 0.1 < card.parse_failure_ci[1]


def test_seconds_per_1000_judgments_from_the_manifests(tmp_path):
    # The shape judges.run writes: this run and an earlier, interrupted one into the same OUT.
    (tmp_path / "judge-x.manifest.json").write_text(json.dumps({
        "version": 1, "judge": {"id": "x", "backend": "transformers"}, "wall_time_s": 30.0,
        "counts": {"records_written": 140, "parse_failures": 10},
        "previous_runs": [{"wall_time_s": 20.0, "counts": {"records_written": 50, "parse_failures": 0}},
                          {"wall_time_s": None, "counts": None}],
    }))
    (tmp_path / "pairs.manifest.json").write_text(json.dumps({"version": 1, "models": {}}))  # judges.generate
    (tmp_path / "broken.manifest.json").write_text("{not json")
    timings, notes = read_run_timings([tmp_path])
    assert set(timings) == {"x"}
    assert (timings["x"].seconds, timings["x"].judgments) == (50.0, 200)
    assert len(notes) == 1 and "broken.manifest.json" in notes[0]
    card = annotator_card(_frame(0.5, n=50), 0, timings["x"])
    assert card.seconds_per_1000 == pytest.approx(1000 * 50.0 / 200) and card.note is None
    # A records file finds the manifest beside it.
    (tmp_path / "judge-x.jsonl").write_text("")
    assert read_run_timings([tmp_path / "judge-x.jsonl"])[0]["x"].judgments == 200


def test_no_structure_difference_is_null_with_a_reason():
    rows = [Record(pair_id=f"p{i}", prompt="q", model_a="m1", model_b="m2", response_a=f"a{i}", response_b=f"b{i}",
                   winner="model_a", judge="j") for i in range(5)]
    card = annotator_card(add_style_features(records_to_frame(rows)), 0, None)
    assert card.prefers_structure is None and card.prefers_structure_ci is None
    assert "differ in markdown structure" in card.note
