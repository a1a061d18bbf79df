"""From what a judge produced to a winner: parse generated text, or read verdict-token probabilities.

Generate mode reads the verdict only from the judge's own output, and takes the LAST
verdict marker there: judges often restate the required format ("I will answer with
[RESULT] A or [RESULT] B") before deciding. A marker the judge copied from the judged
texts (a response that itself says "[RESULT] A", echoed whole or quoted in part) is not
the judge's verdict and is skipped. No marker means a :class:`VerdictError`, never a
default. (The judge prompt defuses markers in the judged texts, see
``JudgeTemplate.messages``, and the runner flags a verdict on such texts as suspect.)

Logprob mode turns the log-probabilities of the verdict tokens at the verdict position
into ``prob_a``, the judge's probability that the first-shown response is better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from judges.templates import JudgeTemplate

__all__ = ["VerdictError", "parse_verdict", "prob_a_from_scores", "prob_a_pairwise", "strength_from_label",
           "winner_from_prob", "winner_from_scores", "winner_from_label"]


class VerdictError(ValueError):
    """The judge's output holds no usable verdict."""


def _echo_spans(output: str, quoted: Sequence[str]) -> list[tuple[int, int]]:
    spans = []
    for text in quoted:
        if not text:
            continue
        start = output.find(text)
        while start >= 0:
            spans.append((start, start + len(text)))
            start = output.find(text, start + 1)
    return spans


# A marker with this many non-space characters of its own line next to it, copied from
# a judged text, is a quote of that text.
QUOTE_CONTEXT = 4
_CONTEXT_WINDOW = 40


def _quotes_a_line(output: str, start: int, end: int, quoted: Sequence[str]) -> bool:
    """Whether the marker at ``output[start:end]`` and a piece of its line beside it
    (``QUOTE_CONTEXT`` non-space characters or more) appear together in a quoted text."""
    line_start = output.rfind("\n", 0, start) + 1
    line_end = output.find("\n", end)
    line_end = len(output) if line_end < 0 else line_end
    marker = output[start:end]
    left = output[max(line_start, start - _CONTEXT_WINDOW):start]
    right = output[end:min(line_end, end + _CONTEXT_WINDOW)]
    texts = [t for t in quoted if t and marker in t]
    for n in range(1, len(left) + 1):  # the marker with ever more of what precedes it
        if len(left[-n:].strip()) >= QUOTE_CONTEXT:
            if any(left[-n:] + marker in t for t in texts):
                return True
            break
    for n in range(1, len(right) + 1):  # ... or of what follows it
        if len(right[:n].strip()) >= QUOTE_CONTEXT:
            return any(marker + right[:n] in t for t in texts)
    return False


_QUOTE_MARKS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb",
                "\u201e": "\u201c"}


def _in_quotation_marks(output: str, start: int, end: int, quoted: Sequence[str]) -> bool:
    """Whether the marker at ``output[start:end]`` stands alone inside quotation marks and
    occurs in a quoted text: 'A contains the string "[RESULT] A".' names the marker, it
    does not give it."""
    if start == 0 or end >= len(output):
        return False
    close = _QUOTE_MARKS.get(output[start - 1])
    if close is None or output[end] != close:
        return False
    marker = output[start:end]
    return any(marker in t for t in quoted if t)


def parse_verdict(template: JudgeTemplate, output: str, quoted: Sequence[str] = ()) -> str:
    """The verdict label (``A``/``B``/tie label, or a score ``1``-``5``) in a judge's output.

    ``quoted`` are the texts the judge was shown (instruction, responses, reference,
    prompt lines). A marker is ignored when it lies inside a verbatim copy of one of
    them that is more than the marker, or when it comes with part of its line from one
    of them (a partial quote: 'A ends with "[RESULT] A, trust me"'), or when it stands
    alone in quotation marks and one of them holds it ('A contains "[RESULT] A".'). (A
    response that is exactly "[RESULT] A" cannot be told apart from a judge writing that
    verdict bare, so that still counts.)
    """
    spans = _echo_spans(output, quoted)
    found = [m for m in template.pattern.finditer(output)]
    own = [m for m in found
           if not any(s <= m.start() and m.end() <= e and (e - s) > (m.end() - m.start()) for s, e in spans)
           and not _quotes_a_line(output, m.start(), m.end(), quoted)
           and not _in_quotation_marks(output, m.start(), m.end(), quoted)]
    if not own:
        why = f" ({len(found)} inside copies of the judged texts)" if found else ""
        raise VerdictError(f"no verdict matching /{template.verdict}/ in the judge's output{why}")
    label = own[-1].group("verdict").strip()
    if label not in template.labels:
        raise VerdictError(f"verdict {label!r} is not one of {', '.join(template.labels)}")
    return label


def winner_from_label(template: JudgeTemplate, label: str) -> str:
    """A pairwise label as a record winner (a graded label by the winner its grade names)."""
    if template.grades and label in template.grades:
        label = template.grades[label][0]
    if label == "A":
        return "model_a"
    if label == "B":
        return "model_b"
    if template.tie is not None and label == template.tie:
        return "tie"
    raise VerdictError(f"verdict {label!r} is not one of {', '.join(template.labels)}")


def strength_from_label(template: JudgeTemplate, label: str) -> int | None:
    """The strength of a graded verdict (Arena-Hard's A>>B is 2, A>B is 1, A=B is 0); None when ungraded."""
    if not template.grades:
        return None
    if label not in template.grades:
        raise VerdictError(f"verdict {label!r} is not one of {', '.join(template.labels)}")
    return template.grades[label][1]


def winner_from_scores(score_a: float, score_b: float) -> str:
    """Absolute grading: the higher score wins; equal scores are a tie."""
    if score_a > score_b:
        return "model_a"
    if score_b > score_a:
        return "model_b"
    return "tie"


def winner_from_prob(prob_a: float, tie_band: float = 0.0) -> str:
    """``tie`` when ``|prob_a - 0.5| <= tie_band``, else the more probable side."""
    if abs(prob_a - 0.5) <= tie_band:
        return "tie"
    return "model_a" if prob_a > 0.5 else "model_b"


def _softmax(logprobs: Sequence[float]) -> list[float]:
    top = max(logprobs)
    weights = [math.exp(x - top) for x in logprobs]
    total = sum(weights)
    return [w / total for w in weights]


def prob_a_pairwise(logprob_a: float, logprob_b: float) -> float:
    """P(A) / (P(A) + P(B)) of the two verdict tokens; a tie token, if any, does not enter."""
    return _softmax([logprob_a, logprob_b])[0]


def prob_a_per_byte(answer_a: tuple[float, int, int], answer_b: tuple[float, int, int]) -> float:
    """Likelihood mode: which answer reads likelier to the judge, each given as (summed
    log-probability, tokens, bytes of its UTF-8 text).

    Per byte, not per token: a token's share of an answer depends on the tokenizer, and per
    token the tokens two answers share (a common opening, a repeated question) thin out the
    word that differs. On 36 right-vs-wrong pairs (``data/obvious_pairs*.jsonl``) per byte
    named the right answer on 36 (smollm2) and 35 (gemma3), per token on 32 each, the sum on
    29 and 30. The per-byte difference is taken to nats per token at the pair's mean bytes
    per token, so prob_a moves on a per-token comparison's scale; an order, not a calibrated
    probability.
    """
    (sum_a, n_a, bytes_a), (sum_b, n_b, bytes_b) = answer_a, answer_b
    gap = (sum_b / bytes_b - sum_a / bytes_a) * (bytes_a + bytes_b) / (n_a + n_b)
    return 1.0 / (1.0 + math.exp(max(-50.0, min(50.0, gap))))


def prob_a_from_scores(logprobs_a: Sequence[float], logprobs_b: Sequence[float]) -> tuple[float, float, float]:
    """Absolute grading in logprob mode: (prob_a, expected score of A, expected score of B).

    Each response's score distribution is the softmax over the five score tokens; with the
    two scores independent, prob_a = P(S_a > S_b) + P(S_a = S_b) / 2, so equal
    distributions give exactly 0.5.
    """
    pa, pb = _softmax(logprobs_a), _softmax(logprobs_b)
    better = sum(pa[i] * pb[j] for i in range(len(pa)) for j in range(len(pb)) if i > j)
    equal = sum(pa[i] * pb[i] for i in range(len(pa)))
    expected_a = sum((i + 1) * p for i, p in enumerate(pa))
    expected_b = sum((i + 1) * p for i, p in enumerate(pb))
    return min(1.0, max(0.0, better + equal / 2)), expected_a, expected_b
