"""The PandaLM test set (Wang et al. 2023, "PandaLM", Apache-2.0) -> records.

A folder with ``testset-v1.json`` (three human annotators per item) and the judge files
``gpt-3.5-turbo-testset-v1.json`` and ``pandalm-7b-testset-v1.json`` joined by ``idx``.
A response stored as a JSON boolean (six answers "True") is read as the text ``"True"``
and reported; a test-set item whose response is otherwise not text is skipped and reported; a judge
verdict that cannot be read (GPT-3.5's file has ``"garbage"``) becomes a record without a
verdict (``winner`` null, ``parse_error`` and ``raw_output`` set).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pairlab.records import HUMAN, Pair, Record, RecordError, make_pair_id

from .comparison import family
from .issues import ImportIssue

NAME = "pandalm"
SUMMARY = "the PandaLM test set folder (testset-v1.json + its judge files), or one of those files"
TESTSET = "testset-v1.json"
# PandaLM judge files -> (judge id, verdict field, raw-text field).
JUDGES = {
    "gpt-3.5-turbo-testset-v1.json": ("gpt-3.5-turbo", "gpt_result", "gpt_reason"),
    "pandalm-7b-testset-v1.json": ("pandalm-7b", "pandalm_result", "pandalm_reason"),
}
ANNOTATORS = ("annotator1", "annotator2", "annotator3")
# PandaLM codes: 0 = tie, 1 = response1 (shown first), 2 = response2.
_VERDICT = {"0": "tie", "1": "model_a", "2": "model_b", "tie": "tie"}


def read_folder(path: Path) -> tuple[list[Record], list[ImportIssue]]:
    """A PandaLM folder (humans and every judge file) or one of its files."""
    if path.is_dir():
        return pandalm(path, humans=True, judge_files=tuple(JUDGES))
    if path.name == TESTSET:
        return pandalm(path.parent, humans=True, judge_files=())
    return pandalm(path.parent, humans=False, judge_files=(path.name,))


def _prompt(item: dict) -> str:
    """A test item's prompt: its instruction, then its input where it has one."""
    return item["instruction"] if not item.get("input") else f"{item['instruction']}\n\n{item['input']}"


def prompt_id(prompt: str) -> str:
    """The id of a prompt, from its text: the test set's items repeat their prompts (each
    model pair's answers to one instruction are items of their own), and the items of one
    prompt share its difficulty and each model's answer, so they are one cluster."""
    return "pandalm-" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def _read_json_list(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise RecordError(path, None, "expected a JSON list")
    return data


def pandalm(folder: Path, humans: bool, judge_files: tuple[str, ...]) -> tuple[list[Record], list[ImportIssue]]:
    """The PandaLM test set: 3 human records per pair, one record per judge verdict.

    ``response1`` is shown first, so it becomes ``model_a``; ``cmp_key`` is
    ``"<model1>_<model2>"`` in that order. The prompt is the instruction plus its input.
    ``pair_id`` is ``pandalm-<idx>``: one per test item; ``prompt_id`` names the prompt
    (:func:`prompt_id`): 170 instructions carry 1-10 test items each.
    """
    testset_path = folder / TESTSET
    if not testset_path.exists():
        raise RecordError(testset_path, None, "PandaLM judgments need testset-v1.json beside them")
    items = _read_json_list(testset_path)
    records: list[Record] = []
    issues: list[ImportIssue] = []
    base: dict[int, dict] = {}
    for item in items:
        where = f"idx {item.get('idx')}"
        item = dict(item)
        for k in ("response1", "response2"):
            # Six answers "True" were stored as JSON true (the item beside them reads "True."):
            # read as that text, and said so, rather than losing the test item.
            if isinstance(item.get(k), bool):
                text = str(item[k])
                issues.append(ImportIssue(str(testset_path), where, f"kept: {k} is bool {item[k]!r}, read as the text {text!r}"))
                item[k] = text
        bad = [k for k in ("response1", "response2", "instruction", "input") if not isinstance(item.get(k), str)]
        if bad:
            detail = ", ".join(f"{k} is {type(item.get(k)).__name__} {item.get(k)!r}" for k in bad)
            issues.append(ImportIssue(str(testset_path), where, f"skipped: {detail} (expected text)"))
            continue
        model_a, sep, model_b = item["cmp_key"].partition("_")
        if not sep:
            raise RecordError(testset_path, None, f"{where}: cmp_key {item['cmp_key']!r} is not MODEL1_MODEL2")
        prompt = _prompt(item)
        base[item["idx"]] = dict(
            # One pair per test item: a hash of the texts would merge items that happen to
            # repeat a prompt and answers, joining a judge's verdict on one with votes on another.
            pair_id=f"pandalm-{item['idx']}",
            prompt=prompt,
            model_a=model_a,
            model_b=model_b,
            response_a=item["response1"],
            response_b=item["response2"],
            family_a=family(model_a),
            family_b=family(model_b),
            prompt_id=prompt_id(prompt),
            category=item.get("motivation_app"),
        )
        if humans:
            for annotator in ANNOTATORS:
                code = str(item[annotator])
                if code not in _VERDICT:
                    raise RecordError(testset_path, None, f"{where}: {annotator} has unknown code {code!r}")
                records.append(Record(**base[item["idx"]], winner=_VERDICT[code], judge=f"{HUMAN}:{annotator}"))
    for name in judge_files:
        judge, field, reason = JUDGES[name]
        path = folder / name
        for entry in _read_json_list(path):
            idx = entry.get("idx")
            if idx not in base:
                issues.append(ImportIssue(str(path), f"idx {idx}", "skipped: its test-set item was skipped"))
                continue
            verdict = _VERDICT.get(str(entry.get(field)).strip().lower())
            parse_error = None
            if verdict is None:
                parse_error = f"unparseable verdict {entry.get(field)!r}"
                issues.append(ImportIssue(str(path), f"idx {idx}", f"kept with parse_error: {parse_error}"))
            records.append(
                Record(
                    **base[idx],
                    winner=verdict,
                    judge=judge,
                    judge_family=family(judge),
                    raw_output=entry.get(reason) if parse_error is None else str(entry.get(field)),
                    parse_error=parse_error,
                    # PandaLM judges write their own reference answer: judge output, not input.
                    meta={"judge_reference": entry.get(field.replace("result", "reference"))},
                )
            )
    return records, issues


def pairs_to_judge(testset: Path, n: int) -> list[Pair]:
    """The first ``n`` distinct pairs of the test set, as pairs to judge (the benches' input).

    Items whose responses are not both text, or are the same text, are left out; items
    of different model pairs that answered alike make the same pair and count once.
    Raises ``ValueError`` when the test set has fewer.
    """
    pairs, seen = [], set()
    for row in _read_json_list(testset):
        a, b = row["response1"], row["response2"]
        if not (isinstance(a, str) and isinstance(b, str)):
            continue
        prompt = _prompt(row)
        pair_id = make_pair_id(prompt, a, b)
        if a == b or pair_id in seen:
            continue
        seen.add(pair_id)
        model_a, _, model_b = row["cmp_key"].partition("_")
        pairs.append(Pair(pair_id=pair_id, prompt=prompt, model_a=model_a, model_b=model_b,
                          response_a=a, response_b=b, prompt_id=prompt_id(prompt)))
        if len(pairs) == n:
            return pairs
    raise ValueError(f"{testset} has fewer than {n} usable rows")
