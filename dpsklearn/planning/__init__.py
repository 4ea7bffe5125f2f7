"""The planner: the theorems turned into numbers, and the regime guide.

Pure functions of public numbers (or of data the user may look at), each
citing the theorem it evaluates (``docs/design.rst``, "The planner"):

* :mod:`._sparse_vector` -- how many teachers the stability test needs, and
  what passes it;
* :mod:`._stability_plan` -- which ``k`` and ``T`` answer most of a query
  stream (:func:`plan_stability_test`);
* :mod:`._vote_choice` -- which vote mechanism answers a query stream best,
  the student of its answers counted (:func:`plan_vote_mechanisms`, the
  classifiers' ``"auto"``);
* :mod:`._regression` -- the noise of private regression answers and the
  R^2 it costs (:func:`plan_regression_answers`), and the teachers' shard
  size for a knowledge-transfer student (:func:`knowledge_transfer_shard_rows`);
* :mod:`._sample_size` -- sample sizes and schedules of the other
  estimators;
* :mod:`._outcomes` and :mod:`._regime` -- which mechanism answers, and how
  well, for a distribution of vote histograms.
"""

from ._outcomes import confident_gnmax_outcome
from ._regime import (
    MECHANISMS,
    MarginHistogram,
    predict_regime,
    private_margin_histogram,
    public_vote_counts,
)
from ._regression import (
    ASSUMED_SPREAD_SHARE,
    ASSUMED_TEACHER_R2,
    RegressionAnswerPlan,
    knowledge_transfer_shard_rows,
    plan_regression_answers,
)
from ._sample_size import (
    KernelRidgeSchedule,
    erm_sample_size,
    kernel_ridge_schedule,
    private_prediction_r,
    statistical_query_sample_size,
)
from ._sparse_vector import (
    auto_n_estimators,
    distance_at_agreement,
    min_distance_to_pass,
    n_estimators_for_agreement,
    n_estimators_for_agreement_by_calibration,
    pass_probability,
    theorem_3_11_n_estimators,
)
from ._stability_plan import StabilityPlanRow, plan_stability_test
from ._vote_choice import (
    VoteMechanismPlan,
    exponential_teachers,
    plan_vote_mechanisms,
)

__all__ = [
    "KernelRidgeSchedule",
    "erm_sample_size",
    "kernel_ridge_schedule",
    "plan_regression_answers",
    "plan_stability_test",
    "predict_regime",
    "statistical_query_sample_size",
]
