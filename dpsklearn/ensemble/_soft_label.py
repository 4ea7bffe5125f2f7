"""Soft-label queries with two stability tests.

Bassily, Thakkar and Thakurta (2018), Algorithms 6-8: the teachers' soft
labels in [0, 1] are binned; a query whose histogram is stable gets the
midpoint of the fullest bin for free, otherwise a second test on the shifted
partition decides (:class:`~dpsklearn.mechanisms.SoftLabelTest`, with the
corrections of ``docs/corrections.rst``, "Soft-label calibration").
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, is_classifier
from sklearn.linear_model import Ridge

from .._base import keeps_live_model
from .._param_validation import Interval, StrOptions
from .._validation import check_regression_targets, check_target_range, take_rows
from ..mechanisms import SoftLabelTest
from ..mechanisms._stability import _n_bins
from ..serving import ReleaseCache, row_keys, serve
from ..teachers import teacher_outputs
from ._base import ENSEMBLE_CONSTRAINTS, TeacherEnsembleMixin

__all__ = ["SoftLabelPrivateRegressor"]

_FIELDS = {"value": (np.float64, ()), "abstained": (np.bool_, ())}


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
    ``fallback`` and adds 2. The model halts when ``c`` reaches
    ``max_unstable``. Answers are mapped back to ``target_range``.

    Privacy: everything all calls to ``predict`` and ``score``
    ever release is ``(epsilon, delta)``-DP with respect to replacing one
    training record. ``c`` counts failed tests and every failed test ends one
    threshold draw, so at most ``max_unstable + 1`` draws happen: the sparse
    vector is calibrated for ``T + 1`` (``calibration``;
    :class:`~dpsklearn.mechanisms.SoftLabelTest`),
    with ``(1 - noisy_mean_share) epsilon`` when ``fallback="noisy_mean"``;
    that fallback answers each of the at most ``ceil(T/2)`` double failures
    with the grid-Laplace mean of the soft labels (sensitivity ``1/k``) at
    ``noisy_mean_share * epsilon / ceil(T/2)``. ``"midpoint"`` answers the
    centre of ``target_range`` (data-independent, free). A row asked again
    gets the answer already released for it, free. The fitted object holds
    the teachers and is as secret as the training data.

    Parameters
    ----------
    estimator : estimator, default=None
        A regressor, or a binary classifier with ``predict_proba`` (targets in
        {0, 1}; the soft label is the probability of class 1). ``None`` means
        :class:`~sklearn.linear_model.Ridge`.
    n_estimators : int or "auto", default="auto"
        ``k``; ``"auto"``: the largest ``k`` keeping ``min_samples_per_shard``
        rows per shard.
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In (0, 1).
    gamma : float, default=0.1
        Bin width; ``1/gamma`` must be an integer >= 2.
    max_queries : int, default=None
        Operational cap on distinct query rows (not part of the guarantee,
        except under ``calibration="gaussian"``). ``predict`` (and ``score``)
        costs 1 unit per new distinct row; a row asked again is answered from
        the release cache, free.
    max_unstable : int, default=100
        ``T``: the model halts when ``c`` reaches it.
    calibration : {"auto", "laplace", "paper", "exact", "pure", "gaussian"}, \
default="auto"
        Sparse vector calibration for ``T + 1`` draws (``docs/design.rst``,
        "The sparse vector test at full strength"); ``"auto"`` takes the
        admissible one with the smallest threshold. ``"gaussian"`` needs
        ``max_queries``, which then becomes part of the guarantee.
    fallback : {"midpoint", "noisy_mean"}, default="midpoint"
        Answer to a query that fails both tests.
    noisy_mean_share : float, default=0.5
        Share of ``epsilon`` reserved for ``fallback="noisy_mean"``.
    target_range : (float, float), default=None
        Public bounds ``(lo, hi)``, ``lo < hi``. ``None``: ``(0, 1)`` for a
        classifier ``estimator``; inferred from ``y`` with a
        :class:`PrivacyLeakWarning` for a regressor.
    on_exhausted : {"raise", "abstain"}, default="raise"
        When the model has halted (or ``max_queries`` is reached): raise
        :class:`BudgetExhaustedError` carrying the answers already paid for,
        or answer every further new row with the centre of ``target_range``,
        flagged as abstained (free: it does not depend on the data).
    min_samples_per_shard : int, default=20
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
    n_bins_ : int
        ``1/gamma``.
    soft_label_method_ : str
        ``"predict"`` or ``"predict_proba"``.
    target_range_ : tuple of float
    calibration_ : str
    threshold_ : float
        ``w``.
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
    privacy_mechanism_ : SoftLabelTest
        The calibrated mechanism (public figures only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import SoftLabelPrivateRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 3))
    >>> y = X[:, 0] + 0.1 * rng.normal(size=4000)
    >>> reg = SoftLabelPrivateRegressor(
    ...     n_estimators=40, epsilon=1.0, gamma=0.25, target_range=(-4, 4),
    ...     random_state=0).fit(X, y)
    >>> values, abstained = reg.predict(X[:5], return_abstained=True)
    >>> values.shape, abstained.dtype
    ((5,), dtype('bool'))
    """

    _parameter_constraints: dict = {
        **ENSEMBLE_CONSTRAINTS,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, 0.5, closed="right")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "calibration": [
            StrOptions({"auto", "laplace", "paper", "exact", "pure", "gaussian"})
        ],
        "fallback": [StrOptions({"midpoint", "noisy_mean"})],
        "noisy_mean_share": [Interval(Real, 0, 1, closed="neither")],
        "target_range": ["array-like", None],
        "on_exhausted": [StrOptions({"raise", "abstain"})],
    }

    def __init__(
        self,
        estimator=None,
        n_estimators="auto",
        *,
        epsilon=1.0,
        delta=1e-5,
        gamma=0.1,
        max_queries=None,
        max_unstable=100,
        calibration="auto",
        fallback="midpoint",
        noisy_mean_share=0.5,
        target_range=None,
        on_exhausted="raise",
        min_samples_per_shard=20,
        accountant=None,
        random_state=None,
        noise_random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.epsilon = epsilon
        self.delta = delta
        self.gamma = gamma
        self.max_queries = max_queries
        self.max_unstable = max_unstable
        self.calibration = calibration
        self.fallback = fallback
        self.noisy_mean_share = noisy_mean_share
        self.target_range = target_range
        self.on_exhausted = on_exhausted
        self.min_samples_per_shard = min_samples_per_shard
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

    @keeps_live_model
    def fit(self, X, y):
        """Train the teachers on disjoint shards and open a fresh budget.

        Every input (``gamma``, ``target_range``, the estimator's soft-label
        method, the data) is validated, and the budget checked, before
        anything is spent.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real targets for a regressor ``estimator``; {0, 1} labels for a
            binary classifier.

        Returns
        -------
        self : object
        """
        self._validate_params()
        n_bins = _n_bins(self.gamma)
        method = self._validate_soft_label_source()
        X, y, (lo, hi) = self._validate_targets(X, y, method)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        n_estimators = self._resolve_n_estimators(n_samples)
        mechanism = SoftLabelTest.calibrate(
            self.epsilon,
            self.delta,
            max_unstable=self.max_unstable,
            n_bins=n_bins,
            calibration=self.calibration,
            fallback=self.fallback,
            noisy_mean_share=self.noisy_mean_share,
            max_queries=self.max_queries,
        )
        if self.n_estimators == "auto":
            self._warn_if_nothing_can_pass(n_estimators, mechanism.calibration)
        accountant, events = self._reserve(mechanism, self.epsilon, self.delta)

        teachers = self._fit_teachers(
            X,
            y,
            n_estimators,
            n_classes=2 if method == "predict_proba" else None,
            fuse=False,
        )

        accountant.spend_events(events)
        state, _ = self._start_serving(
            mechanism,
            accountant,
            max_queries=self.max_queries,
            caches={"predict": ReleaseCache(_FIELDS)},
            on_exhausted=self.on_exhausted,
            fill=lo + 0.5 * (hi - lo),
        )
        self._set_fitted(
            {
                **teachers,
                "accountant_": accountant,
                "privacy_mechanism_": mechanism,
                **mechanism.fitted_attributes(),
                "n_bins_": n_bins,
                "soft_label_method_": method,
                "target_range_": (lo, hi),
                "_serving_state_": state,
            }
        )
        return self

    def _warn_if_nothing_can_pass(self, n_estimators, calibration):
        best_distance = math.ceil(n_estimators / 2) - 1  # unanimous teachers
        if best_distance <= calibration.threshold:
            warnings.warn(
                f"n_estimators='auto' chose k={n_estimators} teachers (limited "
                f"by min_samples_per_shard={self.min_samples_per_shard}); even "
                f"unanimous soft labels give distance {best_distance}, below "
                f"the stability threshold w={calibration.threshold:.0f} "
                f"({calibration.name} calibration, max_unstable="
                f"{self.max_unstable}), so almost every query goes to the "
                f"fallback ({self.fallback!r}).",
                UserWarning,
                stacklevel=4,
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

    def predict(self, X, return_abstained=False):
        """Private answers for ``X``, drawing on the model's budget.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public query points.
        return_abstained : bool, default=False
            Also return a boolean mask of the rows answered by ``fallback``
            (both stability tests failed).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
            In ``target_range``.
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.

        Raises
        ------
        BudgetExhaustedError
            When the model halts (``c`` reaches ``max_unstable``) or reaches
            ``max_queries`` part-way and ``on_exhausted="raise"``;
            ``partial_predictions`` holds the answers already paid for.
        """
        X = self._validate_query(X)
        lo, hi = self.target_range_
        method = self.soft_label_method_
        values, abstained = serve(
            self._serving_state_,
            "predict",
            X.shape[0],
            lambda rows: self._soft_labels(take_rows(X, rows), method, (lo, hi)),
            lambda v: lo + v["value"] * (hi - lo),
            fields=_FIELDS,
            keys=row_keys(X),
        )
        if return_abstained:
            return values, abstained
        return values
