"""The plain one-text style count the vectorised one (:func:`analysis.ratings.style.style_features`)
is checked against: FastChat's style elements, with a token a word or a punctuation mark."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*(?:\d+\.|[-*+])\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def style_counts(text: str) -> tuple[int, int, int, int]:
    """(tokens, markdown headers, list items, bold spans) of one response; markdown is counted
    outside fenced code blocks."""
    prose = _CODE_BLOCK.sub("", text)
    return len(_TOKEN.findall(text)), len(_HEADER.findall(prose)), len(_LIST.findall(prose)), len(_BOLD.findall(prose))
