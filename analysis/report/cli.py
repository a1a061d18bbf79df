"""``python -m analysis.report``: read votes, build the report, write it."""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from collections.abc import Sequence

from analysis.workers import PARALLEL_ROWS, blas_without_pool
from pairlab.cli import prog_name

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from analysis.importers import describe_formats
    from analysis.stats import CLUSTERS

    p = argparse.ArgumentParser(
        prog=prog_name("python -m analysis.report"),
        description=(
            "Write a bias report (report.html, report.md, report.json) for human votes and LLM judge "
            "verdicts: position bias (first-shown win rate, swapped-order consistency), length bias "
            "(longer-wins rate, length coefficient, style-controlled ratings), self-family bias "
            "(equal-opportunity gap against humans, or against another judge when no humans voted), "
            "agreement with humans (FastChat S1/S2, Cohen's kappa) and rating agreement; and, judging the judges: "
            "self-preference with model strength held fixed (one logistic model across judges), each judge's "
            "leaderboard against the reference's (Arena-Hard-Auto's separability, agreement with confidence, "
            "pair-rank Brier), debiasing variants, a judge panel pooling every LLM judge, and annotator cards "
            "(structure preference, parse failures, seconds per 1,000 judgments from judges.run manifests)."
        ),
        epilog="Example: python -m analysis.report --votes ../shared/data/pandalm --out reports/pandalm",
    )
    p.add_argument("--votes", nargs="+", required=True, metavar="FILE",
                   help="files or folders in any format we read, detected per file, mixed freely: "
                        + "; ".join(describe_formats().splitlines()))
    p.add_argument("--skip-bad", action="store_true",
                   help="skip rows that cannot be read (each one listed) instead of stopping at the first")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--all-votes", action="store_true",
                   help="analyse every vote, also those the arena's leaderboard does not count (cast on named "
                        "models, identity leaks, set aside by vote hygiene, prompt-set votes); by default they are "
                        "left out, as analysis.ratings leaves them out, and the report says how many")
    p.add_argument("--humans", metavar="JUDGE-PREFIX",
                   help="also pool judges whose id starts with this prefix as humans (judges 'human' and "
                        "'human:<id>' always are)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples (of whole clusters, see --cluster) for agreement and self-family CIs "
                        "(default 1000)")
    p.add_argument("--rating-bootstrap", type=int, default=200, metavar="N",
                   help="bootstrap resamples (of whole clusters) for Bradley-Terry rating CIs (default 200)")
    p.add_argument("--cluster", choices=CLUSTERS, default=None,
                   help="the unit every interval treats as independent (default: prompt whenever a prompt carries "
                        "more than one pair, else pair); the report's first lines say which")
    p.add_argument("--seed", type=int, default=0, help="random seed for every bootstrap (default 0)")
    p.add_argument("--no-panel", action="store_true",
                   help="do not add the virtual judge 'panel' (majority of every LLM judge's verdicts per pair)")
    p.add_argument("--workers", type=_positive, metavar="N",
                   help="processes to spread the raters' estimates over (default: every CPU this process may use "
                        f"once there are {PARALLEL_ROWS:,} verdicts or more, else 1); on more than one CPU a helper "
                        "process also draws the figures and writes the files meanwhile, unless N is 1; the numbers "
                        "do not depend on it")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _count_notes(issues: list[str]) -> str:
    """"31 rows read with a remark (25 ... unparseable verdict, 6 ... read as the text)": the notes
    grouped by what they say, file and row left out."""
    from collections import Counter

    kinds = Counter(re.sub(r"^.*?: (idx|line|row) [^:]*: ", "", issue).split(" '")[0].split(", read as")[0]
                    for issue in issues)
    groups = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common(3))
    more = f", {len(kinds) - 3} other kinds" if len(kinds) > 3 else ""
    return f"{len(issues)} rows read with a remark ({groups}{more})"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _progress_bar(items, desc):
    from tqdm import tqdm

    return tqdm(items, desc=desc, file=sys.stderr)


def _bytes_bar(total: int):
    from tqdm import tqdm

    # Shown only when reading takes a while: a small file's report prints no bar for it.
    return tqdm(total=total, desc="reading", unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, delay=0.5)


class _Interrupt:
    """Ctrl-C, remembered: Python drops a KeyboardInterrupt raised while a finaliser runs
    (it prints "Exception ignored" and goes on), so the report could finish and say it wrote
    its files after the user stopped it. The flag outlives the dropped exception."""

    seen = False

    @classmethod
    def handler(cls, signum, frame):
        cls.seen = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.seen:
            raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    blas_without_pool()  # before numpy is imported: this module imports none of it
    parser = _parser()
    args = parser.parse_args(argv)
    _Interrupt.seen = False
    mine = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if mine:
        signal.signal(signal.SIGINT, _Interrupt.handler)
    try:
        return _report(parser, args)
    except KeyboardInterrupt:  # Ctrl-C: nothing half-written is reported as written
        parser.exit(130, f"{parser.prog}: interrupted\n")
    finally:
        if mine:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _report(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pairlab.records import RecordError

    def fail(message: str):  # argparse's style and exit code 2, like analysis.ratings
        parser.exit(2, f"{parser.prog}: error: {message.splitlines()[0]}\n")

    from pairlab.files import check_out_dir, remove_unfinished

    try:  # before any work: a report computed for a folder that cannot be written is lost
        check_out_dir(args.out)
    except ValueError as exc:
        fail(f"{exc} (the folder to write report.html, report.md and report.json in)")
    from analysis.importers.columnar import read_table
    from analysis.judging.annotator import read_run_timings
    from analysis.report.figures import build_report_with_figures
    from analysis.report.render import report_helper, report_paths
    from analysis.workers import WorkerLost
    from pairlab.ratable import leaderboard_votes

    try:
        table, skipped = read_table(args.votes, skip_bad=args.skip_bad,
                                    progress=None if args.quiet else _bytes_bar)
    except (RecordError, OSError) as exc:
        fail(str(exc))
    if not len(table):
        # Say why where an import said it (a file of pairs still to be judged, every row skipped).
        why = f" ({skipped[0]})" if skipped else ""
        fail("no records found in " + ", ".join(args.votes) + why)
    issues = [str(i) for i in skipped]
    table, rule_note = leaderboard_votes(table, all_votes=args.all_votes)
    if not len(table):
        fail(f"no votes to analyse in {', '.join(args.votes)}: {rule_note}")
    if issues:  # the detail goes into the report; the terminal gets one line
        print(f"note: {_count_notes(issues)}: each one is listed in the report", file=sys.stderr)
    if rule_note:
        issues.append(rule_note)
        print(f"note: {rule_note}", file=sys.stderr)
    timings, timing_notes = read_run_timings(args.votes)  # judges.run manifests beside the records
    for note in timing_notes:
        print(f"note: {note}", file=sys.stderr)
    # The helper readies its drawing and templates while the records are analysed (not while they are
    # read: the reader keeps every core busy).
    try:
        with report_helper(args.workers) as helper:
            try:
                report, figs = build_report_with_figures(
                    table, human_prefix=args.humans, n_boot=args.bootstrap, rating_bootstrap=args.rating_bootstrap,
                    seed=args.seed, issues=issues, sources=[str(v) for v in args.votes],
                    progress=None if args.quiet else _progress_bar, panel=not args.no_panel, timings=timings,
                    workers=args.workers, cluster=args.cluster, helper=helper,
                )
                _Interrupt.check()
                paths = helper.submit("write", report, args.out, figs).get()
            except (ValueError, WorkerLost) as exc:
                fail(str(exc))
            _Interrupt.check()
    except KeyboardInterrupt:
        # A helper stopped while it wrote leaves its unfinished files beside the report's (the
        # report's own three stay as they were: none is put in place before all are written).
        for path in report_paths(args.out).values():
            remove_unfinished(path)
        raise
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
