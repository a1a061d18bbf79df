"""Which estimand the ratings rate: each vote once (the default, said in the output) or each pair
once (``--per-pair`` / ``per_pair=True``): a pair three people voted on weighs three times a pair
with one vote per vote, once per pair."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pandas as pd

from analysis.frames import load_frame
from analysis.ratings import rate
from analysis.ratings.cli import main as ratings_main


def _planted(seed: int = 0) -> pd.DataFrame:
    """A against B on 400 pairs, each won by either half the time, but pairs A won drew three
    voters (all for A) and pairs B won one: per vote A wins 75%, per pair 50%."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(400):
        a_won = rng.random() < 0.5
        for v in range(3 if a_won else 1):
            rows.append({"model_a": "A", "model_b": "B", "winner": "model_a" if a_won else "model_b",
                         "pair_id": f"p{k}", "judge": f"human:{v}", "judge_type": "human"})
    rows.append({"model_a": "A", "model_b": "C", "winner": "tie", "pair_id": "q", "judge": "human:0",
                 "judge_type": "human"})
    return pd.DataFrame(rows)


def _gap(table) -> float:
    t = table.table.set_index("model")["rating"]
    return float(t["A"] - t["B"])


def test_per_pair_rates_each_pair_once_and_per_vote_is_said():
    frame = _planted()
    per_vote, per_pair = rate(frame, "bt"), rate(frame, "bt", per_pair=True)
    share = (frame.groupby("pair_id")["winner"].first() == "model_a")[lambda s: s.index != "q"].mean()
    # BT of a two-model comparison: the gap is the log-odds of the win share, on the Elo scale.
    assert abs(_gap(per_pair) - 400 / np.log(10) * np.log(share / (1 - share))) < 1.0
    assert _gap(per_vote) > _gap(per_pair) + 100
    assert per_vote.interval.endswith("each vote counted once")
    assert per_pair.interval.endswith("each pair counted once (its votes averaged)")


def test_the_cli_says_which_and_pandalm_has_as_many_voters_on_every_pair(shared_data):
    pandalm = str(shared_data / "pandalm")

    def run(*extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert ratings_main(["--votes", pandalm, "--judge", "human", *extra]) == 0
        return out.getvalue()

    assert "each vote counted once" in run() and "each pair counted once" in run("--per-pair")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        people = load_frame(pandalm, judge="human")
    # Three annotators on every pair: the two estimands are one.
    np.testing.assert_allclose(rate(people, "bt", per_pair=True).table["rating"], rate(people, "bt").table["rating"],
                               atol=1e-6)
