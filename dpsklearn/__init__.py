"""dpsklearn: differentially private prediction for any scikit-learn estimator.

Every estimator here answers queries about private training data under a
fixed (epsilon, delta) budget with respect to replacing one training record;
see the README's privacy contract. The package is laid out by role:

* :mod:`dpsklearn.noise` -- every noise draw;
* :mod:`dpsklearn.accounting` -- typed privacy events, composition, the
  accountant and the ledger;
* :mod:`dpsklearn.mechanisms` -- each mechanism: the options a user chooses
  (``SparseVector``, ``ConfidentGNMax``, ...), its calibration, its events,
  its engine;
* :mod:`dpsklearn.serving` -- the one serving loop and its state;
* :mod:`dpsklearn.teachers` -- k clones of any estimator on disjoint shards,
  their votes;
* :mod:`dpsklearn.ensemble`, :mod:`dpsklearn.kernel_ridge`,
  :mod:`dpsklearn.erm`, :mod:`dpsklearn.queries` -- the estimators;
* :mod:`dpsklearn.model_selection` -- the private search over their
  configurations;
* :mod:`dpsklearn.planning`, :mod:`dpsklearn.audit`,
  :mod:`dpsklearn.metrics`, :mod:`dpsklearn.datasets` -- tools around them.

:func:`set_config`, :func:`get_config` and :func:`config_context` hold the
package's settings (where fitted teachers are kept for reuse).
"""

from ._config import config_context, get_config, set_config
from .accounting import LedgerError, PrivacyAccountant, PrivacyEvent, PrivacyLedger
from .ensemble import (
    KnowledgeTransferClassifier,
    KnowledgeTransferRegressor,
    PrivatePredictionClassifier,
    PrivatePredictionRegressor,
    SoftLabelPrivateRegressor,
    SubsampleAggregateClassifier,
)
from .erm import (
    DecisionStumps,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    Thresholds,
)
from .exceptions import (
    AbstentionWarning,
    BudgetCopyWarning,
    BudgetExhaustedError,
    PrivacyLeakWarning,
    StudentFitError,
)
from .kernel_ridge import PrivateKernelRidge
from .linear_model import PrivateLeastSquaresClassifier, PrivateLinearRegression
from .mechanisms import (
    AdaptiveRange,
    ClippedMean,
    ConfidentGNMax,
    Exponential,
    GNMax,
    OutputPerturbation,
    PublicPrior,
    RepeatAndSelect,
    SoftLabelHistogram,
    SparseVector,
    SufficientStatistics,
)
from .model_selection import PrivateGridSearch
from .naive_bayes import PrivateNaiveBayes
from .planning import kernel_ridge_schedule
from .preprocessing import PublicSchema
from .queries import PrivateStatisticalQueries
from .serving import BudgetStatus

__version__ = "0.2.0.dev0"

__all__ = [
    "AdaptiveRange",
    "AbstentionWarning",
    "BudgetCopyWarning",
    "BudgetExhaustedError",
    "BudgetStatus",
    "ClippedMean",
    "ConfidentGNMax",
    "DecisionStumps",
    "ExponentialMechanismERM",
    "Exponential",
    "ExponentialMechanismERMRegressor",
    "GNMax",
    "KnowledgeTransferClassifier",
    "KnowledgeTransferRegressor",
    "LedgerError",
    "OutputPerturbation",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PrivacyLedger",
    "PrivacyLeakWarning",
    "PrivateGridSearch",
    "PrivateKernelRidge",
    "PrivateLeastSquaresClassifier",
    "PrivateLinearRegression",
    "PrivateNaiveBayes",
    "PrivatePredictionClassifier",
    "PrivatePredictionRegressor",
    "PrivateStatisticalQueries",
    "PublicPrior",
    "PublicSchema",
    "RepeatAndSelect",
    "SoftLabelHistogram",
    "SoftLabelPrivateRegressor",
    "SparseVector",
    "SufficientStatistics",
    "StudentFitError",
    "SubsampleAggregateClassifier",
    "Thresholds",
    "__version__",
    "config_context",
    "get_config",
    "kernel_ridge_schedule",
    "set_config",
]
