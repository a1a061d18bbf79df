"""The analysis behind the bias report: every estimate for every rater, as frozen data."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.judging.agreement import Agreement, RankAgreement, agreement, baseline_items, human_baseline, rank_agreement
from analysis.judging.annotator import AnnotatorCard, RunTiming, annotator_card
from analysis.judging.meta_metrics import (
    BOOT_ROUNDS, RANKING_MODELS, LeaderboardAgreement, leaderboard_agreement, leaderboard_intervals,
    reference_ceiling,
)
from analysis.bias.length import LengthBias, LengthBin, length_bias, length_curve, length_sd
from analysis.bias.position import PositionBias, debiased_rows, no_display_order, position_bias
from analysis.judging.panel import PANEL, PanelSummary, panel_summary, panel_table
from analysis.judging.settings import split_settings
from analysis.bias.self_family import SelfFamilyBias, self_family_bias
from analysis.bias.self_preference import ControlledSelfPreference, JudgeRows, controlled_self_preference
from analysis.judgment_table import HUMAN_RATER, judgment_table
from analysis.stats import cluster_codes, cluster_groups
from analysis.judging.variants import Variant, best_variants, judge_variants, variant_rounds, with_intervals
from analysis.judging.worth import JudgeWorth, worth_of_judges
from analysis.workers import PARALLEL_ROWS, Workers, available_cpus
from pairlab import record_table
from pairlab.models import family_of
from pairlab.records import Record, saw_display_order

__all__ = ["BiasReport", "RaterReport", "Ratings", "build_report", "build_report_drawing", "judge_worth_alone",
           "rating_frames"]

STRONG_WEIGHT = 3.0  # Arena-Hard-Auto counts a strong verdict (A>>B) as three battles
WEIGHTING = (
    "graded verdicts: a strong verdict (A>>B, strength 2) counts three times in the Bradley-Terry fit, as "
    "Arena-Hard-Auto weights them (analysis.ratings --weight-strong 3); style-controlled BT counts every verdict once"
)

CALIBRATED = (
    "one verdict per pair for judge and reference: the mean of prob_a over both orders where the records "
    "carry it (balanced position calibration, Wang et al. 2023), else the same winner in every order"
)


@dataclass(frozen=True)
class Ratings:
    """Ratings of one rater's votes: Bradley-Terry, and style-controlled BT.

    ``controlled`` is Chatbot Arena's style control (``bt-style``: length *and* markdown
    headers, lists and bold held out, FastChat's ridge), not a length-only control; the
    report labels it so. Each table is fitted on its own: one failing leaves the other.
    """

    bt: pd.DataFrame | None  # model, rating, lower, upper, rank, n
    controlled: pd.DataFrame | None  # style-controlled BT
    style: pd.DataFrame | None  # name, coef, lower, upper, n_pairs, sparse (the style terms)
    note: str | None = None
    bt_interval: str | None = None  # how bt's lower/upper were obtained (clustering included)
    style_interval: str | None = None
    warnings: tuple[str, ...] = ()
    weighting: str | None = None  # set when graded verdicts were weighted (Arena-Hard)
    # Against one baseline in every battle (AlpacaEval's design): win rates and AlpacaEval's
    # length-controlled win rates (analysis.ratings.winrate), percent; None otherwise.
    win_rates: pd.DataFrame | None = None
    baseline: str | None = None


@dataclass(frozen=True)
class RaterReport:
    rater: str
    is_human: bool
    family: str | None
    n_records: int
    n_parse_errors: int
    position: PositionBias
    length: LengthBias
    length_curve: tuple[LengthBin, ...]
    self_family: SelfFamilyBias | None
    agreement: Agreement  # a judge's suspect verdicts left out
    ranking: RankAgreement | None
    ratings: Ratings
    # Verdicts on texts that hold a verdict marker: the text may have dictated them.
    n_suspect: int = 0
    # Judging the judge: strength-controlled self-preference, the judge's
    # leaderboard against the reference's, debiasing variants, and its annotator card.
    reference: str | None = None
    controlled: ControlledSelfPreference | None = None
    leaderboard: LeaderboardAgreement | None = None
    variants: tuple[Variant, ...] = ()
    best_variant: dict[str, str] | None = None
    annotator: AnnotatorCard | None = None
    panel_members: tuple[str, ...] = ()
    # Agreement on the items the human-human baseline rests on (two or more voters), so the
    # baseline and every judge are compared on the same pairs.
    agreement_same_pairs: Agreement | None = None
    panel: PanelSummary | None = None  # the panel only: ties, its best member, its members' families


@dataclass(frozen=True)
class BiasReport:
    raters: tuple[RaterReport, ...]
    n_records: int
    length_sd: float
    family_matrix: pd.DataFrame  # rows raters, columns families: win rate; NaN where none
    family_counts: pd.DataFrame
    issues: tuple[str, ...]
    sources: tuple[str, ...]
    # What each judge is worth in human votes (analysis.judging.worth), where people voted beside it.
    worth: tuple[JudgeWorth, ...] = ()
    worth_notes: tuple[str, ...] = ()
    # Judges none of whose records holds a verdict (every one a parse failure): (name, records).
    without_verdicts: tuple[tuple[str, int], ...] = ()
    # The unit every interval treats as independent (analysis.stats.cluster_groups), said in words.
    clustering: str = ""

    def rater(self, name: str) -> RaterReport:
        return next(r for r in self.raters if r.rater == name)


def _choose_reference(name: str, shared: dict[str, int], families: dict[str, str | None]) -> str | None:
    """Humans when they voted on this rater's pairs; else the judge sharing most pairs,
    preferring one of another family (a same-family reference would hide the bias).
    The panel is never a reference, and has none but people (its members are in it)."""
    if shared.get(HUMAN_RATER, 0) > 0:
        return HUMAN_RATER
    if name == PANEL:
        return None
    candidates = [other for other, n in shared.items() if other not in (name, HUMAN_RATER, PANEL) and n > 0]
    if not candidates:
        return None
    mine = families.get(name)
    return min(candidates, key=lambda o: (mine is not None and families.get(o) == mine, -shared[o], o))


def _shared_pairs(name: str, pair_sets: dict[str, np.ndarray]) -> dict[str, int]:
    """How many pairs each other rater judged with ``name`` (pair codes, each set sorted and unique)."""
    return {other: len(np.intersect1d(pair_sets[name], codes, assume_unique=True))
            for other, codes in pair_sets.items() if other != name}


def _rater_family(name: str, rows: pd.DataFrame) -> str | None:
    """The judge's family as its records state it, else as the model registry knows it."""
    families = rows["judge_family"].dropna()
    family = str(families.mode().iloc[0]) if not families.empty else family_of(name)
    return None if family == "unknown" else family


def rating_frames(table: pd.DataFrame, raters: pd.Series) -> dict[str, pd.DataFrame]:
    """One battle frame per rater (``raters``: each row's rater; raters in order of first
    appearance, rows in table order), the responses' style features counted once for all.

    The raters judged the same responses (in both orders), so the style counts of
    style-controlled BT are computed on one frame of every rater's records, then split.
    """
    from analysis.frames import COLUMNS, battle_frame
    from analysis.ratings import add_style_features

    codes, names = pd.factorize(raters)
    order = np.argsort(codes, kind="stable")
    # Only the battle frame's columns are reordered.
    frame = add_style_features(battle_frame(table[[c for c in table.columns if c in COLUMNS]].iloc[order]))
    if "prompt" in table.columns:  # the prompt text, where a record has no prompt_id: the cluster's key
        frame["prompt"] = table["prompt"].iloc[order].to_numpy()
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(names)))]
    return {str(name): frame.iloc[bounds[k]: bounds[k + 1]].reset_index(drop=True) for k, name in enumerate(names)}


def _ratings(frame: pd.DataFrame, bootstrap: int, seed: int, cluster: str | None = None) -> Ratings:
    from analysis.ratings.votes import rate_battles

    # Distinct names first, not a set built from every row's Arrow string one by one.
    if len(set(frame["model_a"].unique()) | set(frame["model_b"].unique())) < 2:
        return Ratings(None, None, None, "fewer than two models")
    fitted, notes = {}, []
    graded = "strength" in frame and frame["strength"].notna().any()
    bt_options = {"bootstrap": bootstrap, "seed": seed, "cluster": cluster,
                  **({"strong_weight": STRONG_WEIGHT} if graded else {})}
    for method, options, label in (("bt", bt_options, "Bradley-Terry"),
                                   ("bt-style", {"cluster": cluster}, "style-controlled BT")):
        try:
            fitted[method] = rate_battles(frame, method, **options).result
        except (ValueError, RuntimeError) as exc:  # e.g. disconnected comparisons, no convergence
            notes.append(f"{label} ratings not fitted: {exc}")
    bt, styled = fitted.get("bt"), fitted.get("bt-style")
    win_rates, baseline = _win_rates(frame)
    return Ratings(
        win_rates=win_rates, baseline=baseline,
        bt=bt.table if bt else None,
        controlled=styled.table if styled else None,
        style=styled.coefficients if styled else None,
        note="; ".join(notes) or None,
        bt_interval=bt.interval if bt else None,
        style_interval=styled.interval if styled else None,
        warnings=tuple(w for table in fitted.values() for w in table.warnings),
        weighting=WEIGHTING if graded and bt else None,
    )


def _win_rates(frame: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    """Win rates and length-controlled win rates against the one model in every battle, when
    there is one and two or more models face it (AlpacaEval's reports); else (None, None)."""
    from analysis.ratings.winrate import baseline_candidates, win_rates

    if len(baseline_candidates(frame)) != 1:
        return None, None
    try:
        result = win_rates(frame)
    except ValueError:  # e.g. a battle with neither a winner nor a probability
        return None, None
    if len(result.table) < 2:
        return None, None
    columns = ["model", "win_rate", "lower", "upper", "lc_win_rate", "lc_lower", "lc_upper", "n", "lc_note"]
    return result.table[[c for c in columns if c in result.table.columns]], result.baseline


def weighted_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Judgment-table rows with the ``weight`` each verdict had in the rater's BT fit."""
    from analysis.ratings.registry import strength_weights

    strength = pd.to_numeric(rows["strength"], errors="coerce") if "strength" in rows else None
    if strength is None or strength.isna().all():
        return rows
    return rows.assign(weight=strength_weights(rows, STRONG_WEIGHT))


def _family_matrix(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per rater and family: share of decisive cross-family records the family's response won."""
    rows = table[table["decisive"] & table["family_a"].notna() & (table["family_a"] != table["family_b"])]
    won_a = rows["first_wins"] == 1
    long = pd.concat(
        [
            pd.DataFrame({"rater": rows["rater"], "family": rows["family_a"], "won": won_a.astype(float)}),
            pd.DataFrame({"rater": rows["rater"], "family": rows["family_b"], "won": (~won_a).astype(float)}),
        ]
    )
    grouped = long.groupby(["rater", "family"])["won"]
    return grouped.mean().unstack("family"), grouped.size().unstack("family").fillna(0).astype(int)


def _worker_count(workers: int | None, n_rows: int) -> int:
    if workers is not None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        return workers
    return available_cpus() if n_rows >= PARALLEL_ROWS else 1


def _build_report(
    records: Sequence[Record] | pd.DataFrame,
    human_prefix: str | None = None,
    n_boot: int = 1000,
    rating_bootstrap: int = 200,
    seed: int = 0,
    issues: Sequence[str] = (),
    sources: Sequence[str] = (),
    progress: Callable | None = None,
    panel: bool = True,
    timings: dict[str, RunTiming] | None = None,
    workers: int | None = None,
    cluster: str | None = None,
    draw: tuple[dict[str, str], Callable] | None = None,
) -> tuple[BiasReport, dict[str, bytes] | None]:
    """All bias estimates for every rater in ``records`` (humans pooled as ``human``);
    ``records`` may be records or their table (:mod:`pairlab.record_table`).

    Records without a verdict (``parse_error``) are counted per rater, never analysed.
    With ``panel``, two or more LLM judges are also pooled into the virtual judge
    ``panel`` (:mod:`analysis.judging.panel`). ``timings`` are the judges' run times
    (:func:`analysis.judging.annotator.read_run_timings`) for their annotator cards.
    ``workers``: processes the raters' estimates are spread over (:mod:`analysis.workers`);
    by default every CPU this process may use, once there are enough records to repay a fork.
    The numbers do not depend on it. ``cluster`` (``"pair"``, ``"prompt"``; None: the prompt
    whenever a prompt carries more than one pair) is the unit every interval treats as
    independent (:func:`analysis.stats.cluster_groups`). With ``draw``, also the report's
    figures (:func:`analysis.report.figures.figures`), handed to ``draw`` as their estimates are
    made (:func:`build_report_drawing`); else None.
    """

    table = records if isinstance(records, pd.DataFrame) else record_table.from_records(list(records))
    table, person, usable, members, setting_notes = _rated_table(table, human_prefix, panel)
    issues = (*issues, *setting_notes)
    judged, parse_errors = judgment_table(table, human_prefix, key_codes=True)
    clustering = cluster_groups(judged, cluster)
    judged["cluster"] = cluster_codes(clustering.groups)
    # The panel restates its members' texts; of the rest only the lengths are filtered, not every column.
    sd = length_sd(judged[["len_a", "len_b"]][(judged["rater"] != PANEL).to_numpy()])
    by_rater = {name: rows for name, rows in judged.groupby("rater", sort=True)}
    has_humans = HUMAN_RATER in by_rater
    families = {name: None if name == HUMAN_RATER else _rater_family(name, rows) for name, rows in by_rater.items()}
    references = _references(judged, by_rater, families)
    battle_frames = _battle_frames(table, person, usable)
    names = sorted(by_rater, key=lambda n: (n != HUMAN_RATER, n))
    shared_items = baseline_items(by_rater[HUMAN_RATER]) if has_humans else pd.Index([])

    judging = _JudgingTheJudges(by_rater, battle_frames, parse_errors, references, families, members,
                                timings or {}, n_boot, rating_bootstrap, seed, clustering.kind)

    def rater_task(name: str) -> RaterReport:
        rows = by_rater[name]
        reference = references.get(name)
        agree, same_pairs, self_fam = _agreement_and_self_family(
            name, rows, by_rater[reference] if reference else rows.iloc[:0], reference, families[name],
            shared_items, n_boot, seed)
        return judging.card(RaterReport(
            rater=name,
            is_human=name == HUMAN_RATER,
            family=families[name],
            n_records=len(rows),
            n_parse_errors=parse_errors.get(name, 0),
            n_suspect=int(rows["suspect"].sum()),
            position=(position_bias(rows, n_boot=n_boot, seed=seed) if name != PANEL and saw_display_order(name)
                      else no_display_order(len(rows))),
            length=length_bias(rows, sd, n_boot=n_boot, seed=seed),
            length_curve=tuple(length_curve(rows, n_boot=n_boot, seed=seed)),
            self_family=self_fam,
            agreement=agree,
            agreement_same_pairs=same_pairs,
            ranking=None,
            ratings=_ratings(battle_frames[name], rating_bootstrap, seed, clustering.kind),
        ))

    def worth_task(name: str, bt: pd.DataFrame | None) -> tuple[tuple[JudgeWorth, ...], tuple[str, ...]]:
        return worth_of_judges(battle_frames.get(HUMAN_RATER), {name: (battle_frames[name], bt)}, seed=seed,
                               cluster=clustering.kind)

    def assemble(reports: dict[str, RaterReport], worth=(), worth_notes=()) -> BiasReport:
        return BiasReport(
            raters=tuple(reports[n] for n in names),
            n_records=len(judged),
            length_sd=sd,
            family_matrix=matrix,
            family_counts=counts,
            issues=tuple(issues),
            sources=tuple(sources),
            worth=worth,
            worth_notes=worth_notes,
            without_verdicts=tuple(sorted((name, n) for name, n in parse_errors.items() if name not in by_rater)),
            clustering=clustering.describe(),
        )

    # The raters' estimates first, then what judges each judge (it needs its reference's
    # ratings): each a task, spread over the workers, the longest handed out first.
    tasks = {"rater": rater_task, "controlled": judging.controlled, "judge": judging.judge, "worth": worth_task,
             "ceiling": judging.ceiling, "families": lambda: _family_matrix(judged)}
    # No more workers than tasks in a round (a rater each, then up to two a judge).
    n_workers = min(_worker_count(workers, len(judged)), 2 * len(names))
    with Workers(n_workers, tasks) as pool:
        order = [n for n in names if n != HUMAN_RATER] + [n for n in names if n == HUMAN_RATER]
        done = _run_named(pool, {**{("rater", n): (n,) for n in order}, ("controlled",): (), ("families",): ()},
                          progress, desc="raters")
        controlled, (matrix, counts) = done[("controlled",)], done[("families",)]
        reports = _ranked({n: done[("rater", n)] for n in names})
        judges = [n for n in names if references.get(n) is not None and n != HUMAN_RATER]
        valued = [n for n in judges if references[n] == HUMAN_RATER] if has_humans else []
        # A reference's agreement with itself, once for all the judges it is the reference of.
        ceilings = sorted({references[n] for n in judges
                           if reports[n].ratings.bt is not None and reports[references[n]].ratings.bt is not None})

        def priced(done: dict) -> tuple[tuple[JudgeWorth, ...], tuple[str, ...]]:
            found = [done[("worth", n)] for n in valued]
            return tuple(w for worth, _ in found for w in worth), tuple(note for _, notes in found for note in notes)

        # Each figure handed to ``draw`` as soon as what it shows is known, while the rest is computed.
        stages, submit = draw if draw else ({}, None)
        drawing = []

        def hand(stage: str, report: BiasReport) -> None:
            names = [f for f, source in stages.items() if source == stage]
            if names:
                drawing.append(submit(names, report))

        # A judge's leaderboard against its reference's is known once both are rated (the judging
        # adds its intervals), so its figure, which shows no interval of it, is drawn with the raters'.
        boards = {n: leaderboard_agreement(reports[n].ratings.bt, reports[references[n]].ratings.bt) for n in judges}
        hand("raters", assemble({**reports, **{n: replace(reports[n], leaderboard=boards[n]) for n in judges}}))
        # A judge's worth is the longest of these (at 100k records 0.8 s of CPU against 0.45 s for
        # its leaderboard, 11-16 s against 5-7 s at 1M): handed out after the judges, the last
        # worth ran alone while the other worker sat idle (6 s at 1M).
        done = _run_named(pool, {
            **{("worth", n): (n, reports[n].ratings.bt) for n in valued},
            **{("judge", n): (n, reports[n], reports[references[n]].ratings, controlled.get(n), boards[n])
               for n in judges},
            **{("ceiling", r): (r,) for r in ceilings}}, progress, desc="judging the judges", once=[
                ([("worth", n) for n in valued], lambda done: hand("worth", assemble(reports, *priced(done))))])
        judges_judged = {n: replace(reports[n], **judging.with_ceiling(
            done[("judge", n)], done.get(("ceiling", references[n])))) for n in judges}
        report = assemble({**reports, **judges_judged}, *priced(done))
    if not draw:
        return report, None
    drawn = {name: image for handle in drawing for name, image in handle.get().items()}
    return report, {f: drawn[f] for f in stages if drawn[f] is not None}


def _run_named(pool: Workers, calls: dict[tuple, tuple], progress: Callable | None = None, desc: str = "",
               once: Sequence[tuple[Sequence[tuple], Callable[[dict], None]]] = ()) -> dict[tuple, object]:
    """Each call, keyed ``(task, name...)`` -> ``args``, run once on ``pool``: results by key, so no
    result is found by its place in a list. Given the longest first, as :meth:`Workers.run` hands them out.
    ``once``: ``(keys, then)`` pairs, ``then(results so far)`` called as soon as every one of ``keys``
    has arrived, while the rest still run."""
    keys, done = list(calls), {}
    waiting = list(once)

    def arrived(index: int | None = None, result=None) -> None:
        if index is not None:
            done[keys[index]] = result
        for entry in [w for w in waiting if all(k in done for k in w[0])]:
            waiting.remove(entry)
            entry[1](done)

    arrived()  # what waits on nothing
    pool.run([(key[0], args) for key, args in calls.items()], progress, desc=desc, arrived=arrived)
    return done


def _rated_table(table: pd.DataFrame, human_prefix: str | None, panel: bool):
    """The table the report rates (:func:`_raters`), and with ``panel`` the virtual judge's
    verdicts stacked on. Returns it with its person and usable (has a verdict) masks, the
    panel's members and the notes on the settings split."""
    table, person, usable, split_notes = _raters(table, human_prefix)
    pooled = panel_table(table[usable], person[usable]) if panel else table.iloc[:0]
    if not len(pooled):
        return table, person, usable, (), split_notes
    if (table["judge"] == PANEL).any():
        raise ValueError(f"a judge is already named {PANEL!r}: rename it, or build the report without the panel")
    members = tuple(sorted(set(itertools.chain.from_iterable(pooled["panel_members"].to_numpy()))))
    table = record_table.stack(table, pooled)
    person = np.r_[person, np.zeros(len(pooled), dtype=bool)]
    usable = np.r_[usable, np.ones(len(pooled), dtype=bool)]
    return table, person, usable, members, split_notes


def _references(judged: pd.DataFrame, by_rater: dict[str, pd.DataFrame],
                families: dict[str, str | None]) -> dict[str, str | None]:
    """Each judge's reference rater (:func:`_choose_reference`), from the pairs they share."""
    # Pair keys are integer codes from 0 (key_codes): each rater's sorted set of them, counted
    # rather than sorted.
    n_pairs = int(judged["pair_id"].max()) + 1 if len(judged) else 0
    pair_sets = {name: np.flatnonzero(np.bincount(rows["pair_id"].to_numpy(), minlength=n_pairs))
                 for name, rows in by_rater.items()}
    return {name: _choose_reference(name, _shared_pairs(name, pair_sets), families)
            for name in by_rater if name != HUMAN_RATER}


def _agreement_and_self_family(name: str, rows: pd.DataFrame, ref_rows: pd.DataFrame, reference: str | None,
                               family: str | None, shared_items: pd.Index, n_boot: int, seed: int):
    """A rater's agreement with its reference (and on the pairs every rater shares) and its
    self-family bias: (agreement, agreement on shared pairs or None, self-family or None)."""
    if name == HUMAN_RATER:
        agree = human_baseline(rows, n_boot=n_boot, seed=seed)
        return agree, agree if len(shared_items) else None, None
    # Suspect verdicts (a judged text holds a verdict marker) stay out of agreement.
    trusted = rows[~rows["suspect"]]
    if reference == HUMAN_RATER:
        agree = agreement(trusted, ref_rows, reference, n_boot=n_boot, seed=seed)
        same_pairs = agreement(trusted[trusted["pair_id"].isin(shared_items)],
                               ref_rows[ref_rows["pair_id"].isin(shared_items)], reference, n_boot=n_boot,
                               seed=seed) if len(shared_items) else None
        return agree, same_pairs, self_family_bias(rows, ref_rows, name, family, reference, n_boot=n_boot, seed=seed)
    # Judge against judge: each has one verdict per pair. Agreement keeps FastChat's
    # unanimity rule; self-family bias uses probabilities where both orders have them,
    # so a judge that always answers "A" still shows which response it leans to.
    agree = agreement(trusted, debiased_rows(ref_rows[~ref_rows["suspect"]]), reference, n_boot=n_boot, seed=seed)
    self_fam = self_family_bias(
        debiased_rows(rows, calibrate=True), debiased_rows(ref_rows, calibrate=True), name, family,
        reference, n_boot=n_boot, seed=seed, verdicts=CALIBRATED,
    )
    return agree, None, self_fam


def _ranked(reports: dict[str, RaterReport]) -> dict[str, RaterReport]:
    """Each judge's rank agreement with the people's Bradley-Terry ratings, where both exist."""
    human = reports.get(HUMAN_RATER)
    human_bt = human.ratings.bt if human is not None else None
    if human_bt is None:
        return reports
    return {name: replace(rep, ranking=rank_agreement(human_bt, rep.ratings.bt))
            if name != HUMAN_RATER and rep.ratings.bt is not None else rep for name, rep in reports.items()}
def _raters(table: pd.DataFrame, human_prefix: str | None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[str]]:
    """The table with each judge's settings apart, who is a person, which rows carry a verdict, and notes."""
    person = record_table.is_person(table, human_prefix)
    # A judge run in two modes or with two templates is two raters, never one mixture.
    table, notes = split_settings(table, person)
    return table, person, table["parse_error"].isna().to_numpy(), notes


def _battle_frames(table: pd.DataFrame, person: np.ndarray, usable: np.ndarray) -> dict[str, pd.DataFrame]:
    """Each rater's battles (people pooled as ``human``), as the raters' ratings read them."""
    return rating_frames(table[usable], table["judge"].where(~person, HUMAN_RATER)[usable])


def judge_worth_alone(table: pd.DataFrame, judge: str, *, human_prefix: str | None = None,
                      rating_bootstrap: int = 200, seed: int = 0, cluster: str | None = None) -> JudgeWorth:
    """The report's ``ppi`` entry for one judge (:func:`analysis.judging.worth.judge_worth`), without
    the rest of the report: the same battles, the judge's own ratings beside, the same seed, the
    same clusters (``cluster`` as the report's)."""
    table, person, usable, _ = _raters(table, human_prefix)
    frames = _battle_frames(table, person, usable)
    if judge not in frames or judge == HUMAN_RATER:
        raise ValueError(f"no verdicts of judge {judge!r}; judges: {', '.join(n for n in frames if n != HUMAN_RATER)}")
    kind = cluster_groups(pd.concat(list(frames.values()), ignore_index=True), cluster).kind
    alone = _ratings(frames[judge], rating_bootstrap, seed, kind).bt
    found, notes = worth_of_judges(frames.get(HUMAN_RATER), {judge: (frames[judge], alone)}, seed=seed, cluster=kind)
    if not found:
        raise ValueError(notes[0] if notes else f"no human votes on the pairs judge {judge!r} judged")
    return found[0]


@functools.wraps(_build_report)
def build_report(*args, **kwargs) -> BiasReport:
    return _in_one_blas_thread(*args, **kwargs)[0]


def build_report_drawing(*args, draw: tuple[dict[str, str], Callable],
                         **kwargs) -> tuple[BiasReport, dict[str, bytes]]:
    """:func:`build_report`, and its figures: ``draw`` is (each figure's name -> what it is drawn
    from, ``"raters"`` (the raters' estimates and the judges' leaderboards without their intervals)
    or ``"worth"``, in the order the figures are shown; a function taking names and the report as
    it stands once that is known, answering a handle whose
    ``get()`` gives ``{name: PNG bytes or None}``, as :meth:`analysis.workers.Helper.submit`
    does); see :func:`analysis.report.figures.build_report_with_figures`."""
    return _in_one_blas_thread(*args, draw=draw, **kwargs)


def _in_one_blas_thread(*args, **kwargs):
    # Every BLAS on one thread: the fits here are small and dense, and on a busy machine BLAS
    # threads spin instead of helping (see analysis/ratings/threads.py).
    from analysis.ratings.threads import one_blas_thread

    with one_blas_thread():
        return _build_report(*args, **kwargs)


class _JudgingTheJudges:
    """What judges each judge: the strength-controlled self-preference (one fit over all
    judges), its leaderboard against the reference's, the debiasing variants, and its
    annotator card."""

    def __init__(self, by_rater, battle_frames, parse_errors, references, families, members, timings,
                 n_boot: int, rating_bootstrap: int, seed: int, cluster: str):
        self.by_rater, self.battle_frames, self.parse_errors = by_rater, battle_frames, parse_errors
        self.references, self.families, self.members, self.timings = references, families, members, timings
        self.n_boot, self.rating_bootstrap, self.seed, self.cluster = n_boot, rating_bootstrap, seed, cluster

    def controlled(self) -> dict[str, ControlledSelfPreference]:
        specs = {}
        for name, reference in self.references.items():
            if reference is None or name == PANEL:
                continue
            rows, ref_rows = self.by_rater[name], self.by_rater[reference]
            specs[name] = (JudgeRows(self.families[name], rows, ref_rows, model=name) if reference == HUMAN_RATER else
                           JudgeRows(self.families[name], debiased_rows(rows, calibrate=True),
                                     debiased_rows(ref_rows, calibrate=True), per_pair=True, model=name))
        return controlled_self_preference(specs, cluster=self.cluster) if specs else {}

    def card(self, rep: RaterReport) -> RaterReport:
        """Every rater's annotator card and reference (the panel's members too)."""
        name = rep.rater
        card = annotator_card(self.battle_frames[name], self.parse_errors.get(name, 0), self.timings.get(name))
        return replace(rep, annotator=card, reference=self.references.get(name),
                       panel_members=self.members if name == PANEL else ())

    def judge(self, name: str, rep: RaterReport, reference_ratings: Ratings,
              controlled: ControlledSelfPreference | None, board: LeaderboardAgreement) -> dict:
        """The fields of judge ``name``'s report that judge it (``rep``: its estimates; ``board``:
        its leaderboard against its reference's, :func:`leaderboard_agreement`, given its intervals here)."""
        by_rater, reference, seed, n_boot = self.by_rater, self.references[name], self.seed, self.n_boot
        ref_bt = reference_ratings.bt
        ref_rows = by_rater[reference] if reference == HUMAN_RATER else debiased_rows(by_rater[reference])
        variants = judge_variants(by_rater[name], ref_rows, reference, rep.ratings.bt, rep.ratings.controlled, ref_bt,
                                  self._rate_rows, n_boot=n_boot, seed=seed, both_orders=rep.agreement,
                                  reference_controlled=reference_ratings.controlled)
        # Leaderboards are resampled with each verdict counted as in its ratings' fit (graded ones
        # weighted), and the as-given board is the judge's own leaderboard: one set of rounds
        # gives its intervals both in the variants table and beside the judge.
        board_rows, ref_board_rows = weighted_rows(by_rater[name]), weighted_rows(by_rater[reference])
        variants = tuple(replace(v, rows=board_rows) if v.name == "as_given" and v.rows is not None else v
                         for v in variants)
        rounds = variant_rounds(variants, ref_rows, ref_bt, ref_board_rows, n_boot=n_boot, seed=seed,
                                board_boot=BOOT_ROUNDS)
        best, variants = best_variants(variants, rounds), with_intervals(variants, rounds)
        # The verdict rows and item sums served the paired bootstraps; the report keeps estimates only.
        variants = tuple(replace(v, rows=None, sums=None) for v in variants)
        summary = None
        if name == PANEL and reference == HUMAN_RATER:
            summary = panel_summary(by_rater[PANEL], {m: by_rater[m] for m in self.members if m in by_rater},
                                    by_rater[HUMAN_RATER], self.families, n_boot=n_boot, seed=seed)
        if rep.ratings.bt is not None and ref_bt is not None:
            board = leaderboard_intervals(board, board_rows, ref_board_rows, rep.ratings.bt, ref_bt, seed=seed,
                                          rounds=rounds.get("as_given"))
        return {"controlled": controlled, "leaderboard": board, "variants": variants, "best_variant": best,
                "panel": summary}

    def ceiling(self, reference: str) -> dict[str, float | None] | None:
        """The reference's leaderboard against itself (:func:`reference_ceiling`): one for every
        judge it is the reference of."""
        return reference_ceiling(self.by_rater[reference], seed=self.seed, cluster=self.cluster)

    @staticmethod
    def with_ceiling(fields: dict, ceiling: dict[str, float | None] | None) -> dict:
        """A judge's fields (:meth:`judge`), its leaderboard with its reference's ceiling where it
        ranks the models: beside the judge's numbers, the reference's against itself is noise, not
        judge error."""
        board = fields["leaderboard"]
        if board.n_models < RANKING_MODELS or board.spearman is None:  # (no ratings on a side: no models)
            return fields
        return {**fields, "leaderboard": replace(board, ceiling=ceiling)}

    def _rate_rows(self, rows: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
        from analysis.ratings.votes import rate_battles

        try:
            columns = ["model_a", "model_b", "winner", "pair_id", "prompt"]
            rated = rate_battles(rows[[c for c in columns if c in rows.columns]], "bt",
                                 bootstrap=self.rating_bootstrap, seed=self.seed, cluster=self.cluster)
        except (ValueError, RuntimeError):  # e.g. disconnected comparisons, no convergence
            return None, None
        early = ("its ratings are the early estimate: a model only won or only lost in these verdicts, so no "
                 "maximum-likelihood rating exists and they are pulled towards 1000") if rated.early_estimate else None
        return rated.result.table, early
