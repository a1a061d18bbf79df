"""Order-averaged verdicts (judges.run's OUT.pairs.jsonl) and the opening block's warning for a
judge whose verdicts follow the display order (issue 30, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.report import build_report
from analysis.report.summary import FOLLOWS_POSITION, summary_blocks
from judges.averaged import order_averaged
from pairlab.records import Pair, Record, make_pair_id, read_pairs, read_records
from support import run_module

ROOT = Path(__file__).resolve().parents[1]
OBVIOUS = ROOT / "data" / "obvious_pairs.jsonl"


def _pair(k: int) -> Pair:
    prompt, good, bad = f"question {k}", f"a right answer {k}", f"wrong {k}"
    return Pair(pair_id=make_pair_id(prompt, good, bad), prompt=prompt, model_a="right", model_b="wrong",
                response_a=good, response_b=bad)


def _shown(pair: Pair, order: str, judge: str, prob_a: float) -> Record:
    """A judge record of ``pair`` in ``order`` (model_a = the first shown) with this prob_a."""
    a, b = ("a", "b") if order == "ab" else ("b", "a")
    first, second = getattr(pair, f"model_{a}"), getattr(pair, f"model_{b}")
    return Record(pair_id=pair.pair_id, prompt=pair.prompt, model_a=first, model_b=second,
                  response_a=getattr(pair, f"response_{a}"), response_b=getattr(pair, f"response_{b}"),
                  winner="model_a" if prob_a > 0.5 else "model_b", judge=judge, prob_a=prob_a,
                  meta={"order": order, "mode": "logprob", "template_sha256": "t"})


def test_the_mean_of_both_orders_keeps_what_a_position_following_judge_knows():
    # Always "A" (prob_a above 0.5 in both orders), a little surer when the right answer is first.
    pairs = [_pair(k) for k in range(4)]
    records = [r for p in pairs for r in (_shown(p, "ab", "j", 0.53), _shown(p, "ba", "j", 0.51))]
    averaged = order_averaged(records, pairs)
    assert [r.pair_id for r in averaged] == [p.pair_id for p in pairs]
    for r, p in zip(averaged, pairs):
        assert (r.model_a, r.model_b, r.response_a) == (p.model_a, p.model_b, p.response_a)  # as PAIRS lists them
        assert r.prob_a == pytest.approx((0.53 + (1 - 0.51)) / 2)
        assert r.winner == "model_a" and r.extra["consistent"] is False
        assert r.judge == "j:order-averaged"
    # A pair seen in one order only has no order-averaged verdict.
    assert order_averaged(records[:1], pairs[:1]) == []


def _position_followers(n_pairs: int = 8) -> list[Record]:
    """Two judges that always pick the first-shown response, each pair in both orders."""
    pairs = [_pair(k) for k in range(n_pairs)]
    return [_shown(p, order, judge, 0.9) for judge in ("j1", "j2") for p in pairs for order in ("ab", "ba")]


def test_a_position_following_judge_and_a_panel_of_two_are_told_not_to_be_used():
    blocks = {b.judge: b for b in summary_blocks(build_report(_position_followers(), n_boot=50, rating_bootstrap=20))}
    for name in ("j1", "j2", "panel"):
        text = " ".join(blocks[name].lines)
        assert FOLLOWS_POSITION in text, name
        assert "Strongest bias: none detected" not in text, name
        assert blocks[name].action.startswith("Do not use"), name


@pytest.mark.model
def test_judges_run_writes_order_averaged_verdicts_and_refuses_a_folder_as_out(tmp_path):
    out = tmp_path / "verdicts.jsonl"
    run = ["judges.run", "--pairs", str(OBVIOUS), "--judge", "smollm2-135m-instruct", "--quiet"]
    done = run_module(*run, "--out", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    records, pairs = read_records(out), read_pairs(OBVIOUS)
    lines = [json.loads(x) for x in (tmp_path / "verdicts.pairs.jsonl").read_text().splitlines()]
    assert [x["pair_id"] for x in lines] == [p.pair_id for p in pairs]
    for line, pair in zip(lines, pairs):
        assert (line["model_a"], line["model_b"]) == (pair.model_a, pair.model_b)
        mine = [r for r in records if r.pair_id == pair.pair_id]
        listed_first = [r.prob_a if r.meta["order"] == "ab" else 1 - r.prob_a for r in mine]
        assert line["prob_a"] == pytest.approx(sum(listed_first) / 2, abs=1e-6)
        assert line["winner"] == ("model_a" if line["prob_a"] > 0.5 else "model_b")
        assert line["consistent"] == (len({r.winner_model for r in mine}) == 1)
    assert "order-averaged verdict(s)" in done.stderr

    folder = run_module(*run, "--out", str(tmp_path), cwd=ROOT)
    assert folder.returncode == 2 and "Traceback" not in folder.stderr
    assert "is a folder" in folder.stderr.splitlines()[-1]


def test_the_position_figure_has_no_empty_row_for_the_panel():
    """Issue 30, item 11: the panel never saw a display order, and its row stood empty."""
    from analysis.report.figures import position_figure

    report = build_report(_position_followers(), n_boot=50, rating_bootstrap=20)
    assert "panel" in [r.rater for r in report.raters]
    rows = [t.get_text() for t in position_figure(report).axes[0].get_yticklabels()]
    assert rows == ["j1", "j2"]


@pytest.mark.parametrize("suffix", [":order-averaged", ":likelihood"])
def test_verdicts_no_display_order_swayed_get_no_position_claim(suffix):
    # Generated pairs list the models in --models order, so the listed first model is always the
    # same one; a judge that prefers it is no position-biased judge when no order could sway it.
    records = []
    for k in range(40):
        pair = Pair(pair_id=make_pair_id(f"q{k}", f"good {k}", f"bad {k}"), prompt=f"q{k}", model_a="strong",
                    model_b=f"weak{k % 3}", response_a=f"good {k}", response_b=f"bad {k}")
        prob = 0.8 if k % 10 else 0.3
        records.append(Record(pair_id=pair.pair_id, prompt=pair.prompt, model_a=pair.model_a, model_b=pair.model_b,
                              response_a=pair.response_a, response_b=pair.response_b, judge="j" + suffix,
                              winner="model_a" if prob > 0.5 else "model_b", prob_a=prob,
                              meta={"order": "ab", "mode": "logprob", "template_sha256": "t"}))
    report = build_report(records, n_boot=50, rating_bootstrap=20)
    rater = next(r for r in report.raters if r.rater == "j" + suffix)
    assert rater.position.first_rate is None and not rater.position.display_order
    block = next(b for b in summary_blocks(report) if b.judge == "j" + suffix)
    text = " ".join(block.lines)
    assert "first-shown" not in text and "Position consistency: no pair was judged in both orders" not in text
    assert "Position: none to measure" in text
