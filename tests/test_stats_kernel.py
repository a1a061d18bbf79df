"""The statistical core (analysis.stats) against its slow twin, statsmodels."""

import numpy as np
import pandas as pd
import pytest

from analysis.stats import FitError, cluster_groups, fit_logit, percentile_interval


def _clustered_data(seed=0, n_groups=60, per_group=5):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), per_group)
    shared = rng.normal(0, 1.0, n_groups)[groups]  # what a cluster's rows share
    X = np.column_stack([np.ones(len(groups)), rng.normal(size=len(groups)), rng.integers(0, 2, len(groups))])
    y = (rng.random(len(groups)) < 1 / (1 + np.exp(-(X @ [0.2, 0.8, -0.5] + shared)))).astype(float)
    return X, y, groups


def test_logit_matches_statsmodels_clustered():
    from statsmodels.discrete.discrete_model import Logit

    X, y, groups = _clustered_data()
    ours = fit_logit(X, y, groups)
    theirs = Logit(y, X).fit(disp=False, cov_type="cluster", cov_kwds={"groups": groups})
    np.testing.assert_allclose(ours.params, theirs.params, rtol=1e-6)
    np.testing.assert_allclose(ours.cov, theirs.cov_params(), rtol=1e-6)
    np.testing.assert_allclose(ours.pvalues, theirs.pvalues, rtol=1e-5)


def test_fractional_logit_matches_statsmodels_glm_hc0():
    import statsmodels.api as sm

    X, y, groups = _clustered_data(1)
    share = np.clip(y * 0.7 + 0.15, 0, 1)
    ours = fit_logit(X, share, groups, small_sample=False)
    theirs = sm.GLM(share, X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    np.testing.assert_allclose(ours.params, theirs.params, rtol=1e-6)
    np.testing.assert_allclose(ours.cov, theirs.cov_params(), rtol=1e-5)


def test_separated_or_unconverged_fit_raises():
    X = np.column_stack([np.ones(40), np.r_[np.zeros(20), np.ones(20)]])
    y = np.r_[np.zeros(20), np.ones(20)]
    with pytest.raises(FitError):
        fit_logit(X, y)
    X, y, _ = _clustered_data(2)
    with pytest.raises(FitError, match="did not converge"):
        fit_logit(X, y, max_iter=1)


def test_cluster_groups_prompt_when_a_prompt_carries_several_pairs():
    frame = pd.DataFrame({"pair_id": ["p1", "p2", "p3", "p3"], "prompt": ["q1", "q1", "q2", "q2"],
                          "model_a": ["a", "a", "b", "c"], "model_b": ["b", "c", "c", "b"], "winner": ["model_a"] * 4})
    assert cluster_groups(frame).kind == "prompt" and cluster_groups(frame).n == 2
    assert cluster_groups(frame, "pair").n == 3
    one_pair_each = frame.assign(prompt=["q1", "q2", "q3", "q3"])
    assert cluster_groups(one_pair_each).kind == "pair"
    with pytest.raises(ValueError, match="no prompt_id or prompt"):
        cluster_groups(frame.drop(columns="prompt"), "prompt")


def test_percentile_interval():
    lo, hi = percentile_interval(np.arange(1001.0))
    assert (lo, hi) == pytest.approx((25.0, 975.0))


def test_quantiles_and_tails_match_scipy_stats():
    from scipy import stats

    from analysis.stats import normal_sf, t_quantile, t_sf, z_two_sided

    for level in (0.5, 0.8, 0.9, 0.95, 0.99):
        assert z_two_sided(level) == pytest.approx(stats.norm.ppf(0.5 + level / 2), rel=1e-12)
    for df in (None, 1, 2, 3, 7, 29, 500):
        for p in (0.6, 0.8, 0.975, 0.999):
            want = stats.t.ppf(p, df) if df else stats.norm.ppf(p)
            assert t_quantile(p, df) == pytest.approx(want, rel=1e-10)
        x = np.array([-1.5, 0.0, 0.3, 2.1, 6.0])
        np.testing.assert_allclose(t_sf(x, df), stats.t.sf(x, df) if df else stats.norm.sf(x), rtol=1e-10)
    np.testing.assert_allclose(normal_sf([-2.0, 0.0, 1.96, 9.0]), stats.norm.sf([-2.0, 0.0, 1.96, 9.0]), rtol=1e-12)


def test_rank_correlations_match_scipy_stats_with_ties_constants_and_batches():
    from scipy import stats

    from analysis.judging.agreement import kendall_p
    from analysis.stats.correlation import kendall_tau, spearman_rho

    rng = np.random.default_rng(0)
    for n in range(3, 12):
        for _ in range(10):
            x = rng.normal(size=n)
            y = x + rng.normal(size=n) * rng.uniform(0, 3)
            if rng.random() < 0.3:
                y = np.round(y)  # ties
            assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12, nan_ok=True)
            assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12, nan_ok=True)
            # Up to 8 models without ties, every ordering counted; else scipy's own p.
            assert kendall_p(x, y) == pytest.approx(stats.kendalltau(x, y).pvalue, abs=1e-12, nan_ok=True)
    x, y = rng.normal(size=(6, 7)), rng.normal(size=(6, 7))
    np.testing.assert_allclose(kendall_tau(x, y), [stats.kendalltau(a, b).statistic for a, b in zip(x, y)], atol=1e-12)
    np.testing.assert_allclose(spearman_rho(x, y), [stats.spearmanr(a, b).statistic for a, b in zip(x, y)], atol=1e-12)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3])) and np.isnan(spearman_rho([2, 2, 2, 2], [1, 2, 3, 4]))
