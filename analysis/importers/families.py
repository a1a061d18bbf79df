"""Model family lookup for imported names, cached: a public vote dataset names the same
hundred models a million times.

Public datasets spell OpenAI models without the dash ``core.models`` looks for
(AlpacaEval's ``gpt4_1106_preview``, its annotator ``weighted_alpaca_eval_gpt4_turbo``,
which would otherwise match the hint ``alpaca``), so those spellings are tried first.
"""

from __future__ import annotations

from functools import lru_cache

from core.models import family_of

__all__ = ["family"]

_OPENAI_SPELLINGS = ("gpt4", "gpt_4", "gpt-4", "gpt35", "gpt-3.5", "chatgpt")


@lru_cache(maxsize=65536)
def family(name: str) -> str:
    low = name.lower()
    if any(s in low for s in _OPENAI_SPELLINGS):
        return "openai"
    return family_of(name)
