"""Battles without texts: FastChat's clean battles, or any table of ``model_a, model_b, winner``.

FastChat's rating notebooks read battles as ``model_a, model_b, winner`` (+ ``judge, turn,
anony, language, tstamp``...); a plain CSV of battles has those three columns (+ ``judge``,
``pair_id``, ``prompt`` or any other). No answers means no pair to name: each battle is its
own pair (``pair_id`` is the file's name and the row's place, unless the row has one), the
prompt is the row's (empty without one), the responses are empty, and a
battle without ``judge`` is a person's vote (``human``), and so is one with FastChat's
``anony`` (a voter id becomes ``human:<id>``, as :mod:`.arena` reads it). Ratings need
nothing more; the report's length and position analyses find nothing to measure in them.
"""

from __future__ import annotations

from pairlab.records import HUMAN, Record

from . import arena, own

NAME = "battles"
SUMMARY = "battles without texts (model_a, model_b, winner [+ judge, anony, tstamp]): FastChat's clean battles, a plain CSV"
# Rows with answers belong to the formats that carry them; a prompt alone is a battle's context.
_TEXTS = ("response_a", "conversation_a", "output_1")


def matches(row: dict) -> bool:
    return {"model_a", "model_b", "winner"} <= row.keys() and not any(name in row for name in _TEXTS)


def convert(row: dict, where: str) -> list[Record]:
    """The record of one battle; ``where`` (file and row) names its pair when the row does not."""
    judge = str(row.get("judge") or HUMAN)
    if "anony" in row and not judge.startswith(HUMAN):
        judge = f"{HUMAN}:{judge}"
    fields = {k: v for k, v in row.items() if k not in ("model_a", "model_b", "winner", "judge", "pair_id")}
    for name in ("anony", "identity_leak"):  # a CSV's cells are text
        if isinstance(fields.get(name), str):
            fields[name] = fields[name].strip().lower() in ("true", "1", "yes")
    data = {**fields, "pair_id": str(row.get("pair_id") or where), "prompt": str(row.get("prompt") or ""),
            "model_a": str(row["model_a"]),
            "model_b": str(row["model_b"]), "response_a": "", "response_b": "", "judge": judge,
            "winner": arena.winner(row)}
    return own.convert(data)
