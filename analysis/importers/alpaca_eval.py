"""AlpacaEval ``annotations.json`` rows -> records (Dubois et al. 2023/2024, Apache-2.0).

A row: ``instruction, output_1, output_2, generator_1, generator_2, annotator,
preference, price_per_example, time_per_example`` (+ ``dataset``, ``raw_completion``...).
In AlpacaEval's leaderboards ``generator_1`` is the baseline. ``preference`` is in [1, 2]
(2 = ``output_2`` is better; the weighted annotators give a probability-like value such as
1.93); 0 and 1.5 are draws. A null preference is AlpacaEval's "no answer from the
annotator": kept as a record without a verdict (``parse_error``), never as a tie.

Which output the annotator saw first: AlpacaEval shows the two outputs in a random order
(identifier ``m`` for the first shown, ``M`` for the second) and maps the answer back to
``output_1``/``output_2`` before saving, so the file's order is not the order shown. The
judge's own answer tells them apart: the completion's probability of ``M`` (weighted
annotators) or its final ``m``/``M`` equals the preference for ``output_2`` exactly when
``output_2`` was shown second. The response shown first becomes ``model_a`` (as for every
record); ``meta.shown_order`` says ``"as in file"``, ``"swapped"`` or ``"unknown"`` (no
completion to read; the file's order is kept then, and position-bias estimates on such
records mean nothing).
"""

from __future__ import annotations

import ast
import hashlib
import math

from pairlab.records import Record

from .comparison import comparison

NAME = "alpaca-eval"
SUMMARY = "AlpacaEval annotations.json (instruction, output_1, output_2, generator_1/2, annotator, preference)"
KEYS = frozenset({"instruction", "output_1", "output_2", "preference"})
# Kept on the record as meta: the cost and time AlpacaEval logs per annotation.
_META = ("price_per_example", "time_per_example", "dataset")
_MATCH = 1e-4  # how close the completion's P(M) must be to the stored preference


def matches(row: dict) -> bool:
    return KEYS <= row.keys()


def prob_output_2(preference) -> float | None:
    """P(``output_2`` is better) from an AlpacaEval preference; None when there is none.

    AlpacaEval's rule: 0 (its old draw code) and 1.5 are draws; otherwise preference - 1.
    """
    if preference is None or (isinstance(preference, float) and math.isnan(preference)):
        return None
    value = float(preference)
    if value == 0.0:
        return 0.5
    if not 1.0 <= value <= 2.0:
        raise ValueError(f"preference must be in [1, 2], 0 or null, got {preference!r}")
    return value - 1.0


# A completion kept as a Python repr is read back only when it looks like one and is no
# longer than this: ast.literal_eval on 100k characters of brackets overflows the parser.
_MAX_REPR_CHARS = 200_000


def _completion(raw) -> dict | None:
    if isinstance(raw, str):
        if not raw.lstrip().startswith("{") or len(raw) > _MAX_REPR_CHARS:
            return {"text": raw}
        try:
            raw = ast.literal_eval(raw)  # some files keep the completion as a Python repr
        except (ValueError, SyntaxError, RecursionError, MemoryError):  # MemoryError: the parser's stack
            return {"text": raw}
    return raw if isinstance(raw, dict) else None


def _second_shown_better(completion: dict) -> float | None:
    """The judge's P(the second-shown output is better) from its completion, if readable."""
    try:
        top = completion["logprobs"]["content"][0]["top_logprobs"]
        probs = {t["token"]: math.exp(t["logprob"]) for t in top}
        first, second = probs.get("m", 0.0), probs.get("M", 0.0)
        if first + second > 0:
            return second / (first + second)
    except (KeyError, IndexError, TypeError):
        pass
    text = str(completion.get("text") or "").strip()
    return {"m": 0.0, "M": 1.0}.get(text[-1:]) if text else None


def shown_order(row: dict, p2: float | None) -> str:
    """``"as in file"``, ``"swapped"`` (output_2 shown first) or ``"unknown"``."""
    completion = _completion(row.get("raw_completion"))
    second = None if completion is None or p2 is None else _second_shown_better(completion)
    if second is None or p2 == 0.5:
        return "unknown"
    if abs(second - p2) < _MATCH:
        return "as in file"
    if abs(second - (1 - p2)) < _MATCH:
        return "swapped"
    return "unknown"


def instruction_id(instruction: str) -> str:
    """AlpacaEval's instructions have no id; the text identifies one across models' files."""
    return hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:16]


def convert(row: dict) -> list[Record]:
    p2 = prob_output_2(row["preference"])
    order = shown_order(row, p2)
    sides = [(str(row.get("generator_1", "output_1")), row["output_1"]),
             (str(row.get("generator_2", "output_2")), row["output_2"])]
    prob_a = None if p2 is None else 1.0 - p2
    if order == "swapped":
        sides.reverse()
        prob_a = p2
    (model_a, response_a), (model_b, response_b) = sides
    if prob_a is None:
        winner, parse_error = None, "AlpacaEval preference is null (the annotator gave no verdict)"
    else:
        winner = "model_a" if prob_a > 0.5 else "model_b" if prob_a < 0.5 else "tie"
        parse_error = None
    judge = str(row.get("annotator") or "alpaca-eval-annotator")
    prompt = row["instruction"]
    completion = _completion(row.get("raw_completion"))
    return [
        comparison(
            prompt, model_a, model_b, response_a, response_b, winner, judge,
            prompt_id=instruction_id(prompt),
            prob_a=prob_a,
            parse_error=parse_error,
            raw_output=None if completion is None else str(completion.get("text") or ""),
            meta={"preference": row["preference"], "shown_order": order, "baseline": row.get("generator_1"),
                  **{k: row[k] for k in _META if row.get(k) is not None}},
        )
    ]
