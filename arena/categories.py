"""Category views of the leaderboard, after FastChat's monitor (``elo_analysis.py``):
multi-turn battles, long prompts, code, and the prompt's language.

A vote's category is read from the stored record alone, so every view is recomputed
from the votes. ``language`` uses langdetect (a port of Google's language-detection),
seeded so the same prompt always gets the same label.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.records import Record

# FastChat's "long user query" is >= 500 tokens; this arena caps prompts at 2,000
# characters (about 500 tokens), so the cut is stated in characters.
LONG_PROMPT_CHARS = 500
CATEGORIES = {
    "all": "all votes",
    "multi-turn": "multi-turn battles (more than one user turn)",
    "long-prompt": f"long prompts (at least {LONG_PROMPT_CHARS} characters)",
    "code": "code (a code block in the conversation, or a programming request)",
}
_CODE = re.compile(
    r"```|\b(python|javascript|typescript|java|rust|golang|c\+\+|sql|bash|regex|function|compile|"
    r"def|class|import|return|variable|algorithm|code|script)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def language(text: str) -> str:
    """ISO 639-1 code of ``text``'s language (``"unknown"`` when undecidable)."""
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0  # langdetect samples; a fixed seed makes it deterministic
    try:
        return detect(text)
    except LangDetectException:  # no letters to go on
        return "unknown"


def _user_turns(record: Record) -> list[str]:
    conversation = (record.conversation or {}).get("model_a") or []
    turns = [m["content"] for m in conversation if m.get("role") == "user"]
    return turns or [record.prompt]


def in_category(record: Record, category: str) -> bool:
    """Whether ``record`` belongs to ``category`` (a CATEGORIES key or ``lang:<code>``)."""
    if category == "all":
        return True
    if category == "multi-turn":
        return (record.turn or 1) > 1
    if category == "long-prompt":
        return any(len(t) >= LONG_PROMPT_CHARS for t in _user_turns(record))
    if category == "code":
        answers = [record.response_a, record.response_b]
        return any(_CODE.search(t) for t in _user_turns(record)) or any("```" in a for a in answers)
    if category.startswith("lang:"):
        return language(record.prompt) == category.removeprefix("lang:")
    raise ValueError(f"unknown category {category!r}; use one of {', '.join(CATEGORIES)} or lang:<code>")


def views(records: list[Record]) -> dict[str, str]:
    """Category key -> label for every view with at least one vote (languages as found)."""
    out = {key: label for key, label in CATEGORIES.items() if key == "all" or any(in_category(r, key) for r in records)}
    for code in sorted({language(r.prompt) for r in records} - {"unknown"}):
        out[f"lang:{code}"] = f"language: {code}"
    return out
