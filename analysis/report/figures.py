"""The report's figures (matplotlib, Agg), as PNG images embedded in report.html.

Each figure is built by its own function returning the matplotlib figure, so its layout
can be checked (no legend over a label, readable text on every cell); ``figures`` draws
each one once, into PNG bytes. They are drawn from the report's estimates (a handful of
numbers per rater and model), never from records, so drawing takes as long for a million
records as for a hundred.

Each function plots first, then lays the figure out: its margins worked out from the lengths
of its own labels (``plotting.text_width``), its panels placed in inches. Long rater names
widen the margin they sit in; a panel beside another is never narrower than ``MIN_PANEL``
(the figure widens instead) and its axis label is wrapped to its width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from analysis.report.estimates import BiasReport, build_report_drawing
from analysis.report.leaderboard_figure import leaderboard_figure
from analysis.report.plotting import (LABEL, PAD, TICK, TITLE, TITLE_PAD, X_TICKS, color as _color, few_ticks,
                                      intervals, legend_height, legend_width, new_figure, place, png, prepare,
                                      set_title, text_height, text_width, tick_width, wrap)
from analysis.report.worth_section import projection_figure, worth_figure
from analysis.stats.clusters import ci_label
from analysis.workers import Helper, available_cpus


__all__ = ["build_report_with_figures", "families_figure", "figures", "length_figure", "position_figure",
           "ratings_figure", "swapped_seen"]

MIN_BIN = 10  # fewest verdicts for a point of the length-bias curve
# Cell text on the family heatmap: white on cells darker than this relative luminance,
DARK = 0.179  # where black and white text have equal contrast (WCAG), both at least 4.5:1
MIN_PANEL = 3.2  # inches: the narrowest a panel beside another is drawn
GAP = 0.45  # inches between two panels: room for the tick labels that overhang their ends
PARTS = ("consistent", "primacy (first twice)", "recency (second twice)", "other inconsistent")
PART_COLORS = ("#4c956c", "#d1495b", "#edae49", "#bbbbbb")


def swapped_seen(report: BiasReport) -> bool:
    """Whether any rater saw a pair in both orders (else the swapped-order panel is left out)."""
    return any(r.position.n_swapped_pairs for r in report.raters)


def _below(legend_rows: int, xlabels) -> float:
    """Inches from the figure's bottom edge to panels whose x axes are labelled ``xlabels``,
    with a legend of ``legend_rows`` rows (8 points) under them."""
    return PAD + (legend_height(legend_rows, 8) if legend_rows else 0.0) + X_TICKS + max(map(text_height, xlabels))


def _legend_columns(labels, width: float) -> int:
    """Two columns for a legend of ``labels`` (8 points) if they fit across a figure ``width``
    inches wide, else one: long rater names in two columns ran past the figure's edge."""
    return 2 if legend_width(labels, 2, 8) <= width - 2 * PAD else 1


def _legend_below(ax, centre: float, ncol: int) -> None:
    """``ax``'s legend (8 points, no frame) on the figure's bottom margin, under the axis
    labels, over nothing that is plotted: centred ``centre`` inches from the figure's left
    edge, or as near as it fits on the page."""
    fig = ax.get_figure()
    half = legend_width(ax.get_legend_handles_labels()[1], ncol, 8) / 2
    centre = min(max(centre, PAD + half), fig.get_figwidth() - PAD - half)
    ax.legend(loc="lower center", bbox_to_anchor=(centre / fig.get_figwidth(), PAD / fig.get_figheight()),
              bbox_transform=fig.transFigure, borderaxespad=0, fontsize=8, frameon=False, ncol=ncol)


def position_figure(report: BiasReport):
    """First-shown win rate, and beside it what happens when the order is swapped (only
    when some rater saw a pair in both orders: an all-empty panel says nothing)."""
    # Verdicts that never saw a display order (a panel's, order-averaged, likelihood) get no row.
    colour = {r.rater: _color(i) for i, r in enumerate(report.raters)}  # as in the other figures
    raters = [r for r in report.raters if r.position.display_order]
    names = [r.rater for r in raters]
    swapped = swapped_seen(report)
    n_panels = 2 if swapped else 1
    height = 0.55 * len(raters) + 0.8
    fig, axes = new_figure((11.0, height), n_panels)
    ax1 = axes[0]
    intervals(ax1, [(i, r.position.first_rate, r.position.first_rate_ci, colour[r.rater])
                    for i, r in enumerate(raters)])
    ax1.axvline(0.5, color="grey", ls="--", lw=1)
    few_ticks(ax1.xaxis)
    counts = []
    if swapped:
        ax2 = axes[1]
        for i, r in enumerate(raters):
            p = r.position
            if not p.n_swapped_pairs:
                ax2.text(0.01, i, "no pairs seen in both orders", va="center", color="grey")
                continue
            parts = (p.n_consistent, p.n_first_biased, p.n_second_biased, p.n_other_inconsistent)
            shares = np.array(parts) / p.n_swapped_pairs
            ax2.barh(i, shares, left=np.cumsum(shares) - shares, color=PART_COLORS, label=None if counts else PARTS)
            counts.append(f"n={p.n_swapped_pairs}")
            ax2.text(1.01, i, counts[-1], va="center", fontsize=8)
        ax2.set_xlim(0, 1)
    for k, ax in enumerate(axes):
        ax.set_yticks(range(len(names)), names if k == 0 else [""] * len(names))  # the same rows side by side
        ax.set_ylim(len(names) - 0.5, -0.5)

    left = PAD + max(map(text_width, names)) + TICK
    right = PAD + (0.05 + max(text_width(c, 8) for c in counts) if counts else 0.2)
    width = max(11.0 if swapped else 6.5, left + n_panels * MIN_PANEL + (n_panels - 1) * GAP + right)
    panel = (width - left - right - (n_panels - 1) * GAP) / n_panels
    # Each axis label wrapped to its panel: a long one, centred under a panel narrowed by long
    # names, ran into the next panel's.
    xlabels = [wrap(f"P(first-shown response wins | decisive), {ci_label(report.clustering)}", panel),
               wrap("share of pairs seen in both orders", panel)][:n_panels]
    titles = ["First-position win rate", "Swapped-order outcome\n(Zheng et al. 2023, Table 2)"][:n_panels]
    bottom = _below(2 if counts else 0, xlabels)
    fig.set_size_inches(width, bottom + height + PAD + text_height(titles[-1], TITLE) + TITLE_PAD)
    for k, (ax, xlabel, title) in enumerate(zip(axes, xlabels, titles)):
        ax.set_xlabel(xlabel)
        set_title(ax, title)
        place(ax, left + k * (panel + GAP), bottom, panel, height)
    if counts:
        _legend_below(axes[1], left + 1.5 * panel + GAP, 2)
    return fig


def length_figure(report: BiasReport):
    """Longer-wins curve by relative length difference, and the model coefficient; None where
    no record's two responses differ in length (no response texts): nothing to draw."""
    if not report.length_sd:
        return None
    raters = report.raters
    names = [r.rater for r in raters]
    height = 2.3 + 0.2 * len(raters)
    fig, (ax1, ax2) = new_figure((11.0, height), 2)
    curves = 0
    for i, r in enumerate(raters):
        # A bin with a handful of verdicts is all interval and no estimate: left off the plot.
        bins = [b for b in r.length_curve if b.n >= MIN_BIN]
        if not bins:
            continue
        xs = [(b.lo + b.hi) / 2 + (i - len(raters) / 2) * 0.008 for b in bins]
        ys = [b.longer_rate for b in bins]
        err = [[max(0.0, b.longer_rate - b.ci[0]) for b in bins], [max(0.0, b.ci[1] - b.longer_rate) for b in bins]]
        ax1.errorbar(xs, ys, yerr=err, fmt="-o", color=_color(i), capsize=3, label=r.rater, ms=4)
        curves += 1
    ax1.axhline(0.5, color="grey", ls="--", lw=1)
    ax1.set_xlim(0, 1)
    few_ticks(ax1.yaxis)
    few_ticks(ax2.xaxis, n=8)  # coefficients are read off it to a tenth
    ax1.set_ylabel("P(longer response wins)")
    if not curves:  # an empty panel would say nothing: it says why, above the no-bias line, not struck through by it
        ax1.set_ylim(0, 1)
        ax1.text(0.5, 0.75, f"no length-gap bin has\n{MIN_BIN} or more decisive verdicts yet", ha="center",
                 va="center", color="grey", transform=ax1.transAxes)
    intervals(ax2, [(i, r.length.coef, r.length.coef_ci, _color(i)) for i, r in enumerate(raters)])
    for i, r in enumerate(raters):
        if r.length.coef is None:
            ax2.text(0.02, i, "not fitted (see the note below)", va="center", color="grey", fontsize=8,
                     transform=ax2.get_yaxis_transform())
    ax2.axvline(0, color="grey", ls="--", lw=1)
    ax2.set_yticks(range(len(names)), names)
    ax2.set_ylim(len(names) - 0.5, -0.5)

    # The left margin holds the first panel's axis and tick labels, the gap between the panels the rater names.
    left = PAD + text_height(ax1.get_ylabel()) + LABEL + tick_width(ax1.yaxis) + TICK
    names_width = max(map(text_width, names)) + TICK
    right = PAD + 0.2  # half the last tick label
    width = max(11.0, left + 2 * MIN_PANEL + names_width + GAP + right)
    panel = (width - left - names_width - GAP - right) / 2
    xlabels = (wrap("|len A - len B| / (len A + len B)", panel),
               wrap(f"log-odds per SD of length difference ({report.length_sd:.0f} chars)", panel))
    titles = ("Longer-wins rate by length gap (95% CI)", "Length coefficient,\nmodel strength held fixed")
    ncol = _legend_columns(ax1.get_legend_handles_labels()[1], width)
    bottom = _below(math.ceil(curves / ncol), xlabels)
    fig.set_size_inches(width, bottom + height + PAD + text_height(titles[1], TITLE) + TITLE_PAD)
    for ax, x, xlabel, title in zip((ax1, ax2), (left, left + panel + GAP + names_width), xlabels, titles):
        ax.set_xlabel(xlabel)
        set_title(ax, title)
        place(ax, x, bottom, panel, height)
    if curves:
        # Below the curves, not inside: inside it covered points, and beside it the next panel's labels.
        _legend_below(ax1, left + panel / 2, ncol)
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

    columns = [str(c) for c in matrix.columns]
    fig, (ax,) = new_figure((7.0, 3.0))
    values = matrix.to_numpy(dtype=float)
    im = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=0.2, vmax=0.8, aspect="auto")
    counts = report.family_counts.reindex(index=names, columns=matrix.columns).fillna(0).to_numpy()
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                cell = im.cmap(im.norm(values[i, j]))
                ink = "white" if luminance(cell) < DARK else "black"  # black on dark red/blue was unreadable
                ax.text(j, i, f"{values[i, j]:.2f}\nn={int(counts[i, j])}", ha="center", va="center", fontsize=7,
                        color=ink)
        fam = raters[i].family
        if fam in matrix.columns:
            # A box alone was hard to find on a small map: the own-family cell is hatched and says so too.
            j = list(matrix.columns).index(fam)
            ink = "white" if np.isfinite(values[i, j]) and luminance(im.cmap(im.norm(values[i, j]))) < DARK else "black"
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", lw=0, edgecolor=ink, alpha=0.35))
            ax.add_patch(Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, lw=2.5, edgecolor="black"))
            ax.text(j + 0.46, i - 0.44, "own", ha="right", va="top", fontsize=6, color=ink, fontweight="bold")
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), names)

    title = "Win rate of each family's responses\n(decisive, cross-family); hatched box = rater's own family"
    cos, sin = math.cos(math.radians(30)), math.sin(math.radians(30))
    # Family names turned 30 degrees, their right ends at their ticks: how far below the
    # heatmap they reach, and how far left of the first column's centre.
    below = max(text_width(c) * sin + text_height(c) * cos for c in columns)
    first = text_width(columns[0]) * cos + text_height(columns[0]) * sin
    cell_w, cell_h = 1.4, 0.65
    left = PAD + max(max(map(text_width, names)) + TICK, first - cell_w / 2)
    bar = (0.15, 0.18)  # the colour bar's gap and width
    right = sum(bar) + TICK + text_width("0.8") + PAD
    # At least as wide as the title's longer line: a wider title ran past the figure's edge.
    width = max(left + cell_w * len(columns) + right, text_width(title, TITLE) + 2 * PAD)
    bottom = PAD + below + TICK
    height = cell_h * len(names)
    fig.set_size_inches(width, bottom + height + TITLE_PAD + text_height(title, TITLE) + PAD)
    heat = width - left - right
    place(ax, left, bottom, heat, height)
    # Over the figure, not the axes: long rater names leave the axes narrower than the title.
    fig.suptitle(title, y=1 - PAD / fig.get_figheight(), va="top", fontsize=TITLE)
    cax = fig.add_axes((0, 0, 1, 1))
    place(cax, left + heat + bar[0], bottom, bar[1], height)
    fig.colorbar(im, cax=cax)
    return fig


def ratings_figure(report: BiasReport):
    """Every rater's BT ratings with their bootstrap CIs, model by model. None without ratings."""
    rated = [(i, r) for i, r in enumerate(report.raters) if r.ratings.bt is not None]
    if not rated:
        return None
    models = sorted(set().union(*(set(r.ratings.bt["model"]) for _, r in rated)))
    order = rated[0][1].ratings.bt.set_index("model")["rating"].reindex(models).sort_values(ascending=False).index
    row_of = {m: k for k, m in enumerate(order)}
    height = 0.45 * len(models) * max(1, len(rated) / 2) + 0.6
    fig, (ax,) = new_figure((8.0, height))
    step = 0.8 / max(1, len(rated))
    for k, (i, r) in enumerate(rated):
        bt = r.ratings.bt
        rating, lower, upper = (bt[c].to_numpy(dtype=float) for c in ("rating", "lower", "upper"))
        y = np.array([row_of[m] for m in bt["model"]]) + (k - (len(rated) - 1) / 2) * step
        # One call per rater, not per point: each errorbar call builds its own artists.
        ax.errorbar(rating, y, xerr=[np.nan_to_num(np.clip(rating - lower, 0, None)),  # withheld: no bar
                                     np.nan_to_num(np.clip(upper - rating, 0, None))], fmt="o",
                    color=_color(i), capsize=3, label=r.rater, ms=4)
    ax.set_yticks(range(len(order)), order)
    ax.set_ylim(len(order) - 0.5, -0.5)
    few_ticks(ax.xaxis, n=8)  # a wide axis, intervals a few points wide
    ax.legend(fontsize=8, frameon=False, loc="lower right")

    title = "Ratings from each rater's votes"
    left = PAD + max(text_width(str(m)) for m in order) + TICK
    right = PAD + 0.25  # half the last tick label
    width = max(8.0, left + MIN_PANEL + right)
    ax.set_xlabel(wrap("Bradley-Terry rating (Elo scale), 95% bootstrap CI", width - left - right))
    bottom = _below(0, [ax.get_xlabel()])
    fig.set_size_inches(width, bottom + height + PAD + text_height(title, TITLE) + TITLE_PAD)
    set_title(ax, title)
    place(ax, left, bottom, width - left - right, height)
    return fig


# The order of the figures in report.html.
FIGURES = {
    "leaderboards": leaderboard_figure, "position": position_figure, "length": length_figure,
    "families": families_figure, "ratings": ratings_figure, "worth": lambda report: worth_figure(report.worth),
    "projection": lambda report: projection_figure(report.worth),
}

# What each figure is drawn from, so that it is drawn as soon as that is known, while the rest is
# computed: the raters' own estimates (with each judge's leaderboard against its reference's, as
# those two ratings give it before its intervals are drawn), the judges' worth.
DRAWN_FROM = {"leaderboards": "raters", "position": "raters", "length": "raters", "families": "raters",
              "ratings": "raters", "worth": "worth", "projection": "worth"}


def figure(report: BiasReport, name: str) -> bytes | None:
    """The figure ``name`` (a key of ``FIGURES``) as PNG bytes; None when it has nothing to show."""
    fig = FIGURES[name](report)
    return None if fig is None else png(fig)


def draw_figures(names: Sequence[str], report: BiasReport) -> dict[str, bytes | None]:
    """:func:`figure` of each of ``names``: a drawing helper's task (:func:`drawing_helper`)."""
    return {name: figure(report, name) for name in names}


def helper_forks(workers: int | None) -> bool:
    """Whether the report's figures (and files) are made by a helper process of their own: on
    more than one core, unless one process (``workers`` 1) is asked for."""
    return workers != 1 and available_cpus() > 1


def drawing_helper(workers: int | None = None) -> Helper:
    """A helper (:class:`analysis.workers.Helper`) that imports matplotlib as soon as it is entered,
    then draws figures (task ``figures``: :func:`draw_figures`)."""
    return Helper({"figures": draw_figures}, prepare=prepare, fork=helper_forks(workers))


def build_report_with_figures(*args, helper: Helper | None = None, **kwargs) -> tuple[BiasReport, dict[str, bytes]]:
    """:func:`analysis.report.build_report`, and the figures :func:`figures` gives, drawn by
    ``helper`` (one with the task ``figures``; by default a :func:`drawing_helper` entered now)
    while the report is computed, each as soon as what it shows is known (:data:`DRAWN_FROM`):
    those from the raters' own estimates (and the judges' leaderboards, which their ratings give)
    while the judges are judged, the worth's as soon as the last worth is priced."""
    if helper is None:
        with drawing_helper(kwargs.get("workers")) as own:
            return build_report_with_figures(*args, helper=own, **kwargs)

    def draw(names: Sequence[str], report: BiasReport):
        return helper.submit("figures", names, report)

    return build_report_drawing(*args, draw=({f: DRAWN_FROM[f] for f in FIGURES}, draw), **kwargs)


def figures(report: BiasReport) -> dict[str, bytes]:
    """The report's figures as PNG bytes, keyed by name, each drawn once; a figure with nothing to show is left out."""
    return {name: image for name in FIGURES if (image := figure(report, name)) is not None}
