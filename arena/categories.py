"""Category views of the leaderboard, after FastChat's monitor (``elo_analysis.py``):
multi-turn battles, long prompts, code, and the prompt's language.

A vote's category is read from the stored record alone, so every view is recomputed
from the votes. ``language`` uses langdetect (a port of Google's language-detection),
seeded so the same prompt always gets the same label. Short prompts fool it ("Name a
fruit." reads as Romanian, 5 of 7 trials), so a prompt gets a language only when
langdetect is confident and the prompt has a few words, and a language gets its view
only once it has ``MIN_LANGUAGE_VOTES`` votes; views are named in words ("German").
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from pairlab.records import Record

# FastChat's "long user query" is >= 500 tokens; this arena caps prompts at 2,000
# characters (about 500 tokens), so the cut is stated in characters.
LONG_PROMPT_CHARS = 500
CATEGORIES = {
    "all": "all votes",
    "multi-turn": "multi-turn battles (more than one user turn)",
    "long-prompt": f"long prompts (at least {LONG_PROMPT_CHARS} characters)",
    "code": "code (a code block in the conversation, or a programming request)",
}
# A language label needs this share of langdetect's trials and this many words; a
# language view needs this many votes (FastChat shows only languages with many battles).
LANGUAGE_CONFIDENCE = 0.95
LANGUAGE_MIN_WORDS = 3
MIN_LANGUAGE_VOTES = 10
# langdetect's 55 languages.
LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "gu": "Gujarati", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese",
    "kn": "Kannada", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ne": "Nepali", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "so": "Somali",
    "sq": "Albanian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh-cn": "Chinese (simplified)", "zh-tw": "Chinese (traditional)",
}
_CODE = re.compile(
    r"```|\b(python|javascript|typescript|java|rust|golang|c\+\+|sql|bash|regex|function|compile|"
    r"def|class|import|return|variable|algorithm|code|script)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def language(text: str) -> str:
    """ISO 639-1 code of ``text``'s language; ``"unknown"`` when undecidable or not sure."""
    from langdetect import DetectorFactory, LangDetectException, detect_langs

    if len(text.split()) < LANGUAGE_MIN_WORDS:
        return "unknown"
    DetectorFactory.seed = 0  # langdetect samples; a fixed seed makes it deterministic
    try:
        best = detect_langs(text)[0]
    except LangDetectException:  # no letters to go on
        return "unknown"
    return best.lang if best.prob >= LANGUAGE_CONFIDENCE else "unknown"


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


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
    """Category key -> label for every view with at least one vote, and for each language
    detected with confidence in at least ``MIN_LANGUAGE_VOTES`` votes."""
    out = {key: label for key, label in CATEGORIES.items() if key == "all" or any(in_category(r, key) for r in records)}
    found = Counter(language(r.prompt) for r in records)
    enough = [code for code, n in found.items() if code != "unknown" and n >= MIN_LANGUAGE_VOTES]
    for code in sorted(enough, key=language_name):
        out[f"lang:{code}"] = f"language: {language_name(code)}"
    return out
