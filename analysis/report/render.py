"""report.html and report.md from jinja2 templates, and writing all three files.

report.json is the report's one view: ``write_report`` builds it once (the summary blocks with
it), and report.md and report.html render from it, formatting its numbers with template filters
(``fmt``, ``ci``); each figure is drawn once. Nothing is recomputed from records.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

from analysis.judgment_table import HUMAN_RATER
from analysis.report.estimates import BiasReport
from analysis.report.figures import draw_figures, figures, helper_forks
from analysis.report.formatting import fmt as _fmt, fmt_ci as _fmt_ci, pct, pct_ci, points, points_ci
from analysis.report.judge_sections import judging_context
from analysis.report.plotting import data_uri, prepare as prepare_drawing
from analysis.report.serialise import KAPPA_CATEGORIES, report_json
from analysis.report.worth_section import read as worth_read
from analysis.stats.clusters import ci_label
from analysis.workers import Helper
from pairlab.files import write_texts

__all__ = ["render_html", "render_markdown", "report_helper", "write_report"]


def _context(doc: dict) -> dict:
    """What the templates read: report.json (``doc``) as it is, and the few things said across
    judges (each warning once, the ratings side by side). Every number is formatted by a template
    filter; nothing here restates a field."""
    judges = doc["judges"]
    references = sorted({j["self_family"]["reference"] for j in judges.values() if j["self_family"]["reference"]})
    return {
        "judges": judges,
        "summary": doc["summary"],
        "bias_scale": doc["bias_scale"],
        "swapped_seen": any(j["position"]["n_swapped_pairs"] for j in judges.values()),
        "order_warnings": _once([(name, j["position"].get("order_warning")) for name, j in judges.items()]),
        "ratings_warnings": _once([(name, w) for name, j in judges.items() for w in j["ratings"]["warnings"]]),
        # Records read from the sources: the panel's verdicts are pooled from its members' records.
        "n_records": doc["n_records"] - sum(j["n_records"] for j in judges.values() if j.get("panel_members")),
        "length_sd": f"{doc['length_sd_chars']:.0f}",
        "lengths_differ": doc["length_sd_chars"] > 0,
        "issues": doc["issues"],
        "without_verdicts": [(w["judge"], w["n_records"]) for w in doc["judges_without_verdicts"]],
        "sources": doc["sources"],
        "references": references,
        "lc_table": _lc_table(judges),
        **judging_context(judges),
        "worth": {name: j["ppi"] for name, j in judges.items() if j.get("ppi")},
        "worth_read": worth_read(doc["clustering"]),
        "ci_label": ci_label(doc["clustering"]),
        "worth_notes": doc.get("worth_notes", []),
        "has_people": HUMAN_RATER in judges,
        "clustering": clustering_sentence(
            doc["clustering"],
            several_voters=HUMAN_RATER in judges and judges[HUMAN_RATER]["agreement"]["n_items"] > 0,
            both_orders=any(j["position"]["n_swapped_pairs"] > 0 for j in judges.values())),
        "kappa_categories": KAPPA_CATEGORIES,
        "same_pairs": any(j["agreement"]["same_pairs"] for j in judges.values()),
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


def _lc_table(judges: dict) -> dict:
    """Model x rater: BT rating and style-controlled rating (bt-style), side by side."""
    rated = {name: j["ratings"] for name, j in judges.items() if j["ratings"]["bt"] is not None}
    tables = [(_by_model(r["bt"]), _by_model(r["style_controlled"])) for r in rated.values()]
    models = sorted(set().union(*(bt for bt, _ in tables)))
    rows = [{"model": m, "cells": [(_fmt(bt.get(m), 0), _fmt(lc.get(m), 0)) for bt, lc in tables]} for m in models]
    return {"raters": list(rated), "rows": rows}


def _by_model(rows: list[dict] | None) -> dict:
    return {row["model"]: row["rating"] for row in rows or ()}


def _missing(x) -> bool:
    import jinja2

    return x is None or isinstance(x, jinja2.Undefined)


def _fmt_filter(x, digits: int = 3) -> str:
    """``{{ x | fmt }}``: a report.json number in fixed digits, "-" where it is null or absent."""
    return "-" if _missing(x) else _fmt(x, digits)


def _ci_filter(ci, digits: int = 3) -> str:
    """``{{ ci | ci }}``: "[lo, hi]", "-" where there is none."""
    return "-" if _missing(ci) or any(_missing(v) for v in ci) else _fmt_ci(ci, digits)


def _worth_ci(ci, digits: int = 2) -> str:
    """``{{ ratio_ci | worth_ci }}``: a worth's interval, whose upper end report.json writes as
    null when it is open ("[lo, ∞)"); "-" where there is none."""
    if _missing(ci) or _missing(ci[0]):
        return "-"
    return _fmt_ci((ci[0], math.inf if _missing(ci[1]) else ci[1]), digits)


def _pct_filter(x, ci=None) -> str:
    """``{{ share | pct(ci) }}``: "71% [68, 73]" (``ci`` optional)."""
    if _missing(x):
        return "-"
    return pct(x) + ("" if _missing(ci) else f" {pct_ci(ci)}")


def _pct_ci_filter(ci) -> str:
    return "-" if _missing(ci) else pct_ci(ci)


def _times(x, ci=None) -> str:
    """``{{ ratio | times(ci) }}``: "1.36x [1.10, 1.69]"."""
    if _missing(x):
        return "-"
    return f"{x:.2f}x" + ("" if _missing(ci) or _missing(ci[0]) else f" {_worth_ci(ci)}")


def _bias_cell(block: dict) -> str:
    """A summary block's strongest bias in a few words: kind, points from an even choice, interval."""
    bias = block.get("strongest_bias")
    if bias is None:
        return "position: follows the display order" if block.get("advice") == "do not use" else "none"
    return f"{bias['kind']} {points(bias['size'])} {points_ci(bias['ci'])}"


def _estimate(row: dict, key: str) -> str:
    """``{{ row | estimate("ppi") }}``: "1012 [987, 1040]" from ``ppi``, ``ppi_lower``, ``ppi_upper``; "-"
    where there is no estimate."""
    if row.get(key) is None:
        return "-"
    lo, hi = (_fmt_filter(row.get(f"{key}_{end}"), 0) for end in ("lower", "upper"))
    return f"{_fmt_filter(row[key], 0)} [{lo}, {hi}]"


def _rank_set(value) -> str:
    lo, hi = value
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _own_vs_other(sf: dict) -> str:
    """The judge's agreement with the reference on own-family picks against other picks."""
    details = sf.get("details")
    if not details or sf.get("delta") is None:
        return "-"
    return f"{_fmt(details['rate_same'])} vs {_fmt(details['rate_other'])}"


def _win_rate(row: dict, prefix: str = "") -> str:
    """An AlpacaEval win rate (``prefix`` "lc_": the length-controlled one) in percent, with its interval."""
    value = row.get(f"{prefix}win_rate")
    if value is None:
        return "-"
    return f"{value:.1f} [{row[f'{prefix}lower']:.1f}, {row[f'{prefix}upper']:.1f}]"


@functools.cache
def _env():
    """One environment per process: each template is compiled once, however many reports are written."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("analysis.report", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(fmt=_fmt_filter, ci=_ci_filter, own_vs_other=_own_vs_other, win_rate=_win_rate,
                       pct=_pct_filter, pct_ci=_pct_ci_filter, times=_times, worth_ci=_worth_ci, bias_cell=_bias_cell,
                       estimate=_estimate, rank_set=_rank_set)
    return env


def _html(context: dict, figs: dict[str, bytes]) -> str:
    uris = {name: data_uri(image) for name, image in figs.items()}
    return _env().get_template("report.html.j2").render(figs=uris, **context)


# A table cell whose value and interval are both missing reads "- -" (or "**-** -"); one dash says it.
_MISSING_PAIR = re.compile(r"(?<=\| )(\*\*-\*\*|-) -(?= \||\s\()")


def _markdown(context: dict) -> str:
    return _MISSING_PAIR.sub("-", _env().get_template("report.md.j2").render(**context))


def render_html(report: BiasReport, figs: dict[str, bytes] | None = None) -> str:
    """report.html; ``figs`` (PNG bytes by name, as ``figures`` gives them) are drawn here when not given."""
    return _html(_context(report_json(report)), figures(report) if figs is None else figs)


def render_markdown(report: BiasReport) -> str:
    return _markdown(_context(report_json(report)))


def report_paths(out: str | Path) -> dict[str, Path]:
    """The files :func:`write_report` writes in ``out``, by kind."""
    out = Path(out)
    return {"json": out / "report.json", "md": out / "report.md", "html": out / "report.html"}


def write_report(report: BiasReport, out: str | Path, figs: dict[str, bytes] | None = None) -> dict[str, Path]:
    """report.json, report.md and report.html (figures embedded) in ``out``; ``figs`` as in
    :func:`render_html` (:func:`analysis.report.build_report_with_figures` draws them)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = report_json(report)
    context = _context(doc)
    paths = report_paths(out)
    # Each made before any is written, then all put in place together: a report stopped while
    # it is written keeps the last run's three files, never two new ones beside an old one. The
    # one output rule: a symlink planted at a report's name is replaced, not written through.
    texts = {"json": json.dumps(doc, indent=2) + "\n", "md": _markdown(context),
             "html": _html(context, figures(report) if figs is None else figs)}
    write_texts({paths[kind]: text for kind, text in texts.items()})
    return paths


def _prepare() -> None:
    prepare_drawing()
    env = _env()
    for name in env.list_templates():
        env.get_template(name)


def report_helper(workers: int | None = None) -> Helper:
    """The helper process (:class:`analysis.workers.Helper`) that makes what the report shows: entered
    once the records are read, it imports matplotlib and compiles the templates while they are
    analysed, then draws the figures (task ``figures``, for
    :func:`analysis.report.build_report_with_figures`) and writes the files (task ``write``:
    :func:`write_report`). In this process, as each is asked for, where
    :func:`analysis.report.figures.helper_forks` says no (``workers`` 1, one core)."""
    return Helper({"figures": draw_figures, "write": write_report}, prepare=_prepare, fork=helper_forks(workers))
