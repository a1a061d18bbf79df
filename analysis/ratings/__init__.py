"""Ratings from pairwise battles: online Elo, Bradley-Terry with honest intervals,
TrueSkill and style-controlled Bradley-Terry, behind one registry (:func:`rate`).

``python -m analysis.ratings --votes FILE...`` is the command-line front end.

Modules: :mod:`.counts` (battles -> pair counts), :mod:`.likelihoods` (tie models and
their derivatives), :mod:`.bt` (Newton fit, sandwich covariance, Elo scale),
:mod:`.bootstrap` (pair-cluster bootstrap), :mod:`.elo`,
:mod:`.trueskill_ratings`, :mod:`.style` (style control), :mod:`.ppi` (prediction-powered BT:
few human votes, many judge verdicts), :mod:`.table`
(results, ranks), :mod:`.registry` (``rate`` and the method table), :mod:`.winrate`
(AlpacaEval's win rate against a baseline and its length-controlled twin), :mod:`.cli`.

References
----------
- Bradley, R.A. & Terry, M.E. (1952). Rank analysis of incomplete block designs I. Biometrika 39.
- Davidson, R.R. (1970). On extending the Bradley-Terry model to accommodate ties. JASA 65.
- Elo, A. (1978). The Rating of Chessplayers, Past and Present.
- Boubdir, M. et al. (2023). Elo Uncovered: Robustness and best practices in language model
  evaluation. arXiv:2311.17295.
- Herbrich, R., Minka, T. & Graepel, T. (2006). TrueSkill: a Bayesian skill rating system. NIPS.
- Huber, P.J. (1967); White, H. (1982). Maximum likelihood estimation of misspecified models.
  Econometrica 50 (the sandwich covariance).
- Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 6 and 13.
- Liang, K.-Y. & Zeger, S.L. (1986). Longitudinal data analysis using generalized linear models.
  Biometrika 73 (cluster-robust sandwich: votes on one pair_id are one cluster).
- Field, C.A. & Welsh, A.H. (2007). Bootstrapping clustered data. JRSS B 69 (resampling whole pairs).
- Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
  preference. ICML (sandwich/bootstrap intervals, rank with uncertainty).
- Li, T. et al. (2024). Does style matter? Disentangling style and substance in Chatbot Arena
  (LMSYS blog; FastChat ``construct_style_matrices``).
- Angelopoulos, A.N., Bates, S., Fannjiang, C., Jordan, M.I. & Zrnic, T. (2023). Prediction-powered
  inference. Science 382.
- Angelopoulos, A.N., Duchi, J.C. & Zrnic, T. (2023). PPI++: Efficient prediction-powered inference.
  arXiv:2311.01453.
- Boyeau, P. et al. (2024). AutoEval done right: using synthetic data for model evaluation. arXiv:2403.07008.
- Chatzi, I. et al. (2024). Prediction-powered ranking of large language models. arXiv:2402.17826.
- Dubois, Y. et al. (2024). Length-controlled AlpacaEval: a simple way to debias automatic
  evaluators. arXiv:2404.04475.
"""

from .bootstrap import REPLICATE_L2, Replicates, bootstrap_params
from .bt import CENTRE, ELO_SCALE, BTResult, bradley_terry, fit_counts, mle_exists
from .counts import PairCounts, aggregate
from .elo import online_elo
from .registry import METHODS, rate, register
from .style import StyleFit, add_style_features, fit_style_bt
from .table import RatingTable, make_table, rank_with_uncertainty
from .winrate import WinRateTable, win_rates

__all__ = [
    "REPLICATE_L2",
    "Replicates",
    "BTResult",
    "CENTRE",
    "ELO_SCALE",
    "METHODS",
    "PairCounts",
    "RatingTable",
    "StyleFit",
    "WinRateTable",
    "add_style_features",
    "aggregate",
    "bootstrap_params",
    "bradley_terry",
    "fit_counts",
    "fit_style_bt",
    "make_table",
    "mle_exists",
    "online_elo",
    "rank_with_uncertainty",
    "rate",
    "register",
    "win_rates",
]
