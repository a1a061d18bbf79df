"""The report keeps every rater's ratings when a bootstrap round is degenerate, says which
control its controlled ratings are, and that its intervals are clustered by pair."""

from __future__ import annotations

from analysis.report import build_report
from analysis.report.render import render_markdown
from analysis.report.serialise import report_json
from pairlab.records import Record, make_pair_id


def _votes() -> list[Record]:
    """A wins 7 of 8 battles (one loss): the full-data MLE exists, but pair resamples that
    miss the one loss have a model that never lost."""
    rows = [("A", "B", "model_a")] * 4 + [("A", "C", "model_a")] * 3 + [("A", "C", "model_b")]
    rows += [("B", "C", w) for w in ("model_a", "model_b") * 15]
    records = []
    for k, (a, b, winner) in enumerate(rows):
        prompt, ra, rb = f"prompt {k}", f"{a} says {'word ' * (k % 7 + 1)}", f"{b} answers {'w ' * (k % 5 + 2)}"
        for voter in (1, 2):  # two people per pair, as in the data the issue audits
            records.append(Record(pair_id=make_pair_id(prompt, ra, rb), prompt=prompt, model_a=a, model_b=b,
                                  response_a=ra, response_b=rb, winner=winner, judge=f"human:{voter}"))
    return records


def test_a_model_without_losses_in_some_bootstrap_rounds_keeps_the_raters_ratings():
    report = build_report(_votes(), n_boot=200, rating_bootstrap=200, seed=0)
    ratings = report.rater("human").ratings
    assert ratings.bt is not None and ratings.controlled is not None and ratings.note is None
    assert "prior" in ratings.bt_interval and "clustered by pair_id (38 pairs)" in ratings.bt_interval
    data = report_json(report)["judges"]["human"]["ratings"]
    assert set(data) >= {"bt", "style_controlled", "style_coefficients", "bt_interval", "style_interval", "warnings"}
    assert "length_controlled" not in data
    md = render_markdown(report)
    assert "Bradley-Terry and style-controlled" in md and "not a length-only control" in md
    assert "clustered by pair_id" in md


def test_a_judge_with_no_verdict_at_all_is_named_not_dropped(tmp_path):
    """Every record of a judge failed to parse: the report says, at its top, that the judge was
    not analysed and why, instead of leaving it out without a word."""
    from analysis.report import build_report, report_json, write_report
    from pairlab.records import Record
    from report_sample import synthetic_records

    records = []
    for row in synthetic_records(40, seed=8):
        if row["judge"] == "judge-qwen":
            row = dict(row, winner=None, parse_error="no verdict in the output")
        records.append(Record.from_dict(row))
    report = build_report(records, n_boot=50, rating_bootstrap=10)
    assert report_json(report)["judges_without_verdicts"] == [{"judge": "judge-qwen", "n_records": 80}]
    paths = write_report(report, tmp_path)
    for kind in ("md", "html"):
        assert "Not analysed: judge-qwen" in paths[kind].read_text().replace("\\-", "-")
