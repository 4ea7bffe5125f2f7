"""dpsklearn: differentially private prediction for any scikit-learn estimator.

Every estimator here answers queries about private training data under a
fixed (epsilon, delta) budget with respect to replacing one training record;
see the README's privacy contract.
"""

from .accounting import PrivacyAccountant, PrivacyEvent
from .erm import (
    DecisionStumps,
    ExponentialMechanismERM,
    ExponentialMechanismERMRegressor,
    Thresholds,
)
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .kernel_ridge import PrivateKernelRidge, kernel_ridge_schedule
from .knowledge_transfer import KnowledgeTransferClassifier
from .ledger import LedgerError, PrivacyLedger
from .private_prediction import PrivatePredictionClassifier, PrivatePredictionRegressor
from .soft_label import SoftLabelPrivateRegressor
from .statistical_queries import PrivateStatisticalQueries
from .subsample_aggregate import SubsampleAggregateClassifier

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExhaustedError",
    "DecisionStumps",
    "ExponentialMechanismERM",
    "ExponentialMechanismERMRegressor",
    "KnowledgeTransferClassifier",
    "LedgerError",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PrivacyLedger",
    "PrivacyLeakWarning",
    "PrivateKernelRidge",
    "PrivatePredictionClassifier",
    "PrivatePredictionRegressor",
    "PrivateStatisticalQueries",
    "SoftLabelPrivateRegressor",
    "SubsampleAggregateClassifier",
    "Thresholds",
    "__version__",
    "kernel_ridge_schedule",
]
