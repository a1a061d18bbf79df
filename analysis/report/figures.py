"""The report's figures (matplotlib, Agg), as PNG images embedded in report.html.

Each figure is built by its own function returning the matplotlib figure, so its layout
can be checked (no legend over a label, readable text on every cell); ``figures`` draws
each one once, into PNG bytes. They are drawn from the report's estimates (a handful of
numbers per rater and model), never from records, so drawing takes as long for a million
records as for a hundred. Layouts are "constrained": matplotlib makes room for tick labels,
legends and titles, however long the raters' names are.
"""

from __future__ import annotations

import numpy as np

from analysis.report.build import BiasReport
from analysis.report.leaderboard_figure import leaderboard_figure
from analysis.report.plotting import color as _color, errbar as _errbar, new_figure, png
from analysis.report.worth import worth_figure

__all__ = ["families_figure", "figures", "length_figure", "position_figure", "ratings_figure", "swapped_seen"]

MIN_BIN = 10  # fewest verdicts for a point of the length-bias curve
# Cell text on the family heatmap: white on cells darker than this relative luminance,
DARK = 0.179  # where black and white text have equal contrast (WCAG), both at least 4.5:1


def swapped_seen(report: BiasReport) -> bool:
    """Whether any rater saw a pair in both orders (else the swapped-order panel is left out)."""
    return any(r.position.n_swapped_pairs for r in report.raters)


def position_figure(report: BiasReport):
    """First-shown win rate, and beside it what happens when the order is swapped (only
    when some rater saw a pair in both orders: an all-empty panel says nothing)."""
    raters = report.raters
    names = [r.rater for r in raters]
    swapped = swapped_seen(report)
    height = 0.55 * len(raters) + (2.4 if swapped else 1.8)
    if swapped:
        fig, (ax1, ax2) = new_figure((11, height), 1, 2)
    else:
        fig, ax1 = new_figure((6.5, height))
    for i, r in enumerate(raters):
        if not r.panel_members:  # the panel's verdict never saw a display order
            _errbar(ax1, i, r.position.first_rate, r.position.first_rate_ci, _color(i))
    ax1.axvline(0.5, color="grey", ls="--", lw=1)
    ax1.set_yticks(range(len(names)), names)
    ax1.set_ylim(len(names) - 0.5, -0.5)
    ax1.set_xlabel("P(first-shown response wins | decisive), 95% CI clustered by pair")
    ax1.set_title("First-position win rate")
    if not swapped:
        return fig
    parts = ("consistent", "primacy (first twice)", "recency (second twice)", "other inconsistent")
    colors = ("#4c956c", "#d1495b", "#edae49", "#bbbbbb")
    labelled = False
    for i, r in enumerate(raters):
        p = r.position
        left = 0.0
        if not p.n_swapped_pairs:
            ax2.text(0.01, i, "no pairs seen in both orders", va="center", color="grey")
            continue
        for part, count, col in zip(parts, (p.n_consistent, p.n_first_biased, p.n_second_biased, p.n_other_inconsistent), colors):
            share = count / p.n_swapped_pairs
            ax2.barh(i, share, left=left, color=col, label=None if labelled else part)
            left += share
        labelled = True
        ax2.text(1.01, i, f"n={p.n_swapped_pairs}", va="center", fontsize=8)
    ax2.set_yticks(range(len(names)), [""] * len(names))  # same rows as the left panel
    ax2.set_ylim(len(names) - 0.5, -0.5)
    ax2.set_xlim(0, 1)
    ax2.set_xlabel("share of pairs seen in both orders")
    ax2.set_title("Swapped-order outcome\n(Zheng et al. 2023, Table 2)")  # two lines: it outran narrow panels
    if labelled:
        ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=8, frameon=False)
    return fig


def length_figure(report: BiasReport):
    """Longer-wins curve by relative length difference, and the model coefficient."""
    raters = report.raters
    names = [r.rater for r in raters]
    fig, (ax1, ax2) = new_figure((11, 3.8 + 0.2 * len(raters)), 1, 2)
    for i, r in enumerate(raters):
        # A bin with a handful of verdicts is all interval and no estimate: left off the plot.
        bins = [b for b in r.length_curve if b.n >= MIN_BIN]
        if not bins:
            continue
        xs = [(b.lo + b.hi) / 2 + (i - len(raters) / 2) * 0.008 for b in bins]
        ys = [b.longer_rate for b in bins]
        err = [[max(0.0, b.longer_rate - b.ci[0]) for b in bins], [max(0.0, b.ci[1] - b.longer_rate) for b in bins]]
        ax1.errorbar(xs, ys, yerr=err, fmt="-o", color=_color(i), capsize=3, label=r.rater, ms=4)
    ax1.axhline(0.5, color="grey", ls="--", lw=1)
    ax1.set_xlim(0, 1)
    ax1.set_xlabel("|len A - len B| / (len A + len B)")
    ax1.set_ylabel("P(longer response wins)")
    ax1.set_title("Longer-wins rate by length gap (95% CI)")
    if ax1.get_legend_handles_labels()[0]:
        # Below the curves, not inside: inside it covered points, and beside it the next panel's labels.
        ax1.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    else:  # an empty panel would say nothing: it says why, above the no-bias line, not struck through by it
        ax1.set_ylim(0, 1)
        ax1.text(0.5, 0.75, f"no length-gap bin has\n{MIN_BIN} or more decisive verdicts yet", ha="center",
                 va="center", color="grey", transform=ax1.transAxes)
    for i, r in enumerate(raters):
        _errbar(ax2, i, r.length.coef, r.length.coef_ci, _color(i))
        if r.length.coef is None:
            ax2.text(0.02, i, "not fitted (see the note below)", va="center", color="grey", fontsize=8,
                     transform=ax2.get_yaxis_transform())
    ax2.axvline(0, color="grey", ls="--", lw=1)
    ax2.set_yticks(range(len(names)), names)
    ax2.set_ylim(len(names) - 0.5, -0.5)
    ax2.set_xlabel(f"log-odds per SD of length difference ({report.length_sd:.0f} chars)")
    ax2.set_title("Length coefficient,\nmodel strength held fixed")  # two lines: it outran narrow panels
    return fig


def luminance(rgba) -> float:
    """Relative luminance of an sRGB colour (WCAG 2.x)."""
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def families_figure(report: BiasReport):
    """Win rate of each family's responses per rater; the rater's own family boxed. None without families."""
    raters = report.raters
    names = [r.rater for r in raters]
    matrix = report.family_matrix.reindex(index=names)
    if matrix.empty or not matrix.shape[1]:
        return None
    from matplotlib.patches import Rectangle

    # At least as wide as the title's longer line: a wider title ran past the figure's edge.
    fig, ax = new_figure((max(1.1 * matrix.shape[1] + 3, 5.4), 0.5 * len(names) + 1.8))
    values = matrix.to_numpy(dtype=float)
    im = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=0.2, vmax=0.8, aspect="auto")
    counts = report.family_counts.reindex(index=names, columns=matrix.columns).fillna(0)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                cell = im.cmap(im.norm(values[i, j]))
                ink = "white" if luminance(cell) < DARK else "black"  # black on dark red/blue was unreadable
                ax.text(j, i, f"{values[i, j]:.2f}\nn={int(counts.iloc[i, j])}", ha="center", va="center",
                        fontsize=7, color=ink)
        fam = raters[i].family
        if fam in matrix.columns:
            j = list(matrix.columns).index(fam)
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.5, color="black"))
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)
    # Over the figure, not the axes: long rater names leave the axes narrower than the title.
    fig.suptitle("Win rate of each family's responses\n(decisive, cross-family); box = rater's own family")
    fig.colorbar(im, ax=ax, fraction=0.03)
    return fig


def ratings_figure(report: BiasReport):
    """Every rater's BT ratings with their bootstrap CIs, model by model. None without ratings."""
    rated = [(i, r) for i, r in enumerate(report.raters) if r.ratings.bt is not None]
    if not rated:
        return None
    models = sorted(set().union(*(set(r.ratings.bt["model"]) for _, r in rated)))
    order = rated[0][1].ratings.bt.set_index("model")["rating"].reindex(models).sort_values(ascending=False).index
    row_of = {m: k for k, m in enumerate(order)}
    fig, ax = new_figure((8, 0.45 * len(models) * max(1, len(rated) / 2) + 1.5))
    step = 0.8 / max(1, len(rated))
    for k, (i, r) in enumerate(rated):
        bt = r.ratings.bt
        y = bt["model"].map(row_of) + (k - (len(rated) - 1) / 2) * step
        # One call per rater, not per point: each errorbar call builds its own artists.
        ax.errorbar(bt["rating"], y, xerr=[(bt["rating"] - bt["lower"]).clip(lower=0), (bt["upper"] - bt["rating"]).clip(lower=0)],
                    fmt="o", color=_color(i), capsize=3, label=r.rater, ms=4)
    ax.set_yticks(range(len(order)), order)
    ax.invert_yaxis()
    ax.set_xlabel("Bradley-Terry rating (Elo scale), 95% bootstrap CI")
    ax.set_title("Ratings from each rater's votes")
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    return fig


FIGURES = {
    "position": position_figure, "length": length_figure, "families": families_figure, "ratings": ratings_figure,
    "leaderboards": leaderboard_figure, "worth": lambda report: worth_figure(report.worth),
}


def figures(report: BiasReport) -> dict[str, bytes]:
    """The report's figures as PNG bytes, keyed by name, each drawn once; a figure with nothing to show is left out."""
    return {name: png(fig) for name, build in FIGURES.items() if (fig := build(report)) is not None}
