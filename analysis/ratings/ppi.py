"""Prediction-powered Bradley-Terry ratings: few human votes, many judge verdicts.

People vote on a sample of pairs (the labelled set); an LLM judge gives a verdict on every
pair, those included. PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient
prediction-powered inference", eq. 3; PPI: Angelopoulos et al. 2023, Science 382) solves the
rectified estimating equation

    lambda * mean_{judged pairs} s(theta; yhat)  +  mean_{human votes} [s(theta; y) - lambda s(theta; yhat)] = 0

where ``s`` is a Bradley-Terry score (a tie is half a win, as ``--method bt``), ``y`` a
person's vote and ``yhat`` the judge's verdict on the same pair: the judge's errors
measured on the people's sample (the rectifier, second mean) correct its verdicts
everywhere, so ``theta`` estimates the people's strengths however biased the judge is.
``lambda = 0`` is people's votes alone (exactly ``--method bt`` on them); ``lambda`` is
tuned to minimise the summed variance of the ratings (PPI++'s power tuning, clipped to
[0, 1]). Applied to Bradley-Terry ratings of LLMs by Boyeau et al. 2024, "AutoEval done
right".

Why our own Newton and sandwich instead of ``ppi_py.ppi_logistic_ci`` (the authors'
package, which the tests use as the reference): theirs builds a dense battles x models
design and loops over rows (a million verdicts and 100 models would take minutes and GBs),
and takes every row as independent. Here every sum is first aggregated per model pair and
per cluster, so a fit costs O(verdicts) once and O(models^2) per Newton step, and the
sandwich is clustered by pair: the votes of several people on one pair, the judge's
verdict on it and the judge's prediction for its labelled votes are one cluster, so a
labelled pair that is also among the judged pairs has its covariance counted
(Liang & Zeger 1986). Without clusters or overlap the two agree (tests/test_ratings_ppi.py).

The judge's verdict on a pair is its both-orders verdict: the mean of its outcomes over the
orders it saw (1 a win of the lower-named model, 0 a loss, 1/2 a tie), so a judge whose
two orders disagree gives a tie, as a judge's debiased verdict elsewhere in the lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.stats import cluster_codes, cluster_groups, z_two_sided
from analysis.stats.clusters import prompt_column

from .bt import CENTRE, ELO_SCALE, _check_connected, _closure, _regularised_inverse, newton_rounds
from .counts import TIE, WIN_A, PairCounts, _encode_models, bincount_rows, encode_winners
from .likelihoods import HalfTie, _laplacian  # PPIData has the i, j, n_models a Laplacian needs
from .table import RatingTable, make_table
from .threads import one_blas_thread

__all__ = ["PPIData", "PPIFit", "PPIRatings", "PerModelPPI", "PicksDesign", "cross_fit_half", "fit_ppi_per_model", "fit_ppi_per_model_rounds", "picks_inclusion", "PPIWinRates", "ppi_win_rates", "check_ppi_options", "elo_table", "fit_ppi", "fit_ppi_rounds", "fit_ppi_stacked", "stacked_covariance", "ppi_data", "ppi_ratings", "rank_sets", "sample_warnings"]


@dataclass(frozen=True)
class PPIData:
    """Votes and verdicts aggregated per cluster (a pair_id with its two models).

    ``i < j`` index the compared model pairs; per cluster ``c``: ``pair[c]`` its model pair,
    ``n_judge`` the judge's units on it (1 for a judged pair, 0 else), ``yhat_judge`` their
    summed outcomes, ``n_human`` the people's votes on it, ``y_human`` their summed outcomes
    and ``yhat_human`` the judge's verdict summed over those votes (its prediction for each
    of them). Outcomes are seen from model ``i``: 1 win, 1/2 tie, 0 loss. ``weight`` counts
    each row's copies: a row of :meth:`compressed` data stands for that many interchangeable
    clusters, and a bootstrap draws other weights (:func:`fit_ppi_rounds` fits many at once).
    """

    models: pd.Index
    i: np.ndarray
    j: np.ndarray
    pair: np.ndarray
    n_judge: np.ndarray
    yhat_judge: np.ndarray
    n_human: np.ndarray
    y_human: np.ndarray
    yhat_human: np.ndarray
    weight: np.ndarray
    n_battles: np.ndarray | None = None  # votes and verdicts per model, for the tables' n
    # Per row, the prompt its pair belongs to when the sandwich is clustered by prompt (the
    # pairs of one prompt share its difficulty and each model's answer); None: by pair.
    group: np.ndarray | None = None

    @property
    def n_models(self) -> int:
        return len(self.models)

    def totals(self) -> tuple[float, float]:
        """Human votes ``n`` and judge units ``N``, copies counted."""
        return float(self.weight @ self.n_human), float(self.weight @ self.n_judge)

    def compressed(self) -> PPIData:
        """One row per kind of cluster: clusters with the same model pair, verdicts and votes
        enter every sum of the fit (all weighted) identically, so a row per kind with
        ``weight`` the kind's summed weight gives the same fit (to rounding) at a cost of
        O(kinds), a few hundred for a handful of models however many pairs were judged (the
        counts-not-rows idea of :mod:`analysis.stats.resample`, here for weighted sums)."""
        columns = (self.pair, self.n_judge, self.yhat_judge, self.n_human, self.y_human, self.yhat_human)
        if self.group is not None:  # rows of different prompts are never one kind
            columns = (*columns, self.group)
        # Factorised column by column (a sort of the rows, np.unique(axis=0), is 25x slower),
        # the codes combined as digits of one number, renumbered only where it would overflow.
        kind, n_kinds = np.zeros(len(self.pair), dtype=np.int64), 1
        for column in columns:
            codes, uniques = pd.factorize(column)
            if n_kinds * len(uniques) >= 2**62:
                kind, found = pd.factorize(kind)
                n_kinds = len(found)
            kind, n_kinds = kind * len(uniques) + codes, n_kinds * len(uniques)
        kind, _ = pd.factorize(kind)
        # Kinds are numbered in order of first sight: a kind's first row is where the running
        # maximum of the numbers grows (an O(rows) pass; np.unique's return_index sorts).
        first = np.flatnonzero(np.diff(np.maximum.accumulate(kind), prepend=-1) > 0)
        return replace(self, pair=self.pair[first], n_judge=self.n_judge[first], yhat_judge=self.yhat_judge[first],
                       n_human=self.n_human[first], y_human=self.y_human[first], yhat_human=self.yhat_human[first],
                       weight=np.bincount(kind, self.weight, len(first)),
                       group=None if self.group is None else self.group[first])


@dataclass(frozen=True)
class PPIFit:
    """A prediction-powered fit: centred log-strengths and their clustered sandwich covariance,
    with the people-alone fit (``lambda = 0``) it is compared to."""

    models: pd.Index
    theta: np.ndarray
    covariance: np.ndarray
    lam: float
    classical_theta: np.ndarray
    classical_covariance: np.ndarray
    n_human: float
    n_human_pairs: int
    n_judge: float
    lams: np.ndarray | None = None  # each model's lambda where each has its own (fit_ppi_stacked)

    @property
    def effective_human_votes(self) -> float:
        """Human votes alone that would give the same interval widths, averaged over models.

        A width shrinks as ``1/sqrt(n)``: ``n * (mean classical width / mean PPI width)^2``.
        """
        classical = np.sqrt(np.clip(np.diag(self.classical_covariance), 0, None)).mean()
        ppi = np.sqrt(np.clip(np.diag(self.covariance), 0, None)).mean()
        return float(self.n_human * (classical / ppi) ** 2) if ppi > 0 else float("nan")


def _outcome_from_i(a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Outcome 1/0/half seen from the lower-index model of each battle."""
    first = np.where(outcome == TIE, 0.5, (outcome == WIN_A).astype(float))
    return np.where(a < b, first, 1.0 - first)


def _clusters(human: pd.DataFrame, judge: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, pd.Index, np.ndarray]:
    """Both sets' model codes (people's votes first) and cluster keys: a cluster is one
    pair_id with its two models, matched across the two sets; a row without a pair_id is a
    cluster of its own (:func:`analysis.stats.cluster_codes`, the rule of every command)."""
    for name, frame in (("human votes", human), ("judge verdicts", judge)):
        if frame.empty:
            raise ValueError(f"no {name} to rate with --ppi")
        if "pair_id" not in frame.columns:
            raise ValueError(f"the {name} have no pair_id: people's votes and the judge's verdicts are matched by it")
    # Both sets coded at once, each column factorised on its own (counts.py: several times
    # faster on a million string rows than looking every name up in one index).
    a, b, models = _encode_models(pd.concat([human["model_a"], judge["model_a"]], ignore_index=True),
                                  pd.concat([human["model_b"], judge["model_b"]], ignore_index=True))
    m = len(models)
    pid_codes = cluster_codes(pd.concat([human["pair_id"], judge["pair_id"]], ignore_index=True)).astype(np.int64)
    return a, b, models, (pid_codes * m + np.minimum(a, b)) * m + np.maximum(a, b)


def ppi_data(human: pd.DataFrame, judge: pd.DataFrame, judge_name: str = "the judge", *,
             unjudged: str = "raise", inclusion: np.ndarray | None = None, cluster: str | None = "pair") -> PPIData:
    """Pair people's votes with the judge's verdicts by ``pair_id`` and the two models.

    Every pair the judge saw is a judged unit (its both-orders verdict); a human vote on a
    pair the judge never saw has no prediction: it raises ``ValueError`` naming how many,
    or with ``unjudged="leave out"`` is left out (the data's human votes, ``totals()[0]``,
    are then the votes kept, and its models those of the votes kept and the verdicts). The
    clusters come back :meth:`~PPIData.compressed` (one row per kind, ``weight`` its count).

    ``inclusion`` (one per human vote, in (0, 1]) is the probability with which each vote's
    pair was drawn for people (a planner's Poisson design, :mod:`analysis.plan`): each vote
    then counts ``1 / inclusion`` times in the people's sums, the inverse-probability
    weighting of active statistical inference (Zrnic & Candes 2024, eq. 4 and its
    M-estimation form, sec. 3), so the rectifier is unbiased whatever the picks were. Its
    ``n_human`` and sums are then those weighted counts (uniform probabilities change no fit).
    ``cluster`` is the sandwich's unit (:func:`analysis.stats.cluster_groups` of people's
    votes and the verdicts together; None picks the prompt when a prompt carries several pairs).
    """
    # Only the columns the clusters are read from: every other column of a million battles
    # would be copied for nothing.
    keys = ("pair_id", "prompt_id", "prompt", "model_a", "model_b")
    clustering = cluster_groups(pd.concat([f[[c for c in keys if c in f.columns]] for f in (human, judge)],
                                          ignore_index=True), cluster)
    by_prompt = clustering.kind == "prompt"
    if unjudged not in ("raise", "leave out"):
        raise ValueError(f"unjudged must be 'raise' or 'leave out', not {unjudged!r}")
    a, b, models, key = _clusters(human, judge)
    n_h, winners = len(human), human["winner"]
    vote_weight = np.ones(n_h) if inclusion is None else 1.0 / np.asarray(inclusion, dtype=float)
    cluster, uniques = pd.factorize(key)
    n_clusters = len(uniques)
    n_judge_records = np.bincount(cluster[n_h:], minlength=n_clusters)
    unseen = n_judge_records[cluster[:n_h]] == 0
    rows = np.ones(len(key), dtype=bool)
    if unjudged == "leave out" and unseen.any():
        # A cluster with a verdict is never one of the votes left out, so numbering the
        # clusters with verdicts in order keeps the order of first sight among the rest.
        rows, judged = np.r_[~unseen, np.ones(len(judge), dtype=bool)], n_judge_records > 0
        a, b, cluster = a[rows], b[rows], (np.cumsum(judged) - 1)[cluster[rows]]
        n_clusters, n_judge_records = int(judged.sum()), n_judge_records[judged]
        used = np.zeros(len(models), dtype=bool)
        used[a] = used[b] = True
        code = np.cumsum(used) - 1  # models of left-out votes only are gone; the order stays
        a, b, models = code[a], code[b], models[used]
        n_h, winners, key = int((~unseen).sum()), winners.to_numpy()[~unseen], key[rows]
        vote_weight = vote_weight[~unseen]
        unseen = unseen[~unseen]
    if (a == b).any():
        raise ValueError("a model cannot battle itself (model_a == model_b)")
    m = len(models)
    y = _outcome_from_i(a, b, np.r_[encode_winners(winners), encode_winners(judge["winner"])])
    hy, jy = y[:n_h], y[n_h:]
    no_pair = judge["pair_id"].isna().to_numpy()
    if no_pair.any():
        raise ValueError(f"{int(no_pair.sum())} verdicts of {judge_name} have no pair_id")
    hc, jc = cluster[:n_h], cluster[n_h:]
    if unseen.any():
        raise ValueError(
            f"{int(unseen.sum())} human votes are on pairs {judge_name} never judged "
            f"({len(np.unique(hc[unseen]))} pairs, matched by pair_id and the two "
            f"models): judge every pair people voted on, or leave those votes out"
        )
    judged = n_judge_records > 0
    verdict = np.bincount(jc, jy, n_clusters) / np.maximum(n_judge_records, 1)  # both-orders verdict
    pair_key = np.minimum(a, b) * m + np.maximum(a, b)
    cluster_pair_key = np.zeros(n_clusters, dtype=np.int64)
    cluster_pair_key[cluster] = pair_key
    pairs, pair = np.unique(cluster_pair_key, return_inverse=True)
    n_human = np.bincount(hc, vote_weight, minlength=n_clusters)
    group = None
    if by_prompt:
        prompt = cluster_codes(clustering.groups)
        if unjudged == "leave out":
            prompt = prompt[rows]
        group = np.zeros(n_clusters, dtype=np.int64)
        group[cluster] = prompt  # a pair's votes and verdicts share its prompt
    return PPIData(
        group=group,
        models=models,
        i=pairs // m,
        j=pairs % m,
        pair=pair.ravel(),
        n_judge=judged.astype(float),
        yhat_judge=np.where(judged, verdict, 0.0),
        n_human=n_human,
        y_human=np.bincount(hc, hy * vote_weight, n_clusters),
        yhat_human=n_human * verdict,
        weight=np.ones(n_clusters),
        n_battles=np.bincount(a, minlength=m) + np.bincount(b, minlength=m),
    ).compressed()


_COLUMNS = ("yhat_judge", "n_judge", "y_human", "n_human", "yhat_human")  # the counts every sum is linear in


def _binned(index: np.ndarray, size: int, columns: list[np.ndarray] | None = None):
    """The sparse ``(len(columns) x size, rows)`` matrix whose block ``k`` puts row ``c``'s
    ``columns[k][c]`` (1 without columns) into bin ``index[c]``: times the rounds' weights
    (rows, rounds) it sums every column into its bins for every round at once, one sparse
    product and no (rounds, rows) array. Made in one go (fifteen matrices made and stacked one
    by one took longer than a small fit's sums)."""
    from scipy import sparse

    columns = [np.ones(len(index))] if columns is None else columns
    k, n = len(columns), len(index)
    bins = (np.asarray(index)[None, :] + size * np.arange(k)[:, None]).ravel()
    return sparse.csr_matrix((np.concatenate(columns), (bins, np.tile(np.arange(n), k))), shape=(k * size, n))


class _Rounds:
    """A batch of rounds fitted together: each row of ``weights`` one round's weights on the
    rows of ``data`` (a design, a bootstrap round), its human votes ``n`` and judge units
    ``big_n``, and by prompt ``draws`` (rounds, prompts), the times a bootstrap drew each prompt
    (None: once). Every sum a fit, its information and its sandwich take is linear in the
    weights and the rows' counts (:data:`_COLUMNS`), so the counts are summed once per batch, per
    model pair and by prompt per (prompt, model pair) cell (:class:`_PromptCells`), each the
    first time it is asked for, and a subset of the rounds (:meth:`take`) keeps its share of them."""

    def __init__(self, data: PPIData, weights: np.ndarray, draws: np.ndarray | None = None):
        self.data, self.weights, self.draws = data, weights, draws
        self.n, self.big_n = weights @ data.n_human, weights @ data.n_judge
        self._pair_sums: np.ndarray | None = None
        self._cell_sums: np.ndarray | None = None
        self._cells: _PromptCells | None = None
        self._prompt_sums: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None
        self._prompt_shares: tuple[np.ndarray, np.ndarray] | None = None
        self._kept: tuple[tuple[np.ndarray, ...], list[np.ndarray]] | None = None
        self._cell_parts: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
        self._squares = None  # the sparse matrix of :meth:`moments`, the data's alone
        self._moments: np.ndarray | None = None
        self._split_moments: tuple[tuple[np.ndarray, ...], list[np.ndarray]] | None = None

    def __len__(self) -> int:
        return len(self.weights)

    def take(self, rows: np.ndarray) -> _Rounds:
        """The batch of rounds ``rows``, carrying the sums already made."""
        if len(rows) == len(self) and np.array_equal(rows, np.arange(len(self))):
            return self
        if self.data.group is not None:
            _ = self.cells  # the data's alone: made once for every batch taken from this one
        out = _Rounds.__new__(_Rounds)
        out.data, out.weights, out.draws = self.data, self.weights[rows], None if self.draws is None else self.draws[rows]
        out.n, out.big_n, out._cells = self.n[rows], self.big_n[rows], self._cells
        out._pair_sums = None if self._pair_sums is None else self._pair_sums[rows]
        out._cell_sums = None if self._cell_sums is None else self._cell_sums[:, :, rows]
        out._prompt_sums, out._kept = None, None
        out._prompt_shares = None if self._prompt_shares is None else tuple(x[rows] for x in self._prompt_shares)
        out._cell_parts = None if self._cell_parts is None else tuple(
            tuple(x[:, rows] for x in part) for part in self._cell_parts)
        out._squares, out._split_moments = self._squares, None
        out._moments = None if self._moments is None else self._moments[rows]
        return out

    def repeat(self, times: int) -> _Rounds:
        """Each round ``times`` times over (to be fitted at as many ``lambda``s)."""
        return self.take(np.repeat(np.arange(len(self)), times))

    def _weights_by_row(self) -> np.ndarray:
        # (rows, rounds) in row-major order: a sparse matrix over the rows then reads each row's
        # weights in one stretch (read column-wise they were strided, several times slower).
        return np.ascontiguousarray(self.weights.T)

    @property
    def pair_sums(self) -> np.ndarray:
        """Each round's weighted :data:`_COLUMNS` summed per model pair, ``(rounds, 5, pairs)``."""
        if self._pair_sums is None:
            n_pairs, k = len(self.data.i), len(_COLUMNS)
            if self.data.group is not None:  # from the cells, far fewer than the rows
                cells = self.cells
                sums = [cells.to_pairs @ column for column in self.cell_sums]
            else:
                binned = _binned(self.data.pair, n_pairs, [getattr(self.data, name) for name in _COLUMNS])
                sums = (binned @ self._weights_by_row()).reshape(k, n_pairs, len(self))
            self._pair_sums = np.stack(sums).transpose(2, 0, 1).reshape(len(self), k, n_pairs)
        return self._pair_sums

    def moments(self, weights: np.ndarray | None = None) -> np.ndarray:
        """By pair, each round's second moments of the rows' counts per model pair,
        ``sum_c w_c col_k[c] col_l[c]`` over the rows ``c`` of the pair for every two of
        :data:`_COLUMNS`, ``(rounds, pairs, 5, 5)``: what every sandwich of the round takes from
        its rows (:func:`_moment_crosses`), at any pilot and any ``lambda``. ``weights`` (a split's,
        ``(rounds, rows)``): that split's; None: the rounds' own, kept."""
        if weights is None and self._moments is not None:
            return self._moments
        data, n_pairs, k = self.data, len(self.data.i), len(_COLUMNS)
        upper = np.triu_indices(k)
        if self._squares is None:  # row c's products into its pair's bin, a block of pairs per product
            columns = [getattr(data, name) for name in _COLUMNS]
            self._squares = _binned(data.pair, n_pairs, [columns[a] * columns[b] for a, b in zip(*upper)])
        w = self.weights if weights is None else weights
        sums = (self._squares @ np.ascontiguousarray(w.T)).reshape(len(upper[0]), n_pairs, len(w))
        out = np.empty((len(w), n_pairs, k, k))
        out[:, :, upper[0], upper[1]] = out[:, :, upper[1], upper[0]] = sums.transpose(2, 1, 0)
        if weights is None:
            self._moments = out
        return out

    def split_moments(self, splits: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        """:meth:`moments` of each of ``splits``, kept for the next call with the same splits."""
        if self._split_moments is None or self._split_moments[0] is not splits:
            self._split_moments = (splits, [self.moments(w) for w in splits])
        return self._split_moments[1]

    @property
    def cells(self) -> _PromptCells:
        if self._cells is None:
            self._cells = _PromptCells(self.data)
        return self._cells

    @property
    def cell_sums(self) -> np.ndarray:
        """By prompt, each round's weighted :data:`_COLUMNS` per cell, ``(5, cells, rounds)``."""
        if self._cell_sums is None:
            cells = self.cells
            self._cell_sums = (cells.counts @ self._weights_by_row()).reshape(len(_COLUMNS), cells.n_cells, len(self))
        return self._cell_sums

    @property
    def cell_parts(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """By prompt, each cell's value of people's part and of the judge's part
        (:func:`_prompt_sums`) as ``at_0 - slope * p`` at its pair's win probability ``p``: the
        two ``(at_0, slope)``, each ``(cells, rounds)``, the same at every ``p``."""
        if self._cell_parts is None:
            yhat_judge, n_judge, y_human, n_human, yhat_human = self.cell_sums
            # 1/n and 1/N tiled to the sums' shape: numpy broadcasts a (rounds,) vector along
            # the sums one row (a dozen rounds) at a time.
            per_vote, per_unit = (np.tile(1.0 / total, (len(n_judge), 1)) for total in (self.n, self.big_n))
            human_slope = n_human * per_vote
            self._cell_parts = ((y_human * per_vote, human_slope),
                                (yhat_judge * per_unit - yhat_human * per_vote, n_judge * per_unit - human_slope))
        return self._cell_parts

    @property
    def prompt_shares(self) -> tuple[np.ndarray, np.ndarray]:
        """By prompt, each round's share of people's votes and of the judge's units, each
        ``(rounds, prompts)``: what :func:`_prompt_sums` centres a prompt's sums by, at every ``p``."""
        if self._prompt_shares is None:
            (_, votes), (_, judge_slope) = self.cell_parts  # n_human / n; n_judge / N - n_human / n
            shares = self.cells.to_groups @ np.concatenate([votes, judge_slope + votes], axis=1)
            self._prompt_shares = tuple(_transposed(shares).reshape(2, len(self), -1))
        return self._prompt_shares

    def kept_prompts(self, splits: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        """Per split (weights of a split of whole prompts, ``(rounds, rows)``) and round, 1 for
        the prompts whose rows it keeps, else 0, ``(rounds, prompts)``; kept for the next call
        with the same splits (the pieces at people's fit, then at the pilot's)."""
        if self._kept is None or self._kept[0] is not splits:
            to_groups = self.cells.rows_to_groups
            self._kept = (splits, [(to_groups @ _transposed(part) > 0).T.astype(float) for part in splits])
        return self._kept[1]

    def prompt_sums(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`_prompt_sums` at win probabilities ``p``, kept for the next call at the same
        ``p`` (people's fit: its covariance, then the pieces its ``lambda``s are tuned on)."""
        if self._prompt_sums is None or not np.array_equal(self._prompt_sums[0], p):
            self._prompt_sums = (p.copy(), _prompt_sums(self, p))
        return self._prompt_sums[1]


def _counts(rounds: _Rounds, lam: np.ndarray) -> PairCounts:
    """The rectified estimating equation as weighted soft win counts per model pair, for
    each round (with its ``lam``, ``n`` and ``N``).

    Its weights per pair, ``lam N_k / N + (1 - lam) h_k / n``, are never negative for
    ``lam`` in [0, 1], so the half-tie log-likelihood stays concave and Newton applies.
    """
    data, lam, n, big_n = rounds.data, lam[:, None], rounds.n[:, None], rounds.big_n[:, None]
    yhat_judge, n_judge, y_human, n_human, yhat_human = rounds.pair_sums.transpose(1, 0, 2)
    wins = lam * yhat_judge / big_n + (y_human - lam * yhat_human) / n
    totals = lam * n_judge / big_n + (1 - lam) * n_human / n
    return PairCounts(data.models, data.i, data.j, wins, totals - wins, np.zeros_like(wins),
                      np.zeros(data.n_models, dtype=np.int64))


def _solve(rounds: _Rounds, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[int, Exception]]:
    """Each round's solution at its ``lam`` (one batched Newton fit), its win probabilities
    per pair, and the rounds whose fit failed with the error :func:`.bt.newton` raises."""
    data, counts = rounds.data, _counts(rounds, lam)
    theta, errors = newton_rounds(HalfTie(), counts, np.zeros((len(rounds), data.n_models)))
    theta[list(errors)] = np.nan  # no solution (a diverged one could overflow below)
    return theta, 1.0 / (1.0 + np.exp(-(theta[:, data.i] - theta[:, data.j]))), errors


def _means(data: PPIData, per_pair: np.ndarray, p: np.ndarray, n: np.ndarray, big_n: np.ndarray) -> np.ndarray:
    """Each part's mean score (per judged pair, per vote) that its clusters are centred by, from
    the weighted :data:`_COLUMNS` summed per model pair ``(rounds, 5, pairs)`` (the residuals are
    linear in each row's counts at its pair's ``p``): ``(rounds, 3, models)``, judged pairs,
    people's votes, the judge's predictions on the votes."""
    yhat_judge, n_judge, y_human, n_human, yhat_human = per_pair.transpose(1, 0, 2)
    n, big_n = n[:, None], big_n[:, None]
    sums = np.stack([(yhat_judge - n_judge * p) / big_n, (y_human - n_human * p) / n,
                     (yhat_human - n_human * p) / n], axis=1)  # (rounds, 3, pairs)
    m, rounds = data.n_models, len(p)
    flat = sums.reshape(-1, len(data.i))
    return (bincount_rows(data.i, flat, m) - bincount_rows(data.j, flat, m)).reshape(rounds, 3, m)


@dataclass(frozen=True)
class _Part:
    """A part of every cluster's score, ``sum_k col_k[c] (a_kq x_q - b_k)`` (:func:`_pair_parts`)."""

    a: np.ndarray  # (rounds, 5, pairs)
    b: np.ndarray  # (rounds, 5, models)

    def plus(self, lam: np.ndarray, other: _Part) -> _Part:
        """This part plus ``lam`` (one per round) times ``other``."""
        return _Part(self.a + lam[:, None, None] * other.a, self.b + lam[:, None, None] * other.b)


def _pair_parts(rounds: _Rounds, p: np.ndarray) -> tuple[_Part, _Part]:
    """By pair, people's part and the judge's part of the estimating equation at win
    probabilities ``p``, each cluster's score centred by its part's mean (:func:`_means`).

    A cluster ``c`` of model pair ``q`` scores ``s_c x_q - S_c M``: ``x_q = e_i - e_j``, ``s_c``
    its residual (people's ``(y - n p) / n``; the judge's ``(yhat - N_c p) / N`` over judged
    pairs minus its predictions on the votes ``(yhat_h - n_c p) / n``) and ``S_c M`` its share of
    the means (people's votes ``n_c / n``; the judge's units ``N_c / N`` and votes). Both are
    linear in the cluster's counts, so the score is ``sum_k col_k[c] (a_kq x_q - b_k)`` over
    :data:`_COLUMNS`: a part is ``a`` ``(rounds, 5, pairs)`` and ``b`` ``(rounds, 5, models)``,
    and ``lambda``'s combination of the parts is theirs. For disjoint sets it is PPI++'s
    ``Var(grad)/n + lambda^2 Var(grad_hat)/N``."""
    data, n_pairs = rounds.data, len(rounds.data.i)
    n, big_n = rounds.n[:, None], rounds.big_n[:, None]
    means = _means(data, rounds.pair_sums, p, rounds.n, rounds.big_n)  # judged pairs, votes, predictions
    yhat_judge, n_judge, y_human, n_human, yhat_human = range(len(_COLUMNS))
    human, judge = (_Part(np.zeros((len(p), len(_COLUMNS), n_pairs)), np.zeros((len(p), len(_COLUMNS), data.n_models)))
                    for _ in range(2))
    human.a[:, y_human], human.a[:, n_human] = 1 / n, -p / n
    human.b[:, n_human] = means[:, 1] / n
    judge.a[:, yhat_judge], judge.a[:, n_judge] = 1 / big_n, -p / big_n
    judge.a[:, yhat_human], judge.a[:, n_human] = -1 / n, p / n
    judge.b[:, n_judge], judge.b[:, n_human] = means[:, 0] / big_n, -means[:, 2] / n
    return human, judge


def _moment_crosses(data: PPIData, moments: np.ndarray, pairs: Sequence[tuple[_Part, _Part]]) -> list[np.ndarray]:
    """For each ``(left, right)`` of ``pairs``, ``sum_c w_c psi_c phi_c^T`` per round over the
    clusters (rows of ``data``, each standing for its weight's clusters), ``psi`` scoring by
    ``left`` and ``phi`` by ``right``: with ``Q_q`` the pair's :meth:`_Rounds.moments`,
    ``sum_q sum_kl Q_qkl (a_kq x_q - b_k)(a'_lq x_q - b'_l)^T``, four terms of O(pairs x 5^2 +
    models^2 x 5) per round however many rows. A part's ``a^T Q`` is taken once for every
    product it is in (``Q`` symmetric: it is also ``Q a``)."""
    incidence = np.zeros((data.n_models, len(data.i)))  # x_q, a column per model pair
    incidence[data.i, np.arange(len(data.i))], incidence[data.j, np.arange(len(data.i))] = 1.0, -1.0
    total = moments.sum(axis=1)
    through: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for left, right in pairs:
        for part in (left, right):
            if id(part) not in through:
                aq = (part.a.transpose(0, 2, 1)[:, :, None, :] @ moments)[:, :, 0]  # (rounds, pairs, 5)
                through[id(part)] = aq, incidence @ aq  # and summed onto the models, (rounds, models, 5)
        (aq, left_x), (_, right_x) = through[id(left)], through[id(right)]
        cross = _laplacian(data, np.einsum("rql,rlq->rq", aq, right.a))
        cross -= left_x @ right.b
        cross -= (right_x @ left.b).transpose(0, 2, 1)
        cross += left.b.transpose(0, 2, 1) @ total @ right.b
        out.append(cross)
    return out


class _PromptCells:
    """Data clustered by prompt, its rows summed per (prompt, model pair) cell. Every sum the
    prompt-clustered sandwich takes is linear in a row's counts (:data:`_COLUMNS`) at its pair's
    win probability, so a round's weighted counts per cell are all it needs (:attr:`_Rounds.cell_sums`,
    one sparse product for every round and column at once), then work on cells (the prompts'
    pairs, fewer than the rows: a design's rows come twice) and never a (rounds, rows) array per
    score. The matrices here take the cells' sums to their prompts' models (model-major: a
    model's prompts side by side), their prompts and their model pairs, and the rows to their prompts."""

    def __init__(self, data: PPIData):
        n_pairs, m = len(data.i), data.n_models
        self.n_groups = g = int(data.group.max(initial=-1)) + 1
        cell, key = pd.factorize(data.group * n_pairs + data.pair)
        self.n_cells, self.pair, group = len(key), key % n_pairs, key // n_pairs
        # (columns x cells, rows): row r's counts into its cell, a block of cells per column.
        self.counts = _binned(cell, self.n_cells, [getattr(data, name) for name in _COLUMNS])
        # A cell's value to its prompt's models, +1 to model i's and -1 to model j's; and to its prompt.
        self.to_models = _binned(data.i[self.pair] * g + group, m * g) - _binned(data.j[self.pair] * g + group, m * g)
        self.to_groups = _binned(group, g)
        self.to_pairs = _binned(self.pair, n_pairs)
        self.rows_to_groups = _binned(data.group, g)


def _transposed(a: np.ndarray, out: np.ndarray | None = None, block: int = 2048) -> np.ndarray:
    """``a.T`` of a tall, narrow 2-D array into ``out`` (a new array by default), copied a block
    of rows at a time, which stays in the processor's cache while it is turned: numpy copies the
    whole transpose along ``out``'s rows, each a pass over all of ``a`` (the prompt sums: rows
    models x prompts, columns rounds)."""
    out = np.empty(a.shape[::-1]) if out is None else out
    for start in range(0, len(a), block):
        out[:, start:start + block] = a[start:start + block].T
    return out


def _prompt_sums(rounds: _Rounds, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per round and prompt, the summed scores ``sum_{c in g} w_c (v_c (e_i - e_j) - shares_c M)``
    of people's part and of the judge's part (:func:`_pair_parts`), each ``(rounds, models, prompts)``
    (a round's prompts side by side, the layout its products with ``J^-1`` and over prompts read):
    a prompt's clusters are one cluster of the sandwich (Liang & Zeger 1986). Both are linear in
    the parts' values, so ``lambda``'s combination of them is theirs."""
    data, cells, n, big_n = rounds.data, rounds.cells, rounds.n, rounds.big_n
    m, g, r = data.n_models, cells.n_groups, len(rounds)
    means = _means(data, rounds.pair_sums, p, n, big_n)
    (human_at_0, human_slope), (judge_at_0, judge_slope) = rounds.cell_parts
    pc = p.T[cells.pair]  # (cells, rounds), as the parts' values
    out = np.empty((2, r, m * g))
    for k, (at_0, slope) in enumerate(((human_at_0, human_slope), (judge_at_0, judge_slope))):
        values = slope * pc
        np.subtract(at_0, values, out=values)
        _transposed(cells.to_models @ values, out[k])
    out = out.reshape(2, r, m, g)
    # Centred: people's part by their votes' share of the mean, the judge's by its units' and the votes'.
    votes, judged = rounds.prompt_shares
    out[0] -= means[:, 1, :, None] * votes[:, None, :]
    out[1] -= means[:, 0, :, None] * judged[:, None, :] - means[:, 2, :, None] * votes[:, None, :]
    return out[0], out[1]


def _grouped_cross(left: np.ndarray, right: np.ndarray, draws: np.ndarray | None) -> np.ndarray:
    """``sum_g left_g right_g^T / k_g`` per round from prompt sums ``(rounds, models, prompts)``,
    each prompt's term divided by ``draws`` (rounds, prompts), the times a bootstrap drew it (its
    weights carry the factor): k copies of a prompt are k independent clusters, not one."""
    return _per_draw(left, draws) @ right.transpose(0, 2, 1)


def _per_draw(sums: np.ndarray, draws: np.ndarray | None) -> np.ndarray:
    """Prompt sums divided by the times a bootstrap drew the prompt (:func:`_grouped_cross`)."""
    return sums if draws is None else sums / _times_drawn(draws)[:, None, :]


def _times_drawn(draws: np.ndarray) -> np.ndarray:
    return np.where(draws > 0, draws, 1.0)


def _information(rounds: _Rounds, p: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The Jacobian of the estimating equation as PPI++'s code takes it: the information per
    unit pooled over judged pairs and human votes (people's votes alone when ``lam = 0``)."""
    _, n_judge, _, n_human, _ = rounds.pair_sums.transpose(1, 0, 2)
    n, big_n = rounds.n, rounds.big_n
    people = n_human * p * (1 - p) / n[:, None]
    pooled = (n_judge + n_human) * p * (1 - p) / (n + big_n)[:, None]
    return _laplacian(rounds.data, np.where((lam == 0)[:, None], people, pooled))


def _inverses(data: PPIData, information: np.ndarray) -> tuple[np.ndarray, dict[int, Exception]]:
    """Each round's :func:`_regularised_inverse` (``data`` has the n_models it needs); a
    singular one is that round's error."""
    try:
        return _regularised_inverse(information, data, 0.0), {}
    except np.linalg.LinAlgError:
        out, errors = np.full_like(information, np.nan), {}
        for r, matrix in enumerate(information):
            try:
                out[r] = _regularised_inverse(matrix, data, 0.0)
            except np.linalg.LinAlgError as exc:
                errors[r] = exc
        return out, errors


def _fit_at(rounds: _Rounds, lam: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, dict[int, Exception]]:
    """The sandwich covariance of each round's solution (win probabilities ``p``) at its ``lam``."""
    data = rounds.data
    if not len(rounds):  # no round to fit: the sums by prompt would still pass over every cell
        return np.zeros((0, data.n_models, data.n_models)), {}
    if data.group is not None:
        human, judge = rounds.prompt_sums(p)
        psi = human + lam[:, None, None] * judge
        meat = _grouped_cross(psi, psi, rounds.draws)
    else:
        human, judge = _pair_parts(rounds, p)
        psi = human.plus(lam, judge)
        (meat,) = _moment_crosses(data, rounds.moments(), [(psi, psi)])
    bread, errors = _inverses(data, _information(rounds, p, lam))
    return bread @ meat @ bread, errors


def _tuned_lambda(rounds: _Rounds, p: np.ndarray) -> tuple[np.ndarray, dict[int, Exception]]:
    """The ``lambda`` minimising the summed variance of the ratings (PPI++ eq. 6 generalised to
    clusters): ``-tr(J^-1 C J^-1) / (2 tr(J^-1 V J^-1))`` with ``C`` the covariance of the
    human and judge parts (both ways) and ``V`` the judge part's variance; clipped to [0, 1].
    With no judge part (people on every judged pair, ``V`` rounding noise) it is 0."""
    data, draws = rounds.data, rounds.draws
    inverse, errors = _inverses(data, _information(rounds, p, np.ones(len(rounds))))
    if data.group is not None:
        human, judge = rounds.prompt_sums(p)
        cov, var = _grouped_cross(human, judge, draws), _grouped_cross(judge, judge, draws)
        people = _grouped_cross(human, human, draws)
    else:
        human, judge = _pair_parts(rounds, p)
        cov, var, people = _moment_crosses(data, rounds.moments(), [(human, judge), (judge, judge), (human, human)])
    denominator = 2 * np.trace(inverse @ var @ inverse, axis1=1, axis2=2)
    numerator = -np.trace(inverse @ (cov + cov.transpose(0, 2, 1)) @ inverse, axis1=1, axis2=2)
    scale = np.trace(inverse @ people @ inverse, axis1=1, axis2=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 1e-12 * scale, np.clip(numerator / denominator, 0.0, 1.0), 0.0), errors


def _pieces(rounds: _Rounds, p: np.ndarray, splits: tuple[np.ndarray, ...] = (), diagonal: bool = False
            ) -> tuple[list[np.ndarray], dict[int, Exception]]:
    """The sandwich of the estimating equation at every ``lambda`` at once: PPI++'s variance is
    quadratic in ``lambda`` (Angelopoulos, Duchi & Zrnic 2023, eq. 6), ``J^-1 (V_hh + lambda (C +
    C^T) + lambda^2 V_jj) J^-1``, so its three parts ``J^-1 V_hh J^-1``, ``J^-1 C J^-1`` and
    ``J^-1 V_jj J^-1`` (people's part, their cross with the judge's part, the judge's part, at
    the pilot solution ``p``) give any model's variance at any ``lambda`` and the covariance
    between models at their own ``lambda``s: ``(rounds, 3, models, models)`` for the rounds'
    weights, then for each of ``splits`` (weights of a part of the clusters: that part's share of the
    sums, with the whole's scores, centring and ``J``). ``diagonal``: only each part's diagonal,
    ``(rounds, 3, models)``, the variances a model's own ``lambda`` is read on."""
    data, weights = rounds.data, rounds.weights
    inverse, errors = _inverses(data, _information(rounds, p, np.ones(len(rounds))))
    if data.group is None:
        human, judge = _pair_parts(rounds, p)
        split = rounds.split_moments(splits)
        # Halves of the clusters: the moments are linear in the weights, so the whole's are theirs added.
        halves = len(splits) > 1 and np.array_equal(np.sum(splits, axis=0), weights)
        crosses = [_moment_crosses(data, moments, [(human, human), (human, judge), (judge, judge)])
                   for moments in (sum(split) if halves else rounds.moments(), *split)]
    else:  # each part's prompt sums once; a split of whole prompts keeps its prompts' terms
        human, judge = rounds.prompt_sums(p)
        # Per round, each prompt's weight in the whole and in each split: 1/k for a prompt drawn k times.
        drawn = np.ones((len(rounds), human.shape[2])) if rounds.draws is None else 1.0 / _times_drawn(rounds.draws)
        by_prompt = np.stack([drawn, *(drawn * kept for kept in rounds.kept_prompts(splits))], axis=1)
        if diagonal:
            # diag(J^-1 a b^T J^-1)_k = (J^-1 a)_k (J^-1 b)_k (J^-1 symmetric): each prompt's sums taken
            # through J^-1 once, then products summed over prompts, O(prompts x models) per part
            # where the whole matrices cost O(prompts x models^2).
            # (Each product is summed as it is made: three live at once cost their pages' first touch.)
            h, j = inverse @ human, inverse @ judge
            weighting = by_prompt.transpose(0, 2, 1)
            sums = np.stack([(a * b) @ weighting for a, b in ((h, h), (h, j), (j, j))], axis=2)
            return list(sums.transpose(3, 0, 2, 1)), errors  # per weighting (rounds, 3, models)
        crosses = []
        human_t, judge_t = human.transpose(0, 2, 1), judge.transpose(0, 2, 1)
        for share in by_prompt.transpose(1, 0, 2)[:, :, None, :]:
            h, j = human * share, judge * share
            crosses.append([h @ human_t, h @ judge_t, j @ judge_t])
    out = [np.stack([inverse @ c @ inverse for c in cross], axis=1) for cross in crosses]
    return ([np.diagonal(x, axis1=2, axis2=3) for x in out] if diagonal else out), errors


def _people_pieces(rounds: _Rounds, theta_0: np.ndarray, splits: tuple[np.ndarray, ...] = (), diagonal: bool = False
                   ) -> tuple[list[np.ndarray], dict[int, Exception]]:
    """:func:`_pieces` at people's own fit ``theta_0`` (``lambda = 0``), the pilot each ``lambda``
    is tuned at. At PPI's fit (``lambda = 1``) the residuals on people's pairs carry the judge's
    predictions there, which the fit was pulled against, so the cross part read a correlation a
    judge of no use does not have (its ``lambda`` came out 0.04 on average where people's fit
    gives 0.004) and the ratings at that ``lambda`` were wider than people's alone."""
    data = rounds.data
    return _pieces(rounds, 1.0 / (1.0 + np.exp(-(theta_0[:, data.i] - theta_0[:, data.j]))), splits, diagonal)


def _best_lambda(diagonals: np.ndarray) -> np.ndarray:
    """Per model the ``lambda`` minimising its own variance, ``-[J^-1 C J^-1]_kk / [J^-1 V_jj J^-1]_kk``
    (PPI++ sec. 2.2, per coordinate), clipped to [0, 1], from the pieces' diagonals ``(rounds, 3,
    models)``; ``(rounds, models)``."""
    people, cross, judge = diagonals[:, 0], diagonals[:, 1], diagonals[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):  # no judge part (people on every judged pair): 0
        return np.where(judge > 1e-12 * people, np.clip(-cross / judge, 0.0, 1.0), 0.0)


def stacked_covariance(pieces: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The joint covariance of the stacked estimating equations, model k's at its own
    ``lam[k]`` (one sandwich over all K equations): ``A + B L + L B^T + L Q L`` with ``A, B, Q``
    :func:`_pieces`' three parts and ``L = diag(lam)``; ``pieces`` (3, K, K)."""
    a, b, q = pieces
    return a + b * lam[None, :] + (b * lam[None, :]).T + lam[:, None] * q * lam[None, :]


def cross_fit_half(data: PPIData, weights: np.ndarray, seed: int = 0) -> np.ndarray:
    """The first of the two halves the worth's cross-fit splits each round's clusters into,
    drawn at random (seeded: the same halves for every round and every call), as weights
    ``(rounds, rows)``; the second half is the rest. By prompt, every prompt in one half; else
    each row's clusters split in halves, the odd one by a coin per row. A bootstrap draws the
    halves of the design's clusters first and resamples each half apart
    (:func:`fit_ppi_per_model_rounds`' ``halves``), so that no resampled cluster has copies in
    both halves."""
    rng = np.random.default_rng(seed)
    if data.group is not None:
        half = rng.random(int(data.group.max(initial=-1)) + 1) < 0.5
        return weights * half[data.group]
    whole = np.round(weights)
    return whole // 2 + (whole % 2) * (rng.random(weights.shape[-1]) < 0.5)


def _folds(data: PPIData, weights: np.ndarray, seed: int, halves: np.ndarray | None = None) -> np.ndarray:
    """Each round's weights in its two halves, ``halves`` the first where given, else
    :func:`cross_fit_half`'s: ``(2, rounds, rows)``."""
    first = cross_fit_half(data, weights, seed) if halves is None else halves
    return np.stack([first, weights - first])


@dataclass(frozen=True)
class PerModelPPI:
    """Each model's rating and width from its own ``lambda`` (PPI++ per coordinate): ``theta``
    (model k's coordinate one Newton step from the pilot fit to its ``lambda``; people's where it
    is 0), ``sd`` per model
    (:func:`fit_ppi_per_model_rounds`: cross-fitted, so it may exceed people's alone where the
    judge does not help that model), ``lam`` per model (tuned on all the clusters), and people's
    alone (``classical_theta``, ``classical_sd``, ``n_human`` their votes)."""

    models: pd.Index
    theta: np.ndarray
    sd: np.ndarray
    lam: np.ndarray
    classical_theta: np.ndarray
    classical_sd: np.ndarray
    n_human: float = 0.0

    @property
    def width_ratio(self) -> np.ndarray:
        """Per model: its interval's width with the judge over people's alone (1: no help; above
        1: the judge widens it)."""
        return self.sd / self.classical_sd

    @property
    def ratio(self) -> float:
        """What one human vote is worth with the judge: ``(mean classical sd / mean sd)^2``, the
        votes people alone would need for intervals as narrow on average, per vote in hand
        (widths shrink as ``1/sqrt(n)``; :attr:`PPIFit.effective_human_votes` for one lambda)."""
        sd = self.sd.mean()
        return float((self.classical_sd.mean() / sd) ** 2) if sd > 0 else float("nan")


def _drop_failed(rows: np.ndarray, failed: dict[int, Exception], errors: dict[int, Exception]) -> np.ndarray:
    """Record in ``errors`` the errors of rounds ``rows`` (``failed`` is keyed by position in
    ``rows``) and return the other rounds: a failed round takes no further step, so it keeps the
    error of the first step that failed."""
    for k, exc in failed.items():
        errors[int(rows[k])] = exc
    return np.delete(rows, np.fromiter(failed, dtype=np.int64, count=len(failed)))


def _own_coordinates(rounds: _Rounds, lams: np.ndarray, theta_1: np.ndarray) -> np.ndarray:
    """Per round, model k's coordinate of the fit at its own ``lams[k]`` (one batched fit per
    round and distinct ``lambda`` in (0, 1); 1 is the pilot ``theta_1``, 0 left for people's)."""
    out = theta_1.copy()
    rows, grid = np.nonzero((lams > 0) & (lams < 1))
    if not len(rows):
        return out
    key, first, inverse = np.unique(np.c_[rows, lams[rows, grid]], axis=0, return_index=True, return_inverse=True)
    at, lam = rows[first], key[:, 1]
    fits, _, failed = _solve(rounds.take(at), lam)
    fits[list(failed)] = np.nan  # a fit that fails gives no rating (its round's sd stands)
    out[rows, grid] = fits[inverse.ravel(), grid]
    return out


def _per_model(people: PPIFit, theta: np.ndarray, lam: np.ndarray, ratio: np.ndarray, n_human: float
               ) -> PerModelPPI:
    classical_sd = np.sqrt(np.clip(np.diag(people.classical_covariance), 0, None))
    return PerModelPPI(people.models, theta=theta, sd=classical_sd * ratio, lam=lam,
                       classical_theta=people.classical_theta, classical_sd=classical_sd, n_human=n_human)


def fit_ppi_per_model(data: PPIData, weights: np.ndarray | None = None) -> PerModelPPI:
    """:func:`fit_ppi_per_model_rounds` of one round: ``data`` with its own weights."""
    (fit,) = fit_ppi_per_model_rounds(data, data.weight[None] if weights is None else np.asarray(weights)[None])
    if isinstance(fit, Exception):
        raise fit
    return fit


# Rounds fitted together in chunks of about this many (round, row) cells: a judge's 171 rounds
# of 40,000 rows at once held GBs, and a chunk's arrays by prompt (rounds x prompts x models)
# are read several times over, faster while they stay in the processor's cache.
_CHUNK_CELLS = 500_000


def fit_ppi_per_model_rounds(data: PPIData, weights: np.ndarray, draws: np.ndarray | None = None,
                             seed: int = 0, ratings: bool = True, halves: np.ndarray | None = None
                             ) -> list[PerModelPPI | Exception]:
    """Each model's width with the judge at its own ``lambda`` (PPI++ per coordinate), for each
    row of ``weights`` ``(rounds, rows)`` (a judge's designs and their bootstrap rounds) at once.

    Read honestly: a ``lambda`` tuned on the clusters its variance is then read on picks the
    luckiest draw of the sandwich, so read it there was 4-5% too narrow for every judge (a
    judge of no use read 1.08x for a true 1.03x), and a judge that widens a model could never
    show it. The width is cross-fitted instead: the clusters split in two halves at random
    (:func:`_folds`), each half's share of the variance is read at the ``lambda`` tuned on the
    other half, and the two shares added (the sandwich is a sum over clusters). Its ratio to
    people's alone is read on the same sandwich (:func:`_pieces`, at ``lambda = 0`` its
    ratio is 1) and scales people's exact sd. ``lam``: each model's ``lambda`` tuned on all
    the clusters; every ``lambda`` is tuned at people's own fit (:func:`_people_pieces`). A
    round whose fit fails holds the error in its place (:func:`fit_ppi_rounds`).
    ``draws`` as :func:`fit_ppi_rounds`'s. ``ratings`` False: widths only (``theta`` NaN), no fit
    per model's ``lambda``.

    ``halves``: each round's first half ``(rounds, rows)``, for bootstrap rounds that drew the
    halves of their design's clusters first and resampled each half apart (the rest of the
    round's weights is the second half); None: each round's weights split by
    :func:`cross_fit_half`. A round resampled whole and split after puts the copies of a cluster
    drawn twice in both halves, so its ``lambda`` is tuned on clusters its variance is read on.
    By prompt the split keeps a prompt's copies in one half either way."""
    w = np.asarray(weights, dtype=float)
    first_halves = None if halves is None else np.asarray(halves, dtype=float)
    rounds, m = len(w), data.n_models
    batch = _Rounds(data, w, draws)
    n, people, errors = batch.n, [], {}
    ratio, lams, theta = np.ones((rounds, m)), np.zeros((rounds, m)), np.full((rounds, m), np.nan)
    with one_blas_thread():
        step = max(1, _CHUNK_CELLS // max(len(data.pair), 1))
        for start in range(0, rounds, step):  # each chunk's sums made once, for all its fits
            at = np.arange(start, min(start + step, rounds))
            chunk = batch.take(at)
            people += _fit_rounds(chunk, 0.0)  # people's alone; a round they cannot rate fails here
            live = np.array([k for k in range(len(at)) if not isinstance(people[at[k]], Exception)], dtype=np.int64)
            errors.update({int(r): people[r] for r in at if isinstance(people[r], Exception)})
            theta_1, p_1, failed = _solve(chunk.take(live), np.ones(len(live)))
            ok = _drop_failed(live, failed, {})
            keep = np.isin(live, ok)
            errors.update({int(at[live[k]]): exc for k, exc in failed.items()})
            chunk, at, theta_1, p_1 = chunk.take(ok), at[ok], theta_1[keep], p_1[keep]
            if not len(at):
                continue
            folds = tuple(_folds(data, chunk.weights, seed, None if first_halves is None else first_halves[at]))
            theta_0 = np.array([people[r].classical_theta for r in at])  # its prompt sums are made: first
            (tuning, *tuned_on), failed_people = _people_pieces(chunk, theta_0, folds, diagonal=True)
            (whole, *diag), failed = _pieces(chunk, p_1, folds, diagonal=True)
            for k, exc in (failed | failed_people).items():
                errors.setdefault(int(at[k]), exc)
            lams[at] = _best_lambda(tuning)
            if ratings:
                theta[at] = _own_coordinates(chunk, lams[at], theta_1)
            lam_of = [_best_lambda(part) for part in tuned_on]

            def read(d: np.ndarray, lam: np.ndarray) -> np.ndarray:
                return d[:, 0] + 2 * lam * d[:, 1] + lam ** 2 * d[:, 2]

            honest = read(diag[0], lam_of[1]) + read(diag[1], lam_of[0])
            alone = whole[:, 0]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio[at] = np.where(alone > 0, np.sqrt(np.clip(honest, 0, None) / alone), 1.0)
    return [errors[r] if r in errors else
            _per_model(people[r], np.where(lams[r] > 0, theta[r], people[r].classical_theta), lams[r], ratio[r],
                       float(n[r]))
            for r in range(rounds)]


def fit_ppi_stacked(data: PPIData) -> PPIFit:
    """The ratings table's fit, every model at its own ``lambda`` (PPI++ per coordinate, tuned on
    all the clusters): model k's rating is coordinate k of the fit at its ``lambda`` (one fit per
    distinct ``lambda``), and the covariance is that of the K stacked estimating equations, one
    sandwich over all of them (:func:`stacked_covariance`), so gaps and rank sets read it whole.
    As the worth (:func:`fit_ppi_per_model_rounds`), it is read relative to people's alone on the
    same sandwich and scaled by people's exact widths: no model's interval is wider than
    people's alone, and one the judge cannot help keeps people's (its ``lambda`` is 0).
    ``lam`` is the mean of the models' ``lambda``s, ``lams`` each one."""
    batch = _Rounds(data, data.weight[None])
    (people,) = _fit_rounds(batch, 0.0)
    if isinstance(people, Exception):
        raise people
    with one_blas_thread():
        _, p_1, failed = _solve(batch, np.ones(1))
        if failed:
            raise failed[0]
        (whole,), failed = _pieces(batch, p_1)
        (tuning,), failed_people = _people_pieces(batch, people.classical_theta[None])
        if failed or failed_people:
            raise (failed | failed_people)[0]
        lams = _best_lambda(np.diagonal(tuning, axis1=2, axis2=3))[0]
        theta = people.classical_theta.copy()
        inside = np.unique(lams[lams > 0])
        if len(inside):
            fits, _, failed = _solve(batch.repeat(len(inside)), inside)
            if failed:
                raise next(iter(failed.values()))
            for k in np.flatnonzero(lams > 0):
                theta[k] = fits[np.searchsorted(inside, lams[k]), k]
    joint = stacked_covariance(whole[0], lams)
    alone = np.sqrt(np.clip(np.diag(whole[0][0]), 1e-300, None))
    scale = np.sqrt(np.clip(np.diag(people.classical_covariance), 0, None)) / alone
    return replace(people, theta=theta, covariance=scale[:, None] * joint * scale[None, :], lam=float(lams.mean()),
                   lams=lams)


def fit_ppi(data: PPIData, lam: float | None = None) -> PPIFit:
    """PPI++ Bradley-Terry fit (see the module docstring); ``lam`` None tunes it.

    With a tuned ``lam``, a fit whose intervals come out wider on average than people's
    alone (possible in small samples, where the tuning is noisy) falls back to
    ``lam = 0``: then it is people's votes alone, so the effective number of human votes
    is never below the number of votes. Raises ``ValueError`` (people's votes do not
    connect the models) or ``RuntimeError`` (the fit does not converge).
    """
    (fit,) = fit_ppi_rounds(data, data.weight[None], lam)
    if isinstance(fit, Exception):
        raise fit
    return fit


def _mean_sd(covariance: np.ndarray) -> np.ndarray:
    return np.sqrt(np.diagonal(covariance, axis1=1, axis2=2).clip(0)).mean(axis=1)


def fit_ppi_rounds(data: PPIData, weights: np.ndarray, lam: float | np.ndarray | None = None,
                   draws: np.ndarray | None = None) -> list[PPIFit | Exception]:
    """:func:`fit_ppi` of ``data`` with each row of ``weights`` ``(rounds, rows)`` as its
    ``weight``: bootstrap rounds and designs share the rows of compressed data and differ in
    weights only, so their fits are solved together (one batched Newton fit per ``lambda``,
    one batched sandwich), each round as its own fit would come out (to rounding). A round
    :func:`fit_ppi` would refuse holds the error it would raise, in its place. ``draws``
    (rounds, prompts), for data clustered by prompt: how often a bootstrap round drew each
    prompt (:func:`_grouped_cross`); None: every prompt once. ``lam``: None tunes each round's, else one
    for every round or an array of one per round.
    """
    return _fit_rounds(_Rounds(data, np.asarray(weights, dtype=float), draws), lam)


def _fit_rounds(batch: _Rounds, lam: float | np.ndarray | None = None) -> list[PPIFit | Exception]:
    """:func:`fit_ppi_rounds` of a batch of rounds."""
    batch.pair_sums  # made once, for every subset of the rounds below
    data, weights, n, big_n = batch.data, batch.weights, batch.n, batch.big_n
    rounds, m = len(batch), data.n_models
    errors: dict[int, Exception] = {int(r): ValueError(
        "no human votes: prediction-powered ratings need people on some pairs") for r in np.flatnonzero(n <= 0)}

    live = np.flatnonzero(n > 0)
    with one_blas_thread():
        # People's votes alone must connect the models: lambda = 0 is the fit compared with.
        seen = batch.take(live).pair_sums[:, _COLUMNS.index("n_human")] > 0
        adjacency = np.zeros((len(live), m, m), dtype=bool)
        adjacency[:, data.i, data.j] = adjacency[:, data.j, data.i] = seen
        failed = {}
        for k in np.flatnonzero(~_closure(adjacency)[:, 0].all(axis=1)):
            try:  # the error one fit gives
                _check_connected(PairCounts(data.models, data.i[seen[k]], data.j[seen[k]], *[np.zeros(0)] * 4))
            except ValueError as exc:
                failed[int(k)] = exc
        live = _drop_failed(live, failed, errors)

        classical_theta, theta = np.zeros((rounds, m)), np.zeros((rounds, m))
        classical_cov, cov = np.zeros((rounds, m, m)), np.zeros((rounds, m, m))
        p = np.zeros((rounds, len(data.i)))
        classical_theta[live], p[live], failed = _solve(batch.take(live), np.zeros(len(live)))
        live = _drop_failed(live, failed, errors)
        classical_cov[live], failed = _fit_at(batch.take(live), np.zeros(len(live)), p[live])
        live = _drop_failed(live, failed, errors)

        tuned = np.zeros(rounds)
        if lam is None:  # PPI++ sec. 2.2: lambda tuned at the lambda = 1 solution
            theta[live], p[live], failed = _solve(batch.take(live), np.ones(len(live)))
            live = _drop_failed(live, failed, errors)
            tuned[live], failed = _tuned_lambda(batch.take(live), p[live])
            live = _drop_failed(live, failed, errors)
            pilot = live[tuned[live] == 1]  # its fit is the pilot's
        else:
            tuned[live], pilot = np.broadcast_to(lam, (rounds,))[live], live[:0]
        # A lambda clipped to 0 or 1 is a fit already made (0: the people-alone fit, most
        # bootstrap rounds of a judge that adds little); only a lambda inside needs its own.
        people = live[tuned[live] == 0]
        theta[people], cov[people] = classical_theta[people], classical_cov[people]
        own = live[(tuned[live] != 0) & ~np.isin(live, pilot)]
        theta[own], p[own], failed = _solve(batch.take(own), tuned[own])
        own = _drop_failed(own, failed, errors)
        fitted = np.union1d(pilot, own)
        cov[fitted], failed = _fit_at(batch.take(fitted), tuned[fitted], p[fitted])
        _drop_failed(fitted, failed, errors)
        if lam is None:
            wider = np.flatnonzero(_mean_sd(cov) > _mean_sd(classical_cov))
            theta[wider], cov[wider], tuned[wider] = classical_theta[wider], classical_cov[wider], 0.0
    n_human_pairs = weights @ (data.n_human > 0)
    return [errors[r] if r in errors else PPIFit(
        models=data.models, theta=theta[r], covariance=cov[r], lam=float(tuned[r]),
        classical_theta=classical_theta[r], classical_covariance=classical_cov[r], n_human=float(n[r]),
        n_human_pairs=int(n_human_pairs[r]), n_judge=float(big_n[r])) for r in range(rounds)]


def rank_sets(theta: np.ndarray, covariance: np.ndarray, level: float = 0.95, seed: int = 0
              ) -> list[tuple[int, int]]:
    """For each model, the ranks consistent with simultaneous intervals for every pairwise
    difference (Chatzi et al. 2024, "Prediction-powered ranking of large language models"):
    from 1 + the models surely above it to the count of models not surely below it, where
    "surely" means the difference's interval excludes 0 at a critical value ``c`` that holds
    for all pairs at once, the ``level`` quantile of ``max |Z_i - Z_j| / sd_ij`` over pairs
    with ``Z ~ N(0, covariance)`` (20,000 seeded draws). Every model's rank set then holds
    jointly with probability ``level`` (per-model intervals held jointly in 73% of simulated
    runs with six models)."""
    theta, covariance = np.asarray(theta, float), np.asarray(covariance, float)
    m = len(theta)
    i, j = np.triu_indices(m, 1)
    sd = np.sqrt(np.clip(covariance[i, i] + covariance[j, j] - 2 * covariance[i, j], 1e-300, None))
    draws = np.random.default_rng(seed).multivariate_normal(np.zeros(m), covariance, size=20_000,
                                                            check_valid="ignore", method="eigh")
    c = float(np.quantile(np.max(np.abs(draws[:, i] - draws[:, j]) / sd, axis=1), level)) if len(i) else 0.0
    surely = np.zeros((m, m), dtype=bool)  # surely[a, b]: a is surely above b
    gap = theta[i] - theta[j]
    surely[i, j] = gap - c * sd > 0
    surely[j, i] = -gap - c * sd > 0
    above, below = surely.sum(axis=0), surely.sum(axis=1)
    return [(int(1 + a), int(m - b)) for a, b in zip(above, below)]


@dataclass(frozen=True)
class PPIRatings:
    """``table`` (the rows of ``--method bt``) plus ``rank_sets`` and the ``ppi`` summary."""

    table: RatingTable
    fit: PPIFit
    judge: str
    rank_sets: dict[str, tuple[int, int]]
    n_battles: int = 0
    warnings: tuple[str, ...] = ()  # people's pairs unlike the judged ones (:func:`sample_warnings`)
    n_human_left_out: int = 0  # people's votes on pairs the judge gave no verdict on
    design: PicksDesign | None = None  # None: people's pairs taken as a uniform sample
    level: float = 0.95

    def people_alone(self) -> RatingTable:
        """People's votes alone, on the same pairs with the same weights: the fit at ``lambda = 0``
        that the judge's verdicts are compared with (its Wald intervals from the same sandwich;
        ``n`` as :attr:`table`'s)."""
        n = self.table.table.set_index("model")["n"].reindex(self.fit.models.astype(str)).to_numpy()
        interval = (f"sandwich Wald {self.level:.0%} of people's votes alone (lambda=0) on {self.fit.n_human_pairs} "
                    "pairs" + ("" if self.design is None else f", {self.design.name} weighted by inverse inclusion "
                               "probability"))
        table, _ = elo_table(self.fit, self.fit.classical_theta, self.fit.classical_covariance, n, self.level, "bt",
                             interval)
        return table

    def summary(self) -> dict:
        out = {
            "judge": self.judge,
            "design": "uniform" if self.design is None else self.design.name,
            "n_human": int(round(self.fit.n_human)),
            "n_human_left_out": self.n_human_left_out,
            "n_human_pairs": self.fit.n_human_pairs,
            "n_judge": int(round(self.fit.n_judge)),
            "lambda": self.fit.lam,
            "effective_human_votes": self.fit.effective_human_votes,
        }
        if self.fit.lams is not None:
            out["lambda_per_model"] = dict(zip(self.fit.models.astype(str), map(float, self.fit.lams)))
        if self.design is not None:  # the fit's sums are weighted: the counts are the votes'
            out.update(n_human=self.design.n_votes, effective_human_votes=self.design.effective_votes,
                       picks=self.design.to_dict())
        return out

    def describe(self) -> str:
        """The CLI's lines under the table: the weight, the counts and what the judge was worth."""
        s = self.summary()
        left_out = (f"; {self.n_human_left_out} human votes left out: on pairs {self.judge} gave no verdict on "
                    "(parse failures or pairs it never saw)" if self.n_human_left_out else "")
        design = "" if self.design is None else (
            f"design: {self.design.name} ({self.design.n_pairs} picked pairs, inclusion probabilities "
            f"{self.design.min_prob:.3f}-{self.design.max_prob:.3f}), people's votes weighted by their inverse "
            "(active inference, Zrnic & Candes 2024)\n")
        lam = (f"lambda {s['lambda']:.2f}" if self.fit.lams is None else "lambda per model (" + ", ".join(
            f"{m} {v:.2f}" for m, v in s["lambda_per_model"].items()) + "), one sandwich over the stacked equations")
        return design + (f"prediction-powered (PPI++) with judge {self.judge}: {lam}; "
                f"{s['n_human']} human votes on {s['n_human_pairs']} pairs, {s['n_judge']} judged pairs{left_out}\n"
                f"effective human votes: {s['effective_human_votes']:.0f} (people's votes alone would need this "
                f"many for intervals as narrow)\n"
                "rank sets (ranks consistent with simultaneous 95% intervals of every pairwise difference, "
                "Chatzi et al. 2024: all hold together): "
                + ", ".join(f"{m} {lo}" + (f"-{hi}" if hi > lo else "") for m, (lo, hi) in
                            ((m, self.rank_sets[m]) for m in self.table.table["model"])))

    def to_dict(self) -> dict:
        out = self.table.to_dict()
        for row in out["ratings"]:
            row["rank_set"] = list(self.rank_sets[row["model"]])
        out["ppi"] = self.summary()
        return out


def elo_table(fit: PPIFit, theta: np.ndarray, covariance: np.ndarray, n: np.ndarray, level: float,
              method: str, interval: str) -> tuple[RatingTable, dict[str, tuple[int, int]]]:
    """Elo-scale ratings with Wald intervals, and their rank sets."""
    rating = CENTRE + ELO_SCALE * theta
    half = z_two_sided(level) * ELO_SCALE * np.sqrt(np.clip(np.diag(covariance), 0, None))
    table = make_table(method, fit.models, rating, rating - half, rating + half, n, interval=interval)
    sets = dict(zip(fit.models.astype(str), rank_sets(theta, covariance, level)))
    return table, sets


def _split(frame: pd.DataFrame, judge: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """People's votes and ``judge``'s verdicts, records without a verdict left out."""
    if "parse_error" in frame.columns:
        frame = frame[frame["parse_error"].isna().to_numpy()]
    people = frame["judge_type"] == "human" if "judge_type" in frame.columns else frame["judge"].str.startswith("human")
    human, verdicts = frame[people.to_numpy()], frame[(frame["judge"] == judge).to_numpy()]
    if verdicts.empty:
        present = sorted(set(frame.loc[~people.to_numpy(), "judge"].astype(str)))
        raise ValueError(f"no verdicts of judge {judge!r} in the input; the judges there: "
                         + (", ".join(present) if present else "none (only people's votes)"))
    return human, verdicts


@dataclass(frozen=True)
class PicksDesign:
    """The design people's pairs were drawn with: a planner's picks (:mod:`analysis.plan`)."""

    strategy: str  # active or uniform, as the planner wrote it
    n_pairs: int
    min_prob: float
    max_prob: float
    n_votes: int  # people's votes (the fit's counts are weighted)
    effective_votes: float  # votes on uniform picks, people alone, for intervals as narrow

    @property
    def name(self) -> str:
        return f"picks:{self.strategy}"

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "n_pairs": self.n_pairs, "min_inclusion_prob": self.min_prob,
                "max_inclusion_prob": self.max_prob, "weighting": "inverse inclusion probability"}


def picks_inclusion(human: pd.DataFrame, picks: pd.DataFrame) -> np.ndarray:
    """Each vote's inclusion probability, looked up by its pair_id in ``picks`` (``pair_id``,
    ``inclusion_prob``); a vote on a pair outside the picks raises ``ValueError`` naming how many."""
    prob = picks.assign(pair_id=picks["pair_id"].astype(str)).drop_duplicates("pair_id")
    prob = prob.set_index("pair_id")["inclusion_prob"]
    if "pair_id" not in human.columns:
        raise ValueError("the human votes have no pair_id: votes are matched to the picks by it")
    found = human["pair_id"].astype(str).map(prob).to_numpy(dtype=float)
    outside = np.isnan(found)
    if outside.any():
        raise ValueError(f"{int(outside.sum())} human votes are on pairs outside the picks "
                         f"({human['pair_id'][outside].nunique()} pairs): their inclusion probability is unknown, "
                         "so the design-weighted ratings cannot use them; rate them without --picks or leave them out")
    return found


def ppi_ratings(frame: pd.DataFrame, judge: str, *, level: float = 0.95, lam: float | None = None,
                picks: pd.DataFrame | None = None, cluster: str | None = None) -> PPIRatings:
    """Prediction-powered BT ratings from a frame holding people's votes and ``judge``'s verdicts.

    With ``picks`` (a planner's ``pair_id``, ``inclusion_prob`` and ``strategy`` rows) people's
    votes are weighted by their pairs' inverse inclusion probabilities (see :func:`ppi_data`).
    ``cluster`` as :func:`analysis.stats.cluster_groups` (default: by prompt when a prompt
    carries several pairs)."""
    human, verdicts = _split(frame, judge)
    inclusion = None if picks is None else picks_inclusion(human, picks)
    # As the report does (analysis.judging.worth): people's votes on pairs the judge gave no verdict on
    # (its parse failures, pairs it never saw) have no prediction, so they are left out and counted.
    data = ppi_data(human, verdicts, repr(judge), unjudged="leave out", inclusion=inclusion,
                    cluster=cluster)
    unweighted = data if picks is None else ppi_data(human, verdicts, repr(judge), unjudged="leave out",
                                                     cluster=cluster)
    n_left_out = len(human) - round(unweighted.totals()[0])
    fit = fit_ppi_stacked(data) if lam is None else fit_ppi(data, lam)
    design = None
    if picks is not None:
        # What people's votes alone are worth: their unweighted fit's widths stand for votes on
        # uniform picks (its centre is biased on active picks, its spread is a uniform sample's).
        alone = fit_ppi(unweighted, 0.0)
        ratio = _mean_sd(alone.classical_covariance[None])[0] / _mean_sd(fit.covariance[None])[0]
        strategy = str(picks["strategy"].iloc[0]) if "strategy" in picks.columns and len(picks) else "given"
        design = PicksDesign(strategy=strategy, n_pairs=int(picks["pair_id"].nunique()),
                             min_prob=float(picks["inclusion_prob"].min()), max_prob=float(picks["inclusion_prob"].max()),
                             n_votes=len(human) - n_left_out,
                             effective_votes=float((len(human) - n_left_out) * ratio ** 2))
    n = data.n_battles
    unit = "pair_id" if data.group is None else f"prompt ({int(data.group.max()) + 1} prompts)"
    lam_text = f"lambda={fit.lam:.2f}" if fit.lams is None else "lambda per model, mean {:.2f}".format(fit.lam)
    interval = (f"PPI++ sandwich Wald {level:.0%} ({lam_text}), clustered by {unit} "
                f"({fit.n_human_pairs} human pairs, {int(fit.n_judge)} judged pairs)"
                + ("" if design is None else f", {design.name} weighted by inverse inclusion probability"))
    table, sets = elo_table(fit, fit.theta, fit.covariance, n, level, "bt-ppi", interval)
    # A planner's picks are not a uniform sample on purpose (their weights correct for it).
    warnings = sample_warnings(human, verdicts) if picks is None else ()
    return PPIRatings(table=table, fit=fit, judge=judge, rank_sets=sets, n_battles=len(human) + len(verdicts),
                      n_human_left_out=n_left_out, design=design, warnings=warnings, level=level)


def sample_warnings(human: pd.DataFrame, verdicts: pd.DataFrame, alpha: float = 0.001) -> tuple[str, ...]:
    """PPI is valid only if people's pairs are a random sample of the judged ones: the judged
    pairs people voted on (labelled) against those they did not (unlabelled), compared by
    prompt, category, model and the judge's verdict (a chi-square test of each table,
    Pearson 1900; a warning with the shares where p < ``alpha``). With people only on some
    categories the ratings drift from people's, silently, by up to 15 Elo in simulation."""
    # Both coded together: a Python set of a million string ids was most of this check.
    codes = pd.factorize(pd.concat([verdicts["pair_id"], human["pair_id"]], ignore_index=True))[0]
    voted = np.zeros(codes.max(initial=-1) + 1, dtype=bool)
    theirs, mine = codes[len(verdicts):], codes[:len(verdicts)]
    voted[theirs[theirs >= 0]] = True
    labelled = (mine >= 0) & voted[np.maximum(mine, 0)]
    if labelled.all() or not labelled.any():
        return ()
    from scipy.stats import chi2_contingency

    columns = {"category": verdicts["category"] if "category" in verdicts else None,
               "prompt": prompt_column(verdicts),  # battle frames carry prompt_id, records the text
               "model": None, "verdict": verdicts["winner"]}
    out = []
    for name, values in columns.items():
        if name == "model":  # each verdict counts once for each of its two models
            values = pd.concat([verdicts["model_a"], verdicts["model_b"]], ignore_index=True)
            mask = np.r_[labelled, labelled]
        else:
            if values is None or values.isna().all():
                continue
            mask = labelled
        # The contingency table, a row per value (sorted, no missing) and a column unlabelled, labelled:
        # counted with numpy (pandas' crosstab took 40 ms a call, most of a simulation's PPI fit).
        codes, kinds = pd.factorize(values.to_numpy(dtype=object), sort=True)
        known = codes >= 0
        counts = np.bincount(2 * codes[known] + mask[known], minlength=2 * len(kinds)).reshape(-1, 2)
        if len(kinds) < 2 or not counts.sum(axis=0).all():
            continue
        if name == "prompt" and len(kinds) > 0.5 * len(values):
            continue  # about one pair a prompt: prompts cannot be compared, categories and models can
        p = chi2_contingency(counts).pvalue
        if p < alpha:
            table = pd.DataFrame(counts, index=kinds, columns=[False, True])
            share = table / table.sum(axis=0)
            gap = (share[True] - share[False]).abs().sort_values(ascending=False)
            worst = ", ".join(f"{k} {100 * share.loc[k, True]:.0f}% vs {100 * share.loc[k, False]:.0f}%"
                              for k in gap.index[:3])
            out.append(f"people's pairs are not a random sample of the judged ones by {name} (chi-square p = {p:.1g}; "
                       f"share among people's pairs vs the rest: {worst}): PPI's correction assumes they are, so "
                       "these ratings may be biased")
    return tuple(out)


@dataclass(frozen=True)
class PPIWinRates:
    """Win rates against ``baseline`` on people's scale (percent), one PPI fit per model."""

    baseline: str
    judge: str
    table: pd.DataFrame  # model, baseline, win_rate, lower, upper, n, n_human, n_judge, lambda, effective_human_votes
    level: float

    def summary(self) -> dict:
        t = self.table
        fitted = t["effective_human_votes"].notna()
        return {
            "judge": self.judge,
            "n_human": int(t["n_human"].sum()),
            "n_human_pairs": int(t["n_human_pairs"].sum()),
            "n_judge": int(t["n_judge"].sum()),
            "lambda": float(t.loc[fitted, "lambda"].mean()) if fitted.any() else None,  # mean over models
            "effective_human_votes": float(t.loc[fitted, "effective_human_votes"].sum()) if fitted.any() else None,
        }

    def to_dict(self) -> dict:
        rows = [{k: (None if isinstance(v, float) and not np.isfinite(v) else
                     int(v) if isinstance(v, np.integer) else v) for k, v in row.items()}
                for row in self.table.to_dict("records")]
        return {"method": "winrate-ppi", "baseline": self.baseline, "level": self.level, "ratings": rows,
                "ppi": self.summary()}

    def describe(self) -> str:
        width = max(5, *(len(m) for m in self.table["model"]))
        lines = [f"method: winrate-ppi   baseline: {self.baseline}   judge: {self.judge}   "
                 f"intervals: PPI++ sandwich {self.level:.0%} (logit scale), clustered by pair_id", "",
                 f"{'model':<{width}}  {'win rate':>8}  {'lower':>6}  {'upper':>6}  {'votes':>6}  {'judged':>6}  "
                 f"{'lambda':>6}  {'eff. votes':>10}"]
        for r in self.table.to_dict("records"):
            lines.append(f"{r['model']:<{width}}  {r['win_rate']:8.2f}  {r['lower']:6.2f}  {r['upper']:6.2f}  "
                         f"{r['n_human']:>6}  {r['n_judge']:>6}  {r['lambda']:6.2f}  {r['effective_human_votes']:10.0f}")
        return "\n".join(lines)


def ppi_win_rates(frame: pd.DataFrame, judge: str, baseline: str | None = None, *, level: float = 0.95
                  ) -> PPIWinRates:
    """AlpacaEval's win rate against a baseline, prediction-powered: per model, the PPI fit of
    the two-model Bradley-Terry (model vs baseline), whose win probability is the rectified
    mean ``lambda mean(yhat) + mean(y - lambda yhat)`` (a tie half a win; verdicts from the
    winner, not ``prob_a``). Intervals: the logit-scale sandwich interval mapped to percent."""
    from .winrate import find_baseline

    human, verdicts = _split(frame, judge)
    baseline = baseline or find_baseline(verdicts)
    z = z_two_sided(level)
    rows = []
    against = {}
    for name, part in (("human", human), ("judge", verdicts)):
        a, b = part["model_a"].to_numpy(), part["model_b"].to_numpy()
        against[name] = (part, np.where(a == baseline, b, np.where(b == baseline, a, None)))
    for model in sorted({m for m in against["judge"][1] if m is not None}):
        (h, h_other), (v, v_other) = against["human"], against["judge"]
        people, judged = h[h_other == model], v[v_other == model]
        row = {"model": model, "baseline": baseline, "win_rate": np.nan, "lower": np.nan, "upper": np.nan,
               "n_human": len(people), "n_human_pairs": 0, "n_judge": 0, "lambda": np.nan,
               "effective_human_votes": np.nan}
        if len(people):
            fit = fit_ppi(ppi_data(people, judged, repr(judge)))
            k, b = fit.models.get_loc(model), fit.models.get_loc(baseline)
            c = fit.covariance
            gap, se = fit.theta[k] - fit.theta[b], np.sqrt(max(c[k, k] + c[b, b] - 2 * c[k, b], 0.0))
            row.update(win_rate=100 / (1 + np.exp(-gap)), lower=100 / (1 + np.exp(-(gap - z * se))),
                       upper=100 / (1 + np.exp(-(gap + z * se))), n_human_pairs=fit.n_human_pairs,
                       n_judge=int(fit.n_judge), effective_human_votes=fit.effective_human_votes)
            row["lambda"] = fit.lam
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("win_rate", ascending=False, ignore_index=True)
    return PPIWinRates(baseline=baseline, judge=judge, table=table, level=level)


def check_ppi_options(args) -> None:
    """``--ppi`` rates people's votes (``--judge human``) by ``--method bt``'s model, ties as half
    wins, or as ``--method winrate``'s win rates against a baseline."""
    if args.judge not in (None, "human"):
        raise ValueError(f"--ppi rates people's votes: use --judge human, not --judge {args.judge}")
    if args.method not in ("bt", "winrate"):
        raise ValueError(f"--ppi applies to --method bt or winrate, not {args.method}")
    for flag, value in (("bootstrap", args.bootstrap), ("ties", args.ties), ("anchor", args.anchor),
                        ("ci", args.ci), ("l2", args.l2), ("weight-strong", args.strong_weight),
                        ("per-pair", getattr(args, "per_pair", None))):
        if value:
            raise ValueError(f"--{flag} does not apply with --ppi (its intervals are the PPI++ sandwich)")
    if args.humans_only:
        raise ValueError("--humans-only leaves no judge verdicts for --ppi")
