"""Figure: each judge's Bradley-Terry rating against the reference's, both with 95% intervals."""

from __future__ import annotations

import textwrap

import numpy as np

from analysis.report.estimates import BiasReport
from analysis.report.plotting import (LABEL, PAD, TICK, TITLE_PAD, X_TICKS, color as _color, few_ticks, new_figure,
                                      place, set_title, text_height, text_width, tick_width)

__all__ = ["leaderboard_figure"]

CELL = (4.2, 4.0)  # inches: each judge's panel with its labels
LABEL_SIZE = 7  # points
GAP = 3  # points between a point and its label
# Where a label may go around its point, in order of preference: right or left of it, above or below.
PLACES = ((GAP, GAP, "left", "bottom"), (-GAP, GAP, "right", "bottom"), (GAP, -GAP, "left", "top"),
          (-GAP, -GAP, "right", "top"))


def _label_places(points: list[tuple[float, float]], sizes: list[tuple[float, float]],
                  bounds: tuple[float, float, float, float]) -> list[tuple]:
    """A place from ``PLACES`` for each point's label (points, label sizes and the panel's
    ``bounds`` in points on the page): the first that stays inside the panel and whose box
    overlaps no label placed before it and no other point. Two models with close ratings get
    their labels on opposite sides, not on each other; the top model's label stays off the
    next panel."""
    placed, out = [], []
    for k, ((x, y), (w, h)) in enumerate(zip(points, sizes)):
        marks = [(px - GAP, py - GAP, px + GAP, py + GAP) for j, (px, py) in enumerate(points) if j != k]
        free = (p for p in PLACES if _inside(_box(x, y, w, h, p), bounds)
                and not any(_overlap(_box(x, y, w, h, p), other) for other in placed + marks))
        choice = next(free, PLACES[0])
        placed.append(_box(x, y, w, h, choice))
        out.append(choice)
    return out


def _box(x, y, w, h, place) -> tuple[float, float, float, float]:
    dx, dy, ha, va = place
    x0 = x + dx - (w if ha == "right" else 0)
    y0 = y + dy - (h if va == "top" else 0)
    return x0, y0, x0 + w, y0 + h


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a, b) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def _spread(both, side: str):
    """A side's ratings and how far their intervals reach below and above them (no bar where the
    interval is withheld: too few units to claim one)."""
    rating, lower, upper = (both[f"{c}_{side}"].to_numpy(dtype=float) for c in ("rating", "lower", "upper"))
    return rating, [np.nan_to_num(np.clip(rating - lower, 0, None)), np.nan_to_num(np.clip(upper - rating, 0, None))]


def leaderboard_figure(report: BiasReport):
    """One panel per judge with a reference leaderboard; None if no judge has one."""
    judges = [r for r in report.raters if r.leaderboard is not None and r.ratings.bt is not None
              and r.reference is not None and report.rater(r.reference).ratings.bt is not None]
    if not judges:
        return None
    cols = min(3, len(judges))
    rows = (len(judges) + cols - 1) // cols
    fig, axes = new_figure((CELL[0] * cols, CELL[1] * rows), len(judges))
    panels = []
    for k, r in enumerate(judges):
        ax = axes[k]
        both = r.ratings.bt.merge(report.rater(r.reference).ratings.bt, on="model", suffixes=("_j", "_r"))
        (x, xerr), (y, yerr) = _spread(both, "r"), _spread(both, "j")
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o", color=_color(k + 1), capsize=3, ms=4)
        ends = both[["lower_r", "lower_j", "upper_r", "upper_j", "rating_r", "rating_j"]].to_numpy(dtype=float)
        lo, hi = np.nanmin(ends), np.nanmax(ends)
        ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1)
        # The limits autoscaling would give, set now so labels can be placed in points before drawing.
        pad = max(0.05 * (hi - lo), 1.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        few_ticks(ax.xaxis, ax.yaxis)
        lb = r.leaderboard
        sub = "" if lb.brier is None else f"Brier {lb.brier:.3f}, separability {lb.separability:.2f}"
        set_title(ax, f"{textwrap.fill(r.rater, 40, break_on_hyphens=False)}\n{sub}", 9)
        # Wrapped: a judge named with its settings ("... (generate, prometheus-relative)") ran into the next panel.
        ax.set_xlabel(textwrap.fill(f"{r.reference} rating (BT, 95% CI)", 40, break_on_hyphens=False))
        ax.set_ylabel(textwrap.fill(f"{r.rater} rating (BT, 95% CI)", 40, break_on_hyphens=False))
        panels.append((ax, both, lo - pad, hi + pad))
    # One set of margins for every panel (the widest each needs), so the panels line up.
    left = PAD + max(text_height(ax.get_ylabel()) + LABEL + tick_width(ax.yaxis) + TICK for ax in axes)
    bottom = PAD + max(X_TICKS + text_height(ax.get_xlabel()) for ax in axes)
    top = PAD + max(text_height(ax.get_title(), 9) for ax in axes) + TITLE_PAD
    right = PAD + 0.25  # half the last tick label
    width, height = CELL[0] - left - right, CELL[1] - bottom - top
    for k, (ax, both, lo, hi) in enumerate(panels):
        row, col = divmod(k, cols)
        place(ax, col * CELL[0] + left, (rows - 1 - row) * CELL[1] + bottom, width, height)
        per_x, per_y = width * 72 / (hi - lo), height * 72 / (hi - lo)  # points per rating point
        points = [((x - lo) * per_x, (y - lo) * per_y) for x, y in zip(both["rating_r"], both["rating_j"])]
        sizes = [(72 * text_width(m, LABEL_SIZE) + 1, 72 * text_height(m, LABEL_SIZE) + 1) for m in both["model"]]
        places = _label_places(points, sizes, (0, 0, width * 72, height * 72))
        for model, x, y, (dx, dy, ha, va) in zip(both["model"], both["rating_r"], both["rating_j"], places):
            # annotation_clip=False: every point is inside the axes, and asking costs more than drawing the label.
            ax.annotate(model, (x, y), fontsize=LABEL_SIZE, xytext=(dx, dy),
                        textcoords="offset points", ha=ha, va=va, annotation_clip=False)
    return fig
