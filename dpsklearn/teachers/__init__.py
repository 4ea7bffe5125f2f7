"""Teachers: k clones of any estimator on disjoint shards, and what they output.

Below the estimators and above the mechanisms: nothing here releases
anything; the estimators hand the teachers' non-private outputs (votes,
predictions, probabilities) to a mechanism.

* :mod:`._sharding` -- the data-independent partition of the rows, one seed
  per teacher, and the parallel fit in batches (joblib, hence Dask);
* :mod:`._inference` -- the teachers' outputs on query rows, in parallel
  over blocks of teachers (joblib, hence Dask, where the teachers stay on
  the workers);
* :mod:`._fused` and :mod:`._fused_columns` -- one matrix multiply for the
  votes of linear teachers (also behind a ``ColumnTransformer``);
* :mod:`._cache` -- teachers (and their vote counts) reused across fits
  that differ only in privacy parameters;
* :mod:`._ensemble` -- fit an ensemble, count its votes.
"""

from ._cache import clear_teacher_cache, ensemble_key
from ._ensemble import count_votes, fit_teacher_ensemble, fuse_teachers
from ._fused import FusedLinearEnsemble, fused_ensemble, why_not_fusable
from ._inference import (
    count_teacher_votes,
    teacher_class_probabilities,
    teacher_outputs,
)
from ._sharding import ConstantTeacher, fit_teachers, partition_indices, teacher_seeds

__all__ = [
    "clear_teacher_cache",
]
