"""Active picks against uniform picks on real data: a replay on PandaLM, in one run.

PandaLM's test set has three annotators on every one of its 999 pairs, so a replay can
"collect" a person's vote on any pair the planner picks (one annotator per pair, drawn by
the seed). The judge is PandaLM-7B (every pair, one order), GPT-3.5's verdicts are the
second judge whose agreement is the uncertainty signal (no probabilities, one order each).

Printed, medians over seeds:

1. budget 20% of the pairs (200 votes), no votes in hand: mean 95% interval width of the
   PPI ratings on active picks and on uniform picks (people's votes weighted by inverse
   inclusion probability), and of people's votes alone on the same number of uniform picks;
   beside them the planner's predicted widths and predicted gain, and the gain the replay
   measured (1 - (active width / uniform width)^2, a variance reduction like the prediction);
2. the same with a pilot of 100 people's votes in hand (uniform), which calibrates the
   planner's residuals (its gain is then measured, not assumed);
3. "N more votes": from that pilot, the planner's N for every model to reach a target width
   under each design; the replay collects N more under the plan and measures the widths.

``python bench/plan.py [SEEDS]`` (default 20 seeds).
"""

from __future__ import annotations

import statistics
import sys
import warnings

import numpy as np
import pandas as pd

from analysis.frames import load_frame
from analysis.plan import draw_picks, make_plan
from analysis.ratings.bt import ELO_SCALE
from analysis.ratings.ppi import ppi_ratings
from analysis.stats import z_two_sided

DATA = "../shared/data/pandalm"
JUDGE, OTHER = "pandalm-7b", "gpt-3.5-turbo"
SHARE = 0.2
PILOT = 100
TARGET = 110.0  # mean-width target (Elo points) for "N more votes", below the pilot's


def _load() -> tuple[pd.DataFrame, pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the data set's own oddities, reported by the importer
        frame = load_frame(DATA)
    verdicts = frame[frame["judge"].isin([JUDGE, OTHER])]
    people = frame[frame["judge_type"] == "human"]
    return verdicts, people


def _one_vote_per_pair(people: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """One annotator's vote per pair, the annotator drawn per pair."""
    shuffled = people.iloc[rng.permutation(len(people))]
    return shuffled.drop_duplicates("pair_id")


def _widths(verdicts, votes, picks) -> tuple[float, float]:
    """Mean 95% widths (Elo) of the design-weighted PPI ratings and of the people-alone fit."""
    frame = pd.concat([verdicts, votes[votes["pair_id"].isin(picks["pair_id"])]], ignore_index=True)
    result = ppi_ratings(frame, JUDGE, picks=picks)
    t = result.table.table
    alone = 2 * z_two_sided(0.95) * ELO_SCALE * np.sqrt(np.clip(np.diag(result.fit.classical_covariance), 0, None))
    return float((t["upper"] - t["lower"]).mean()), float(alone.mean())


def _row(label: str, values: list[float], note: str = "") -> None:
    print(f"  {label:<58}: {statistics.median(values):7.1f}  {note}")


def main(seeds: int = 20) -> None:
    verdicts, people = _load()
    n_pairs = verdicts.loc[verdicts["judge"] == JUDGE, "pair_id"].nunique()
    budget = round(SHARE * n_pairs)
    print(f"PandaLM: {n_pairs} pairs, judge {JUDGE} (signal: agreement with {OTHER}), budget {budget} votes "
          f"({SHARE:.0%} of the pairs), {seeds} seeds; widths: mean 95% interval width, Elo points")
    for pilot in (0, PILOT):
        got = {k: [] for k in ("active", "uniform", "alone", "pred_active", "pred_uniform", "gain")}
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            votes = _one_vote_per_pair(people, rng)
            hand = votes[votes["pair_id"].isin(rng.choice(votes["pair_id"].unique(), pilot, replace=False))]
            start = pd.concat([verdicts, hand], ignore_index=True)
            for strategy in ("active", "uniform"):
                plan = make_plan(start, JUDGE, budget - pilot, strategy=strategy)
                picks = draw_picks(plan, rng)
                ppi, alone = _widths(verdicts, votes, picks)
                got[strategy].append(ppi)
                got["pred_" + strategy].append(float(plan.widths[strategy].mean()))
                if strategy == "uniform":
                    got["alone"].append(alone)
                else:
                    got["gain"].append(plan.gain)
        print(f"\n{budget} votes in all, {pilot} of them in hand before planning:")
        _row("PPI, active picks", got["active"], f"(planner predicted {statistics.median(got['pred_active']):.1f})")
        _row("PPI, uniform picks", got["uniform"], f"(planner predicted {statistics.median(got['pred_uniform']):.1f})")
        _row("people alone, uniform picks", got["alone"])
        ratio = statistics.median(a / u for a, u in zip(got["active"], got["uniform"]))
        print(f"  active / uniform width (median of per-seed ratios)        : {ratio:7.3f}")
        implied = 1 - (statistics.median(got["pred_active"]) / statistics.median(got["pred_uniform"])) ** 2
        print(f"  gain, variance: replay 1 - ratio^2 {1 - ratio ** 2:+.3f}; the planner's widths imply "
              f"{implied:+.3f}; its gain on the design's variance alone {statistics.median(got['gain']):.3f}")
        print(f"  PPI uniform / people alone width                          : "
              f"{statistics.median(u / a for u, a in zip(got['uniform'], got['alone'])):7.3f}")

    print(f"\n'N more votes' from a pilot of {PILOT} votes to a mean width of {TARGET:g} for every model:")
    for strategy in ("active", "uniform"):
        asked, reached, worst = [], [], []
        for seed in range(seeds):
            rng = np.random.default_rng(100 + seed)
            votes = _one_vote_per_pair(people, rng)
            hand = votes[votes["pair_id"].isin(rng.choice(votes["pair_id"].unique(), PILOT, replace=False))]
            start = pd.concat([verdicts, hand], ignore_index=True)
            need = make_plan(start, JUDGE, 1, strategy=strategy, target_width=TARGET).more
            counts = need.loc[need["what"] == "width", strategy]
            if counts.isna().any():
                continue
            n_more = int(counts.max())
            plan = make_plan(start, JUDGE, n_more, strategy=strategy)
            picks = draw_picks(plan, rng)
            frame = pd.concat([verdicts, votes[votes["pair_id"].isin(picks["pair_id"])]], ignore_index=True)
            t = ppi_ratings(frame, JUDGE, picks=picks).table.table
            w = t["upper"] - t["lower"]
            asked.append(n_more)
            reached.append(float(w.mean()))
            worst.append(float(w.max()))
        print(f"  {strategy}: planner asks {statistics.median(asked):.0f} more (median over {len(asked)} seeds); "
              f"replay reaches mean width {statistics.median(reached):.1f}, widest model "
              f"{statistics.median(worst):.1f} (target {TARGET:g})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
