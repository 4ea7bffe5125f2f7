"""Soft-label queries with two stability tests.

Bassily, Thakkar and Thakurta (2018), Algorithms 6-8: the teachers' soft
labels in [0, 1] are binned; a query whose histogram is stable gets the
midpoint of the fullest bin for free, otherwise a second test on the shifted
partition decides (:class:`~dpsklearn.mechanisms.SoftLabelTest`, with the
corrections of ``docs/corrections.rst``, "Soft-label calibration").
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin, is_classifier
from sklearn.linear_model import Ridge

from .._base import FitPlan, keeps_live_model
from .._dask_input import is_dask_collection
from .._param_validation import Interval, StrOptions
from .._validation import (
    check_regression_targets,
    check_target_range,
    n_rows,
    take_rows,
)
from .._warn import warn_user
from ..mechanisms import (
    ClippedMean,
    MechanismOptions,
    PlanContext,
    SoftLabelHistogram,
    SoftLabelTest,
    resolve_mechanism,
)
from ..serving import ReleaseCache, row_keys, serve
from ..teachers import teacher_outputs
from ._base import ENSEMBLE_CONSTRAINTS, TeacherEnsembleMixin, answer_sources
from ._student import ValueStudent

__all__ = ["SoftLabelPrivateRegressor"]

_FIELDS: dict = {"value": (np.float64, ()), "abstained": (np.bool_, ())}
_MEAN_FIELDS: dict = {"value": (np.float64, ())}
#: Queries the per-query mean is planned for when ``max_queries`` is None
#: (a public constant, part of its guarantee); the student answers the rest.
PLANNED_QUERIES = 1000


class SoftLabelPrivateRegressor(TeacherEnsembleMixin, RegressorMixin, BaseEstimator):
    """Private soft-label regressor: binned teacher outputs, two stability tests.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards. A query's
    soft labels (the teachers' predictions mapped from ``target_range`` to
    [0, 1], or a binary classifier's ``predict_proba[:, 1]``) are binned on a
    gamma-partition. If the histogram is stable (the sparse vector test
    passes its distance to instability), the answer is the midpoint of the
    fullest bin, for free. Otherwise a fresh threshold tests the histogram
    on the partition shifted by ``gamma/2``: a pass answers the shifted bin's
    midpoint and adds 1 to the abstention count ``c``; a second fail answers
    the mechanism's ``fallback`` and adds 2. The model halts when ``c``
    reaches ``max_unstable``. Answers are mapped back to ``target_range``.
    The mechanism's options (``gamma``, ``max_unstable``, ``fallback``,
    ``noisy_mean_share``, ``noise``) live on
    :class:`~dpsklearn.mechanisms.SoftLabelHistogram`.

    Privacy: everything all calls to ``predict`` and ``score``
    ever release is ``(epsilon, delta)``-DP with respect to replacing one
    training record. ``c`` counts failed tests and every failed test ends one
    threshold draw, so at most ``max_unstable + 1`` draws happen: the sparse
    vector is calibrated for ``T + 1``
    (:class:`~dpsklearn.mechanisms.SoftLabelTest`),
    with ``(1 - noisy_mean_share) epsilon`` when ``fallback="noisy_mean"``;
    that fallback answers each of the at most ``ceil(T/2)`` double failures
    with the grid-Laplace mean of the soft labels (sensitivity ``1/k``) at
    ``noisy_mean_share * epsilon / ceil(T/2)``. ``"midpoint"`` answers the
    centre of ``target_range`` (data-independent, free: an abstention). After
    the model halts, or ``max_queries`` rows are served, every new row is
    abstained on the same way. A row asked again gets the answer already
    released for it, free. The fitted object holds the teachers and is as
    secret as the training data.

    Parameters
    ----------
    estimator : estimator, default=None
        A regressor, or a binary classifier with ``predict_proba`` (targets in
        {0, 1}; the soft label is the probability of class 1). ``None`` means
        :class:`~sklearn.linear_model.Ridge`.
    n_estimators : int or "auto", default="auto"
        ``k``; ``"auto"``: the largest ``k`` keeping 20 rows per shard.
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In (0, 1).
    max_queries : int, default=None
        For the double test, an operational cap on distinct query rows (not
        part of the guarantee, except under Gaussian noise); for the
        per-query mean (``ClippedMean``) the rows its budget is split over,
        part of the guarantee, so fixed at ``fit``: ``None`` plans 1,000 (a
        public constant). ``predict`` (and ``score``) costs 1 unit per new
        distinct row; a row asked again is answered from the release cache,
        free.
    mechanism : {"auto", "soft_label", "clipped_mean"} or object, \
default="auto"
        ``"soft_label"`` or :class:`~dpsklearn.mechanisms.SoftLabelHistogram`:
        the double test (options ``gamma``, ``max_unstable``, ``fallback``,
        ``noisy_mean_share``, ``noise``). ``"clipped_mean"`` or
        :class:`~dpsklearn.mechanisms.ClippedMean`: each query's mean soft
        label (sensitivity ``1/k``) released with grid noise at its share of
        the budget over ``max_queries``. ``"auto"``: the double test where
        unanimous teachers can pass it (``ceil(k/2) - 1`` above its
        threshold, public numbers only), else the per-query mean; under
        ``"auto"`` the rows the mechanism leaves (abstentions, rows after a
        halt or the planned queries) are answered by a student fitted on the
        query rows and the values released for them (a clone of
        ``estimator``; a classifier is fitted on the values rounded to
        ``{0, 1}`` and answers its ``predict_proba[:, 1]``): post-processing,
        free, inside the same guarantee (``docs/privacy_contract.rst``,
        "Rows the mechanism does not answer").
    target_range : (float, float), default=None
        Public bounds ``(lo, hi)``, ``lo < hi``. ``None``: ``(0, 1)`` for a
        classifier ``estimator``; inferred from ``y`` with a
        :class:`PrivacyLeakWarning` for a regressor.
    accountant : PrivacyAccountant, default=None
    random_state : int, RandomState instance or None, default=None
        Seeds the partition and the teachers only.
    noise_random_state : int, default=None
        For tests only (warns with :class:`PrivacyLeakWarning`).
    n_jobs : int, default=None
    verbose : int, default=0

    Attributes
    ----------
    estimators_ : list of estimators
    n_estimators_ : int
    mechanism_ : SoftLabelHistogram or ClippedMean
        The mechanism options used (the choice of ``"auto"``).
    n_bins_ : int or None
        ``1/gamma`` (None for the per-query mean).
    soft_label_method_ : str
        ``"predict"`` or ``"predict_proba"``.
    target_range_ : tuple of float
    calibration_ : str
    threshold_ : float
        ``w`` (the threshold, ``noise_scale_``, ``query_noise_scale_``,
        ``max_unstable_``, ``sparse_vector_epsilon_`` and
        ``fallback_epsilon_`` are the double test's; the per-query mean
        sets those of its release instead).
    noise_scale_ : float
        Scale of the threshold noise (discrete Laplace ``DLap(lam)``, or the
        discrete Gaussian's sigma).
    query_noise_scale_ : float
        Scale of the query noise (``2 lam`` for the seed-structured
        calibrations; chosen with the threshold noise for ``"laplace"`` and
        ``"gaussian"``).
    max_unstable_ : int
        ``T`` in use.
    sparse_vector_epsilon_ : float
    fallback_epsilon_ : float
        Epsilon of each ``noisy_mean`` answer (0 for ``"midpoint"``).
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : SoftLabelTest, GridLaplaceRelease or GridGaussianRelease
        The calibrated mechanism (public figures only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import SoftLabelHistogram, SoftLabelPrivateRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 3))
    >>> y = X[:, 0] + 0.1 * rng.normal(size=4000)
    >>> reg = SoftLabelPrivateRegressor(
    ...     n_estimators=40, epsilon=1.0, target_range=(-4, 4),
    ...     mechanism=SoftLabelHistogram(gamma=0.25), random_state=0).fit(X, y)
    >>> values, abstained = reg.predict(X[:5], return_abstained=True)
    >>> values.shape, abstained.dtype
    ((5,), dtype('bool'))
    """

    _parameter_constraints: dict = {
        **ENSEMBLE_CONSTRAINTS,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "mechanism": [
            StrOptions({"auto", "soft_label", "clipped_mean"}),
            MechanismOptions,
        ],
        "target_range": ["array-like", None],
    }

    #: The mechanisms this estimator runs, by shorthand.
    _mechanisms = {"soft_label": SoftLabelHistogram, "clipped_mean": ClippedMean}

    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int | Literal["auto"] = "auto",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        max_queries: int | None = None,
        mechanism: str | MechanismOptions = "auto",
        target_range: ArrayLike | None = None,
        accountant: Any = None,
        random_state: int | np.random.RandomState | None = None,
        noise_random_state: int | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.delta = delta
        self.max_queries = max_queries
        self.mechanism = mechanism
        self.target_range = target_range
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _base_estimator(self):
        return Ridge() if self.estimator is None else self.estimator

    # -- fit -----------------------------------------------------------------
    def _validate_soft_label_source(self):
        """``"predict_proba"`` for a classifier base, ``"predict"`` for a regressor."""
        base = self._base_estimator()
        if not is_classifier(base):
            return "predict"
        if not hasattr(base, "predict_proba"):
            raise TypeError(
                f"estimator={base!r} is a classifier without predict_proba; "
                "SoftLabelPrivateRegressor takes a classifier's soft label "
                "from predict_proba[:, 1]. Use a classifier with predict_proba "
                "(e.g. SVC(probability=True)) or a regressor."
            )
        return "predict_proba"

    def _validate_targets(self, X, y, method):
        if is_dask_collection(X) or is_dask_collection(y):
            return self._validate_dask_targets(X, y, method)
        if method == "predict":
            y = check_regression_targets(y)
            X, y = self._validate_input(X, y, y_numeric=True)
            return X, y, check_target_range(self.target_range, y, type(self).__name__)
        X, y = self._validate_input(X, y)
        labels = np.unique(y)
        if not np.all(np.isin(labels, [0, 1])):
            raise ValueError(
                "with a classifier estimator, y must be binary with values in "
                "{0, 1} (the soft label is the probability of class 1)."
            )
        target_range = (0.0, 1.0) if self.target_range is None else self.target_range
        return X, y.astype(np.int64), check_target_range(target_range, y, "")

    def _validate_dask_targets(self, X, y, method):
        """Dask ``X, y`` (``docs/cluster.rst``): checked on the workers.

        A regressor's targets need the public ``target_range`` (never read
        from ``y``); a classifier's labels are class indices into ``{0, 1}``,
        any other label refused on the workers, before the spend.
        """
        target_range = self.target_range
        if method == "predict_proba" and target_range is None:
            target_range = (0.0, 1.0)
        X, targets = self._validate_dask_regression_data(
            X, y, target_range, "target_range"
        )
        if method == "predict_proba":
            targets = targets.encoded(np.array([0, 1]))
        return X, targets, check_target_range(target_range, None, "")

    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> SoftLabelPrivateRegressor:
        """Train the teachers on disjoint shards and open a fresh budget.

        Every input (the mechanism's options, ``target_range``, the
        estimator's soft-label method, the data) is validated, and the budget
        checked, before anything is spent.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a Dask DataFrame
            or 2-D array (teachers fitted where its partitions live,
            ``docs/cluster.rst``; a regressor's ``target_range`` then required)
        y : array-like of shape (n_samples,), or a Dask Series or 1-D array
            with ``X``'s partitions
            Real targets for a regressor ``estimator``; {0, 1} labels for a
            binary classifier.

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        auto = self.mechanism == "auto"
        options = (
            SoftLabelHistogram()
            if auto
            else resolve_mechanism(
                self.mechanism, self._mechanisms, owner=type(self).__name__
            )
        )
        method = self._validate_soft_label_source()
        X, y, (lo, hi) = self._validate_targets(X, y, method)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        n_estimators = self._resolve_n_estimators(n_samples)
        self._check_shard_size(n_samples, n_estimators)
        planned = self._choose(options, n_samples, n_estimators, auto)
        return FitPlan(
            planned.mechanism,
            X,
            y,
            delta=self.delta,
            training={
                "n_estimators": n_estimators,
                "n_classes": 2 if method == "predict_proba" else None,
            },
            serving={
                "max_queries": planned.max_queries,
                "caches": {"predict": ReleaseCache(dict(planned.cached_fields or {}))},
                "on_exhausted": "abstain",
                "fill": lo + 0.5 * (hi - lo),
            },
            attributes={
                "mechanism_": planned.options,
                # The double test's mechanism states its bins (n_bins_).
                "n_bins_": None,
                "soft_label_method_": method,
                "target_range_": (lo, hi),
                "_value_student_": (
                    ValueStudent(self._base_estimator()) if auto else None
                ),
            },
        )

    def _choose(self, options, n_samples, n_estimators, auto):
        """The mechanism's plan; ``"auto"``: the double test where it can pass,
        else the mean.

        Public numbers only: unanimous soft labels give distance
        ``ceil(k/2) - 1``; when that does not clear the test's threshold
        (``k``, ``epsilon``, ``delta``, ``T``), no query can pass, and
        ``"auto"`` releases each query's mean soft label with grid noise at
        its share of the budget over the planned queries
        (:class:`~dpsklearn.mechanisms.ClippedMean`, sensitivity ``1/k``).
        """
        planned_queries = (
            PLANNED_QUERIES if self.max_queries is None else self.max_queries
        )
        context = PlanContext(
            owner=type(self).__name__,
            epsilon=self.epsilon,
            delta=self.delta,
            n_samples=n_samples,
            n_classes=2,
            n_estimators=n_estimators,
            n_estimators_fixed=self.n_estimators != "auto",
            max_queries=self.max_queries,
            planned_queries=planned_queries,
            min_samples_per_shard=self._min_rows_per_teacher,
            value_range=(0.0, 1.0),  # soft labels
        )
        if not auto:
            return options.plan(context)
        # "auto" starts from SoftLabelHistogram() (_plan), whose test is known.
        # Its plan runs only where unanimous labels can pass, so its own
        # nothing-can-pass warning never repeats the choice below.
        test = cast(
            SoftLabelTest,
            options.calibrate(self.epsilon, self.delta, max_queries=self.max_queries),
        )
        unanimous = math.ceil(n_estimators / 2) - 1
        threshold = test.calibration.threshold
        if unanimous > threshold:
            return options.plan(context)
        warn_user(
            f"mechanism='auto' chose ClippedMean() on the soft labels: with "
            f"{n_estimators} teachers at epsilon={self.epsilon} even "
            f"unanimous soft labels (distance {unanimous}) cannot pass the "
            f"double stability test (its threshold is {threshold:.0f}), so each "
            f"query's mean soft label is released with noise, for "
            f"{planned_queries} planned queries; the rows after them are answered "
            "by a student of the released values (free).",
            UserWarning,
        )
        return ClippedMean().plan(context)

    def _train(self, plan):
        return self._fit_teachers(
            plan.X,
            plan.y,
            plan.training["n_estimators"],
            n_classes=plan.training["n_classes"],
            fuse=False,
        )

    # -- predict -------------------------------------------------------------
    def _soft_labels(self, X, method, target_range):
        """Teachers' soft labels in [0, 1], shape (n_teachers, n_queries)."""
        lo, hi = target_range
        soft = np.empty((len(self.estimators_), X.shape[0]))
        if method == "predict_proba":
            outputs = teacher_outputs(
                self.estimators_, X, method, width=2, n_jobs=self.n_jobs
            )
            for rows, proba in outputs:
                soft[:, rows] = proba[:, :, 1]
        else:
            outputs = teacher_outputs(self.estimators_, X, method, n_jobs=self.n_jobs)
            for rows, predictions in outputs:
                predictions = predictions.reshape(predictions.shape[0], -1)
                soft[:, rows] = (predictions - lo) / (hi - lo)
        return np.clip(soft, 0.0, 1.0)  # clip before binning

    def _value_fallback(self, X, sources):
        """The student of the released values answers the rows left (or None)."""
        student = getattr(self, "_value_student_", None)
        if student is None:
            return None
        lo, hi = self.target_range_

        def fallback(values, abstained):
            answered = np.flatnonzero(~abstained)
            if answered.size:
                student.add(take_rows(X, answered), (values[answered] - lo) / (hi - lo))
            from_student = np.zeros(len(values), dtype=bool)
            rows = np.flatnonzero(abstained)
            if rows.size:
                filled = student.predict(take_rows(X, rows))
                if filled is not None:
                    values = values.copy()
                    values[rows] = lo + filled * (hi - lo)
                    from_student[rows] = True
            sources["student"] = from_student
            return values, from_student

        return fallback

    def predict(
        self,
        X: ArrayLike,
        return_abstained: bool = False,
        return_source: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        """Private answers for ``X``, drawing on the model's budget.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public query points.
        return_abstained : bool, default=False
            Also return a boolean mask of the rows abstained on (both
            stability tests failed under the ``"midpoint"`` fallback, or the
            model had halted or spent ``max_queries``).

        return_source : bool, default=False
            Also return where each answer came from: ``"private"``,
            ``"student"`` (the student of the released values, under
            ``mechanism="auto"``) or ``"abstained"``.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
            In ``target_range``.
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.
        source : str ndarray of shape (n_queries,)
            Only when ``return_source=True``.
        """
        X = self._validate_query(X)
        lo, hi = self.target_range_
        method = self.soft_label_method_
        sources: dict = {}
        if self.mechanism_.reads_each_teacher:  # the double test's histogram

            def statistic(rows):
                return self._soft_labels(take_rows(X, rows), method, (lo, hi))

            fields = _FIELDS
        else:  # the mean soft label

            def statistic(rows):
                soft = self._soft_labels(take_rows(X, rows), method, (lo, hi))
                return soft.mean(axis=0)

            fields = _MEAN_FIELDS
        values, abstained = serve(
            self._serving_state_,
            "predict",
            n_rows(X),
            statistic,
            lambda v: lo + v["value"] * (hi - lo),
            fields=fields,
            keys=row_keys(X),
            fallback=self._value_fallback(X, sources),
        )
        if not (return_abstained or return_source):
            return values
        out: list = [values]
        if return_abstained:
            out.append(abstained)
        if return_source:
            out.append(answer_sources(abstained, sources.get("student")))
        return tuple(out)
