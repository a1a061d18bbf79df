"""Bootstrap rounds over kinds nearly as many as their units (prompts whose counts all differ)
are drawn unit by unit: n uniform units counted to their kinds. Those draws are the
multinomial a unit-level bootstrap makes, round by round, seeded as every draw here."""

from __future__ import annotations

import numpy as np
import pytest

import analysis.stats.resample as resample
from analysis.stats.resample import _UNIT_DRAW_CELLS, _poisson_multinomial, _unit_draws, kind_draws


def _check_multinomial(draws: np.ndarray, counts: np.ndarray) -> None:
    """Multinomial(n, counts / n)'s moments, pooled over the kinds of one count (a kind of one
    unit alone is too noisy to read in a few thousand rounds)."""
    rounds, n = len(draws), int(counts.sum())
    assert draws.shape == (rounds, len(counts)) and draws.dtype.kind == "i"
    assert np.all(draws.sum(axis=1) == n) and draws.min() >= 0
    for count in np.unique(counts):
        mine = draws[:, counts == count]
        p = count / n
        assert abs(mine.mean() - n * p) < 4.5 * np.sqrt(n * p * (1 - p) / mine.size), count
        assert abs(mine.var(axis=0).mean() / (n * p * (1 - p)) - 1) < 0.08, count
    # The kinds' thirds move against each other by -n p_a p_b, the multinomial's covariance.
    thirds = np.array_split(np.arange(len(counts)), 3)
    a, b = (draws[:, t].sum(axis=1) for t in thirds[:2])
    p_a, p_b = (counts[t].sum() / n for t in thirds[:2])
    assert abs(np.cov(a, b)[0, 1] / (-n * p_a * p_b) - 1) < 0.15


@pytest.mark.parametrize("draw", [_unit_draws, _poisson_multinomial])
def test_both_many_kind_draws_are_multinomial(draw):
    """Both ways of drawing many kinds (units one by one; Poisson splitting) give Multinomial(n,
    counts / n): each round draws n units, with the multinomial's means, variances and
    covariances, for kinds of one unit and for a kind holding many."""
    rng = np.random.default_rng(5)
    for counts in (np.ones(300, dtype=np.int64), np.r_[np.ones(250, dtype=np.int64), 2, 3, 40, 60]):
        _check_multinomial(np.concatenate([draw(counts, 2_000, rng) for _ in range(10)]), counts)


def test_kinds_of_about_one_unit_are_drawn_unit_by_unit():
    """Where units are at most a few a kind, :func:`kind_draws` yields the unit draws (a kind's
    share follows its count: a draw that took the kinds as equally likely fails here), in chunks
    bounded by the units each round holds, and the same seed gives the same rounds."""
    counts = np.r_[np.ones(4_000, dtype=np.int64), np.full(500, 3), 600]
    n, rounds = int(counts.sum()), 3_000
    chunks = list(kind_draws(counts, rounds, np.random.default_rng(7), columns=10))
    assert max(len(c) for c in chunks) * (n + len(counts)) <= _UNIT_DRAW_CELLS and len(chunks) > 1
    draws = np.concatenate(chunks)
    rng = np.random.default_rng(7)
    assert np.array_equal(draws, np.concatenate([_unit_draws(counts, len(c), rng) for c in chunks]))
    _check_multinomial(draws, counts)
    again = np.concatenate(list(kind_draws(counts, rounds, np.random.default_rng(7), columns=10)))
    assert np.array_equal(draws, again)


@pytest.mark.parametrize("cells", [20_000, 333_333, 50_000_000])
def test_unit_draws_do_not_hang_on_the_chunk_size(monkeypatch, cells):
    """The chunk is sized for the processor's cache, never for the numbers: the same seed gives the
    same rounds in chunks of 3 rounds, of 64 or all at once."""
    counts = np.r_[np.ones(5_000, dtype=np.int64), np.full(40, 2)]
    rounds = 200
    before = np.concatenate(list(kind_draws(counts, rounds, np.random.default_rng(11))))
    monkeypatch.setattr(resample, "_UNIT_DRAW_CELLS", cells)
    chunks = list(kind_draws(counts, rounds, np.random.default_rng(11)))
    assert len(chunks) == -(-rounds // max(1, cells // (5_040 + 5_080)))  # kinds and units a round holds
    assert np.array_equal(np.concatenate(chunks), before)
