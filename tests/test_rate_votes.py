"""One rating rule for every caller: the ratings command, ``pairlab.rate`` (with and without a
bootstrap), the arena's leaderboard and the bias report give the same ratings on the same votes, whatever the
models are called, and the API takes a plain DataFrame and speaks in its own words."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import pairlab
from analysis.ratings.cli import main as ratings_main
from analysis.report.cli import main as report_main
from arena.leaderboard import ratings as leaderboard_ratings
from pairlab.records import Record


def _eighteen(top: str) -> pd.DataFrame:
    """18 votes where ``top`` never lost: no maximum-likelihood rating exists."""
    rows = [(top, "B", "model_a")] * 6 + [("C", top, "model_b")] * 3 + [("B", "C", "model_a")] * 5 \
        + [("C", "B", "model_a")] * 4
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


def _records(frame: pd.DataFrame) -> list[Record]:
    return [Record(pair_id=f"p{i}", prompt=f"prompt {i}", model_a=r.model_a, model_b=r.model_b, response_a="x",
                   response_b="y", winner=r.winner, judge="human") for i, r in enumerate(frame.itertuples())]


def _cli(path, *extra) -> dict[str, float]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert ratings_main(["--votes", str(path), "--json", *extra]) == 0
    return {row["model"]: row["rating"] for row in json.loads(out.getvalue())["ratings"]}


@pytest.mark.parametrize("top", ["A", "top"])
def test_the_eighteen_votes_rate_alike_everywhere(tmp_path, top):
    frame = _eighteen(top)
    path = tmp_path / "votes.csv"
    frame.to_csv(path, index=False)
    answers = {
        "ratings": _cli(path),
        "ratings --bootstrap 200": _cli(path, "--bootstrap", "200"),
        "rate": dict(zip(*pairlab.rate(frame).to_frame()[["model", "rating"]].T.to_numpy())),
        "rate bootstrap=200": dict(zip(*pairlab.rate(path, bootstrap=200).to_frame()[["model", "rating"]].T.to_numpy())),
    }
    table, method, _ = leaderboard_ratings(_records(frame), bootstrap=200)
    answers["leaderboard"] = dict(zip(table["model"], table["rating"]))
    assert report_main(["--votes", str(path), "--out", str(tmp_path / "report"), "--quiet"]) == 0
    rows = json.loads((tmp_path / "report" / "report.json").read_text())["judges"]["human"]["ratings"]["bt"]
    answers["report"] = {row["model"]: row["rating"] for row in rows or ()}
    expected = answers["ratings"]
    assert set(expected) == {top, "B", "C"} and expected[top] == max(expected.values())
    assert expected[top] < 1400  # the early estimate under the prior, not a diverging fit
    for name, got in answers.items():
        assert got.keys() == expected.keys(), name
        np.testing.assert_allclose([got[m] for m in expected], list(expected.values()), atol=0.06, err_msg=name)
    assert method == "regularised"
    rated = pairlab.rate(frame, bootstrap=200)
    assert rated.early_estimate and any("early estimate" in w for w in rated.warnings)


def test_the_ratings_do_not_depend_on_the_names(tmp_path):
    a = pairlab.rate(_eighteen("A"), bootstrap=200).to_frame()
    b = pairlab.rate(_eighteen("top"), bootstrap=200).to_frame()
    np.testing.assert_allclose(a["rating"], b["rating"])
    # The bootstrap's draws follow the models' order, so its bounds move by its own noise, no more.
    assert np.isfinite(a[["lower", "upper"]].to_numpy()).all() and np.isfinite(b[["lower", "upper"]].to_numpy()).all()
    np.testing.assert_allclose(a["lower"], b["lower"], atol=60)


def _battles(n: int = 300, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = {"llama-7b": 0.8, "bloom-7b": 0.3, "opt-7b": 0.0, "pythia": -0.4}
    names = list(strength)
    rows = []
    for _ in range(n):
        a, b = rng.choice(len(names), 2, replace=False)
        p = 1 / (1 + np.exp(strength[names[b]] - strength[names[a]]))
        rows.append((names[a], names[b], "model_a" if rng.random() < p else "model_b"))
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


def test_rate_takes_a_plain_dataframe_and_shows_in_a_notebook():
    frame = _battles()
    rated = pairlab.rate(frame)
    table = rated.to_frame()
    assert list(table.columns) == ["model", "rating", "lower", "upper", "rank", "n"]
    assert table["model"].iloc[0] == "llama-7b" and rated["model"].iloc[0] == "llama-7b"  # DataFrame access
    assert len(rated) == 4 and rated.warnings == ()
    assert "<table" in rated._repr_html_() and "llama-7b" in rated._repr_html_()
    assert repr(rated).startswith("Ratings(bt, 4 models")
    # A frame with object columns and None, as a user builds it, rates the same.
    loose = frame.astype(object).assign(judge=None, pair_id=None)
    np.testing.assert_allclose(pairlab.rate(loose).to_frame()["rating"], table["rating"])


def test_a_csv_with_more_columns_reads(tmp_path):
    frame = _battles().assign(pair_id=[f"p{i}" for i in range(300)], prompt="say hi", judge="human")
    frame.to_csv(tmp_path / "votes.csv", index=False)
    table = pairlab.rate(tmp_path / "votes.csv").to_frame()
    assert table["model"].iloc[0] == "llama-7b" and table["n"].sum() == 600


def test_the_api_takes_the_command_s_anchor_and_speaks_its_own_words():
    frame = _battles()
    anchored = pairlab.rate(frame, anchor="llama-7b=1200").to_frame().set_index("model")
    assert anchored.loc["llama-7b", "rating"] == pytest.approx(1200)
    assert anchored.equals(pairlab.rate(frame, anchor=("llama-7b", 1200)).to_frame().set_index("model"))
    with pytest.raises(ValueError, match="baseline=") as error:
        pairlab.rate(frame, method="winrate")
    assert "--baseline" not in str(error.value)
    with pytest.raises(ValueError, match="gpt-4") as error:
        pairlab.rate(frame.assign(judge="gpt-4"), judge="gpt-5")
    assert "no battles of judge 'gpt-5'" in str(error.value)


def test_an_anchor_keeps_every_rank():
    frame = _battles(600)
    free = pairlab.rate(frame).to_frame().set_index("model")
    anchored = pairlab.rate(frame, anchor="opt-7b=1000").to_frame().set_index("model")
    assert anchored["rank"].notna().all()
    assert anchored["rank"].reindex(free.index).tolist() == free["rank"].tolist()
    assert not any("no interval" in w for w in pairlab.rate(frame, anchor="opt-7b=1000").warnings)


def test_judge_only_data_counts_each_judge_once():
    frame = _battles(200)
    per_order = frame.assign(judge="smollm2", judge_type="llm")
    averaged = frame.iloc[:100].assign(judge="smollm2:order-averaged", judge_type="llm")
    other = frame.assign(judge="gemma3", judge_type="llm")
    rated = pairlab.rate(pd.concat([per_order, averaged, other], ignore_index=True), judge=None)
    assert rated.to_frame()["n"].sum() == 2 * (100 + 200)  # the averaged smollm2 and gemma3, each once
    assert "smollm2" in rated.raters and "left out smollm2" in rated.raters


def test_read_votes_warns_once(tmp_path, recwarn):
    lines = [json.dumps({"pair_id": f"p{i}", "prompt": "q", "model_a": "a", "model_b": "b", "response_a": "x",
                         "response_b": "y", "winner": "model_a", "judge": "human"}) for i in range(3)]
    lines += ["{not json"] * 8
    (tmp_path / "votes.jsonl").write_text("\n".join(lines) + "\n")
    pairlab.read_votes(tmp_path / "votes.jsonl", skip_bad=True)
    messages = [str(w.message) for w in recwarn.list]
    assert len(messages) == 1 and messages[0].startswith("reading noted 8 things")
    assert messages[0].endswith("... and 5 more import warnings") and messages[0].count("\n") == 4


@pytest.mark.parametrize("options, words", [
    ({"bootstrap": 10**9}, "bootstrap must be"),
    ({"anchor": ("llama-7b", float("nan"))}, "anchor rating must be a finite"),
    ({"method": "elo", "k": float("inf")}, "k \\(the Elo K-factor\\)"),
    ({"level": 1.5}, "level must be"),
])
def test_options_out_of_bounds_are_refused(options, words):
    with pytest.raises(ValueError, match=words):
        pairlab.rate(_battles(50), **options)


def test_a_model_name_that_is_not_text_is_a_value_error():
    frame = _battles(50).astype(object)
    frame.loc[3, "model_a"] = 1.5
    with pytest.raises(ValueError, match="model"):
        pairlab.rate(frame)


def test_twenty_thousand_models_rate_within_a_gigabyte(tmp_path):
    import tracemalloc

    rng = np.random.default_rng(0)
    m, n = 20_000, 200_000
    theta = rng.normal(0, 1, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    won = rng.random(n) < 1 / (1 + np.exp(theta[b] - theta[a]))
    names = np.array([f"model-{k:05d}" for k in range(m)], dtype=object)
    pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": np.where(won, "model_a", "model_b")}).to_csv(
        tmp_path / "many.csv", index=False)
    tracemalloc.start()
    try:
        rated = pairlab.rate(tmp_path / "many.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 30
    table = rated.to_frame().set_index("model")
    assert len(table) == m and table["n"].sum() == 2 * n
    # The planted strengths come back (about 20 battles a model), and no interval is claimed.
    assert np.corrcoef(table["rating"].reindex(names).to_numpy(), theta)[0, 1] > 0.8
    assert table["lower"].isna().all() and any("no intervals" in w for w in rated.warnings)


def test_the_readme_notebook_example_shows_what_it_says():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("In a notebook, any DataFrame of battles")[1].split("```python\n")[1].split("```")[0]
    code, shown = block.split("\nratings\n")[0], block.split("\nratings\n")[1]
    space: dict = {}
    exec(code, space)
    expected = [line[2:] for line in shown.splitlines() if line.startswith("# ")]
    assert repr(space["ratings"]).splitlines() == expected
