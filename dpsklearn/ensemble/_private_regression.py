"""Private regression by the clipped mean of the teachers (Dwork and Feldman 2018).

Each teacher's prediction is clipped to a range before the ``k`` predictions
are averaged, so one record moves the mean by at most the range's width over
``k``; the mean is released per query with grid Laplace or discrete Gaussian
noise, whichever is less noisy for the budget. The range is, by default, a
band the teachers' predictions occupy, released privately once
(:class:`~dpsklearn.mechanisms.AdaptiveRange`, ``docs/regression.rst``), or
the public ``target_range`` itself
(:class:`~dpsklearn.mechanisms.ClippedMean`; ``docs/design.rst``,
"Per-query releases" and "Gaussian per-query releases").
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

from .._base import FitPlan, keeps_live_model
from .._dask_input import is_dask_collection
from .._param_validation import StrOptions
from .._validation import check_regression_targets, check_target_range
from ..mechanisms import (
    AdaptiveRange,
    ClippedMean,
    MechanismOptions,
    resolve_mechanism,
)
from ..planning import ASSUMED_SPREAD_SHARE, plan_regression_answers
from ..serving import ReleaseCache
from ..teachers import teacher_outputs
from ._private_prediction import PRIVATE_PREDICTION_CONSTRAINTS, _PrivatePredictionBase

__all__ = ["PrivatePredictionRegressor"]


class PrivatePredictionRegressor(_PrivatePredictionBase, RegressorMixin, BaseEstimator):
    """Private regressor: the clipped mean of the teachers, with grid noise.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards. Each
    query's answer is the mean of the teachers' predictions, each clipped to
    a range ``(lo, hi)`` *before* averaging (by default a band released
    privately, see ``mechanism``; else ``target_range``), so that replacing
    one record moves the mean by at most ``(hi - lo) / k`` (Dwork and Feldman
    2018, Theorem 4
    and Lemma 2: averaging ``k`` disjoint teachers divides the stability rate
    by ``k``). It is rounded to a grid of step ``g`` and released with
    integer noise in grid units, ``units = floor(((hi - lo)/k)/g) + 1``,
    clipped to the range: discrete Laplace ``DLap(units/eps_q)`` at a
    per-query epsilon, or discrete Gaussian ``N_Z(0, sigma_u^2)`` with
    ``sigma_u = units sqrt(m / (2 rho))`` (``docs/design.rst``, "Gaussian
    per-query releases"). ``ClippedMean(noise="auto")`` takes the one with
    the smaller noise and records it in ``calibration_``.

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
        ``k``; ``"auto"``: the largest ``k`` keeping 10 rows per shard (more
        teachers, less noise on each answer).
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In [0, 1); ``0`` allows only basic composition.
    max_queries : int, default=1000
        Rows the budget pays for (part of the guarantee; ``None`` refused).
        ``predict`` (and ``score``) costs 1 unit per new distinct row; a row
        asked again is answered from the release cache, free. Rows after the
        last unit are abstained on: they get the centre of ``target_range_``
        (free, data-independent), marked by ``return_abstained``.
    mechanism : {"adaptive_range", "clipped_mean"} or object, \
default="adaptive_range"
        How each answer is released.
        :class:`~dpsklearn.mechanisms.AdaptiveRange` (default): a tenth of
        the budget releases, once, the band the teachers' predictions occupy
        (two private quantiles on the first batch of queries), and every
        answer is the mean of the teachers' predictions clipped to that
        band, whose noise is proportional to the band's width rather than
        the whole ``target_range``'s (``docs/regression.rst``, "Adaptive
        clipping of regression answers").
        :class:`~dpsklearn.mechanisms.ClippedMean`: the mean clipped to
        ``target_range`` itself (Dwork and Feldman 2018). Either way the
        composition that splits the budget is the tightest admissible one,
        recorded in ``calibration_``. ``fit`` refuses, before anything is
        spent, when each answer's planned noise would cost more R^2 than the
        teachers are assumed to explain (the answers would lose to a
        constant; ``docs/regression.rst``, "When answers lose to a
        constant"); the target's spread is the mechanism's ``target_std``
        when stated, else an eighth of ``target_range``'s width.
    target_range : (float, float), default=None
        Public bounds ``(lo, hi)``, ``lo < hi``. ``None`` infers them from
        ``y`` with a :class:`PrivacyLeakWarning`.
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
    mechanism_ : ClippedMean
        The mechanism options used.
    epsilon_per_query_ : float or None
        The per-query epsilon of the Laplace release; ``None`` for the
        Gaussian one (a Gaussian release has no pure epsilon).
    calibration_ : str
        The calibration used: ``"basic"``, ``"zcdp"``, ``"rdp"`` or ``"kov"``
        (grid Laplace; ``"kov"`` is the optimal composition of the pure
        per-query releases, Kairouz, Oh and Viswanath 2015) or
        ``"gaussian"``: the one chosen.
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
        ``noise="auto"`` compares).
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
    >>> from dpsklearn import ClippedMean, PrivatePredictionRegressor
    >>> X, y = make_regression(n_samples=20_000, n_features=5, random_state=0)
    >>> reg = PrivatePredictionRegressor(
    ...     epsilon=1.0, max_queries=100, target_range=(-500, 500),
    ...     random_state=0).fit(X, y)
    >>> reg.n_estimators_, reg.range_skipped_  # 10 rows per teacher; a band bought
    (2000, False)
    >>> reg.predict(X[:3]).shape
    (3,)
    >>> few = PrivatePredictionRegressor(
    ...     n_estimators=100, epsilon=1.0, max_queries=10, mechanism=ClippedMean(),
    ...     target_range=(-300, 300), random_state=0)
    >>> few.fit(X, y)  # noise 70.9 against a spread assumed to be 600 / 8
    Traceback (most recent call last):
    ...
    ValueError: PrivatePredictionRegressor refused before spending any budget: ...
    >>> plain = few.set_params(mechanism=ClippedMean(target_std=150)).fit(X, y)
    >>> plain.calibration_, round(plain.noise_std_, 1)  # Gaussian from 9 queries on
    ('gaussian', 70.9)
    >>> one = PrivatePredictionRegressor(
    ...     n_estimators=100, epsilon=1.0, max_queries=1, mechanism=ClippedMean(),
    ...     target_range=(-300, 300), random_state=0).fit(X, y)
    >>> one.calibration_, round(one.noise_std_, 1)
    ('basic', 8.5)
    """

    _parameter_constraints: dict = {
        **PRIVATE_PREDICTION_CONSTRAINTS,
        "mechanism": [
            StrOptions({"adaptive_range", "clipped_mean"}),
            MechanismOptions,
        ],
        "target_range": ["array-like", None],
    }

    #: The mechanisms this estimator runs, by shorthand.
    _mechanisms = {"adaptive_range": AdaptiveRange, "clipped_mean": ClippedMean}
    #: Ten rows per teacher for ``n_estimators="auto"``: each answer's noise
    #: falls as 1/k while a teacher's error grows slowly as its shard shrinks
    #: (measured on validation rows: docs/regression.rst, "Defaults").
    _min_rows_per_teacher = 10

    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int | Literal["auto"] = "auto",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        max_queries: int | None = 1000,
        mechanism: str | MechanismOptions = "adaptive_range",
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

    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> PrivatePredictionRegressor:
        """Train the teachers on disjoint shards and reserve the whole budget.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a Dask DataFrame
            or 2-D array (teachers fitted where its partitions live,
            ``docs/cluster.rst``; ``target_range`` then required)
        y : array-like of shape (n_samples,), or a Dask Series or 1-D array
            with ``X``'s partitions

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        self._check_max_queries()
        options = resolve_mechanism(
            self.mechanism, self._mechanisms, owner=type(self).__name__
        )
        if is_dask_collection(X) or is_dask_collection(y):
            # Teachers fitted where the partitions live (docs/cluster.rst);
            # the public target_range is required, never read from y.
            X, y = self._validate_dask_regression_data(
                X, y, self.target_range, "target_range"
            )
        else:
            y = check_regression_targets(y)
            X, y = self._validate_input(X, y, y_numeric=True)
        lo, hi = check_target_range(self.target_range, y, type(self).__name__)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=False)
        self._check_teacher(n_samples, classifier=False)
        n_estimators = self._resolve_n_estimators(n_samples)
        self._check_shard_size(n_samples, n_estimators)
        mechanism = options.calibrate(
            self.epsilon,
            self.delta,
            max_queries=self.max_queries,
            target_range=(lo, hi),
            n_teachers=n_estimators,
        )
        self._refuse_if_answers_lose_to_constant(options, (lo, hi), n_estimators)
        return FitPlan(
            mechanism,
            X,
            y,
            delta=self.delta,
            training={"n_estimators": n_estimators},
            serving={
                "max_queries": self.max_queries,
                "caches": {"predict": ReleaseCache({"value": (np.float64, ())})},
                "on_exhausted": "abstain",
                "fill": lo + 0.5 * (hi - lo),
            },
            attributes={"target_range_": (lo, hi), "mechanism_": options},
        )

    def _train(self, plan):
        return self._fit_teachers(plan.X, plan.y, plan.training["n_estimators"])

    #: Whether ``fit`` refuses answers expected to lose to a constant. A
    #: knowledge-transfer student turns it off on its cloned teacher: those
    #: answers label public rows for a student, which averages their noise.
    _refuses_answers_below_constant = True

    def _refuse_if_answers_lose_to_constant(self, options, target_range, n_estimators):
        """Refuse, before anything is spent, answers expected to lose to a constant.

        An answer's squared error is the teachers' error plus the noise's
        variance ``s^2``; the best constant's is the target's variance. So
        the answers beat a constant only while ``s^2`` stays below the share
        of the target's variance the teachers explain. From public numbers
        only (``docs/regression.rst``, "When answers lose to a constant"):
        ``s`` is planned from the range, ``k``, ``max_queries`` and the
        budget (the adaptive range at its worst case, the whole range); the
        target's spread is the mechanism's ``target_std`` when stated, else
        an eighth of the range's width (below every table measured); the
        teachers are assumed to explain half of its variance
        (``dpsklearn.planning.ASSUMED_TEACHER_R2``).
        """
        if not self._refuses_answers_below_constant:
            return
        lo, hi = target_range
        stated = getattr(options, "target_std", None)
        spread = ASSUMED_SPREAD_SHARE * (hi - lo) / 4.0 if stated is None else stated
        plan = plan_regression_answers(
            target_range=(lo, hi),
            n_teachers=n_estimators,
            max_queries=self.max_queries,
            epsilon=self.epsilon,
            delta=self.delta,
            aggregate=options.regression_aggregate,
            range_share=getattr(options, "range_share", 0.1),
            target_std=spread,
        )
        if not plan.loses_to_constant:
            return
        assumed = (
            "the spread you stated (target_std)"
            if stated is not None
            else "an eighth of target_range's width, the smallest spread assumed"
        )
        raise ValueError(
            f"{type(self).__name__} refused before spending any budget: at "
            f"epsilon={self.epsilon:g} with {n_estimators} teachers and "
            f"{self.max_queries} planned answers, {plan.message()} (The target's "
            f"spread taken is {assumed}; if you know it is larger, state it "
            "as the mechanism's target_std, e.g. "
            "mechanism=AdaptiveRange(target_std=...).)"
        )

    def _teacher_predictions(self, X):
        """The teachers' predictions, clipped to the range: ``(n_rows, k)``."""
        lo, hi = self.target_range_
        out = np.empty((X.shape[0], len(self.estimators_)))
        for chunk, predictions in teacher_outputs(self.estimators_, X, "predict"):
            predictions = predictions.reshape(predictions.shape[0], -1)
            out[chunk] = np.clip(predictions, lo, hi).T
        return out

    def _statistic(self, X):
        """What the mechanism reads: every teacher's prediction, or their mean."""
        if self.mechanism_.reads_each_teacher:
            return self._teacher_predictions(X)
        return self._clipped_mean(X)

    def _clipped_mean(self, X):
        """The mean of the teachers' predictions, each clipped to the range first."""
        lo, hi = self.target_range_
        total = np.zeros(X.shape[0])
        outputs = teacher_outputs(self.estimators_, X, "predict", n_jobs=self.n_jobs)
        for chunk, predictions in outputs:
            predictions = predictions.reshape(predictions.shape[0], -1)
            total[chunk] = np.clip(predictions, lo, hi).sum(axis=0)
        return total / len(self.estimators_)

    def predict(
        self, X: ArrayLike, return_abstained: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Private predictions for ``X``, one query unit per new distinct row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        return_abstained : bool, default=False
            Also return the mask of rows abstained on (answered with the
            centre of ``target_range_`` because ``max_queries`` was spent).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.
        """
        X = self._validate_query(X)
        values, abstained = self._serve(
            X, "predict", self._statistic, lambda v: v["value"]
        )
        if return_abstained:
            return values, abstained
        return values
