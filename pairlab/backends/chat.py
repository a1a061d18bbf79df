"""Turning a chat into the text a model is conditioned on: its own chat template, or a
plain Question/Answer format for base models that have none."""

from __future__ import annotations

from pairlab.backends.base import Prompt

# A base model continuing plain text runs on into the next "Question:"; these cut it there.
PLAIN_STOP = ("\nQuestion:", "\n\nQuestion")


# One worked exchange before the conversation shows a base model what an answer looks like
# and where it ends. Without it Gemma 3 270M answered some questions with "Answer:" again and
# again (1 prompt in 8 here, and raw "<b>Answer</b>" markup in the arena, which named the
# model); with it, 0 in 8, each answer ending at the next "Question:".
PLAIN_EXAMPLE = ("Question: What is the largest planet in the Solar System?\n"
                 "Answer: Jupiter is the largest planet in the Solar System.\n\n")


def plain_template(messages: list[dict]) -> str:
    """Question/Answer text for base models: the system text, one worked exchange
    (PLAIN_EXAMPLE), then the conversation as consecutive Q/A blocks."""
    parts = [f"{m['content']}\n\n" for m in messages if m["role"] == "system"] + [PLAIN_EXAMPLE]
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            continue
        if role == "user":
            parts.append(f"Question: {content}\nAnswer:")
        else:
            parts.append(f" {content}\n\n")
    return "".join(parts)


def pick_template(requested: str, tokenizer) -> str:
    """"chat" when asked for and the tokenizer has a chat template; otherwise "plain"."""
    return "chat" if requested == "chat" and getattr(tokenizer, "chat_template", None) else "plain"


def render(prompt: Prompt, template: str, tokenizer) -> str:
    if isinstance(prompt, str):
        return prompt
    if template == "chat":
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return plain_template(prompt)
