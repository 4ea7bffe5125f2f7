"""Teacher ensembles: k clones of any estimator on disjoint shards, one mechanism.

* :mod:`._base` -- the fit steps the ensembles share (the teachers
  themselves are :mod:`dpsklearn.teachers`);
* the estimators: :class:`SubsampleAggregateClassifier` (the sparse vector
  stability test, or Confident-GNMax), :class:`PrivatePredictionClassifier`
  (soft majority, or GNMax), :class:`PrivatePredictionRegressor`,
  :class:`SoftLabelPrivateRegressor`, and the publishable students
  :class:`KnowledgeTransferClassifier` and :class:`KnowledgeTransferRegressor`
  (their shared fit in :mod:`._knowledge_transfer_base`).
"""

from ._knowledge_transfer import KnowledgeTransferClassifier
from ._knowledge_transfer_regressor import KnowledgeTransferRegressor
from ._private_prediction import PrivatePredictionClassifier
from ._private_regression import PrivatePredictionRegressor
from ._soft_label import SoftLabelPrivateRegressor
from ._subsample_aggregate import SubsampleAggregateClassifier

__all__ = [
    "KnowledgeTransferClassifier",
    "KnowledgeTransferRegressor",
    "PrivatePredictionClassifier",
    "PrivatePredictionRegressor",
    "SoftLabelPrivateRegressor",
    "SubsampleAggregateClassifier",
]
