"""``python -m analysis.ratings``: rate models from votes and judge verdicts."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from analysis.frames import load_frame, show_warnings
from analysis.importers import describe_formats
from analysis.stats import CLUSTERS, FitError, cluster_groups

from .registry import METHODS
from .table import RatingTable
from .votes import WINRATE, parse_anchor, rate_votes
from pairlab.cli import prog_name

_DESCRIPTION = """\
Rate models from pairwise battles: human votes and LLM-judge verdicts, in any of the
formats below (detected per file; a CSV/Parquet table with model_a, model_b, winner is
read column-wise), or folders of them.

Ratings are on the Elo scale: 400 points mean a factor 10 in the odds of winning.
Bradley-Terry ratings are centred on a mean of 1000 (or pinned with --anchor); online Elo
starts every model at 1000. Every rating carries an interval: for bt, bt-davidson and
bt-style the sandwich (robust) 95% interval, or the bootstrap percentile interval when
--bootstrap N > 0; for elo and elo-avg a bootstrap over resampled battles (100 rounds unless
--bootstrap says otherwise); for trueskill the posterior mu +- 1.96 sigma, or a bootstrap.
rank = 1 + the number of models whose lower bound is above this model's upper bound.
An --anchor model's rating is fixed by choice: it has no interval, and every rank is the one the
centred ratings give. Where no maximum-likelihood rating exists (a model with only wins or only
losses), bt and bt-davidson give an early estimate under a stated prior (--l2 1) and say so, with
or without --bootstrap; intervals and ranks from fewer than 10 pairs are not shown.
Votes that repeat are one cluster: by default the prompt (prompt_id, else its text)
whenever a prompt carries more than one pair (each model's answer to it sits in several
pairs, and its difficulty touches all of them), else the pair (several people on one pair, a
judge seeing both orders); --cluster pair|prompt chooses, and the first line of the output
says which. The sandwich intervals of bt, bt-davidson, bt-style and --ppi sum scores within
whole clusters, and the bootstrap of bt, bt-davidson, bt-style, elo, elo-avg and trueskill
resamples whole clusters. bt-style uses FastChat's ridge (reg 0.5). Elo bootstrap intervals shrink for
sparsely sampled models, so elo and elo-avg print a warning: read intervals from bt.

Methods: bt (Bradley-Terry, ties = half a win), bt-davidson (Davidson's tie model),
bt-style (Chatbot Arena style control: length, headers, lists, bold; prints the style
coefficients in log-odds per standard deviation), elo (online Elo in file order),
elo-avg (online Elo averaged over random orders), trueskill (tau = 0), winrate
(AlpacaEval's win rate against a baseline: mean preference, its standard error, the
discrete win rate, and the length-controlled win rate of AlpacaEval's length_controlled_v1
GLM: with AlpacaEval's instruction difficulty for its own annotator and baseline, a
leave-one-out proxy otherwise; see analysis/ratings/winrate.py).

Where people and LLM judges both gave verdicts, only people's are rated unless --judge names
one judge (or 'all' to pool everyone); the first line of the output says which raters were
used. Each judge counts once: where one judge's verdicts come in several readings (per order,
order-averaged, likelihood), its order-averaged ones are rated (--judge NAME picks a reading). Only the votes the arena's leaderboard counts are rated (one rule for every command and
the API, pairlab/ratable.py): votes cast with model names shown, votes flagged as identity
leaks, votes vote hygiene set aside and the prompt-set votes the leaderboard leaves out are
dropped (each --include-* option keeps one kind); records without a verdict (parse failures, AlpacaEval's null preferences) are never rated
(winrate counts them per model as n_dropped).

Formats read:
""" + describe_formats()

# Importers warn once per skipped item; a few show what happened without drowning the table.

_EPILOG = """\
--json prints {"method": ..., "ratings": [{"model", "rating", "lower", "upper", "rank", "n"},
...]} (plus "coefficients" for bt-style); for winrate {"method": "winrate", "baseline",
"ratings": [{"model", "baseline", "win_rate", "standard_error", "lower", "upper",
"discrete_win_rate", "n", "n_dropped", "lc_win_rate", "lc_delta_method_se", "lc_lower", "lc_upper",
"lc_instruction_spread_se", "length_coef", "lc_difficulty", "lc_note"}, ...]}, rates in percent;
lc_delta_method_se is the LC win rate's standard error (its interval is built on it);
lc_instruction_spread_se is what AlpacaEval's leaderboard calls lc_standard_error (the spread
of the per-instruction predictions, not an uncertainty); lc_note says why an LC win rate is null.

--ppi JUDGE adds "rank_set" [best, worst] to each row and "ppi": {"judge", "n_human", "n_human_left_out"
(people's votes on pairs the judge gave no verdict on, left out), "n_human_pairs", "n_judge", "lambda",
"effective_human_votes", "design"} (design "uniform", or with --picks "picks:active" or "picks:uniform" and a
"picks" block; n_human then counts the votes, the fit weighs them); with --method winrate it prints {"method": "winrate-ppi",
"baseline", "ratings": [{"model", "win_rate", "lower", "upper", "n_human", "n_judge", "lambda",
"effective_human_votes", ...}], "ppi": {... lambda the mean over models, effective votes summed}}.

examples:
  python -m analysis.ratings --votes votes.jsonl
  python -m analysis.ratings --votes people.jsonl verdicts.jsonl --judge human --ppi gpt-4o --json
  python -m analysis.ratings --votes ../shared/data/pandalm --judge human --bootstrap 1000 --json
  python -m analysis.ratings --votes battles.json --method elo-avg --k 4 --permutations 100
  python -m analysis.ratings --votes ../shared/data/alpaca_eval/*.annotations.json --method winrate --json"""


def _anchor(text: str) -> tuple[str, float]:
    try:
        return parse_anchor(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MODEL=RATING, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog_name("python -m analysis.ratings"),
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--votes", nargs="+", required=True, metavar="FILE", help="vote/verdict files or folders")
    parser.add_argument("--method", choices=sorted([*METHODS, WINRATE]), default="bt",
                        help="rating method (default: bt)")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N", help="bootstrap rounds for the intervals")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of random orders (default 0)")
    parser.add_argument("--judge", metavar="NAME",
                        help="only this judge id; 'human' means every human judge; 'all' pools people and every "
                             "LLM judge (default: people where people and LLM judges both gave verdicts, else all)")
    parser.add_argument("--humans-only", action="store_true", help="only human votes")
    parser.add_argument("--category", action="append", metavar="CAT", help="only this category (repeatable)")
    parser.add_argument("--include-named", action="store_true", help="also use votes cast with model names shown")
    parser.add_argument("--include-leaks", action="store_true", help="also use votes flagged as identity leaks")
    parser.add_argument("--include-flagged", action="store_true",
                        help="also use votes vote hygiene set aside (the arena's meta.flags)")
    parser.add_argument("--include-prompt-set", action="store_true",
                        help="also use the arena's prompt-set votes that its leaderboard leaves out")
    parser.add_argument("--prompt-set-rated", action="store_true",
                        help="count logged-in voters' first prompt-set vote on each pair, as the arena does with "
                             "prompt_set_rated (default: no prompt-set votes, as the arena's default)")
    parser.add_argument("--level", type=float, default=0.95, help="interval coverage (default 0.95)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip rows that cannot be read (a few shown) instead of stopping at the first")
    bt = parser.add_argument_group("Bradley-Terry (bt, bt-davidson)")
    bt.add_argument("--ties", choices=["half", "davidson"], help="tie model for bt (default half a win)")
    bt.add_argument("--anchor", type=_anchor, metavar="MODEL=RATING", help="pin one model's rating")
    bt.add_argument("--ci", choices=["sandwich", "model", "bootstrap"], help="interval kind (default: sandwich, "
                    "or bootstrap when --bootstrap > 0)")
    bt.add_argument("--l2", type=float, help="ridge penalty on log-strengths, for data without an MLE")
    bt.add_argument("--weight-strong", type=float, metavar="W", dest="strong_weight",
                    help="count a graded verdict of strength >= 2 (Arena-Hard's A>>B) W times; Arena-Hard uses 3. "
                         "The bootstrap needs a whole number W")
    bt.add_argument("--per-pair", action="store_true", default=None, dest="per_pair",
                    help="count each pair once, its votes averaged, instead of each vote once (the default: a "
                         "pair three people voted on weighs three times one with a single vote)")
    elo = parser.add_argument_group("online Elo (elo, elo-avg)")
    elo.add_argument("--k", type=float, help="K-factor (default 4, as FastChat)")
    elo.add_argument("--permutations", type=int, help="random orders averaged by elo-avg (default 100)")
    win = parser.add_argument_group("win rate against a baseline (winrate)")
    win.add_argument("--baseline", metavar="MODEL", help="the baseline (default: the one model in every battle; "
                     "needed when there are only two models)")
    parser.add_argument("--ppi", metavar="JUDGE", help="with --judge human and --method bt: prediction-powered "
                        "ratings on people's scale from their votes and JUDGE's verdicts on every pair (PPI++); "
                        "with --method winrate: win rates against the baseline, the same way")
    parser.add_argument("--cluster", choices=CLUSTERS, default=None,
                        help="the unit intervals treat as independent (default: prompt whenever a prompt carries "
                             "more than one pair, else pair)")
    parser.add_argument("--picks", metavar="PICKS.jsonl",
                        help="with --ppi: people voted on a planner's picks (python -m analysis.plan); each vote is "
                             "weighted by its pair's inverse inclusion probability (active inference) and a vote "
                             "on a pair outside the picks is an error; the arena's prompt-set votes are used")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def _options(args: argparse.Namespace) -> dict:
    allowed = {
        "bt": ("ties", "anchor", "ci", "l2", "strong_weight", "per_pair"),
        "bt-davidson": ("anchor", "ci", "l2", "strong_weight", "per_pair"),
        "elo": ("k",),
        "elo-avg": ("k", "permutations"),
        WINRATE: ("baseline",),
    }.get(args.method, ())
    options = {"level": args.level}
    for name in ("ties", "anchor", "ci", "l2", "k", "permutations", "strong_weight", "baseline", "per_pair"):
        value = getattr(args, name)
        if value is None:
            continue
        if name not in allowed:
            flag = {"strong_weight": "weight-strong", "per_pair": "per-pair"}.get(name, name)
            raise ValueError(f"--{flag} does not apply to --method {args.method}")
        options[name] = value
    return options


def render(result: RatingTable, n_battles: int) -> str:
    """A plain-text leaderboard."""
    import pandas as pd

    lines = [f"method: {result.method}   battles: {n_battles}   interval: {result.interval}", ""]
    width = max(5, *(len(m) for m in result.table["model"]))
    lines.append(f"{'rank':>4}  {'model':<{width}}  {'rating':>8}  {'lower':>8}  {'upper':>8}  {'n':>7}")
    for row in result.table.itertuples(index=False):
        lines.append(
            f"{'-' if pd.isna(row.rank) else row.rank:>4}  {row.model:<{width}}  {row.rating:8.1f}  "
            f"{_bound(row.lower)}  {_bound(row.upper)}  {row.n:>7}"
        )
    if result.coefficients is not None:
        lines += ["", "style coefficients (log-odds per standard deviation):"]
        for row in result.coefficients.itertuples(index=False):
            lines.append(f"  {row.name:<8} {row.coef:+.3f}  [{row.lower:+.3f}, {row.upper:+.3f}]")
    return "\n".join(lines)


def _bound(value: float) -> str:
    return f"{'-':>8}" if value != value else f"{value:8.1f}"  # NaN: no interval claimed


def render_winrate(result) -> str:
    """A plain-text win-rate table (percent)."""
    table = result.table
    width = max(5, *(len(m) for m in table["model"]))
    level = f"{result.level:.0%}"
    sources = {"alpaca_eval": "AlpacaEval's instruction difficulty (data/alpaca_eval_instruction_difficulty.csv) "
               "and gamed-baseline prior", "leave-one-out proxy": "leave-one-out instruction-difficulty proxy",
               "none": "no instruction-difficulty term"}
    used = ", ".join(sources[s] for s in table["lc_difficulty"].unique())
    lines = [f"method: winrate   baseline: {result.baseline}   intervals: Wald {level}",
             f"LC: AlpacaEval's length_controlled_v1 GLM with {used}; LC se is its delta-method standard error", "",
             f"{'model':<{width}}  {'win rate':>8}  {'se':>5}  {'lower':>6}  {'upper':>6}  {'discrete':>8}  "
             f"{'LC':>6}  {'LC se':>5}  {'n':>6}  {'dropped':>7}"]
    for row in table.to_dict(orient="records"):
        lines.append(
            f"{row['model']:<{width}}  {row['win_rate']:8.2f}  {row['standard_error']:5.2f}  {row['lower']:6.2f}  "
            f"{row['upper']:6.2f}  {row['discrete_win_rate']:8.2f}  {row['lc_win_rate']:6.2f}  "
            f"{row['lc_delta_method_se']:5.2f}  {row['n']:>6}  {row['n_dropped']:>7}"
        )
    unfitted = table.dropna(subset=["lc_note"]).groupby("lc_note", sort=False)["model"]
    lines += [f"{', '.join(models)}: LC {note}" for note, models in unfitted]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        options = _options(args)
        if args.ppi is not None:
            from .ppi import check_ppi_options

            check_ppi_options(args)
        if args.picks is not None and (args.ppi is None or args.method != "bt"):
            raise ValueError("--picks weights people's votes in prediction-powered ratings: use it with --ppi JUDGE "
                             "and --method bt")
        picks = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if args.picks is not None:
                from analysis.plan import read_picks

                picks = read_picks(args.picks)
            frame = load_frame(
                args.votes,
                judge=None if args.ppi or args.judge == "all" else args.judge,
                humans_only=args.humans_only,
                anonymous_only=not args.include_named,
                exclude_leaks=not args.include_leaks,
                exclude_flagged=not args.include_flagged,
                categories=args.category,
                skip_bad=args.skip_bad,
                with_failures=args.method == WINRATE,
                include_prompt_set=args.include_prompt_set or picks is not None,  # a campaign's votes
                prompt_set_rated=args.prompt_set_rated,
            )
        show_warnings(caught)
        if frame.empty:
            raise ValueError(f"no battles to rate in {', '.join(args.votes)}" + _filters(args))
        rated = rate_votes(frame, args.method, judge=args.judge, ppi=args.ppi, picks=picks,
                           bootstrap=args.bootstrap, seed=args.seed, cluster=args.cluster, **options)
        result, raters, frame = rated.result, rated.raters, rated.battles
        clustering = f"intervals {(rated.clustering or cluster_groups(frame, args.cluster)).describe()}"
    except (FitError, RuntimeError) as exc:  # a fit that failed on good input
        print(f"{parser.prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:  # bad input or usage: argparse's style and exit code
        print(f"{parser.prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    for warning in rated.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # allow_nan=False: JSON has no Infinity or NaN; to_dict already writes them as null.
    if args.json:
        out = result.to_dict() if raters is None else {**result.to_dict(), "raters": raters}
        print(json.dumps({"clustering": clustering, **out}, indent=2, allow_nan=False))
        return 0
    print(clustering)
    if args.ppi is not None and args.method == WINRATE:
        print(result.describe())
    elif args.ppi is not None:
        print(render(result.table, result.n_battles))
        print("\n" + result.describe())
    elif args.method == WINRATE:
        print(raters)
        print(render_winrate(result))
    else:
        print(raters)
        print(render(result, len(frame)))
    return 0


def _filters(args: argparse.Namespace) -> str:
    named = [f"--judge {args.judge}" if args.judge and args.judge != "all" else "",
             "--humans-only" if args.humans_only else "",
             f"--category {', '.join(args.category)}" if args.category else ""]
    named = [n for n in named if n]
    return f" after {' '.join(named)}" if named else ""


def _one_line(exc: Exception) -> str:
    """The error's first line: the formats listing some errors append is for --help."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
