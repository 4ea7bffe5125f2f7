"""Subsample-and-aggregate with the sparse vector stability test (SPEC 3.1).

Seed 002 (Bassily, Thakkar, Thakurta 2018), Algorithms 3 and 4, with the
corrections of SPEC 2.2 (distance to instability under replace-one) and
SPEC 2.4 (halting at ``T``; a threshold calibrated on ``T``, not ``m``).
``mechanism="confident_gnmax"`` answers with Confident-GNMax instead
(Papernot et al. 2018; :mod:`dpsklearn.gnmax`).
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
from .accounting import PrivacyAccountant, PrivacyEvent
from .calibration import calibrate_confident_gnmax, calibrate_sparse_vector
from .exceptions import BudgetExhaustedError
from .gnmax import ConfidentGNMaxEngine, confident_gnmax_threshold
from .noise import DiscreteLaplaceStream, exponential_mechanism, make_noise_generators
from .planning import auto_n_estimators
from .sparse_vector import SparseVectorEngine
from .votes import distance_from_gap, majority_and_gap

__all__ = ["SubsampleAggregateClassifier"]

_GAUSSIAN_CALIBRATIONS = ("rdp", "zcdp")

# Fitted figures that belong to one mechanism only.
_MECHANISM_ATTRIBUTES = (
    "threshold_",
    "noise_scale_",
    "sparse_vector_epsilon_",
    "fallback_epsilon_",
    "sigma_threshold_",
    "sigma_argmax_",
    "max_answers_",
    "rho_",
)


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

    With ``mechanism="confident_gnmax"`` (Papernot et al. 2018, Algorithm 1)
    a query is answered only when its largest vote count plus discrete
    Gaussian noise ``N_Z(0, sigma1^2)`` reaches ``threshold_``, and then by
    the noisy argmax of the counts plus ``N_Z(0, sigma2^2)`` each; other
    queries get ``abstain_label``, and the model halts after ``max_answers``
    answers. Accounted in Renyi DP for the worst case the data cannot
    change: all ``max_queries`` threshold checks (sensitivity 1) plus
    ``max_answers`` noisy argmaxes (L2 sensitivity ``sqrt(2)``), calibrated
    at ``fit`` (:func:`~dpsklearn.calibration.calibrate_confident_gnmax`).
    ``max_queries`` is then part of the guarantee and required;
    ``max_unstable``, ``fallback`` and ``noisy_max_share`` are not used.

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
        Operational cap on the number of queries (not part of the guarantee
        of the sparse vector mechanism). The query after the cap raises
        :class:`BudgetExhaustedError`. Required by ``"confident_gnmax"``,
        whose guarantee charges every one of these queries.
    max_unstable : int, default=100
        ``T``: how many failed stability tests the budget pays for.
    calibration : {"auto", "paper", "exact", "pure", "rdp", "zcdp"}, default="auto"
        How ``lam`` and ``w`` are derived from the budget (SPEC 2.4). ``"auto"``
        takes the admissible one with the smallest threshold. For
        ``"confident_gnmax"``: ``"rdp"`` (dp_accounting's RDP accountant) or
        ``"zcdp"``; ``"auto"`` takes the one with less noise.
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
    mechanism : {"sparse_vector", "confident_gnmax"}, default="sparse_vector"
        How queries are answered: the paper's stability test (SPEC 2.4), or
        Confident-GNMax (SPEC 3.1, beyond the paper).
    max_answers : int, default=None
        ``"confident_gnmax"`` only: the model halts after this many answers
        (abstentions do not count); ``None`` means ``max_queries``. Fewer
        answers paid for means less noise on each.
    fused : "auto" or bool, default="auto"
        Vote counting. ``"auto"``: when every teacher is linear (or a
        Pipeline of affine scalers and a linear model), one matrix multiply
        per query chunk for all teachers (:mod:`dpsklearn.fused`), with votes
        identical to the per-teacher path; ``False``: always ask each
        teacher; ``True``: require the fused path (``fit`` raises otherwise).

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
    sigma_threshold_ : float
        ``"confident_gnmax"``: ``sigma1`` of the threshold check (its
        ``threshold_`` is the vote-count threshold; ``calibration_`` is
        ``"rdp"`` or ``"zcdp"``).
    sigma_argmax_ : float
        ``"confident_gnmax"``: ``sigma2`` of the noisy argmax.
    max_answers_ : int
        ``"confident_gnmax"``: answers paid for.
    rho_ : float
        ``"confident_gnmax"``: zCDP ``rho`` of the worst case
        (``max_queries / (2 sigma1^2) + max_answers / sigma2^2``).
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

    Confident-GNMax, for at most 100 queries, abstaining with ``-1``:

    >>> gn = SubsampleAggregateClassifier(
    ...     n_estimators=200, epsilon=8.0, classes=[0, 1], random_state=0,
    ...     mechanism="confident_gnmax", max_queries=100, abstain_label=-1)
    >>> labels, abstained = gn.fit(X, y).predict(X[:5], return_abstained=True)
    >>> labels.shape, gn.calibration_
    ((5,), 'rdp')
    """

    _parameter_constraints: dict = {
        **ENSEMBLE_CONSTRAINTS,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "max_unstable": [Interval(Integral, 1, None, closed="left")],
        "calibration": [
            StrOptions({"auto", "paper", "exact", "pure", "rdp", "zcdp"})
        ],
        "fallback": [StrOptions({"noisy_max", "abstain"})],
        "noisy_max_share": [Interval(Real, 0, 1, closed="neither")],
        "abstain_label": "no_validation",
        "on_exhausted": [StrOptions({"raise", "abstain"})],
        "classes": ["array-like", None],
        "mechanism": [StrOptions({"sparse_vector", "confident_gnmax"})],
        "max_answers": [Interval(Integral, 1, None, closed="left"), None],
        "fused": [StrOptions({"auto"}), "boolean"],
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
        mechanism="sparse_vector",
        max_answers=None,
        fused="auto",
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
        self.mechanism = mechanism
        self.max_answers = max_answers
        self.fused = fused

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
        self._start_fit()
        X, y_encoded = self._validate_classification_data(X, y)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        if self.mechanism == "confident_gnmax":
            return self._fit_confident_gnmax(X, y_encoded, n_samples)
        if self.calibration in _GAUSSIAN_CALIBRATIONS:
            raise ValueError(
                f"calibration={self.calibration!r} is for "
                "mechanism='confident_gnmax'; the sparse vector mechanism takes "
                "'auto', 'paper', 'exact' or 'pure'."
            )
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
            # SPEC 3.1/5: what the data supports, capped by the k at which a
            # query with 3/4 teacher agreement passes with probability >= 0.95.
            n_estimators = auto_n_estimators(
                n_samples,
                self.min_samples_per_shard,
                calibration.noise_scale,
                calibration.threshold,
            )
            self._warn_if_nothing_can_pass(n_estimators, calibration)

        accountant = self._get_accountant(self.epsilon, self.delta)
        events = self._privacy_events(calibration, fallback_epsilon)
        self._check_budget_available(accountant, events)

        self._fit_teacher_ensemble(X, y_encoded, n_estimators)

        accountant.spend_events(events)  # atomic: the whole release is reserved
        self._drop_mechanism_attributes()
        self.accountant_ = accountant
        self.calibration_ = calibration.name
        self.threshold_ = calibration.threshold
        self.noise_scale_ = calibration.noise_scale
        self.sparse_vector_epsilon_ = calibration.epsilon
        self.fallback_epsilon_ = fallback_epsilon
        state = self._new_serving_state(calibration, fallback_epsilon)
        # A PrivacyLedger accountant keeps the serving state durable (SPEC 4).
        state.bind_ledger(accountant, type(self).__name__)
        self._serving_state_ = state
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
            "mechanism": "sparse_vector",
        }
        return ServingState(config, {"fallback": fallback_gen}, reseed, engine)

    # -- Confident-GNMax -----------------------------------------------------
    def _drop_mechanism_attributes(self):
        # A refit with the other mechanism must not leave stale figures.
        for name in _MECHANISM_ATTRIBUTES:
            self.__dict__.pop(name, None)

    def _fit_confident_gnmax(self, X, y_encoded, n_samples):
        """Fit for ``mechanism="confident_gnmax"`` (SPEC 3.1, beyond the paper)."""
        if self.max_queries is None:
            raise ValueError(
                "max_queries must be set (an integer >= 1) for "
                "mechanism='confident_gnmax': every query's threshold check is "
                "charged, so the number of queries is part of the guarantee."
            )
        if self.calibration not in ("auto", *_GAUSSIAN_CALIBRATIONS):
            raise ValueError(
                f"calibration={self.calibration!r} is for the sparse vector "
                "mechanism; mechanism='confident_gnmax' takes 'auto', 'rdp' or "
                "'zcdp'."
            )
        max_answers = self.max_queries if self.max_answers is None else self.max_answers
        if max_answers > self.max_queries:
            raise ValueError(
                f"max_answers={self.max_answers} must be at most "
                f"max_queries={self.max_queries}."
            )
        check_abstain_label(
            self.abstain_label, self.classes_, 'mechanism="confident_gnmax"'
        )
        n_estimators = self._resolve_n_estimators(n_samples)
        calibration = calibrate_confident_gnmax(
            self.epsilon,
            self.delta,
            self.max_queries,
            max_answers,
            calibration=self.calibration,
        )
        threshold = confident_gnmax_threshold(
            n_estimators, len(self.classes_), calibration.sigma_argmax
        )
        if threshold > n_estimators:
            import warnings

            warnings.warn(
                f"mechanism='confident_gnmax' with k={n_estimators} teachers: the "
                f"vote threshold {threshold:.0f} exceeds k (noise sigma2="
                f"{calibration.sigma_argmax:.0f} for max_answers={max_answers} "
                f"at epsilon={self.epsilon}), so only noise can pass the "
                "threshold check; use more teachers, fewer max_answers or "
                "max_queries, or a larger epsilon.",
                UserWarning,
                stacklevel=3,
            )

        if self.accountant is None:
            accountant = PrivacyAccountant._for_model(
                self.epsilon, self.delta, composition=calibration.name
            )
        else:
            accountant = self.accountant
        events = self._gnmax_events(accountant, calibration)
        if events[0].kind != "gaussian":  # Gaussian events were checked already
            self._check_budget_available(accountant, events)

        self._fit_teacher_ensemble(X, y_encoded, n_estimators)

        accountant.spend_events(events)  # atomic: the whole release is reserved
        self._drop_mechanism_attributes()
        self.accountant_ = accountant
        self.calibration_ = calibration.name
        self.threshold_ = threshold
        self.sigma_threshold_ = calibration.sigma_threshold
        self.sigma_argmax_ = calibration.sigma_argmax
        self.max_answers_ = max_answers
        self.rho_ = calibration.rho
        generators, reseed = make_noise_generators(self.noise_random_state, 1)
        engine = ConfidentGNMaxEngine(
            threshold,
            calibration.sigma_threshold,
            calibration.sigma_argmax,
            max_answers,
        )
        config = {
            "max_queries": self.max_queries,
            "max_answers": max_answers,
            "abstain_label": self.abstain_label,
            "on_exhausted": self.on_exhausted,
            "verbose": self.verbose,
            "mechanism": "confident_gnmax",
        }
        state = ServingState(config, {"gnmax": generators[0]}, reseed, engine)
        # A PrivacyLedger accountant keeps the answer count durable (SPEC 4).
        state.bind_ledger(accountant, type(self).__name__)
        self._serving_state_ = state
        return self

    def _gnmax_events(self, accountant, calibration):
        """The worst case as Gaussian events, or as one (epsilon, delta) release.

        An accountant that composes in RDP or zCDP records the Gaussian events
        themselves (discrete Gaussian noise has the continuous one's RDP
        curve, CKS 2020); any other composition (basic, advanced, PLD, whose
        continuous-Gaussian loss curve does not cover discrete noise)
        records the calibrated ``(epsilon, delta)`` of the whole mechanism.
        """
        label = type(self).__name__
        gaussian = [
            PrivacyEvent.gaussian(
                calibration.sigma_threshold,
                1.0,
                count=calibration.max_queries,
                label=label,
            ),
            PrivacyEvent.gaussian(
                calibration.sigma_argmax,
                math.sqrt(2.0),
                count=calibration.max_answers,
                label=label,
            ),
        ]
        composition = getattr(accountant, "composition", "basic")
        can_spend_events = getattr(accountant, "can_spend_events", None)
        if (
            composition in _GAUSSIAN_CALIBRATIONS
            and can_spend_events is not None
            and can_spend_events(gaussian)
        ):
            return gaussian
        return [
            PrivacyEvent.approximate(
                self.epsilon, self.delta, kind="confident_gnmax", label=label
            )
        ]

    def _serve_confident_gnmax(self, X, state, labels, abstained):
        """Answer the allowed prefix of ``X``; return how many were processed."""
        config = state.config
        engine = state.engine
        n_allowed = state.queries_allowed(X.shape[0])
        if n_allowed == 0 or engine.halted:
            return 0
        counts = self._vote_counts(X[:n_allowed])
        answers, answered, n_processed = engine.run(
            counts, state.generators["gnmax"]
        )
        state.n_served += n_processed
        rows = np.flatnonzero(answered)
        labels[rows] = self.classes_[answers[rows]]
        rows = np.flatnonzero(~answered)
        labels[rows] = config["abstain_label"]
        abstained[rows] = True
        return n_processed

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
        gnmax = config.get("mechanism") == "confident_gnmax"
        with state.serving():  # a ledger-bound state commits before returning
            engine = state.engine
            n_allowed = state.queries_allowed(n_queries)
            n_processed = 0
            if gnmax:
                n_processed = self._serve_confident_gnmax(
                    X, state, labels, abstained
                )
            elif n_allowed > 0 and not engine.halted:
                counts = self._vote_counts(X[:n_allowed])
                majority, gap = majority_and_gap(counts)
                distance = distance_from_gap(gap)  # SPEC 2.2
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
                limit = (
                    f"; answers {engine.n_answers} of {config['max_answers']}"
                    if gnmax
                    else f" of {config['max_unstable']}"
                )
                print(
                    f"[{type(self).__name__}] answered {n_processed} of "
                    f"{n_queries} queries; abstention count "
                    f"{engine.abstention_count}{limit}"
                )
        if n_processed < n_queries:
            if config["on_exhausted"] == "abstain":
                labels[n_processed:] = config["abstain_label"]
                abstained[n_processed:] = True
            else:
                cap = config["max_queries"]
                cap_reached = cap is not None and state.n_served >= cap
                if engine.halted and gnmax and not cap_reached:
                    reason = (
                        f"the model halted after max_answers={config['max_answers']} "
                        "answers"
                    )
                elif engine.halted and not gnmax:
                    reason = (
                        f"the model halted after max_unstable="
                        f"{config['max_unstable']} failed stability tests"
                    )
                else:
                    reason = f"max_queries={config['max_queries']} is reached"
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
        with state.serving():
            engine = state.engine
            status = {
                "n_answered": state.n_served,
                "abstention_count": engine.abstention_count,
                "max_unstable": state.config.get("max_unstable"),
                "halted": engine.halted,
                "max_queries": state.config["max_queries"],
            }
            if state.config.get("mechanism") == "confident_gnmax":
                status["n_gnmax_answers"] = engine.n_answers
                status["max_answers"] = state.config["max_answers"]
            return status
