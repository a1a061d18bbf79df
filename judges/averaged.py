"""One order-averaged verdict per pair judged in both orders (``OUT.pairs.jsonl``).

A small judge often prefers a display position more than it prefers either answer: each
order's verdict then follows the position, while the mean of the two orders' probabilities
for the same model still carries what the judge knows about the answers (balanced position
calibration, Wang et al. 2023, "Large Language Models are not Fair Evaluators", sec. 3.2).
Each line is a full record, so the ratings and the report read it like any other judge:
``pair_id``, ``model_a`` and ``model_b`` as in the PAIRS file (``model_a`` is not a display
position here), ``prob_a`` the mean of both orders' probabilities that this ``model_a`` is
better, ``winner`` from it, ``consistent`` whether the two orders' own verdicts named the same
model, and ``judge`` the judge's id plus ``:order-averaged`` (a variant of the judge, rated
apart from its per-order records). Without ``prob_a`` (generate mode) an order's verdict
counts as 1, 0.5 (tie) or 0.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pairlab.records import ORDER_AVERAGED, Pair, Record
from judges.verdicts import winner_from_prob

__all__ = ["order_averaged", "pairs_path"]

_AS_PROB = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}


def pairs_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".pairs.jsonl")


def _prob_listed_first(record: Record) -> float | None:
    """This record's probability that the pair's listed ``model_a`` (PAIRS order) is better."""
    prob = record.prob_a if record.prob_a is not None else _AS_PROB.get(record.winner)
    if prob is None:
        return None
    # judges.run's "ab" order shows the pair as PAIRS lists it; "ba" swaps it.
    return prob if record.meta.get("order") == "ab" else 1.0 - prob


def _picked(record: Record) -> str | None:
    return record.winner_model or ("tie" if record.winner in ("tie", "tie (bothbad)") else None)


def order_averaged(records: Iterable[Record], pairs: Sequence[Pair], tie_band: float = 0.0) -> list[Record]:
    """One record per pair of ``pairs`` that ``records`` (one judge, one template) hold in both
    orders, in the order of ``pairs``; pairs with fewer than two verdicts are left out."""
    by_pair: dict[str, dict[str, Record]] = {}
    for r in records:
        if r.winner is not None:
            by_pair.setdefault(r.pair_id, {})[r.meta.get("order")] = r
    out = []
    for pair in pairs:
        seen = list(by_pair.get(pair.pair_id, {}).values())
        probs = [_prob_listed_first(r) for r in seen]
        if len(seen) < 2 or None in probs:
            continue
        prob = round(sum(probs) / len(probs), 6)
        first = seen[0]
        out.append(Record(
            pair_id=pair.pair_id, prompt=pair.prompt, model_a=pair.model_a, model_b=pair.model_b,
            response_a=pair.response_a, response_b=pair.response_b, winner=winner_from_prob(prob, tie_band),
            judge=first.judge + ORDER_AVERAGED, judge_family=first.judge_family, family_a=pair.family_a,
            family_b=pair.family_b, prompt_id=pair.prompt_id, category=pair.category, reference=pair.reference,
            prob_a=prob, template=first.template,
            meta={"variant": "order-averaged", "orders": len(seen), "mode": first.meta.get("mode")},
            extra={"consistent": len({_picked(r) for r in seen}) == 1},
        ))
    return out
