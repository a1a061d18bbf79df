"""Chatbot Arena vote datasets and FastChat battle rows -> records.

One function reads every published shape of a pairwise human vote from LMSYS / LMArena:

* FastChat battles and ``lmsys/chatbot_arena_conversations`` (33k): ``question_id,
  model_a, model_b, winner, judge, conversation_a, conversation_b, turn, anony,
  language, tstamp`` (+ ``openai_moderation, toxic_chat_tag``); MT-Bench human
  judgments have the same shape (``judge`` is a voter id, or ``["gpt-4", "pair-v2"]``);
* ``lmarena-ai/arena-human-preference-100k``: the same plus ``conv_metadata, is_code,
  is_refusal, category_tag, dedup_tag``;
* ``lmarena-ai/arena-human-preference-140k``: ``id, model_a, model_b, winner,
  evaluation_session_id, evaluation_order, conversation_a, conversation_b,
  full_conversation, conv_metadata, category_tag, language, is_code, timestamp``, where
  a message's ``content`` may be a list of parts (``{"type": "text", "text": ...}``) and
  ``winner`` may be ``both_bad``;
* ``lmsys/lmsys-arena-human-preference-55k`` (the Kaggle release): ``id, model_a,
  model_b, prompt, response_a, response_b, winner_model_a, winner_model_b,
  winner_tie``, the texts being JSON-encoded lists with one string per turn.

Conversations may be message lists or JSON-encoded lists. ``turn``, ``language``,
``anony`` and the timestamp are kept (``turn``/``tstamp`` as fields, the rest in
``meta``, as is every other column). The prompt is the last user turn (or ``turn``'s).
"""

from __future__ import annotations

import datetime as dt
import json

from pairlab.records import HUMAN, Record

from .comparison import comparison

NAME = "chatbot-arena"
SUMMARY = ("Chatbot Arena / FastChat votes (model_a, model_b, winner or winner_model_a/_b/_tie, "
           "conversation_a/_b or prompt/response_a/_b): the 33k, 55k, 100k and 140k releases, "
           "FastChat battles, MT-Bench human judgments")
# 140k spells FastChat's "tie (bothbad)" as "both_bad".
_WINNERS = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie (bothbad)",
            "both_bad": "tie (bothbad)", "tie(bothbad)": "tie (bothbad)"}
_FLAGS = ("winner_model_a", "winner_model_b", "winner_tie")
_USED = {"pair_id", "model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn", "tstamp",
         "timestamp", "prompt", "response_a", "response_b", *_FLAGS}


def matches(row: dict) -> bool:
    if not {"model_a", "model_b"} <= row.keys():
        return False
    has_verdict = "winner" in row or set(_FLAGS) <= row.keys()
    has_texts = {"conversation_a", "conversation_b"} <= row.keys() or {"prompt", "response_a", "response_b"} <= row.keys()
    return has_verdict and has_texts


def _decoded(value, name: str):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"{name} is neither a list nor a JSON-encoded list") from None
    return value


def _text(content) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(
            part if isinstance(part, str) else str(part.get("text") or "") for part in content
            if isinstance(part, str) or part.get("type", "text") == "text"
        )
    raise ValueError(f"message content must be text or a list of parts, got {type(content).__name__}")


def _turn_text(conversation: list, turn: int | None, name: str) -> tuple[str, str]:
    """(user turn, assistant reply) for a 1-based turn (the last one if None)."""
    if not isinstance(conversation, (list, tuple)):
        raise ValueError(f"{name} must be a list of messages, got {type(conversation).__name__}")
    users = [i for i, m in enumerate(conversation) if m.get("role") == "user"]
    if not users:
        raise ValueError(f"{name} has no user turn")
    if turn is not None and not 1 <= turn <= len(users):
        raise ValueError(f"turn {turn} but {name} has {len(users)} user turn(s)")
    index = users[-1] if turn is None else users[turn - 1]
    reply = next((m.get("content") for m in conversation[index + 1 :] if m.get("role") == "assistant"), None)
    if reply is None:
        raise ValueError(f"{name} has no assistant reply to turn {turn or len(users)}")
    return _text(conversation[index].get("content")), _text(reply)


def _from_turn_lists(row: dict) -> tuple[list, list]:
    """The 55k release's JSON-encoded per-turn lists as two message lists."""
    prompts = _decoded(row["prompt"], "prompt")
    sides = []
    for side in ("response_a", "response_b"):
        replies = _decoded(row[side], side)
        if len(replies) != len(prompts):
            raise ValueError(f"{side} has {len(replies)} turn(s) but prompt has {len(prompts)}")
        messages = []
        for question, answer in zip(prompts, replies):
            # The 55k release has null for a reply that was never shown (an error on the model side).
            messages += [{"role": "user", "content": question or ""}, {"role": "assistant", "content": answer or ""}]
        sides.append(messages)
    return sides[0], sides[1]


def winner(row: dict) -> str:
    if "winner" in row:
        try:
            return _WINNERS[row["winner"]]
        except (KeyError, TypeError):
            raise ValueError(f"unknown winner {row['winner']!r}; expected one of {', '.join(_WINNERS)}") from None
    flags = [int(row[f]) for f in _FLAGS]
    if sorted(flags) != [0, 0, 1]:
        raise ValueError(f"exactly one of {', '.join(_FLAGS)} must be 1, got {flags}")
    return ("model_a", "model_b", "tie")[flags.index(1)]


def _tstamp(row: dict) -> float | None:
    value = row.get("tstamp", row.get("timestamp"))
    if value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:  # the releases give UTC
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.timestamp()
    raise ValueError(f"tstamp must be unix seconds or an ISO date, got {value!r}")


def _jsonable(value):
    """Meta must survive a JSONL round trip: Parquet gives dates and nested structures."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def convert(row: dict) -> list[Record]:
    if "conversation_a" in row:
        conversation_a = _decoded(row["conversation_a"], "conversation_a")
        conversation_b = _decoded(row["conversation_b"], "conversation_b")
    else:
        conversation_a, conversation_b = _from_turn_lists(row)
    turn = None if row.get("turn") is None else int(row["turn"])
    prompt, response_a = _turn_text(conversation_a, turn, "conversation_a")
    _, response_b = _turn_text(conversation_b, turn, "conversation_b")
    raw_judge = row.get("judge") or HUMAN
    template = None
    if isinstance(raw_judge, (list, tuple)):  # MT-Bench LLM judgments: ["gpt-4", "pair-v2"]
        judge, template = str(raw_judge[0]), str(raw_judge[1]) if len(raw_judge) > 1 else None
    else:
        judge = raw_judge if raw_judge.startswith(HUMAN) else f"{HUMAN}:{raw_judge}"
    model_a, model_b = str(row["model_a"]), str(row["model_b"])
    prompt_id = row.get("question_id", row.get("id"))
    # Our own FastChat export keeps each vote's pair id (a prompt-set pair's is not its texts' hash).
    pair_id = {} if row.get("pair_id") is None else {"pair_id": str(row["pair_id"])}
    return [
        comparison(
            prompt, model_a, model_b, response_a, response_b, winner(row), judge, **pair_id,
            prompt_id=None if prompt_id is None else str(prompt_id),
            turn=turn,
            tstamp=_tstamp(row),
            template=template,
            conversation={"a": _jsonable(conversation_a), "b": _jsonable(conversation_b)},
            meta={k: _jsonable(v) for k, v in row.items() if k not in _USED},
        )
    ]
