"""Arena-Hard-Auto judgments (``model_judgment/<judge>/<model>.jsonl``) -> records.

A row (Li et al. 2024, "From Crowdsourced Data to High-Quality Benchmarks: Arena-Hard
and BenchBuilder"; ``gen_judgment.py``): ``question_id`` (``uid`` in v2.0), ``model``,
``judge``, ``games`` (+ ``baseline``, ``category`` in v2.0). Each question is judged
twice: in game 1 the baseline's answer is Assistant A and the model's Assistant B; in
game 2 they are swapped. Each game has the judge prompt (``user_prompt``; v2.0 keeps the
chat as ``prompt``), the ``judgment`` text and the ``score``: ``A>>B``, ``A>B``,
``A=B``, ``B>A``, ``B>>A``, or null when no verdict label was found.

So a row gives two records with one ``pair_id``, ``model_a`` being Assistant A of
that game. The graded verdict is kept: ``strength`` 2 for ``>>``, 1 for ``>``, 0 for a
tie. A null score gives a record without a verdict (``parse_error``). The question and
the two answers are read back from the judge prompt (Arena-Hard's template marks them).
v0.1 rows do not name the baseline: it is Arena-Hard v0.1's default, ``gpt-4-0314``.
"""

from __future__ import annotations

import re

from pairlab.records import Record

from .comparison import comparison

NAME = "arena-hard"
SUMMARY = "Arena-Hard-Auto model_judgment/<judge>/<model>.jsonl (question_id or uid, model, judge, games)"
DEFAULT_BASELINE = "gpt-4-0314"
_SCORES = {"A>>B": ("model_a", 2), "A>B": ("model_a", 1), "A=B": ("tie", 0), "B>A": ("model_b", 1),
           "B>>A": ("model_b", 2), "A<B": ("model_b", 1), "A<<B": ("model_b", 2), "B<A": ("model_a", 1),
           "B<<A": ("model_a", 2), "B=A": ("tie", 0)}
_PROMPT = re.compile(
    r"<\|User Prompt\|>\n(?P<question>.*?)\n*"
    r"<\|The Start of Assistant A's Answer\|>\n(?P<a>.*?)\n<\|The End of Assistant A's Answer\|>\s*"
    r"<\|The Start of Assistant B's Answer\|>\n(?P<b>.*?)\n<\|The End of Assistant B's Answer\|>",
    re.DOTALL,
)


def matches(row: dict) -> bool:
    return "games" in row and "model" in row and ("question_id" in row or "uid" in row)


def _judge_prompt(game: dict) -> str:
    prompt = game.get("user_prompt", game.get("prompt"))
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], dict):  # v2.0: the chat
        prompt = next((m.get("content") for m in reversed(prompt) if m.get("role") == "user"), None)
    if isinstance(prompt, (list, tuple)) and prompt:  # with images: [text, image hashes]
        prompt = prompt[0]
    if isinstance(prompt, dict):
        prompt = prompt.get("text")
    if not isinstance(prompt, str):
        raise ValueError("game has no judge prompt (user_prompt) to read the question and answers from")
    return prompt


def _texts(game: dict) -> tuple[str, str, str]:
    found = _PROMPT.search(_judge_prompt(game))
    if found is None:
        raise ValueError("judge prompt does not follow Arena-Hard's template (<|User Prompt|>, "
                         "<|The Start of Assistant A's Answer|> ...)")
    return found["question"].strip(), found["a"], found["b"]


def convert(row: dict) -> list[Record]:
    games = row["games"]
    if not isinstance(games, (list, tuple)) or len(games) != 2:
        raise ValueError(f"expected two games (both orders), got {len(games) if isinstance(games, (list, tuple)) else games!r}")
    model = str(row["model"])
    baseline = str(row.get("baseline") or DEFAULT_BASELINE)
    judge = str(row.get("judge") or "arena-hard-judge")
    question_id = str(row.get("question_id", row.get("uid")))
    records = []
    for number, (game, (first, second)) in enumerate(zip(games, ((baseline, model), (model, baseline))), start=1):
        prompt, response_a, response_b = _texts(game)
        score = game.get("score")
        if score is None:
            winner, strength, parse_error = None, None, "Arena-Hard judgment has no verdict label (score is null)"
        elif score in _SCORES:
            (winner, strength), parse_error = _SCORES[score], None
        else:
            raise ValueError(f"game {number}: unknown score {score!r}; expected one of A>>B, A>B, A=B, B>A, B>>A")
        judgment = game.get("judgment")
        records.append(
            comparison(
                prompt, first, second, response_a, response_b, winner, judge,
                prompt_id=question_id,
                category=row.get("category"),
                raw_output=judgment if isinstance(judgment, str) or judgment is None else str(judgment),
                parse_error=parse_error,
                strength=strength,
                meta={"game": number, "score": score},
            )
        )
    return records
