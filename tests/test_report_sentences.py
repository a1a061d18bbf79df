"""Each sentence of the report's opening, fed the table it describes.

The cases are those a statistics review found false on real reports (claude-v1, gpt-4, bard and
pandalm-7b on PRD and PandaLM), rebuilt as synthetic tables: the sentence must say what the
table holds, on one scale, without reading an interval's end as the estimate.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.bias.length import LengthBias
from analysis.bias.position import PositionBias
from analysis.bias.self_preference import ControlledSelfPreference
from analysis.judging.agreement import Agreement
from analysis.judging.worth import JudgeWorth
from analysis.report.estimates import RaterReport, Ratings
from analysis.report.summary import _action, _agreement, advice, even_choice, strongest_bias


def _position(first_rate=0.5, ci=(0.47, 0.53)) -> PositionBias:
    return PositionBias(n_records=1000, n_decisive=900, first_wins=round(900 * first_rate), first_rate=first_rate,
                        first_rate_ci=ci, n_swapped_pairs=0, n_consistent=0, n_first_biased=0, n_second_biased=0,
                        n_other_inconsistent=0, consistency=None, consistency_ci=None, preference_fairness=None)


def _length(coef=0.0, coef_ci=(-0.1, 0.1), controlled=0.5, controlled_ci=(0.47, 0.53), longer=0.5) -> LengthBias:
    return LengthBias(n_decisive_unequal=800, longer_wins=round(800 * longer), longer_rate=longer,
                      longer_rate_ci=(longer - 0.03, longer + 0.03), coef=coef, coef_ci=coef_ci, coef_p=None,
                      n_fit=800, length_sd=300.0, first_rate_controlled=controlled,
                      first_rate_controlled_ci=controlled_ci)


def _agree(with_ties=0.6, without_ties=0.7, n=1000, n_without=800, kappa=0.3) -> Agreement:
    return Agreement("human", with_ties, (with_ties - 0.03, with_ties + 0.03), without_ties,
                     (without_ties - 0.03, without_ties + 0.03), kappa, n, n_without, n // 3, n_without // 3,
                     cohen_kappa_ci=(kappa - 0.05, kappa + 0.05))


def _rater(name="judge", position=None, length=None, controlled=None, agreement=None, family="openai") -> RaterReport:
    return RaterReport(rater=name, is_human=name == "human", family=family, n_records=1000, n_parse_errors=0,
                       position=position or _position(), length=length or _length(), length_curve=(),
                       self_family=None, agreement=agreement or _agree(), ranking=None,
                       ratings=Ratings(None, None, None), reference="human", controlled=controlled)


def _controlled(coef: float, ci: tuple[float, float]) -> ControlledSelfPreference:
    return ControlledSelfPreference(coef=coef, ci=ci, p=0.001, n_rows=900, n_judges=5, n_self_rows=300)


def _worth(ratio: float, ci: tuple[float, float], width_ratios: dict[str, float]) -> JudgeWorth:
    per_model = pd.DataFrame({"model": list(width_ratios), "lam": 0.5, "width_ratio": list(width_ratios.values())})
    return JudgeWorth(judge="judge", design="people on a random 20% of the judge's pairs", n_human=600,
                      n_human_pairs=200, n_judge=1000, lam=0.5, effective_votes=600 * ratio,
                      effective_ci=(600 * ci[0], 600 * ci[1]), ratio=ratio, ratio_ci=ci, curve=(),
                      ratings=pd.DataFrame(), lam_all=0.5, n_dropped_votes=0, per_model=per_model)


def test_the_position_sentence_gives_the_share_of_the_side_it_names():
    """claude-v1 on PRD: first-shown rate 0.362, read as "picks the second-shown response in 36%"."""
    judge = _rater(position=_position(0.362, (0.33, 0.39)), length=_length(controlled=0.34, controlled_ci=(0.30, 0.38)))
    found = strongest_bias(judge)
    assert found.kind == "position"
    assert "picks the second-shown response in 64% [61, 67]" in found.text
    assert "in 36%" not in found.text


def test_biases_are_compared_on_one_scale():
    """gpt-4 on PRD: its raw first-shown rate is diluted by clear pairs (about 10 points), its self term
    (+0.70 log-odds) is 17 points on an even choice, and its position lean between equally strong answers
    is 24 points: on one scale the position lean is the strongest."""
    judge = _rater(position=_position(0.40, (0.37, 0.43)), length=_length(controlled=0.26, controlled_ci=(0.22, 0.30)),
                   controlled=_controlled(0.70, (0.30, 1.10)))
    found = strongest_bias(judge)
    assert round(100 * even_choice(0.70)) == 17
    assert found.kind == "position", found
    assert abs(found.size) > abs(even_choice(0.70))
    assert "24 points [20, 28] toward the second-shown" in found.text


def test_a_length_gap_from_people_is_on_the_same_scale_as_the_rest():
    people = _rater("human", length=_length(coef=0.80, coef_ci=(0.59, 1.01), longer=0.67))
    judge = _rater(length=_length(coef=0.32, coef_ci=(0.13, 0.51), longer=0.66),
                   controlled=_controlled(0.20, (0.05, 0.35)))
    found = strongest_bias(judge, people)
    assert found.kind == "length" and round(100 * found.size) == round(100 * even_choice(0.32 - 0.80))
    assert "less length preference than people by 12 points" in found.text


def test_every_lean_s_number_sits_inside_its_own_interval_whichever_way_it_leans():
    """pandalm-7b on PandaLM read "less length preference than people by 12 points [-22, -0.5]", and a
    judge leaning to the second-shown answer "24 points [-28, -20]": a size next to the signed
    interval, the number outside its own interval. Fed a table leaning each way, every sentence's
    "N points [lo, hi]" must hold lo <= N <= hi, and its words must name the direction."""
    from dataclasses import replace

    people = _rater("human", length=_length(coef=0.80, coef_ci=(0.59, 1.01), longer=0.67))
    cases = {  # the table, the people beside it, the kind of the finding, the words naming its direction
        "second-shown": (_rater(position=_position(0.40, (0.37, 0.43)),
                                length=_length(controlled=0.26, controlled_ci=(0.22, 0.30))), None, "position",
                         "toward the second-shown"),
        "first-shown": (_rater(position=_position(0.60, (0.57, 0.63)),
                               length=_length(controlled=0.74, controlled_ci=(0.70, 0.78))), None, "position",
                        "toward the first-shown"),
        "less than people": (_rater(length=_length(coef=0.32, coef_ci=(0.13, 0.51), longer=0.66)), people, "length",
                             "less length preference"),
        "more than people": (_rater(length=_length(coef=1.40, coef_ci=(1.20, 1.60), longer=0.75)), people, "length",
                             "more length preference"),
        "shorter": (_rater(length=_length(coef=-0.60, coef_ci=(-0.80, -0.40), longer=0.40)), None, "length",
                    "toward the shorter"),
        "own family": (_rater(controlled=replace(_controlled(0.70, (0.30, 1.10)), flagged=True)), None,
                       "self-family", "leans toward its own family"),
        "away from own family": (_rater(controlled=replace(_controlled(-0.70, (-1.10, -0.30)), flagged=True)),
                                 None, "self-family", "leans away from its own family"),
    }
    for label, (judge, beside, kind, words) in cases.items():
        found = strongest_bias(judge, beside)
        assert found is not None and found.kind == kind, (label, found)
        assert words in found.text, (label, found.text)
        number, lo, hi = (float(x) for x in re.search(r"(\d+(?:\.\d+)?) points \[([-\d.]+), ([-\d.]+)\]",
                                                        found.text).groups())
        assert lo <= number <= hi and 0 < lo, (label, found.text)
        assert number == round(abs(100 * found.size)), (label, found.text)


def test_an_uncertain_worth_is_not_called_little():
    """pandalm-7b: 1.25x [0.99, 1.58], narrowing all five models by 8-12%, read as "adds little"."""
    w = _worth(1.25, (0.99, 1.58), {"bloom-7b": 0.88, "cerebras": 0.91, "llama-7b": 0.89, "opt-7b": 0.92,
                                    "pythia": 0.88})
    text = _action("pandalm-7b", w, None)
    assert "adds little" not in text
    assert "uncertain" in text and "between 0.99x and 1.58x" in text and "estimate 1.25x" in text
    assert "narrows 5 of 5 models' intervals, by 8-12%" in text
    assert advice(w).startswith("worth uncertain")


def test_a_worth_whose_interval_stays_near_one_adds_little():
    w = _worth(1.02, (0.97, 1.07), {"a": 0.99, "b": 1.0})
    assert "adds little" in _action("j", w, None) and advice(w).startswith("adds little")


def test_the_saving_is_said_per_model_and_an_average_carried_by_one_model_says_so():
    """gpt-4 on PRD: "you need about 22% fewer votes", an average carried by claude-v1 (0.68x width,
    54% fewer votes) while four models gain 0-2%."""
    w = _worth(1.28, (1.05, 1.55), {"claude-v1": 0.68, "gpt-3.5-turbo": 0.99, "vicuna": 1.0, "alpaca": 0.995,
                                    "llama": 0.992})
    text = _action("gpt-4", w, None)
    assert "claude-v1 54%" in text and "vicuna 0%" in text
    assert "carried by claude-v1: the other models save 0-2%" in text


def test_the_agreement_line_leads_with_ties_counted_and_gives_kappa():
    """bard: 76% on the 35% of pairs it judged decisively; 32% with ties, people 52%."""
    people = _rater("human", agreement=_agree(0.52, 0.80, n=3000, n_without=2000, kappa=0.35), family=None)
    bard = _rater("bard", agreement=_agree(0.32, 0.76, n=1000, n_without=350, kappa=0.12))
    text, data = _agreement(bard, people)
    head = text.split(";")[0]
    assert re.match(r"Agrees with people on 32% \[29, 35\] of vote pairs, ties counted \(Cohen's kappa 0\.12", head)
    assert "76%" not in head
    assert "on the 35% of vote pairs where neither side tied, on 76%" in text
    assert data["cohen_kappa"] == 0.12 and data["cohen_kappa_ci"] == bard.agreement.cohen_kappa_ci


def test_a_worth_with_no_upper_end_says_at_least_and_renders_in_every_format(tmp_path):
    """A sparse design: people's votes alone could not rate the models in a few resamples, so the
    worth's interval has no upper end (report.json: null). The sentence says "at least", the tables
    "[lo, ∞)", and nothing prints "inf" or fails to render."""
    from analysis.report.formatting import fmt_ci, num
    from analysis.report.render import _ci_filter, _times, _worth_ci
    from analysis.report.summary import _worth_line

    w = _worth(1.2, (0.87, float("inf")), {"a": 0.9, "b": 0.95})
    text = _action("judge", w, None)
    assert "at least 0.87x" in text and "inf" not in text
    assert advice(w) == "worth uncertain: use beside people's votes, plan as if it saved none"
    line = _worth_line(w)
    assert "[0.87, ∞)" in line and "[522, ∞)" in line and "inf" not in line
    stored = num(w.ratio_ci)  # as report.json holds it
    assert stored == [0.87, None]
    assert _worth_ci(stored, 2) == "[0.87, ∞)" == fmt_ci(w.ratio_ci, 2)
    assert _ci_filter(stored, 2) == "-"  # elsewhere a null end is a missing number, not an open one
    assert fmt_ci((0.5, float("nan")), 2) == "[0.50, nan]"
    assert _times(1.2, stored) == "1.20x [0.87, ∞)"


def test_the_worth_section_says_what_its_bootstrap_resamples():
    """The worth's rounds draw whole prompts when the report clusters by prompt (PandaLM: 170
    prompts); the section said "whole pairs" whatever the clustering."""
    from analysis.report.worth_section import read

    assert "resampling whole prompts" in read("clustered by prompt (170 prompts)")
    assert "whole pairs" not in read("clustered by prompt (170 prompts)")
    assert "resampling whole pairs" in read("clustered by pair_id (999 pairs)")
    assert "resampling whole pairs" in read("every vote independent (no pair_id)")


def test_an_interval_end_just_short_of_no_bias_is_not_printed_as_zero():
    """PandaLM-7B's length gap from people was printed "-12 [-22, -0]" in the opening table: an
    interval that excludes no bias read as one that reaches it."""
    from analysis.report.formatting import points_ci
    from analysis.report.render import _bias_cell

    assert points_ci((-0.22, -0.003)) == "[-22, -0.3]" and points_ci((-0.2249, 0.0)) == "[-22, +0]"
    assert points_ci((0.004, 0.31)) == "[+0.4, +31]"
    block = {"strongest_bias": {"kind": "length", "size": -0.1204, "ci": [-0.2195, -0.0031]}}
    assert _bias_cell(block) == "length -12 [-22, -0.3]"
