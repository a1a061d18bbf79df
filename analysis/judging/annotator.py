"""An annotator card per judge, as AlpacaEval's ``analyze`` reports one per annotator.

AlpacaEval (Dubois et al. 2023, "AlpacaFarm", sec. 4 and ``alpaca_eval.analyze``) puts
beside each annotator's human agreement its price and time per 1,000 annotations and the
probability that it prefers the longer output and the output with more lists. Here:

* ``prefers_structure``: among decisive verdicts on pairs whose two responses differ in
  markdown structure (list items + headers + bold spans, counted as style control counts
  them, outside code blocks), the share won by the more structured response, with a
  Wilson interval;
* ``parse_failure_rate``: judge outputs without a verdict over all outputs (records +
  failures), with a Wilson interval;
* ``seconds_per_1000``: wall-clock seconds per 1,000 judgments, summed over the
  ``judges.run`` runs whose ``OUT.manifest.json`` lies beside the records (a resumed run
  counts every attempt); null when there is no manifest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.stats import wilson_interval
from pairlab.files import read_text

__all__ = ["AnnotatorCard", "RunTiming", "annotator_card", "read_run_timings"]

STRUCTURE = ("headers", "lists", "bold")


@dataclass(frozen=True)
class RunTiming:
    seconds: float
    judgments: int
    manifests: tuple[str, ...]


@dataclass(frozen=True)
class AnnotatorCard:
    prefers_structure: float | None
    prefers_structure_ci: tuple[float, float] | None
    n_structure: int  # decisive verdicts on pairs that differ in structure
    parse_failure_rate: float | None
    parse_failure_ci: tuple[float, float] | None
    n_outputs: int  # records + outputs without a verdict
    seconds_per_1000: float | None
    note: str | None = None


def _structure(frame: pd.DataFrame, side: str) -> np.ndarray:
    return sum(frame[f"style_{name}_{side}"].to_numpy(dtype=float) for name in STRUCTURE)


def annotator_card(frame: pd.DataFrame, n_parse_errors: int, timing: RunTiming | None) -> AnnotatorCard:
    """The card of one judge from its battle frame (with the style columns of
    :func:`analysis.ratings.add_style_features`), its count of outputs without a verdict
    and its run timing."""
    a, b = _structure(frame, "a"), _structure(frame, "b")
    winner = frame["winner"].to_numpy()
    use = (a != b) & np.isin(winner, ["model_a", "model_b"])
    won = int(((winner == "model_a") == (a > b))[use].sum())
    n = int(use.sum())
    outputs = len(frame) + n_parse_errors
    notes = []
    if not n:
        notes.append("no decisive verdict on a pair whose responses differ in markdown structure")
    if timing is None:
        notes.append("no judges.run manifest beside the records: no timing")
    seconds = None
    if timing is not None and timing.judgments:
        seconds = 1000.0 * timing.seconds / timing.judgments
    return AnnotatorCard(
        prefers_structure=won / n if n else None, prefers_structure_ci=wilson_interval(won, n), n_structure=n,
        parse_failure_rate=n_parse_errors / outputs if outputs else None,
        parse_failure_ci=wilson_interval(n_parse_errors, outputs), n_outputs=outputs,
        seconds_per_1000=seconds, note="; ".join(notes) or None,
    )


def _manifests(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.manifest.json"))
    beside = path.with_name(path.stem + ".manifest.json")
    return [beside] if beside.is_file() else []


def read_run_timings(paths: Iterable[str | os.PathLike]) -> tuple[dict[str, RunTiming], list[str]]:
    """Judge id -> seconds and judgments of the ``judges.run`` manifests beside ``paths``,
    and a note for each manifest that could not be read.

    Other manifests (``judges.generate`` writes one beside its pairs) are not timings of a
    judge and are passed over; a run that never finished (no ``wall_time_s``) adds nothing.
    """
    out: dict[str, RunTiming] = {}
    notes: list[str] = []
    for path in paths:
        for manifest in _manifests(Path(path)):
            try:
                body = json.loads(read_text(manifest))  # the one reader rule: a FIFO or device is passed over
            except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON, the rule's refusals
                notes.append(f"{manifest}: manifest not read, no timing from it ({exc})")
                continue
            # The name the run's records carry ("rater": a likelihood run's is JUDGE:likelihood).
            judge = (body.get("rater") or (body.get("judge") or {}).get("id")) if isinstance(body, dict) else None
            if not isinstance(judge, str):
                continue
            seconds, judgments = 0.0, 0
            for run in [*body.get("previous_runs", []), body]:
                counts = run.get("counts") or {}
                if run.get("wall_time_s") is None:
                    continue
                seconds += float(run["wall_time_s"])
                judgments += int(counts.get("records_written", 0)) + int(counts.get("parse_failures", 0))
            if judgments:
                old = out.get(judge)
                out[judge] = RunTiming(seconds + (old.seconds if old else 0.0), judgments + (old.judgments if old else 0),
                                       (*(old.manifests if old else ()), str(manifest)))
    return out, notes
