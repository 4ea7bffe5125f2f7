"""Label-private knowledge transfer to a publishable student.

Bassily, Thakkar and Thakurta (2018), Algorithm 5: a private teacher
labels public, unlabelled rows through its private ``predict``; rows it
abstains on are dropped; a student is fitted on the rest. The student is
post-processing of ``(epsilon, delta)``-DP labels, so it may be published
and queried without limit.

Beyond the paper, ``query_strategy="uncertainty"`` spends the teacher's
budget where the student needs it: the public rows are labelled in rounds,
and after the first (random) round the student is refitted and the teacher
is asked about the rows the student is least sure of (margin sampling,
Scheffer, Decomain and Wrobel 2001; Settles 2009, section 3.1). A fixed
budget of ``m`` noisy labels then sits near the decision boundary, where a
label moves the student most, instead of on rows it already classifies
with confidence. On Adult at ``epsilon = 1`` this lifts the student by
about 0.4 points (``benchmarks/real_data_targets.py``).
"""

from __future__ import annotations

import inspect
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils import check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._base import RefusesSeveredCopies, keeps_live_model
from .._validation import accepts_nan, n_rows, take_rows, validate_input
from ..exceptions import BudgetExhaustedError, PrivacyLeakWarning
from ._private_prediction import PrivatePredictionClassifier

__all__ = ["KnowledgeTransferClassifier"]


def _student_has(method):
    def check(self):
        student = self.student_ if hasattr(self, "student_") else self._student()
        getattr(student, method)  # AttributeError when the student lacks it
        return True

    return check


class KnowledgeTransferClassifier(RefusesSeveredCopies, ClassifierMixin, BaseEstimator):
    """A student fitted on public rows labelled by a private teacher.

    ``fit(X, y, X_public=...)`` clones ``teacher`` and fits it on the
    private ``(X, y)``, labels the public rows ``X_public`` through the
    teacher's private ``predict(..., return_abstained=True)``, drops the rows
    it abstains on, and fits a clone of ``student`` on the rest. Only the
    fitted student is kept (``student_``): the teacher and its teachers are
    dropped at the end of ``fit``.

    Privacy (``docs/design.rst``, "Knowledge transfer to a student"): the
    labels are the teacher's private release,
    ``(epsilon, delta)``-DP with respect to replacing one private record at
    the teacher's own budget; the student is post-processing of those labels
    and of ``X_public``, so this fitted object may be published, and
    ``predict``, ``predict_proba``, ``decision_function`` and ``score`` are
    free and unlimited. ``X_public`` must be public: none of its rows may be
    private (they are used in the clear). When the teacher's budget runs out
    part-way, the rows already labelled are used and the rest stay
    unlabelled (with a warning).

    Parameters
    ----------
    teacher : private classifier, default=None
        A dpsklearn private classifier whose ``predict`` accepts
        ``return_abstained`` (e.g. :class:`SubsampleAggregateClassifier`,
        :class:`PrivatePredictionClassifier`). ``None`` means
        ``PrivatePredictionClassifier()``. It is cloned; its privacy
        parameters (``epsilon``, ``delta``, ``max_queries``, ``classes``,
        ``accountant``) set the price of the labels.
    student : classifier, default=None
        Any scikit-learn classifier; ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`. With
        ``query_strategy="uncertainty"`` it needs ``predict_proba`` or
        ``decision_function``.
    query_strategy : {"sequential", "uncertainty"}, default="sequential"
        Which public rows the teacher is asked about. ``"sequential"``: the
        first ``n_queries`` rows of ``X_public``, in order (Bassily et al.
        2018).
        ``"uncertainty"``: ``n_queries`` rows chosen in ``n_rounds`` rounds;
        the first round is a random sample (``random_state``); before each
        later round a clone of ``student`` is fitted on the labels released
        so far and the teacher is asked about the not-yet-asked rows with
        the smallest gap between the student's two most probable classes
        (from ``predict_proba``, else ``decision_function``). Privacy is
        unchanged: the choice depends only on ``X_public`` and labels
        already released (post-processing), and every dpsklearn teacher's
        guarantee holds for adaptively chosen queries.
    n_queries : int, default=None
        Number of public rows to ask the teacher about, at most
        ``len(X_public)``. ``None``: every public row for ``"sequential"``;
        for ``"uncertainty"`` the teacher's ``max_queries`` when it is an
        integer smaller than ``len(X_public)`` (the rows its budget pays
        for), else every row.
    n_rounds : int, default=5
        Rounds of ``"uncertainty"`` (ignored by ``"sequential"``); the
        ``n_queries`` rows are split into ``n_rounds`` nearly equal rounds.
    random_state : int, RandomState instance or None, default=None
        Seeds the first round's random sample of ``"uncertainty"`` (public
        randomness: it never touches the private data or the teacher's
        noise).

    Attributes
    ----------
    student_ : estimator
        The fitted student (publishable). To publish, ship ``student_``, or
        this object with an unfitted ``teacher`` parameter and no shared
        accountant in it (``set_params(teacher=None)``): parameters are kept
        as given, and a shared accountant refuses to be pickled.
    classes_ : ndarray of shape (n_classes,)
        The student's classes (those among the released labels).
    n_public_labelled_ : int
        Public rows the teacher labelled (the student's training rows).
    n_public_abstained_ : int
        Public rows the teacher abstained on (dropped).
    n_public_unanswered_ : int
        Public rows left unlabelled because the teacher's budget ran out.
    n_public_unqueried_ : int
        Public rows the query strategy did not ask about (``n_queries``
        below ``len(X_public)``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn import KnowledgeTransferClassifier
    >>> from dpsklearn import PrivatePredictionClassifier
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> X_private, y_private, X_public = X[:2500], y[:2500], X[2500:]
    >>> teacher = PrivatePredictionClassifier(
    ...     n_estimators=100, epsilon=4.0, max_queries=500, classes=[0, 1],
    ...     random_state=0)
    >>> kt = KnowledgeTransferClassifier(teacher).fit(
    ...     X_private, y_private, X_public=X_public)
    >>> kt.n_public_labelled_, kt.predict(X[:3]).shape
    (500, (3,))

    Spending the same 250 labels where the student is unsure:

    >>> active = KnowledgeTransferClassifier(
    ...     teacher.set_params(max_queries=250), query_strategy="uncertainty",
    ...     random_state=0).fit(X_private, y_private, X_public=X_public)
    >>> active.n_public_labelled_, active.n_public_unqueried_
    (250, 250)
    """

    _parameter_constraints: dict = {
        "teacher": [HasMethods(["fit", "predict"]), None],
        "student": [HasMethods(["fit", "predict"]), None],
        "query_strategy": [StrOptions({"sequential", "uncertainty"})],
        "n_queries": [Interval(Integral, 1, None, closed="left"), None],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        teacher=None,
        student=None,
        *,
        query_strategy="sequential",
        n_queries=None,
        n_rounds=5,
        random_state=None,
    ):
        self.teacher = teacher
        self.student = student
        self.query_strategy = query_strategy
        self.n_queries = n_queries
        self.n_rounds = n_rounds
        self.random_state = random_state

    def __sklearn_is_fitted__(self):
        # Fitted means a completed fit (a failed one may have set n_features_in_).
        return hasattr(self, "student_")

    def _teacher(self):
        if self.teacher is None:
            return PrivatePredictionClassifier()
        return self.teacher

    def _student(self):
        return LogisticRegression() if self.student is None else self.student

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # labels carry privacy noise
        try:
            teacher_tags = get_tags(self._teacher())
        except Exception:  # not an estimator: fit will say so
            tags.non_deterministic = True
            return tags
        tags.non_deterministic = teacher_tags.non_deterministic
        # X reaches the teacher's teachers, X_public them and the student.
        tags.input_tags.sparse = teacher_tags.input_tags.sparse
        tags.input_tags.allow_nan = self._public_rows_allow_nan(
            self._teacher(), self._student()
        )
        return tags

    @staticmethod
    def _public_rows_allow_nan(teacher, student):
        return accepts_nan(teacher) and accepts_nan(student)

    def _warn_if_teacher_fitted(self):
        # The teacher *parameter* is kept (scikit-learn keeps parameters as
        # given); a fitted one would travel with this object when published.
        if self.teacher is None:
            return
        try:
            check_is_fitted(self.teacher)
        except (NotFittedError, TypeError):
            return
        warnings.warn(
            "the teacher passed as a parameter is already fitted: it stays in "
            "this object's parameters and holds the private data. Publish "
            "student_ alone, or set_params(teacher=None) before publishing.",
            PrivacyLeakWarning,
            stacklevel=3,
        )

    def _check_teacher(self, teacher):
        if not is_classifier(teacher):
            raise TypeError(f"teacher must be a private classifier, got {teacher!r}.")
        try:
            parameters = inspect.signature(teacher.predict).parameters
        except (TypeError, ValueError):  # pragma: no cover - builtins
            parameters = {}
        if "return_abstained" not in parameters:
            raise TypeError(
                f"teacher={teacher!r} is not a dpsklearn private classifier: its "
                "predict does not accept return_abstained. Its labels would not "
                "be private; use e.g. SubsampleAggregateClassifier or "
                "PrivatePredictionClassifier."
            )

    @keeps_live_model
    def fit(self, X, y, X_public=None):
        """Fit the teacher privately, label ``X_public``, fit the student.

        Everything is validated (parameters, data, the width of
        ``X_public``, the teacher's interface) before the teacher is fitted,
        so a bad input spends no budget.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private training rows.
        y : array-like of shape (n_samples,)
            Private labels.
        X_public : array-like of shape (n_public, n_features)
            Public unlabelled rows, none of them private. Required.

        Returns
        -------
        self : object
        """
        vars(self).pop("student_", None)  # a failed refit leaves it unfitted
        self._validate_params()
        self._warn_if_teacher_fitted()
        teacher = clone(self._teacher())
        self._check_teacher(teacher)
        student = clone(self._student())
        if X_public is None:
            raise ValueError(
                "X_public is required: the public, unlabelled rows that the "
                "private teacher labels for the student."
            )
        X, y = validate_input(
            self,
            X,
            y,
            allow_nan=accepts_nan(teacher),
            consumer=f"the teacher ({type(teacher).__name__})",
        )
        check_classification_targets(y)
        try:
            X_public = validate_input(
                self,
                X_public,
                reset=False,
                allow_nan=self._public_rows_allow_nan(teacher, student),
                consumer=(
                    f"the teacher ({type(teacher).__name__}) or the student "
                    f"({type(student).__name__})"
                ),
            )
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"X_public is not valid for this model: {exc}") from exc

        n_public = n_rows(X_public)
        n_queries = self._resolve_n_queries(teacher, n_public)
        if self.query_strategy == "uncertainty":
            _check_can_rank(student)
        teacher.fit(X, y)
        if self.query_strategy == "sequential":
            rounds = [np.arange(n_queries)]
        else:
            rounds = _uncertainty_rounds(
                student,
                X_public,
                n_queries,
                min(self.n_rounds, n_queries),
                check_random_state(self.random_state),
            )
        asked, labels, abstained = _ask_teacher(teacher, X_public, rounds, n_queries)
        del teacher  # nothing of the teacher (or its teachers) is kept

        keep = ~abstained
        if not keep.any():
            raise ValueError(
                "the teacher labelled none of the public rows (all abstained or "
                "unanswered); there is nothing to fit the student on."
            )
        student.fit(take_rows(X_public, asked[keep]), labels[keep])
        self.student_ = student
        self.n_public_labelled_ = int(keep.sum())
        self.n_public_abstained_ = int(len(asked) - keep.sum())
        self.n_public_unanswered_ = int(n_queries - len(asked))
        self.n_public_unqueried_ = int(n_public - n_queries)
        return self

    def _resolve_n_queries(self, teacher, n_public):
        if self.n_queries is not None:
            if self.n_queries > n_public:
                raise ValueError(
                    f"n_queries={self.n_queries} is more than the {n_public} "
                    "rows of X_public."
                )
            return int(self.n_queries)
        if self.query_strategy == "uncertainty":
            budget = getattr(teacher, "max_queries", None)
            if isinstance(budget, Integral) and 0 < budget < n_public:
                return int(budget)
        return n_public

    @property
    def classes_(self):
        """The student's classes."""
        return self.student_.classes_

    def _validate_query(self, X):
        """Query rows as the student takes them (free: nothing is spent)."""
        return validate_input(
            self,
            X,
            reset=False,
            allow_nan=accepts_nan(self.student_),
            consumer=f"the student ({type(self.student_).__name__})",
        )

    def predict(self, X):
        """The student's labels for ``X`` (free: post-processing).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        check_is_fitted(self)
        return self.student_.predict(self._validate_query(X))

    @available_if(_student_has("predict_proba"))
    def predict_proba(self, X):
        """The student's class probabilities for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
        """
        check_is_fitted(self)
        return self.student_.predict_proba(self._validate_query(X))

    @available_if(_student_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """The student's log-probabilities for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_queries, n_classes)
        """
        check_is_fitted(self)
        return self.student_.predict_log_proba(self._validate_query(X))

    @available_if(_student_has("decision_function"))
    def decision_function(self, X):
        """The student's decision function for ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        scores : ndarray of shape (n_queries,) or (n_queries, n_classes)
        """
        check_is_fitted(self)
        return self.student_.decision_function(self._validate_query(X))


def _check_can_rank(student):
    if not (hasattr(student, "predict_proba") or hasattr(student, "decision_function")):
        raise TypeError(
            f"query_strategy='uncertainty' ranks public rows by the student's "
            f"confidence, but student={student!r} has neither predict_proba nor "
            "decision_function."
        )


def _student_margin(student, X):
    """Gap between the student's two most confident classes (small = unsure)."""
    if hasattr(student, "predict_proba"):
        scores = student.predict_proba(X)
    else:
        scores = np.asarray(student.decision_function(X), dtype=float)
        if scores.ndim == 1:  # binary: distance from the boundary
            return np.abs(scores)
    if scores.shape[1] < 2:
        return np.zeros(scores.shape[0])
    top_two = np.partition(scores, scores.shape[1] - 2, axis=1)[:, -2:]
    return top_two[:, 1] - top_two[:, 0]


def _uncertainty_rounds(student, X_public, n_queries, n_rounds, random_state):
    """Yield the public row indices of each round (margin sampling).

    A generator: each round is chosen after the labels of the previous ones
    are known (``send`` back the labelled rows and their labels). The first
    round, and any round before the labels hold two classes, is a random
    sample of the rows not yet asked.
    """
    sizes = [len(part) for part in np.array_split(np.arange(n_queries), n_rounds)]
    asked = np.zeros(n_rows(X_public), dtype=bool)
    known_rows, known_labels = [], []
    for size in sizes:
        candidates = np.flatnonzero(~asked)
        labels = np.concatenate(known_labels) if known_labels else np.empty(0)
        if len(np.unique(labels)) >= 2:
            ranker = clone(student).fit(
                take_rows(X_public, np.concatenate(known_rows)), labels
            )
            margin = _student_margin(ranker, take_rows(X_public, candidates))
            chosen = candidates[np.argsort(margin, kind="stable")[:size]]
        else:
            chosen = random_state.choice(candidates, size, replace=False)
        chosen = np.sort(chosen)
        asked[chosen] = True
        feedback = yield chosen
        known_rows.append(feedback[0])
        known_labels.append(feedback[1])


def _ask_teacher(teacher, X_public, rounds, n_queries):
    """Ask the teacher round by round; stop when its budget runs out.

    Returns the asked row indices in the order asked, the released labels,
    and the abstention mask (rows the teacher abstained on).
    """
    asked, labels, abstained = [], [], []
    is_generator = inspect.isgenerator(rounds)
    rounds_iter = iter(rounds)
    chosen = next(rounds_iter)
    while True:
        try:
            released, abstain = teacher.predict(
                take_rows(X_public, chosen), return_abstained=True
            )
            exhausted = None
        except BudgetExhaustedError as err:
            exhausted = err
            released = np.asarray(err.partial_predictions)[: err.n_answered]
            # Anything outside the teacher's classes is its abstain label.
            abstain = ~np.isin(released, teacher.classes_)
        released = np.asarray(released)
        abstain = np.asarray(abstain, dtype=bool)
        asked.append(chosen[: len(released)])
        labels.append(released)
        abstained.append(abstain)
        if exhausted is not None:
            n_asked = sum(len(rows) for rows in asked)
            warnings.warn(
                f"the teacher's budget ran out after labelling {n_asked} of "
                f"{n_queries} public rows to ask about; the other rows stay "
                "unlabelled.",
                UserWarning,
                stacklevel=3,
            )
            break
        keep = ~abstain
        try:
            if is_generator:
                chosen = rounds_iter.send((chosen[keep], released[keep]))
            else:
                chosen = next(rounds_iter)
        except StopIteration:
            break
    return (
        np.concatenate(asked),
        np.concatenate(labels),
        np.concatenate(abstained),
    )
