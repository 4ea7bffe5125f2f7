"""Soft-label queries with two stability tests (SPEC 3.4).

Seed 002 (Bassily, Thakkar, Thakurta 2018), Algorithms 6-8: the teachers'
soft labels in [0, 1] are binned on a gamma-partition; a query whose
histogram is stable (sparse vector test on its distance to instability)
gets the midpoint of the fullest bin for free. Otherwise a second test runs
on the partition shifted by gamma/2, with a fresh threshold; a pass there
answers the shifted bin's midpoint and costs one failed test, a second fail
abstains and costs two. Corrections (SPEC 2.2, 3.4): the replace-one
distance ``max(0, ceil(gap/2) - 1)``, soft labels clipped to [0, 1] before
binning, and a calibration for ``T + 1`` threshold draws (the last query may
add 2 to the count), with the threshold's factor 2 that seed 002's
Algorithm 6 drops.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone, is_classifier
from sklearn.linear_model import Ridge
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import (
    ENSEMBLE_CONSTRAINTS,
    TeacherEnsembleMixin,
    check_regression_targets,
)
from ._serving import ReleaseCache, ServingState, row_keys
from .accounting import PrivacyEvent
from .calibration import calibrate_sparse_vector
from .exceptions import BudgetExhaustedError
from .noise import (
    DiscreteLaplaceStream,
    default_grid_step,
    grid_laplace,
    make_noise_generators,
)
from .private_prediction import check_dense, check_target_range
from .sharding import fit_teachers, partition_indices, teacher_outputs, teacher_seeds
from .sparse_vector import SparseVectorEngine
from .votes import distance_from_gap, majority_and_gap, vote_counts

__all__ = ["SoftLabelPrivateRegressor", "soft_label_histograms"]


def _n_bins(gamma):
    """``1/gamma`` as an integer >= 2, or a ValueError naming gamma."""
    gamma = float(gamma)
    n_bins = round(1.0 / gamma) if 0 < gamma <= 0.5 else 0
    if n_bins < 2 or not math.isclose(n_bins * gamma, 1.0, rel_tol=1e-9):
        raise ValueError(
            f"gamma must be 1/b for an integer b >= 2 (0.5, 1/3, 0.25, 0.2, "
            f"..., 0.1, ...), got gamma={gamma!r}."
        )
    return n_bins


def soft_label_histograms(soft_labels, n_bins):
    """Vote histograms of soft labels on the gamma- and the shifted partition.

    With ``gamma = 1/n_bins`` (SPEC 3.4; seed 002, Definition 5.1): the
    gamma-partition has bins ``[(j-1) gamma, j gamma)``, ``j = 1..n_bins``,
    the last one closed; the shifted partition moves them right by
    ``gamma/2`` and drops the two half-bins at the ends, leaving
    ``n_bins - 1`` bins ``[(j - 1/2) gamma, (j + 1/2) gamma)``; values in
    ``[0, gamma/2)`` or ``[1 - gamma/2, 1]`` are not counted there. Soft
    labels are clipped to [0, 1] first (a negative bin index would wrap
    around).

    Parameters
    ----------
    soft_labels : array-like of shape (n_teachers, n_queries)
    n_bins : int
        ``1/gamma`` (>= 2).

    Returns
    -------
    counts : int64 ndarray of shape (n_queries, n_bins)
    shifted_counts : int64 ndarray of shape (n_queries, n_bins - 1)

    Examples
    --------
    >>> from dpsklearn.soft_label import soft_label_histograms
    >>> counts, shifted = soft_label_histograms([[0.1], [0.3], [0.6], [1.0]], 4)
    >>> counts.tolist(), shifted.tolist()
    ([[1, 1, 1, 1]], [[1, 1, 0]])
    """
    scaled = np.clip(np.asarray(soft_labels, dtype=np.float64), 0.0, 1.0) * n_bins
    if scaled.ndim != 2:
        raise ValueError("soft_labels must be 2-D (n_teachers, n_queries).")
    first = np.minimum(np.floor(scaled), n_bins - 1).astype(np.int64)
    shifted = np.floor(scaled - 0.5).astype(np.int64)
    # Half-bins at the ends go to a spare column, then dropped.
    outside = (shifted < 0) | (shifted > n_bins - 2)
    shifted = np.where(outside, n_bins - 1, shifted)
    return (
        vote_counts(first, n_bins),
        vote_counts(shifted, n_bins)[:, : n_bins - 1],
    )


def _distance(counts):
    """``max(0, ceil(gap/2) - 1)`` (SPEC 2.2) and the fullest bin (lowest on ties)."""
    fullest, gap = majority_and_gap(counts)
    return distance_from_gap(gap), fullest


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

    Privacy (SPEC 1, 3.4): everything all calls to ``predict`` and ``score``
    ever release is ``(epsilon, delta)``-DP with respect to replacing one
    training record. ``c`` counts failed tests and every failed test ends one
    threshold draw, so at most ``max_unstable + 1`` draws happen: the sparse
    vector is calibrated for ``T + 1`` exactly as SPEC 2.4 (``calibration``),
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
        Operational cap on distinct query rows (not part of the guarantee).
    max_unstable : int, default=100
        ``T``: the model halts when ``c`` reaches it.
    calibration : {"auto", "paper", "exact", "pure"}, default="auto"
        Sparse vector calibration for ``T + 1`` draws (SPEC 2.4).
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
        ``lam``: threshold noise ``DLap(lam)``, query noise ``DLap(2 lam)``.
    sparse_vector_epsilon_ : float
    fallback_epsilon_ : float
        Epsilon of each ``noisy_mean`` answer (0 for ``"midpoint"``).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.soft_label import SoftLabelPrivateRegressor
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
        "calibration": [StrOptions({"auto", "paper", "exact", "pure"})],
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = False
        return tags

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
            X, y = validate_data(self, X, y, y_numeric=True)
            return X, y, check_target_range(self.target_range, y, type(self).__name__)
        X, y = validate_data(self, X, y)
        labels = np.unique(y)
        if not np.all(np.isin(labels, [0, 1])):
            raise ValueError(
                "with a classifier estimator, y must be binary with values in "
                "{0, 1} (the soft label is the probability of class 1)."
            )
        target_range = (0.0, 1.0) if self.target_range is None else self.target_range
        return X, y.astype(np.int64), check_target_range(target_range, y, "")

    def _privacy_events(self, calibration, fallback_epsilon):
        label = type(self).__name__
        events = [
            PrivacyEvent(
                epsilon=calibration.epsilon,
                delta=float(self.delta),
                kind="sparse_vector",
                label=label,
            )
        ]
        if self.fallback == "noisy_mean":
            events.append(
                PrivacyEvent(
                    epsilon=fallback_epsilon,
                    delta=0.0,
                    kind="laplace",
                    label=label,
                    count=math.ceil(self.max_unstable / 2),
                )
            )
        return events

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
        self._start_fit()
        n_bins = _n_bins(self.gamma)
        method = self._validate_soft_label_source()
        check_dense(self, X)
        X, y, (lo, hi) = self._validate_targets(X, y, method)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        n_estimators = self._resolve_n_estimators(n_samples)

        share = self.noisy_mean_share if self.fallback == "noisy_mean" else 0.0
        # SPEC 3.4: c counts failed tests and the last query may add 2, so at
        # most T + 1 thresholds are drawn: calibrate for T + 1.
        calibration = calibrate_sparse_vector(
            self.epsilon * (1.0 - share),
            self.delta,
            self.max_unstable + 1,
            self.calibration,
        )
        # At most ceil(T/2) queries fail both tests before c reaches T.
        fallback_epsilon = self.epsilon * share / math.ceil(self.max_unstable / 2)
        if self.n_estimators == "auto":
            self._warn_if_nothing_can_pass(n_estimators, calibration)
        accountant = self._get_accountant(self.epsilon, self.delta)
        events = self._privacy_events(calibration, fallback_epsilon)
        self._check_budget_available(accountant, events)

        rng = check_random_state(self.random_state)
        shards = partition_indices(n_samples, n_estimators, rng)
        self.estimators_ = fit_teachers(
            clone(self._base_estimator()),
            X,
            y,
            shards,
            teacher_seeds(rng, n_estimators),
            n_classes=2 if method == "predict_proba" else None,
            n_jobs=self.n_jobs,
            verbose=self.verbose,
        )
        self.n_estimators_ = n_estimators

        accountant.spend_events(events)
        self.accountant_ = accountant
        self.n_bins_ = n_bins
        self.soft_label_method_ = method
        self.target_range_ = (lo, hi)
        self.calibration_ = calibration.name
        self.threshold_ = calibration.threshold
        self.noise_scale_ = calibration.noise_scale
        self.sparse_vector_epsilon_ = calibration.epsilon
        self.fallback_epsilon_ = fallback_epsilon if share else 0.0
        state = self._new_serving_state(calibration, fallback_epsilon)
        state.bind_ledger(accountant, type(self).__name__)  # durable (SPEC 4)
        self._serving_state_ = state
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
                stacklevel=3,
            )

    def _new_serving_state(self, calibration, fallback_epsilon):
        generators, reseed = make_noise_generators(self.noise_random_state, 4)
        query_gen, threshold_gen, second_gen, fallback_gen = generators
        lam = calibration.noise_scale
        engine = SparseVectorEngine(
            threshold=calibration.threshold,
            noise_scale=lam,
            cutoff=self.max_unstable,
            query_noise=DiscreteLaplaceStream(2.0 * lam, query_gen, reseed),
            threshold_noise=DiscreteLaplaceStream(lam, threshold_gen, reseed),
        )
        config = {
            "max_queries": self.max_queries,
            "max_unstable": self.max_unstable,
            "n_bins": self.n_bins_,
            "method": self.soft_label_method_,
            "target_range": self.target_range_,
            "fallback": self.fallback,
            "fallback_epsilon": fallback_epsilon,
            "on_exhausted": self.on_exhausted,
            "verbose": self.verbose,
        }
        state = ServingState(config, {"fallback": fallback_gen}, reseed, engine)
        # The shifted test's query noise, addressed by query index (SPEC 8).
        state.second_query_noise = DiscreteLaplaceStream(2.0 * lam, second_gen, reseed)
        state.caches = {
            "predict": ReleaseCache(
                {"value": (np.float64, ()), "abstained": (np.bool_, ())}
            )
        }
        return state

    # -- predict -------------------------------------------------------------
    def _soft_labels(self, X, method, target_range):
        """Teachers' soft labels in [0, 1], shape (n_teachers, n_queries)."""
        lo, hi = target_range
        soft = np.empty((len(self.estimators_), X.shape[0]))
        if method == "predict_proba":
            outputs = teacher_outputs(self.estimators_, X, method, width=2)
            for rows, proba in outputs:
                soft[:, rows] = proba[:, :, 1]
        else:
            for rows, predictions in teacher_outputs(self.estimators_, X, method):
                predictions = predictions.reshape(predictions.shape[0], -1)
                soft[:, rows] = (predictions - lo) / (hi - lo)
        return np.clip(soft, 0.0, 1.0)  # SPEC 3.4: clip before binning

    def _release(self, X, rows, state):
        config = state.config
        if state.engine.halted:  # nothing more can be tested
            return {}, 0
        n_bins = config["n_bins"]
        lo, hi = config["target_range"]
        soft = self._soft_labels(X[rows], config["method"], (lo, hi))
        counts, shifted_counts = soft_label_histograms(soft, n_bins)
        first_distance, first_bin = _distance(counts)
        second_distance, second_bin = _distance(shifted_counts)
        outcome, n_done = state.engine.run_two_stage(
            first_distance, second_distance, state.second_query_noise
        )
        # Algorithm 8: (2v - 1) gamma / 2 for the fullest bin v (1-based) of
        # the first partition, v gamma for the shifted one.
        answers = np.where(
            outcome == 0,
            (first_bin[:n_done] + 0.5) / n_bins,
            (second_bin[:n_done] + 1.0) / n_bins,
        )
        abstained = outcome == 2
        if abstained.any():
            if config["fallback"] == "noisy_mean":
                # Mean of soft labels in [0, 1]: sensitivity 1/k.
                sensitivity = 1.0 / soft.shape[0]
                answers[abstained] = grid_laplace(
                    soft[:, :n_done][:, abstained].mean(axis=0),
                    sensitivity,
                    config["fallback_epsilon"],
                    rng=state.generators["fallback"],
                    grid_step=default_grid_step(sensitivity),
                    bounds=(0.0, 1.0),
                )
            else:
                answers[abstained] = 0.5  # the centre of target_range
        values = lo + answers * (hi - lo)
        return {"value": values, "abstained": abstained}, n_done

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
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        n_queries = X.shape[0]
        state = self._serving_state_
        with state.serving():
            engine = state.engine
            n_affordable = state.queries_allowed(n_queries)
            out, n_answered, n_new = state.caches["predict"].serve(
                row_keys(X), n_affordable, lambda rows: self._release(X, rows, state)
            )
            state.n_served += n_new
            halted = engine.halted
            if state.config["verbose"]:
                print(
                    f"[{type(self).__name__}] released {n_new} new row(s) of "
                    f"{n_queries}; abstention count {engine.abstention_count} "
                    f"of {state.config['max_unstable']}"
                )
        values, abstained = out["value"], out["abstained"]
        if n_answered < n_queries and state.config["on_exhausted"] == "abstain":
            lo, hi = state.config["target_range"]
            n_left = n_queries - n_answered
            values = np.concatenate([values, np.full(n_left, lo + 0.5 * (hi - lo))])
            abstained = np.concatenate([abstained, np.ones(n_left, dtype=bool)])
        elif n_answered < n_queries:
            reason = (
                f"the model halted after max_unstable={state.config['max_unstable']} "
                "failed stability tests"
                if halted
                else f"max_queries={state.config['max_queries']} is reached"
            )
            raise BudgetExhaustedError(
                f"{reason}; {n_answered} of {n_queries} queries in this call were "
                "answered (see partial_predictions).",
                partial_predictions=values,
                n_answered=n_answered,
                spends=self.accountant_.events,
            )
        if return_abstained:
            return values, abstained
        return values

    def budget_status(self):
        """Public serving counters: rows answered, abstention count, halted.

        Returns
        -------
        status : dict
        """
        state = self._serving_state_
        with state.serving():
            engine = state.engine
            return {
                "n_answered": state.n_served,
                "abstention_count": engine.abstention_count,
                "max_unstable": state.config["max_unstable"],
                "halted": engine.halted,
                "max_queries": state.config["max_queries"],
            }
