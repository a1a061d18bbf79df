"""AlpacaEval ``annotations.json`` rows -> records (Dubois et al. 2023/2024, Apache-2.0).

A row: ``instruction, output_1, output_2, generator_1, generator_2, annotator,
preference, price_per_example, time_per_example`` (+ ``dataset``, ``raw_completion``...).
``output_1`` is shown to the annotator first, so it becomes ``model_a``; in AlpacaEval's
own leaderboards it is the baseline. ``preference`` is in [1, 2] (2 = ``output_2`` is
better; the weighted annotators give a probability-like value such as 1.93); 0 and 1.5
are draws. A null preference is AlpacaEval's "no answer from the annotator": kept as a
record without a verdict (``parse_error``), never as a tie.
"""

from __future__ import annotations

import hashlib
import math

from core.records import Record, make_pair_id

from .families import family

NAME = "alpaca-eval"
SUMMARY = "AlpacaEval annotations.json (instruction, output_1, output_2, generator_1/2, annotator, preference)"
KEYS = frozenset({"instruction", "output_1", "output_2", "preference"})
# Kept on the record as meta: the cost and time AlpacaEval logs per annotation.
_META = ("price_per_example", "time_per_example", "dataset")


def matches(row: dict) -> bool:
    return KEYS <= row.keys()


def preference_to_prob_a(preference) -> float | None:
    """P(output_1 is better) from an AlpacaEval preference; None when there is none.

    AlpacaEval's rule: 0 (its old draw code) and 1.5 are draws; otherwise 2 - preference.
    """
    if preference is None or (isinstance(preference, float) and math.isnan(preference)):
        return None
    value = float(preference)
    if value == 0.0:
        return 0.5
    if not 1.0 <= value <= 2.0:
        raise ValueError(f"preference must be in [1, 2], 0 or null, got {preference!r}")
    return 2.0 - value


def convert(row: dict) -> list[Record]:
    prob_a = preference_to_prob_a(row["preference"])
    if prob_a is None:
        winner, parse_error = None, "AlpacaEval preference is null (the annotator gave no verdict)"
    else:
        winner = "model_a" if prob_a > 0.5 else "model_b" if prob_a < 0.5 else "tie"
        parse_error = None
    model_a, model_b = str(row.get("generator_1", "output_1")), str(row.get("generator_2", "output_2"))
    judge = str(row.get("annotator") or "alpaca-eval-annotator")
    prompt, response_a, response_b = row["instruction"], row["output_1"], row["output_2"]
    return [
        Record(
            pair_id=make_pair_id(prompt, response_a, response_b),
            prompt=prompt,
            model_a=model_a,
            model_b=model_b,
            response_a=response_a,
            response_b=response_b,
            winner=winner,
            judge=judge,
            family_a=family(model_a),
            family_b=family(model_b),
            judge_family=family(judge),
            # AlpacaEval's instructions have no id; the text identifies one across models' files.
            prompt_id=hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16],
            prob_a=prob_a,
            parse_error=parse_error,
            raw_output=None if row.get("raw_completion") is None else str(row["raw_completion"]),
            meta={"preference": row["preference"], **{k: row[k] for k in _META if row.get(k) is not None}},
        )
    ]
