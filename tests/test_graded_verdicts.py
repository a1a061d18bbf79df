"""Graded verdicts (Arena-Hard's A>>B, A>B, A=B): templates declare them, records carry
``strength``, importers keep it, and Bradley-Terry can count strong verdicts more."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from row_reader import load_records
from analysis.ratings import CENTRE, ELO_SCALE, rate
from reference_bt import reference_bradley_terry
from support import run_module
from pairlab.records import Record, make_pair_id, read_records, write_records
from judges.templates import BUILTIN, TemplateError, load_template_file
from judges.verdicts import VerdictError, parse_verdict, strength_from_label, winner_from_label

GRADED = BUILTIN["arena-hard-pair"]


@pytest.mark.parametrize(("output", "winner", "strength"), [
    ("My answer... Assistant A is far better. [[A>>B]]", "model_a", 2),
    ("A is slightly better: [[A>B]]", "model_a", 1),
    ("About the same. [[A=B]]", "tie", 0),
    ("[[B>A]]", "model_b", 1),
    ("I first thought [[A>B]] but on reflection [[B>>A]]", "model_b", 2),
])
def test_arena_hard_labels_give_winner_and_strength(output, winner, strength):
    label = parse_verdict(GRADED, output)
    assert winner_from_label(GRADED, label) == winner
    assert strength_from_label(GRADED, label) == strength


def test_ungraded_templates_have_no_strength_and_keep_their_hash():
    mt = BUILTIN["mt-bench-pair"]
    assert strength_from_label(mt, "A") is None and mt.grades is None
    assert "grades" not in mt.describe() and GRADED.describe()["grades"]["A>>B"] == ["A", 2]
    with pytest.raises(VerdictError):
        strength_from_label(GRADED, "A")
    with pytest.raises(TemplateError, match="no logprob_prefix"):
        GRADED.scoring_split()


def test_a_template_file_declares_grades(tmp_path):
    path = tmp_path / "graded.j2"
    path.write_text('{#\nverdict: <(?P<verdict>A\\+\\+|A\\+|=|B\\+|B\\+\\+)>\ntie: =\n'
                    'grades: {"A++": ["A", 2], "A+": ["A", 1], "=": ["=", 0], "B+": ["B", 1], "B++": ["B", 2]}\n#}\n'
                    "Q: {{ instruction }}\nA: {{ response_a }}\nB: {{ response_b }}\n")
    template = load_template_file(path)
    assert template.labels == ("A++", "A+", "=", "B+", "B++")
    assert winner_from_label(template, parse_verdict(template, "so <B++>")) == "model_b"
    assert strength_from_label(template, "B++") == 2
    path.write_text('{#\nverdict: <(?P<verdict>A|B)>\ngrades: {"A": ["X", 1]}\n#}\n{{ instruction }}{{ response_a }}{{ response_b }}')
    with pytest.raises(TemplateError, match="grade 'A'.*expected"):
        load_template_file(path)
    path.write_text('{#\nverdict: <(?P<verdict>A|B)>\ngrades: {"A": ["A", 1}\n#}\n{{ instruction }}{{ response_a }}{{ response_b }}')
    with pytest.raises(TemplateError, match="header line 3: bad quoted value"):
        load_template_file(path)


def test_the_runner_writes_strength(tmp_path):
    from test_judges_runner import PAIRS, ScriptedJudge

    from judges.runner import JudgeConfig, judge_pairs
    from judges.run_files import RunFiles

    judge = ScriptedJudge(lambda text, params: "Both fine; A is much better. [[A>>B]]")
    out = tmp_path / "out.jsonl"
    with RunFiles(out) as files:
        judge_pairs(judge, PAIRS, JudgeConfig(template=GRADED, mode="generate"), files, progress=False)
    records = read_records(out)
    assert len(records) == 4 and {(r.winner, r.strength) for r in records} == {("model_a", 2)}


def _graded(n: int = 400, seed: int = 0) -> list[Record]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.choice(["m1", "m2", "m3"], 2, replace=False)
        first = rng.random() < 0.6
        out.append(Record(pair_id=make_pair_id(str(i), a, b), prompt=str(i), model_a=str(a), model_b=str(b),
                          response_a="x", response_b="y", winner="model_a" if first else "model_b", judge="j",
                          strength=int(rng.integers(1, 3))))
    return out


def test_importers_keep_strength(tmp_path):
    records = _graded(20)
    write_records(tmp_path / "v.jsonl", records)
    assert [r.strength for r in load_records(tmp_path / "v.jsonl")] == [r.strength for r in records]
    rows = [{k: v for k, v in r.to_dict().items() if k != "version"} for r in records]
    pd.DataFrame(rows).to_csv(tmp_path / "v.csv", index=False)
    assert [r.strength for r in load_records(tmp_path / "v.csv")] == [r.strength for r in records]


def test_strong_verdicts_weigh_three_times_in_bradley_terry():
    from analysis.frames import records_to_frame

    frame = records_to_frame(_graded())
    got = rate(frame, "bt", strong_weight=3).table.set_index("model")["rating"]
    # The same fit with every strong battle written out three times (Arena-Hard's own way).
    repeated = frame.loc[frame.index.repeat(np.where(frame["strength"] >= 2, 3, 1))]
    want = rate(repeated, "bt").table.set_index("model")["rating"]
    assert got.to_dict() == pytest.approx(want.to_dict(), abs=1e-6)
    plain = rate(frame, "bt").table.set_index("model")["rating"]
    assert max(abs(got - plain)) > 1.0
    theta = reference_bradley_terry(repeated["model_a"], repeated["model_b"], repeated["winner"])
    assert got.to_dict() == pytest.approx((CENTRE + ELO_SCALE * theta).to_dict(), abs=0.01)
    booted = rate(frame, "bt", strong_weight=3, bootstrap=50).table
    assert (booted["lower"] < booted["rating"]).all()
    with pytest.raises(ValueError, match="no battle carries a strength"):
        rate(frame.assign(strength=np.nan), "bt", strong_weight=3)


def test_cli_flag(tmp_path):
    write_records(tmp_path / "v.jsonl", _graded())
    cmd = ["--votes", str(tmp_path / "v.jsonl"), "--json"]
    plain = run_module("analysis.ratings", *cmd)
    weighted = run_module("analysis.ratings", *cmd, "--weight-strong", "3")
    assert plain.returncode == weighted.returncode == 0, plain.stderr + weighted.stderr
    assert json.loads(plain.stdout)["ratings"] != json.loads(weighted.stdout)["ratings"]
    bad = run_module("analysis.ratings", *cmd, "--method", "elo", "--weight-strong", "3")
    assert bad.returncode == 2 and "--weight-strong does not apply to --method elo" in bad.stderr
    helptext = run_module("analysis.ratings", "--help").stdout
    assert "--weight-strong W" in helptext and "Arena-Hard" in helptext


def test_the_report_weights_graded_verdicts_as_arena_hard_and_says_so():
    """Issue 16, item 5: with strengths in the records, the report's BT is the --weight-strong 3 fit."""
    from analysis.frames import records_to_frame
    from analysis.report import build_report, report_json

    records = _graded()
    ratings = report_json(build_report(records, n_boot=50, rating_bootstrap=10, panel=False))["judges"]["j"]["ratings"]
    got = {row["model"]: row["rating"] for row in ratings["bt"]}
    want = rate(records_to_frame(records), "bt", strong_weight=3).table.set_index("model")["rating"].to_dict()
    assert got == pytest.approx(want, abs=1e-6)
    assert "three times" in ratings["weighting"] and "Arena-Hard" in ratings["weighting"]
    import dataclasses

    plain = [dataclasses.replace(r, strength=None) for r in records]
    ratings = report_json(build_report(plain, n_boot=50, rating_bootstrap=10, panel=False))["judges"]["j"]["ratings"]
    assert ratings["weighting"] is None
    assert {row["model"]: row["rating"] for row in ratings["bt"]} != pytest.approx(want, abs=1.0)
