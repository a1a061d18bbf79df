"""Meta-metrics say the same thing wherever they are printed: the judge's leaderboard and the
debiasing variants' columns carry one note when there are too few models to rank judges."""

from __future__ import annotations

import numpy as np

from analysis.judging.meta_metrics import MIN_MODELS, RANKING_MODELS, few_models_note


def test_one_note_from_the_withholding_threshold_to_the_ranking_one():
    assert few_models_note(RANKING_MODELS) is None
    assert all("too few models to rank judges" in few_models_note(n) for n in range(MIN_MODELS, RANKING_MODELS))


def test_the_variants_table_carries_the_leaderboards_note_on_five_models():
    from analysis.report import build_report, render_markdown
    from pairlab.records import Record

    rng = np.random.default_rng(0)
    names = ["m0", "m1", "m2", "m3", "m4"]
    strength = np.array([0.8, 0.4, 0.0, -0.4, -0.8])
    records = []
    for k in range(240):
        i, j = rng.choice(5, 2, replace=False)
        texts = (f"answer {k} of {names[i]}", f"answer {k} of {names[j]} " + "x" * int(rng.integers(0, 40)))
        p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
        for judge in ("human:a", "judge-x"):
            records.append(Record(pair_id=f"p{k}", prompt=f"q{k}", model_a=names[i], model_b=names[j],
                                  response_a=texts[0], response_b=texts[1], judge=judge,
                                  winner="model_a" if rng.random() < p else "model_b"))
    report = build_report(records, n_boot=50, rating_bootstrap=10, panel=False)
    judge = next(r for r in report.raters if r.rater == "judge-x")
    assert judge.leaderboard.n_models == 5 and few_models_note(5) in judge.leaderboard.note
    md = render_markdown(report)
    variants = md[md.index("## Debiasing variants"):]
    variants = variants[:variants.index("\n## ", 5)] if "\n## " in variants[5:] else variants
    assert "| judge-x |" in variants and few_models_note(5) in variants, variants
