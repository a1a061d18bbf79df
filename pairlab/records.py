"""The one record type: one comparison (a human vote or a judge verdict) per JSONL line.

Field meanings are fixed by docs/architecture.md. ``model_a`` is always the response shown first,
so position bias can be read straight off the records. Unknown fields survive a round
trip in ``extra``; nothing is coerced: a bad line raises :class:`RecordError` naming the
file and line, or is collected when the reader is asked to skip bad lines.

A judgment that holds no verdict (a judge output that could not be parsed, an AlpacaEval
row with a null preference) is still a record, so nothing is lost: ``winner`` is null and
``parse_error`` says why. ``winner`` may be null only with ``parse_error``; analyses count
every record with a ``parse_error`` as a parse failure of its judge and never rate it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

# The one reader and output rule (a FIFO, a device, a huge line refused; temp file + replace).
from pairlab.files import RecordError, replace_file, text_lines

RECORD_VERSION = 1

WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
HUMAN = "human"
JUDGE_TYPES = ("human", "llm")
# The record's rules, one table for both readers: a record checks itself (Record.validate) and a
# records file read as columns is checked column by column (pairlab.record_table.from_arrow),
# each breach named in these words. The text fields are the required ones but ``winner``, which
# may be null when ``parse_error`` says why; ``prob_a`` is in [0, 1]; ``strength`` (a graded
# verdict: Arena-Hard's A>>B is 2, A>B is 1, A=B is 0) a whole number >= 0.
BREACHES = {
    "missing": "missing required field {name!r}",
    "text": "field {name!r} must be a string",
    "no verdict": "winner is null but parse_error is not set",
    "winner": "unknown winner",
    "judge_type": "judge_type must be 'human' or 'llm'",
    "prob_a": "prob_a must be a number in [0, 1]",
    "strength": "strength must be a whole number >= 0",
    "meta": "meta must be an object",
}
# A judge's order-averaged verdicts (judges.run's OUT.pairs.jsonl) are rated as this judge id plus the suffix.
ORDER_AVERAGED = ":order-averaged"
# A judge's likelihood-mode verdicts (each answer scored alone) are another rater: the judge id plus this.
LIKELIHOOD = ":likelihood"
# Both are the same judge read another way (one voice in a panel) and no display order sways them.
JUDGE_VARIANTS = (ORDER_AVERAGED, LIKELIHOOD)


def saw_display_order(judge: str) -> bool:
    """False for verdicts no display order could sway: a judge's order-averaged verdicts and
    its likelihood-mode scores (which-shown-first numbers for them describe the input's listing)."""
    return not str(judge).endswith(JUDGE_VARIANTS)

__all__ = [
    "BREACHES",
    "HUMAN",
    "JUDGE_TYPES",
    "JUDGE_VARIANTS",
    "LIKELIHOOD",
    "ORDER_AVERAGED",
    "Pair",
    "Record",
    "RecordError",
    "WINNERS",
    "append_jsonl",
    "is_human",
    "saw_display_order",
    "iter_jsonl",
    "make_pair_id",
    "read_pairs",
    "read_records",
    "write_records",
]


def make_pair_id(prompt: str, response_1: str, response_2: str) -> str:
    """Order-independent id of (prompt, two responses): the same for (A,B) and (B,A)."""
    first, second = sorted((response_1, response_2))
    digest = hashlib.sha256("\x1f".join((prompt, first, second)).encode("utf-8"))
    return digest.hexdigest()[:16]


def _require_str(data: dict, name: str, optional: bool = False) -> Any:
    if name not in data or data[name] is None:
        if optional:
            return None
        raise RecordError(None, None, BREACHES["missing"].format(name=name))
    value = data[name]
    if not isinstance(value, str):
        raise RecordError(None, None, BREACHES["text"].format(name=name) + f", got {type(value).__name__}: {value!r:.60}")
    return value


@dataclass
class Record:
    """One comparison. Required fields first; optional ones default to ``None``."""

    pair_id: str
    prompt: str
    model_a: str
    model_b: str
    response_a: str
    response_b: str
    # None only together with ``parse_error``: a judgment that holds no verdict.
    winner: str | None
    judge: str
    judge_type: str | None = None
    family_a: str | None = None
    family_b: str | None = None
    judge_family: str | None = None
    prompt_id: str | None = None
    category: str | None = None
    turn: int | None = None
    tstamp: float | None = None
    reference: str | None = None
    prob_a: float | None = None
    raw_output: str | None = None
    parse_error: str | None = None
    template: str | None = None
    conversation: Any = None
    strength: int | None = None
    meta: dict = field(default_factory=dict)
    version: int = RECORD_VERSION
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.judge_type is None:
            self.judge_type = "human" if is_human(self.judge) else "llm"
        self.validate()

    def validate(self) -> None:
        """The rules of :data:`BREACHES`, checked on this record."""
        for name in _REQUIRED:
            value = getattr(self, name)
            if not isinstance(value, str) and not (name == "winner" and value is None):
                raise RecordError(None, None, BREACHES["text"].format(name=name)
                                  + f", got {type(value).__name__}: {value!r:.60}")
        if self.winner is None:
            if not self.parse_error:
                raise RecordError(None, None, BREACHES["no verdict"] + ": a record without a verdict must say why "
                                  "(parse_error)")
        elif self.winner not in WINNERS:
            raise RecordError(None, None, f"{BREACHES['winner']} {self.winner!r}; expected one of {', '.join(WINNERS)}")
        if self.judge_type not in JUDGE_TYPES:
            raise RecordError(None, None, f"{BREACHES['judge_type']}, got {self.judge_type!r}")
        if self.prob_a is not None and not (isinstance(self.prob_a, (int, float)) and 0.0 <= self.prob_a <= 1.0):
            raise RecordError(None, None, f"{BREACHES['prob_a']}, got {self.prob_a!r}")
        if self.strength is not None and (isinstance(self.strength, bool) or not isinstance(self.strength, int)
                                          or self.strength < 0):
            raise RecordError(None, None, f"{BREACHES['strength']}, got {self.strength!r}")
        if not isinstance(self.meta, dict):
            raise RecordError(None, None, f"{BREACHES['meta']}, got {type(self.meta).__name__}")

    @property
    def winner_model(self) -> str | None:
        """The winning model id, or None for ties."""
        return {"model_a": self.model_a, "model_b": self.model_b}.get(self.winner)

    def to_dict(self) -> dict:
        out = {}
        for f in _FIELDS:
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            # winner is required, so a record without a verdict says so: "winner": null.
            if (value is None and f.name != "winner") or (f.name == "meta" and not value):
                continue
            out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Record:
        if not isinstance(data, dict):
            raise RecordError(None, None, f"a record must be a JSON object, got {type(data).__name__}")
        for name in _REQUIRED:
            _require_str(data, name, optional=name == "winner" and bool(data.get("parse_error")))
        known = {"winner": None} | {k: v for k, v in data.items() if k in _FIELD_NAMES and k != "extra"}
        extra = {k: v for k, v in data.items() if k not in _FIELD_NAMES}
        return cls(**known, extra=extra)


_FIELDS = dataclasses.fields(Record)
_FIELD_NAMES = {f.name for f in _FIELDS}
_REQUIRED = ("pair_id", "prompt", "model_a", "model_b", "response_a", "response_b", "winner", "judge")


def is_human(judge: str) -> bool:
    return judge == HUMAN or judge.startswith(HUMAN + ":")


@dataclass
class Pair:
    """A row of PAIRS.jsonl: two responses to one prompt, to be judged (or voted on)."""

    pair_id: str
    prompt: str
    model_a: str
    model_b: str
    response_a: str
    response_b: str
    reference: str | None = None
    family_a: str | None = None
    family_b: str | None = None
    prompt_id: str | None = None
    category: str | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out = {k: v for k, v in out.items() if v is not None}
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Pair:
        if not isinstance(data, dict):
            raise RecordError(None, None, f"a pair must be a JSON object, got {type(data).__name__}")
        for name in ("pair_id", "prompt", "model_a", "model_b", "response_a", "response_b"):
            _require_str(data, name)
        for name in ("reference", "family_a", "family_b", "category"):
            _require_str(data, name, optional=True)
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        if known.get("prompt_id") is not None:
            known["prompt_id"] = str(known["prompt_id"])
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})


T = TypeVar("T")


def iter_jsonl(
    path: str | os.PathLike,
    parse: Callable[[dict], T],
    *,
    skip_bad: bool = False,
    errors: list[RecordError] | None = None,
) -> Iterator[T]:
    """Yield ``parse(obj)`` for each non-blank line of a JSONL file.

    A bad line raises :class:`RecordError` with the file and line number. With
    ``skip_bad=True`` the error is appended to ``errors`` instead and reading goes on.
    """
    if skip_bad and errors is None:
        raise ValueError("skip_bad=True needs an `errors` list to collect the bad lines in")
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(path, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
            yield parse(obj)
        except RecordError as exc:
            located = RecordError(path, lineno, exc.message) if exc.line is None else exc
            if not skip_bad:
                raise located from None
            errors.append(located)
        except TypeError as exc:  # unexpected keyword shapes from the dataclass constructor
            located = RecordError(path, lineno, str(exc))
            if not skip_bad:
                raise located from None
            errors.append(located)


def read_records(
    path: str | os.PathLike, *, skip_bad: bool = False, errors: list[RecordError] | None = None
) -> list[Record]:
    """Read a records JSONL file. See :func:`iter_jsonl` for error handling."""
    return list(iter_jsonl(path, Record.from_dict, skip_bad=skip_bad, errors=errors))


def read_pairs(
    path: str | os.PathLike, *, skip_bad: bool = False, errors: list[RecordError] | None = None
) -> list[Pair]:
    """Read a PAIRS.jsonl file. See :func:`iter_jsonl` for error handling."""
    return list(iter_jsonl(path, Pair.from_dict, skip_bad=skip_bad, errors=errors))


def _dumps(item: Record | Pair | dict) -> str:
    data = item if isinstance(item, dict) else item.to_dict()
    return json.dumps(data, ensure_ascii=False, sort_keys=False)


def write_records(path: str | os.PathLike, items: Iterable[Record | Pair | dict]) -> int:
    """Write items as JSONL (replacing the file); returns the number of lines written."""
    n = 0
    with replace_file(path) as fh:
        for item in items:
            fh.write(_dumps(item) + "\n")
            n += 1
    return n


def append_jsonl(fh, item: Record | Pair | dict, sync: bool = True) -> None:
    """Append one line and flush it to the OS, so a killed process loses at most the line in
    flight; ``sync`` also forces it to disk (a power cut), which the caller may batch."""
    fh.write(_dumps(item) + "\n")
    fh.flush()
    if sync:
        os.fsync(fh.fileno())
