"""Does a finished run reproduce here? (``judges.run --reproduce MANIFEST --sample N``)

Greedy judges are deterministic on one machine, not across them: hardware (vector
extensions, GPU kernels), the inference library, the batch size (padding) and the loading
precision change the float sums, and with them, now and then, a verdict. The check reruns a
random sample of the run's batches, each whole (so every batch has the composition it had in
the run), with the run's settings, and compares record by record: identical verdicts, the
drift of ``prob_a``, identical judge text (generate mode), and which of the recorded facts
(:func:`judges.manifest.reproducibility_facts`) differ between the run and this machine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from pairlab.records import Record

__all__ = ["Comparison", "compare_records", "differing_facts", "sample_chunks"]


@dataclass(frozen=True)
class Comparison:
    n: int  # judgments compared (found in both the run and the rerun)
    same_verdict: int
    same_text: int | None  # generate mode: identical raw_output; None without judge text
    prob_drift_max: float | None  # max |prob_a run - prob_a rerun|; None without prob_a
    prob_drift_mean: float | None
    missing: int  # rerun judgments the run's records did not hold (its failures, or a changed input)

    def lines(self) -> list[str]:
        out = [f"identical verdicts: {self.same_verdict} of {self.n}"]
        if self.same_text is not None:
            out.append(f"identical judge text: {self.same_text} of {self.n}")
        if self.prob_drift_max is not None:
            out.append(f"prob_a drift: max {self.prob_drift_max:.2g}, mean {self.prob_drift_mean:.2g}")
        if self.missing:
            out.append(f"{self.missing} rerun judgment(s) have no record in the run to compare with")
        return out

    def to_dict(self) -> dict:
        return {"n": self.n, "same_verdict": self.same_verdict, "same_text": self.same_text,
                "prob_drift_max": self.prob_drift_max, "prob_drift_mean": self.prob_drift_mean,
                "missing": self.missing}


def sample_chunks(chunks: Sequence[list], n: int, seed: int) -> list[list]:
    """Whole chunks, drawn at random (seeded), until they hold at least ``n`` judgments."""
    order = list(range(len(chunks)))
    random.Random(seed).shuffle(order)
    chosen, total = [], 0
    for i in order:
        if total >= n:
            break
        chosen.append(i)
        total += len(chunks[i])
    return [chunks[i] for i in sorted(chosen)]


def _key(r: Record) -> tuple:
    return r.pair_id, r.meta.get("order")


def compare_records(run: Sequence[Record], rerun: Sequence[Record]) -> Comparison:
    """The rerun's records against the run's, matched by (pair, order)."""
    before = {_key(r): r for r in run}
    pairs = [(before[_key(r)], r) for r in rerun if _key(r) in before]
    drifts = [abs(a.prob_a - b.prob_a) for a, b in pairs if a.prob_a is not None and b.prob_a is not None]
    texts = [(a.raw_output, b.raw_output) for a, b in pairs if a.raw_output is not None]
    return Comparison(
        n=len(pairs), same_verdict=sum(a.winner == b.winner for a, b in pairs),
        same_text=sum(x == y for x, y in texts) if texts else None,
        prob_drift_max=max(drifts) if drifts else None,
        prob_drift_mean=sum(drifts) / len(drifts) if drifts else None,
        missing=len(rerun) - len(pairs),
    )


def differing_facts(before: dict, now: dict) -> dict[str, tuple]:
    """{fact: (run's value, this machine's)} for each recorded fact that differs."""
    return {k: (before.get(k), now.get(k)) for k in sorted(before.keys() | now.keys()) if before.get(k) != now.get(k)}
