"""Subsample-and-aggregate with the sparse vector stability test.

Bassily, Thakkar and Thakurta (2018), Algorithms 3 and 4, with the
corrections of ``docs/corrections.rst`` (the distance to instability under
replace-one, halting at ``T``, a threshold calibrated on ``T`` rather than
``m``): :class:`~dpsklearn.mechanisms.StabilityTest`. With
``mechanism="confident_gnmax"`` the queries are answered by Confident-GNMax
(Papernot et al. 2018; :class:`~dpsklearn.mechanisms.ConfidentGNMaxRelease`)
instead.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PublicLabelsMixin, keeps_live_model
from .._param_validation import Interval, StrOptions
from .._validation import check_abstain_label, output_dtype, take_rows
from ..mechanisms import GAUSSIAN_CALIBRATIONS, ConfidentGNMaxRelease, StabilityTest
from ..planning._stability_plan import plan_stability_test
from ..serving import serve
from ._base import ENSEMBLE_CONSTRAINTS, TeacherEnsembleMixin

__all__ = ["SubsampleAggregateClassifier"]

_FIELDS = {"label": (np.int64, ()), "abstained": (np.bool_, ())}
#: Queries the planner assumes when ``max_queries`` is None.
_PLANNED_QUERIES = 1000


class SubsampleAggregateClassifier(
    PublicLabelsMixin, TeacherEnsembleMixin, ClassifierMixin, BaseEstimator
):
    """Private classifier: teachers on disjoint shards, a stability test per query.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards of the
    private data. Each query's vote histogram gives a distance to
    instability (how many teachers must change before the majority can
    change); the sparse vector technique tests it against a threshold. A
    query that passes gets the exact majority label, at no cost beyond the
    test. A query that fails is answered by ``fallback`` and increments the
    abstention count; when the count reaches ``max_unstable`` the model halts.

    Privacy: everything all calls to ``predict``, ``score`` (and
    ``predict(return_abstained=True)``) ever release is ``(epsilon,
    delta)``-DP with respect to replacing one training record. The
    ``max_unstable`` AboveThreshold instances, the ``noisy_max`` fallback
    answers (``noisy_max_share`` of the budget) and the stability part's bad
    event share ``(epsilon, delta)`` as the calibration states
    (:class:`~dpsklearn.mechanisms.StabilityTest`; ``docs/design.rst``, "The
    sparse vector stability test" and "The sparse vector test at full
    strength"). The fitted object itself holds the teachers and is as
    secret as the training data.

    With ``mechanism="confident_gnmax"`` (Papernot et al. 2018, Algorithm 1)
    a query is answered only when its largest vote count plus discrete
    Gaussian noise ``N_Z(0, sigma1^2)`` reaches ``threshold_``, and then by
    the noisy argmax of the counts plus ``N_Z(0, sigma2^2)`` each; other
    queries get ``abstain_label``, and the model halts after ``max_answers``
    answers. Accounted in Renyi DP for the worst case the data cannot
    change: all ``max_queries`` threshold checks (sensitivity 1) plus
    ``max_answers`` noisy argmaxes (L2 sensitivity ``sqrt(2)``), calibrated
    at ``fit`` (:class:`~dpsklearn.mechanisms.ConfidentGNMaxRelease`).
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
        Cap on the number of queries: the query after the cap raises
        :class:`BudgetExhaustedError` (or abstains). An operational cap for
        the sparse vector test, except that its ``"gaussian"`` calibration
        needs it (it bounds the queries one instance can see). Required by
        ``"confident_gnmax"``, whose guarantee charges every one of these
        queries. ``n_estimators="auto"`` plans for it (1,000 when None).
        ``predict`` (and ``score``) costs 1 unit per query row, a repeated
        row included (no release cache: a row asked again is a new query of
        the test).
    max_unstable : int or "auto", default=100
        ``T``: how many failed stability tests the budget pays for.
        ``"auto"``: the planner's choice
        (:func:`~dpsklearn.planning.plan_stability_test`).
    calibration : {"auto", "laplace", "exact", "pure", "paper", "gaussian", \
"rdp", "zcdp"}, default="auto"
        How the noises and the threshold ``w`` are derived from the budget
        (:func:`~dpsklearn.mechanisms.calibrate_sparse_vector`). ``"auto"``
        takes the admissible one with the smallest threshold (``"laplace"``
        in practice). For ``"confident_gnmax"``: ``"rdp"`` (dp_accounting's
        RDP accountant) or ``"zcdp"``; ``"auto"`` takes the one with less
        noise.
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
        How queries are answered: the paper's stability test
        (:class:`~dpsklearn.mechanisms.StabilityTest`), or Confident-GNMax
        (:class:`~dpsklearn.mechanisms.ConfidentGNMaxRelease`, beyond the paper).
    max_answers : int, default=None
        ``"confident_gnmax"`` only: the model halts after this many answers
        (abstentions do not count); ``None`` means ``max_queries``. Fewer
        answers paid for means less noise on each.
    unstable_fraction : float, default=0.05
        The share of queries you expect the teachers to disagree on: a
        public assumption, used only by ``n_estimators="auto"`` and
        ``max_unstable="auto"`` (through the planner) and by ``fit``'s
        warning.
    fused : "auto" or bool, default="auto"
        Vote counting. ``"auto"``: when every teacher is linear (or a
        Pipeline of affine scalers and a linear model), one matrix multiply
        per query chunk for all teachers (:mod:`dpsklearn.teachers._fused`), with votes
        identical to the per-teacher path; ``False``: always ask each
        teacher; ``True``: require the fused path (``fit`` raises otherwise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    estimators_ : list of estimators
        The teachers (not private). They are fitted on class *indices* into
        ``classes_``.
    n_estimators_ : int
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : StabilityTest or ConfidentGNMaxRelease
        The calibrated mechanism (public figures only).
    calibration_ : str
        The calibration used (``"laplace"``, ``"exact"``, ``"pure"``,
        ``"paper"`` or ``"gaussian"``).
    threshold_ : float
        The stability threshold ``w``.
    noise_scale_ : float
        Scale of the threshold noise (discrete Laplace, or the discrete
        Gaussian's sigma).
    query_noise_scale_ : float
        Scale of the query noise.
    sparse_vector_epsilon_ : float
        Epsilon of the ``max_unstable`` instances without the fallbacks.
    fallback_epsilon_ : float
        Epsilon of each ``noisy_max`` answer (0 for ``"abstain"``).
    max_unstable_ : int
        ``T`` in use (the planner's when ``max_unstable="auto"``).
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
    The regime: a query passes only when its distance to instability (about
    ``(agreement - 1/2) k`` votes) clears ``threshold_``, which does not
    depend on ``k`` (about 2,100 votes at ``epsilon=1``, 1,100 at 2, 600 at
    4, for ``T = 100``, ``delta = 1e-5``). So it needs many teachers, hence
    many rows: on nycflights13 (327,000 rows) with 10,000 teachers it
    answers 92% of 2,000 queries at ``epsilon=2`` by passing, free, more
    accurately than the teachers' vote; on Adult (32,000 rows, at most
    about 1,600 teachers) nothing can pass at ``epsilon <= 1``, and
    ``fit`` says so. Each failure costs one of ``max_unstable``, so a
    stream with a fixed share of unstable queries halts after about
    ``max_unstable / unstable_fraction`` queries; per-query mechanisms
    (:class:`PrivatePredictionClassifier`) or a published student
    (:class:`KnowledgeTransferClassifier`) serve long streams instead
    (``docs/choosing.rst``). :func:`~dpsklearn.planning.plan_stability_test`
    gives the numbers for a configuration before any data is touched.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAggregateClassifier(
    ...     n_estimators=50, epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).predict(X[:3]).shape  # warns: 50 teachers cannot pass
    (3,)

    Planning first: with 300,000 rows, 2,000 queries at ``epsilon=2`` and 8%
    of them assumed unstable, about 10,000 teachers and ``T = 200``
    answer about 92% of the queries:

    >>> from dpsklearn.planning import plan_stability_test
    >>> best = plan_stability_test(300_000, 2000, 2.0, 1e-5, unstable_fraction=0.08,
    ...                            agreement=0.8)[0]
    >>> best.n_estimators, best.max_unstable, round(best.expected_answered, 2)
    (9875, 200, 0.92)

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
        "max_unstable": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "calibration": [
            StrOptions(
                {"auto", "laplace", "paper", "exact", "pure", "gaussian", "rdp", "zcdp"}
            )
        ],
        "unstable_fraction": [Interval(Real, 0, 1, closed="left")],
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
        unstable_fraction=0.05,
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
        self.unstable_fraction = unstable_fraction

    # -- fit -----------------------------------------------------------------
    @keeps_live_model
    def fit(self, X, y):
        """Train the teachers on disjoint shards and open a fresh budget.

        Every input is validated, and the budget is checked, before anything
        is spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one; a refit
        that is refused leaves the previous model serving.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix} of n_samples rows
            Private rows, passed to the teachers as given.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y_encoded, classes = self._validate_classification_data(X, y)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        if self.mechanism == "confident_gnmax":
            mechanism, n_estimators = self._confident_gnmax(n_samples, classes)
        else:
            mechanism, n_estimators = self._stability_test(n_samples, classes)
        accountant, events = self._reserve(mechanism, self.epsilon, self.delta)

        teachers = self._fit_teachers(
            X, y_encoded, n_estimators, n_classes=len(classes)
        )

        accountant.spend_events(events)  # atomic: the whole release is reserved
        state, _ = self._start_serving(
            mechanism,
            accountant,
            max_queries=self.max_queries,
            on_exhausted=self.on_exhausted,
            fill=self.abstain_label,
        )
        self._set_fitted(
            {
                "classes_": classes,
                **teachers,
                "accountant_": accountant,
                "privacy_mechanism_": mechanism,
                **mechanism.fitted_attributes(),
                "_serving_state_": state,
            }
        )
        return self

    def _stability_test(self, n_samples, classes):
        """The sparse vector mechanism and the number of teachers."""
        if self.calibration in GAUSSIAN_CALIBRATIONS:
            raise ValueError(
                f"calibration={self.calibration!r} is for "
                "mechanism='confident_gnmax'; the sparse vector mechanism takes "
                "'auto', 'laplace', 'exact', 'pure', 'paper' or 'gaussian'."
            )
        if self.fallback == "abstain":
            check_abstain_label(self.abstain_label, classes, 'fallback="abstain"')
        if self.on_exhausted == "abstain":
            check_abstain_label(self.abstain_label, classes, 'on_exhausted="abstain"')
        n_estimators = self._resolve_n_estimators(n_samples)
        max_unstable = self.max_unstable
        plan = None
        if self.n_estimators == "auto" or max_unstable == "auto":
            # The planner (docs/design.rst, "The stability planner"): the
            # (k, T) expected to answer most of the queries by passing.
            plan = plan_stability_test(
                n_samples,
                self.max_queries or _PLANNED_QUERIES,
                self.epsilon,
                self.delta,
                unstable_fraction=self.unstable_fraction,
                n_estimators=None if self.n_estimators == "auto" else n_estimators,
                max_unstable=None if max_unstable == "auto" else max_unstable,
                min_samples_per_shard=self.min_samples_per_shard,
                calibration=self.calibration,
                fallback=self.fallback,
                noisy_max_share=self.noisy_max_share,
            )[0]
            n_estimators, max_unstable = plan.n_estimators, plan.max_unstable
        mechanism = StabilityTest.calibrate(
            self.epsilon,
            self.delta,
            max_unstable=max_unstable,
            calibration=self.calibration,
            fallback=self.fallback,
            noisy_max_share=self.noisy_max_share,
            max_queries=self.max_queries,
        )
        self._warn_if_little_can_pass(n_estimators, mechanism.calibration, plan)
        return mechanism, n_estimators

    def _warn_if_little_can_pass(self, n_estimators, calibration, plan):
        # The largest possible distance is ceil(k/2) - 1 (unanimous teachers);
        # when even that sits below w, a query passes only on a noise excess of
        # several noise scales, so essentially nothing is answered by the test.
        best_distance = -(-n_estimators // 2) - 1
        cannot = best_distance <= calibration.threshold
        low = plan is not None and plan.expected_answered < 0.5
        if not (cannot or low):
            return
        what = (
            f"even unanimous votes give distance {best_distance}, below the "
            f"stability threshold w={calibration.threshold:.0f}, so almost no "
            "query can pass the test"
            if cannot
            else f"a query needs {plan.agreement_to_pass:.0%} of the teachers to "
            f"agree to pass (w={calibration.threshold:.0f}); the planner expects "
            f"{plan.expected_answered:.0%} of {self.max_queries or _PLANNED_QUERIES}"
            f" queries answered with unstable_fraction={self.unstable_fraction}"
        )
        warnings.warn(
            f"SubsampleAggregateClassifier with k={n_estimators} teachers "
            f"({calibration.name} calibration, max_unstable={calibration.cutoff}, "
            f"epsilon={self.epsilon}): {what}. More training rows (or a smaller "
            "min_samples_per_shard), a larger epsilon or fewer queries help; see "
            "dpsklearn.planning.plan_stability_test, or use "
            "PrivatePredictionClassifier or KnowledgeTransferClassifier.",
            UserWarning,
            stacklevel=4,
        )

    def _confident_gnmax(self, n_samples, classes):
        """Confident-GNMax and the number of teachers (beyond the paper)."""
        if self.max_queries is None:
            raise ValueError(
                "max_queries must be set (an integer >= 1) for "
                "mechanism='confident_gnmax': every query's threshold check is "
                "charged, so the number of queries is part of the guarantee."
            )
        if self.calibration not in ("auto", *GAUSSIAN_CALIBRATIONS):
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
        check_abstain_label(self.abstain_label, classes, 'mechanism="confident_gnmax"')
        n_estimators = self._resolve_n_estimators(n_samples)
        mechanism = ConfidentGNMaxRelease.calibrate(
            self.epsilon,
            self.delta,
            self.max_queries,
            max_answers,
            n_teachers=n_estimators,
            n_classes=len(classes),
            calibration=self.calibration,
        )
        if mechanism.threshold > n_estimators:
            warnings.warn(
                f"mechanism='confident_gnmax' with k={n_estimators} teachers: the "
                f"vote threshold {mechanism.threshold:.0f} exceeds k (noise sigma2="
                f"{mechanism.calibration.sigma_argmax:.0f} for max_answers="
                f"{max_answers} at epsilon={self.epsilon}), so only noise can pass "
                "the threshold check; use more teachers, fewer max_answers or "
                "max_queries, or a larger epsilon.",
                UserWarning,
                stacklevel=4,
            )
        return mechanism, n_estimators

    # -- predict -------------------------------------------------------------
    def predict(self, X, return_abstained=False):
        """Private labels for ``X``, drawing on the model's budget.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix} of n_queries rows
            Public query points, in the form of the training rows.
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
            When the model halts (``max_unstable`` failures, or
            ``max_answers`` answers under Confident-GNMax) or reaches
            ``max_queries`` part-way and ``on_exhausted="raise"``; the error
            carries the answers already paid for in ``partial_predictions``.
        """
        X = self._validate_query(X)
        state = self._serving_state_
        classes = self.classes_
        dtype = output_dtype(classes, state.fill)

        def labels_of(values):
            index, abstained = values["label"], values["abstained"]
            labels = np.empty(index.shape[0], dtype=dtype)
            labels[~abstained] = classes[index[~abstained]]
            if abstained.any():
                labels[abstained] = state.fill
            return labels

        labels, abstained = serve(
            state,
            "predict",
            X.shape[0],
            lambda rows: self._vote_counts(take_rows(X, rows)),
            labels_of,
            fields=_FIELDS,
        )
        if return_abstained:
            return labels, abstained
        return labels
