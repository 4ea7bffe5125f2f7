"""Private regression by the clipped mean of the teachers (Dwork and Feldman 2018).

Each teacher's prediction is clipped to the public ``target_range`` before
the ``k`` predictions are averaged, so one record moves the mean by at most
``(hi - lo) / k``; the mean is released per query with grid Laplace or
discrete Gaussian noise, whichever is less noisy for the budget
(:func:`~dpsklearn.mechanisms.clipped_mean_release`; ``docs/design.rst``,
"Per-query releases" and "Gaussian per-query releases").
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

from .._base import keeps_live_model
from .._param_validation import StrOptions
from .._validation import check_regression_targets, check_target_range
from ..mechanisms import clipped_mean_release
from ..serving import ReleaseCache
from ..teachers import teacher_outputs
from ._private_prediction import PRIVATE_PREDICTION_CONSTRAINTS, _PrivatePredictionBase

__all__ = ["PrivatePredictionRegressor"]

#: The regressor's calibrations: the Laplace splits of the classifier, and
#: the discrete Gaussian release.
REGRESSOR_CALIBRATIONS = {
    *PRIVATE_PREDICTION_CONSTRAINTS["calibration"][0].options,
    "gaussian",
}


class PrivatePredictionRegressor(_PrivatePredictionBase, RegressorMixin, BaseEstimator):
    """Private regressor: the clipped mean of the teachers, with grid noise.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards. Each
    query's answer is the mean of the teachers' predictions, each clipped to
    ``target_range = (lo, hi)`` *before* averaging, so that replacing one
    record moves the mean by at most ``(hi - lo) / k`` (Dwork and Feldman
    2018, Theorem 4
    and Lemma 2: averaging ``k`` disjoint teachers divides the stability rate
    by ``k``). It is rounded to a grid of step ``g`` and released with
    integer noise in grid units, ``units = floor(((hi - lo)/k)/g) + 1``,
    clipped to the range: discrete Laplace ``DLap(units/eps_q)`` at a
    per-query epsilon, or discrete Gaussian ``N_Z(0, sigma_u^2)`` with
    ``sigma_u = units sqrt(m / (2 rho))`` (``docs/design.rst``, "Gaussian
    per-query releases"). ``calibration="auto"`` takes the one with the
    smaller noise and records it in ``calibration_``.

    Privacy: everything all calls to ``predict`` and ``score``
    ever release is ``(epsilon, delta)``-DP with respect to replacing one
    training record; ``max_queries`` rows are paid for (Laplace: ``eps_q``
    each by basic composition, or ``eps_q^2/2``-zCDP each, composed by zCDP
    or RDP; Gaussian: ``units^2/(2 sigma_u^2)``-zCDP each, composed by RDP
    or zCDP), a row asked again is
    answered from the release cache for free, and the whole budget is
    reserved at ``fit``. The fitted object holds the teachers and is as
    secret as the training data.

    Parameters
    ----------
    estimator : estimator, default=None
        Base regressor; ``None`` means :class:`~sklearn.linear_model.Ridge`.
    n_estimators : int or "auto", default="auto"
        ``k``; ``"auto"``: the largest ``k`` keeping ``min_samples_per_shard``
        rows per shard (more teachers, less noise).
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In [0, 1); ``0`` allows only basic composition.
    max_queries : int, default=1000
        Rows the budget pays for (part of the guarantee; ``None`` refused).
        ``predict`` (and ``score``) costs 1 unit per new distinct row; a row
        asked again is answered from the release cache, free.
    calibration : {"auto", "basic", "zcdp", "rdp", "gaussian"}, default="auto"
        ``"basic"``, ``"zcdp"``, ``"rdp"``: grid Laplace at the per-query
        epsilon of that split (:func:`~dpsklearn.accounting.per_release_epsilon`,
        as in :class:`PrivatePredictionClassifier`). ``"gaussian"``: discrete
        Gaussian noise, ``sigma`` certified by dp_accounting's RDP accountant
        or zCDP, whichever allows less noise (needs ``delta > 0``).
        ``"auto"``: of the Laplace release at ``per_release_epsilon``'s
        ``"auto"`` split and the Gaussian one, the one whose noise has the
        smaller standard deviation (:func:`~dpsklearn.mechanisms.value_release`);
        Laplace for a few queries, Gaussian for many.
    target_range : (float, float), default=None
        Public bounds ``(lo, hi)``, ``lo < hi``. ``None`` infers them from
        ``y`` with a :class:`PrivacyLeakWarning`.
    min_samples_per_shard : int, default=20
    accountant : PrivacyAccountant, default=None
    random_state : int, RandomState instance or None, default=None
    noise_random_state : int, default=None
        For tests only (warns with :class:`PrivacyLeakWarning`).
    n_jobs : int, default=None
    verbose : int, default=0

    Attributes
    ----------
    estimators_ : list of estimators
    n_estimators_ : int
    epsilon_per_query_ : float or None
        The per-query epsilon of the Laplace release; ``None`` for the
        Gaussian one (a Gaussian release has no pure epsilon).
    calibration_ : str
        The calibration used: ``"basic"``, ``"zcdp"``, ``"rdp"`` or ``"kov"``
        (grid Laplace; ``"kov"`` is the optimal composition of the pure
        per-query releases, Kairouz, Oh and Viswanath 2015) or
        ``"gaussian"``; with ``calibration="auto"``, the one chosen.
    target_range_ : tuple of float
    sensitivity_ : float
        ``(hi - lo) / k``.
    grid_step_ : float
    noise_scale_ : float
        Scale of the released noise in target units: the Laplace scale
        ``grid_step_ * units / epsilon_per_query_``, or the Gaussian
        ``sigma_``.
    noise_std_ : float
        Standard deviation of the released noise in target units (what
        ``calibration="auto"`` compares).
    sigma_ : float
        Only for ``calibration_ == "gaussian"``: ``grid_step_ * sigma_u``.
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : GridLaplaceRelease or GridGaussianRelease
        The calibrated mechanism (public figures only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from dpsklearn import PrivatePredictionRegressor
    >>> X, y = make_regression(n_samples=2000, n_features=5, random_state=0)
    >>> reg = PrivatePredictionRegressor(
    ...     n_estimators=100, epsilon=1.0, max_queries=10,
    ...     target_range=(-300, 300), random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    >>> reg.calibration_, round(reg.noise_std_, 1)  # Gaussian from 9 queries on
    ('gaussian', 76.9)
    >>> one = PrivatePredictionRegressor(
    ...     n_estimators=100, epsilon=1.0, max_queries=1,
    ...     target_range=(-300, 300), random_state=0).fit(X, y)
    >>> one.calibration_, round(one.noise_std_, 1)
    ('basic', 8.5)
    """

    _parameter_constraints: dict = {
        **PRIVATE_PREDICTION_CONSTRAINTS,
        "calibration": [StrOptions(REGRESSOR_CALIBRATIONS)],
        "target_range": ["array-like", None],
    }

    def __init__(
        self,
        estimator=None,
        n_estimators="auto",
        *,
        epsilon=1.0,
        delta=1e-5,
        max_queries=1000,
        calibration="auto",
        target_range=None,
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
        self.max_queries = max_queries
        self.calibration = calibration
        self.target_range = target_range
        self.min_samples_per_shard = min_samples_per_shard
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _base_estimator(self):
        return Ridge() if self.estimator is None else self.estimator

    @keeps_live_model
    def fit(self, X, y):
        """Train the teachers on disjoint shards and reserve the whole budget.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        self._check_max_queries()
        y = check_regression_targets(y)
        X, y = self._validate_input(X, y, y_numeric=True)
        lo, hi = check_target_range(self.target_range, y, type(self).__name__, 4)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=False)
        n_estimators = self._resolve_n_estimators(n_samples)
        mechanism = clipped_mean_release(
            self.epsilon,
            self.delta,
            self.max_queries,
            target_range=(lo, hi),
            n_teachers=n_estimators,
            calibration=self.calibration,
        )
        accountant, events = self._reserve(mechanism, self.epsilon, self.delta)

        teachers = self._fit_teachers(X, y, n_estimators)

        accountant.spend_events(events)
        state, _ = self._start_serving(
            mechanism,
            accountant,
            max_queries=self.max_queries,
            caches={"predict": ReleaseCache({"value": (np.float64, ())})},
        )
        self._set_fitted(
            {
                **teachers,
                "accountant_": accountant,
                "privacy_mechanism_": mechanism,
                **mechanism.fitted_attributes(),
                "target_range_": (lo, hi),
                "_serving_state_": state,
            }
        )
        return self

    def _clipped_mean(self, X):
        """The mean of the teachers' predictions, each clipped to the range first."""
        lo, hi = self.target_range_
        total = np.zeros(X.shape[0])
        outputs = teacher_outputs(self.estimators_, X, "predict", n_jobs=self.n_jobs)
        for chunk, predictions in outputs:
            predictions = predictions.reshape(predictions.shape[0], -1)
            total[chunk] = np.clip(predictions, lo, hi).sum(axis=0)
        return total / len(self.estimators_)

    def predict(self, X):
        """Private predictions for ``X``, one query unit per new distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)

        Raises
        ------
        BudgetExhaustedError
            When ``max_queries`` rows are spent part-way; the error carries
            the answers already paid for in ``partial_predictions``.
        """
        X = self._validate_query(X)
        return self._serve(X, "predict", self._clipped_mean, lambda v: v["value"])
