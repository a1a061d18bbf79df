"""Likelihood mode (GPTScore): the judge scores each answer alone after the question, so no
display position can sway it. The embedded judges follow the display position when shown
both answers (test_judges_order_averaged); scored alone they tell obvious pairs apart."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pairlab.records import read_pairs, read_records
from support import run_module

ROOT = Path(__file__).resolve().parents[1]
OBVIOUS = ROOT / "data" / "obvious_pairs.jsonl"
MORE = ROOT / "data" / "obvious_pairs_more.jsonl"  # 30 more, written before any was scored


@pytest.fixture(scope="module")
def smollm():
    from pairlab.models import get_model

    model = get_model("smollm2-135m-instruct", batch_size=4)
    yield model
    model.close()


def _one_row(model, context: str, answer: str) -> tuple[float, int]:
    """The slow twin: one unpadded forward pass, log-softmax, the answer's tokens summed."""
    import torch

    add = model._encode_flags([context])
    ctx = model.tokenizer(context, add_special_tokens=add).input_ids
    tail = model._tail(context, ctx, answer, add)
    ids = torch.tensor([ctx + tail])
    with torch.inference_mode():
        logp = torch.log_softmax(model.model(ids).logits[0].float(), dim=-1)
    rows = torch.arange(len(ctx) - 1, len(ctx) + len(tail) - 1)
    return float(logp[rows, ids[0, len(ctx):]].sum()), len(tail)


@pytest.mark.model
def test_batched_answer_scores_equal_one_unpadded_row_each(smollm):
    context = smollm.render([{"role": "user", "content": "What is the capital of France?"}])
    answers = ["Paris.", "The capital of France is Paris, a city on the Seine with many museums.", "Berlin",
               "It is Paris. " * 6]
    batched = smollm.answer_logprobs([(context, a) for a in answers])  # left-padded rows of different lengths
    for (total, n), answer in zip(batched, answers):
        twin_total, twin_n = _one_row(smollm, context, answer)
        assert n == twin_n > 0
        assert total == pytest.approx(twin_total, abs=2e-3 * n)
    # The same numbers as the logprob mode's scorer gives a multi-token continuation.
    assert [t for t, _ in batched] == pytest.approx(smollm.score([context], answers)[0], abs=1e-3)


@pytest.mark.model
def test_likelihood_mode_gives_both_orders_one_verdict_and_tells_obvious_pairs_apart(tmp_path):
    pairs_file = tmp_path / "obvious.jsonl"
    pairs_file.write_text(OBVIOUS.read_text() + MORE.read_text())
    out = tmp_path / "scored.jsonl"
    done = run_module("judges.run", "--pairs", str(pairs_file), "--judge", "smollm2-135m-instruct", "--mode",
                      "likelihood", "--out", str(out), "--quiet", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # --quiet: the summary, no loading bar
    records, pairs = read_records(out), read_pairs(pairs_file)
    assert len(pairs) == 36 and len(records) == 2 * len(pairs)
    assert {r.judge for r in records} == {"smollm2-135m-instruct:likelihood"}  # rated apart from the judge
    assert {r.judge_family for r in records} == {"smollm"}
    right = 0
    for pair in pairs:
        ab, ba = sorted((r for r in records if r.pair_id == pair.pair_id), key=lambda r: r.meta["order"])
        assert ab.meta["likelihood"]["logprob_per_byte"] == ba.meta["likelihood"]["logprob_per_byte"][::-1]
        assert ab.prob_a == pytest.approx(1 - ba.prob_a, abs=2e-6)  # the display order changes nothing
        assert ab.winner_model == ba.winner_model
        right += ab.winner_model == "right"
    # Per token this judge named the right answer on 32 of the 36 (the word that differs thinned
    # out by the tokens both answers share, a truncated answer's few likely tokens preferred);
    # per byte on 36, its closest call 0.09 nats.
    assert right >= 35
    assert not (tmp_path / "scored.pairs.jsonl").exists()  # both orders are one verdict already
    manifest = json.loads((tmp_path / "scored.manifest.json").read_text())
    assert "GPTScore" in manifest["settings"]["scoring"] and "per byte" in manifest["settings"]["scoring"]


def test_likelihood_verdict_is_per_byte_of_text_not_per_token():
    """Two answers that share their opening, with smollm2's own sums: per token the shared
    tokens thin out the one that differs and the Sun wins by a hair (-1.899 against -1.901);
    per byte Earth does."""
    from judges.verdicts import prob_a_per_byte

    sun, earth = (-11.394, 6, len(b"We live on the Sun.")), (-9.503, 5, len(b"We live on Earth."))
    assert prob_a_per_byte(sun, earth) < 0.48  # 0.467
    assert prob_a_per_byte(earth, sun) == pytest.approx(1 - prob_a_per_byte(sun, earth))
    # Equal text lengths and token counts: the per-token comparison, unchanged.
    assert prob_a_per_byte((-4.0, 4, 20), (-8.0, 4, 20)) == pytest.approx(1 / (1 + math.exp(-1.0)))


def test_likelihood_mode_refuses_a_server_judge_before_any_work(tmp_path):
    done = run_module("judges.run", "--pairs", str(OBVIOUS), "--judge", "openai:http://127.0.0.1:9/v1#judge",
                      "--mode", "likelihood", "--out", str(tmp_path / "o.jsonl"), cwd=ROOT)
    assert done.returncode == 2
    assert "--mode likelihood" in done.stderr and "transformers" in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.model
def test_an_answer_past_the_judges_window_is_a_failure_record_not_a_hang(tmp_path, smollm):
    from judges.runner import JudgeConfig, judge_pairs
    from judges.run_files import RunFiles
    from judges.templates import get_template
    from pairlab.records import Pair

    window = smollm.model.config.max_position_embeddings
    long = Pair(pair_id="long", prompt="Say something.", model_a="x", model_b="y",
                response_a="word " * (window + 10), response_b="A short answer.")
    with RunFiles(tmp_path / "o.jsonl") as files:
        counts = judge_pairs(smollm, [long], JudgeConfig(get_template("prometheus-relative"), mode="likelihood"),
                             files, progress=False)
    assert counts.parse_failures == 2 and counts.records_written == 0
    failure = json.loads((tmp_path / "o.failures.jsonl").read_text().splitlines()[0])
    assert "context window" in failure["parse_error"]


@pytest.mark.model
def test_logprob_mode_refuses_a_judge_prompt_past_the_window_as_likelihood_mode_does(tmp_path, smollm):
    """Logprob mode read a verdict from a prompt past the judge's positions (RoPE answers from
    positions it never learned); now such a pair is a failure record, the other pair judged."""
    from judges.runner import JudgeConfig, judge_pairs
    from judges.run_files import RunFiles
    from judges.templates import get_template
    from pairlab.records import Pair

    window = smollm.model.config.max_position_embeddings
    long = Pair(pair_id="long", prompt="Say something.", model_a="x", model_b="y",
                response_a="word " * (window + 10), response_b="A short answer.")
    short = Pair(pair_id="short", prompt="What is 2 + 2?", model_a="x", model_b="y",
                 response_a="4.", response_b="7.")
    with RunFiles(tmp_path / "o.jsonl") as files:
        counts = judge_pairs(smollm, [long, short], JudgeConfig(get_template("prometheus-relative"), mode="logprob"),
                             files, progress=False)
    assert counts.parse_failures == 2 and counts.records_written == 2
    failures = [json.loads(line) for line in (tmp_path / "o.failures.jsonl").read_text().splitlines()]
    assert {f["pair_id"] for f in failures} == {"long"}
    assert all("context window" in f["parse_error"] for f in failures)
