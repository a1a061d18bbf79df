"""Which pairs should people vote on, and how many more votes are needed.

A judge gives a verdict on every pair; people can vote on a few. Prediction-powered
ratings (:mod:`analysis.ratings.ppi`) correct the judge with people's votes; active
statistical inference (Zrnic & Candes 2024, "Active Statistical Inference", ICML) chooses
those few pairs: each pair is drawn for people independently (Poisson sampling) with a
known probability ``pi``, larger where the judge is likely wrong, and people's votes are
weighted by ``1 / pi`` so the estimate stays unbiased whatever the picks
(``analysis.ratings --picks``). With ``v`` the expected squared residual of people's
outcome around the judge's verdict and ``h`` the pair's weight in the summed variance of
the ratings, ``pi`` proportional to ``sqrt(v h)`` minimises that variance at a fixed
budget (their sec. 4, the square-root rule of optimal allocation), a reduction of
``1 - (E sqrt(v h))^2 / E(v h)`` of the design's variance against uniform picks. That
gain is estimated from the data before picking (:func:`predicted_gain`); a share
:data:`MIX` of the budget is spread uniformly so no pair's probability is near 0.

Where ``v`` comes from (:func:`residual_variance`): the judge's probability for the pair
when it gives one (``prob_a``), its two orders (a pair judged both ways with different
winners is a tie, whose residual is large), other judges' verdicts on the same pair (their
disagreement), and, when people already voted on some pairs, those votes: the pairs are
binned by the signals' predicted residual and each bin's residual is measured on people's
votes (shrunk to the pooled mean), so an overconfident signal is corrected by the data.

The predicted covariance of the ratings at a design (:func:`predicted_covariance`) is the
sandwich of the full-label information ``J = sum_pairs p(1-p) x x^T`` with ``x = e_i - e_j``:
``J^-1 + J^-1 (sum_pairs v (1/pi - 1) x x^T) J^-1``, the design's inflation over labelling
every pair, ``v`` there being the rectifier's variance at the PPI++ weight ``lambda`` that
the fit would choose (``v`` itself at lambda = 1, ``p(1-p)`` at 0: people alone). Where the
ratings cluster by prompt (a prompt carries several pairs: :func:`analysis.stats.cluster_groups`,
the rule of every command), people's outcomes on the pairs of one prompt move together through the
answers they share, and the full-label part gains their covariance (:func:`prompt_covariance`):
the inclusions are drawn pair by pair, so the design's part does not.

The command (``python -m analysis.plan``, ``pairlab plan``) is :mod:`analysis.plan.cli`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ratings.bt import ELO_SCALE, _regularised_inverse
from analysis.ratings.counts import PairCounts, _encode_models, bincount_rows, encode_winners
from analysis.ratings.likelihoods import _laplacian
from analysis.ratings.ppi import _outcome_from_i
from analysis.stats import cluster_codes, cluster_groups, z_two_sided

__all__ = ["MIX", "GAIN_WORTH", "Pairs", "Plan", "pair_signals", "residual_variance", "inclusion_probs",
           "predicted_gain", "predicted_covariance", "prompt_covariance", "make_plan", "draw_picks", "read_picks",
           "projection"]

MIX = 0.2  # share of the budget spread uniformly (Zrnic & Candes mix with the uniform rule)
# A pick's least inclusion probability: below it one vote would count as over a million.
MIN_INCLUSION_PROB = 1e-6
# Inverse-probability weights spread wider than this ratio are warned about.
WIDE_WEIGHTS = 1000.0
GAIN_WORTH = 0.10  # a smaller predicted variance reduction is not worth non-uniform picks
# Without people's votes or the judge's probabilities a hard verdict's reliability is
# unknown: it is taken as right 85% of the time, the agreement of good judges with people
# on decisive pairs (PandaLM's judges agree with its annotators on 70-80% of pairs with ties).
_PRIOR_RIGHT = 0.85
_SHRINK = 20.0  # votes' worth of the signals' prediction in a calibrated bin
_MIN_CALIBRATION_VOTES = 30
_BINS = 4
_GRID = 200  # budgets tried for "how many more"
_LAMBDAS = np.linspace(0.0, 1.0, 6)  # PPI++ weights tried in the prediction


@dataclass(frozen=True)
class Pairs:
    """Per pair the judge saw: its models (``i < j``), the judge's both-orders verdict ``verdict``
    (1 a win of model ``i``, 0 a loss, 1/2 a tie), ``soft`` the signals' probability that people
    prefer ``i``, and people's votes in hand (``n_votes``, ``sq_residual`` their summed squared
    residual around the verdict)."""

    models: pd.Index
    pair_id: np.ndarray
    i: np.ndarray
    j: np.ndarray
    verdict: np.ndarray
    soft: np.ndarray
    n_votes: np.ndarray
    y_votes: np.ndarray  # their summed outcomes
    sq_residual: np.ndarray
    signals: tuple[str, ...]
    n_left_out: int = 0  # people's votes on pairs the judge gave no usable verdict on, left out
    # Each pair's prompt (codes) where the ratings cluster by prompt; None where each pair is its own cluster.
    prompt: np.ndarray | None = None

    def counts(self, wins: np.ndarray | None = None, totals: np.ndarray | None = None) -> PairCounts:
        """Per-pair ``wins`` of ``i`` out of ``totals`` summed per model pair, as :class:`PairCounts`
        (what the fits, the Laplacian and the inverse helpers take)."""
        m = len(self.models)
        keys, model_pair = np.unique(self.i * m + self.j, return_inverse=True)
        wins = np.zeros(len(self.i)) if wins is None else wins
        totals = np.zeros(len(self.i)) if totals is None else totals
        w, t = (np.bincount(model_pair, x, len(keys)) for x in (wins, totals))
        return PairCounts(self.models, keys // m, keys % m, w, t - w, np.zeros(len(keys)), np.zeros(m, np.int64))

    def per_model_pair(self, values: np.ndarray) -> np.ndarray:
        """Per-pair values (last axis) summed per model pair, in the order of :meth:`counts`."""
        m = len(self.models)
        keys, model_pair = np.unique(self.i * m + self.j, return_inverse=True)
        return bincount_rows(model_pair, np.asarray(values, float), len(keys))


def _people(frame: pd.DataFrame) -> np.ndarray:
    return (frame["judge_type"] == "human" if "judge_type" in frame.columns
            else frame["judge"].astype(str).str.startswith("human")).to_numpy()


def _pairs_among(frame: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    """Per record, whether its pair_id is that of one of the records ``chosen`` (a mask), a missing
    id matching a missing one as ``Series.isin`` has it. The ids are coded once: ``isin`` on Arrow
    strings went through a Python object a row (1.7 s for 200,000 records; 38 ms coded)."""
    codes = pd.factorize(frame["pair_id"], use_na_sentinel=False)[0]
    found = np.zeros(codes.max(initial=-1) + 1, dtype=bool)
    found[codes[chosen]] = True
    return found[codes]


def _without_unjudged(frame: pd.DataFrame, judge: str, leave_out: bool) -> tuple[pd.DataFrame, int]:
    """``frame`` without records that hold no verdict (parse failures) and, with ``leave_out``,
    without people's votes on pairs where ``judge`` gave no usable verdict (their count is the
    second value); without ``leave_out`` such votes raise, saying whether the judge's verdicts
    there were unparseable or missing."""
    parsed = frame["parse_error"].isna().to_numpy() if "parse_error" in frame.columns else np.ones(len(frame), bool)
    own = (frame["judge"] == judge).to_numpy()
    if not own.any():
        raise ValueError(f"no verdicts of judge {judge!r} in the input")
    stranded = _people(frame) & parsed & ~_pairs_among(frame, own & parsed)
    if stranded.any() and not leave_out:
        pairs = frame.loc[stranded, "pair_id"]
        unparseable = _pairs_among(frame, own & ~parsed)[stranded]
        why = [f"{pairs[unparseable].nunique()} pairs where judge {judge!r} has no usable verdict (unparseable)"
               if unparseable.any() else "",
               f"{pairs[~unparseable].nunique()} pairs judge {judge!r} never judged" if (~unparseable).any() else ""]
        raise ValueError(f"{int(stranded.sum())} human votes are on " + " and ".join(filter(None, why))
                         + ": the planner picks among pairs the judge gave a verdict on; pass --leave-out-unjudged "
                         "to plan without those votes")
    return frame[parsed & ~stranded], int(stranded.sum())


def pair_signals(frame: pd.DataFrame, judge: str, leave_out_unjudged: bool = False) -> Pairs:
    """The judge's verdicts per pair, the uncertainty signals beside them and people's votes in hand.

    ``frame`` holds battle records (``pair_id, model_a, model_b, winner, judge``, optional
    ``judge_type`` and ``prob_a``): ``judge``'s verdicts on every pair that may be picked,
    other LLM judges' verdicts (their disagreement is a signal) and people's votes so far.
    People's votes on pairs where the judge has no usable verdict (unparseable, or never
    judged) raise, or with ``leave_out_unjudged`` are left out and counted.
    """
    if "pair_id" not in frame.columns:
        raise ValueError("the verdicts have no pair_id: the picks name pairs by it")
    frame, n_left_out = _without_unjudged(frame, judge, leave_out_unjudged)
    people = _people(frame)
    own = (frame["judge"] == judge).to_numpy()
    if frame["pair_id"].isna().any():
        raise ValueError(f"{int(frame['pair_id'].isna().sum())} records have no pair_id")
    a, b, models = _encode_models(frame["model_a"], frame["model_b"])
    if (a == b).any():
        raise ValueError("a model cannot battle itself (model_a == model_b)")
    outcome = _outcome_from_i(a, b, encode_winners(frame["winner"]))
    prob = (frame["prob_a"].to_numpy(dtype=float) if "prob_a" in frame.columns else np.full(len(frame), np.nan))
    prob = np.where(a < b, prob, 1.0 - prob)  # seen from model i, as the outcome
    rows = pd.DataFrame({"pair_id": frame["pair_id"].astype(str).to_numpy(), "i": np.minimum(a, b),
                         "j": np.maximum(a, b), "judge": frame["judge"].astype(str).to_numpy(),
                         "outcome": outcome,
                         # a hard verdict is not a certainty: see _PRIOR_RIGHT
                         "soft": np.where(np.isnan(prob), 0.5 + (2 * _PRIOR_RIGHT - 1) * (outcome - 0.5), prob)})
    mine = rows[own].groupby("pair_id", sort=False)
    pairs = mine.agg(i=("i", "first"), j=("j", "first"), verdict=("outcome", "mean"), n_orders=("outcome", "size"),
                     soft=("soft", "mean"))
    if (mine["i"].nunique() > 1).any() or (mine["j"].nunique() > 1).any():
        raise ValueError(f"judge {judge!r} gives one pair_id to different model pairs "
                         f"({int(((mine['i'].nunique() > 1) | (mine['j'].nunique() > 1)).sum())} pair_ids)")
    signals = []
    if np.isfinite(prob[own]).any():
        signals.append("the judge's probabilities")
    if (pairs["n_orders"] > 1).any():
        signals.append("the judge's two orders")
    # Each judge's per-pair soft verdict, then their mean over judges: other judges'
    # disagreement with this one pulls the pair's probability towards 1/2.
    others = ~own & ~people
    if others.any():
        per_judge = rows[others].groupby(["pair_id", "judge"], sort=False)["soft"].mean()
        other_sum = per_judge.groupby(level=0).sum().reindex(pairs.index, fill_value=0.0)
        other_n = per_judge.groupby(level=0).size().reindex(pairs.index, fill_value=0)
        signals.append(f"{rows.loc[others, 'judge'].nunique()} other judge(s)' agreement")
    else:
        other_sum = other_n = 0.0
    soft = (pairs["soft"].to_numpy() + other_sum) / (1 + other_n)
    # People's votes in hand: on pairs the judge saw, their squared residual around its verdict.
    voted = rows[people]
    verdict = pairs["verdict"]
    residual = (voted["outcome"].to_numpy() - verdict.reindex(voted["pair_id"]).to_numpy()) ** 2
    by_pair = pd.DataFrame({"pair_id": voted["pair_id"].to_numpy(), "r": residual,
                            "y": voted["outcome"].to_numpy()}).groupby("pair_id")
    n_votes = by_pair.size().reindex(pairs.index, fill_value=0).to_numpy()
    sums = by_pair[["r", "y"]].sum().reindex(pairs.index, fill_value=0.0)
    used = np.zeros(len(models), dtype=bool)
    used[pairs["i"].to_numpy()] = used[pairs["j"].to_numpy()] = True
    code = np.cumsum(used) - 1  # models the judge never saw are not rated here
    # The clusters the ratings of these votes would take (people's and the judges' records together).
    clustering = cluster_groups(frame, None)
    prompt = None
    if clustering.kind == "prompt":
        of_pair = pd.Series(cluster_codes(clustering.groups)[own], index=rows.loc[own, "pair_id"].to_numpy())
        prompt = of_pair[~of_pair.index.duplicated()].reindex(pairs.index).to_numpy()
    return Pairs(models=models[used], pair_id=pairs.index.to_numpy(), i=code[pairs["i"].to_numpy()],
                 j=code[pairs["j"].to_numpy()], verdict=verdict.to_numpy(), soft=np.asarray(soft, float),
                 n_votes=n_votes, y_votes=sums["y"].to_numpy(), sq_residual=sums["r"].to_numpy(),
                 signals=tuple(signals), n_left_out=n_left_out, prompt=prompt)


def residual_variance(pairs: Pairs) -> tuple[np.ndarray, bool]:
    """Each pair's expected squared residual ``v = E (y - verdict)^2`` of a person's outcome ``y``,
    and whether people's votes in hand calibrated it.

    From the signals: with ``q`` the probability that people prefer ``i``, ``E y^2 ~ q`` (a tie
    counted as a half win, rarely) gives ``v = q (1 - 2 verdict) + verdict^2``. With at least
    :data:`_MIN_CALIBRATION_VOTES` votes in hand, pairs are cut into up to :data:`_BINS` bins of
    that prediction and each bin's ``v`` moves by the mean gap between its votes' squared
    residuals and their prediction, shrunk by :data:`_SHRINK` votes' worth of no gap.
    """
    q, verdict = pairs.soft, pairs.verdict
    v = np.clip(q * (1 - 2 * verdict) + verdict ** 2, 0.0, 1.0)
    votes = pairs.n_votes.sum()
    if votes < _MIN_CALIBRATION_VOTES:
        return v, False
    ranks = pd.Series(v).rank(method="dense")
    bins = pd.qcut(ranks, min(_BINS, int(ranks.max())), labels=False, duplicates="drop").to_numpy()
    n = np.bincount(bins, pairs.n_votes)
    measured = np.bincount(bins, pairs.sq_residual)
    predicted = np.bincount(bins, pairs.n_votes * v)
    # Per bin, the votes' mean residual beyond the signals' prediction for them, shrunk towards
    # none; added to every pair of the bin, so the signals' order inside it is kept.
    offset = (measured - predicted) / (n + _SHRINK)
    return np.clip(v + offset[bins], 0.0, 1.0), True


def _information(pairs: Pairs, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``J^-1`` (on centred ratings) of people voting once on every pair, and the win probabilities."""
    p = 1.0 / (1.0 + np.exp(-(theta[pairs.i] - theta[pairs.j])))
    counts = pairs.counts()
    return _regularised_inverse(_laplacian(counts, pairs.per_model_pair(p * (1 - p))), counts, 0.0), p


def influence(pairs: Pairs, inverse: np.ndarray) -> np.ndarray:
    """``h = x^T J^-2 x``: a pair's weight in the summed variance of the ratings."""
    square = inverse @ inverse
    return square[pairs.i, pairs.i] + square[pairs.j, pairs.j] - 2 * square[pairs.i, pairs.j]


def predicted_gain(v: np.ndarray, h: np.ndarray) -> float:
    """``1 - (E sqrt(v h))^2 / E(v h)``: the share of the design's variance that the square-root
    rule removes against uniform picks (Zrnic & Candes 2024, sec. 4)."""
    vh = v * h
    return float(1 - np.mean(np.sqrt(vh)) ** 2 / np.mean(vh)) if np.mean(vh) > 0 else 0.0


def inclusion_probs(score: np.ndarray, budget: float | np.ndarray, eligible: np.ndarray | None = None,
                    mix: float = MIX) -> np.ndarray:
    """Poisson-sampling probabilities proportional to ``(1 - mix) score / mean(score) + mix``,
    summing to ``budget`` over the ``eligible`` pairs, none above 1 (a capped pair's excess
    goes to the others). ``budget`` may be an array: one row of probabilities per budget."""
    score = np.asarray(score, float)
    eligible = np.ones(len(score), bool) if eligible is None else eligible
    mean = score[eligible].mean() if eligible.any() else 0.0
    base = (1 - mix) * score / mean + mix if mean > 0 else np.ones(len(score))
    budgets = np.atleast_1d(np.asarray(budget, float))
    order = np.sort(base[eligible])[::-1]
    # With the k largest capped at 1, the rest scale by c = (budget - k) / (sum of the rest);
    # k is the first for which the next largest stays under 1.
    rest = np.cumsum(order[::-1])[::-1]  # sum of order[k:]
    k = np.arange(len(order))
    c = (budgets[:, None] - k[None, :]) / rest[None, :]
    ok = c * order[None, :] <= 1.0
    first = np.where(ok.any(axis=1), ok.argmax(axis=1), len(order) - 1)
    scale = c[np.arange(len(budgets)), first]
    out = np.clip(scale[:, None] * base[None, :], 0.0, 1.0)
    out[:, ~eligible] = np.clip(scale[:, None] * base[None, ~eligible], 0.0, 1.0)
    out[budgets >= eligible.sum()] = 1.0
    return out if np.ndim(budget) else out[0]


def prompt_covariance(pairs: Pairs) -> np.ndarray:
    """The covariance of people's scores across the pairs of one prompt, summed over prompts
    (``sum_g sum_{c != c' in g} e_c e_c' x_c x_c'^T``; zero without prompts): a model's answer to a
    prompt sits in several of its pairs, so an answer better than its model's usual wins them
    together. People's few votes in hand rarely fall on two pairs of one prompt; the judge saw
    the same answers on every pair, so ``e`` is its verdicts' residual around its own strengths."""
    m = len(pairs.models)
    if pairs.prompt is None:
        return np.zeros((m, m))
    theta = _strengths(pairs, judge=True)
    residual = pairs.verdict - 1.0 / (1.0 + np.exp(-(theta[pairs.i] - theta[pairs.j])))
    scores = np.zeros((len(residual), m))
    rows = np.arange(len(residual))
    scores[rows, pairs.i], scores[rows, pairs.j] = residual, -residual
    by_prompt = np.zeros((int(pairs.prompt.max()) + 1, m))
    np.add.at(by_prompt, pairs.prompt, scores)
    return by_prompt.T @ by_prompt - scores.T @ scores


def predicted_covariance(pairs: Pairs, inverse: np.ndarray, p: np.ndarray, v: np.ndarray, prob: np.ndarray,
                         full: np.ndarray | None = None) -> np.ndarray:
    """The ratings' covariance under inclusion probabilities ``prob`` (one row per design):
    ``full + J^-1 D J^-1`` with ``D = sum (1/pi - 1) r x x^T`` and ``r`` the variance of the
    rectifier ``(y - p) - lambda (verdict - p)``: ``(1 - lambda) a + lambda v + lambda (lambda - 1) b``
    with ``a = p(1-p)`` (people alone), ``v`` (the residual around the verdict) and
    ``b = (verdict - p)^2``. ``full`` is the covariance with people on every pair (``J^-1`` by
    default; :func:`make_plan` adds the prompts' covariance). Per design the ``lambda`` of
    :data:`_LAMBDAS` with the smallest summed variance is kept, as PPI++'s tuning picks one
    ``lambda`` for all pairs."""
    prob = np.atleast_2d(prob)
    counts = pairs.counts()
    inflation = 1.0 / np.maximum(prob, 1e-12) - 1.0
    a, b = p * (1 - p), (pairs.verdict - p) ** 2
    full = inverse if full is None else full
    best, best_trace = None, None
    for lam in _LAMBDAS:
        r = np.clip((1 - lam) * a + lam * v + lam * (lam - 1) * b, 0.0, None)
        cov = full + inverse @ _laplacian(counts, pairs.per_model_pair(inflation * r)) @ inverse
        trace = np.trace(cov, axis1=1, axis2=2)
        if best is None:
            best, best_trace = cov, trace
        else:
            better = trace < best_trace
            best[better], best_trace = cov[better], np.minimum(trace, best_trace)
    return best


def widths(covariance: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Full widths (upper - lower, Elo points) of the Wald intervals, per design and model."""
    return 2 * z_two_sided(level) * ELO_SCALE * np.sqrt(np.clip(np.diagonal(covariance, axis1=-2, axis2=-1), 0, None))


@dataclass(frozen=True)
class Plan:
    """The chosen inclusion probabilities and what they are expected to give."""

    pairs: Pairs
    strategy: str
    budget: float
    probs: dict[str, np.ndarray]  # each strategy's combined inclusion probability of each pair (votes in hand included)
    in_hand: np.ndarray  # pairs people already voted on
    gain: float
    calibrated: bool
    widths: pd.DataFrame  # model, active, uniform (expected widths at this budget)
    more: pd.DataFrame  # what, models, active, uniform: more votes to reach the target or to separate
    target_width: float | None
    curve: pd.DataFrame  # more_votes, active, uniform: expected mean width past the votes in hand

    @property
    def prob(self) -> np.ndarray:
        """The chosen strategy's inclusion probabilities (``replace(plan, strategy=...)`` gives the other's)."""
        return self.probs[self.strategy]

    @property
    def recommended(self) -> str:
        return "active" if self.gain >= GAIN_WORTH else "uniform"


def _design(score: np.ndarray, in_hand: np.ndarray, budget: float | np.ndarray) -> np.ndarray:
    """Combined probabilities: pairs in hand were a uniform draw at rate ``pi0``; new picks are
    drawn among the others with ``pi1`` (summing to ``budget`` over them), so every pair is in
    the sample with probability ``pi0 + (1 - pi0) pi1``, independently (Poisson sampling)."""
    pi0 = in_hand.mean()
    pi1 = inclusion_probs(score, np.minimum(budget, (~in_hand).sum()), eligible=~in_hand)
    return pi0 + (1 - pi0) * pi1


def _more_votes(cov: np.ndarray, budgets: np.ndarray, theta: np.ndarray, models: pd.Index,
                target: float | None, level: float) -> list[dict]:
    """Per model (reaching ``target`` width) and adjacent pair in the ranking (separating at
    ``level``), the smallest budget on the grid that does it; None where labelling every pair
    would not."""
    w = widths(cov, level)
    rows = []

    def first(ok: np.ndarray) -> int | None:
        return int(budgets[ok.argmax()]) if ok.any() else None

    if target is not None:
        for k, model in enumerate(models):
            rows.append({"what": "width", "models": [str(model)], "votes": first(w[:, k] <= target)})
    order = np.argsort(-theta)
    z = z_two_sided(level)
    for hi, lo in zip(order[:-1], order[1:]):
        sd = np.sqrt(np.clip(cov[:, hi, hi] + cov[:, lo, lo] - 2 * cov[:, hi, lo], 0, None))
        rows.append({"what": "separate", "models": [str(models[hi]), str(models[lo])],
                     "votes": first(theta[hi] - theta[lo] > z * sd)})
    return rows


def make_plan(frame: pd.DataFrame, judge: str, budget: float, *, strategy: str = "active",
              target_width: float | None = None, level: float = 0.95, leave_out_unjudged: bool = False) -> Plan:
    """Plan people's next ``budget`` votes (one per picked pair) among ``judge``'s pairs
    (``leave_out_unjudged``: as :func:`pair_signals`)."""
    if strategy not in ("active", "uniform"):
        raise ValueError(f"strategy must be active or uniform, not {strategy!r}")
    if budget <= 0:
        raise ValueError(f"the budget must be a positive number of votes, not {budget}")
    pairs = pair_signals(frame, judge, leave_out_unjudged)
    in_hand = pairs.n_votes > 0
    theta = _strengths(pairs)
    inverse, p = _information(pairs, theta)
    v, calibrated = residual_variance(pairs)
    h = influence(pairs, inverse)
    score = {"active": np.sqrt(v * h), "uniform": np.ones(len(v))}
    available = int((~in_hand).sum())
    if available == 0:
        raise ValueError("people already voted on every pair the judge saw: there is nothing left to pick (to see "
                         "what the planner would have done, hold some of their votes out with --holdout SHARE)")
    grid = np.unique(np.r_[0, np.round(np.geomspace(1, available, _GRID)), budget].clip(0, available))
    designs = {name: _design(s, in_hand, grid) for name, s in score.items()}
    full = inverse + inverse @ prompt_covariance(pairs) @ inverse
    covs = {name: predicted_covariance(pairs, inverse, p, v, d, full) for name, d in designs.items()}
    at = int(np.searchsorted(grid, min(budget, available)))
    table = pd.DataFrame({"model": pairs.models.astype(str), **{name: widths(c[at], level) for name, c in covs.items()},
                          # no votes in hand: people alone have no interval yet
                          "now": widths(covs["uniform"][0], level) if in_hand.any() else np.inf})
    more = {name: _more_votes(c, grid, theta, pairs.models, target_width, level) for name, c in covs.items()}
    rows = [{**r, "active": r["votes"], "uniform": u["votes"]} for r, u in zip(more["active"], more["uniform"])]
    for r in rows:
        del r["votes"]
    return Plan(pairs=pairs, strategy=strategy, budget=float(min(budget, available)),
                probs={name: d[at] for name, d in designs.items()},
                in_hand=in_hand, gain=predicted_gain(v[~in_hand], h[~in_hand]), calibrated=calibrated,
                widths=table, more=pd.DataFrame(rows, columns=["what", "models", "active", "uniform"], dtype=object),
                target_width=target_width,
                curve=pd.DataFrame({"more_votes": grid, **{name: widths(c, level).mean(axis=1) for name, c in covs.items()}}))


def _strengths(pairs: Pairs, judge: bool = False) -> np.ndarray:
    """Current log-strengths, on people's scale: from people's votes in hand (a tie half a win),
    a light ridge keeping them finite; the judge's verdicts only where people have not voted
    yet (or with ``judge``: the judge's own). Pooling the judge's verdicts with people's reads
    the judge's view of the gaps as people's: "A and B separate after N votes" then promises
    gaps people do not see."""
    from analysis.ratings.bt import newton
    from analysis.ratings.likelihoods import HalfTie

    voted = not judge and pairs.n_votes.sum() > 0
    counts = (pairs.counts(pairs.y_votes, pairs.n_votes) if voted
              else pairs.counts(pairs.verdict, np.ones(len(pairs.verdict))))
    theta, _ = newton(HalfTie(), counts, np.zeros(len(pairs.models)), l2=1e-3 if not voted else 0.1)
    return theta


def projection(frame: pd.DataFrame, judge: str) -> pd.DataFrame | None:
    """Expected mean 95% width against votes past those in hand (``more_votes``, ``active``,
    ``uniform``); None when people already voted on every pair the judge saw."""
    pairs_left = pair_signals(frame, judge).n_votes == 0
    return make_plan(frame, judge, 1).curve if pairs_left.any() else None


def draw_picks(plan: Plan, rng: np.random.Generator) -> pd.DataFrame:
    """The picks: pairs in hand and a Poisson draw of the others, each with its inclusion probability.

    A pair not in hand is drawn with probability ``pi1 = (pi - pi0) / (1 - pi0)``, so its
    probability of being in the sample is the written ``pi`` (see :func:`_design`)."""
    pi0 = plan.in_hand.mean()
    pi1 = (plan.prob - pi0) / (1 - pi0) if pi0 < 1 else np.zeros(len(plan.prob))
    drawn = ~plan.in_hand & (rng.random(len(plan.prob)) < pi1)
    keep = plan.in_hand | drawn
    return pd.DataFrame({"pair_id": plan.pairs.pair_id[keep], "inclusion_prob": plan.prob[keep],
                         "strategy": plan.strategy, "in_hand": plan.in_hand[keep]})


@dataclass(frozen=True)
class Replay:
    """A plan checked on votes people already gave: their votes on a share of the pairs held out,
    the plan made from the rest, its picks answered with held-out votes, rated (PPI++ weighted
    by the picks' inclusion probabilities, clustered as ``analysis.ratings --ppi`` clusters them)
    and the widths compared."""

    plan: Plan
    widths: pd.DataFrame  # model, predicted, replayed (Elo points, upper - lower)
    n_held_out: int  # pairs whose people's votes were held out
    n_picked: int  # of them, picked and answered with one held-out vote each
    n_in_hand: int  # pairs whose votes stayed in hand
    clustering: str = "clustered by pair_id"  # how the replayed ratings clustered (Clustering.describe)

    @property
    def ratio(self) -> float:
        """Mean predicted width over mean replayed width."""
        return float(self.widths["predicted"].mean() / self.widths["replayed"].mean())


def one_vote_a_pair(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """People's votes cut to one a pair, drawn at random (the planner plans one vote per pair);
    the judges' verdicts kept."""
    people = _people(frame)
    kept = frame[people].sample(frac=1.0, random_state=rng).drop_duplicates("pair_id")
    return pd.concat([frame[~people], kept]).sort_index()


def replay(frame: pd.DataFrame, judge: str, holdout: float, budget: int, *, strategy: str = "active",
           seed: int = 0, leave_out_unjudged: bool = False, target_width: float | None = None) -> Replay:
    """Hold out people's votes on a random ``holdout`` share of the pairs they voted on, plan
    ``budget`` more votes from the rest, answer the picks with the held-out votes and compare
    the widths the plan predicted with those the replayed votes give (:class:`Replay`)."""
    from analysis.ratings.ppi import ppi_ratings

    if not 0 < holdout < 1:
        raise ValueError(f"--holdout must be a share between 0 and 1, not {holdout:g}")
    rng = np.random.default_rng(seed)
    frame = one_vote_a_pair(frame, rng)
    people = _people(frame)
    voted = pd.unique(frame.loc[people, "pair_id"])
    if len(voted) < 2:
        raise ValueError("--holdout needs people's votes on two pairs or more")
    held = set(rng.choice(voted, size=max(1, round(holdout * len(voted))), replace=False))
    hidden = people & frame["pair_id"].isin(held).to_numpy()
    plan = make_plan(frame[~hidden], judge, budget, strategy=strategy, leave_out_unjudged=leave_out_unjudged,
                     target_width=target_width)
    picks = draw_picks(plan, rng)
    answered = picks["in_hand"] | picks["pair_id"].isin(held)
    picks = picks[answered.to_numpy()]
    chosen = set(picks["pair_id"])
    votes = frame[~people | frame["pair_id"].isin(chosen).to_numpy()]
    rated = ppi_ratings(votes, judge, picks=picks).table.table.set_index("model")  # clustered as the command would
    widths = pd.DataFrame({"model": plan.widths["model"], "predicted": plan.widths[strategy].to_numpy()})
    widths["replayed"] = (rated["upper"] - rated["lower"]).reindex(widths["model"]).to_numpy()
    return Replay(plan, widths, len(held), int((~picks["in_hand"]).sum()), int(plan.in_hand.sum()),
                  cluster_groups(votes, None).describe())


def read_picks(path: str) -> pd.DataFrame:
    """A planner's PICKS.jsonl (``pair_id``, ``inclusion_prob`` per line), the one reader of picks
    (the arena's campaign and ``analysis.ratings --picks``); a bad line raises ``ValueError``
    naming the file and the line: not JSON, a probability that is not a number in
    [:data:`MIN_INCLUSION_PROB`, 1], a pair named twice. Weights spread wider than
    :data:`WIDE_WEIGHTS` are warned about."""
    from pairlab.files import text_lines  # the one reader rule

    rows, first = [], {}
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise ValueError(f"{path}:{number}: not a JSON object") from None
        prob = row.get("inclusion_prob") if isinstance(row, dict) else None
        if not isinstance(row, dict) or row.get("pair_id") is None or prob is None:
            raise ValueError(f"{path}:{number}: a pick needs pair_id and inclusion_prob")
        # bool is an int to Python: `true` is not a probability.
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not MIN_INCLUSION_PROB <= prob <= 1:
            raise ValueError(f"{path}:{number}: inclusion_prob must be a number in [{MIN_INCLUSION_PROB:g}, 1], "
                             f"not {prob!r}" + (" (a vote on it would count as more than "
                                               f"{1 / MIN_INCLUSION_PROB:,.0f} votes)"
                                               if isinstance(prob, (int, float)) and not isinstance(prob, bool)
                                               and 0 < prob < MIN_INCLUSION_PROB else ""))
        pair_id = str(row["pair_id"])
        if pair_id in first:
            raise ValueError(f"{path}:{number}: pair_id {pair_id!r} is picked twice (first on line "
                             f"{first[pair_id]}): a pair has one inclusion probability")
        first[pair_id] = number
        rows.append({"pair_id": pair_id, "inclusion_prob": float(prob), "strategy": str(row.get("strategy", "given"))})
    if not rows:
        raise ValueError(f"{path}: no picks")
    picks = pd.DataFrame(rows)
    spread = picks["inclusion_prob"].max() / picks["inclusion_prob"].min()
    if spread > WIDE_WEIGHTS:
        warnings.warn(f"{path}: inclusion probabilities span {picks['inclusion_prob'].min():.3g}-"
                      f"{picks['inclusion_prob'].max():.3g}: a vote on the least likely pick counts as {spread:,.0f} "
                      "votes on the most likely, so a few votes can decide the ratings")
    return picks
