"""What a prompt is, one rule in every command: PandaLM's 170 prompts are recognised as
prompts (not its 999 test items), a prompt text without a prompt_id is a prompt on the
rating path too, and a plain ``model_a,model_b,winner`` table is not one prompt of every vote."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.frames import load_frame
from analysis.ratings import rate
from analysis.ratings.cli import main as ratings_main
from analysis.ratings.ppi import ppi_data
from analysis.stats import cluster_codes, cluster_groups
from pairlab.records import Record, make_pair_id, write_records

@pytest.fixture(scope="module")
def pandalm(shared_data) -> Path:
    return shared_data / "pandalm"


def _ratings_output(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = ratings_main(list(argv))
    assert code == 0, out.getvalue()
    return out.getvalue()


def test_pandalm_is_clustered_by_its_170_prompts(pandalm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importer's notes on the test set's odd rows
        people = load_frame(str(pandalm), judge="human")
    clustering = cluster_groups(people)
    assert (clustering.kind, clustering.n) == ("prompt", 170)
    first = _ratings_output("--votes", str(pandalm), "--judge", "human").splitlines()[0]
    assert first == "intervals clustered by prompt (170 prompts)"
    # The prompt's pairs share its difficulty and each model's answer: people's intervals by
    # prompt are wider than the pair-clustered ones (0.67-0.72x as wide, the review found).
    by_prompt = rate(people, "bt")
    by_pair = rate(people, "bt", cluster="pair")
    ratio = (by_pair.table["upper"] - by_pair.table["lower"]).to_numpy() / (
        by_prompt.table["upper"] - by_prompt.table["lower"]).to_numpy()
    assert ratio.max() < 0.8, ratio


def _plain_csv(path: Path, n: int = 400) -> Path:
    rng = np.random.default_rng(0)
    models = ["a", "b", "c", "d"]
    lines = ["model_a,model_b,winner"]
    for _ in range(n):
        i, j = rng.choice(4, 2, replace=False)
        lines.append(f"{models[i]},{models[j]},{rng.choice(['model_a', 'model_b', 'tie'])}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_plain_csv_is_not_one_prompt(tmp_path):
    from analysis.importers.columnar import read_table
    from analysis.judgment_table import judgment_table

    path = _plain_csv(tmp_path / "plain.csv")
    frame = load_frame(str(path))
    assert cluster_groups(frame).describe() == "clustered by pair_id (400 pairs)"
    with pytest.raises(ValueError, match="no prompt_id or prompt"):
        cluster_groups(frame, "prompt")
    # The report's rows (the judgment table, its prompt a key): the same rule.
    table, _ = read_table([str(path)])
    judged, _ = judgment_table(table, key_codes=True)
    clustering = cluster_groups(judged)
    assert (clustering.kind, clustering.n) == ("pair", 400)


def test_blank_prompts_and_missing_pairs_are_each_their_own_cluster():
    frame = pd.DataFrame({"model_a": ["a"] * 4, "model_b": ["b"] * 4, "winner": ["model_a"] * 4,
                          "pair_id": ["p1", "p1", None, ""], "prompt": ["", " ", None, ""]})
    assert cluster_groups(frame).describe() == "clustered by pair_id (3 pairs)"
    assert len(set(cluster_codes(frame["pair_id"]))) == 3


def _prompt_text_records(seed: int = 0, n_prompts: int = 60) -> list[Record]:
    """Six pairs per prompt (every pair of four models), people and a judge on each, prompt
    text but no prompt_id."""
    rng = np.random.default_rng(seed)
    models = ["m0", "m1", "m2", "m3"]
    out = []
    for p in range(n_prompts):
        prompt = f"question {p}: " + "word " * int(rng.integers(1, 5))
        for i in range(4):
            for j in range(i + 1, 4):
                ra, rb = f"{models[i]} on {p}", f"{models[j]} on {p}"
                pid = make_pair_id(prompt, ra, rb)
                base = dict(pair_id=pid, prompt=prompt, model_a=models[i], model_b=models[j], response_a=ra,
                            response_b=rb)
                win = "model_a" if rng.random() < 0.5 + 0.1 * (j - i) else "model_b"
                out.append(Record(**base, winner=win, judge="human:1"))
                out.append(Record(**base, winner=win if rng.random() < 0.8 else "tie", judge="judge-x"))
    return out


def test_prompt_text_without_prompt_id_is_a_prompt_on_the_rating_path(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_records(path, _prompt_text_records())
    first = _ratings_output("--votes", str(path), "--judge", "human").splitlines()[0]
    assert first == "intervals clustered by prompt (60 prompts)"
    forced = _ratings_output("--votes", str(path), "--judge", "human", "--cluster", "prompt").splitlines()[0]
    assert forced == "intervals clustered by prompt (60 prompts)"
    ppi = _ratings_output("--votes", str(path), "--judge", "human", "--ppi", "judge-x")
    assert "clustered by prompt (60 prompts)" in ppi
    frame = load_frame(str(path), judge=None)
    human, judge = frame[frame["judge_type"] == "human"], frame[frame["judge"] == "judge-x"]
    data = ppi_data(human, judge, cluster=None)
    assert data.group is not None and int(data.group.max()) + 1 == 60


def test_an_intervals_label_follows_the_clustering_the_report_describes():
    from analysis.stats import Clustering, ci_label, described_unit

    prompt, pair = Clustering("prompt", None, 170), Clustering("pair", None, 999)
    none = Clustering("none", None, 400)
    assert [described_unit(c.describe()) for c in (prompt, pair, none)] == ["prompt", "pair", "vote"]
    assert ci_label(prompt.describe()) == "95% CI clustered by prompt"
    assert ci_label(pair.describe()) == "95% CI clustered by pair"
    assert ci_label(none.describe()) == "95% CI, votes independent"
    assert ci_label("") == "95% CI clustered by pair"  # a report.json saved before the field existed
