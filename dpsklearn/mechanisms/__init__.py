"""Privacy mechanisms: each one a calibration, its privacy events and an engine.

Every way dpsklearn releases something about private data is one class here
(:class:`~._base.Mechanism`). Built at ``fit`` from the total budget and
public sizes, a mechanism owns its calibration (noise scales, thresholds),
states its cost as typed :mod:`~dpsklearn.accounting` events, and makes the
engine that answers batches while the model serves. Estimators compose
them. The mathematics of each is in ``docs/design.rst``.

* :class:`StabilityTest` -- the majority label when the sparse vector test
  passes, else noisy max or abstain (``SubsampleAggregateClassifier``).
* :class:`ConfidentGNMaxRelease` -- the Gaussian noisy argmax of confident queries
  (``SubsampleAggregateClassifier(mechanism="confident_gnmax")``).
* :class:`SoftLabelTest` -- a soft label's bin midpoint after two tests
  (``SoftLabelPrivateRegressor``).
* :class:`SoftMajority` -- exponential-mechanism labels and grid Laplace
  probabilities, per query (``PrivatePredictionClassifier``).
* :class:`GNMaxRelease` -- a noisy count vector per query
  (``PrivatePredictionClassifier(mechanism="gnmax")``).
* :class:`GridLaplaceRelease` -- a value of known sensitivity, per query
  (``PrivatePredictionRegressor``, kernel ridge predictions).
* :class:`GridGaussianRelease` -- the same with discrete Gaussian noise,
  composed in zCDP or RDP (``PrivatePredictionRegressor``; :func:`value_release`
  chooses between the two).
* :class:`AdaptiveRangeRelease` -- regression answers clipped to a
  privately estimated band of the teachers' predictions, by the clipped
  mean or an exponential-mechanism median.
* :class:`SufficientStatisticsRelease` -- ridge by perturbed sufficient
  statistics with an adaptive regulariser (AdaSSP, Wang 2018), once.
* :class:`StagedStatisticsRelease` -- AdaSSP in stages on one budget (a
  linear model, then random features on its residuals), once.
* :class:`WeightRelease` -- a weight vector, once
  (``PrivateKernelRidge(release="model")``).
* :class:`ExponentialSelection` -- one hypothesis, once
  (``ExponentialMechanismERM``).
* :class:`ChunkedQueries` -- statistical queries on disjoint chunks
  (``PrivateStatisticalQueries``).
* :class:`RepeatedSelection` -- the best of a random number of private
  runs (``PrivateGridSearch``).
* :class:`PublicPriorTest` -- a public model's answer where the teachers
  agree with it, a paid answer elsewhere
  (``SubsampleAggregateClassifier(mechanism=PublicPrior(public_model))``).

The user-facing options of each mechanism are parameter objects
(each beside its family's calibration and engine, in modules that share a
stem: :class:`SparseVector` in ``_sparse_vector_options.py``;
:class:`ConfidentGNMax` and :class:`GNMax` in ``_gnmax_options.py``;
:class:`Exponential` in ``_per_query_options.py``; :class:`SoftLabelHistogram`
beside its test in ``_stability.py``;
:class:`ClippedMean`, :class:`AdaptiveRange`, :class:`OutputPerturbation`,
:class:`SufficientStatistics` in ``_options_values.py``;
:class:`RepeatAndSelect` in ``_options_selection.py``; :class:`PublicPrior`
in ``_public_prior.py``; their base :class:`MechanismOptions` in
``_options.py``): at ``fit`` an estimator asks them to plan themselves
(:meth:`MechanismOptions.plan` on a :class:`PlanContext`, returning a
:class:`MechanismPlan`) or calibrates them into the classes above.
"""

from ._adaptive_range import (
    AdaptiveRangeEngine,
    AdaptiveRangeRelease,
    choose_aggregate,
    private_range,
    range_grid,
    range_tilt,
    rank_error,
)
from ._base import Engine, Mechanism, Release
from ._gaussian_calibration import (
    GAUSSIAN_CALIBRATIONS,
    GaussianCalibration,
    calibrate_confident_gnmax,
    gnmax_sigma,
)
from ._gnmax import (
    ConfidentGNMaxEngine,
    ConfidentGNMaxRelease,
    GNMaxEngine,
    GNMaxRelease,
    check_vote_counts,
    confident_gnmax,
    confident_gnmax_threshold,
    gnmax,
    gnmax_noisy_counts,
)
from ._gnmax_options import ConfidentGNMax, GNMax
from ._grid_gaussian import (
    GridGaussianEngine,
    GridGaussianRelease,
    clipped_mean_release,
    value_release,
)
from ._kernel_ridge import (
    WeightRelease,
    function_sensitivity,
    kernel_ridge_prediction_release,
    kernel_ridge_weight_release,
    weight_sensitivity,
)
from ._options import (
    MechanismOptions,
    MechanismPlan,
    PlanContext,
    TeacherPlanner,
    resolve_mechanism,
    unvalidated_mechanism,
)
from ._options_selection import RepeatAndSelect
from ._options_values import (
    AdaptiveRange,
    ClippedMean,
    OutputPerturbation,
    SufficientStatistics,
)
from ._per_query import GridLaplaceRelease, SoftMajority
from ._per_query_options import Exponential
from ._public_prior import (
    PublicPrior,
    PublicPriorEngine,
    PublicPriorTest,
    agreement_margin,
)
from ._repeat_select import RUN_DISTRIBUTIONS, RepeatedSelection, curve_of_events
from ._selection import ChunkedQueries, ExponentialSelection, HistogramRelease
from ._sparse_vector import SparseVectorEngine
from ._sparse_vector_calibration import (
    REMOVED_SPARSE_VECTOR_CALIBRATIONS,
    SPARSE_VECTOR_CALIBRATION_OPTION,
    SPARSE_VECTOR_CALIBRATIONS,
    SparseVectorCalibration,
    calibrate_sparse_vector,
    sparse_vector_candidates,
)
from ._sparse_vector_options import SparseVector
from ._sparse_vector_tails import noise_quantiles, noise_survival
from ._stability import (
    SoftLabelHistogram,
    SoftLabelTest,
    StabilityTest,
    soft_label_bins,
    soft_label_histograms,
)
from ._staged_statistics import StagedStatisticsRelease
from ._sufficient_statistics import (
    NoisyStatistics,
    SufficientStatisticsRelease,
    accumulate_statistics,
    gram_sensitivity,
    moment_sensitivity,
)
from ._votes import (
    distance_from_gap,
    distance_to_instability,
    majority_and_gap,
    vote_counts,
)

__all__ = [
    "AdaptiveRange",
    "ClippedMean",
    "ConfidentGNMax",
    "Exponential",
    "GNMax",
    "MechanismOptions",
    "OutputPerturbation",
    "PublicPrior",
    "RepeatAndSelect",
    "SoftLabelHistogram",
    "SparseVector",
    "SufficientStatistics",
]
