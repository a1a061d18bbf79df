"""``python -m analysis.plan`` (``pairlab plan``): the planner's command. It reads the votes,
plans with :func:`analysis.plan.make_plan` (or checks the plan on held-out votes with
:func:`analysis.plan.replay`), writes the picks and prints what the plan expects."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np
import pandas as pd

from analysis.plan import _MIN_CALIBRATION_VOTES, Plan, Replay, draw_picks, make_plan, replay
from pairlab.cli import prog_name

__all__ = ["build_parser", "describe", "describe_replay", "main"]


def describe(plan: Plan, n_picked: int, out: str, seed: int, level: float = 0.95) -> str:
    """The planner's report: how it chose, the expected widths and how many more votes."""
    pairs = plan.pairs
    n_hand, votes = int(plan.in_hand.sum()), int(pairs.n_votes.sum())
    lines = [f"{len(pairs.pair_id)} pairs judged, {len(pairs.models)} models; people's votes in hand: {votes} on "
             f"{n_hand} pairs" + (" (taken as a uniform draw of the pairs)" if n_hand else "")
             + (f"; {pairs.n_left_out} votes left out (pairs the judge has no usable verdict on)"
                if pairs.n_left_out else ""),
             "uncertainty signals: " + (", ".join(pairs.signals) or "the judge's verdicts only") +
             ("; calibrated on people's votes in hand" if plan.calibrated else
              "; not calibrated (fewer than %d votes in hand)" % _MIN_CALIBRATION_VOTES),
             f"predicted gain of active picks: {plan.gain:.1%} less design variance than uniform picks "
             "(1 - (E sqrt(v h))^2 / E(v h), Zrnic & Candes 2024)"]
    if plan.recommended != plan.strategy:
        lines.append(f"recommended: --strategy {plan.recommended} "
                     + ("(the judge's uncertainty hardly predicts its errors)" if plan.recommended == "uniform"
                        else "(the judge's uncertainty predicts its errors)"))
    lines.append(f"picked {n_picked} new pairs for people ({plan.strategy}, expected {plan.budget:.0f}, seed {seed}; "
                 f"inclusion probabilities {plan.prob.min():.3f}-{plan.prob.max():.3f}) -> {out}")
    w = plan.widths
    width = max(5, *(len(m) for m in w["model"]))
    clustered = ("" if pairs.prompt is None else
                 f", clustered by prompt ({int(pairs.prompt.max()) + 1} prompts) as the ratings command clusters them")
    lines += ["", f"expected {level:.0%} interval widths (Elo points, upper - lower), people plus judge{clustered}:",
              f"{'model':<{width}}  {'now':>7}  {'active':>7}  {'uniform':>7}"]
    lines += [f"{r.model:<{width}}  {r.now:7.1f}  {r.active:7.1f}  {r.uniform:7.1f}" for r in w.itertuples()]
    lines += ["", "N more votes (one per picked pair) under each design; '-' if labelling every pair would not do it:"]
    for r in plan.more.itertuples():
        what = (f"{r.models[0]}: width <= {plan.target_width:g}" if r.what == "width"
                else f"{r.models[0]} vs {r.models[1]}: separate at {level:.0%}")
        lines.append(f"  {what}: {_count(r.active)} active, {_count(r.uniform)} uniform")
    return "\n".join(lines)


def describe_replay(checked: Replay, share: float) -> str:
    """The hold-out check: the widths the plan predicted against those its replayed picks gave."""
    w = checked.widths
    width = max(5, *(len(m) for m in w["model"]))
    lines = ["", f"hold-out check: people's votes on {checked.n_held_out} pairs ({share:.0%}) held out, "
             f"{checked.n_in_hand} pairs in hand; {checked.n_picked} of the picks answered with a held-out vote, "
             f"rated with the judge (PPI++, weighted by inverse inclusion probability, {checked.clustering})",
             f"{'model':<{width}}  {'predicted':>9}  {'replayed':>8}"]
    lines += [f"{r.model:<{width}}  {r.predicted:9.1f}  {r.replayed:8.1f}" for r in w.itertuples()]
    lines.append(f"mean predicted width / mean replayed width: {checked.ratio:.2f}")
    return "\n".join(lines)


def _count(votes) -> str:
    return "-" if votes is None or pd.isna(votes) else str(int(votes))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog_name("python -m analysis.plan"),
        description="Choose which pairs people vote on next, and say how many more votes are needed.\n\n"
        "Reads a judge's verdicts on every pair (and other judges' verdicts, people's votes so far), "
        "estimates where the judge is likely wrong (its probabilities, its two orders, other judges' "
        "disagreement, calibrated on people's votes in hand) and draws about --budget pairs for people "
        "with known probabilities (Poisson sampling, active statistical inference: Zrnic & Candes 2024). "
        "Rate the votes collected on them with\n  python -m analysis.ratings --votes ... --judge human "
        "--ppi JUDGE --picks PICKS.jsonl\nwhich weights each vote by its inverse inclusion probability so "
        "the intervals stay valid. Prints the predicted gain against uniform picks (uniform is recommended "
        "when it is under 10%), the expected interval widths and, per model and per adjacent pair in the "
        "ranking, how many more votes reach --target-width or separate the two at 95%.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="PICKS.jsonl: one row per pair people should vote on: pair_id, inclusion_prob (the probability it "
        "was drawn with, votes in hand included), strategy, in_hand.\n\nexample:\n  python -m analysis.plan --votes "
        "verdicts.jsonl votes.jsonl --judge gpt-4o --budget 500 --out picks.jsonl --target-width 40")
    parser.add_argument("--votes", nargs="+", required=True, metavar="VERDICTS",
                        help="the judge's verdicts on every candidate pair, other judges' verdicts and people's votes "
                             "so far (files or folders, any format analysis.ratings reads)")
    parser.add_argument("--judge", required=True, help="the judge whose verdicts people's votes will correct")
    parser.add_argument("--budget", type=int, required=True, metavar="N", help="new pairs for people (expected count)")
    parser.add_argument("--out", required=True, metavar="PICKS.jsonl", help="where the picks are written")
    parser.add_argument("--strategy", choices=["active", "uniform"], default="active",
                        help="active: probabilities from the judge's uncertainty, mixed with uniform (default); "
                             "uniform: every pair alike")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    parser.add_argument("--target-width", type=float, metavar="ELO",
                        help="interval width to reach (upper - lower, Elo points; 40 means +-20) for 'N more votes'")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON instead of text")
    parser.add_argument("--leave-out-unjudged", action="store_true",
                        help="leave out people's votes on pairs the judge has no usable verdict on (unparseable or "
                             "never judged) instead of stopping")
    parser.add_argument("--holdout", type=float, metavar="SHARE",
                        help="try the planner on votes people already gave: hold out their votes on a random SHARE "
                             "of the pairs (one vote a pair is kept), plan --budget more from the rest, answer the "
                             "picks with the held-out votes and print the widths predicted beside the widths the "
                             "replayed votes give")
    return parser


def main(argv: list[str] | None = None) -> int:
    from analysis.frames import load_frame
    from analysis.frames import show_warnings
    from pairlab.files import check_out_file, replace_file

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.target_width is not None and not 0 < args.target_width < np.inf:
            raise ValueError(f"--target-width must be a positive number of Elo points, not {args.target_width:g}")
        check_out_file(args.out, "--out")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # A campaign's votes are prompt-set votes; unparseable verdicts are kept to be told apart from none.
            frame = load_frame(args.votes, include_prompt_set=True, with_failures=True)
        show_warnings(caught)
        checked = None
        if args.holdout is not None:
            checked = replay(frame, args.judge, args.holdout, args.budget, strategy=args.strategy, seed=args.seed,
                             leave_out_unjudged=args.leave_out_unjudged, target_width=args.target_width)
            plan = checked.plan
        else:
            plan = make_plan(frame, args.judge, args.budget, strategy=args.strategy, target_width=args.target_width,
                             leave_out_unjudged=args.leave_out_unjudged)
        picks = draw_picks(plan, np.random.default_rng(args.seed))
        with replace_file(args.out) as fh:
            for row in picks.to_dict("records"):
                fh.write(json.dumps({k: (bool(v) if k == "in_hand" else v) for k, v in row.items()}) + "\n")
    except (ValueError, OSError) as exc:
        print(f"{parser.prog}: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a fit that failed on good input
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    n_new = int((~picks["in_hand"]).sum())
    if args.json:
        print(json.dumps({"judge": args.judge, "strategy": plan.strategy, "recommended": plan.recommended,
                          "predicted_gain": plan.gain, "calibrated": plan.calibrated, "n_picked": n_new,
                          "widths": plan.widths.replace(np.inf, None).to_dict("records"), "more_votes": plan.more.to_dict("records"),
                          "target_width": plan.target_width, "n_left_out": plan.pairs.n_left_out,
                          "n_prompts": None if plan.pairs.prompt is None else int(plan.pairs.prompt.max()) + 1,
                          **({} if checked is None else {"holdout": {
                              "share": args.holdout, "n_held_out": checked.n_held_out, "n_picked": checked.n_picked,
                              "ratio": checked.ratio, "widths": checked.widths.to_dict("records")}})}, indent=2))
    else:
        print(describe(plan, n_new, args.out, args.seed))
        if checked is not None:
            print(describe_replay(checked, args.holdout))
    return 0

