"""One judge run in two modes (or with two templates) is two raters in the report, never one mixture."""

from __future__ import annotations

from analysis.judging.settings import setting_label, split_settings
from analysis.report import build_report
from analysis.report.serialise import report_json
from pairlab.records import Record, is_human, make_pair_id

JUDGE = "smollm2-135m-instruct"


def _records() -> list[Record]:
    """People and two judges on the same pairs; JUDGE was run twice: logprob mode always
    picks the first-shown response, generate mode always the second-shown one."""
    out = []
    for k in range(24):
        a, b = ("m1", "m2") if k % 2 else ("m2", "m1")
        prompt, ra, rb = f"prompt {k}", f"{a} says {'word ' * (k % 5 + 1)}", f"{b} answers {'w ' * (k % 4 + 2)}"
        common = dict(pair_id=make_pair_id(prompt, ra, rb), prompt=prompt, model_a=a, model_b=b, response_a=ra,
                      response_b=rb, family_a="fa" if a == "m1" else "fb", family_b="fa" if b == "m1" else "fb")
        out.append(Record(**common, winner="model_a" if k % 3 else "model_b", judge="human"))
        out.append(Record(**common, winner="model_a", judge=JUDGE, template="prometheus-relative",
                          meta={"mode": "logprob"}))
        out.append(Record(**common, winner="model_b", judge=JUDGE, template="prometheus-relative",
                          meta={"mode": "generate"}))
        out.append(Record(**common, winner="model_a" if k % 2 else "tie", judge="other-judge",
                          template="mt-bench-pair", meta={"mode": "logprob"}))
    return out


def test_a_judge_with_two_modes_is_two_raters_and_the_report_says_so():
    report = build_report(_records(), n_boot=50, rating_bootstrap=20, seed=0, panel=False)
    logprob = setting_label(JUDGE, "logprob", "prometheus-relative")
    generate = setting_label(JUDGE, "generate", "prometheus-relative")
    assert logprob == "smollm2-135m-instruct (logprob, prometheus-relative)"
    names = {r.rater for r in report.raters}
    assert names == {"human", logprob, generate, "other-judge"}  # a judge with one setting keeps its name
    # Pooled, the two runs would look like a judge without position bias (first-shown rate 0.5).
    assert report.rater(logprob).position.first_rate == 1.0
    assert report.rater(generate).position.first_rate == 0.0
    assert any(JUDGE in note and "2 settings" in note for note in report.issues)
    assert set(report_json(report)["judges"]) == names


def test_people_are_never_split_and_one_setting_changes_nothing():
    records = [r for r in _records() if r.judge != JUDGE or r.meta["mode"] == "logprob"]
    out, notes = split_settings(records, lambda r: is_human(r.judge))
    assert notes == [] and [r.judge for r in out] == [r.judge for r in records]
