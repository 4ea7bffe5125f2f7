"""Teacher ensembles: k clones of any estimator on disjoint shards, one mechanism.

* :mod:`._sharding` -- the data-independent partition and the parallel fit
  of the teachers (joblib, hence Dask);
* :mod:`._fused` -- one matrix multiply for the votes of linear teachers;
* :mod:`._base` -- the fit steps the ensembles share;
* the estimators: :class:`SubsampleAggregateClassifier` (the sparse vector
  stability test, or Confident-GNMax), :class:`PrivatePredictionClassifier`
  (soft majority, or GNMax), :class:`PrivatePredictionRegressor`,
  :class:`SoftLabelPrivateRegressor`, and the publishable students
  :class:`KnowledgeTransferClassifier` and :class:`KnowledgeTransferRegressor`
  (their shared fit in :mod:`._knowledge_transfer_base`).
"""

from ._fused import FusedLinearEnsemble, fused_ensemble, why_not_fusable
from ._knowledge_transfer import KnowledgeTransferClassifier
from ._knowledge_transfer_regressor import KnowledgeTransferRegressor
from ._private_prediction import PrivatePredictionClassifier
from ._private_regression import PrivatePredictionRegressor
from ._sharding import (
    ConstantTeacher,
    fit_teachers,
    partition_indices,
    teacher_class_probabilities,
    teacher_outputs,
    teacher_seeds,
)
from ._soft_label import SoftLabelPrivateRegressor
from ._subsample_aggregate import SubsampleAggregateClassifier

__all__ = [
    "ConstantTeacher",
    "FusedLinearEnsemble",
    "KnowledgeTransferClassifier",
    "KnowledgeTransferRegressor",
    "PrivatePredictionClassifier",
    "PrivatePredictionRegressor",
    "SoftLabelPrivateRegressor",
    "SubsampleAggregateClassifier",
    "fit_teachers",
    "fused_ensemble",
    "partition_indices",
    "teacher_class_probabilities",
    "teacher_outputs",
    "teacher_seeds",
    "why_not_fusable",
]
