"""The leaderboard's numbers, from the stored votes: counts first, ratings when the data allow.

Only ratable votes count: anonymous battles whose answers did not name a model and that
no hygiene flag set aside (see ``VoteStore.records(ratable=True)``). Counts per model
and per pair are shown from the first vote. Ratings follow the data:

* the Bradley-Terry MLE exists (:func:`analysis.ratings.mle_exists`, Ford 1957):
  ratings with 95% bootstrap CIs (sandwich Wald where a bootstrap replicate has no MLE);
* otherwise (e.g. after one vote: the winner has only wins): a regularised estimate,
  labelled as such, with a stated Gaussian prior on each model's log-strength;
* fewer than two models: "needs more votes".

The page speaks to visitors: plain words first, the method's names (bootstrap, sandwich,
prior) in an expandable "How these numbers are computed". An interval of zero width
(one tie vote: every resample is the same vote) is no measure of uncertainty and is not
shown as one.

Anchored on FastChat's monitor (``elo_analysis.py``): Rank (UB) as Chiang et al. 2024,
sec. 5 (1 + models whose lower bound beats this one's upper bound), a battle-count
matrix, a win-fraction matrix, a style-controlled rating (Li et al. 2024) and category
views (:mod:`arena.categories`). The rating math is ``analysis.ratings``'.

A labelling campaign with a judge's verdicts (config ``picks`` and ``verdicts``) adds a view of
its votes: prediction-powered ratings (people + judge, PPI++) beside people's alone, each vote
weighted by its stored inclusion probability, the ratings command's numbers (:func:`campaign`).
It counts the votes the leaderboard counts and no others: a weighted vote is worth many.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.categories import CATEGORIES, in_category, language_name
from pairlab.records import Record
NEEDS_MORE = "Needs more votes: ratings need rated votes between at least two models."
RATING_COLUMNS = ["rank (UB)", "model", "rating", "lower", "upper", "votes"]
COUNT_COLUMNS = ["model", "votes", "wins", "ties", "losses"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _details(text: str) -> str:
    """Method details behind an expandable line (Gradio's Markdown keeps <details>)."""
    return f"<details><summary>How these numbers are computed</summary>\n\n{text}\n\n</details>"


@dataclass(frozen=True)
class Leaderboard:
    summary: str  # what was counted and how the ratings were obtained
    ratings: pd.DataFrame  # Rank (UB), model, rating, lower, upper, votes[, style-controlled]
    models: pd.DataFrame  # model, votes, wins, ties, losses
    win_rates: pd.DataFrame  # win fraction of row model over column model
    counts: pd.DataFrame  # battles per pair
    method: str  # "mle", "regularised" or "none"


def model_counts(records: list[Record]) -> pd.DataFrame:
    """Votes per model with wins, ties (both-bad included) and losses."""
    rows: dict[str, dict[str, int]] = {}
    for r in records:
        for side, model in (("model_a", r.model_a), ("model_b", r.model_b)):
            row = rows.setdefault(model, {"votes": 0, "wins": 0, "ties": 0, "losses": 0})
            row["votes"] += 1
            if r.winner == side:
                row["wins"] += 1
            elif r.winner in ("model_a", "model_b"):
                row["losses"] += 1
            else:
                row["ties"] += 1
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=COUNT_COLUMNS[1:])
    frame.index.name = "model"
    return frame.sort_values(["votes", "wins"], ascending=False).reset_index().reindex(columns=COUNT_COLUMNS)


def matrices(records: list[Record]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(win fraction of row model over column model, battles per pair); a tie scores ½ each."""
    models = sorted({m for r in records for m in (r.model_a, r.model_b)})
    code = {m: i for i, m in enumerate(models)}
    a = np.array([code[r.model_a] for r in records], dtype=np.intp)
    b = np.array([code[r.model_b] for r in records], dtype=np.intp)
    s = np.array([{"model_a": 1.0, "model_b": 0.0}.get(r.winner, 0.5) for r in records])
    # Unbuffered sums (np.add.at): one element at a time through .loc cost seconds per view.
    score, count = np.zeros((len(models),) * 2), np.zeros((len(models),) * 2, dtype=np.int64)
    np.add.at(score, (a, b), s)
    np.add.at(score, (b, a), 1.0 - s)
    np.add.at(count, (a, b), 1)
    np.add.at(count, (b, a), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = pd.DataFrame(np.where(count > 0, score / count, np.nan), index=models, columns=models).round(3)
    count = pd.DataFrame(count, index=models, columns=models)
    for frame in (rates, count):
        frame.index.name = "model"
    return rates.reset_index(), count.reset_index()


def shown_rates(win_rates: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """The win-fraction matrix rounded for display so that the two cells of a pair still sum
    to 1: each cell below the diagonal is 1 minus its rounded mirror (6 of 11 and 5 of 11,
    0.545 and 0.455, would otherwise show as 0.55 and 0.46)."""
    frame = win_rates.set_index("model")
    values = frame.to_numpy(dtype=float).round(digits)
    below = np.tril(np.ones_like(values, dtype=bool), k=-1)
    values = np.where(below, (1 - values.T).round(digits), values)
    return pd.DataFrame(values, index=frame.index, columns=frame.columns).reset_index()


def ratings(records: list[Record], bootstrap: int = 200, seed: int = 0) -> tuple[pd.DataFrame, str, str]:
    """(table, method, note): the MLE with CIs, a labelled regularised estimate, or nothing."""
    from analysis.frames import records_to_frame
    from analysis.ratings.bt import PRIOR_SD_ELO  # the prior of the early estimate, for the visitor's words
    from analysis.ratings.table import MIN_UNITS
    from analysis.ratings.votes import rate_votes

    if len({m for r in records for m in (r.model_a, r.model_b)}) < 2:
        return pd.DataFrame(columns=RATING_COLUMNS), "none", NEEDS_MORE
    frame = records_to_frame(records)
    # The one rating rule of every command: the early estimate, the bootstrap's fallback, withholding.
    rated = rate_votes(frame, "bt", judge="all", bootstrap=bootstrap, seed=seed)
    result, units = rated.result, rated.n_units
    if not rated.early_estimate:
        method = "mle"
        note = ("Ratings on the Elo scale (1000 is the average model); **lower** and **upper** bound the range "
                "the rating lies in with 95% confidence.")
        detail = f"Bradley-Terry maximum-likelihood ratings; 95% intervals: {result.interval}."
    else:
        method = "regularised"
        note = ("**Early estimate, needs more votes:** some model has so far only won or only lost, so its "
                "rating cannot be measured yet. The ratings shown are pulled towards 1000 (the average) and "
                "their ranges are wide on purpose.")
        detail = ("Regularised estimate: the Bradley-Terry maximum-likelihood rating does not exist yet (Ford "
                  "1957), so the ratings are shrunk towards 1000 by a Gaussian prior (SD "
                  f"{PRIOR_SD_ELO:.0f} Elo points on each model's strength), with {result.interval} "
                  "intervals under that prior.")
    if units < MIN_UNITS:
        note += (f" No ranges or ranks yet: they need votes on at least {MIN_UNITS} different pairs of answers "
                 f"({units} so far); from fewer, no range says honestly how sure a rating is.")
    elif any(w.startswith("no interval for") for w in result.warnings):
        note += (" No range is shown where it would have zero width: with so few votes every resample is "
                 "the same, which says nothing about how sure the rating is.")
    table = result.table.rename(columns={"rank": "rank (UB)", "n": "votes"})
    table = table[RATING_COLUMNS].round(1)
    if method == "mle":
        table["style-controlled"] = _style_controlled(frame).reindex(table["model"]).round(1).to_numpy()
    return table, method, f"{note}\n\n{_details(detail)}"


def _style_controlled(frame: pd.DataFrame) -> pd.Series:
    """Style-controlled BT rating per model (Li et al. 2024); NaN where it cannot be fitted yet."""
    from analysis.ratings import rate

    try:
        table = rate(frame, "bt-style").table
    except ValueError:  # analysis.stats.FitError is one: too few or too uniform votes for the style regression
        return pd.Series(dtype=float)
    return table.set_index("model")["rating"]


def compute(store, bootstrap: int = 200, seed: int = 0, category: str = "all",
            anomaly_alpha: float = 0.001) -> Leaderboard:
    """The leaderboard of ``store``'s ratable votes, optionally one category's (:mod:`arena.categories`).

    The anomalous-voter flags are refreshed first, against the current ratings.
    """
    store.refresh_anomalies(anomaly_alpha)
    everything = store.count_votes()
    rated = store.records(ratable=True)
    records = [r for r in rated if in_category(r, category)]
    prompt_set = ("prompt-set votes other than a logged-in voter's first on each pair" if store.prompt_set_rated
                  else "prompt-set votes, whose fixed answers a voter can recognise")
    unrated = everything - len(rated)
    why = (f"(named side-by-side votes, {prompt_set}, answers that named a model, or votes set aside by vote "
           "hygiene)")
    if rated:
        note = _plural(len(rated), "rated vote") + (f"; {unrated} more stored but not rated {why}." if unrated else ".")
    else:
        note = "No rated votes yet: ratings appear once people vote in anonymous battles."
        if unrated:
            note += f" {_plural(unrated, 'vote')} stored but not rated {why}."
    aside = {flag: n for flag, n in store.set_aside().items() if n}
    if aside:
        note += (" Vote hygiene set aside " + ", ".join(f"{n} ({flag.replace('_', ' ')})" for flag, n in aside.items())
                 + ".")
    if category != "all":
        label = CATEGORIES.get(category) or f"language: {language_name(category.removeprefix('lang:'))}"
        note += f" This view (**{label}**): {_plural(len(records), 'vote')}."
    table, method, how = ratings(records, bootstrap=bootstrap, seed=seed)
    rates, count = matrices(records)
    summary = f"{note}\n\n{how}" if records else note  # no votes: nothing more to explain
    return Leaderboard(summary, table, model_counts(records), rates, count, method)


# A labelling campaign (config ``picks`` with ``verdicts``): people voted on the planner's picks,
# a judge gave verdicts on the pairs; its view sets people + judge ratings beside people's alone.
@dataclass(frozen=True)
class Verdicts:
    """The campaign's judge and its verdicts (a record table, as :func:`analysis.importers.read_table` reads)."""

    judge: str
    table: pd.DataFrame


@dataclass(frozen=True)
class Campaign:
    summary: str  # what the two columns are, the design, and what the judge was worth
    ratings: pd.DataFrame  # rank (UB), model, people + JUDGE, lower, upper, people alone, its bounds, votes


def read_verdicts(path, judge: str = "") -> Verdicts:
    """``judge``'s verdicts in the file ``path`` (the file's only judge when ``judge`` is empty);
    a file without them raises ``ValueError`` naming the judges it holds."""
    from analysis.importers import read_table
    from pairlab.record_table import is_person

    table, _ = read_table([path])
    judges = sorted(set(table.loc[~is_person(table), "judge"].dropna().astype(str))) if len(table) else []
    if not judge:
        if len(judges) != 1:
            raise ValueError(f"verdicts {path}: {len(judges)} judges ({', '.join(judges) or 'none'}): "
                             "name the campaign's one with judge = ...")
        judge = judges[0]
    elif judge not in judges:
        raise ValueError(f"verdicts {path}: no verdicts of judge {judge!r}; its judges: {', '.join(judges) or 'none'}")
    return Verdicts(judge, table[(table["judge"] == judge).to_numpy()].reset_index(drop=True))


def campaign_columns(judge: str) -> list[str]:
    return ["rank (UB)", "model", f"people + {judge}", "lower", "upper", "people alone", "alone lower",
            "alone upper", "votes"]


def campaign(store, verdicts: Verdicts, strategy: str, n_picks: int, level: float = 0.95) -> Campaign:
    """People + judge ratings (prediction-powered, PPI++) beside people's alone, from the campaign's
    votes (those that carry an inclusion probability) that the leaderboard counts
    (``store.records(ratable=True)``), each weighted by the inverse of its stored probability: what
    ``python -m analysis.ratings --judge human --ppi JUDGE --picks PICKS.jsonl`` gives on those votes
    and the verdicts (its rating step, :func:`analysis.ratings.votes.rate_votes`). The summary says
    how many stored campaign votes were not counted, and why.
    ``strategy`` names the planner's design (active or uniform), ``n_picks`` its pairs."""
    from analysis.frames import select_battles
    from analysis.ratings import aggregate, mle_exists
    from analysis.ratings.table import MIN_UNITS, withhold_thin
    from analysis.ratings.votes import rate_votes
    from pairlab import record_table

    judge, columns = verdicts.judge, campaign_columns(verdicts.judge)
    # The leaderboard's own rule decides which votes count (VoteStore.ratable): a vote weighted
    # 1/probability is worth many, so one the leaderboard would not count (any prompt-set vote
    # unless prompt_set_rated; then only a logged-in voter's first on each pair) must not count here.
    stored = sum(r.meta.get("inclusion_prob") is not None for r in store.records())
    votes = [r for r in store.records(ratable=True) if r.meta.get("inclusion_prob") is not None]
    frame = select_battles(record_table.stack(record_table.from_records(votes), verdicts.table),
                           include_prompt_set=True)  # the campaign's votes, already the counted ones
    people = frame[(frame["judge_type"] == "human").to_numpy()]
    head = (f"**Labelling campaign: people + {judge} beside people alone.** People vote on the planner's "
            f"**{strategy}** picks ({n_picks} pairs, each drawn with a known probability); each vote counts "
            "1/probability times, so both columns estimate people's ratings.")
    left_out = stored - len(votes)
    if left_out:
        head += (f" {_plural(left_out, 'campaign vote')} stored but not counted, as on the leaderboard: "
                 + ("only a logged-in voter's first vote on each pair counts (or vote hygiene set it aside)."
                    if store.prompt_set_rated else
                    "prompt-set votes count only in a closed panel on private pairs (prompt_set_rated = true), "
                    "where a logged-in voter's first vote on each pair counts."))
    empty = pd.DataFrame(columns=columns)
    if people.empty:
        return Campaign(f"{head} No campaign votes {'counted ' if stored else ''}yet.", empty)
    picks = pd.DataFrame({"pair_id": [r.pair_id for r in votes],
                          "inclusion_prob": [float(r.meta["inclusion_prob"]) for r in votes], "strategy": strategy})
    mixed = int((picks.groupby("pair_id")["inclusion_prob"].nunique() > 1).sum())
    if mixed:  # one weight per pair is the design's assumption: votes of two plans need their own analysis
        return Campaign(f"{head} No ratings: the votes on {_plural(mixed, 'pair')} carry different inclusion "
                        "probabilities (votes from more than one plan); rate each plan's votes with the ratings "
                        "command and its own picks.", empty)
    if not mle_exists(aggregate(people["model_a"], people["model_b"], people["winner"])):
        return Campaign(f"{head} Needs more votes: some model has so far only won or only lost in the "
                        f"{_plural(len(people), 'campaign vote')}, so people's ratings cannot be measured yet.", empty)
    try:
        result = rate_votes(frame, "bt", judge="human", ppi=judge, picks=picks, level=level).result
    except ValueError as exc:  # people's votes do not connect the models yet, or no fit (a FitError is a ValueError)
        return Campaign(f"{head} No ratings yet: {str(exc).splitlines()[0]}", empty)
    s, units, alone = result.summary(), result.fit.n_human_pairs, result.people_alone()
    both, alone_table = (withhold_thin(t, units).table.set_index("model") for t in (result.table, alone))
    table = pd.DataFrame({"rank (UB)": both["rank"], f"people + {judge}": both["rating"], "lower": both["lower"],
                          "upper": both["upper"]})
    for column, name in (("rating", "people alone"), ("lower", "alone lower"), ("upper", "alone upper")):
        table[name] = alone_table[column].reindex(both.index)
    table["votes"] = pd.concat([people["model_a"], people["model_b"]]).value_counts().reindex(both.index).fillna(0)
    table = table.reset_index()[columns].round(1).astype({"votes": int})
    note = (f" {_plural(s['n_human'], 'vote')} on {_plural(s['n_human_pairs'], 'pair')}; {judge} judged "
            f"{s['n_judge']} pairs. **people + {judge}**: people's votes and the judge's verdicts together, the "
            "judge's errors measured on the pairs people voted on and corrected everywhere (the judge's weight "
            f"{s['lambda']:.2f}; 0: it did not narrow the ranges). **people alone**: the same votes and weights "
            f"without the judge. **lower** and **upper** bound each rating with {level:.0%} confidence.")
    if result.n_human_left_out:
        note += f" {_plural(result.n_human_left_out, 'vote')} left out: on pairs {judge} gave no verdict on."
    if units < MIN_UNITS:
        note += (f" No ranges or ranks yet: they need votes on at least {MIN_UNITS} different pairs ({units} so "
                 "far); from fewer, no range says honestly how sure a rating is.")
    else:
        note += (f" The judge and the picks together make the ranges as narrow as {s['effective_human_votes']:.0f} "
                 "votes on uniformly drawn pairs would without a judge.")
    detail = (f"Prediction-powered Bradley-Terry ratings (PPI++, Angelopoulos, Duchi & Zrnic 2023; Boyeau et al. "
              f"2024): {result.table.interval}. People alone: {alone.interval}. Design {result.design.name}: "
              "active statistical inference (Zrnic & Candes 2024). The same numbers as `python -m analysis.ratings "
              f"--judge human --ppi {judge} --picks PICKS.jsonl` gives on the exported votes and the verdicts.")
    return Campaign(f"{head}{note}\n\n{_details(detail)}", table)
