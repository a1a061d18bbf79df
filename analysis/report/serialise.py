"""``report.json``: the report as plain JSON (finite numbers or null, never NaN)."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from analysis.report.estimates import BiasReport
from analysis.report.formatting import no_order_note, num as _num
from analysis.report.judge_sections import controlled_json, judging_json
from analysis.report.summary import SummaryBlock, bias_scale, summary_blocks, summary_json
from analysis.report.worth_section import worth_json
from analysis.stats import wilson_interval

__all__ = ["KAPPA_CATEGORIES", "report_json"]

KAPPA_CATEGORIES = ("each pair oriented by model name: the alphabetically first model wins, the other model wins, "
                    "tie")


def _plain(obj) -> dict:
    return {k: _num(v) if not isinstance(v, dict) else _plain_dict(v) for k, v in asdict(obj).items()}


def _plain_dict(d: dict) -> dict:
    return {k: _num(v) for k, v in d.items()}


def _frame_records(frame: pd.DataFrame | None):
    if frame is None:
        return None
    return [
        {k: None if v is pd.NA else _num(v) if not isinstance(v, str) else v for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def order_warning(position) -> str | None:
    """Why a first-shown win rate also measures the model order, where display order was not randomised."""
    order = position.order
    if order is None or order.randomised is not False:
        return None
    never = f"; never shown first: {', '.join(order.never_first)}" if order.never_first else ""
    return (
        f"display order is not randomised within model pairs (only {order.minority_share:.0%} of records in their "
        f"model pair's less common order{never}): the first-shown win rate measures 'the earlier-listed model wins' "
        "as much as position; read the rate with model strengths held fixed"
    )


def report_json(report: BiasReport, summary: tuple[SummaryBlock, ...] | None = None) -> dict:
    """The ``report.json`` document: its contract's keys first (docs/architecture.md), the details
    beside them (``summary``: the report's summary blocks where the caller has them already)."""
    judges = {}
    worth = {w.judge: worth_json(w) for w in report.worth}
    for r in report.raters:
        pos, ln, sf, ag = r.position, r.length, r.self_family, r.agreement
        judges[r.rater] = {
            "n_records": r.n_records,
            "n_parse_errors": r.n_parse_errors,
            "n_suspect_verdicts": r.n_suspect,  # left out of "agreement"
            "family": r.family,
            "position": {
                "first_rate": _num(pos.first_rate),
                "first_rate_ci": _num(pos.first_rate_ci),
                "consistency": _num(pos.consistency),
                "n_swapped_pairs": pos.n_swapped_pairs,
                "order_randomised": pos.order.randomised if pos.order else None,
                "display_order": True,
                "order_warning": order_warning(pos),
                # The position term of the length model: strengths and length held fixed.
                "first_rate_controlled": _num(ln.first_rate_controlled),
                "first_rate_controlled_ci": _num(ln.first_rate_controlled_ci),
                "details": _plain(pos),
            },
            "length": {
                "longer_rate": _num(ln.longer_rate),
                "longer_rate_ci": _num(ln.longer_rate_ci),
                "coef": _num(ln.coef),
                "details": _plain(ln),
                "curve": [_plain(b) for b in r.length_curve],
            },
            "self_family": {
                "delta": _num(sf.delta) if sf else None,
                "ci": _num(sf.ci) if sf else None,
                "reference": sf.reference if sf else None,
                "verdicts": sf.verdicts if sf else None,
                "details": _plain(sf) if sf else None,
                "controlled": controlled_json(r),
            },
            "agreement": {
                "vs": ag.vs,
                "with_ties": _num(ag.with_ties),
                "without_ties": _num(ag.without_ties),
                "cohen_kappa": _num(ag.cohen_kappa),
                "cohen_kappa_ci": _num(ag.cohen_kappa_ci),
                "n": ag.n,
                "n_without_ties": ag.n_without_ties,
                "n_items": ag.n_items,
                "n_items_without_ties": ag.n_items_without_ties,
                "kappa_categories": KAPPA_CATEGORIES,
                "details": _plain(ag),
                # The same measures on the items the human-human baseline rests on (2+ voters).
                "same_pairs": _plain(r.agreement_same_pairs) if r.agreement_same_pairs else None,
            },
            "ranking": _plain(r.ranking) if r.ranking else None,
            "ratings": {
                "bt": _frame_records(r.ratings.bt),
                # Chatbot Arena style control (length and markdown), not a length-only control.
                "style_controlled": _frame_records(r.ratings.controlled),
                "style_coefficients": _frame_records(r.ratings.style),
                "bt_interval": r.ratings.bt_interval,
                "style_interval": r.ratings.style_interval,
                "warnings": list(r.ratings.warnings),
                "note": r.ratings.note,
                "weighting": r.ratings.weighting,
                "win_rates": None if r.ratings.win_rates is None else {
                    "baseline": r.ratings.baseline, "rows": _frame_records(r.ratings.win_rates)},
            },
            **judging_json(r),
            "ppi": worth.get(r.rater),
        }
        if not r.position.display_order:  # a panel's, order-averaged or likelihood verdicts
            judges[r.rater]["position"] = {"first_rate": None, "first_rate_ci": None, "consistency": None,
                                           "n_swapped_pairs": 0, "display_order": False, "note": no_order_note(r)}
    return {
        "summary": summary_json(summary_blocks(report) if summary is None else summary),
        "bias_scale": bias_scale(report.length_sd),
        "judges": judges,
        "n_records": report.n_records,
        "length_sd_chars": report.length_sd,
        "family_win_rate": {
            rater: {
                fam: {"rate": _num(v), "ci": _num(wilson_interval(round(v * n), n)), "n": n}
                for fam, v in row.items()
                if pd.notna(v) and (n := int(report.family_counts.loc[rater, fam]))
            }
            for rater, row in report.family_matrix.iterrows()
        },
        "clustering": report.clustering,
        "issues": list(report.issues),
        "worth_notes": list(report.worth_notes),
        "judges_without_verdicts": [{"judge": name, "n_records": n} for name, n in report.without_verdicts],
        "sources": list(report.sources),
    }
