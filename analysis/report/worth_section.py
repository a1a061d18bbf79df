"""The report's "What is this judge worth?" section: its report.json piece (the templates render it) and figures.

Computed in :mod:`analysis.judging.worth` (prediction-powered ratings, PPI++); shown only
for judges that people voted beside: without people there is nothing to measure it by.
"""

from __future__ import annotations

from analysis.judging.worth import JudgeWorth
from analysis.report.formatting import num as _num
from analysis.report.plotting import (LABEL, PAD, TICK, X_TICKS, color, new_figure, place, text_height, text_width,
                                      tick_labels, tick_width)
from analysis.stats.clusters import described_unit

__all__ = ["projection_figure", "read", "worth_figure", "worth_json"]

_READ = (
    "Prediction-powered inference (PPI++, Angelopoulos, Duchi and Zrnic 2023; for Bradley-Terry ratings Boyeau et "
    "al. 2024): people vote on a random sample of pairs, the judge on every pair; the judge's errors measured on "
    "people's sample correct its verdicts everywhere, so the ratings stay on people's scale with valid intervals "
    "however biased the judge is. Effective human votes: how many votes people alone would need for intervals as "
    "narrow (mean 95% interval width over models, each model's from its own lambda, PPI++ per coordinate, "
    "so the judge widens none); lambda: their mean; 95% interval by resampling whole {unit}. "
    "Reproduce with python -m analysis.ratings --judge human --ppi JUDGE."
)


def read(clustering: str) -> str:
    """How to read the worth section, for the report's clustering (report.json's ``clustering``,
    :meth:`analysis.stats.Clustering.describe`): the worth's bootstrap resamples what the report
    clusters by, whole prompts when clustered by prompt, whole pairs otherwise."""
    # Its rounds draw judged pairs (a vote without a pair_id is a pair of its own), or prompts.
    return _READ.format(unit="prompts" if described_unit(clustering) == "prompt" else "pairs")


def worth_json(w: JudgeWorth) -> dict:
    """``judges[j].ppi`` in report.json."""
    return {
        "design": w.design,
        "n_human": _num(w.n_human),
        "n_human_pairs": w.n_human_pairs,
        "n_judge": w.n_judge,
        "lambda": _num(w.lam),
        "effective_human_votes": _num(w.effective_votes),
        "effective_human_votes_ci": _num(w.effective_ci),
        "ratio": _num(w.ratio),
        "ratio_ci": _num(w.ratio_ci),
        "n_dropped_votes": w.n_dropped_votes,
        "width_curve": [{"share": p.share, "n_votes": _num(p.n_votes), "people": _num(p.people),
                         "people_and_judge": _num(p.people_and_judge)} for p in w.curve],
        "ratings": [{
            "model": row["model"],
            **{k: _num(row[k]) for k in ("ppi", "ppi_lower", "ppi_upper", "people", "people_lower", "people_upper",
                                          "judge", "judge_lower", "judge_upper")},
            "rank_set": list(row["rank_set"]),
        } for row in w.ratings.to_dict("records")],
        "lambda_all_votes": _num(w.lam_all),
        "all_labelled": w.all_labelled,
        "projection": None if w.projection is None else [
            {k: _num(v) for k, v in row.items()} for row in w.projection.to_dict("records")],
    }


def worth_figure(worth: tuple[JudgeWorth, ...]):
    """Mean 95% interval width against human votes: people alone vs people plus each judge. None without a curve."""
    if not worth or not any(w.curve for w in worth):
        return None
    fig, (ax,) = new_figure((6.4, 3.8), xscale="log", yscale="log")
    first = worth[0].curve
    ax.plot([p.n_votes for p in first], [p.people for p in first], "o-", color="#555555", label="people alone")
    for k, w in enumerate(worth):
        ax.plot([p.n_votes for p in w.curve], [p.people_and_judge for p in w.curve], "s--", color=color(k + 1),
                label=f"people + {w.judge} on all {w.n_judge} pairs")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):  # plain numbers, not powers of ten
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    # 1-1.5-2-3-5-7 per decade: a curve over 100-600 votes had only 100, 200 and 500 to read it by.
    ax.set_xticks([t for t in (round(10 ** e * m) for e in range(1, 6) for m in (1, 1.5, 2, 3, 5, 7))
                   if min(p.n_votes for w in worth for p in w.curve) / 1.2 <= t
                   <= 1.2 * max(p.n_votes for w in worth for p in w.curve)])
    widths = [v for w in worth for p in w.curve for v in (p.people, p.people_and_judge)]
    ax.set_yticks([t for t in (10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 1000)
                   if min(widths) / 1.3 <= t <= 1.3 * max(widths)])
    ax.set_xlabel("human votes (pairs people voted on, subsampled)")
    ax.set_ylabel("mean 95% interval width (Elo)")
    ax.minorticks_off()  # a tick between the labelled ones costs as much to draw as a labelled one
    ax.grid(True, alpha=0.3)
    # Top right: the curves fall away from it to the right ("best" searched for a place on every draw).
    ax.legend(fontsize=8, loc="upper right")
    left = PAD + text_height(ax.get_ylabel()) + LABEL + tick_width(ax.yaxis) + TICK
    right = PAD + max(map(text_width, tick_labels(ax.xaxis)), default=0.0) / 2  # half the last tick label
    bottom = PAD + X_TICKS + text_height(ax.get_xlabel())
    place(ax, left, bottom, 6.4 - left - right, 3.8 - bottom - PAD)
    return fig


def projection_figure(worth: tuple[JudgeWorth, ...]):
    """Expected mean 95% interval width against the votes still to collect, past those in hand,
    under the planner's active and uniform picks (:mod:`analysis.plan`). None where people
    already voted on every pair."""
    shown = [w for w in worth if w.projection is not None and len(w.projection) > 1]
    if not shown:
        return None
    fig, (ax,) = new_figure((6.4, 3.8), yscale="log")
    for k, w in enumerate(shown):
        curve = w.projection[w.projection["more_votes"] > 0]
        ax.plot(curve["more_votes"], curve["active"], "-", color=color(k + 1), label=f"{w.judge}: active picks")
        ax.plot(curve["more_votes"], curve["uniform"], "--", color=color(k + 1), label=f"{w.judge}: uniform picks")
    ax.set_xscale("log")
    from matplotlib.ticker import NullFormatter, StrMethodFormatter

    for axis in (ax.xaxis, ax.yaxis):  # plain numbers, not powers of ten
        axis.set_major_formatter(StrMethodFormatter("{x:.0f}"))
        axis.set_minor_formatter(NullFormatter())
    most = max(w.projection["more_votes"].max() for w in shown)
    ax.set_xticks([t for t in (1, 10, 100, 1000, 10000, 100000, 1000000) if t <= 1.5 * most])
    widths = [v for w in shown for column in ("active", "uniform") for v in w.projection[column]]
    ax.set_yticks([t for t in (5, 10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 1000)
                   if min(widths) / 1.3 <= t <= 1.3 * max(widths)])
    ax.set_xlabel("more human votes (one per picked pair), past the votes in hand")
    ax.set_ylabel("expected mean 95% width (Elo)")
    ax.minorticks_off()
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    left = PAD + text_height(ax.get_ylabel()) + LABEL + tick_width(ax.yaxis) + TICK
    right = PAD + max(map(text_width, tick_labels(ax.xaxis)), default=0.0) / 2
    bottom = PAD + X_TICKS + text_height(ax.get_xlabel())
    place(ax, left, bottom, 6.4 - left - right, 3.8 - bottom - PAD)
    return fig
