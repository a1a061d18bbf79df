"""Bootstrap draws over distinct kinds of units: the home of the counts-not-rows idea.

A bootstrap that resamples ``n`` units (prompts, items, pair clusters) with replacement and
sums what each contributes needs only how often each unit is drawn. Units whose
contributions are identical are interchangeable, so drawing ``n`` units is a draw from
Multinomial(n, shares of the distinct kinds) over the kinds, and the totals of a round are
those counts times each kind's contribution (Efron & Tibshirani 1993, ch. 6): exact in
distribution, O(kinds) per round instead of O(units), and no (rounds x units) matrix. Count
data have few kinds whatever the number of units (a prompt's verdicts on one model pair
take a handful of values), so the cost stops growing with the data.

A *paired* bootstrap (several statistics on the same draws: a judge's and the reference's
leaderboards, every debiasing variant against the others) must key its units on all the
statistics' contributions together (:func:`paired_totals`): kinds built per statistic would
give each its own draws and break the pairing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Kinds", "distinct_rows", "distinct_units", "kind_draws", "kind_table", "paired_totals"]

_DRAW_CELLS = 6_000_000  # a chunk of rounds holds at most this many drawn counts (about 50 MB)
# Drawn unit by unit, a chunk holds this many: its units are counted and its counts multiplied
# while they stay in the processor's cache (rounds of 5,000 prompts: 100 rounds a chunk took
# 0.12 s a thousand rounds, 600 a chunk 0.17 s). The draws are the same whatever the chunk.
_UNIT_DRAW_CELLS = 1_000_000
_POISSON_KINDS = 32  # from this many kinds on, rounds are drawn by Poisson splitting (faster, same distribution)
_UNITS_PER_KIND = 4  # at most this many units a kind on average: rounds draw the units themselves (faster still)


@dataclass(frozen=True)
class Kinds:
    """Units grouped into kinds of identical contributions.

    ``of_unit``: each unit's kind; ``first``: one unit of each kind (its first); ``counts``:
    how many units are of each kind. Kinds are numbered in the order their first unit comes.
    """

    of_unit: np.ndarray
    first: np.ndarray
    counts: np.ndarray

    @property
    def n_units(self) -> int:
        return len(self.of_unit)


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser (Steele, Lea & Flood 2014): spreads every input bit over the
    # output, so sums of mixed entries rarely collide (and collisions are checked anyway).
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(x, return_index=True, return_inverse=True, return_counts=True)`` of a 1-d
    integer array, by one stable argsort (numpy's radix/timsort path: a tenth of the time of
    the sort np.unique runs here); a run's first element in the sorted order is its first
    occurrence, as np.unique's index is."""
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    new = np.ones(len(x), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(len(x), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    return ordered[starts], order[starts], inverse, np.diff(np.r_[starts, len(x)])


def distinct_units(unit: np.ndarray, column: np.ndarray, value: np.ndarray, n_units: int) -> Kinds:
    """Group ``n_units`` units by what they contribute, given in long form: unit ``unit[e]``
    adds ``value[e]`` to column ``column[e]`` (repeated (unit, column) entries add up; a unit
    with no entry contributes nothing).

    Each unit's entries are hashed as a multiset (a sum of mixed entry hashes, so their order
    does not matter); units with equal hashes are then compared entry by entry, and a unit
    that differs from its hash group's first unit becomes a kind of its own. Grouping is
    therefore exact (only identical units share a kind) and costs one sort of the entries;
    unlike padding every unit's entries to the longest unit's, one unit with thousands of
    entries (a prompt every model pair answered) costs no more than its entries.
    """
    unit = np.asarray(unit, dtype=np.int64)
    column = np.asarray(column, dtype=np.int64)
    value = np.asarray(value, dtype=float)
    # Canonical entries: one per (unit, column), summed, zeros dropped, sorted by unit then column.
    width = int(column.max()) + 1 if len(column) else 1
    if n_units * width <= 4 * len(unit) + 65_536:
        # Few cells per entry: summed into every (unit, column) cell, the nonzero cells are
        # the entries, in key order, without a sort (the sums as bincount makes them either way).
        sums = np.bincount(unit * width + column, weights=value, minlength=n_units * width)
        keys = np.flatnonzero(sums)
        sums = sums[keys]
    else:
        keys, _, where, _ = _unique(unit * width + column)
        sums = np.bincount(where, weights=value, minlength=len(keys))
        keep = sums != 0
        keys, sums = keys[keep], sums[keep]
    e_unit, e_col = keys // width, keys % width
    sizes = np.bincount(e_unit, minlength=n_units)
    starts = np.cumsum(sizes) - sizes
    entry = _mix(_mix(e_col.astype(np.uint64)) + sums.view(np.uint64))
    hashes = np.zeros(n_units, dtype=np.uint64)
    filled = sizes > 0
    if len(entry):
        hashes[filled] = np.add.reduceat(entry, starts[filled])  # wraps modulo 2^64, as a hash should
    # The first unit with the same hash: hashes sorted unstably (numpy's vectorised sort, half
    # the time of a stable one on random keys), each run's smallest unit taken.
    order = np.argsort(hashes)
    ordered = hashes[order]
    new = np.ones(n_units, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts_of = np.flatnonzero(new)
    rep = np.empty(n_units, dtype=np.intp)
    rep[order] = np.repeat(np.minimum.reduceat(order, starts_of) if n_units else order, np.diff(np.r_[starts_of, n_units]))
    # Entry-by-entry check against the representative: equal sizes, then equal (column, value).
    same = sizes == sizes[rep]
    offset = np.arange(len(e_unit)) - starts[e_unit]
    other = starts[rep[e_unit]] + offset
    ok_entry = same[e_unit]
    safe = np.where(ok_entry, other, 0)
    ok_entry &= (e_col[safe] == e_col) & (sums[safe] == sums)
    same &= np.bincount(e_unit, weights=~ok_entry, minlength=n_units) == 0
    rep = np.where(same, rep, np.arange(n_units))  # a collision: the unit is a kind of its own
    # Kinds numbered by their first unit: counted, as the units' numbers need no sort.
    size = np.bincount(rep, minlength=n_units)
    first = np.flatnonzero(size)
    return Kinds(np.cumsum(size > 0)[rep] - 1, first, size[first])


def distinct_rows(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(sums, axis=0, return_counts=True)``: the distinct rows of a dense (units x
    columns) array, in the same (lexicographic) order, and how many units have each."""
    sums = np.asarray(sums, dtype=float)
    if not sums.size:
        return np.unique(sums, axis=0, return_counts=True)
    unit, column = np.nonzero(sums)
    kinds = distinct_units(unit, column, sums[unit, column], len(sums))
    rows = sums[kinds.first]
    order = np.lexsort(rows.T[::-1])
    return rows[order], kinds.counts[order]


def _poisson_multinomial(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Multinomial(n, counts / n), ``n = sum(counts)`` (integer counts), by
    Poisson splitting: independent Poisson(lam * share) counts, given their total s, are
    Multinomial(s, shares), so adding Multinomial(n - s, shares) (n - s units drawn one by
    one) makes them Multinomial(n, shares) exactly; a round whose total passes n is drawn
    again (lam sits two standard deviations below n: one round in 44). A Poisson variate
    costs half a binomial with a new p, which is what numpy's multinomial draws per kind."""
    counts = counts.astype(np.int64)
    n, k = int(counts.sum()), len(counts)
    lam = max(n - 2.0 * np.sqrt(n), 0.0) * (counts / n)
    out = rng.poisson(lam, size=(size, k))
    over = np.flatnonzero(out.sum(axis=1) > n)
    while len(over):
        out[over] = rng.poisson(lam, size=(len(over), k))
        over = over[out[over].sum(axis=1) > n]
    rest = n - out.sum(axis=1)
    unit = rng.integers(0, n, rest.sum())  # each unit drawn with share 1/n, then its kind:
    if n <= 4 * len(unit):  # looked up in a table of every unit's kind, or searched for (many units)
        kind = np.repeat(np.arange(k), counts)[unit]
    else:
        kind = np.searchsorted(np.cumsum(counts), unit, side="right")
    out += np.bincount(np.repeat(np.arange(size) * k, rest) + kind, minlength=size * k).reshape(size, k)
    return out


def _unit_draws(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Multinomial(n, counts / n) as the bootstrap defines them: ``n`` units
    drawn uniformly with replacement, each counted to its kind (the units of kind ``k`` are
    ``counts[k]`` consecutive numbers). A uniform integer costs a fraction of a Poisson
    variate, so where kinds are nearly as many as units (prompts whose counts all differ)
    this is the cheapest exact draw."""
    counts = counts.astype(np.int64)
    n, k = int(counts.sum()), len(counts)
    unit = rng.integers(0, n, size=(size, n))
    kind = unit if k == n else np.repeat(np.arange(k), counts)[unit]
    kind += (np.arange(size) * k)[:, None]
    return np.bincount(kind.ravel(), minlength=size * k).reshape(size, k)


def kind_draws(counts: np.ndarray, n_boot: int, rng: np.random.Generator, columns: int = 0) -> Iterator[np.ndarray]:
    """Bootstrap rounds as counts per kind: ``n_boot`` draws of Multinomial(sum(counts),
    counts / sum(counts)), yielded in chunks of rounds sized so that a chunk's draws and the
    ``columns`` totals made of them stay near 50 MB (8 MB drawn unit by unit). Under :data:`_POISSON_KINDS` kinds the
    chunks are the rows one ``rng.multinomial(..., size=n_boot)`` call would give, in order;
    with more, the same distribution drawn by Poisson splitting (:func:`_poisson_multinomial`),
    which many kinds make cheaper than the multinomial's sequential binomials, or, with at
    most :data:`_UNITS_PER_KIND` units a kind, by drawing the units (:func:`_unit_draws`)."""
    counts = np.asarray(counts, dtype=float)
    n = int(round(counts.sum()))
    shares = counts / counts.sum()
    cells = _DRAW_CELLS
    if len(counts) < _POISSON_KINDS or not np.array_equal(counts, np.round(counts)):
        draw, held = (lambda size: rng.multinomial(n, shares, size=size)), 0
    elif n <= _UNITS_PER_KIND * len(counts):
        draw, held = (lambda size: _unit_draws(counts, size, rng)), n  # a round holds its n drawn units too
        cells = _UNIT_DRAW_CELLS
    else:
        draw, held = (lambda size: _poisson_multinomial(counts, size, rng)), 0
    chunk = max(1, min(n_boot, cells // (len(counts) + columns + held)))
    for begin in range(0, n_boot, chunk):
        yield draw(min(chunk, n_boot - begin))


def _long_form(table) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    if isinstance(table, tuple):
        unit, column, value, n_columns = table
        return np.asarray(unit, dtype=np.int64), np.asarray(column, dtype=np.int64), np.asarray(value, float), n_columns
    dense = np.asarray(table, dtype=float)
    unit, column = np.nonzero(dense)
    return unit, column, dense[unit, column], dense.shape[1]


def kind_table(kinds: Kinds, table) -> np.ndarray:
    """``(kinds x columns)``: what one unit of each kind contributes to ``table`` (a dense
    ``(units x columns)`` array or the long form of :func:`paired_totals`); the units of a
    kind contribute alike, so its first unit's entries stand for all of them."""
    unit, column, value, n_columns = _long_form(table)
    is_first = np.zeros(kinds.n_units, dtype=bool)
    is_first[kinds.first] = True
    mine = is_first[unit]
    out = np.zeros((len(kinds.first), n_columns))
    np.add.at(out, (kinds.of_unit[unit[mine]], column[mine]), value[mine])
    return out


def paired_totals(tables: Sequence, n_units: int, n_boot: int, seed: int | np.random.Generator) -> list[np.ndarray]:
    """Each table's column totals in every round of one bootstrap over ``n_units`` units:
    ``(n_boot x columns)`` per table, every table summed over the *same* draws (a paired
    bootstrap; see the module docstring).

    A table is a dense ``(units x columns)`` array or, in long form, a tuple ``(unit, column,
    value, n_columns)``. Kinds are built on all tables jointly; a round costs O(kinds x
    columns), the grouping one pass over the entries.
    """
    forms = [_long_form(t) for t in tables]
    offsets = np.r_[0, np.cumsum([f[3] for f in forms])]
    joint = (np.concatenate([f[0] for f in forms]), np.concatenate([f[1] + off for f, off in zip(forms, offsets)]),
             np.concatenate([f[2] for f in forms]), int(offsets[-1]))
    kinds = distinct_units(*joint[:3], n_units)
    per_kind = kind_table(kinds, joint)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    totals = np.concatenate([draws @ per_kind for draws in kind_draws(kinds.counts, n_boot, rng, offsets[-1])])
    return [totals[:, lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])]
