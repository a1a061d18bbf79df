"""report.html and report.md from jinja2 templates, and writing all three files.

``write_report`` does each piece of work once: the summary blocks (shared by report.json and
both templates), one template context for report.md and report.html, and each figure drawn
once. Everything is read from the report's estimates; nothing is recomputed from records.
"""

from __future__ import annotations

import functools
import math
import json
import re
from pathlib import Path

from analysis.report.estimates import BiasReport, Ratings
from analysis.report.figures import figures, swapped_seen
from analysis.report.formatting import fmt as _fmt, fmt_ci as _fmt_ci, no_order_note
from analysis.report.judge_sections import judging_context
from analysis.report.plotting import data_uri
from analysis.report.serialise import KAPPA_CATEGORIES, report_json
from analysis.report.summary import SummaryBlock, summary_blocks
from analysis.report.worth_section import worth_context
from pairlab.files import write_text

__all__ = ["render_html", "render_markdown", "write_report"]


def _context(report: BiasReport, summary: tuple[SummaryBlock, ...]) -> dict:
    rows = []
    for r in report.raters:
        sf = r.self_family
        rows.append(
            {
                "rater": r.rater,
                "family": r.family or ("people" if r.is_human else "-"),
                "n": r.n_records,
                "parse_errors": r.n_parse_errors,
                "first_rate": _fmt(r.position.first_rate),
                "first_rate_ci": _fmt_ci(r.position.first_rate_ci),
                "consistency": _fmt(r.position.consistency),
                "consistency_ci": _fmt_ci(r.position.consistency_ci),
                "n_swapped": r.position.n_swapped_pairs,
                "primacy": r.position.n_first_biased,
                "recency": r.position.n_second_biased,
                "other": r.position.n_other_inconsistent,
                "pf": _fmt(r.position.preference_fairness),
                "longer_rate": _fmt(r.length.longer_rate),
                "longer_rate_ci": _fmt_ci(r.length.longer_rate_ci),
                "coef": _fmt(r.length.coef),
                "coef_ci": _fmt_ci(r.length.coef_ci),
                "length_note": r.length.note,
                "sf_reference": sf.reference if sf else None,
                "sf_verdicts": sf.verdicts if sf else None,
                "sf_delta": _fmt(sf.delta) if sf else "-",
                "sf_ci": _fmt_ci(sf.ci) if sf else "-",
                "sf_rates": f"{_fmt(sf.rate_same)} vs {_fmt(sf.rate_other)}" if sf and sf.delta is not None else "-",
                "sf_glm": _fmt(sf.glm_coef) if sf else "-",
                "sf_glm_ci": _fmt_ci(sf.glm_ci) if sf else "-",
                "sf_note": sf.note if sf else None,
                "ag_vs": r.agreement.vs or "-",
                "ag_s1": _fmt(r.agreement.with_ties),
                "ag_s1_ci": _fmt_ci(r.agreement.with_ties_ci),
                "ag_s2": _fmt(r.agreement.without_ties),
                "ag_s2_ci": _fmt_ci(r.agreement.without_ties_ci),
                "kappa": _fmt(r.agreement.cohen_kappa),
                "ag_n": r.agreement.n,
                "ag_items": r.agreement.n_items,
                "ag_n_s2": r.agreement.n_without_ties,
                "ag_items_s2": r.agreement.n_items_without_ties,
                "same": _same_pairs(r.agreement_same_pairs),
                "ag_suspect": r.n_suspect,
                "spearman": _fmt(r.ranking.spearman) if r.ranking else "-",
                "kendall": _fmt(r.ranking.kendall) if r.ranking else "-",
                "n_models": r.ranking.n_models if r.ranking else "-",
                "style": _style_rows(r.ratings),
                "ratings_note": r.ratings.note,
                "first_ctrl": _fmt(r.length.first_rate_controlled),
                "first_ctrl_ci": _fmt_ci(r.length.first_rate_controlled_ci),
                "first_ctrl_note": r.length.note,
                "order_warning": _order_warning(r.position),
                "ratings_warnings": list(r.ratings.warnings),
                "bt_interval": r.ratings.bt_interval,
                "weighting": r.ratings.weighting,
                "style_interval": r.ratings.style_interval,
                "baseline": r.ratings.baseline,
                "win_rates": [] if r.ratings.win_rates is None else [
                    {"model": w["model"], "win_rate": f"{w['win_rate']:.1f} [{w['lower']:.1f}, {w['upper']:.1f}]",
                     "lc": "-" if not math.isfinite(w["lc_win_rate"]) else
                     f"{w['lc_win_rate']:.1f} [{w['lc_lower']:.1f}, {w['lc_upper']:.1f}]", "n": w["n"]}
                    for w in r.ratings.win_rates.to_dict("records")],
            }
        )
    for row, r in zip(rows, report.raters):
        if not r.position.display_order:  # a panel's, order-averaged or likelihood verdicts: no position numbers
            row.update({"first_rate": "-", "first_rate_ci": "(no display order)", "consistency": "-", "consistency_ci": "",
                        "n_swapped": "-", "primacy": "-", "recency": "-", "other": "-", "pf": "-", "first_ctrl": "-",
                        "first_ctrl_ci": "", "first_ctrl_note": no_order_note(r),
                        "order_warning": None})
    references = sorted({r.self_family.reference for r in report.raters if r.self_family and r.self_family.reference})
    return {
        "raters": rows,
        "swapped_seen": swapped_seen(report),
        "order_warnings": _once([(r["rater"], r["order_warning"]) for r in rows]),
        "ratings_warnings": _once([(r["rater"], w) for r in rows for w in r["ratings_warnings"]]),
        # Records read from the sources: the panel's verdicts are pooled from its members' records.
        "n_records": report.n_records - sum(r.n_records for r in report.raters if r.panel_members),
        "length_sd": f"{report.length_sd:.0f}",
        "issues": report.issues,
        "without_verdicts": report.without_verdicts,
        "sources": report.sources,
        "references": references,
        "lc_table": _lc_table(report),
        **judging_context(report),
        **worth_context(report.worth, report.worth_notes),
        "summary": summary,
        "has_people": any(r.is_human for r in report.raters),
        "clustering": clustering_sentence(
            report.clustering, several_voters=any(r.is_human and r.agreement.n_items > 0 for r in report.raters),
            both_orders=any(r.position.n_swapped_pairs > 0 for r in report.raters)),
        "kappa_categories": KAPPA_CATEGORIES,
        "same_pairs": any(row["same"] for row in rows),
    }


def clustering_sentence(described: str, several_voters: bool = True, both_orders: bool = True) -> str:
    """How the report's intervals treat repeated votes (``described``: :meth:`Clustering.describe`).
    ``several_voters``: two or more people voted on some pair; ``both_orders``: some judge saw a pair
    in both orders."""
    described = described or "clustered by pair_id"
    # Say only the repetition this clustering covers and these data hold: by pair, no prompt carries
    # several pairs; a reason the data lack (a judge that saw both orders) reads as a fact about them.
    why = [reason for reason, held in (
        ("each model's answer to a prompt sits in several pairs", described.startswith("clustered by prompt")),
        ("several people vote on one pair", several_voters), ("a judge sees both orders", both_orders)) if held]
    if not why:
        return f"Intervals are {described}; every cluster holds one vote here, so they are those of independent votes."
    return (f"Intervals are {described}: votes of one cluster are not independent ({', '.join(why)}), so rates and "
            "bootstraps resample whole clusters and sandwich and logistic-model intervals sum scores within one.")


def _once(warnings: list[tuple[str, str | None]]) -> list[dict]:
    """Each warning text once, with every rater it applies to (the same data give every
    rater the same warning; printed per rater it buried the rest of the section)."""
    raters: dict[str, list[str]] = {}
    for rater, text in warnings:
        if text:
            raters.setdefault(text, []).append(rater)
    return [{"raters": ", ".join(names), "text": text} for text, names in raters.items()]


def _same_pairs(ag) -> dict | None:
    if ag is None:
        return None
    return {"s1": _fmt(ag.with_ties), "s1_ci": _fmt_ci(ag.with_ties_ci), "s2": _fmt(ag.without_ties),
            "s2_ci": _fmt_ci(ag.without_ties_ci), "kappa": _fmt(ag.cohen_kappa), "n": ag.n, "n_s2": ag.n_without_ties,
            "n_items": ag.n_items, "n_items_s2": ag.n_items_without_ties}


def _order_warning(position) -> str | None:
    order = position.order
    if order is None or order.randomised is not False:
        return None
    never = f"; never shown first: {', '.join(order.never_first)}" if order.never_first else ""
    return (
        f"display order is not randomised within model pairs (only {order.minority_share:.0%} of records in their "
        f"model pair's less common order{never}): the first-shown win rate measures 'the earlier-listed model wins' "
        "as much as position; read the rate with model strengths held fixed"
    )


def _style_rows(ratings: Ratings) -> list[dict]:
    if ratings.style is None:
        return []
    return [
        {
            "name": row["name"] + (f" (differs in only {row['n_pairs']} pairs)" if row.get("sparse") else ""),
            "coef": _fmt(row["coef"]),
            "ci": _fmt_ci((row["lower"], row["upper"])),
        }
        for row in ratings.style.to_dict("records")
    ]


def _lc_table(report: BiasReport) -> dict:
    """Model x rater: BT rating and style-controlled rating (bt-style), side by side."""
    raters = [r for r in report.raters if r.ratings.bt is not None]
    models = sorted(set().union(*(set(r.ratings.bt["model"]) for r in raters))) if raters else []
    tables = [(_by_model(r.ratings.bt), _by_model(r.ratings.controlled)) for r in raters]
    rows = [{"model": m, "cells": [(_fmt(bt.get(m), 0), _fmt(lc.get(m), 0)) for bt, lc in tables]} for m in models]
    return {"raters": [r.rater for r in raters], "rows": rows}


def _by_model(table) -> dict:
    return {} if table is None else dict(zip(table["model"], table["rating"]))


@functools.cache
def _env():
    """One environment per process: each template is compiled once, however many reports are written."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("analysis.report", "templates"), autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        trim_blocks=True, lstrip_blocks=True,
    )


def _html(context: dict, figs: dict[str, bytes]) -> str:
    uris = {name: data_uri(image) for name, image in figs.items()}
    return _env().get_template("report.html.j2").render(figs=uris, **context)


# A table cell whose value and interval are both missing reads "- -" (or "**-** -"); one dash says it.
_MISSING_PAIR = re.compile(r"(?<=\| )(\*\*-\*\*|-) -(?= \||\s\()")


def _markdown(context: dict) -> str:
    return _MISSING_PAIR.sub("-", _env().get_template("report.md.j2").render(**context))


def render_html(report: BiasReport, figs: dict[str, bytes] | None = None) -> str:
    """report.html; ``figs`` (PNG bytes by name, as ``figures`` gives them) are drawn here when not given."""
    return _html(_context(report, summary_blocks(report)), figures(report) if figs is None else figs)


def render_markdown(report: BiasReport) -> str:
    return _markdown(_context(report, summary_blocks(report)))


def write_report(report: BiasReport, out: str | Path, figs: dict[str, bytes] | None = None) -> dict[str, Path]:
    """report.json, report.md and report.html (figures embedded) in ``out``; ``figs`` as in
    :func:`render_html` (:func:`analysis.report.build_report_with_figures` draws them)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_blocks(report)
    context = _context(report, summary)
    paths = {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}
    # The one output rule: a symlink planted at a report's name is replaced, not written through.
    write_text(paths["json"], json.dumps(report_json(report, summary), indent=2) + "\n")
    write_text(paths["md"], _markdown(context))
    write_text(paths["html"], _html(context, figures(report) if figs is None else figs))
    return paths
