"""Private prediction: every answer is a fresh private release.

Dwork and Feldman (2018), "Privacy-preserving prediction":
:class:`PrivatePredictionClassifier` answers each query row by the soft
majority of ``k`` teachers' votes (:class:`~dpsklearn.mechanisms.SoftMajority`)
or, with ``mechanism="gnmax"``, by releasing its noisy vote count vector
(PATE's GNMax, Papernot et al. 2018; :class:`~dpsklearn.mechanisms.GNMaxRelease`).
The per-query budget is derived at ``fit`` from the total ``(epsilon,
delta)`` and ``max_queries``, so ``max_queries`` is part of the guarantee; a
query row asked again gets the answer already released for it, free
(``docs/design.rst``, "Per-query releases").
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if

from .._base import FitPlan, PublicLabelsMixin, keeps_live_model
from .._param_validation import Interval, StrOptions
from .._validation import abstain_label_for, take_rows
from ..mechanisms import (
    Exponential,
    GNMax,
    MechanismOptions,
    PlanContext,
    SoftMajority,
    resolve_mechanism,
    unvalidated_mechanism,
)
from ..noise import project_to_simplex
from ..serving import ReleaseCache, row_keys, serve
from ..teachers import teacher_class_probabilities
from ._base import (
    ENSEMBLE_CONSTRAINTS,
    TeacherEnsembleMixin,
    labels_from_indices,
    predict_outputs,
)

__all__ = ["PrivatePredictionClassifier"]

#: Queries the budget is planned for when ``max_queries`` is None: fixed at
#: ``fit`` from public inputs (a constant), part of the guarantee; the student
#: of the released answers answers the rows after them.
PLANNED_QUERIES = 1000

PRIVATE_PREDICTION_CONSTRAINTS = {
    **ENSEMBLE_CONSTRAINTS,
    "delta": [Interval(Real, 0, 1, closed="left")],
    "max_queries": [Interval(Integral, 1, None, closed="left"), None],
}


class _PrivatePredictionBase(TeacherEnsembleMixin):
    """What the two private prediction estimators share: ``max_queries`` units."""

    if TYPE_CHECKING:
        max_queries: int | None  # the estimators' parameter

    def _check_max_queries(self):
        if self.max_queries is None:
            raise ValueError(
                f"max_queries=None is not allowed for {type(self).__name__}: "
                "the budget is split over a fixed number of answers, so the "
                "number of rows you will ask about is part of the privacy "
                "guarantee. Pass an integer >= 1: the rows you expect to ask "
                "about."
            )

    def _serve(self, X, method, statistic, finish, fallback=None):
        """Answer ``X`` through the release cache of ``method``.

        Returns the answers and the mask of rows abstained on (those after
        the budget is spent that ``fallback`` did not answer).
        """
        state = self._serving_state_
        cache = state.caches[method]
        return serve(
            state,
            method,
            X.shape[0],
            lambda rows: statistic(take_rows(X, rows)),
            finish,
            fields=cache.fields,
            keys=row_keys(X),
            fallback=fallback,
        )


def _teachers_have(method):
    def check(self):
        if hasattr(self, "estimators_"):
            return all(hasattr(t, method) for t in self.estimators_)
        return hasattr(self._base_estimator(), method)

    return check


def _proba_available(self):
    """GNMax's ``predict_proba`` reads only votes; the other needs teacher rows."""
    options = getattr(self, "mechanism_", None)
    if options is None:
        options = unvalidated_mechanism(self.mechanism, self._mechanisms, Exponential)
    return options.proba_from_votes or _teachers_have("predict_proba")(self)


class PrivatePredictionClassifier(
    PublicLabelsMixin, _PrivatePredictionBase, ClassifierMixin, BaseEstimator
):
    """Private classifier: the exponential mechanism (or GNMax) on the teachers' votes.

    ``fit`` trains ``k`` clones of ``estimator`` on disjoint shards of the
    private data. Each query row is answered by sampling a label with
    probability proportional to ``exp(eps_q * votes / 2)`` (Dwork and
    Feldman 2018, Theorem 1; for two classes
    ``P(1) = e^(eps_q nu/2) / (1 + e^(eps_q nu/2))``
    with ``nu = 2 count_1 - k``). Every row costs a share of the budget, so
    unlike :class:`SubsampleAggregateClassifier` no row is free, and none is
    refused until the budget is spent.

    Privacy: everything all calls to ``predict``,
    ``predict_proba`` and ``score`` ever release is ``(epsilon, delta)``-DP
    with respect to replacing one training record. ``epsilon_per_query_`` is
    derived at ``fit`` from ``(epsilon, delta, max_queries)``: by basic
    composition ``epsilon / m``, or through zCDP (the exponential mechanism is
    bounded-range, ``eps_q^2/8``-zCDP, Cesar and Rogers 2021; total
    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2``), or the
    same ``rho`` read as the RDP curve ``alpha * rho`` and converted by
    dp_accounting (``"rdp"``, about 1.5 times the ``rho`` at ``epsilon=1,
    delta=1e-5``). The budget holds ``max_queries`` query units: a
    ``predict`` row costs one, a ``predict_proba`` row (a Laplace-type
    release, ``eps_q^2/2``-zCDP) costs four under zCDP and RDP and one under
    basic composition. A row asked again gets
    the answer already released for it, free. The whole ``(epsilon, delta)``
    is reserved from the accountant at ``fit``. The fitted object holds the
    teachers and is as secret as the training data; pickling it copies them.

    ``mechanism="gnmax"`` (PATE's GNMax, Papernot et al. 2018) answers a row
    by releasing its noisy count vector ``counts + N_Z(0, sigma^2)`` (one
    discrete Gaussian draw per class, Canonne, Kamath and Steinke 2020).
    Replacing one record moves one vote (L2 sensitivity ``sqrt(2)``), so each
    released vector is ``1/sigma^2``-zCDP, RDP ``alpha / sigma^2``;
    ``sigma_`` is calibrated at ``fit`` so that ``max_queries`` of them are
    within ``(epsilon, delta)``, certified by the calibration named in
    ``calibration_`` (:class:`~dpsklearn.mechanisms.GNMaxRelease`). ``predict``
    is the argmax of the vector (ties to the lowest class index) and
    ``predict_proba`` its vote shares ``project_to_simplex(noisy_counts /
    k)``: both read the same release, so a row costs one unit once, whichever
    method asks first, and ``argmax(predict_proba(X)) == predict(X)``.

    Parameters
    ----------
    estimator : estimator, default=None
        Base classifier cloned for each shard; ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`.
    n_estimators : int or "auto", default="auto"
        Number of teachers ``k``. ``"auto"``: for the exponential mechanism,
        Theorem 1's ``r = ceil(6 ln(4 / target_error) / eps_q)`` (the
        mechanism's ``target_error``), capped by the data (20 rows per
        shard; a warning says when the cap binds); for GNMax, the most
        teachers the data supports, since ``sigma`` does not depend on ``k``
        while the vote gaps grow with it.
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in [0, 1). ``delta=0`` allows only basic composition
        (and is refused by GNMax).
    max_queries : int, default=None
        ``m``: query units the budget pays for (part of the guarantee, so
        fixed at ``fit``). ``None``: 1,000 planned units (a public constant,
        ``max_queries_``); rows after the last unit are answered by the
        student of the released answers (free, see ``mechanism``), so every
        row ``predict`` or ``score`` is asked gets an answer. Set it to the
        number of rows you will ask to have them all answered privately
        (each then at a smaller share of ``epsilon``). Cost per new
        distinct row (a row already released by the same method is free):
        ``predict`` 1; ``predict_proba`` ``proba_cost_``
        (4 when the split is certified through zCDP or RDP, 1 otherwise);
        under GNMax 1 for either method, shared (a row ``predict`` released
        is free for ``predict_proba`` and vice versa); ``score`` is
        ``predict`` on its rows.
    mechanism : {"exponential", "gnmax"} or object, default="exponential"
        ``"exponential"`` or :class:`~dpsklearn.mechanisms.Exponential`:
        Dwork and Feldman's soft majority at ``eps_q`` per row; ``"gnmax"``
        or :class:`~dpsklearn.mechanisms.GNMax`: the Gaussian noisy argmax
        (see above). The composition that splits the budget is the tightest
        admissible one (recorded in ``calibration_``). Both options take
        ``unanswered="student"`` (default) or ``"abstain"``: what rows after
        ``max_queries`` units get (below).
    classes : array-like, default=None
        The public label set. ``None`` takes ``unique(y)`` with a
        :class:`PrivacyLeakWarning`.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from; ``None`` gives the model its own.
    random_state : int, RandomState instance or None, default=None
        Seeds the partition and the teachers only, never the mechanism noise.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests only (warns with
        :class:`PrivacyLeakWarning`). ``None``: OS entropy at every fit.
    n_jobs : int, default=None
        Parallel jobs for the teachers (joblib).
    verbose : int, default=0
        Progress of the fit and per-call spends (never votes or noise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    abstain_label_ : int, float or str
        The answer to queries after ``max_queries`` units are spent (free)
        when no student answers them: ``-1`` for number labels,
        ``"abstain"`` for strings.
    max_queries_ : int
        The query units the budget pays for (``max_queries``, or the 1,000
        planned when it is None).
    mechanism_ : Exponential or GNMax
        The mechanism options used.
    estimators_ : list of estimators
        The teachers (not private), fitted on class indices into ``classes_``.
    n_estimators_ : int
    epsilon_per_query_ : float or None
        ``eps_q`` of one ``predict`` row; ``None`` under
        ``mechanism="gnmax"`` (a Gaussian release has no per-query epsilon:
        see ``sigma_``).
    sigma_ : float or None
        ``mechanism="gnmax"``: scale of the discrete Gaussian noise on each
        vote count; ``None`` under the exponential mechanism.
    calibration_ : str
        The composition that split the budget: ``"bounded_range"`` (the
        exact adaptive composition of exponential-mechanism answers, Dong,
        Durfee and Rogers 2020), ``"basic"``, ``"kov"``, ``"zcdp"`` or
        ``"rdp"``, whichever certifies the largest ``eps_q`` (the sigma of
        GNMax).
    proba_cost_ : int
        Query units charged per ``predict_proba`` row (1 under
        ``mechanism="gnmax"``, and nothing for a row ``predict`` released).
    proba_grid_step_ : float or None
        Grid step ``g`` of ``predict_proba`` releases; ``None`` under
        ``mechanism="gnmax"`` (its vote shares need no grid: the noisy counts
        are integers).
    accountant_ : PrivacyAccountant or PrivacyLedger
    privacy_mechanism_ : SoftMajority or GNMaxRelease
        The calibrated mechanism (public figures only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    SubsampleAggregateClassifier : stable queries for free, the rest abstain.
    PrivatePredictionRegressor : the same for real-valued targets.

    Notes
    -----
    Rows after the budget: with ``unanswered="student"`` (the default of
    both mechanism options), a row asked after ``max_queries_`` units are
    spent is answered by a student: a clone of ``estimator`` fitted on the
    query rows answered so far and the labels the mechanism released for
    them (refitted when the released answers double; the most frequent
    released label while fewer than 10 answers or one class were released).
    It is a function of released answers and public query rows only, so
    its answers are post-processing: free, inside the same guarantee, and no
    training row, vote or noise value enters it. It lives in the fitted
    model and pickles with it. ``predict(X, return_source=True)`` says which
    rows it answered; ``budget_status().n_student`` counts them
    (``docs/privacy_contract.rst``, "Rows the mechanism does not answer").

    The mechanism noise comes from numpy's floating-point Gumbel and
    geometric samplers (and, for GNMax, the discrete Gaussian's acceptance
    test on a floating-point uniform), exact only up to about ``2**-53`` in
    probability.
    The neighbouring relation is replace-one; under add/remove-one the
    data-independent partition shifts every later row, and no guarantee at
    the stated epsilon is claimed.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import PrivatePredictionClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = PrivatePredictionClassifier(
    ...     n_estimators=50, epsilon=1.0, max_queries=100, classes=[0, 1],
    ...     random_state=0).fit(X, y)
    >>> clf.predict(X[:3]).shape, clf.predict_proba(X[:3]).shape
    ((3,), (3, 2))
    >>> clf.calibration_  # the exact composition of the exponential mechanism
    'bounded_range'
    >>> clf.budget_status().query_units_spent  # a probability row is one unit here
    6
    >>> labels, source = clf.predict(X[:120], return_source=True)  # 94 units left
    >>> int((source == "private").sum()), int((source == "student").sum())
    (97, 23)
    >>> gn = PrivatePredictionClassifier(
    ...     mechanism="gnmax", epsilon=1.0, max_queries=100, classes=[0, 1],
    ...     random_state=0).fit(X, y)
    >>> labels, proba = gn.predict(X[:3]), gn.predict_proba(X[:3])
    >>> gn.budget_status().query_units_spent  # one release serves both
    3
    >>> bool((gn.classes_[proba.argmax(axis=1)] == labels).all())
    True
    """

    _parameter_constraints: dict = {
        **PRIVATE_PREDICTION_CONSTRAINTS,
        "mechanism": [StrOptions({"exponential", "gnmax"}), MechanismOptions],
        "classes": ["array-like", None],
    }

    #: The mechanisms this estimator runs, by shorthand.
    _mechanisms = {"exponential": Exponential, "gnmax": GNMax}

    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int | Literal["auto"] = "auto",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        max_queries: int | None = None,
        mechanism: str | MechanismOptions = "exponential",
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
    def fit(self, X: ArrayLike, y: ArrayLike) -> PrivatePredictionClassifier:
        """Train the teachers on disjoint shards and reserve the whole budget.

        Every input is validated, and the budget checked, before anything is
        spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one; a refit
        that is refused leaves the previous model serving.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _planned_queries(self):
        return PLANNED_QUERIES if self.max_queries is None else self.max_queries

    def _plan(self, X, y):
        max_queries = self._planned_queries()
        options = resolve_mechanism(
            self.mechanism, self._mechanisms, owner=type(self).__name__
        )
        if options.needs_positive_delta and self.delta == 0:
            raise ValueError(
                f"delta=0 is not allowed with mechanism={options.shorthand!r}: "
                "the Gaussian mechanism's guarantee needs delta > 0. Pass a delta "
                "in (0, 1), or use mechanism='exponential' for a pure guarantee."
            )
        X, y_encoded, classes = self._validate_classification_data(X, y)
        n_samples, n_classes = X.shape[0], len(classes)
        self._check_epsilon_delta(
            n_samples, delta_positive=options.needs_positive_delta
        )
        self._check_teacher(n_samples, classifier=True)
        self._check_label_set(classes)
        # The options plan themselves from public numbers (docs/architecture.rst,
        # "How a mechanism plans itself"): GNMax takes every teacher the rows
        # support (its sigma does not depend on k), the exponential mechanism
        # Theorem 1's count for its target_error.
        planned = options.plan(
            PlanContext(
                owner=type(self).__name__,
                epsilon=self.epsilon,
                delta=self.delta,
                n_samples=n_samples,
                n_classes=n_classes,
                n_estimators=self._resolve_n_estimators(n_samples),
                n_estimators_fixed=self.n_estimators != "auto",
                max_queries=self.max_queries,
                planned_queries=max_queries,
                min_samples_per_shard=self._min_rows_per_teacher,
            )
        )
        mechanism, n_estimators = planned.mechanism, planned.n_estimators
        self._check_shard_size(n_samples, n_estimators)
        if options.proba_from_votes:
            noisy_counts = ReleaseCache({"noisy_counts": (np.int64, (n_classes,))})
            # predict and predict_proba read one release per row: one cache.
            caches = {"predict": noisy_counts, "predict_proba": noisy_counts}
            costs = {"predict": 1, "predict_proba": 1}
        else:
            caches = {
                "predict": ReleaseCache({"label": (np.int64, ())}),
                "predict_proba": ReleaseCache({"proba": (np.float64, (n_classes,))}),
            }
            # Exponential, the other of _mechanisms, calibrates a SoftMajority.
            proba_cost = cast(SoftMajority, mechanism).proba_cost
            costs = {"predict": 1, "predict_proba": proba_cost}
        abstain_label = abstain_label_for(classes)
        return FitPlan(
            mechanism,
            X,
            y_encoded,
            delta=self.delta,
            training={"n_estimators": n_estimators, "n_classes": n_classes},
            serving={
                "max_queries": max_queries,
                "costs": costs,
                "caches": caches,
                "on_exhausted": "abstain",
                "fill": {
                    "predict": abstain_label,
                    "predict_proba": np.full(n_classes, 1.0 / n_classes),
                },
            },
            attributes={
                "classes_": classes,
                "abstain_label_": abstain_label,
                "mechanism_": options,
                "max_queries_": max_queries,
                "_answer_student_": self._new_student(options, n_classes),
            },
        )

    def _train(self, plan):
        return self._fit_teachers(
            plan.X,
            plan.y,
            plan.training["n_estimators"],
            n_classes=plan.training["n_classes"],
        )

    def _mean_teacher_proba(self, X):
        """Mean over teachers of each teacher's clipped, renormalised row."""
        n_classes = len(self.classes_)
        mean = np.empty((X.shape[0], n_classes))
        outputs = teacher_class_probabilities(
            self.estimators_, X, n_classes, n_jobs=self.n_jobs
        )
        for rows, proba in outputs:
            proba = np.clip(proba, 0.0, 1.0)
            total = proba.sum(axis=2, keepdims=True)
            # A row that clips to all zeros carries no vote: uniform.
            proba = np.where(
                total > 0, proba / np.where(total > 0, total, 1.0), 1.0 / n_classes
            )
            mean[rows] = proba.mean(axis=0)
        return mean

    def _proba_from_votes(self):
        """Whether the release is the noisy vote counts (GNMax)."""
        return self.mechanism_.proba_from_votes

    # -- predict -------------------------------------------------------------
    def predict(
        self,
        X: ArrayLike,
        return_abstained: bool = False,
        return_source: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        """Private labels for ``X``, one query unit per new distinct row.

        Rows after ``max_queries_`` units get the student's answer
        (``unanswered="student"``, free post-processing) or
        ``abstain_label_``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public query points.
        return_abstained : bool, default=False
            Also return the abstention mask: the rows answered with
            ``abstain_label_`` because ``max_queries`` units were spent and no
            student could answer (this mechanism answers every row it can pay
            for).
        return_source : bool, default=False
            Also return where each answer came from: ``"private"``,
            ``"student"`` or ``"abstained"``.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        abstained : bool ndarray of shape (n_queries,)
            Only when ``return_abstained=True``.
        source : str ndarray of shape (n_queries,)
            Only when ``return_source=True`` (after ``abstained`` when both).
        """
        X = self._validate_query(X)
        sources: dict = {}
        fallback = self._student_fallback(X, sources)
        if self._proba_from_votes():
            # argmax of the noisy counts, ties to the lowest class index
            labels, abstained = self._serve(
                X,
                "predict",
                self._vote_counts,
                lambda v: labels_from_indices(
                    self, {"label": np.argmax(v["noisy_counts"], axis=1)}
                ),
                fallback,
            )
        else:
            labels, abstained = self._serve(
                X,
                "predict",
                self._vote_counts,
                lambda v: labels_from_indices(self, v),
                fallback,
            )
        return predict_outputs(
            labels, abstained, sources, return_abstained, return_source
        )

    @available_if(_proba_available)
    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Private class probabilities, charged per new distinct row.

        Exponential mechanism: each teacher's probability row is clipped to
        [0, 1] and renormalised, the rows are averaged, and the mean is
        released on a grid with discrete Laplace noise per class, then
        projected onto the simplex. A row costs ``proba_cost_`` query units.
        ``argmax(predict_proba(X))`` and ``predict(X)`` are two independent
        noisy releases and may differ. Needs teachers with ``predict_proba``.

        ``mechanism="gnmax"``: the *vote shares*, not mean teacher
        probabilities: ``project_to_simplex(noisy_counts / k)`` of the noisy
        count vector that ``predict`` takes the argmax of (post-processing of
        the same release). A row costs one unit, and nothing if ``predict``
        already released it (and vice versa); ``argmax(predict_proba(X))``
        equals ``predict(X)`` row by row. Any teachers will do (only their
        votes are used).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
            Rows are probability vectors; rows after ``max_queries`` units
            are spent are the student's (``unanswered="student"``: fitted on
            released answers, free), or uniform (an abstention: free,
            data-independent).
        """
        X = self._validate_query(X)
        fallback = self._student_fallback(X, {}, proba=True)
        if self._proba_from_votes():
            k = self.n_estimators_
            proba, _ = self._serve(
                X,
                "predict_proba",
                self._vote_counts,
                lambda v: project_to_simplex(v["noisy_counts"] / k),
                fallback,
            )
            return proba
        proba, _ = self._serve(
            X,
            "predict_proba",
            self._mean_teacher_proba,
            lambda v: v["proba"],
            fallback,
        )
        return proba
