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
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, clone, is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets

from .._dask_input import is_dask_collection
from ._base import one_class_read_from_y
from ._knowledge_transfer_base import (
    BaseKnowledgeTransfer,
    predict_accepts_abstained,
)
from ._private_prediction import PrivatePredictionClassifier

__all__ = ["KnowledgeTransferClassifier"]


class KnowledgeTransferClassifier(ClassifierMixin, BaseKnowledgeTransfer):
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
        ``accountant``) set the price of the labels. A ``max_queries`` left
        at its default is set to the public rows asked about (``n_queries``,
        else ``len(X_public)``), so the budget pays for every one of them.
    student : classifier, default=None
        Any scikit-learn classifier; ``None`` means a clone of the teacher's
        own base estimator (its ``estimator``: it takes ``X_public`` in the
        form the teachers take ``X``, a DataFrame through a
        ``ColumnTransformer`` included), or
        :class:`~sklearn.linear_model.LogisticRegression` when the teacher
        has none. With
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

    def __init__(
        self,
        teacher: Any = None,
        student: Any = None,
        *,
        query_strategy: str = "sequential",
        n_queries: int | None = None,
        n_rounds: int = 5,
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.teacher = teacher
        self.student = student
        self.query_strategy = query_strategy
        self.n_queries = n_queries
        self.n_rounds = n_rounds
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # labels carry privacy noise
        return tags

    @staticmethod
    def _default_teacher():
        return PrivatePredictionClassifier()

    def _default_student(self):
        # The teachers' own model reads X_public as the teachers read X (a
        # DataFrame through its ColumnTransformer, text through its
        # vectoriser); a plain LogisticRegression would fail on such rows.
        base = getattr(self._teacher(), "estimator", None)
        if base is not None and is_classifier(base):
            return clone(base)
        return LogisticRegression()

    def _check_teacher(self, teacher):
        if not is_classifier(teacher):
            raise TypeError(f"teacher must be a private classifier, got {teacher!r}.")
        if not predict_accepts_abstained(teacher):
            raise TypeError(
                f"teacher={teacher!r} is not a dpsklearn private classifier: its "
                "predict does not accept return_abstained. Its labels would not "
                "be private; use e.g. SubsampleAggregateClassifier or "
                "PrivatePredictionClassifier."
            )

    def _validate_training(self, X, y, teacher):
        X, y = self._validate_private(X, y, teacher)
        if not is_dask_collection(y):  # the teacher checks a Dask y's labels
            check_classification_targets(y)
        return X, y

    @staticmethod
    def _released_labels(teacher, X):
        # The mechanism's own answers: rows the teacher's student of its
        # released answers filled in are dropped like its abstentions.
        if "return_source" in inspect.signature(teacher.predict).parameters:
            labels, source = teacher.predict(X, return_source=True)
            return labels, source != "private"
        return teacher.predict(X, return_abstained=True)

    @staticmethod
    def _partial_abstained(teacher, released):
        # Anything outside the teacher's classes is its abstain label.
        return ~np.isin(released, teacher.classes_)

    def _check_can_rank(self, student):
        _check_can_rank(student)

    def _resolve_teacher_queries(self, teacher, n_public):
        """A teacher whose ``max_queries`` was left at its default pays for the rows.

        Left at its default (or ``None``), the teacher's query cap is the
        public rows to ask about: ``n_queries`` when set, else every row of
        ``X_public``, so every public row is labelled instead of the first
        ``max_queries`` (a public number, ``len(X_public)``; the budget is
        the same, split over more answers). A cap the user set is kept.
        """
        params = teacher.get_params(deep=False)
        if "max_queries" not in params:
            return teacher
        signature = inspect.signature(type(teacher).__init__).parameters
        default = getattr(signature.get("max_queries"), "default", None)
        if params["max_queries"] is None or params["max_queries"] == default:
            wanted = n_public if self.n_queries is None else int(self.n_queries)
            teacher.set_params(max_queries=wanted)
        return teacher

    @staticmethod
    def _stand_in_labels(teacher, y, n):
        """Labels from the public label set, every class present (for checks)."""
        classes = getattr(teacher, "classes", None)
        if classes is None:  # the teacher warns that it reads them from y
            classes = np.unique(y)
            if classes.size < 2:  # the teacher's own refusal, said first
                raise ValueError(one_class_read_from_y())
        return np.resize(np.asarray(classes), n)

    @staticmethod
    def _priority(student, X_known, y_known, X_candidates, rng):
        """Margin sampling: the smallest gap between the two likeliest classes.

        ``None`` (a random round) until the labels hold two classes.
        """
        if len(np.unique(y_known)) < 2:
            return None
        ranker = clone(student).fit(X_known, y_known)
        return _student_margin(ranker, X_candidates)

    @property
    def classes_(self) -> np.ndarray:
        """The student's classes."""
        return self.student_.classes_


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
