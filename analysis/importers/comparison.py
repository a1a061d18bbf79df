"""One record from one imported comparison: the pair id from the texts, the families
from the names.

Family lookups are cached: a public vote dataset names the same hundred models a million
times. Public datasets spell OpenAI models without the dash ``pairlab.models`` looks for
(AlpacaEval's ``gpt4_1106_preview``, its annotator ``weighted_alpaca_eval_gpt4_turbo``,
which would otherwise match the hint ``alpaca``), so those spellings are tried first.
"""

from __future__ import annotations

from functools import lru_cache

from pairlab.models import family_of
from pairlab.records import Record, is_human, make_pair_id

__all__ = ["comparison", "family"]

_OPENAI_SPELLINGS = ("gpt4", "gpt_4", "gpt-4", "gpt35", "gpt-3.5", "chatgpt")


@lru_cache(maxsize=65536)
def family(name: str) -> str:
    low = name.lower()
    if any(s in low for s in _OPENAI_SPELLINGS):
        return "openai"
    return family_of(name)


def comparison(
    prompt: str, model_a: str, model_b: str, response_a: str, response_b: str, winner: str | None, judge: str,
    **fields,
) -> Record:
    """A record for ``response_a`` (shown first) against ``response_b``; ``fields`` are the
    optional record fields (``prob_a``, ``parse_error``, ``meta``...), and ``pair_id`` where
    the source names it (else it is made from the texts)."""
    pair_id = fields.pop("pair_id", None) or make_pair_id(prompt, response_a, response_b)
    return Record(
        pair_id=pair_id,
        prompt=prompt,
        model_a=model_a,
        model_b=model_b,
        response_a=response_a,
        response_b=response_b,
        winner=winner,
        judge=judge,
        family_a=family(model_a),
        family_b=family(model_b),
        judge_family=None if is_human(judge) else family(judge),
        **fields,
    )
