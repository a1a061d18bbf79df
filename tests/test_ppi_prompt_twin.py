"""The prompt-clustered PPI++ sandwich against its slow twin: every cluster's score vector
written out, summed prompt by prompt in a loop, and the outer products of the prompt sums
added one at a time (Liang & Zeger 1986), on a small synthetic case where prompts carry
several pairs, a design's rows come twice (with and without people's votes), bootstrap
rounds draw prompts 0, 1 or several times and the folds split the prompts. The fast path sums
every round's counts per (prompt, model pair) cell with sparse products; both must agree to
rounding."""

import numpy as np

from analysis.judging.worth import _design_rows, _people_on, _subsample
from analysis.ratings.ppi import (PPIData, _folds, _pieces, _Rounds, fit_ppi_per_model_rounds, fit_ppi_rounds,
                                  ppi_data)
from test_clustering_coverage import battles, prompts


def _case(seed: int = 3, n_prompts: int = 24) -> tuple[PPIData, np.ndarray, np.ndarray]:
    """A judge's design rows, five rounds' weights on them (the data as collected, a design of
    people on half their pairs, and three bootstrap rounds of that design drawing whole prompts)
    and each round's prompt draws."""
    rng = np.random.default_rng(seed)
    prompt, i, j, eta = prompts(rng, n_prompts)  # every pair of five models on each prompt
    n = len(eta)
    judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-1.5 * eta)), judge="J", judge_type="llm")
    people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                     judge_type="human")[rng.random(n) < 0.7]
    collected = ppi_data(people, judge, cluster="prompt")
    assert collected.group is not None and len(collected.pair) > collected.group.max() + 1  # prompts hold pairs
    data = _design_rows(collected)
    design = _subsample(collected, round(0.5 * collected.weight.sum()), rng)
    n_prompts = int(collected.group.max()) + 1
    draws = np.ones((5, n_prompts))
    draws[2:] = rng.poisson(1.0, (3, n_prompts))
    weights = np.array([_people_on(collected, collected.weight), design, design, design, design])
    weights *= draws[:, np.r_[collected.group, collected.group]]
    return data, weights, draws


def _twin_parts(data: PPIData, w: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One round's centred scores of people's part and the judge's part, one row per cluster,
    written out from the estimating equation (module docstring of analysis.ratings.ppi)."""
    m = data.n_models
    x = np.zeros((len(data.pair), m))
    x[np.arange(len(data.pair)), data.i[data.pair]] = 1.0
    x[np.arange(len(data.pair)), data.j[data.pair]] = -1.0
    n, big_n = w @ data.n_human, w @ data.n_judge
    pc = p[data.pair]
    r_human = (data.y_human - data.n_human * pc) / n
    r_judge = (data.yhat_judge - data.n_judge * pc) / big_n
    r_pred = (data.yhat_human - data.n_human * pc) / n
    # Each part's mean score, what its clusters are centred by.
    m_judge, m_human, m_pred = ((w * r)[:, None] * x for r in (r_judge, r_human, r_pred))
    m_judge, m_human, m_pred = m_judge.sum(axis=0), m_human.sum(axis=0), m_pred.sum(axis=0)
    human = r_human[:, None] * x - (data.n_human / n)[:, None] * m_human[None]
    judge = ((r_judge - r_pred)[:, None] * x - (data.n_judge / big_n)[:, None] * m_judge[None]
             + (data.n_human / n)[:, None] * m_pred[None])
    return human, judge


def _twin_meat(data: PPIData, w: np.ndarray, draws: np.ndarray, left: np.ndarray, right: np.ndarray,
               prompts_kept: set | None = None) -> np.ndarray:
    """``sum_g (sum_{c in g} w_c left_c)(sum_{c in g} w_c right_c)^T / k_g`` prompt by prompt."""
    m = data.n_models
    out = np.zeros((m, m))
    for g in range(int(data.group.max()) + 1):
        if prompts_kept is not None and g not in prompts_kept:
            continue
        rows = np.flatnonzero(data.group == g)
        a = sum((w[c] * left[c] for c in rows), np.zeros(m))
        b = sum((w[c] * right[c] for c in rows), np.zeros(m))
        out += np.outer(a, b) / (draws[g] if draws[g] > 0 else 1.0)
    return out


def _twin_bread(data: PPIData, w: np.ndarray, p: np.ndarray, people_only: bool) -> np.ndarray:
    """The Moore-Penrose inverse of the information (people's alone at lambda 0, else pooled)."""
    m = data.n_models
    n, big_n = w @ data.n_human, w @ data.n_judge
    info = np.zeros((m, m))
    for c in range(len(data.pair)):
        k = data.pair[c]
        units = data.n_human[c] / n if people_only else (data.n_human[c] + data.n_judge[c]) / (n + big_n)
        x = np.zeros(m)
        x[data.i[k]], x[data.j[k]] = 1.0, -1.0
        info += w[c] * units * p[k] * (1 - p[k]) * np.outer(x, x)
    return np.linalg.pinv(info)


def _p(data: PPIData, theta: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(theta[data.i] - theta[data.j])))


def test_prompt_clustered_covariance_equals_its_slow_twin():
    """fit_ppi_rounds by prompt, people alone and at a fixed lambda, each round's covariance as
    the twin's sandwich at the round's own solution."""
    data, weights, draws = _case()
    for lam in (0.0, 0.6):
        fits = fit_ppi_rounds(data, weights, lam, draws=draws)
        for w, k, fit in zip(weights, draws, fits):
            assert not isinstance(fit, Exception), fit
            theta = fit.classical_theta if lam == 0 else fit.theta
            human, judge = _twin_parts(data, w, _p(data, theta))
            psi = human + lam * judge
            bread = _twin_bread(data, w, _p(data, theta), people_only=lam == 0)
            twin = bread @ _twin_meat(data, w, k, psi, psi) @ bread
            np.testing.assert_allclose(fit.covariance, twin, rtol=1e-9, atol=1e-15)


def test_prompt_clustered_pieces_and_fold_shares_equal_their_slow_twin():
    """The three parts of the per-model sandwich (people's, the cross, the judge's) and each
    fold's share of them (a fold keeps whole prompts), as the per-model worth reads them."""
    data, weights, draws = _case()
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 0.8, (len(weights), len(data.i)))  # the sandwich holds at any pilot
    folds = tuple(_folds(data, weights, seed=1))
    (whole, *shares), errors = _pieces(_Rounds(data, weights, draws), p, folds)
    assert not errors
    for r, (w, k) in enumerate(zip(weights, draws)):
        human, judge = _twin_parts(data, w, p[r])
        bread = _twin_bread(data, w, p[r], people_only=False)
        for got, fold in ((whole, None), *zip(shares, folds)):
            kept = None if fold is None else set(data.group[fold[r] > 0].tolist())
            for part, (left, right) in enumerate(((human, human), (human, judge), (judge, judge))):
                twin = bread @ _twin_meat(data, w, k, left, right, kept) @ bread
                np.testing.assert_allclose(got[r, part], twin, rtol=1e-9, atol=1e-15)
    assert any(len(set(data.group[f[2] > 0].tolist())) < int(data.group.max()) + 1 for f in folds)  # folds split


def test_per_model_fits_of_rounds_chunked_equal_one_at_a_time(monkeypatch):
    """The per-model worth fits its rounds in chunks that share their sums: each round as it
    comes out fitted alone, however the rounds are chunked, with a round that fails (no
    people's votes in it) among them."""
    import analysis.ratings.ppi as ppi

    data, weights, draws = _case(seed=4)
    no_people = weights[2].copy()
    no_people[:len(data.pair) // 2] = 0.0  # the design rows' first half holds people's votes
    weights, draws = np.insert(weights, 2, no_people, axis=0), np.insert(draws, 2, draws[2], axis=0)
    alone = [fit_ppi_per_model_rounds(data, weights[r:r + 1], draws=draws[r:r + 1])[0] for r in range(len(weights))]
    assert [isinstance(f, Exception) for f in alone] == [False, False, True, False, False, False]
    for cells in (len(data.pair), 2 * len(data.pair), 10 ** 9):  # one round a chunk, two, all
        monkeypatch.setattr(ppi, "_CHUNK_CELLS", cells)
        for fit, single in zip(fit_ppi_per_model_rounds(data, weights, draws=draws), alone):
            if isinstance(single, Exception):
                assert type(fit) is type(single) and str(fit) == str(single)
                continue
            for field in ("theta", "sd", "lam", "classical_sd"):
                np.testing.assert_allclose(getattr(fit, field), getattr(single, field), rtol=1e-9, atol=1e-12)


def test_the_blocked_transpose_is_the_transpose():
    """The prompt sums are turned a block of rows at a time (analysis.ratings.ppi._transposed): a
    tall array over several blocks, the last one short, comes out as its transpose, into a new
    array or into one given."""
    from analysis.ratings.ppi import _transposed

    a = np.random.default_rng(0).random((53, 6))
    assert np.array_equal(_transposed(a, block=8), a.T)
    out = np.full((6, 53), np.nan)
    assert _transposed(a, out, block=53) is out and np.array_equal(out, a.T)
