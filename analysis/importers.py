"""Public comparison formats -> :class:`core.records.Record` lists.

Formats recognised by :func:`load_records` (files or directories):

* the PandaLM test set folder (``testset-v1.json`` with three annotators, plus the
  ``gpt-3.5-turbo-testset-v1.json`` and ``pandalm-7b-testset-v1.json`` judgments joined by
  ``idx``; Wang et al. 2023, "PandaLM", Apache-2.0);
* FastChat / Chatbot Arena battle JSON or JSONL (``model_a, model_b, winner, judge,
  conversation_a, conversation_b, turn, anony, tstamp``) and MT-Bench human-judgment rows
  (the same shape; ``judge`` is a voter id such as ``expert_3``, or ``["gpt-4", "pair-v2"]``
  for GPT-4 pair judgments);
* records JSONL (the project's own format) and a plain CSV with the required columns.

Nothing is dropped silently: an item that cannot become a record (a PandaLM response
that is a boolean, not text) is skipped and reported as an :class:`ImportIssue`, and
:func:`load_records` also raises a Python warning naming it. A judge verdict that cannot
be parsed (PandaLM's GPT-3.5 file has ``"garbage"``) is kept as a record with
``parse_error`` and ``raw_output`` set; analyses leave such records out and count them.
"""

from __future__ import annotations

import csv
import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.models import family_of
from core.records import HUMAN, Record, RecordError, make_pair_id

__all__ = ["ImportIssue", "ImportResult", "import_paths", "load_records"]

PANDALM_TESTSET = "testset-v1.json"
# PandaLM judge files -> (judge id, verdict field, raw-text field).
PANDALM_JUDGES = {
    "gpt-3.5-turbo-testset-v1.json": ("gpt-3.5-turbo", "gpt_result", "gpt_reason"),
    "pandalm-7b-testset-v1.json": ("pandalm-7b", "pandalm_result", "pandalm_reason"),
}
PANDALM_ANNOTATORS = ("annotator1", "annotator2", "annotator3")
# PandaLM codes: 0 = tie, 1 = response1 (shown first), 2 = response2.
_PANDALM_VERDICT = {"0": "tie", "1": "model_a", "2": "model_b", "tie": "tie"}
_FASTCHAT_KEYS = {"model_a", "model_b", "winner", "conversation_a", "conversation_b"}
_NUMERIC = {"turn": int, "tstamp": float, "prob_a": float, "strength": int}


@dataclass(frozen=True)
class ImportIssue:
    """An item that was skipped (or kept with a parse error), located by file and item.

    ``judge`` is set for a judge output that holds no verdict (a ``judges.run`` failure
    line): it is no record, but the report counts it among that judge's parse failures.
    """

    path: str
    item: str
    message: str
    judge: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.item}: {self.message}"


@dataclass(frozen=True)
class ImportResult:
    records: tuple[Record, ...]
    issues: tuple[ImportIssue, ...]


def load_records(path: str | os.PathLike) -> list[Record]:
    """All records in a file or directory (format auto-detected).

    Skipped items are reported with :func:`warnings.warn`; use :func:`import_paths` to get
    them as data.
    """
    result = import_paths([path])
    for issue in result.issues:
        warnings.warn(str(issue), stacklevel=2)
    return list(result.records)


def import_paths(paths: Iterable[str | os.PathLike]) -> ImportResult:
    """Records from several files and directories, with every skipped item reported."""
    records: list[Record] = []
    issues: list[ImportIssue] = []
    for path in paths:
        recs, iss = _import_one(Path(path))
        records.extend(recs)
        issues.extend(iss)
    return ImportResult(tuple(records), tuple(issues))


def _import_one(path: Path) -> tuple[list[Record], list[ImportIssue]]:
    if path.is_dir():
        if (path / PANDALM_TESTSET).exists():
            return _pandalm(path, humans=True, judge_files=tuple(PANDALM_JUDGES))
        records, issues = [], []
        for child in sorted(path.iterdir()):
            # judges.run writes OUT.manifest.json beside its records: metadata, not votes.
            if not child.is_file() or child.suffix not in (".jsonl", ".json", ".csv") or child.name.endswith(
                ".manifest.json"
            ):
                continue
            if _is_pairs_file(child):
                issues.append(ImportIssue(str(child), "file", "skipped: pairs to be judged (no winner), not votes"))
                continue
            recs, iss = _import_one(child)
            records.extend(recs)
            issues.extend(iss)
        return records, issues
    if not path.exists():
        raise RecordError(path, None, "no such file or directory")
    if path.name == PANDALM_TESTSET:
        return _pandalm(path.parent, humans=True, judge_files=())
    if path.name in PANDALM_JUDGES:
        return _pandalm(path.parent, humans=False, judge_files=(path.name,))
    if path.suffix == ".csv":
        return _csv(path), []
    if path.suffix == ".jsonl":
        return _json_items(path, _jsonl_items(path))
    if path.suffix == ".json":
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError:
            # Hugging Face `to_json` writes JSON Lines under a .json name.
            return _json_items(path, _jsonl_items(path))
        if isinstance(data, dict):
            data = data.get("data", data.get("records"))
        if not isinstance(data, list):
            raise RecordError(path, None, "expected a JSON list of battles or records")
        return _json_items(path, ((f"item {i}", item) for i, item in enumerate(data)))
    raise RecordError(path, None, f"unknown file type {path.suffix!r}: expected .json, .jsonl or .csv")


def _jsonl_items(path: Path):
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield f"line {lineno}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(path, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None


def _locate(path: Path, where: str, exc: Exception) -> RecordError:
    message = exc.message if isinstance(exc, RecordError) else str(exc)
    line = int(where.split()[1]) if where.startswith("line ") else None
    return RecordError(path, line, message if line else f"{where}: {message}")


def _is_pairs_file(path: Path) -> bool:
    """A PAIRS.jsonl (judges' input) rather than votes: its first row has responses but no winner."""
    if path.suffix != ".jsonl":
        return False
    with open(path, encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        row = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and "response_a" in row and "winner" not in row and "parse_error" not in row


def _json_items(path: Path, items) -> tuple[list[Record], list[ImportIssue]]:
    records, issues = [], []
    for where, item in items:
        try:
            if not isinstance(item, dict):
                raise RecordError(None, None, f"expected an object, got {type(item).__name__}")
            if "winner" not in item and item.get("parse_error") and isinstance(item.get("judge"), str):
                # judges.run's OUT.failures.jsonl: a judgment with no verdict, kept out of the votes.
                issues.append(ImportIssue(str(path), where, f"no verdict: {item['parse_error']}", judge=item["judge"]))
            elif "pair_id" in item and "response_a" in item:
                records.append(Record.from_dict(item))
            elif _FASTCHAT_KEYS <= item.keys():
                records.append(_fastchat(item))
            else:
                missing = sorted(_FASTCHAT_KEYS - item.keys())
                raise RecordError(
                    None, None, f"neither a record nor a FastChat battle (missing {', '.join(missing)})"
                )
        except (RecordError, TypeError, KeyError, ValueError) as exc:
            raise _locate(path, where, exc) from None
    return records, issues


def _turn_text(conversation: list, turn: int | None) -> tuple[str, str]:
    """(user turn, assistant reply) for a 1-based turn (the last one if None)."""
    users = [i for i, m in enumerate(conversation) if m.get("role") == "user"]
    if not users:
        raise RecordError(None, None, "conversation has no user turn")
    index = users[-1] if turn is None else users[turn - 1]
    reply = next(
        (m["content"] for m in conversation[index + 1 :] if m.get("role") == "assistant"), None
    )
    if reply is None:
        raise RecordError(None, None, f"conversation has no assistant reply to turn {turn}")
    return conversation[index]["content"], reply


def _fastchat(item: dict) -> Record:
    """A Chatbot Arena battle or MT-Bench human-judgment row (both FastChat formats)."""
    turn = item.get("turn")
    prompt, response_a = _turn_text(item["conversation_a"], turn)
    _, response_b = _turn_text(item["conversation_b"], turn)
    raw_judge = item.get("judge", HUMAN)
    if isinstance(raw_judge, list):  # MT-Bench LLM judgments: ["gpt-4", "pair-v2"]
        judge, template = str(raw_judge[0]), str(raw_judge[1]) if len(raw_judge) > 1 else None
    else:
        judge, template = (raw_judge if raw_judge.startswith(HUMAN) else f"{HUMAN}:{raw_judge}"), None
    known = {"model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn", "tstamp"}
    meta = {k: v for k, v in item.items() if k not in known}
    return Record(
        pair_id=make_pair_id(prompt, response_a, response_b),
        prompt=prompt,
        model_a=item["model_a"],
        model_b=item["model_b"],
        response_a=response_a,
        response_b=response_b,
        winner=item["winner"],
        judge=judge,
        family_a=family_of(item["model_a"]),
        family_b=family_of(item["model_b"]),
        judge_family=None if judge.startswith(HUMAN) else family_of(judge),
        prompt_id=None if item.get("question_id") is None else str(item["question_id"]),
        turn=turn,
        tstamp=item.get("tstamp"),
        template=template,
        conversation={"a": item["conversation_a"], "b": item["conversation_b"]},
        meta=meta,
    )


def _csv(path: Path) -> list[Record]:
    records = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        for row in reader:
            try:
                data = {k: v for k, v in row.items() if k is not None and v not in ("", None)}
                for name, kind in _NUMERIC.items():
                    if name in data:
                        data[name] = kind(data[name])
                records.append(Record.from_dict(data))
            except (RecordError, TypeError, ValueError) as exc:
                message = exc.message if isinstance(exc, RecordError) else str(exc)
                raise RecordError(path, reader.line_num, message) from None
    return records


def _read_json_list(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise RecordError(path, None, "expected a JSON list")
    return data


def _pandalm(folder: Path, humans: bool, judge_files: tuple[str, ...]) -> tuple[list[Record], list[ImportIssue]]:
    """The PandaLM test set: 3 human records per pair, one record per judge verdict.

    ``response1`` is shown first, so it becomes ``model_a``; ``cmp_key`` is
    ``"<model1>_<model2>"`` in that order. The prompt is the instruction plus its input.
    """
    testset_path = folder / PANDALM_TESTSET
    if not testset_path.exists():
        raise RecordError(testset_path, None, "PandaLM judgments need testset-v1.json beside them")
    items = _read_json_list(testset_path)
    records: list[Record] = []
    issues: list[ImportIssue] = []
    base: dict[int, dict] = {}
    for item in items:
        where = f"idx {item.get('idx')}"
        bad = [k for k in ("response1", "response2", "instruction", "input") if not isinstance(item.get(k), str)]
        if bad:
            detail = ", ".join(f"{k} is {type(item.get(k)).__name__} {item.get(k)!r}" for k in bad)
            issues.append(ImportIssue(str(testset_path), where, f"skipped: {detail} (expected text)"))
            continue
        model_a, sep, model_b = item["cmp_key"].partition("_")
        if not sep:
            raise RecordError(testset_path, None, f"{where}: cmp_key {item['cmp_key']!r} is not MODEL1_MODEL2")
        prompt = item["instruction"] if not item["input"] else f"{item['instruction']}\n\n{item['input']}"
        base[item["idx"]] = dict(
            pair_id=make_pair_id(prompt, item["response1"], item["response2"]),
            prompt=prompt,
            model_a=model_a,
            model_b=model_b,
            response_a=item["response1"],
            response_b=item["response2"],
            family_a=family_of(model_a),
            family_b=family_of(model_b),
            prompt_id=str(item["idx"]),
            category=item.get("motivation_app"),
        )
        if humans:
            for annotator in PANDALM_ANNOTATORS:
                code = str(item[annotator])
                if code not in _PANDALM_VERDICT:
                    raise RecordError(testset_path, None, f"{where}: {annotator} has unknown code {code!r}")
                records.append(Record(**base[item["idx"]], winner=_PANDALM_VERDICT[code], judge=f"{HUMAN}:{annotator}"))
    for name in judge_files:
        judge, field, reason = PANDALM_JUDGES[name]
        path = folder / name
        for entry in _read_json_list(path):
            idx = entry.get("idx")
            if idx not in base:
                issues.append(ImportIssue(str(path), f"idx {idx}", "skipped: its test-set item was skipped"))
                continue
            verdict = _PANDALM_VERDICT.get(str(entry.get(field)).strip().lower())
            parse_error = None
            if verdict is None:
                parse_error = f"unparseable verdict {entry.get(field)!r}"
                issues.append(ImportIssue(str(path), f"idx {idx}", f"kept with parse_error: {parse_error}"))
            records.append(
                Record(
                    **base[idx],
                    # The record type needs a winner; parse_error marks it unusable for analysis.
                    winner=verdict or "tie",
                    judge=judge,
                    judge_family=family_of(judge),
                    raw_output=entry.get(reason) if parse_error is None else str(entry.get(field)),
                    parse_error=parse_error,
                    # PandaLM judges write their own reference answer: judge output, not input.
                    meta={"judge_reference": entry.get(field.replace("result", "reference"))},
                )
            )
    return records, issues
