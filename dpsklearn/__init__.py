"""dpsklearn: differentially private prediction for any scikit-learn estimator."""

from .accounting import PrivacyAccountant
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .subsample_aggregate import SubsampleAggregateClassifier

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExhaustedError",
    "PrivacyAccountant",
    "PrivacyLeakWarning",
    "SubsampleAggregateClassifier",
    "__version__",
]
