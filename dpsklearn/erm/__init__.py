"""Private ERM over a finite hypothesis class, by the exponential mechanism.

* :mod:`._hypotheses` -- hypothesis classes (decision stumps, thresholds, a
  list of fitted models) and their losses on the private rows;
* :mod:`._erm` -- :class:`ExponentialMechanismERM` and
  :class:`ExponentialMechanismERMRegressor`, which choose one hypothesis
  with :class:`~dpsklearn.mechanisms.ExponentialSelection`. The fitted model
  may be published.
"""

from ._erm import ExponentialMechanismERM, ExponentialMechanismERMRegressor
from ._hypotheses import DecisionStumps, HypothesisSpace, Stump, Thresholds

__all__ = [
    "DecisionStumps",
    "ExponentialMechanismERM",
    "ExponentialMechanismERMRegressor",
    "Thresholds",
]
