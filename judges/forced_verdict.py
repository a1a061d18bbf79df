"""The verdict slot: the judge's verdict read after its own reasoning, when it wrote none.

Small judges (the embedded 135M and 270M models) reason about the two responses but
seldom end with the verdict line the template asks for: with SmolLM2-135M-Instruct,
generate mode found a verdict in 0 of 24 judgments under prometheus-relative. The slot
is where the verdict would stand if the judge had followed the format: the judge's
prompt, its free text unchanged, a line break and the template's verdict prefix
(``[RESULT]``, ``[[``). There the judge's next token is read restricted to the verdict
labels, i.e. greedy decoding constrained to the allowed tokens (the label the judge
itself finds most probable at that point, never one chosen for it).

The record says how its verdict was obtained: ``meta.verdict_source`` is ``"free"``
(parsed from the judge's own text) or ``"forced-slot"`` (read at the slot), and a forced
verdict keeps the labels' log-probabilities and their total probability mass
(``meta.forced_slot``): a small mass says the judge did not expect a verdict there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pairlab.backends.base import Model
from judges.templates import JudgeTemplate

__all__ = ["FREE", "FORCED", "SlotVerdict", "can_force", "force_verdicts", "slot_context"]

FREE = "free"
FORCED = "forced-slot"


@dataclass(frozen=True)
class SlotVerdict:
    label: str
    logprobs: dict[str, float]  # label -> log p(label | slot)
    mass: float  # total probability of the labels at the slot

    def meta(self) -> dict:
        return {"logprobs": {k: round(v, 6) for k, v in self.logprobs.items()}, "mass": round(self.mass, 6)}


def can_force(template: JudgeTemplate) -> bool:
    """A slot needs the text before the verdict token (the template's ``logprob_prefix``)."""
    return template.logprob_prefix is not None


def slot_context(model: Model, template: JudgeTemplate, messages: list[dict], reasoning: str) -> str:
    """The rendered judge prompt, the judge's own text, then the verdict prefix on a new line."""
    rendered = model.render(messages)
    prefix, _ = template.scoring_split()
    text = reasoning.strip()
    if text and rendered and not rendered[-1].isspace():
        text = " " + text  # a plain template ends with "Answer:"; the judge's text starts after a space
    return f"{rendered}{text}\n{prefix}" if text else rendered + prefix


def force_verdicts(model: Model, template: JudgeTemplate, items: Sequence[tuple[list[dict], str]]) -> list[SlotVerdict]:
    """One verdict per (judge prompt, the judge's free text): the most probable label at the slot."""
    if not items:
        return []
    _, tokens = template.scoring_split()
    contexts = [slot_context(model, template, messages, reasoning) for messages, reasoning in items]
    out = []
    for row in model.score(contexts, tokens):
        logprobs = dict(zip(template.labels, row))
        label = max(template.labels, key=lambda k: logprobs[k])  # first label on an exact tie
        out.append(SlotVerdict(label, logprobs, sum(math.exp(x) for x in row)))
    return out
