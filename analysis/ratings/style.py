"""Style control for pairwise ratings.

Style-controlled Bradley-Terry follows Chatbot Arena's style control (Li et al. 2024,
"Does Style Matter? Disentangling style and substance in Chatbot Arena"; FastChat's
``construct_style_matrices``): a logistic regression of the outcome on the model indicators
(+1 for A, -1 for B) plus, for each style element, the normalised difference
``(f_a - f_b) / (f_a + f_b + 1)`` standardised over the battles. The elements are response
length in tokens and counts of markdown headers, list items and bold spans, counted on the
text outside fenced code blocks. FastChat counts tokens with tiktoken, whose vocabulary
cannot be fetched offline; here a token is a word or a punctuation mark (``\\w+|[^\\w\\s]``),
so length coefficients are comparable across our runs, not to the digit with FastChat's.
Features are computed once per distinct text (:func:`style_features`; responses repeat
across judges and presentation orders), tokens for all of them in one vectorised pass (the
tests hold it to a plain one-text count, their oracle).
:func:`add_style_features` stores the counts with each battle (as FastChat keeps them in
``conv_metadata``), so a frame counted once can be split by judge and every part rated.

AlpacaEval's length-controlled win rate, the other length correction, is in :mod:`.winrate`.

Style control matches FastChat's ``fit_contextual_bt`` by default: every parameter carries
its ridge (``reg`` = 0.5, :data:`STYLE_REG`), which keeps a style element seen in a few pairs
from taking a large coefficient; ``reg=0`` gives the plain MLE. A tie counts as y = 1/2 (a
quasi-likelihood), so standard errors are sandwich ones, clustered by ``pair_id`` where
battles carry one (votes on one pair are not independent). A style element whose responses
differ in fewer than :data:`MIN_STYLE_PAIRS` pairs is flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats import FitError, cluster_codes, fit_logit

from .threads import one_blas_thread

__all__ = [
    "MIN_STYLE_PAIRS",
    "STYLE_REG",
    "STYLE_COLUMNS",
    "STYLE_FEATURES",
    "StyleFit",
    "add_style_features",
    "fit_style_bt",
    "frame_covariates",
    "normalised_difference",
    "style_features",
    "style_support",
]

STYLE_FEATURES = ("length", "headers", "lists", "bold")
# Stored counts of response A, then of response B (:func:`add_style_features`).
STYLE_COLUMNS = tuple(f"style_{name}_{side}" for side in ("a", "b") for name in STYLE_FEATURES)

_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*(?:\d+\.|[-*+])\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_Y = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}


# Characters per batch of the vectorised token count (bounds its memory to ~50 MB).
_BATCH_CHARS = 1 << 22
_SPACE, _WORD, _OTHER = 0, 1, 2


def _char_class(ch: str) -> int:
    # The regex module's own definitions: \w is str.isalnum() or "_", \s is str.isspace().
    return _WORD if ch.isalnum() or ch == "_" else _SPACE if ch.isspace() else _OTHER


_ASCII_CLASSES = np.array([_char_class(chr(c)) for c in range(128)], dtype=np.uint8)


def _token_counts(texts: list[str]) -> np.ndarray:
    """Tokens (``\\w+|[^\\w\\s]`` matches) of every text, computed on character classes with numpy.

    ``\\w+|[^\\w\\s]`` finds one token per run of word characters and one per character that
    is neither word nor space, so the count is (word characters not preceded by one) +
    (other characters). Texts are joined with newlines (space) so no run crosses two texts.
    """
    out = np.zeros(len(texts), dtype=np.int64)
    begin = 0
    while begin < len(texts):
        end, size = begin, 0
        while end < len(texts) and (end == begin or size + len(texts[end]) < _BATCH_CHARS):
            size += len(texts[end]) + 1
            end += 1
        out[begin:end] = _token_counts_batch(texts[begin:end])
        begin = end
    return out


def _token_counts_batch(texts: list[str]) -> np.ndarray:
    joined = "\n".join(texts) + "\n"  # every text then owns at least its separator
    if joined.isascii():
        classes = _ASCII_CLASSES[np.frombuffer(joined.encode("ascii"), dtype=np.uint8)]
    else:
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        ascii_ = points < 128
        classes = _ASCII_CLASSES[np.where(ascii_, points, 0)]
        distinct, inverse = np.unique(points[~ascii_], return_inverse=True)
        classes[~ascii_] = np.array([_char_class(chr(c)) for c in distinct], dtype=np.uint8)[inverse]
    word = classes == _WORD
    tokens = classes == _OTHER
    tokens[0] |= word[0]
    tokens[1:] |= word[1:] & ~word[:-1]
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum([len(t) + 1 for t in texts[:-1]], out=starts[1:])
    return np.add.reduceat(tokens, starts, dtype=np.int64)


def _markdown_counts(text: str) -> tuple[int, int, int]:
    """Headers, list items and bold spans as the one-text count finds them; a pattern is
    skipped where a character it needs is absent, and an anchored one tried only at the
    start of a one-line text (``^`` matches after ``\\n`` only)."""
    prose = _CODE_BLOCK.sub("", text) if "```" in text else text
    one_line = "\n" not in prose
    if "#" not in prose:
        headers = 0
    else:
        headers = int(_HEADER.match(prose) is not None) if one_line else len(_HEADER.findall(prose))
    lists = int(_LIST.match(prose) is not None) if one_line else len(_LIST.findall(prose))
    bold = len(_BOLD.findall(prose)) if "**" in prose or "__" in prose else 0
    return headers, lists, bold


def _as_texts(texts) -> pd.Series:
    """The texts as a Series of str (``str(t)`` of each value)."""
    if isinstance(texts, pd.Series) and isinstance(texts.dtype, pd.StringDtype) and not texts.hasnans:
        return texts
    if (isinstance(texts, pd.Series) and isinstance(texts.dtype, pd.CategoricalDtype)
            and isinstance(texts.cat.categories.dtype, pd.StringDtype) and not texts.hasnans):
        return texts  # a record table's responses: factorised on their codes
    return pd.Series([str(t) for t in texts], dtype=object)


def style_features(texts) -> np.ndarray:
    """(tokens, headers, list items, bold spans) of every text (``str`` of each value), as floats of shape (n, 4).

    Each distinct text is counted once: responses repeat across judges and orders. An index
    of distinct texts (a record table's, :func:`pairlab.record_table.text_codes`) is read off
    its Arrow buffer where it has one.
    """
    if isinstance(texts, pd.Index) and texts.is_unique:
        return _category_counts(texts)
    return _features(_as_texts(texts))


def normalised_difference(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """``(f_a - f_b) / (f_a + f_b + 1)``: a style element's difference between two responses as
    FastChat's style control takes it (bounded in (-1, 1), 0 when both have none)."""
    return (fa - fb) / (fa + fb + 1.0)


def _features(texts: pd.Series) -> np.ndarray:
    codes, distinct = pd.factorize(texts)
    return _counts(distinct.tolist())[codes]


def _counts(distinct: list[str]) -> np.ndarray:
    """(tokens, headers, list items, bold spans) of each text, as a (texts x 4) float array."""
    counts = np.empty((len(distinct), len(STYLE_FEATURES)))
    counts[:, 0] = _token_counts(distinct)
    counts[:, 1:] = [_markdown_counts(t) for t in distinct] if distinct else np.empty((0, 3))
    return counts


def _pair_features(response_a, response_b) -> tuple[np.ndarray, np.ndarray]:
    texts_a, texts_b = _as_texts(response_a), _as_texts(response_b)
    if _shared_categories(texts_a, texts_b):
        # A record table's responses share one set of texts: the codes say which are the same
        # (concatenating the two categoricals hashed every text again).
        codes = np.concatenate([texts_a.cat.codes.to_numpy(), texts_b.cat.codes.to_numpy()])
        texts = texts_a.cat.categories
        seen = np.zeros(len(texts), dtype=bool)
        seen[codes] = True
        if 2 * seen.sum() >= len(texts):  # most texts are used: counting the rest costs less than taking the used ones
            both = _category_counts(texts)[codes]
        else:
            used = np.flatnonzero(seen)
            at = np.zeros(len(texts), dtype=np.int64)
            at[used] = np.arange(len(used))
            both = _category_counts(texts[used])[at[codes]]
    else:
        # One pass over both columns: a pair shown in both orders has each text on both sides.
        both = _features(pd.concat([texts_a, texts_b], ignore_index=True))
    return both[: len(texts_a)], both[len(texts_a) :]


def _category_counts(texts: pd.Index) -> np.ndarray:
    """:func:`_counts` of an index of texts, read off its Arrow buffer where it has one."""
    import pyarrow as pa

    if not (isinstance(texts.dtype, pd.StringDtype) and texts.dtype.storage == "pyarrow") or texts.hasnans:
        return _counts(texts.tolist())
    array = pa.array(texts.array)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    return _buffer_counts(array)


# Each byte's code for :func:`_buffer_counts`: its character class as a bit (word, other; an
# ASCII space or any byte of a non-ASCII character: neither) and, as bit 2, whether a line
# break or markdown starts with it. A text holding no byte with bit 2 is one line with no
# header, bold span or code block, so only its start can be a list item. In UTF-8 none of
# these characters occurs inside another character's bytes. One translation (bytes.translate,
# twice as fast as a numpy gather) serves all three.
_WORD_BIT, _OTHER_BIT, _MARKUP_BIT = 1, 2, 4
_BYTE_CODES = bytes((_WORD_BIT if c == _WORD else _OTHER_BIT if c == _OTHER else 0)
                    | (_MARKUP_BIT if chr(b) in "\n#*_`" else 0)
                    for b, c in enumerate(_ASCII_CLASSES.tolist())) + bytes(128)
# First bytes of a text the list-item pattern cannot match at: ASCII, neither space (Python's
# \s: str.isspace()), digit nor a bullet. A text starting with ASCII digits can match only
# where a dot or a non-ASCII byte (a digit of another script) follows them.
_NO_LIST_START = np.array([b < 128 and not chr(b).isspace() and not chr(b).isdigit() and chr(b) not in "-*+"
                           for b in range(256)])
_AFTER_DIGIT = np.array([b >= 128 or chr(b) == "." for b in range(256)])
_DIGITS = 8  # bytes of a text's leading digits looked at; longer runs go to the pattern


def _buffer_counts(array) -> np.ndarray:
    """:func:`_counts` of an Arrow string array without nulls, read from its UTF-8 bytes: tokens
    counted on them when every text is ASCII (a byte is then a character), markdown looked
    for only in texts holding a markup byte, and the others' one possible list item only in
    those whose first bytes could start one."""
    import pyarrow as pa

    n = len(array)
    if n == 0:
        return np.zeros((0, len(STYLE_FEATURES)))
    width = np.int64 if array.type == "large_string" else np.int32
    offsets = np.frombuffer(array.buffers()[1], dtype=width)[array.offset: array.offset + n + 1].astype(np.int64)
    buffer = array.buffers()[2]
    data = memoryview(buffer) if buffer is not None else memoryview(b"")
    tokens, markup = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    ascii_ = True
    # Batches of about _BATCH_CHARS bytes bound the per-byte arrays' memory; the arrays are
    # made once, for the longest batch, and reused (fresh ones cost their pages every batch).
    bounds = [0]
    while bounds[-1] < n:
        end = int(np.searchsorted(offsets, offsets[bounds[-1]] + _BATCH_CHARS, side="right")) - 1
        bounds.append(min(n, max(end, bounds[-1] + 1)))
    longest = int(np.diff(offsets[bounds]).max()) if n else 0
    flags, word_bytes, starts_token = (np.empty(longest, dtype=np.uint8) for _ in range(3))
    for begin, end in zip(bounds, bounds[1:]):
        chunk = data[offsets[begin]: offsets[end]].tobytes()  # one batch's bytes copied, not the whole buffer
        starts = offsets[begin:end] - offsets[begin]
        filled = np.flatnonzero(offsets[begin + 1: end + 1] > offsets[begin:end])
        size = len(chunk)
        if len(filled):
            codes = np.frombuffer(chunk.translate(_BYTE_CODES), dtype=np.uint8)
            mark = np.greater_equal(codes, _MARKUP_BIT, out=flags[:size].view(bool))
            markup[begin + filled] = np.logical_or.reduceat(mark, starts[filled])
            ascii_ = ascii_ and chunk.isascii()
        if ascii_ and len(filled):
            # As _token_counts_batch: a token per run of word characters and per other character.
            word = np.bitwise_and(codes, _WORD_BIT, out=word_bytes[:size]).view(bool)  # bytes 0 or 1
            token = starts_token[:size].view(bool)
            token[0] = word[0]
            np.greater(word[1:], word[:-1], out=token[1:])  # a word byte after a non-word one
            other = np.bitwise_and(codes, _OTHER_BIT, out=flags[:size])
            np.logical_or(token, other, out=token)  # an other character
            token[starts[filled]] |= word[starts[filled]]  # no run crosses two texts
            # Summed as bytes into 32 bits (a batch is far shorter than 2**32): half the time of int64.
            tokens[begin + filled] = np.add.reduceat(token.view(np.uint8), starts[filled], dtype=np.uint32)
    counts = np.zeros((n, len(STYLE_FEATURES)))
    counts[:, 0] = tokens if ascii_ else _token_counts(array.to_pylist())
    # Texts without markup: their first bytes say whether a list item can start them.
    plain = np.flatnonzero(~markup & (offsets[1:] > offsets[:-1]))
    raw = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    possible = ~_NO_LIST_START[raw[offsets[plain]]]
    numbered = plain[raw[offsets[plain]] - ord("0") < 10]
    if len(numbered):
        # A text starting with ASCII digits: the byte after them (within the first _DIGITS).
        at = offsets[numbered][:, None] + np.arange(_DIGITS)
        inside = at < offsets[numbered + 1][:, None]
        window = raw[np.minimum(at, offsets[numbered + 1][:, None] - 1)]
        digits = inside & (window - ord("0") < 10)
        stop = digits.argmin(axis=1)  # the first byte that is not a digit (0 where all are)
        rows = np.arange(len(numbered))
        after = np.where(inside[rows, stop], _AFTER_DIGIT[window[rows, stop]], False)
        possible[raw[offsets[plain]] - ord("0") < 10] = digits.all(axis=1) | after
    looked_at = np.r_[plain[possible], np.flatnonzero(markup)].astype(np.int64)
    texts = array.take(pa.array(looked_at)).to_pylist()
    match = _LIST.match
    k_plain = int(possible.sum())
    counts[plain[possible], 2] = [match(t) is not None for t in texts[:k_plain]]
    for k, text in zip(looked_at[k_plain:], texts[k_plain:]):
        counts[k, 1:] = _markdown_counts(text)
    return counts


def _shared_categories(a: pd.Series, b: pd.Series) -> bool:
    if not (isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype)):
        return False
    return a.cat.categories is b.cat.categories or a.cat.categories.equals(b.cat.categories)


def add_style_features(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the style counts of ``response_a`` and ``response_b`` added as
    the columns :data:`STYLE_COLUMNS` (``style_length_a`` ... ``style_bold_b``).

    ``bt-style`` and :func:`fit_style_bt` use these columns where the frame has them
    instead of counting again, so they must describe the frame's own responses.
    """
    fa, fb = _pair_features(frame["response_a"], frame["response_b"])
    counts = pd.DataFrame(np.hstack([fa, fb]), columns=list(STYLE_COLUMNS), index=frame.index)
    # Joined as one block (eight columns assigned one by one cost three times as much).
    return pd.concat([frame.drop(columns=[c for c in STYLE_COLUMNS if c in frame.columns]), counts], axis=1)


def _frame_counts(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Style counts of response A and of response B, stored ones where the frame has them."""
    if set(STYLE_COLUMNS) <= set(frame.columns):
        counts = frame[list(STYLE_COLUMNS)].to_numpy(dtype=float)
        k = len(STYLE_FEATURES)
        return counts[:, :k], counts[:, k:]
    return _pair_features(frame["response_a"], frame["response_b"])


def frame_covariates(frame: pd.DataFrame) -> pd.DataFrame:
    """Standardised normalised differences of a battle frame's responses, one column per style
    element with variation, from its stored counts where it has them.

    An element that is the same in every battle (e.g. no markdown anywhere) carries no
    information and would make the regression singular, so it is left out.
    """
    return _standardised(*_frame_counts(frame))


def _standardised(fa: np.ndarray, fb: np.ndarray) -> pd.DataFrame:
    # Row-major whatever the inputs' layout: the column means and SDs then sum in one order.
    ratio = np.ascontiguousarray(normalised_difference(fa, fb))
    sd = ratio.std(axis=0)
    keep = sd > 1e-12
    standardised = (ratio[:, keep] - ratio[:, keep].mean(axis=0)) / sd[keep]
    return pd.DataFrame(standardised, columns=[n for n, k in zip(STYLE_FEATURES, keep) if k])


def _outcomes(winner) -> np.ndarray:
    # Looked up once per distinct verdict: iterating an Arrow column costs a microsecond a row.
    codes, said = pd.factorize(pd.Series(winner, copy=False))
    values = [_Y.get(w) for w in said]
    if (codes < 0).any() or None in values:
        try:  # the first unknown value in row order, named
            return np.array([_Y[w] for w in winner], dtype=float)
        except KeyError as exc:
            raise ValueError(f"unknown winner value {exc.args[0]!r}") from None
    return np.array(values, dtype=float)[codes]


# FastChat's fit_contextual_bt: loss = -loglik + (reg / 2) |params|^2 with reg = 0.5, its
# ratings on a log10 scale (logit = ln 10 * (r_a - r_b)) and style terms on the logit scale.
STYLE_REG = 0.5
# A style element whose two responses differ in fewer pairs than this is flagged: its
# coefficient rests on a handful of pairs, whatever its interval says.
MIN_STYLE_PAIRS = 20


@dataclass(frozen=True)
class StyleFit:
    """Style-controlled BT: centred log-strengths and style coefficients (log-odds per SD).

    ``covariance`` is the sandwich covariance of ``np.r_[theta, coef]`` (the ridge's
    penalised information as bread), clustered by ``groups`` when the fit had them.
    ``reg`` is the ridge weight in FastChat's units (0 = plain maximum likelihood).
    """

    theta: pd.Series
    coef: pd.Series
    covariance: np.ndarray
    reg: float = STYLE_REG


def _indicators(frame: pd.DataFrame, models: pd.Index) -> np.ndarray:
    n, m = len(frame), len(models)
    out = np.zeros((n, m))
    rows = np.arange(n)
    for column, sign in (("model_a", 1.0), ("model_b", -1.0)):
        codes, names = pd.factorize(frame[column])  # each distinct name looked up once
        out[rows, np.append(models.get_indexer(names), -1)[codes]] = sign
    return out


def _independent(frame: pd.DataFrame, models: pd.Index, covariates: pd.DataFrame) -> pd.DataFrame:
    """Drop style columns that are linear combinations of the models and earlier columns.

    E.g. when every answer with a header also has exactly one bold span, their effects
    cannot be told apart and the unpenalised regression would be singular; the first one
    is kept. (The ridge identifies them, so only ``reg=0`` needs this.)
    """
    kept: list[str] = []
    indicators = _indicators(frame, models)[:, 1:]  # one model is the reference: full rank
    for name in covariates.columns:
        design = np.hstack([indicators, covariates[kept + [name]].to_numpy()])
        if np.linalg.matrix_rank(design) == design.shape[1]:
            kept.append(name)
    return covariates[kept]


def fit_style_bt(
    frame: pd.DataFrame,
    covariates: pd.DataFrame | None = None,
    *,
    reg: float = STYLE_REG,
    groups=None,
    models: pd.Index | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> StyleFit:
    """Fit style-controlled Bradley-Terry to battles with responses (see module docstring).

    The objective is FastChat's: the Bernoulli log-likelihood (a tie is y = 1/2) minus
    ``reg / 2`` times the squared norm of the parameters in its units (ratings on the
    log10 scale, style terms on the logit scale), maximised here by Newton's method.
    ``groups`` (one per battle, e.g. ``pair_id``) cluster the sandwich covariance.
    ``models`` fixes the rated models (a bootstrap resample may lack some: their rows are
    NaN). With ``reg=0`` collinear style columns are left out (:func:`_independent`), so
    ``coef`` may hold fewer elements than ``covariates``. Raises :class:`analysis.stats.FitError` when
    Newton does not converge, e.g. an unpenalised fit with a model that never lost.
    """
    if covariates is None:
        covariates = frame_covariates(frame)
    present = pd.Index(pd.concat([frame["model_a"], frame["model_b"]]).unique()).sort_values()
    models = present if models is None else models
    y = _outcomes(frame["winner"])
    with one_blas_thread():
        if reg == 0:
            covariates = _independent(frame, present, covariates)
        fit_models = present
        m, k = len(fit_models), covariates.shape[1]
        design = np.hstack([_indicators(frame, fit_models), covariates.to_numpy()])
        penalty = np.r_[np.full(m, reg / np.log(10.0) ** 2), np.full(k, reg)]
        # Without a ridge only differences of theta are identified: their mean is held at 0.
        try:
            fit = fit_logit(design, y, groups, penalty=penalty, centred=m if reg == 0 else 0, small_sample=False,
                            check_certainty=False, tol=tol, max_iter=max_iter)
        except FitError as exc:
            raise FitError(f"style-controlled Bradley-Terry fit failed: {exc}; use reg > 0") from None
        params, covariance = fit.params, fit.cov
    # Report on the requested model index: models absent from these battles are NaN.
    place = models.get_indexer(fit_models)
    q = len(models) + k
    full = np.full(q, np.nan)
    full[place] = params[:m]
    full[len(models) :] = params[m:]
    cov = np.full((q, q), np.nan)
    index = np.r_[place, len(models) + np.arange(k)]
    cov[np.ix_(index, index)] = covariance
    return StyleFit(
        theta=pd.Series(full[: len(models)], index=models),
        coef=pd.Series(full[len(models) :], index=covariates.columns, dtype=float),
        covariance=cov,
        reg=reg,
    )


def style_support(frame: pd.DataFrame, groups=None) -> pd.Series:
    """Per style element: the number of pairs (``groups``, else battles) whose two responses differ in it."""
    fa, fb = _frame_counts(frame)
    differ = fa != fb
    if groups is None:
        return pd.Series(differ.sum(axis=0), index=list(STYLE_FEATURES))
    codes = cluster_codes(groups)
    # Distinct pairs per element: one bincount over (pair, element) cells, not a sort per element.
    rows, elements = np.nonzero(differ)
    width = differ.shape[1]
    cells = np.bincount(codes[rows] * width + elements, minlength=(codes.max(initial=-1) + 1) * width)
    return pd.Series((cells.reshape(-1, width) > 0).sum(axis=0), index=list(STYLE_FEATURES))
