"""Prompt files (arena draws, judges generate pairs): MT-Bench questions, or JSONL/CSV with a ``prompt`` column.

MT-Bench rows (``question_id``, ``category``, ``turns``, optional ``reference``) give
their first turn and first reference answer; plain rows give ``prompt`` and optionally
``prompt_id`` (or ``id``), ``category`` and ``reference``. A bad row raises
:class:`pairlab.records.RecordError` naming the file and line, or is collected when
skipping bad rows.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

from pairlab.records import RecordError

__all__ = ["PromptItem", "load_prompts"]


@dataclass(frozen=True)
class PromptItem:
    prompt: str
    prompt_id: str
    category: str | None = None
    reference: str | None = None


def _optional_str(row: dict, name: str) -> str | None:
    value = row.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, (str, int)):
        raise RecordError(None, None, f"field {name!r} must be a string, got {type(value).__name__}")
    return str(value)


def _item(row: object, line: int) -> PromptItem:
    if not isinstance(row, dict):
        raise RecordError(None, None, f"expected a JSON object, got {type(row).__name__}")
    if "turns" in row:
        turns = row["turns"]
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str) or not turns[0].strip():
            raise RecordError(None, None, "'turns' must be a list whose first item is a non-empty string")
        reference = row.get("reference")
        if isinstance(reference, list):
            reference = reference[0] if reference else None
        pid = _optional_str(row, "question_id")
        return PromptItem(turns[0], pid or str(line), _optional_str(row, "category"),
                          _optional_str({"reference": reference}, "reference"))
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise RecordError(None, None, "needs a non-empty string 'prompt' (or MT-Bench 'turns')")
    pid = _optional_str(row, "prompt_id") or _optional_str(row, "id")
    return PromptItem(prompt, pid or str(line), _optional_str(row, "category"), _optional_str(row, "reference"))


def _rows(path: Path):
    """(line number, parsed row) for each data row; JSON errors become RecordErrors."""
    from pairlab.files import check_regular, text_lines  # the one reader rule

    check_regular(path)
    if path.suffix.lower() == ".csv":
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "prompt" not in reader.fieldnames:
                raise RecordError(path, 1, f"a CSV prompt file needs a 'prompt' column, got {reader.fieldnames}")
            for row in reader:
                yield reader.line_num, row
        return
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            yield lineno, RecordError(path, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")


def load_prompts(path: str | os.PathLike, *, skip_bad: bool = False,
                 errors: list[RecordError] | None = None) -> list[PromptItem]:
    path = Path(path)
    if skip_bad and errors is None:
        raise ValueError("skip_bad=True needs an `errors` list to collect the bad rows in")
    items = []
    for lineno, row in _rows(path):
        try:
            if isinstance(row, RecordError):
                raise row
            items.append(_item(row, lineno))
        except RecordError as exc:
            located = exc if exc.line is not None else RecordError(path, lineno, exc.message)
            if not skip_bad:
                raise located from None
            errors.append(located)
    return items
