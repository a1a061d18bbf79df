"""One registry of rating methods: ``rate(frame, method)`` looks them up by name.

Every method takes a battle frame (columns ``model_a, model_b, winner``; ``bt-style`` also
``response_a, response_b``) and returns a :class:`.table.RatingTable` on the Elo scale in
which every rating carries an interval:

=============  ===========================================  ===============================
method         rating                                       interval (95% by default)
=============  ===========================================  ===============================
bt             Bradley-Terry MLE, ties = half a win         sandwich Wald; bootstrap
                                                            percentile when bootstrap > 0;
                                                            both clustered
bt-davidson    Bradley-Terry with Davidson's tie parameter  as bt
bt-style       BT with Chatbot Arena style covariates,      sandwich Wald; bootstrap
               FastChat's ridge (reg 0.5)                   percentile when bootstrap > 0;
                                                            both clustered
elo            online Elo in the frame's order              bootstrap percentile over
                                                            resampled battles streamed in
                                                            the frame's order, or whole
                                                            clusters (100
                                                            rounds when bootstrap = 0:
                                                            online Elo has no analytic
                                                            standard error)
elo-avg        mean online Elo over random orders           as elo, each round averaged
                                                            over the same number of orders
trueskill      TrueSkill posterior mean                     mu +- z sigma (posterior);
                                                            bootstrap percentile when
                                                            bootstrap > 0, clustered
=============  ===========================================  ===============================

Votes on one pair are not independent (several people judge the same two texts; a judge
sees both orders), nor are the pairs of one prompt (each model's answer to it sits in
several pairs, and the prompt's difficulty touches all of them). Every interval treats one
cluster as the unit (:func:`analysis.stats.cluster_groups`): the prompt whenever a
prompt carries more than one pair, else the ``pair_id`` (``cluster="pair"|"prompt"`` forces
one). The sandwich (bt, bt-davidson, bt-style) sums scores within a cluster, and every
bootstrap (those and elo, elo-avg, trueskill) resamples whole clusters, each resample of a
streamed method in random order. In the table below "clustered" means by that unit. TrueSkill's posterior interval takes the
votes as independent. Online Elo's bootstrap intervals shrink for sparsely sampled models
(a model with a few battles barely moves from its start), so its tables carry a warning;
use bt for intervals.

Graded verdicts: with ``strong_weight=W`` (bt, bt-davidson) a battle whose ``strength``
is 2 or more (Arena-Hard's ``A>>B``) counts W times, as Arena-Hard-Auto counts strong
verdicts 3 times (Li et al. 2024); battles without a strength count once.

Bradley-Terry ratings are centred on 1000 (mean), or pinned with ``anchor=(model, rating)``;
online Elo starts every model at ``init`` = 1000, and its updates are zero-sum, so its mean
stays 1000; TrueSkill is centred on 1000. Bootstrap rounds are seeded by ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis.stats import Clustering, cluster_codes, cluster_groups, percentile_interval, z_two_sided

from .bootstrap import bootstrap_params
from .bt import CENTRE, DENSE_MODELS, ELO_SCALE, fit_counts, to_elo_matrix
from .counts import aggregate, encode_winners
from .elo import bootstrap_orders, online_elo, random_orders
from .style import MIN_STYLE_PAIRS, STYLE_REG, fit_style_bt, frame_covariates, style_support
from .table import RatingTable, make_table
from .trueskill_ratings import run_trueskill, to_elo_factor

__all__ = ["METHODS", "rate", "register"]

Method = Callable[..., RatingTable]
METHODS: dict[str, Method] = {}

# Online Elo has no standard error, so without a requested bootstrap it still gets this many rounds.
DEFAULT_ELO_ROUNDS = 100
# Rows x battles held at once when streaming many Elo orders side by side (~160 MB of indices).
_STREAM_CELLS = 20_000_000


def register(name: str) -> Callable[[Method], Method]:
    def wrap(method: Method) -> Method:
        METHODS[name] = method
        return method

    return wrap


def rate(frame: pd.DataFrame, method: str = "bt", *, bootstrap: int = 0, seed: int = 0, cluster: str | None = None,
         **options) -> RatingTable:
    """Rate the models in ``frame`` with the named method (see the module docstring).

    ``bootstrap`` rounds (seeded by ``seed``) give percentile intervals; ``options`` go to
    the method: ``ties``, ``anchor``, ``l2``, ``ci``, ``level``, ``strong_weight`` (bt); ``k``, ``base``,
    ``scale``, ``init``, ``permutations`` (elo); ``mu``, ``sigma``, ``beta``, ``tau``,
    ``draw_probability`` (trueskill); ``reg`` (bt-style: the ridge, 0 for plain ML); ``level`` (all).
    ``cluster`` (``"pair"``, ``"prompt"``; None: the prompt whenever a prompt carries more
    than one pair, :func:`analysis.stats.cluster_groups`) is the unit every interval
    treats as independent (or that function's answer for ``frame``, already computed).

    Rows with a ``parse_error`` (a judgment without a verdict; its ``winner`` is null)
    are left out, whoever built the frame.
    """
    if method not in METHODS:
        raise ValueError(f"unknown rating method {method!r}; choose from {', '.join(sorted(METHODS))}")
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    missing = {"model_a", "model_b", "winner"} - set(frame.columns)
    if missing:
        raise ValueError(f"the frame lacks columns {sorted(missing)}")
    given = cluster if isinstance(cluster, Clustering) else None
    if "parse_error" in frame.columns and frame["parse_error"].notna().any():
        frame, given = frame[frame["parse_error"].isna().to_numpy()], None
    if frame.empty:
        raise ValueError("no battles to rate")
    clustering = given or cluster_groups(frame, cluster)
    return METHODS[method](frame, bootstrap=bootstrap, seed=seed, clustering=clustering, **options)


def _battles_per_model(frame: pd.DataFrame, models: pd.Index) -> np.ndarray:
    counts = pd.concat([frame["model_a"], frame["model_b"]]).value_counts()
    return counts.reindex(models, fill_value=0).to_numpy()


def strength_weights(frame: pd.DataFrame, strong_weight: float) -> np.ndarray:
    """Per battle: ``strong_weight`` where ``strength >= 2`` (a strong graded verdict), else 1."""
    if strong_weight <= 0:
        raise ValueError(f"strong_weight must be > 0, got {strong_weight}")
    if "strength" not in frame.columns or frame["strength"].isna().all():
        raise ValueError("strong_weight needs graded verdicts: no battle carries a strength (e.g. Arena-Hard's A>>B)")
    strength = pd.to_numeric(frame["strength"], errors="coerce").to_numpy(dtype=float)
    return np.where(strength >= 2, float(strong_weight), 1.0)


def _cluster_codes(clustering: Clustering) -> np.ndarray | None:
    """Each battle's cluster coded ``0..K-1`` (:func:`analysis.stats.cluster_codes`), or
    None when every battle is its own cluster."""
    return None if _independent(clustering) else cluster_codes(clustering.groups)


def _independent(clustering: Clustering) -> bool:
    """Whether every battle is a cluster of its own (e.g. a table of battles whose rows are
    their own pairs): then the plain sums are the clustered ones, without coding a million
    clusters."""
    return clustering.groups is None or clustering.n == len(clustering.groups)


def per_pair_weights(frame: pd.DataFrame) -> np.ndarray:
    """Per vote, 1 / the votes on its pair (``pair_id``): each pair counts once, its votes averaged,
    instead of once per voter (the default estimand: every vote counts once)."""
    if "pair_id" not in frame.columns or frame["pair_id"].isna().all():
        raise ValueError("per_pair needs the votes' pair_id: each pair counts once")
    codes = cluster_codes(frame["pair_id"])  # a vote without a pair_id is a pair of its own
    return 1.0 / np.bincount(codes)[codes]


def _bt(frame, *, bootstrap, seed, clustering, ties="half", anchor=None, l2=0.0, ci=None, level=0.95, name="bt",
        strong_weight=None, per_pair=False):
    weights = None if strong_weight is None else strength_weights(frame, strong_weight)
    if per_pair:
        weights = per_pair_weights(frame) * (1.0 if weights is None else weights)
    estimand = "each pair counted once (its votes averaged)" if per_pair else "each vote counted once"
    # Weighted battles stay clusters of their own: summed into cells, a weight would read as that many battles.
    groups = None if _independent(clustering) and weights is None else clustering.groups
    counts = aggregate(frame["model_a"], frame["model_b"], frame["winner"], weights, groups=groups)
    fit = fit_counts(counts, ties=ties, l2=l2)
    ci = ci or ("bootstrap" if bootstrap else "sandwich")
    clustering = clustering.describe()
    rating = fit.elo(anchor).to_numpy()
    if counts.n_models > DENSE_MODELS:
        if bootstrap:
            raise ValueError(f"the bootstrap needs a models x models matrix: {counts.n_models:,} models are more "
                             f"than {DENSE_MODELS:,}; rate without it (ratings only) or a subset of the models")
        missing = np.full(counts.n_models, np.nan)
        return make_table(name, counts.models, rating, missing, missing, counts.n_battles,
                          interval=f"none: intervals for {counts.n_models:,} models need their models x models "
                          f"covariance, kept only up to {DENSE_MODELS:,} models; ratings only",
                          warnings=(f"no intervals or ranks: {counts.n_models:,} models are more than the "
                                    f"{DENSE_MODELS:,} whose covariance is computed",))
    if ci == "bootstrap":
        if not bootstrap:
            raise ValueError("ci='bootstrap' needs bootstrap > 0 rounds")
        replicates = bootstrap_params(fit, bootstrap, seed=seed)
        thetas = replicates.params[:, : counts.n_models]
        samples = thetas @ to_elo_matrix(counts.models, anchor).T + (CENTRE if anchor is None else anchor[1])
        lower, upper = percentile_interval(samples, level)
        interval = f"bootstrap percentile {level:.0%}, {bootstrap} rounds, seed {seed}, {clustering}, {estimand}"
        if replicates.n_prior:
            interval += (
                f"; {replicates.n_prior} rounds in which a model only won or only lost were fitted with a "
                f"N(0, 10^2) prior on log-strengths"
            )
    else:
        lower, upper = fit.elo_intervals(anchor, kind=ci, level=level)
        interval = f"{ci} Wald {level:.0%}, {clustering}, {estimand}"
    rank = None
    if anchor is not None:
        # The anchored model's rating is fixed by choice, so it has no interval; the ranks are the
        # centred fit's (pinning one model moves every rating by the same amount, not their order).
        pinned = counts.models.get_loc(anchor[0])
        lower[pinned] = upper[pinned] = np.nan
        rank = _centred_ranks(fit, samples if ci == "bootstrap" else None, ci, level)
        interval += f"; {anchor[0]} pinned at {anchor[1]:g} (no interval), ranks from the centred ratings"
    return make_table(name, counts.models, rating, lower, upper, counts.n_battles, interval=interval, rank=rank)


def _centred_ranks(fit, samples, ci: str, level: float):
    """Ranks with uncertainty from the fit's centred ratings (no model pinned)."""
    from .table import rank_with_uncertainty

    if ci == "bootstrap":
        centred = samples - samples.mean(axis=1, keepdims=True)
        lower, upper = percentile_interval(centred, level)
    else:
        lower, upper = fit.elo_intervals(None, kind=ci, level=level)
    return rank_with_uncertainty(lower, upper)


register("bt")(_bt)


@register("bt-davidson")
def _bt_davidson(frame, **options):
    return _bt(frame, ties="davidson", name="bt-davidson", **options)


def _codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.Index]:
    models = pd.Index(pd.concat([frame["model_a"], frame["model_b"]]).unique()).sort_values()
    a = models.get_indexer(frame["model_a"])
    b = models.get_indexer(frame["model_b"])
    if (a == b).any():
        raise ValueError("a model cannot battle itself (model_a == model_b)")
    return a, b, encode_winners(frame["winner"]), models


def _stream_mean(a, b, outcome, m, orders_of: Callable[[np.random.Generator], np.ndarray], groups, rng, elo):
    """Mean Elo per group, each group streaming the orders ``orders_of(rng)`` side by side."""
    out = np.empty((groups, m))
    for g in range(groups):
        orders = orders_of(rng)
        step = _chunk(orders.shape[1])
        streams = [
            online_elo(a, b, outcome, m, orders=orders[s : s + step], **elo) for s in range(0, len(orders), step)
        ]
        out[g] = np.concatenate(streams).mean(axis=0)
    return out


def _chunk(length: int) -> int:
    return max(1, _STREAM_CELLS // max(length, 1))


def _elo(
    frame, *, bootstrap, seed, clustering, k=4.0, base=10.0, scale=400.0, init=1000.0, permutations=None, level=0.95, name="elo"
):
    a, b, outcome, models = _codes(frame)
    m, n = len(models), len(frame)
    clusters = _cluster_codes(clustering)
    elo = dict(k=k, base=base, scale=scale, init=init)
    rng = np.random.default_rng(seed)
    rounds = bootstrap or DEFAULT_ELO_ROUNDS
    if permutations is None:
        rating = online_elo(a, b, outcome, m, **elo)
        # Each resample is streamed in the file's order, as the rating is: the interval is
        # then built around this estimator (random orders would centre it on another one,
        # and the file-order rating could fall outside its own interval).
        samples = np.concatenate(
            [
                online_elo(a, b, outcome, m, orders=np.sort(bootstrap_orders(n, size, rng, clusters=clusters), axis=1),
                           **elo)
                for size in _sizes(rounds, _chunk(n))
            ]
        )
    else:
        # Elo Uncovered: average over random orders; a bootstrap round averages over the
        # same number of random orders of its resample.
        rating = _stream_mean(
            a, b, outcome, m, lambda g: random_orders(n, permutations, g), 1, rng, elo
        )[0]

        def resampled(g: np.random.Generator) -> np.ndarray:
            battles = bootstrap_orders(n, 1, g, clusters=clusters)[0]  # one row: no padding
            return battles[random_orders(len(battles), permutations, g)]

        samples = _stream_mean(a, b, outcome, m, resampled, rounds, rng, elo)
    lower, upper = percentile_interval(samples, level)
    clustering = clustering.describe()
    order = "in the file's order" if permutations is None else f"each averaged over {permutations} random orders"
    interval = f"bootstrap percentile {level:.0%}, {rounds} resampled streams {order}, seed {seed}, {clustering}"
    n_battles = _battles_per_model(frame, models)
    return make_table(name, models, rating, lower, upper, n_battles, interval=interval, warnings=(ELO_WARNING,))


ELO_WARNING = (
    "online Elo bootstrap intervals understate the uncertainty of sparsely sampled models (a model with few "
    "battles barely moves from its starting rating in any resample, so its interval shrinks instead of "
    "widening); read intervals from bt"
)


def _sizes(total: int, chunk: int) -> list[int]:
    return [min(chunk, total - s) for s in range(0, total, chunk)]


register("elo")(_elo)


@register("elo-avg")
def _elo_avg(frame, *, permutations: int = 100, **options):
    return _elo(frame, permutations=permutations, name="elo-avg", **options)


@register("trueskill")
def _trueskill(
    frame, *, bootstrap, seed, clustering, mu=25.0, sigma=25.0 / 3.0, beta=25.0 / 6.0, tau=0.0, draw_probability=None, level=0.95
):
    a, b, outcome, models = _codes(frame)
    m, n = len(models), len(frame)
    if draw_probability is None:
        # TrueSkill needs a draw probability in (0, 1); the observed tie rate is the natural one.
        draw_probability = float(np.clip(np.mean(outcome == 2), 1e-6, 1 - 1e-6))
    env = dict(mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability)
    factor = to_elo_factor(beta)
    means, sds = run_trueskill(a, b, outcome, m, **env)
    rating = CENTRE + factor * (means - means.mean())
    if bootstrap:
        clusters = _cluster_codes(clustering)
        rng = np.random.default_rng(seed)
        samples = np.empty((bootstrap, m))
        for r in range(bootstrap):
            idx = bootstrap_orders(n, 1, rng, clusters=clusters)[0]  # one row: no padding
            mu_r, _ = run_trueskill(a[idx], b[idx], outcome[idx], m, **env)
            samples[r] = CENTRE + factor * (mu_r - mu_r.mean())
        lower, upper = percentile_interval(samples, level)
        interval = f"bootstrap percentile {level:.0%}, {bootstrap} resampled streams, seed {seed}, {clustering.describe()}"
    else:
        half = z_two_sided(level) * factor * sds
        lower, upper = rating - half, rating + half
        interval = f"posterior mu +- z sigma {level:.0%} (tau={tau})"
    return make_table("trueskill", models, rating, lower, upper, _battles_per_model(frame, models), interval=interval)


@register("bt-style")
def _bt_style(frame, *, bootstrap, seed, clustering, level=0.95, reg=STYLE_REG):
    missing = {"response_a", "response_b"} - set(frame.columns)
    if missing or frame[["response_a", "response_b"]].isna().any().any():
        raise ValueError("bt-style needs the response_a and response_b texts of every battle")
    frame = frame.reset_index(drop=True)
    covariates = frame_covariates(frame)  # from the frame's style columns where it has them
    if not covariates.to_numpy().any():  # a fit would print BT's ratings under style control's name
        texts = frame["response_a"].astype(str).str.len().any() or frame["response_b"].astype(str).str.len().any()
        raise ValueError("bt-style has no style to hold fixed: no battle's two responses differ in length in "
                         "tokens or in markdown (headers, list items, bold)"
                         + ("" if texts else " (the battles carry no response texts)"))
    # The clusters coded once: the fit and the bootstrap share them.
    codes = _cluster_codes(clustering)
    fit = fit_style_bt(frame, covariates, reg=reg, groups=codes)
    m = len(fit.theta)
    point = np.r_[CENTRE + ELO_SCALE * fit.theta.to_numpy(), fit.coef.to_numpy()]
    clusters = np.arange(len(frame)) if codes is None else codes
    clustering = clustering.describe()
    ridge = f"ridge reg={reg:g} as FastChat's contextual BT" if reg else "no ridge"
    if bootstrap:
        rng = np.random.default_rng(seed)
        members = pd.Series(np.arange(len(frame))).groupby(clusters).agg(list).to_numpy()
        samples = np.empty((bootstrap, len(point)))
        for r in range(bootstrap):
            # Whole clusters are drawn: every vote of a drawn prompt (or pair) comes along.
            idx = np.concatenate(members[rng.integers(0, len(members), len(members))])
            refit = fit_style_bt(
                frame.iloc[idx].reset_index(drop=True),
                covariates.iloc[idx].reset_index(drop=True),
                reg=reg,
                models=fit.theta.index,
            )
            samples[r] = np.r_[CENTRE + ELO_SCALE * refit.theta.to_numpy(), refit.coef.reindex(fit.coef.index).to_numpy()]
        # A model absent from a resample has no rating there (NaN): percentiles over the
        # rounds that have it, none when most lack it, and the count stated.
        known = np.isfinite(samples).sum(axis=0)
        with np.errstate(all="ignore"):
            lower, upper = percentile_interval(samples, level, nan=True)
        lower[known < bootstrap / 2] = upper[known < bootstrap / 2] = np.nan
        interval = f"bootstrap percentile {level:.0%}, {bootstrap} rounds, seed {seed}, {clustering}, {ridge}"
        if (known < bootstrap).any():
            interval += f"; {int(bootstrap - known.min())} rounds lacked a model and were left out for it"
    else:
        se = np.sqrt(np.clip(np.diag(fit.covariance), 0, None))
        se[:m] *= ELO_SCALE
        half = z_two_sided(level) * se
        lower, upper = point - half, point + half
        interval = f"sandwich Wald {level:.0%}, {clustering}, {ridge}"
    # Support is counted in pairs whatever the cluster: how many pairs' responses differ.
    pairs = frame["pair_id"] if "pair_id" in frame.columns and frame["pair_id"].notna().any() else None
    support = style_support(frame, pairs).reindex(fit.coef.index)
    coefficients = pd.DataFrame(
        {
            "name": fit.coef.index,
            "coef": point[m:],
            "lower": lower[m:],
            "upper": upper[m:],
            "n_pairs": support.to_numpy(dtype=np.int64),
            "sparse": (support < MIN_STYLE_PAIRS).to_numpy(),
        }
    )
    warnings = tuple(
        f"style element {name!r} differs between the two responses in only {n} pairs (< {MIN_STYLE_PAIRS}): "
        "its coefficient rests on those pairs alone"
        for name, n in support.items()
        if n < MIN_STYLE_PAIRS
    )
    return make_table(
        "bt-style",
        fit.theta.index,
        point[:m],
        lower[:m],
        upper[:m],
        _battles_per_model(frame, fit.theta.index),
        interval=interval,
        coefficients=coefficients,
        warnings=warnings,
    )
