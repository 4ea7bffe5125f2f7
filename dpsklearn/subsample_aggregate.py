"""Subsample-and-aggregate with the sparse vector stability test (SPEC 3.1).

Seed 002 (Bassily, Thakkar, Thakurta 2018), Algorithms 3 and 4, with the
corrections of SPEC 2.2 (distance to instability under replace-one) and
SPEC 2.4 (halting at ``T``; a threshold calibrated on ``T``, not ``m``).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import (
    ENSEMBLE_CONSTRAINTS,
    TeacherEnsembleMixin,
    check_abstain_label,
    output_dtype,
)
from ._serving import ServingState
from .accounting import PrivacyEvent
from .calibration import calibrate_sparse_vector
from .exceptions import BudgetExhaustedError
from .noise import DiscreteLaplaceStream, exponential_mechanism, make_noise_generators
from .sparse_vector import SparseVectorEngine
from .votes import majority_and_gap

__all__ = ["SubsampleAggregateClassifier"]


class SubsampleAggregateClassifier(
    TeacherEnsembleMixin, ClassifierMixin, BaseEstimator
):
    """Private classifier: teachers on disjoint shards, a stability test per query.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards of the
    private data. Each query's vote histogram gives a distance to
    instability (how many teachers must change before the majority can
    change); the sparse vector technique tests it against a threshold. A
    query that passes gets the exact majority label, at no cost beyond the
    test. A query that fails is answered by ``fallback`` and increments the
    abstention count; when the count reaches ``max_unstable`` the model halts.

    Privacy (SPEC 1): everything all calls to ``predict``, ``score`` (and
    ``predict(return_abstained=True)``) ever release is ``(epsilon,
    delta)``-DP with respect to replacing one training record: the sparse
    vector part uses ``(1 - noisy_max_share) * epsilon`` and ``delta/2``
    (``delta`` for the ``pure`` calibration, whose sparse vector part takes
    none), the stability part the rest of ``delta``, and the ``noisy_max``
    fallback ``noisy_max_share * epsilon`` over at most ``max_unstable``
    exponential-mechanism answers (basic composition). The fitted object
    itself holds the teachers and is as secret as the training data.

    Parameters
    ----------
    estimator : estimator, default=None
        Base classifier cloned for each shard; ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`.
    n_estimators : int or "auto", default="auto"
        Number of teachers ``k``. ``"auto"``: the largest ``k`` that keeps
        ``min_samples_per_shard`` rows per shard.
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in (0, 1). Must be positive: the stability test fails
        with probability at most delta.
    max_queries : int, default=None
        Operational cap on the number of queries (not part of the guarantee).
        The query after the cap raises :class:`BudgetExhaustedError`.
    max_unstable : int, default=100
        ``T``: how many failed stability tests the budget pays for.
    calibration : {"auto", "paper", "exact", "pure"}, default="auto"
        How ``lam`` and ``w`` are derived from the budget (SPEC 2.4). ``"auto"``
        takes the admissible one with the smallest threshold.
    fallback : {"noisy_max", "abstain"}, default="noisy_max"
        Answer to a query that fails the test: the exponential mechanism on the
        votes, or ``abstain_label``.
    noisy_max_share : float, default=0.5
        Share of ``epsilon`` reserved for the ``noisy_max`` fallback.
    abstain_label : object, default=None
        Label returned for abstentions; needed by ``fallback="abstain"`` and
        ``on_exhausted="abstain"``. Must not be a class and must have the
        classes' type.
    on_exhausted : {"raise", "abstain"}, default="raise"
        When the model has halted (or ``max_queries`` is reached): raise
        :class:`BudgetExhaustedError` carrying the answers already paid for,
        or answer every further query with ``abstain_label`` (free: it does
        not depend on the data).
    classes : array-like, default=None
        The public label set. ``None`` takes ``unique(y)`` with a
        :class:`PrivacyLeakWarning`.
    min_samples_per_shard : int, default=20
        Rows per shard kept by ``n_estimators="auto"``.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from (``clone`` keeps it shared); ``None``
        gives the model its own budget of ``(epsilon, delta)``.
    random_state : int, RandomState instance or None, default=None
        Seeds the partition and the teachers only, never the mechanism noise.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests and experiments only (warns with
        :class:`PrivacyLeakWarning`). ``None``: OS entropy at every fit.
    n_jobs : int, default=None
        Parallel jobs for fitting teachers (joblib).
    verbose : int, default=0
        Progress of the fit (joblib) and per-call abstention counts.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    estimators_ : list of estimators
        The teachers (not private). They are fitted on class *indices* into
        ``classes_``.
    n_estimators_ : int
    accountant_ : PrivacyAccountant
    calibration_ : str
        The calibration used (``"paper"``, ``"exact"`` or ``"pure"``).
    threshold_ : float
        The stability threshold ``w``.
    noise_scale_ : float
        ``lam``: threshold noise ``DLap(lam)``, query noise ``DLap(2 lam)``.
    sparse_vector_epsilon_ : float
    fallback_epsilon_ : float
        Epsilon of each ``noisy_max`` answer (0 for ``"abstain"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.ensemble.BaggingClassifier : the non-private ensemble.

    Notes
    -----
    The paper's mechanism answers a query only when the teachers agree by a
    margin of about ``2 * threshold_`` votes, which needs thousands of
    teachers at practical budgets; with fewer, most queries go to the
    fallback. The demo (``python -m dpsklearn demo``) shows this honestly.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAggregateClassifier(
    ...     n_estimators=50, epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        **ENSEMBLE_CONSTRAINTS,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "calibration": [StrOptions({"auto", "paper", "exact", "pure"})],
        "fallback": [StrOptions({"noisy_max", "abstain"})],
        "noisy_max_share": [Interval(Real, 0, 1, closed="neither")],
        "abstain_label": "no_validation",
        "on_exhausted": [StrOptions({"raise", "abstain"})],
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        estimator=None,
        n_estimators="auto",
        *,
        epsilon=1.0,
        delta=1e-5,
        max_queries=None,
        max_unstable=100,
        calibration="auto",
        fallback="noisy_max",
        noisy_max_share=0.5,
        abstain_label=None,
        on_exhausted="raise",
        classes=None,
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
        self.max_unstable = max_unstable
        self.calibration = calibration
        self.fallback = fallback
        self.noisy_max_share = noisy_max_share
        self.abstain_label = abstain_label
        self.on_exhausted = on_exhausted
        self.classes = classes
        self.min_samples_per_shard = min_samples_per_shard
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # truthful: noise costs accuracy
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = True
        return tags

    # -- fit -----------------------------------------------------------------
    def _privacy_events(self, calibration, fallback_epsilon):
        label = type(self).__name__
        events = [
            PrivacyEvent(
                calibration.epsilon, self.delta, kind="sparse_vector", label=label
            )
        ]
        if self.fallback == "noisy_max":
            events.append(
                PrivacyEvent(
                    fallback_epsilon,
                    0.0,
                    kind="exponential",
                    label=label,
                    count=self.max_unstable,
                )
            )
        return events

    def fit(self, X, y):
        """Train the teachers on disjoint shards and open a fresh budget.

        Every input is validated, and the budget is checked, before anything
        is spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y_encoded = self._validate_classification_data(X, y)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        if self.fallback == "abstain":
            check_abstain_label(self.abstain_label, self.classes_, 'fallback="abstain"')
        if self.on_exhausted == "abstain":
            check_abstain_label(
                self.abstain_label, self.classes_, 'on_exhausted="abstain"'
            )
        n_estimators = self._resolve_n_estimators(n_samples)

        share = self.noisy_max_share if self.fallback == "noisy_max" else 0.0
        calibration = calibrate_sparse_vector(
            self.epsilon * (1.0 - share),
            self.delta,
            self.max_unstable,
            self.calibration,
        )
        fallback_epsilon = self.epsilon * share / self.max_unstable
        if self.n_estimators == "auto":
            self._warn_if_nothing_can_pass(n_estimators, calibration)

        accountant = self._get_accountant(self.epsilon, self.delta)
        events = self._privacy_events(calibration, fallback_epsilon)
        self._check_budget_available(accountant, events)

        self._fit_teacher_ensemble(X, y_encoded, n_estimators)

        accountant.spend_events(events)  # atomic: the whole release is reserved
        self.accountant_ = accountant
        self.calibration_ = calibration.name
        self.threshold_ = calibration.threshold
        self.noise_scale_ = calibration.noise_scale
        self.sparse_vector_epsilon_ = calibration.epsilon
        self.fallback_epsilon_ = fallback_epsilon
        self._serving_state_ = self._new_serving_state(calibration, fallback_epsilon)
        return self

    def _new_serving_state(self, calibration, fallback_epsilon):
        generators, reseed = make_noise_generators(self.noise_random_state, 3)
        query_gen, threshold_gen, fallback_gen = generators
        engine = SparseVectorEngine(
            threshold=calibration.threshold,
            noise_scale=calibration.noise_scale,
            cutoff=self.max_unstable,
            query_noise=DiscreteLaplaceStream(
                2.0 * calibration.noise_scale, query_gen, reseed
            ),
            threshold_noise=DiscreteLaplaceStream(
                calibration.noise_scale, threshold_gen, reseed
            ),
        )
        config = {
            "max_queries": self.max_queries,
            "max_unstable": self.max_unstable,
            "fallback": self.fallback,
            "fallback_epsilon": fallback_epsilon,
            "abstain_label": self.abstain_label,
            "on_exhausted": self.on_exhausted,
            "verbose": self.verbose,
        }
        return ServingState(config, {"fallback": fallback_gen}, reseed, engine)

    def _warn_if_nothing_can_pass(self, n_estimators, calibration):
        # The largest possible distance is ceil(k/2) - 1 (unanimous teachers);
        # when even that sits below w, a query passes only on a noise excess of
        # several lam, so essentially nothing is answered by the test.
        best_distance = math.ceil(n_estimators / 2) - 1
        if best_distance <= calibration.threshold:
            import warnings

            warnings.warn(
                f"n_estimators='auto' chose k={n_estimators} teachers (limited "
                f"by min_samples_per_shard={self.min_samples_per_shard}); even "
                f"unanimous votes give distance {best_distance}, below the "
                f"stability threshold w={calibration.threshold:.0f} "
                f"({calibration.name} calibration, max_unstable="
                f"{self.max_unstable}), so almost no query can pass the test.",
                UserWarning,
                stacklevel=3,
            )

    # -- predict -------------------------------------------------------------
    def predict(self, X, return_abstained=False):
        """Private labels for ``X``, drawing on the model's budget.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Public query points.
        return_abstained : bool, default=False
            Also return a boolean mask of the rows answered with
            ``abstain_label``.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.

        Raises
        ------
        BudgetExhaustedError
            When the model halts (``max_unstable`` failures) or reaches
            ``max_queries`` part-way and ``on_exhausted="raise"``; the error
            carries the answers already paid for in ``partial_predictions``.
        """
        X = self._validate_query(X)
        state = self._serving_state_
        config = state.config
        n_queries = X.shape[0]
        classes = self.classes_
        labels = np.empty(
            n_queries, dtype=output_dtype(classes, config["abstain_label"])
        )
        abstained = np.zeros(n_queries, dtype=bool)
        with state.lock:
            engine = state.engine
            n_allowed = state.queries_allowed(n_queries)
            n_processed = 0
            if n_allowed > 0 and not engine.halted:
                counts = self._vote_counts(X[:n_allowed])
                majority, gap = majority_and_gap(counts)
                distance = np.maximum(0, (gap + 1) // 2 - 1)  # SPEC 2.2
                passed, n_processed = engine.run(distance)
                state.n_served += n_processed
                answers = majority[:n_processed].copy()
                failed = np.flatnonzero(~passed)
                if config["fallback"] == "noisy_max" and failed.size:
                    answers[failed] = exponential_mechanism(
                        counts[failed],
                        config["fallback_epsilon"],
                        1.0,  # one vote moves under replace-one
                        rng=state.generators["fallback"],
                    )
                labels[:n_processed] = classes[answers]
                if config["fallback"] == "abstain" and failed.size:
                    labels[failed] = config["abstain_label"]
                    abstained[failed] = True
            if config["verbose"]:
                print(
                    f"[{type(self).__name__}] answered {n_processed} of "
                    f"{n_queries} queries; abstention count "
                    f"{engine.abstention_count} of {config['max_unstable']}"
                )
        if n_processed < n_queries:
            if config["on_exhausted"] == "abstain":
                labels[n_processed:] = config["abstain_label"]
                abstained[n_processed:] = True
            else:
                reason = (
                    f"the model halted after max_unstable={config['max_unstable']} "
                    "failed stability tests"
                    if engine.halted
                    else f"max_queries={config['max_queries']} is reached"
                )
                raise BudgetExhaustedError(
                    f"{reason}; {n_processed} of {n_queries} queries in this call "
                    "were answered (see partial_predictions).",
                    partial_predictions=labels[:n_processed],
                    n_answered=n_processed,
                    spends=self.accountant_.events,
                )
        if return_abstained:
            return labels, abstained
        return labels

    def budget_status(self):
        """Public serving counters: queries answered, abstentions, whether halted.

        Returns
        -------
        status : dict
        """
        state = self._serving_state_
        with state.lock:
            engine = state.engine
            return {
                "n_answered": state.n_served,
                "abstention_count": engine.abstention_count,
                "max_unstable": state.config["max_unstable"],
                "halted": engine.halted,
                "max_queries": state.config["max_queries"],
            }
