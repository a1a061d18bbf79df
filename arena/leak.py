"""Identity leaks: a response that names a model or its maker.

A voter who reads "As Gemma, a model by Google..." is no longer voting blind, so such
votes are flagged (``meta.identity_leak``) and left out of ratings by default, as
Chatbot Arena does. The check is deliberately broad (any well-known model or vendor
name, plus every configured model's id, family and vendor): a false positive costs one
vote, a false negative biases the leaderboard.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Names a chat model commonly uses for itself or its maker, and the makers' hub handles.
KNOWN_NAMES = (
    "chatgpt", "gpt", "openai", "claude", "anthropic", "gemini", "gemma",
    "bard", "google", "deepmind", "llama", "meta ai", "mistral", "mixtral", "qwen", "alibaba",
    "smollm", "hugging face", "huggingface", "phi", "microsoft", "falcon", "vicuna",
    "deepseek", "grok", "xai", "cohere", "command r", "01.ai", "yi",
    "huggingfacetb", "meta-llama", "mistralai", "deepseek-ai", "qwenlm", "google-deepmind", "tiiuae",
    "lmsys", "allenai", "olmo", "nvidia", "nemotron", "ibm-granite", "granite", "internlm", "zhipu", "glm",
)
# A version glued on or hyphenated ("SmolLM2", "Qwen2.5", "Llama-3.1-8B", "GPT-4o", "Phi-3"):
# digits first, so plain words that start with a name ("llamas", "phishing") do not match.
VERSION = r"(?:[-_ ]?v?\d+(?:\.\d+)*[a-z]?(?:-\d+(?:\.\d+)?[bmk])?)?"
# Names short or common enough that only a version makes them a model's ("Yi-34B", "Phi-3").
NEEDS_VERSION = {"phi", "yi", "gpt", "glm", "granite"}


class LeakDetector:
    def __init__(self, extra_names: Iterable[str] = ()):
        names = {n.lower() for n in (*KNOWN_NAMES, *extra_names) if n and (len(n) >= 3 or n in NEEDS_VERSION)}

        def alternatives(group) -> str:
            # Longest first so "gpt-4o" is reported rather than its prefix.
            return "|".join(re.escape(n) for n in sorted(group, key=len, reverse=True))

        plain, versioned = names - NEEDS_VERSION, names & NEEDS_VERSION
        version_required = VERSION.removesuffix(")?") + ")"
        # Word boundaries so "metal" does not match "meta".
        self.pattern = re.compile(
            rf"(?<![\w-])(?:(?:{alternatives(plain)}){VERSION}|(?:{alternatives(versioned)}){version_required})"
            rf"(?![\w])", re.IGNORECASE)

    def find(self, text: str) -> list[str]:
        """The names found in ``text`` (with any version), lower-cased, without repeats, in order."""
        seen: list[str] = []
        for match in self.pattern.finditer(text):
            name = match.group(0).lower()
            if name not in seen:
                seen.append(name)
        return seen
