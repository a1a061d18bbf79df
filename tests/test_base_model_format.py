"""A base model (Gemma 3 270M, no chat template) prompted in the plain Question/Answer
format answers once: it used to run on into more "Answer:" lines ("3\\nAnswer: 3\\nAnswer:
3 ..."), a habit that named it in an anonymous battle. Real model, arena's sampling settings.
"""

import pytest

from pairlab.backends.base import GenerationParams

pytestmark = pytest.mark.slow

# Prompts of the arena's prompt set; with these settings the second ran on into
# "\n\nAnswer: It arrives at 3 pm." before.
PROMPTS = ["I have 3 apples and buy 2 more, then eat one. How many apples do I have?",
           "If a train leaves at 3 pm and the trip takes 2 hours and 30 minutes, when does it arrive?"]


def test_the_base_model_gives_one_answer_without_echoing_the_format(gemma):
    params = GenerationParams(max_new_tokens=40, temperature=0.7, top_p=0.9, seed=0)
    outputs = ["".join(gemma.stream([{"role": "user", "content": prompt}], params)) for prompt in PROMPTS]
    assert all("Answer:" not in text and "Question:" not in text for text in outputs), outputs
    assert all(text.strip() for text in outputs), outputs  # still answers
