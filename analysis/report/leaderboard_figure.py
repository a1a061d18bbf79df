"""Figure: each judge's Bradley-Terry rating against the reference's, both with 95% intervals."""

from __future__ import annotations

import textwrap

from analysis.report.build import BiasReport
from analysis.report.plotting import color as _color, new_figure

__all__ = ["leaderboard_figure"]

LABEL_SIZE = 7  # points
GAP = 3  # points between a point and its label
# Where a label may go around its point, in order of preference: right or left of it, above or below.
PLACES = ((GAP, GAP, "left", "bottom"), (-GAP, GAP, "right", "bottom"), (GAP, -GAP, "left", "top"),
          (-GAP, -GAP, "right", "top"))


def _label_places(points: list[tuple[float, float]], sizes: list[tuple[float, float]]) -> list[tuple]:
    """A place from ``PLACES`` for each point's label (points and label sizes in points on the
    page): the first whose box overlaps no label placed before it and no other point. Two
    models with close ratings get their labels on opposite sides, not on each other."""
    placed, out = [], []
    for k, ((x, y), (w, h)) in enumerate(zip(points, sizes)):
        marks = [(px - GAP, py - GAP, px + GAP, py + GAP) for j, (px, py) in enumerate(points) if j != k]
        free = (p for p in PLACES if not any(_overlap(_box(x, y, w, h, p), other) for other in placed + marks))
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


def leaderboard_figure(report: BiasReport):
    """One panel per judge with a reference leaderboard; None if no judge has one."""
    judges = [r for r in report.raters if r.leaderboard is not None and r.ratings.bt is not None
              and r.reference is not None and report.rater(r.reference).ratings.bt is not None]
    if not judges:
        return None
    from matplotlib.font_manager import FontProperties

    cols = min(3, len(judges))
    rows = (len(judges) + cols - 1) // cols
    fig, axes = new_figure((4.2 * cols, 4.0 * rows), rows, cols, squeeze=False)
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=LABEL_SIZE)
    for k, r in enumerate(judges):
        ax = axes[k // cols][k % cols]
        both = r.ratings.bt.merge(report.rater(r.reference).ratings.bt, on="model", suffixes=("_j", "_r"))
        ax.errorbar(both["rating_r"], both["rating_j"],
                    xerr=[(both["rating_r"] - both["lower_r"]).clip(lower=0), (both["upper_r"] - both["rating_r"]).clip(lower=0)],
                    yerr=[(both["rating_j"] - both["lower_j"]).clip(lower=0), (both["upper_j"] - both["rating_j"]).clip(lower=0)],
                    fmt="o", color=_color(k + 1), capsize=3, ms=4)
        lo = min(both["lower_r"].min(), both["lower_j"].min())
        hi = max(both["upper_r"].max(), both["upper_j"].max())
        ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1)
        # The limits autoscaling would give, set now so labels can be placed in points before drawing.
        pad = 0.05 * (hi - lo)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        # The axes' size before the constrained layout grows it: points then lie no farther
        # apart than on the page, so labels placed apart here stay apart.
        box = ax.get_position()
        per_x = box.width * fig.get_figwidth() * 72 / (hi - lo + 2 * pad)
        per_y = box.height * fig.get_figheight() * 72 / (hi - lo + 2 * pad)
        points = [(x * per_x, y * per_y) for x, y in zip(both["rating_r"], both["rating_j"])]
        sizes = [renderer.get_text_width_height_descent(m, font, ismath=False)[:2] for m in both["model"]]
        sizes = [(w * 72 / fig.dpi + 1, h * 72 / fig.dpi + 1) for w, h in sizes]
        for row, (dx, dy, ha, va) in zip(both.itertuples(), _label_places(points, sizes)):
            # annotation_clip=False: every point is inside the axes, and asking costs more than drawing the label.
            ax.annotate(row.model, (row.rating_r, row.rating_j), fontsize=LABEL_SIZE, xytext=(dx, dy),
                        textcoords="offset points", ha=ha, va=va, annotation_clip=False)
        lb = r.leaderboard
        sub = "" if lb.brier is None else f"Brier {lb.brier:.3f}, separability {lb.separability:.2f}"
        ax.set_title(f"{textwrap.fill(r.rater, 40, break_on_hyphens=False)}\n{sub}", fontsize=9)
        # Wrapped: a judge named with its settings ("... (generate, prometheus-relative)") ran into the next panel.
        ax.set_xlabel(textwrap.fill(f"{r.reference} rating (BT, 95% CI)", 40, break_on_hyphens=False))
        ax.set_ylabel(textwrap.fill(f"{r.rater} rating (BT, 95% CI)", 40, break_on_hyphens=False))
    for k in range(len(judges), rows * cols):
        axes[k // cols][k % cols].axis("off")
    return fig
