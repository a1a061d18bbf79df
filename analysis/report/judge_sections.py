"""The report's "judging the judges" sections: report.json pieces, and the templates' rows read back from them.

Strength-controlled self-preference (:mod:`analysis.bias.self_preference`), the judge's
leaderboard against the reference's (:mod:`analysis.judging.meta_metrics`), the debiasing
variants (:mod:`analysis.judging.variants`), the judge panel (:mod:`analysis.judging.panel`) and the
annotator cards (:mod:`analysis.judging.annotator`).
"""

from __future__ import annotations

from dataclasses import asdict

from analysis.judgment_table import HUMAN_RATER
from analysis.report.estimates import RaterReport
from analysis.report.formatting import duration, fmt as _fmt, fmt_ci as _fmt_ci, num as _num
from analysis.bias.self_preference import SPECIFICATION
from analysis.judging.meta_metrics import few_models_note
from analysis.judging.variants import BEST_RULE, VARIANTS

__all__ = ["controlled_json", "judging_context", "judging_json"]

READ_WHICH = (
    "Read the controlled term. The raw gap compares a judge's agreement with the reference on its own family's "
    "picks and on other picks, so it rises with its family's strength: when the reference picks a strong family's "
    "response it is usually right and every judge agrees. The controlled term is fitted for each judge on its own "
    "(specification below the table), so a judge twice as sharp as people, or three times noisier, shows it in its "
    "slope, not in its self term. The self term of a family with one model is, in effect, the judge's rating of that "
    "model against the reference's, so it carries the reference's uncertainty too (it is in the interval)."
)


_METRIC_NAMES = {"with_ties": "S1", "without_ties": "S2", "spearman": "Spearman", "separability": "separability",
                 "agreement_ci": "agreement with confidence", "brier": "Brier"}


def _plain(obj) -> dict | None:
    return None if obj is None else {k: _num(v) for k, v in asdict(obj).items()}


def controlled_json(r: RaterReport) -> dict | None:
    """``judges[j].self_family.controlled``: coef, ci, p, n_rows, n_judges (+ n_self_rows, note)."""
    c = r.controlled
    if c is None:
        return None
    return {"coef": _num(c.coef), "ci": _num(c.ci), "p": _num(c.p), "n_rows": c.n_rows, "n_judges": c.n_judges,
            "n_self_rows": c.n_self_rows, "note": c.note, "reference": r.reference,
            "ci_by_prompt": _num(c.ci_by_prompt), "slope": _num(c.slope), "slope_ci": _num(c.slope_ci),
            "position": _num(c.position), "position_ci": _num(c.position_ci), "n_pairs": c.n_pairs,
            "cluster": c.cluster, "length": _num(c.length), "length_ci": _num(c.length_ci),
            "style": list(c.style),
            "categories": list(c.categories), "own_model": _num(c.own_model), "own_model_ci": _num(c.own_model_ci),
            "siblings": _num(c.siblings), "siblings_ci": _num(c.siblings_ci), "specification": SPECIFICATION,
            "lean": _num(c.lean), "lean_ci": _num(c.lean_ci), "shared": _num(c.shared), "shared_ci": _num(c.shared_ci),
            "compared_with": list(c.compared_with), "p_holm": _num(c.p_holm), "flagged": c.flagged,
            "n_clusters": c.n_clusters, "detectable": _num(c.detectable), "slope_check_p": _num(c.slope_check_p),
            "caveats": list(c.caveats)}


def _variant_json(v) -> dict:
    ag, lb = v.agreement, v.leaderboard
    return {
        "with_ties": _num(ag.with_ties) if ag else None,
        "without_ties": _num(ag.without_ties) if ag else None,
        "spearman": _num(lb.spearman) if lb else None,
        "brier": _num(lb.brier) if lb else None,
        "with_ties_ci": _num(ag.with_ties_ci) if ag else None,
        "without_ties_ci": _num(ag.without_ties_ci) if ag else None,
        "n": ag.n if ag else None,
        "kendall": _num(lb.kendall) if lb else None,
        "separability": _num(lb.separability) if lb else None,
        "agreement_ci": _num(lb.agreement_ci) if lb else None,
        **{f"{m}_interval": _num((lb.intervals or {}).get(m)) if lb else None
           for m in ("spearman", "separability", "agreement_ci", "brier")},
        "note": "; ".join(filter(None, [v.note, lb.note if lb else None])) or None,
        "ratings": None if v.ratings is None else [
            {"model": m, "rating": _num(r), "lower": _num(lo), "upper": _num(hi)}
            for m, r, lo, hi in v.ratings[["model", "rating", "lower", "upper"]].itertuples(index=False)
        ],
    }


def _variant_note(r: RaterReport) -> str | None:
    """The note the judge's leaderboard carries when its variants' leaderboard metrics are printed
    on too few models (:func:`analysis.judging.meta_metrics.few_models_note`): the same numbers, the same note."""
    shown = [v.leaderboard.n_models for v in r.variants if v.leaderboard is not None and v.leaderboard.spearman is not None]
    return few_models_note(min(shown)) if shown else None


def judging_json(r: RaterReport) -> dict:
    """``leaderboard``, ``variants``, ``best_variant``, ``annotator`` (and ``panel_members``) of one rater."""
    lb = r.leaderboard
    empty = lb is not None and lb.spearman is None and lb.separability is None
    out = {
        "leaderboard": None if lb is None or empty else {
            "n_models": lb.n_models, "spearman": _num(lb.spearman), "kendall": _num(lb.kendall),
            "separability": _num(lb.separability), "agreement_ci": _num(lb.agreement_ci), "brier": _num(lb.brier),
            "intervals": {m: _num(ci) for m, ci in (lb.intervals or {}).items()} or None,
            "interval_method": lb.interval_method, "n_prompts": lb.n_prompts,
            "ceiling": None if lb.ceiling is None else {m: _num(v) for m, v in lb.ceiling.items()},
            "vs": r.reference, "n_pairs": lb.n_pairs, "n_separated_reference": lb.n_separated_reference,
            "note": lb.note,
        },
        # Why there is no leaderboard (placeholder models, too few models, no reference table).
        "leaderboard_note": (lb.note if lb is not None else None) if empty or lb is None else None,
        "variants": {v.name: _variant_json(v) for v in r.variants} or None,
        "best_variant": r.best_variant,  # metric -> variant, or None: no variant clearly better
        "best_variant_rule": BEST_RULE if r.best_variant is not None else None,
        "annotator": _plain(r.annotator),
        "reference": r.reference,  # the rater its agreement, self-preference and leaderboard are measured against
        "variant_note": _variant_note(r),
    }
    if r.panel_members:
        out["panel_members"] = list(r.panel_members)
    if r.panel is not None:
        out["panel"] = _plain(r.panel)
    return out


_NO_FAMILY = "the panel has no family of its own (its members' families are in the panel section)"
_NO_REFERENCE = "no reference rater: no people's votes and no other judge on the same pairs"
_BOARD_METRICS = ("spearman", "kendall", "separability", "agreement_ci", "brier")
_VARIANT_METRICS = ("with_ties", "without_ties", "spearman", "separability", "agreement_ci", "brier")


def _controlled_row(name: str, j: dict) -> dict:
    """Self-preference, raw and with strength held fixed (``j``: the judge's report.json entry)."""
    sf, c = j["self_family"], j["self_family"]["controlled"]
    raw = {"rater": name, "family": j["family"] or "-", "reference": j.get("reference") or "-",
           "raw": _fmt(sf["delta"]), "raw_ci": _fmt_ci(sf["ci"])}
    if c is None:
        return {**raw, **dict.fromkeys(("coef", "ci", "p", "ci_prompt", "slope", "n_rows", "n_judges"), "-"),
                "note": _NO_FAMILY if j.get("panel_members") else _NO_REFERENCE}
    return {
        **raw, "coef": _fmt(c["coef"]), "ci": f"{_fmt_ci(c['ci'])} by {c['cluster']}" if c["ci"] else "-", "p": _fmt(c["p"], 4),
        "ci_prompt": _fmt_ci(c["ci_by_prompt"]) if c["ci_by_prompt"] else "-",
        "slope": f"{_fmt(c['slope'])} {_fmt_ci(c['slope_ci'])}" if c["slope"] is not None else "-",
        "n_rows": c["n_rows"], "n_judges": c["n_judges"], "note": c["note"], "caveats": c.get("caveats") or [],
    }


def _leaderboard_row(name: str, j: dict) -> dict:
    """The judge's leaderboard against the reference's."""
    lb = j["leaderboard"]
    if lb is None:  # no reference leaderboard, or one with nothing to compare (its note says why)
        return {"rater": name, "vs": j.get("reference") or "-", "n_models": "-",
                **dict.fromkeys(_BOARD_METRICS, "-"), **{f"{m}_ci": "" for m in _BOARD_METRICS},
                "note": j.get("leaderboard_note") or "no reference leaderboard", "method": None}
    iv = lb["intervals"] or {}
    return {
        "rater": name, "vs": lb["vs"] or "-", "n_models": lb["n_models"],
        **{m: _fmt(lb[m]) for m in _BOARD_METRICS},
        **{f"{m}_ci": _fmt_ci(iv.get(m)) if iv.get(m) else "" for m in _BOARD_METRICS},
        "note": "; ".join(filter(None, [lb["note"], _ceiling_note(lb["ceiling"])])) or None,
        "method": lb["interval_method"],
    }


def _ceiling_note(ceiling: dict | None) -> str | None:
    """The reference against itself on random halves of its prompts, where measured."""
    if not ceiling:
        return None
    return ("the reference against itself on random halves of its prompts (the ceiling): "
            + ", ".join(f"{m} {_fmt(v)}" for m, v in ceiling.items() if v is not None))


def _variant_rows(name: str, j: dict) -> list[dict]:
    """One row per debiasing variant, its best metrics marked."""
    best = j["best_variant"] or {}
    rows = []
    for variant, row in (j["variants"] or {}).items():
        cells = []
        for m in _VARIANT_METRICS:
            ci = row.get(f"{m}_ci") or row.get(f"{m}_interval")
            cells.append((_fmt(row[m]), _fmt_ci(ci) if row[m] is not None else "", best.get(m) == variant))
        rows.append({"rater": name, "name": variant, "description": VARIANTS[variant], "cells": cells,
                     "note": row["note"]})
    return rows


def _card_row(name: str, a: dict) -> dict:
    """The annotator card (``a``: report.json's ``annotator``)."""
    return {
        "rater": name, "structure": _fmt(a["prefers_structure"]), "structure_ci": _fmt_ci(a["prefers_structure_ci"]),
        "n_structure": a["n_structure"], "parse": _fmt(a["parse_failure_rate"]),
        "parse_ci": _fmt_ci(a["parse_failure_ci"]), "n_outputs": a["n_outputs"],
        "seconds": duration(a["seconds_per_1000"]), "note": a["note"],
    }


def _with_ci(value, ci) -> str:
    return "-" if value is None else f"{_fmt(value)} {_fmt_ci(ci)}"


def _panel_view(ps: dict | None) -> dict | None:
    """The judge panel's summary (``ps``: the panel's report.json ``panel``), or None."""
    if ps is None:
        return None
    return {
        "members": ", ".join(f"{m} ({f or 'family unknown'})" for m, f in ps["members"]),
        "ties": f"{_fmt(ps['tie_rate'])} {_fmt_ci(ps['tie_rate_ci'])}",
        "people_ties": f"{_fmt(ps['reference_tie_rate'])} {_fmt_ci(ps['reference_tie_rate_ci'])}",
        "best": ps["best_member"] or "-",
        "s1": _with_ci(ps["s1_difference"], ps["s1_difference_ci"]),
        "s2": _with_ci(ps["s2_difference"], ps["s2_difference_ci"]),
        "own": ", ".join(f"{model} (judged by {m})" for model, m in ps["own_family_models"]) or "none",
        "note": ps["note"],
    }


def _unclear(judges: dict) -> list[dict]:
    """Judges for which some metric has no single best variant."""
    return [{"rater": name, "metrics": [_METRIC_NAMES[m] for m, b in j["best_variant"].items() if b is None]}
            for name, j in judges.items() if j["best_variant"] and any(b is None for b in j["best_variant"].values())]


def judging_context(judges: dict) -> dict:
    """Rows for the templates' judging sections, from report.json's ``judges``."""
    llm = {name: j for name, j in judges.items() if name != HUMAN_RATER}
    panel = next((name for name, j in judges.items() if j.get("panel_members")), None)
    return {"judging": {
        "controlled": [_controlled_row(name, j) for name, j in llm.items()],
        "leaderboards": [_leaderboard_row(name, j) for name, j in llm.items()],
        "variants": [row for name, j in llm.items() for row in _variant_rows(name, j)],
        "cards": [_card_row(name, j["annotator"]) for name, j in judges.items() if j["annotator"] is not None],
        "read_which": READ_WHICH, "specification": SPECIFICATION, "best_rule": BEST_RULE,
        "unclear": _unclear(llm),
        "variant_notes": [{"rater": name, "note": j["variant_note"]} for name, j in llm.items() if j.get("variant_note")],
        "panel": judges[panel]["panel_members"] if panel else None,
        "panel_name": panel,
        "panel_view": _panel_view(judges[panel].get("panel")) if panel else None,
    }}
