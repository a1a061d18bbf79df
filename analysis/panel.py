"""A judge panel: every LLM judge pooled into one virtual judge.

Verga et al. 2024, "Replacing Judges with Juries: Evaluating LLM Generations with a Panel
of Diverse Models" (PoLL), pool several judges' verdicts by voting. Here the panel's
verdict on a pair is the most frequent of all its members' verdicts on that pair, every
record in every order counted once (a tie when two outcomes share the top count), and its
``prob_a`` is the mean of the members' probabilities when every record carries one. The
panel is written as one record per pair, in the display order of the first member record
on it, so the report treats it like any judge (its members' records in the other order
are already pooled into the verdict). Only pairs that two or more members judged enter:
one judge's verdict is not a panel's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from core.records import Record

__all__ = ["PANEL", "panel_records"]

PANEL = "panel"
_CANON = {"model_a": 1, "model_b": -1, "tie": 0, "tie (bothbad)": 0}


def panel_records(records: Sequence[Record], is_person: Callable[[Record], bool], name: str = PANEL) -> list[Record]:
    """The panel's records (module docstring); empty when fewer than two LLM judges voted.

    ``records`` are usable records (no ``parse_error``); ``is_person`` says which are
    people's votes, left out of the panel.
    """
    by_pair: dict[str, list[Record]] = {}
    for r in records:
        if not is_person(r):
            by_pair.setdefault(r.pair_id, []).append(r)
    members_all = {r.judge for rs in by_pair.values() for r in rs}
    if len(members_all) < 2:
        return []
    out = []
    for pair_id, rs in by_pair.items():
        members = sorted({r.judge for r in rs})
        if len(members) < 2:
            continue
        lead = rs[0]
        # Each verdict in the lead record's frame: +1 its first-shown text won, -1 the other, 0 a tie.
        votes = Counter(_CANON[r.winner] * (1 if r.response_a == lead.response_a else -1) for r in rs)
        (top, n_top), *rest = votes.most_common()
        verdict = 0 if rest and rest[0][1] == n_top else top
        probs = [r.prob_a if r.response_a == lead.response_a else 1.0 - r.prob_a for r in rs if r.prob_a is not None]
        prob_a = sum(probs) / len(probs) if len(probs) == len(rs) else None
        out.append(Record(
            pair_id=pair_id, prompt=lead.prompt, model_a=lead.model_a, model_b=lead.model_b,
            response_a=lead.response_a, response_b=lead.response_b,
            winner={1: "model_a", -1: "model_b", 0: "tie"}[verdict], judge=name, judge_type="llm",
            family_a=lead.family_a, family_b=lead.family_b, prompt_id=lead.prompt_id, category=lead.category,
            prob_a=prob_a, meta={"panel_members": members, "n_verdicts": len(rs)},
        ))
    return out
