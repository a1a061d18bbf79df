"""One reader and one vote rule for every command (issue 27, item 5).

Every command reads input through ``analysis.importers.read_table`` and keeps the votes
``pairlab.ratable.ratable_mask`` counts, so a file reads everywhere or nowhere and gives the
same people's ratings everywhere. ``COMMANDS`` lists the ways to get people's ratings from a
file: a new command or API joins every test here with one line.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairlab import record_table
from analysis.importers import read_table
from arena.export import to_fastchat
from pairlab.ratable import ratable_mask
from pairlab.records import Record, write_records
from ratable_twin import ratable
from support import run_module

REPO = Path(__file__).resolve().parents[1]
STRENGTH = {"strong": 1.0, "middle": 0.0, "weak": -1.0}


def _run(*args: str) -> subprocess.CompletedProcess:
    assert args[0] == "-m", args  # python -m MODULE ..., in this process
    return run_module(*args[1:], cwd=REPO)


def _ratings_cli(path: Path, out: Path) -> dict[str, float]:
    proc = _run("-m", "analysis.ratings", "--votes", str(path), "--judge", "human", "--json")
    assert proc.returncode == 0, proc.stderr
    return {row["model"]: row["rating"] for row in json.loads(proc.stdout)["ratings"]}


def _report_cli(path: Path, out: Path) -> dict[str, float]:
    proc = _run("-m", "analysis.report", "--votes", str(path), "--out", str(out), "--quiet", "--no-panel",
                "--bootstrap", "10", "--rating-bootstrap", "10")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "report.json").read_text())["judges"]["human"]["ratings"]["bt"]
    return {row["model"]: row["rating"] for row in rows}


def _api_rate(path: Path, out: Path) -> dict[str, float]:
    import pairlab

    table = pairlab.rate(pairlab.read_votes(path))
    return dict(zip(table["model"], table["rating"]))


COMMANDS = {"analysis.ratings": _ratings_cli, "analysis.report": _report_cli, "pairlab.rate": _api_rate}


def _battles(n: int, seed: int = 0) -> list[dict]:
    """People's votes on three models of planted strengths (Bradley-Terry, ties 10%)."""
    rng = np.random.default_rng(seed)
    names = list(STRENGTH)
    out = []
    for k in range(n):
        a, b = rng.choice(3, size=2, replace=False)
        p = 1 / (1 + np.exp(-(STRENGTH[names[a]] - STRENGTH[names[b]])))
        winner = "tie" if rng.random() < 0.1 else ("model_a" if rng.random() < p else "model_b")
        out.append({"model_a": names[a], "model_b": names[b], "winner": winner, "judge": f"human:v{k % 7}",
                    "prompt": f"question {k}", "response_a": f"answer {k} " * (k % 5 + 1),
                    "response_b": f"reply {k} " * (k % 3 + 1), "k": k})
    return out


def _record(battle: dict, **meta) -> Record:
    k = battle["k"]
    return Record(pair_id=f"p{k}", prompt=battle["prompt"], model_a=battle["model_a"], model_b=battle["model_b"],
                  response_a=battle["response_a"], response_b=battle["response_b"], winner=battle["winner"],
                  judge=battle["judge"], meta=meta,
                  conversation={side: [{"role": "user", "content": battle["prompt"]},
                                       {"role": "assistant", "content": battle[f"response_{side[-1]}"]}]
                                for side in ("model_a", "model_b")})


def _fastchat(battle: dict, texts: bool = True) -> dict:
    row = {k: battle[k] for k in ("model_a", "model_b", "winner")}
    row.update(judge=battle["judge"].removeprefix("human:"), turn=1, anony=True, tstamp=1.7e9 + battle["k"])
    if texts:
        for side in "ab":
            row[f"conversation_{side}"] = [{"role": "user", "content": battle["prompt"]},
                                           {"role": "assistant", "content": battle[f"response_{side}"]}]
    return row


def _write(kind: str, folder: Path, battles: list[dict]) -> Path:
    """The battles in one of the formats every command must read."""
    if kind == "plain CSV":
        path = folder / "battles.csv"
        pd.DataFrame([{k: b[k] for k in ("model_a", "model_b", "winner", "judge")} for b in battles]).to_csv(
            path, index=False)
        return path
    if kind == "folder of plain CSVs":
        half = len(battles) // 2
        (folder / "votes").mkdir()
        for name, part in (("one.csv", battles[:half]), ("two.csv", battles[half:])):
            pd.DataFrame([{k: b[k] for k in ("model_a", "model_b", "winner")} for b in part]).to_csv(
                folder / "votes" / name, index=False)
        return folder / "votes"
    if kind in ("FastChat battles", "FastChat battles without texts"):
        path = folder / "battles.json"
        path.write_text(json.dumps([_fastchat(b, texts=kind == "FastChat battles") for b in battles]))
        return path
    if kind == "our FastChat export":
        path = folder / "export.json"
        records = [_record(b, anony=True, identity_leak=False, mode="open", voter=f"a-{b['k'] % 7}")
                   for b in battles]
        path.write_text(json.dumps([to_fastchat(r) for r in records]))
        return path
    raise ValueError(kind)


FORMATS = ["plain CSV", "folder of plain CSVs", "FastChat battles", "FastChat battles without texts",
           "our FastChat export"]


@pytest.mark.parametrize("kind", FORMATS)
def test_every_format_reads_in_every_command_with_the_same_ratings(tmp_path, kind):
    path = _write(kind, tmp_path, _battles(300))
    results = {name: command(path, tmp_path / name) for name, command in COMMANDS.items()}
    first = next(iter(results.values()))
    assert set(first) == set(STRENGTH)
    assert first["strong"] > first["middle"] > first["weak"]
    for name, ratings in results.items():
        assert ratings == pytest.approx(first, abs=1e-6), name


def test_the_same_votes_count_in_every_command(tmp_path):
    """Named-model, flagged, leaked and prompt-set votes all crown the weak model; plain votes
    follow the planted strengths. Every command rates people on the plain ones only."""
    plain = _battles(300)
    records = [_record(b, anony=True, mode="open", voter=f"a-{b['k'] % 7}") for b in plain]
    rigged = _battles(200, seed=1)
    for k, b in enumerate(rigged):
        b["k"] += 1000
        b["winner"] = "model_a" if b["model_a"] == "weak" else "model_b" if b["model_b"] == "weak" else "tie"
        meta = [{"anony": False}, {"flags": ["burst"]}, {"identity_leak": True},
                {"mode": "prompt_set", "voter": "u-1"}][k % 4]
        records.append(_record(b, **{"anony": True, "mode": "open", "voter": "a-9", **meta}))
    path = tmp_path / "votes.jsonl"
    write_records(path, records)
    results = {name: command(path, tmp_path / name) for name, command in COMMANDS.items()}
    write_records(tmp_path / "plain.jsonl", records[:len(plain)])
    want = _ratings_cli(tmp_path / "plain.jsonl", tmp_path)
    for name, ratings in results.items():
        assert ratings == pytest.approx(want, abs=1e-6), name
        assert ratings["strong"] > ratings["weak"]


def test_the_report_says_which_votes_it_left_out_and_keeps_them_on_request(tmp_path):
    records = [_record(b) for b in _battles(60)]
    records += [_record(b, anony=False) for b in _battles(20, seed=2)]
    path = tmp_path / "votes.jsonl"
    write_records(path, records)
    proc = _run("-m", "analysis.report", "--votes", str(path), "--out", str(tmp_path / "a"), "--quiet",
                "--no-panel", "--bootstrap", "10", "--rating-bootstrap", "10")
    assert proc.returncode == 0, proc.stderr
    assert "left out 20 of 80 votes" in proc.stderr
    assert json.loads((tmp_path / "a" / "report.json").read_text())["n_records"] == 60
    proc = _run("-m", "analysis.report", "--votes", str(path), "--out", str(tmp_path / "b"), "--quiet",
                "--no-panel", "--bootstrap", "10", "--rating-bootstrap", "10", "--all-votes")
    assert proc.returncode == 0, proc.stderr
    assert "every vote analysed (--all-votes), 20 of them" in proc.stderr
    assert json.loads((tmp_path / "b" / "report.json").read_text())["n_records"] == 80


def test_an_unknown_format_names_the_formats_in_the_one_line_both_commands_print(tmp_path):
    path = tmp_path / "mystery.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    for args in (("-m", "analysis.ratings", "--votes", str(path)),
                 ("-m", "analysis.report", "--votes", str(path), "--out", str(tmp_path / "out"))):
        proc = _run(*args)
        assert proc.returncode == 2
        assert len(proc.stderr.splitlines()) == 1
        for name in ("records", "alpaca-eval", "chatbot-arena", "battles", "pandalm"):
            assert name in proc.stderr


_FLAG = st.sampled_from([None, True, False])
_VOTE = st.fixed_dictionaries({
    "judge": st.sampled_from(["human", "human:v1", "judge-x"]),
    "pair": st.sampled_from(["p1", "p2"]),
    "anony": _FLAG, "anony_own": st.booleans(),
    "identity_leak": _FLAG, "leak_own": st.booleans(),
    "flags": st.sampled_from([None, [], ["burst"]]), "flags_own": st.booleans(),
    "mode": st.sampled_from([None, "open", "prompt_set"]),
    "voter": st.sampled_from([None, "u-1", "u-2", "a-1"]),
})


def _vote_record(k: int, vote: dict) -> Record:
    meta, own = {}, {}
    for name, where in (("anony", "anony_own"), ("identity_leak", "leak_own"), ("flags", "flags_own")):
        if vote[name] is not None:
            (own if vote[where] else meta)[name] = vote[name]
    for name in ("mode", "voter"):
        if vote[name] is not None:
            meta[name] = vote[name]
    return Record(pair_id=vote["pair"], prompt="q", model_a="x", model_b="y", response_a=f"a{k}", response_b="b",
                  winner="model_a", judge=vote["judge"], meta=meta, extra=own)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(votes=st.lists(_VOTE, min_size=1, max_size=12), prompt_set_rated=st.booleans())
def test_the_vectorised_rule_is_the_record_by_record_rule(votes, prompt_set_rated):
    records = [_vote_record(k, v) for k, v in enumerate(votes)]
    want = ratable(records, prompt_set_rated=prompt_set_rated)
    built = ratable_mask(record_table.from_records(records), prompt_set_rated=prompt_set_rated)
    assert built.tolist() == want
    with tempfile.TemporaryDirectory() as folder:  # and as read back from a file, column-wise
        path = Path(folder) / "votes.jsonl"
        write_records(path, records)
        table, _ = read_table([path])
    assert ratable_mask(table, prompt_set_rated=prompt_set_rated).tolist() == want


def test_a_report_of_votes_none_of_which_count_says_why(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_records(path, [_record(b, anony=False) for b in _battles(10)])
    proc = _run("-m", "analysis.report", "--votes", str(path), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "left out 10 of 10 votes the leaderboard does not count" in proc.stderr
