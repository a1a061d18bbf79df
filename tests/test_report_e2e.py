"""End to end on the embedded models: generate pairs, judge them in both orders, report.

A small slice (2 MT-Bench questions, 16 new tokens) keeps it to about a minute on CPU;
the 20-question run is the same commands with ``--limit 20`` (see the issue 6 notes).
Without human votes each judge's self-family bias and agreement are measured against
the other judge, and the report must say so.

Each command runs in this process (tests/support.py's ``run_module``): a fresh interpreter for
each of the five cost a torch import apiece, and the commands' entry points run as processes
in their own tests (tests/test_judges_real.py, tests/test_report_cli.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import run_module

from pairlab.records import LIKELIHOOD, ORDER_AVERAGED

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ("smollm2-135m-instruct", "gemma3-270m")
FAMILIES = {"smollm2-135m-instruct": "smollm", "gemma3-270m": "gemma"}
N_QUESTIONS = 2


def python(*args: str) -> subprocess.CompletedProcess:
    """``python -m *args``, in this process; its exit code must be 0."""
    proc = run_module(*args, cwd=ROOT)
    assert proc.returncode == 0, f"{' '.join(args[:1])} failed:\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.model  # the embedded models, loaded by the commands
def test_embedded_models_end_to_end(tmp_path, shared_data):
    pairs = tmp_path / "pairs.jsonl"
    python(
        "judges.generate", "--prompts", str(shared_data / "mt_bench" / "question.jsonl"),
        "--models", ",".join(JUDGES), "--out", str(pairs), "--limit", str(N_QUESTIONS),
        "--max-new-tokens", "16", "--quiet",
    )
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    assert len(rows) == N_QUESTIONS
    for judge in JUDGES:
        out = tmp_path / f"judge-{judge}.jsonl"
        python("judges.run", "--pairs", str(pairs), "--judge", judge, "--out", str(out), "--quiet")
    scored = JUDGES[1] + LIKELIHOOD  # README's quick start: one judge also scores each answer alone
    python("judges.run", "--pairs", str(pairs), "--judge", JUDGES[1], "--mode", "likelihood",
           "--out", str(tmp_path / "scored.jsonl"), "--quiet")
    # The whole folder: the pairs file and the manifests are recognised and left out.
    report_dir = tmp_path / "report"
    proc = python("analysis.report", "--votes", str(tmp_path), "--out", str(report_dir), "--quiet", "--rating-bootstrap", "20")
    assert "pairs.jsonl: file: skipped" in proc.stderr

    data = json.loads((report_dir / "report.json").read_text())
    # No humans in this run; the panel pools both judges; each judge's order-averaged verdicts
    # (OUT.pairs.jsonl) are rated beside it and left out of the panel.
    averaged = {judge + ORDER_AVERAGED for judge in JUDGES}
    assert set(data["judges"]) == set(JUDGES) | averaged | {scored, "panel"}
    assert data["judges"]["panel"]["panel_members"] == sorted(JUDGES)  # a judge's variants are that judge again
    for variant in (*averaged, scored):  # no display order swayed them: no position numbers
        assert data["judges"][variant]["position"]["first_rate"] is None, variant
    assert data["judges"][scored]["n_records"] == 2 * N_QUESTIONS
    timing = json.loads((tmp_path / "scored.manifest.json").read_text())  # its own run's time, not the judge's
    assert data["judges"][scored]["annotator"]["seconds_per_1000"] == pytest.approx(
        1000 * timing["wall_time_s"] / timing["counts"]["records_written"])
    assert data["judges"]["panel"]["agreement"]["vs"] is None  # no reference outside the panel
    for judge in JUDGES:
        other = next(j for j in JUDGES if j != judge)
        entry = data["judges"][judge]
        assert entry["family"] == FAMILIES[judge]
        assert entry["n_records"] + entry["n_parse_errors"] == 2 * N_QUESTIONS  # both orders
        assert entry["position"]["n_swapped_pairs"] == N_QUESTIONS - entry["n_parse_errors"]
        assert entry["self_family"]["reference"] == other
        assert entry["agreement"]["vs"] == other
        # logprob judging stores prob_a, so judge and reference verdicts are position-calibrated.
        assert "prob_a" in entry["self_family"]["verdicts"]
        details = entry["self_family"]["details"]
        assert entry["self_family"]["delta"] is not None or details["note"]
        # Timing from the judges.run manifest beside the records (AlpacaEval's seconds per 1,000).
        manifest = json.loads((tmp_path / f"judge-{judge}.manifest.json").read_text())
        judged = manifest["counts"]["records_written"] + manifest["counts"]["parse_failures"]
        assert entry["annotator"]["seconds_per_1000"] == pytest.approx(1000 * manifest["wall_time_s"] / judged)
        # Two judges of two families, but each family's only pairs are against the other: not identified.
        controlled = entry["self_family"]["controlled"]
        assert controlled["coef"] is None and controlled["note"]
    md = (report_dir / "report.md").read_text()
    assert "no human votes on these pairs: each judge is compared with the other judge" in md
    html = (report_dir / "report.html").read_text()
    assert "each judge is compared with the other judge" in html
