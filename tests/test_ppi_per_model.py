"""PPI++ with lambda tuned per model: a judge that helps on some models' pairs and misleads on
one model's must not widen any model's interval in the ratings table beyond people's alone,
which one lambda shared by every model does; the worth's per-model widths are cross-fitted, so
they may show a model the judge does not help as widened."""

import numpy as np
import pandas as pd
import pytest

from analysis.ratings.ppi import fit_ppi, fit_ppi_per_model, fit_ppi_stacked, ppi_data
from test_clustering_coverage import battles, prompts


def test_per_model_lambda_never_widens_a_model_and_one_lambda_does():
    rng = np.random.default_rng(0)
    widest_shared, widest_own, narrowed = [], [], []
    for _ in range(3):
        prompt, i, j, eta = prompts(rng, 150)
        n = len(eta)
        judge_logit = np.where((i == 4) | (j == 4), -3 * eta, 1.5 * eta)  # misleading on m4's pairs
        judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-judge_logit)), judge="J", judge_type="llm")
        people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                         judge_type="human")[rng.random(n) < 0.2]
        data = ppi_data(people, judge, cluster="pair")
        shared = fit_ppi(data)
        widest_shared.append(np.max(np.sqrt(np.diag(shared.covariance) / np.diag(shared.classical_covariance))))
        own = fit_ppi_stacked(data)
        ratio = np.sqrt(np.diag(own.covariance) / np.diag(own.classical_covariance))
        widest_own.append(ratio.max())
        narrowed.append((ratio < 0.99).sum())
        assert own.lams[4] < 0.1 and own.lams[4] <= own.lams[:4].min(), own.lams  # the misled model: little judge
        assert np.allclose(fit_ppi_per_model(data).classical_sd, np.sqrt(np.diag(shared.classical_covariance)))
    assert max(widest_own) <= 1.0 + 1e-12, widest_own
    assert max(widest_shared) > 1.05, widest_shared
    assert min(narrowed) >= 2, narrowed  # it still helps where it can


def test_a_useless_judges_worth_interval_can_fall_below_one():
    """A judge flipping coins is worth at most people's votes alone; its interval must be free
    to reach below 1x (every bootstrap round used to fall back to people alone, so the interval
    started at exactly 1.00 and never covered the truth)."""
    from analysis.judging.worth import judge_worth

    rng = np.random.default_rng(4)
    prompt, i, j, eta = prompts(rng, 100)
    n = len(eta)
    judge = battles(prompt, i, j, rng.random(n) < 0.5, judge="J", judge_type="llm")
    people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                     judge_type="human")[rng.random(n) < 0.3]
    worth = judge_worth(people, judge, "J", seed=0)
    assert worth.ratio_ci is not None and worth.ratio_ci[0] < 1.0 <= worth.ratio_ci[1], worth.ratio_ci
    assert abs(worth.ratio - 1) < 0.03, worth.ratio


def test_prompt_bootstrap_round_is_the_fit_of_the_prompts_copied():
    """A bootstrap round that draws prompt g k_g times, given as weights and draws, has the
    covariance of the data with each drawn prompt copied k_g times as distinct prompts."""

    from analysis.ratings.ppi import fit_ppi_rounds

    rng = np.random.default_rng(5)
    prompt, i, j, eta = prompts(rng, 30)
    n = len(eta)
    judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="J", judge_type="llm")
    people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human",
                     judge_type="human")[rng.random(n) < 0.5]
    data = ppi_data(people, judge, cluster="prompt")
    k = rng.poisson(1.0, int(data.group.max()) + 1).astype(float)
    (drawn,) = fit_ppi_rounds(data, (data.weight * k[data.group])[None], draws=k[None])
    # The same round written out: prompt q copied k times, each copy its own prompt and pairs.
    codes = pd.factorize(pd.concat([people, judge])["prompt"])[0]
    of_prompt = dict(zip(pd.concat([people, judge])["prompt"], codes))
    copies = []
    for frame in (people, judge):
        for q, rows in frame.groupby("prompt", sort=False):
            for c in range(int(k[of_prompt[q]])):
                copies.append(rows.assign(prompt=f"{q}#{c}", pair_id=rows["pair_id"] + f"#{c}"))
    both = pd.concat(copies, ignore_index=True)
    copied = fit_ppi(ppi_data(both[both["judge"] == "human"], both[both["judge"] == "J"], cluster="prompt"))
    np.testing.assert_allclose(drawn.theta, copied.theta, atol=1e-8)
    np.testing.assert_allclose(drawn.covariance, copied.covariance, rtol=1e-6, atol=1e-12)


def test_designs_fitted_together_are_each_designs_own_per_model_fit():
    """A judge's designs (people on a random share of its pairs) fitted in one batch: each
    model's rating, sd and lambda as the design fitted alone gives them, by pair and by prompt;
    the one-step ratings close to the fit at each model's own lambda."""
    from analysis.judging.worth import _design_rows, _subsample
    from analysis.ratings.ppi import fit_ppi_per_model_rounds, fit_ppi_rounds

    rng = np.random.default_rng(7)
    prompt, i, j, eta = prompts(rng, 80)
    n = len(eta)
    judge = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-np.where(i == 2, -eta, eta))), judge="J",
                    judge_type="llm")
    people = battles(prompt, i, j, rng.random(n) < 1 / (1 + np.exp(-eta)), judge="human", judge_type="human")
    for cluster in ("pair", "prompt"):
        collected = ppi_data(people, judge, cluster=cluster)
        data = _design_rows(collected)
        designs = np.array([_subsample(collected, round(0.4 * collected.weight.sum()), rng) for _ in range(4)])
        together = fit_ppi_per_model_rounds(data, designs)
        assert len({tuple(f.lam) for f in together}) > 1  # the designs tune different lambdas
        for k, (w, fit) in enumerate(zip(designs, together)):
            (alone,) = fit_ppi_per_model_rounds(data, designs[k:k + 1])
            for field in ("theta", "sd", "lam", "classical_sd"):
                np.testing.assert_allclose(getattr(fit, field), getattr(alone, field), rtol=1e-9, atol=1e-12)
            for m, lam in enumerate(fit.lam):
                if lam > 0:
                    (exact,) = fit_ppi_rounds(data, w[None], float(lam))
                    sd = np.sqrt(np.diag(exact.covariance))
                    assert abs(fit.theta[m] - exact.theta[m]) < 0.2 * sd[m]  # one Newton step


def test_the_headline_worth_is_read_from_the_per_model_fits():
    """A judge sharp on the pairs among four of six models and flipping coins on the rest: one
    lambda shared by every model narrows some models' intervals by widening others' (by 5-7%
    here), and a headline worth read from that fit averaged both, while the per-model widths
    beside it said another thing (their mean 0.01-0.02 below the headline's width). The headline
    comes from the per-model fits: its mean width is theirs."""
    from analysis.judging.worth import judge_worth

    models = np.array([f"m{k}" for k in range(6)])
    strength = np.linspace(-0.6, 0.6, 6)
    gaps = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 1500
        i = rng.integers(0, 6, n)
        j = (i + rng.integers(1, 6, n)) % 6
        eta = strength[i] - strength[j] + rng.normal(0, 1.5, n)
        sharp = (i < 4) & (j < 4)
        judge_won = rng.random(n) < np.where(sharp, 1 / (1 + np.exp(-4 * eta)), 0.5)
        people_won = rng.random(n) < 1 / (1 + np.exp(-eta))

        def frame(won, **extra):
            return pd.DataFrame({"model_a": models[i], "model_b": models[j], "pair_id": [f"p{k}" for k in range(n)],
                                 "winner": np.where(won, "model_a", "model_b"), **extra})

        people = frame(people_won, judge="human", judge_type="human")[rng.random(n) < 0.2]
        worth = judge_worth(people, frame(judge_won, judge="J", judge_type="llm"), "J", seed=0, cluster="pair")
        widths = worth.per_model["width_ratio"].to_numpy()
        gaps.append(abs(worth.ratio ** -0.5 - widths.mean()))
    assert max(gaps) <= 0.005, gaps
