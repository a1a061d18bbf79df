"""Self-preference that a judge's sharpness cannot fake: one logit per judge.

The raw gap of :mod:`analysis.bias.self_family` (Wataoka et al. 2024's equal-opportunity gap,
by family) mixes a judge's taste for its own family with how easy agreeing is: when the
reference picked a strong family's response the pick is usually right and every judge
agrees. Holding the families' strength fixed with effects shared by all judges is not
enough either: a judge that separates strong from weak answers more sharply than the others
(or more noisily) then shows a "self term" for a strong (or weak) own family with none there.

So each judge gets its own model, on its decisive verdicts in the canonical frame of
:mod:`analysis.judgment_table` (X is the sorted-first text, Y the other; ties left out):

    logit P(judge picks X) = slope[c] * gap_c(X, Y) + position * shown(X) + length * len(X, Y)
                             + sum_f style_f * d_f(X, Y) + self * own(X, Y)

* ``gap``: the quality gap the reference sees, the reference's Bradley-Terry strength of X's
  model minus Y's (log-odds, fitted on the reference's decisive votes with a first-shown term
  when the reference saw orders). The judge's own ``slope`` is its sharpness relative to the
  reference: 1 reads quality as people do, 2 twice as sharply, 0.3 mostly noise.
* ``position``: +1 when X was shown first, -1 when second (its own first-shown lean); left
  out for per-pair verdicts, which have seen both orders.
* ``self``: +1 when X is of the judge's family, -1 when Y is, 0 otherwise (both or neither).

Two confounders fake a self term without these (tests/test_self_preference_confounders.py): a judge that weighs length more
than people while one family writes longer answers, and a family strong on some topics whose
judge is sharp there and noisy elsewhere. So the judge's model also holds

* ``length``: log((1 + length of X) / (1 + length of Y)), its own length lean (the
  reference's strengths are fitted with the reference's own length term, so the gap is
  quality apart from length);
* ``style_f``: its own lean for each markdown element ``bt-style`` holds fixed (headers, list
  items, bold spans, :data:`analysis.judgment_table.MARKDOWN`), on FastChat's normalised
  difference ``d_f = (f_X - f_Y) / (f_X + f_Y + 1)`` of the counts
  (:func:`analysis.ratings.style.normalised_difference`); an element enters where X and Y
  differ in it on :data:`~analysis.ratings.style.MIN_STYLE_PAIRS` pairs or more, for the
  reference as for the judge (a family writing more lists, judges fond of lists);
* per category, where every record carries one (:data:`MIN_CATEGORY_ROWS` reference votes
  each): the reference's strengths and the judge's slope, one of each per category;

and where the judge is itself one of the rated models and its family has others, a second
fit splits ``self`` into its own model and its siblings (a judge may favour its stronger
sibling more than itself).

``self`` is then the judge's extra log-odds for its own family's response beyond what its
own reading of quality, its position lean and its length lean predict: its *lean* against the
reference. A wording that every LLM judge rewards and people do not gives the family that writes
it a lean in every judge, its own included; read alone it flags that family's judge and gives the
others negative or positive terms by the pairs they meet in. So where judges of other families
are held against the same reference, each is also fitted with its self column put on this judge's
family, on the same answers, and the reported term is the judge x family contrast: this judge's
lean for its family less the mean of theirs (``shared``, the part all share), with one stacked
covariance for the reference and every fit (they share pairs and clusters). The judges are tested
together: ``p_holm`` is Holm's (1979) adjustment over them and ``flagged`` reads it at 5%.

Intervals and p-values use Student's t on the clusters less one (with the sandwich's G/(G-1)
factor; Cameron & Miller 2015): with a dozen prompts the normal quantile flags unbiased judges
too often. Fewer than :data:`MIN_CLUSTERS_TO_TELL` clusters and the report says it cannot tell,
with the term the data would find 4 times in 5 (``detectable``). Without recorded categories the
term assumes the judge equally sharp on every prompt; :func:`slope_check` tests that on the data. The interval is
cluster-robust by the report's cluster (Liang & Zeger 1986): the prompt where a prompt
carries several pairs (they share its answers), else the ``pair_id`` (a judge's two orders
and people's votes on a pair are one unit); ``ci_by_prompt`` is the prompt-clustered one. The model needs pairs with exactly one response of the judge's family and
a gap that varies apart from them (other opponents, or pairs without the family); otherwise
the term is not identified and the judge gets a note instead of a number. The reference
strengths are estimated from the same pairs; their uncertainty is carried into the interval by
the sandwich of the two stacked fits (Murphy & Topel 1985), since a judge's self term for a
one-model family is, in effect, its rating of that model against the reference's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.judgment_table import MARKDOWN, positions
from analysis.ratings.style import MIN_STYLE_PAIRS, normalised_difference
from analysis.stats import FitError, contrast, fit_logit, normal_sf, sandwich, t_quantile, t_sf

__all__ = ["SPECIFICATION", "ControlledSelfPreference", "JudgeRows", "SelfTerm", "Verdicts", "controlled_self_preference",
           "fit_reference", "fit_self_term", "holm", "slope_check", "stacked_cov"]

MIN_ROWS = 20  # fewest decisive rows with a self term (exactly one response of the judge's family)
MIN_PAIRS = 10  # ... spread over at least this many pairs
SPECIFICATION = (
    "one logit per judge on its decisive verdicts: P(judge picks X over Y) from its own slope on the quality gap "
    "people see (the reference's Bradley-Terry strength of X's model minus Y's, apart from the reference's own "
    "position and length leans; strengths and slope per category where the records carry one), its own position "
    "term (X shown first or second), its own length term (log length of X over Y), its own lean for each "
    "markdown element bt-style holds fixed (headers, list items, bold; normalised difference of X's count and "
    "Y's) and the self term (+1 when X is "
    "of the judge's family, -1 when Y is); intervals cluster-robust by the report's cluster (prompt or pair). It "
    "controls for model strength as the reference sees it, for the judge's own sharpness (how strongly it "
    "separates strong from weak answers), for its position lean, its length lean and its markdown leans; where "
    "the judge's family "
    "has two or more models its preference for its own model and for its siblings are fitted apart. The "
    "self term is that lean less the mean lean of the judges of other families for the same family on the same "
    "answers (a taste all LLM judges share is not self-preference), with t quantiles on the clusters less one "
    "and p adjusted for testing every judge (Holm)"
)
MIN_CATEGORY_ROWS = 50  # fewest decisive reference votes per category for strengths by category
MIN_CLUSTERS_TO_TELL = 30  # fewer clusters: say the data are too few to tell
ALPHA = 0.05  # a judge is flagged when its Holm-adjusted p is under this


@dataclass(frozen=True)
class ControlledSelfPreference:
    coef: float | None  # log-odds; > 0 means the judge favours its own family
    ci: tuple[float, float] | None  # clustered by ``cluster``
    p: float | None
    n_rows: int  # decisive rows of this judge's fit
    n_judges: int  # judges given (each fitted on its own)
    n_self_rows: int  # rows with exactly one response of the judge's family
    note: str | None = None
    ci_by_prompt: tuple[float, float] | None = None  # the same term clustered by prompt
    slope: float | None = None  # the judge's sharpness relative to the reference
    slope_ci: tuple[float, float] | None = None
    position: float | None = None  # log-odds for the first-shown response
    position_ci: tuple[float, float] | None = None
    n_pairs: int = 0
    cluster: str = "pair"  # the unit ``ci`` treats as independent
    length: float | None = None  # the judge's own lean per unit of log length ratio
    length_ci: tuple[float, float] | None = None
    style: tuple[str, ...] = ()  # the markdown elements whose lean the judge's model holds
    categories: tuple[str, ...] = ()  # strengths and slope read per category (none: pooled)
    own_model: float | None = None  # preference for its own model, siblings held apart
    own_model_ci: tuple[float, float] | None = None
    siblings: float | None = None  # preference for its family's other models
    siblings_ci: tuple[float, float] | None = None
    # ``coef`` is the judge's own-family lean beyond the other judges' lean for the same family
    # on the same answers (a judge x family contrast) when judges of other families are fitted
    # against the same reference; ``lean`` is its lean against the reference alone and
    # ``shared`` the other judges' mean lean for its family, the part of ``lean`` all share.
    lean: float | None = None
    lean_ci: tuple[float, float] | None = None
    shared: float | None = None
    shared_ci: tuple[float, float] | None = None
    compared_with: tuple[str, ...] = ()  # the judges whose lean ``shared`` is
    p_holm: float | None = None  # ``p`` adjusted for testing every judge (Holm 1979)
    flagged: bool = False  # p_holm < 0.05
    n_clusters: int = 0  # clusters of ``ci``; its t quantiles have n_clusters - 1 degrees of freedom
    detectable: float | None = None  # the |term| found 80% of the time at 5% with this interval's width
    slope_check_p: float | None = None  # per-prompt slope check (no category recorded)
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeRows:
    """One judge's input: its judgment-table rows and its reference's rows."""

    family: str | None
    rows: pd.DataFrame
    reference_rows: pd.DataFrame
    per_pair: bool = False  # rows are one verdict per pair (no display position)
    model: str | None = None  # the judge's own model among the rated ones, when it is one


def _fit(X: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Maximum-likelihood logit coefficients (:func:`analysis.stats.fit_logit`); None
    when the fit does not converge or the data are (quasi-)separated."""
    try:
        return fit_logit(X, y).params
    except FitError:
        return None


def _canonical_models(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Model of the canonical X (sorted-first) text and of Y."""
    a, b = rows["model_a"].to_numpy(dtype=object), rows["model_b"].to_numpy(dtype=object)
    flip = rows["flip"].to_numpy(dtype=bool)
    return np.where(flip, b, a), np.where(flip, a, b)


@dataclass(frozen=True)
class Verdicts:
    """Decisive verdicts as arrays: the codes of the models of X and Y, 1 when X won, X's
    display position (+1 first, -1 second; None for per-pair verdicts), cluster codes (pairs,
    prompts: one coding shared by the reference's and the judge's verdicts) and, for a judge,
    the self term's column (+1 X of its family, -1 Y, 0 otherwise)."""

    x: np.ndarray
    y: np.ndarray
    won: np.ndarray
    position: np.ndarray | None
    pair: np.ndarray
    prompt: np.ndarray | None = None
    own: np.ndarray | None = None
    # log((1 + length of X) / (1 + length of Y)) in characters: the rater's own length lean.
    length: np.ndarray | None = None
    # Category codes (0..C-1): strengths and the judge's sharpness are then read per category.
    category: np.ndarray | None = None
    # +1 when X is the judge's own model, -1 when Y is (the rest of ``own`` is its siblings).
    own_model: np.ndarray | None = None
    # (rows, elements): the normalised difference of X's and Y's count of each markdown
    # element named in ``style_names``, the rater's own style leans.
    style: np.ndarray | None = None
    style_names: tuple[str, ...] = ()
    # The families of X and Y (a judge's verdicts): the self column of any family is read off them.
    families: tuple[np.ndarray, np.ndarray] | None = None

    def toward(self, family: str) -> "Verdicts":
        """The same verdicts with the self column put on ``family`` (+1 X of it, -1 Y)."""
        fx, fy = self.families
        return replace(self, own=(fx == family).astype(float) - (fy == family).astype(float), own_model=None)


@dataclass(frozen=True)
class SelfTerm:
    """The fitted judge model: ``theta`` = (slope [one per category], [position], [length],
    self [or own model, siblings]) named by ``columns``, and its covariances; ``df`` (and
    ``df_by_prompt``) the clusters less one, the degrees of freedom of its t quantiles;
    ``design`` what :func:`stacked_cov` takes to set it beside other judges' fits."""

    theta: np.ndarray
    cov: np.ndarray  # clustered by pair, reference uncertainty included
    cov_by_prompt: np.ndarray | None
    columns: tuple[str, ...] = ()
    df: int | None = None
    df_by_prompt: int | None = None
    design: tuple | None = None  # (G, Z, slope_of)

    def at(self, name: str) -> int:
        return self.columns.index(name)

    def interval(self, i: int, by_prompt: bool = False) -> tuple[float, float]:
        cov = self.cov_by_prompt if by_prompt else self.cov
        return t_interval(float(self.theta[i]), float(np.sqrt(cov[i, i])), self.df_by_prompt if by_prompt else self.df)


def t_interval(coef: float, se: float, df: int | None, level: float = 0.95) -> tuple[float, float]:
    """``coef -+ t se`` with t the quantile of Student's t on ``df`` degrees of freedom (the
    clusters less one: with few clusters the sandwich is itself noisy, and the normal quantile
    flags unbiased judges too often; Cameron & Miller 2015, sec. VI); normal without ``df``."""
    q = t_quantile(0.5 + level / 2, df)
    return (coef - q * se, coef + q * se)


def t_pvalue(coef: float, se: float, df: int | None) -> float:
    """Two-sided p of ``coef / se`` against Student's t on ``df`` degrees of freedom (normal without)."""
    z = abs(coef) / se if se > 0 else np.inf
    return float(2 * t_sf(z, df))


def holm(p: Mapping[str, float | None]) -> dict[str, float | None]:
    """Holm's (1979) step-down adjusted p-values: the k-th smallest of m is multiplied by
    m - k + 1, then made non-decreasing; each is then read against 0.05 as it is, and the
    chance that any unbiased judge is flagged stays under 5% however many are tested."""
    known = sorted((v, k) for k, v in p.items() if v is not None)
    out: dict[str, float | None] = {k: None for k in p}
    running = 0.0
    for rank, (value, name) in enumerate(known):
        running = max(running, min(1.0, (len(known) - rank) * value))
        out[name] = running
    return out


def stacked_cov(D, y_ref, beta, groups_ref, fits: list[tuple[SelfTerm, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Covariance of several judge fits' coefficients (each :class:`SelfTerm` with its outcomes
    and cluster of each row), the reference strengths' uncertainty carried in: the sandwich of
    the stacked fits' estimating equations (Murphy & Topel 1985; Newey & McFadden 1994, sec. 6),
    clustered so that every fit's rows of one cluster are one unit, with statsmodels'
    small-sample factor G/(G-1) * (N-1)/(N-K). Each fit's ``design`` holds ``G`` (the
    strengths to its gap: ``gap = G @ strengths``), ``Z`` and ``slope_of`` (per row, which
    column of ``Z`` holds its gap). Judges on the same pairs share the reference and the
    clusters, so a contrast of their terms is read with its covariance, not as if independent."""
    k_ref = D.shape[1]
    sizes = [f.design[1].shape[1] for f, _, _ in fits]
    k_all = k_ref + sum(sizes)
    p_ref = 1.0 / (1.0 + np.exp(-(D @ beta)))
    A = np.zeros((k_all, k_all))
    A[:k_ref, :k_ref] = -(D * (p_ref * (1 - p_ref))[:, None]).T @ D
    scores = [np.c_[D * (y_ref - p_ref)[:, None], np.zeros((len(y_ref), k_all - k_ref))]]
    start = k_ref
    for (fit, y, _), k in zip(fits, sizes):
        G, Z, slope_of = fit.design
        theta = fit.theta
        n_str = G.shape[1]
        p = 1.0 / (1.0 + np.exp(-(Z @ theta)))
        w = p * (1 - p)
        block = slice(start, start + k)
        A[block, block] = -(Z * w[:, None]).T @ Z
        # How the judge's scores move with the strengths, through its gap columns.
        cross = -(Z * (w * theta[slope_of])[:, None]).T @ G
        for c in np.unique(slope_of):
            cross[c] += ((y - p) * (slope_of == c)) @ G
        A[block, :n_str] = cross
        part = np.zeros((len(y), k_all))
        part[:, block] = Z * (y - p)[:, None]
        scores.append(part)
        start += k
    inv = np.linalg.inv(A)
    groups = np.concatenate([np.asarray(groups_ref), *(np.asarray(g) for _, _, g in fits)])
    return sandwich(inv, np.vstack(scores), groups, small_sample=True)[k_ref:, k_ref:]


def _strength_columns(v: Verdicts, n_models: int, n_categories: int) -> np.ndarray:
    """Bradley-Terry strength columns, one block per category (model 0 the baseline in each)."""
    base = contrast(v.x, v.y, n_models)
    if n_categories <= 1:
        return base
    out = np.zeros((len(base), n_categories * base.shape[1]))
    for c in range(n_categories):
        rows = v.category == c
        out[rows, c * base.shape[1]:(c + 1) * base.shape[1]] = base[rows]
    return out


def fit_reference(ref: Verdicts, n_models: int, n_categories: int = 1):
    """The reference's Bradley-Terry fit: (design, coefficients, number of strength columns),
    strengths first (log-odds, model 0 the baseline; one block per category when
    ``n_categories`` > 1), then a first-shown term when the verdicts have positions and a
    length term when they carry lengths, so the strengths are quality apart from the reference's
    own position and length leans. None when the models are not connected by decisive votes
    (no MLE) in some category."""
    D = _strength_columns(ref, n_models, n_categories)
    n_str = D.shape[1]
    if ref.position is not None:
        D = np.c_[D, ref.position]
    if ref.length is not None:
        D = np.c_[D, ref.length]
    if ref.style is not None:
        D = np.c_[D, ref.style]
    if len(D) == 0 or np.linalg.matrix_rank(D) < D.shape[1]:
        return None
    beta = _fit(D, ref.won)
    return None if beta is None else (D, beta, n_str)


def fit_self_term(ref: Verdicts, judge: Verdicts, n_models: int, reference_fit=None, *, split: bool = False,
                  n_categories: int = 1, covariance: bool = True) -> SelfTerm | str:
    """The judge's model (module docstring) on coded verdicts, or why it cannot be fitted.

    ``reference_fit`` is :func:`fit_reference`'s result when already computed (several
    judges against one reference). With ``n_categories`` > 1 (``category`` codes on both
    sets) the strengths and the judge's slope are one per category; with lengths on the
    judge's verdicts its own length lean is a term; with ``split`` the self term is two, the
    judge's own model (``own_model``) and its family's other models. Without ``covariance`` only
    the coefficients and the design are filled in (:func:`stacked_cov` reads them beside others).
    """
    fitted = reference_fit if reference_fit is not None else fit_reference(ref, n_models, n_categories)
    if fitted is None:
        return "the reference's decisive votes give no Bradley-Terry strengths for these models"
    D, beta, n_str = fitted
    G = _strength_columns(judge, n_models, n_categories)
    gap = G @ beta[:n_str]
    if n_categories > 1:
        slope_of = judge.category.astype(np.int64)
        columns = [gap * (slope_of == c) for c in range(n_categories)]
        names = [f"slope[{c}]" for c in range(n_categories)]
    else:
        slope_of, columns, names = None, [gap], ["slope"]
    for name, column in (("position", judge.position), ("length", judge.length)):
        if column is not None:
            columns.append(column)
            names.append(name)
    if judge.style is not None:
        columns += list(judge.style.T)
        names += [f"style:{name}" for name in judge.style_names]
    if split:
        columns += [judge.own_model, judge.own - judge.own_model]
        names += ["own_model", "siblings"]
    else:
        columns.append(judge.own)
        names.append("self")
    Z = np.column_stack(columns)
    if np.linalg.matrix_rank(Z) < Z.shape[1]:
        return "collinear"
    theta = _fit(Z, judge.won)
    if theta is None:
        return "the judge's fit did not converge (separated data)"
    slope_of = np.zeros(len(Z), dtype=np.int64) if slope_of is None else slope_of
    bare = SelfTerm(theta, np.empty((0, 0)), None, tuple(names), design=(G, Z, slope_of))
    if not covariance:
        return bare
    cov = stacked_cov(D, ref.won, beta, ref.pair, [(bare, judge.won, judge.pair)])
    by_prompt = df_prompt = None
    if ref.prompt is not None and judge.prompt is not None:
        by_prompt = stacked_cov(D, ref.won, beta, ref.prompt, [(bare, judge.won, judge.prompt)])
        df_prompt = _n_clusters(ref.prompt, judge.prompt) - 1
    return SelfTerm(theta, cov, by_prompt, tuple(names), _n_clusters(ref.pair, judge.pair) - 1, df_prompt,
                    bare.design)


def _n_clusters(*groups: np.ndarray) -> int:
    return len(np.unique(np.concatenate(groups)))


def _coded(rows: pd.DataFrame, models: pd.Index, pairs: pd.Index, prompts: pd.Index | None, per_pair: bool,
           family: str | None = None, categories: pd.Index | None = None, model: str | None = None) -> Verdicts:
    rows = rows[rows["decisive"].to_numpy(dtype=bool)]
    x, y = _canonical_models(rows)
    xi, yi = positions(models, x), positions(models, y)
    flip = rows["flip"].to_numpy(dtype=bool)
    own = own_model = None
    if family is not None:
        fa, fb = rows["family_a"].to_numpy(dtype=object), rows["family_b"].to_numpy(dtype=object)
        fam_x, fam_y = np.where(flip, fb, fa), np.where(flip, fa, fb)
        own = (fam_x == family).astype(float) - (fam_y == family).astype(float)
        known = pd.notna(fam_x) & pd.notna(fam_y)
        if model is not None:
            own_model = (x == model).astype(float) - (y == model).astype(float)
    else:
        known = np.ones(len(rows), dtype=bool)
    category = None
    if categories is not None:
        category = positions(categories, rows["category"])
        known &= category >= 0
    keep = (xi >= 0) & (yi >= 0) & known
    position = None if per_pair else np.where(flip, -1.0, 1.0)[keep]
    length = None
    if "len_a" in rows.columns and "len_b" in rows.columns:
        la, lb = rows["len_a"].to_numpy(dtype=float), rows["len_b"].to_numpy(dtype=float)
        length = np.where(flip, -1.0, 1.0) * (np.log1p(la) - np.log1p(lb))
        length = length[keep] if np.any(length != 0) else None
    prompt = None
    if prompts is not None:
        prompt = positions(prompts, rows["prompt"])[keep]
    pair = positions(pairs, rows["pair_id"])[keep]
    style, style_names = _style(rows, flip, keep, pair)
    sides = (np.where(flip, fb, fa)[keep], np.where(flip, fa, fb)[keep]) if family is not None else None
    return Verdicts(xi[keep], yi[keep], (rows["canon"].to_numpy() == 1).astype(float)[keep], position,
                    pair, prompt,
                    None if own is None else own[keep], length,
                    None if category is None else category[keep],
                    None if own_model is None else own_model[keep], style, style_names, sides)


def _style(rows: pd.DataFrame, flip: np.ndarray, keep: np.ndarray, pair: np.ndarray
           ) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The markdown elements' normalised differences, X's count against Y's, of the kept rows:
    only elements in which X and Y differ on :data:`MIN_STYLE_PAIRS` pairs or more (a lean read
    off a handful of pairs is noise, and one pair separates the fit)."""
    columns, names = [], []
    for name in MARKDOWN:
        a, b = f"style_{name}_a", f"style_{name}_b"
        if a not in rows.columns or b not in rows.columns:
            continue
        fa, fb = rows[a].to_numpy(dtype=float), rows[b].to_numpy(dtype=float)
        d = np.where(flip, -1.0, 1.0) * normalised_difference(fa, fb)
        d = d[keep]
        if len(np.unique(pair[d != 0])) >= MIN_STYLE_PAIRS:
            columns.append(d)
            names.append(name)
    return (np.column_stack(columns), tuple(names)) if columns else (None, ())


def _categories(ref_rows: pd.DataFrame, judge_rows: pd.DataFrame) -> pd.Index | None:
    """The categories strengths and slopes are read by: two or more, every row carrying one,
    each with :data:`MIN_CATEGORY_ROWS` decisive reference votes; else None (pooled)."""
    if "category" not in ref_rows.columns or "category" not in judge_rows.columns:
        return None
    if ref_rows["category"].isna().any() or judge_rows["category"].isna().any():
        return None
    counts = ref_rows["category"].value_counts()
    if len(counts) < 2 or counts.min() < MIN_CATEGORY_ROWS:
        return None
    return pd.Index(sorted(counts.index))


@dataclass(frozen=True)
class _Coding:
    """One coding of models, pairs and prompts shared by a reference and every judge held against it."""

    models: pd.Index
    pairs: pd.Index
    prompts: pd.Index | None
    categories: pd.Index | None
    per_pair: bool

    def code(self, rows: pd.DataFrame, family: str | None = None, model: str | None = None) -> Verdicts:
        return _coded(rows, self.models, self.pairs, self.prompts, self.per_pair, family, self.categories, model)


@dataclass(frozen=True)
class _Fitted:
    """A judge's fit and what its contrast with the other judges needs."""

    key: tuple
    family: str
    coding: _Coding
    ref: Verdicts
    reference_fit: tuple | None
    judge: Verdicts
    term: SelfTerm | None  # None: the judge's own term is not identified, its leans for others' families may be


def _judge_fit(spec: JudgeRows, n_judges: int, cache: dict, cluster: str, universe: pd.Index,
               prompt_universe: pd.Index) -> tuple[ControlledSelfPreference, _Fitted | None]:
    comparable = None  # its verdicts, coded: other judges' terms are read against its lean for their family

    def null(note: str, n_rows: int = 0, n_self: int = 0):
        result = ControlledSelfPreference(None, None, None, n_rows, n_judges, n_self, note, cluster=cluster)
        return result, comparable

    if not spec.family:
        return null("judge family unknown")
    ref_rows = spec.reference_rows[spec.reference_rows["decisive"].to_numpy(dtype=bool)]
    x, y = _canonical_models(ref_rows)
    models = pd.Index(sorted(set(x) | set(y)))
    both = pd.concat([ref_rows, spec.rows])
    prompts = prompt_universe if "prompt" in both and both["prompt"].notna().all() else None
    if prompts is None:
        cluster = "pair"
    categories = _categories(ref_rows, spec.rows)
    key = (id(spec.reference_rows), spec.per_pair, None if categories is None else tuple(categories),
           prompts is not None)
    coding = _Coding(models, universe, prompts, categories, spec.per_pair)
    model = spec.model if spec.model in models else None
    ref = coding.code(ref_rows)
    judge = coding.code(spec.rows, spec.family, model)
    if len(models) >= 2:
        comparable = _Fitted(key, spec.family, coding, ref, None, judge, None)
    n_self = int((judge.own != 0).sum())
    self_pairs = len(np.unique(judge.pair[judge.own != 0]))
    if len(models) < 2:
        return null("the reference's decisive votes give no Bradley-Terry strengths for these models", len(judge.x))
    if n_self == 0:
        return null(f"no pair with exactly one {spec.family} response has a decisive verdict of the judge and "
                    "reference strengths for both models", len(judge.x))
    if n_self < MIN_ROWS or self_pairs < MIN_PAIRS:
        return null(f"too few rows with exactly one {spec.family} response ({n_self} rows on {self_pairs} pairs)",
                    len(judge.x), n_self)
    n_categories = 1 if categories is None else len(categories)
    if key not in cache:
        cache[key] = fit_reference(ref, len(models), n_categories)
    fit = fit_self_term(ref, judge, len(models), cache[key], n_categories=n_categories)
    if fit == "collinear":
        return null(f"not identified: the quality gap does not vary apart from the {spec.family} responses "
                    "(it needs pairs of that family against opponents of different strength, or pairs without it)",
                    len(judge.x), n_self)
    if isinstance(fit, str):
        return null(fit, len(judge.x), n_self)
    by_prompt = cluster == "prompt" and fit.cov_by_prompt is not None

    def term(name: str, fitted: SelfTerm = fit):
        if name not in fitted.columns:
            return None, None
        k = fitted.at(name)
        return float(fitted.theta[k]), fitted.interval(k, by_prompt=by_prompt)

    i = fit.at("self")
    se = float(np.sqrt((fit.cov_by_prompt if by_prompt else fit.cov)[i, i]))
    df = fit.df_by_prompt if by_prompt else fit.df
    split = {}
    siblings = judge.own - judge.own_model if judge.own_model is not None else None
    if siblings is not None and np.any(judge.own_model != 0) and np.sum(siblings != 0) >= MIN_ROWS:
        apart = fit_self_term(ref, judge, len(models), cache[key], split=True, n_categories=n_categories)
        if isinstance(apart, SelfTerm):
            (split["own_model"], split["own_model_ci"]), (split["siblings"], split["siblings_ci"]) = (
                term("own_model", apart), term("siblings", apart))
    slope, slope_ci = term("slope")
    position, position_ci = term("position")
    length, length_ci = term("length")
    lean, lean_ci = float(fit.theta[i]), fit.interval(i, by_prompt=by_prompt)
    check = None
    if categories is None and prompts is not None:
        check = slope_check(fit, judge)
    result = ControlledSelfPreference(
        coef=lean, ci=lean_ci, p=t_pvalue(lean, se, df),
        n_rows=len(judge.x), n_judges=n_judges, n_self_rows=n_self,
        ci_by_prompt=fit.interval(i, by_prompt=True) if fit.cov_by_prompt is not None else None,
        slope=slope, slope_ci=slope_ci, position=position, position_ci=position_ci,
        n_pairs=len(np.unique(judge.pair)), cluster="prompt" if by_prompt else "pair",
        length=length, length_ci=length_ci, style=judge.style_names,
        categories=() if categories is None else tuple(map(str, categories)),
        lean=lean, lean_ci=lean_ci, n_clusters=df + 1, detectable=_detectable(se, df),
        slope_check_p=check, **split,
    )
    return result, _Fitted(key, spec.family, coding, ref, cache[key], judge, fit)


def _detectable(se: float, df: int) -> float:
    """The smallest |term| a 5% two-sided t test finds 80% of the time at this standard error."""
    return float((t_quantile(1 - ALPHA / 2, df) + t_quantile(0.80, df)) * se)


def slope_check(fit: SelfTerm, judge: Verdicts) -> float | None:
    """Is the judge equally sharp on every prompt? The self term assumes it when no category is
    recorded (a family strong on some topics whose judge is sharp there reads as self-preference).
    The slope's score of each pair, ``u = sum gap (won - p)`` over its rows, has mean 0 on every
    prompt under one slope; a judge sharper on some prompts than others makes the pairs of a
    prompt share a sign. The statistic is the within-prompt cross-products of the pairs' scores,
    ``T = sum_prompts sum_(pairs p != q) u_p u_q``, standardised by its variance when pairs are
    independent (a score test for a prompt-level random slope, in the manner of Breslow &
    Clayton's 1993 variance-component score test; a pair's two orders stay one unit). One-sided
    p (heterogeneity makes T positive); None when no prompt carries two pairs."""
    G, Z, slope_of = fit.design
    prob = 1.0 / (1.0 + np.exp(-(Z @ fit.theta)))
    pair_code, pair_at = np.unique(judge.pair, return_inverse=True)
    u = np.bincount(pair_at, Z[np.arange(len(Z)), slope_of] * (judge.won - prob), len(pair_code))
    prompt_of = np.zeros(len(pair_code), dtype=np.int64)
    prompt_of[pair_at] = judge.prompt
    _, prompt_at = np.unique(prompt_of, return_inverse=True)
    n = np.bincount(prompt_at)
    if n.max(initial=0) < 2:
        return None
    s, q, q4 = (np.bincount(prompt_at, u ** k) for k in (1, 2, 4))
    t = float((s ** 2 - q).sum())
    var = float(2 * (q ** 2 - q4).sum())
    return float(normal_sf(t / np.sqrt(var))) if var > 0 else None


def _contrast(name: str, own: _Fitted, fitted: Mapping[str, _Fitted], by_prompt: bool) -> dict | None:
    """``name``'s own-family lean against the mean lean of the judges of other families for that
    same family (each fitted with the same model, its self column put on ``name``'s family), on
    one stacked covariance; None without such judges."""
    others, fits = [], [(own.term, own.judge.won, own.judge.prompt if by_prompt else own.judge.pair)]
    for other, f in fitted.items():
        if other == name or f.key != own.key or f.family == own.family:
            continue
        coded = f.judge.toward(own.family)
        if not np.any(coded.own != 0):
            continue
        term = fit_self_term(own.ref, coded, len(own.coding.models), own.reference_fit, covariance=False,
                             n_categories=1 if own.coding.categories is None else len(own.coding.categories))
        if isinstance(term, SelfTerm):
            others.append(other)
            fits.append((term, coded.won, coded.prompt if by_prompt else coded.pair))
    if not others:
        return None
    ref_groups = own.ref.prompt if by_prompt else own.ref.pair
    cov = stacked_cov(own.reference_fit[0], own.ref.won, own.reference_fit[1], ref_groups, fits)
    weights = np.concatenate([np.eye(len(f.theta))[f.at("self")] * (1.0 if k == 0 else -1.0 / len(others))
                              for k, (f, _, _) in enumerate(fits)])
    shared_w = np.r_[np.zeros(len(own.term.theta)), -weights[len(own.term.theta):]]
    theta = np.concatenate([f.theta for f, _, _ in fits])
    df = _n_clusters(ref_groups, *(g for _, _, g in fits)) - 1
    coef, se = float(weights @ theta), float(np.sqrt(weights @ cov @ weights))
    shared, shared_se = float(shared_w @ theta), float(np.sqrt(shared_w @ cov @ shared_w))
    return {"coef": coef, "ci": t_interval(coef, se, df), "p": t_pvalue(coef, se, df), "se": se, "df": df,
            "shared": shared, "shared_ci": t_interval(shared, shared_se, df), "compared_with": tuple(others)}


def controlled_self_preference(judges: Mapping[str, JudgeRows], cluster: str = "pair"
                               ) -> dict[str, ControlledSelfPreference]:
    """Every judge's self term from its own logit (module docstring); intervals clustered by
    ``cluster`` (``"prompt"`` or ``"pair"``; by pair when the rows carry no prompt), with t
    quantiles on the clusters less one.

    Where judges of other families are held against the same reference, a judge's term is its
    own-family lean less theirs for the same family (``lean`` and ``shared`` beside it): a
    wording every LLM judge rewards and people do not is a shared taste, not self-preference.
    ``p_holm`` adjusts ``p`` for testing every judge at once; ``flagged`` reads it at 5%.
    Judges whose term the data cannot identify (family unknown, no response of its family,
    too few rows, a gap collinear with the self term, a separated fit) get ``None``
    numbers and a note saying why, never a number.
    """
    cache: dict = {}
    frames = [frame for spec in judges.values() for frame in (spec.rows, spec.reference_rows)]

    def everything(column: str) -> pd.Index:
        values = [f[column].dropna().to_numpy(dtype=object) for f in frames if column in f.columns]
        return pd.Index(pd.unique(np.concatenate(values or [np.empty(0, dtype=object)])))

    universe, prompt_universe = everything("pair_id"), everything("prompt")
    out, fitted = {}, {}
    for name, spec in judges.items():
        out[name], f = _judge_fit(spec, len(judges), cache, cluster, universe, prompt_universe)
        if f is not None:
            fitted[name] = f
    for name, f in fitted.items():
        c = out[name]
        if f.term is None:
            continue
        by_prompt = c.cluster == "prompt"
        got = _contrast(name, f, fitted, by_prompt)
        caveats = []
        if got is None:
            caveats.append("no judge of another family was held against the same reference: a taste every LLM "
                           "judge shares cannot be told from self-preference here")
        else:
            by = None
            if f.term.cov_by_prompt is not None and not by_prompt:
                by = _contrast(name, f, fitted, True)
            c = replace(c, coef=got["coef"], ci=got["ci"], p=got["p"], shared=got["shared"],
                        shared_ci=got["shared_ci"], compared_with=got["compared_with"], n_clusters=got["df"] + 1,
                        ci_by_prompt=got["ci"] if by_prompt else (by["ci"] if by else None),
                        detectable=_detectable(got["se"], got["df"]))
        if c.n_clusters < MIN_CLUSTERS_TO_TELL:
            caveats.append(f"only {c.n_clusters} {c.cluster}s: too few to tell; a term would have to be about "
                           f"{c.detectable:.2f} log-odds to be found 4 times in 5")
        if c.slope_check_p is not None:
            caveats.append("no category recorded: the term assumes the judge equally sharp on every prompt"
                           + (f"; the per-prompt slope check rejects that (p = {c.slope_check_p:.2g}): its sharpness "
                              "varies by prompt, which can read as self-preference where its family is strong; "
                              "record a category" if c.slope_check_p < ALPHA else
                              f" (per-prompt slope check p = {c.slope_check_p:.2g}, no sign against it)"))
        out[name] = replace(c, caveats=tuple(caveats))
    adjusted = holm({name: c.p for name, c in out.items()})
    return {name: replace(c, p_holm=adjusted[name], flagged=adjusted[name] is not None and adjusted[name] < ALPHA)
            for name, c in out.items()}
