"""A publishable regressor taught by a private regressor on public rows.

The regression counterpart of :class:`~dpsklearn.KnowledgeTransferClassifier`
(Bassily, Thakkar and Thakurta 2018, Algorithm 5): a private regressor (for
example :class:`~dpsklearn.PrivatePredictionRegressor`, whose clipped mean of
``k`` teachers is released with grid Laplace or discrete Gaussian noise)
labels public rows; the student is fitted on the released values and is
post-processing of them, so it may be published and queried without limit
(``docs/design.rst``, "Knowledge transfer to a student").

``query_strategy="uncertainty"`` asks about the rows where a bootstrap of
the student disagrees most (query by bagging, Abe and Mamitsuka 1998; the
regression form of query by committee, Settles 2009, section 3.2; Burbidge,
Rowland and King 2007): after a random first round, ``n_bootstrap`` clones of
the student are fitted on resamples of the labels released so far, and the
next round is the not-yet-asked rows whose bootstrap predictions have the
largest standard deviation. For a linear student these are the rows of
largest leverage, where a noisy label constrains the fit most.

The defaults (``docs/regression.rst``, "Knowledge-transfer defaults") were
chosen on the validation rows of diamonds and checked on four other tables:
uncertainty sampling, a ridge student whose penalty leave-one-out picks on
the released labels, and a :class:`~dpsklearn.PrivatePredictionRegressor`
teacher whose defaults are resolved for a student (larger shards, from
:func:`~dpsklearn.planning.knowledge_transfer_shard_rows`; standardised
ridge teachers; the clipped mean over the public range).
"""

from __future__ import annotations

from functools import partial
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin, clone, is_regressor
from sklearn.compose import TransformedTargetRegressor
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import SplineTransformer, StandardScaler

from .._base import PrivateEstimatorMixin
from .._dask_input import is_dask_collection
from .._param_validation import Interval
from .._validation import (
    check_regression_targets,
    check_target_range,
    n_rows,
    take_rows,
)
from ..planning import knowledge_transfer_shard_rows
from ._knowledge_transfer_base import (
    KNOWLEDGE_TRANSFER_CONSTRAINTS,
    BaseKnowledgeTransfer,
    predict_accepts_abstained,
)
from ._private_regression import PrivatePredictionRegressor

__all__ = ["KnowledgeTransferRegressor"]

#: The resolved teachers' ridge penalty (on standardised columns).
TEACHER_PENALTY = 0.1


class KnowledgeTransferRegressor(RegressorMixin, BaseKnowledgeTransfer):
    """A student regressor fitted on public rows labelled by a private regressor.

    ``fit(X, y, X_public=...)`` clones ``teacher`` and fits it on the
    private ``(X, y)``, labels the public rows ``X_public`` through the
    teacher's private ``predict``, drops the rows it abstains on (teachers
    whose ``predict`` accepts ``return_abstained``, such as
    :class:`SoftLabelPrivateRegressor`, mark the rows answered by their
    fallback), and fits a clone of ``student`` on the rest. Only the fitted
    student is kept (``student_``): the teacher and its teachers are dropped
    at the end of ``fit``.

    Privacy (``docs/design.rst``, "Knowledge transfer to a student"): the
    labels are the teacher's private release, ``(epsilon, delta)``-DP with
    respect to replacing one private record at the teacher's own budget; the
    student is post-processing of those labels and of ``X_public``, so this
    fitted object may be published, and ``predict`` and ``score`` are free
    and unlimited. ``X_public`` must be public: none of its rows may be
    private (they are used in the clear). When the teacher's budget runs out
    part-way, the values already released are used and the rest of the rows
    stay unlabelled (with a warning); for a teacher that marks abstentions,
    the rows of that last, partial batch are all kept (the error carries the
    values, not the mask).

    Parameters
    ----------
    teacher : private regressor, default=None
        A dpsklearn private regressor (:class:`PrivatePredictionRegressor`,
        :class:`SoftLabelPrivateRegressor`, :class:`PrivateKernelRidge`,
        ...). ``None`` means ``PrivatePredictionRegressor()``. It is cloned;
        its privacy parameters (``epsilon``, ``delta``, ``max_queries``,
        ``target_range``, ``accountant``) set the price of the labels: pass
        the public range and the budget there, e.g.
        ``KnowledgeTransferRegressor(PrivatePredictionRegressor(
        target_range=(5, 10), epsilon=1.0))``.

        A :class:`PrivatePredictionRegressor` teacher's parameters left at
        their defaults are resolved for a student (public numbers only;
        ``teacher_params_`` records what was set): ``n_estimators="auto"``
        takes shards of :func:`~dpsklearn.planning.knowledge_transfer_shard_rows`
        rows (about ``0.5 sqrt(n) rho^(1/4)``: 40 rows for 44,940 rows at
        ``epsilon = 1``, where direct answers take 10), because the
        student averages the labels' noise and so affords more noise per
        label for better teachers; ``estimator=None`` takes
        ``make_pipeline(StandardScaler(with_mean=False), Ridge(alpha=0.1))``
        (a penalty that does not depend on the columns' units, and light:
        on a shard of a few dozen rows a ridge's shrinkage is a bias the
        teachers' mean keeps; the ridge fits the intercept, so no centring
        is needed and sparse rows stay sparse); the default
        ``mechanism="adaptive_range"`` takes ``"clipped_mean"``, because
        uncertainty sampling asks about the extreme rows that a band
        released on the first round would clip. Each choice raised the
        student's validation R^2 on diamonds (``docs/regression.rst``,
        "Knowledge-transfer defaults"). Set any of them explicitly (an
        integer, an estimator, a mechanism object such as
        ``AdaptiveRange()``) to keep it.
    student : regressor, default=None
        Any scikit-learn regressor; ``None`` means a ridge whose penalty
        leave-one-out picks on the released labels (post-processing, free;
        flexible students fit the noise), on columns clipped to the span of
        the public rows when they are dense numbers:
        ``make_pipeline(FrozenEstimator(SplineTransformer(degree=1,
        n_knots=2, extrapolation="constant", include_bias=False).fit(
        X_public)), StandardScaler(), RidgeCV(alphas=np.logspace(-2, 3,
        11)))`` (inside that span the same
        predictions as the scaled ridge; a query row outside it, such as a
        data-entry error, is answered as at its edge instead of
        extrapolated), else ``make_pipeline(StandardScaler(
        with_mean=False), RidgeCV(alphas=np.logspace(-2, 3, 11)))``. When
        the teacher has a public ``target_range``, the default student's
        answers are clipped to it (its last step a
        :class:`~sklearn.compose.TransformedTargetRegressor` whose inverse
        is the clip): where the truth lies in the range, a clipped answer is
        never further from it. An explicit student is used as given.
    query_strategy : {"sequential", "uncertainty"}, default="uncertainty"
        Which public rows the teacher is asked about. ``"sequential"``: the
        first ``n_queries`` rows of ``X_public``, in order.
        ``"uncertainty"``: ``n_queries`` rows chosen in ``n_rounds`` rounds;
        the first round is a random sample (``random_state``); before each
        later round ``n_bootstrap`` clones of ``student`` are fitted on
        bootstrap resamples of the values released so far, and the teacher
        is asked about the not-yet-asked rows where their predictions have
        the largest standard deviation. Privacy is unchanged: the choice
        depends only on ``X_public``, public randomness and values already
        released (post-processing), and every dpsklearn teacher's guarantee
        holds for adaptively chosen queries.
    n_queries : int, default=None
        Number of public rows to ask the teacher about, at most
        ``len(X_public)``. ``None``: every public row for ``"sequential"``;
        for ``"uncertainty"`` the teacher's ``max_queries`` when it is an
        integer smaller than ``len(X_public)``, else every row.
    n_rounds : int, default=5
        Rounds of ``"uncertainty"`` (ignored by ``"sequential"``).
    n_bootstrap : int, default=10
        Bootstrap clones of the student that rank the rows of
        ``"uncertainty"`` (at least 2).
    random_state : int, RandomState instance or None, default=None
        Seeds the first round's random sample and the bootstrap resamples of
        ``"uncertainty"`` (public randomness: it never touches the private
        data or the teacher's noise).

    Attributes
    ----------
    teacher_params_ : dict
        The teacher's parameters resolved for knowledge transfer (see
        ``teacher``); empty when none was left at a default. Public.
    student_ : estimator
        The fitted student (publishable). To publish, ship ``student_``, or
        this object with ``set_params(teacher=None)`` and no shared
        accountant in it.
    n_public_labelled_ : int
        Public rows the teacher labelled (the student's training rows).
    n_public_abstained_ : int
        Public rows the teacher abstained on (dropped).
    n_public_unanswered_ : int
        Public rows left unlabelled because the teacher's budget ran out.
    n_public_unqueried_ : int
        Public rows the query strategy did not ask about.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    KnowledgeTransferClassifier : the same for class labels.
    PrivatePredictionRegressor : the default teacher.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from dpsklearn import KnowledgeTransferRegressor, PrivatePredictionRegressor
    >>> X, y = make_regression(n_samples=23_000, n_features=4, noise=1.0,
    ...                        random_state=0)
    >>> X_private, y_private = X[:20_000], y[:20_000]
    >>> X_public, X_test, y_test = X[20_000:22_000], X[22_000:], y[22_000:]
    >>> teacher = PrivatePredictionRegressor(
    ...     epsilon=1.0, target_range=(-400, 400), random_state=0)
    >>> kt = KnowledgeTransferRegressor(teacher, random_state=0).fit(
    ...     X_private, y_private, X_public=X_public)
    >>> kt.teacher_params_["n_estimators"], kt.teacher_params_["mechanism"]
    (740, 'clipped_mean')
    >>> kt.n_public_labelled_, kt.predict(X_test[:3]).shape  # max_queries asked
    (1000, (3,))
    >>> bool(kt.score(X_test, y_test) > 0.9)  # free: the student's score
    True
    """

    _parameter_constraints: dict = {
        **KNOWLEDGE_TRANSFER_CONSTRAINTS,
        "n_bootstrap": [Interval(Integral, 2, None, closed="left")],
    }
    _target_validation = {"y_numeric": True}
    #: The per-answer noise warning (docs/regression.rst, "Planning regression
    #: answers") is about direct answers: a student averages many labels, so
    #: its noise is about the answers' times sqrt(parameters / labels).

    def __init__(
        self,
        teacher: Any = None,
        student: Any = None,
        *,
        query_strategy: str = "uncertainty",
        n_queries: int | None = None,
        n_rounds: int = 5,
        n_bootstrap: int = 10,
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.teacher = teacher
        self.student = student
        self.query_strategy = query_strategy
        self.n_queries = n_queries
        self.n_rounds = n_rounds
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # labels carry privacy noise
        return tags

    @staticmethod
    def _default_teacher():
        return PrivatePredictionRegressor()

    @staticmethod
    def _default_student():
        # with_mean=False: the ridge fits the intercept, so centring changes no
        # prediction on dense rows, and sparse rows stay sparse.
        return make_pipeline(
            StandardScaler(with_mean=False), RidgeCV(alphas=np.logspace(-2, 3, 11))
        )

    def _resolve_student(self, student, X_public):
        """Dense numeric public rows: the default student clips to their span.

        A linear student extrapolates: one query row with a data-entry error
        (a diamond 31.8 mm deep) is answered far outside anything the labels
        showed. One degree-1 B-spline per column (two knots, at the column's
        public minimum and maximum; the other basis function dropped) with
        constant extrapolation is that column clipped to the public rows'
        span, then an affine map: inside the span the student's predictions
        are those of the scaled ridge, outside they stop at the edge
        (``docs/regression.rst``, "Knowledge-transfer defaults"). The span is
        a property of the public rows, so this is post-processing. Sparse or
        non-numeric rows keep :meth:`_default_student` (SplineTransformer
        needs dense numbers).
        """
        if self.student is not None or sp.issparse(X_public):
            return student
        try:
            np.asarray(X_public, dtype=np.float64)
        except (TypeError, ValueError):  # strings: a pipeline of the user's
            return student
        # Fitted once on every public row and frozen: the span is all of
        # X_public, not the labelled rows a (bootstrap) student is fitted on.
        span = SplineTransformer(
            degree=1, n_knots=2, extrapolation="constant", include_bias=False
        ).fit(X_public)
        return make_pipeline(
            FrozenEstimator(span),
            StandardScaler(),
            RidgeCV(alphas=np.logspace(-2, 3, 11)),
        )

    def _published_student(self, student, teacher):
        """The default student's answers, clipped to the teacher's public range.

        The teacher's answers lie in its public ``target_range``; the default
        student's are clipped to it too (post-processing, free;
        ``docs/regression.rst``, "Knowledge-transfer defaults"), so a query
        far from the public rows is not answered outside the range of the
        target. The final ridge becomes a
        :class:`~sklearn.compose.TransformedTargetRegressor` whose inverse
        is the clip: the same fit, the published object clips by itself.
        Only the published student clips: uncertainty sampling ranks rows
        by the spread of the unclipped bootstrap students, which is largest
        at the extreme rows where a label constrains a linear fit most.
        """
        target_range = getattr(teacher, "target_range", None)
        if self.student is not None or target_range is None:
            return student
        lo, hi = check_target_range(target_range, None, type(teacher).__name__)
        student = clone(student)  # shares no step with the ranking student
        clipped = TransformedTargetRegressor(
            student.steps[-1][1],
            func=np.asarray,
            inverse_func=partial(np.clip, a_min=lo, a_max=hi),
            check_inverse=False,
        )
        return Pipeline([*student.steps[:-1], (student.steps[-1][0], clipped)])

    def _resolve_teacher(self, teacher, n_samples):
        """Resolve a PrivatePredictionRegressor's defaults for a student.

        ``docs/regression.rst``, "Knowledge-transfer defaults"; public
        numbers only (``n_samples``, ``epsilon``, ``delta``).
        """
        resolved = {}
        if isinstance(teacher, PrivatePredictionRegressor):
            teacher._validate_params()  # a bad epsilon is named as the teacher's
            params = teacher.get_params(deep=False)
            if isinstance(params["n_estimators"], str):  # "auto"
                rows = knowledge_transfer_shard_rows(
                    n_samples=n_samples,
                    epsilon=params["epsilon"],
                    delta=params["delta"],
                )
                resolved["n_estimators"] = max(1, n_samples // rows)
            if params["estimator"] is None:
                # A light penalty: each teacher sees a few dozen rows, and the
                # shrinkage of a ridge on so few rows is a bias that the
                # teachers' mean keeps (docs/regression.rst, "Knowledge-transfer
                # defaults", the teachers' penalty).
                resolved["estimator"] = make_pipeline(
                    StandardScaler(with_mean=False), Ridge(alpha=TEACHER_PENALTY)
                )
            if params["mechanism"] == "adaptive_range":  # the shorthand only
                resolved["mechanism"] = "clipped_mean"
            teacher.set_params(**resolved)
            # Its answers label public rows for the student, which averages
            # their noise: the refusal of answers that lose to a constant is
            # about answers served one by one, not these.
            teacher._refuses_answers_below_constant = False
        self.teacher_params_ = resolved
        return teacher

    def _check_teacher(self, teacher):
        if not (is_regressor(teacher) and isinstance(teacher, PrivateEstimatorMixin)):
            raise TypeError(
                f"teacher={teacher!r} is not a dpsklearn private regressor: its "
                "predictions would not be private. Use e.g. "
                "PrivatePredictionRegressor or SoftLabelPrivateRegressor."
            )

    def _validate_training(self, X, y, teacher):
        if is_dask_collection(X) or is_dask_collection(y):
            # The teacher checks a Dask y's targets on the workers.
            return self._validate_private(X, y, teacher)
        return self._validate_private(X, check_regression_targets(y), teacher)

    def _dask_teacher_refusal(self, teacher):
        """A teacher that fits on Dask collections, or why not.

        Its target range must be public; the teacher itself refuses one left
        unset (naming its parameter) before anything is spent, and the
        student's stand-in values never read ``y``.
        """
        if getattr(teacher, "_accepts_dask_collections", False):
            return None
        return (
            f"X: the teacher ({type(teacher).__name__}) does not fit on Dask "
            "collections; use a PrivatePredictionRegressor, "
            "SoftLabelPrivateRegressor or PrivateKernelRidge teacher, or "
            "compute X and y first."
        )

    @staticmethod
    def _released_labels(teacher, X):
        if predict_accepts_abstained(teacher):
            return teacher.predict(X, return_abstained=True)
        values = teacher.predict(X)
        return values, np.zeros(len(values), dtype=bool)

    @staticmethod
    def _stand_in_labels(teacher, y, n):
        """Values spread over the public target range (for checks)."""
        bounds = getattr(teacher, "target_range", None)
        lo, hi = (0.0, 1.0) if bounds is None else (float(b) for b in bounds)
        return np.linspace(lo, hi, n)

    @staticmethod
    def _partial_abstained(teacher, released):
        return np.zeros(len(released), dtype=bool)

    def _priority(self, student, X_known, y_known, X_candidates, rng):
        """Minus the spread of bootstrap students' predictions (most spread first).

        ``None`` (a random round) until two values are known.
        """
        n_known = len(y_known)
        if n_known < 2:
            return None
        predictions = np.empty((self.n_bootstrap, n_rows(X_candidates)))
        for b in range(self.n_bootstrap):
            rows = rng.randint(0, n_known, n_known)
            fitted = clone(student).fit(take_rows(X_known, rows), y_known[rows])
            predictions[b] = np.ravel(fitted.predict(X_candidates))
        return -predictions.std(axis=0)
