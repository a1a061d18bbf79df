"""The statistics kernel: how the data repeat, one logit fit, one sandwich, one interval.

Every estimator of the lab (Bradley-Terry and its style-controlled form, PPI, a judge's
worth, self-preference, agreement, the leaderboard meta-metrics) takes from here:

* **the cluster** (:mod:`analysis.stats.clusters`): the unit that repeats. In a prompt set each
  model's answer to a prompt sits in several pairs and a prompt's difficulty touches all of
  them, so whenever a prompt carries more than one pair the default unit is the prompt
  (``prompt_id``, else the prompt text); otherwise it is the pair (``pair_id``: several
  people on one pair, a judge seeing both orders). ``cluster="pair"`` or ``"prompt"`` forces
  one. Sandwich covariances sum scores within a cluster; bootstraps resample clusters.
* **the fit** (:mod:`analysis.stats.logit`): a (fractional, optionally ridge-penalised) logistic
  regression by damped Newton, which is also row-level Bradley-Terry (:func:`contrast`
  columns, +1 for one model, -1 for the other). A fit that does not converge, or whose data
  are separated, raises :class:`FitError` instead of returning numbers.
* **the covariance** (:mod:`analysis.stats.sandwich`): ``A^-1 B A^-1`` with ``B`` the outer product of
  per-cluster score sums (Liang & Zeger 1986; White 1982 for the fractional logit,
  Papke & Wooldridge 1996), with statsmodels' small-sample factor G/(G-1) (N-1)/(N-K) when
  asked for (``Logit(...).fit(cov_type="cluster")``, the slow twin of the tests).
* **the interval** (:mod:`analysis.stats.intervals`, :mod:`analysis.stats.bootstrap`): percentiles of bootstrap replicates
  (:func:`ratio_percentile_interval` for a positive ratio some of whose replicates are infinite);
  :func:`cluster_bootstrap` resamples whole clusters, :func:`clustered_rate_ci` is a rate's
  interval (Wilson's when every cluster holds one trial).
* **the draws** (:mod:`analysis.stats.resample`): bootstrap rounds drawn as counts over
  distinct kinds of units, not as rows.
"""

from analysis.stats.clusters import CLUSTERS, Clustering, ci_label, cluster_codes, cluster_groups, described_unit, item_clusters, per_cluster, prompt_key, row_clusters
from analysis.stats.sandwich import sandwich
from analysis.stats.logit import FitError, LogitFit, contrast, fit_logit, strength_columns
from analysis.stats.intervals import Z95, normal_sf, percentile_interval, ratio_percentile_interval, t_quantile, t_sf, wilson_interval, z_two_sided
from analysis.stats.bootstrap import MIN_CLUSTERS, cluster_bootstrap, cluster_bootstrap_many, clustered_rate_ci

__all__ = ["CLUSTERS", "Clustering", "FitError", "LogitFit", "MIN_CLUSTERS", "Z95", "ci_label", "cluster_bootstrap", "cluster_bootstrap_many", "cluster_codes", "cluster_groups", "clustered_rate_ci", "contrast", "described_unit", "fit_logit", "item_clusters", "normal_sf", "per_cluster", "percentile_interval", "prompt_key", "ratio_percentile_interval", "row_clusters", "sandwich", "strength_columns", "t_quantile", "t_sf", "wilson_interval", "z_two_sided"]
