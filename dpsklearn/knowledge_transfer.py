"""Label-private knowledge transfer to a publishable student (SPEC 3.2).

Seed 002 (Bassily, Thakkar, Thakurta 2018), Algorithm 5: a private teacher
labels public, unlabelled rows through its private ``predict``; rows it
abstains on are dropped; a student is fitted on the rest. The student is
post-processing of ``(epsilon, delta)``-DP labels, so it may be published
and queried without limit.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .exceptions import BudgetExhaustedError, PrivacyLeakWarning

__all__ = ["KnowledgeTransferClassifier"]


def _student_has(method):
    def check(self):
        student = self.student_ if hasattr(self, "student_") else self._student()
        getattr(student, method)  # AttributeError when the student lacks it
        return True

    return check


class KnowledgeTransferClassifier(ClassifierMixin, BaseEstimator):
    """A student fitted on public rows labelled by a private teacher.

    ``fit(X, y, X_public=...)`` clones ``teacher`` and fits it on the
    private ``(X, y)``, labels the public rows ``X_public`` through the
    teacher's private ``predict(..., return_abstained=True)``, drops the rows
    it abstains on, and fits a clone of ``student`` on the rest. Only the
    fitted student is kept (``student_``): the teacher and its teachers are
    dropped at the end of ``fit``.

    Privacy (SPEC 1, 3.2): the labels are the teacher's private release,
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
        :class:`~sklearn.linear_model.LogisticRegression`.

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
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dpsklearn.knowledge_transfer import KnowledgeTransferClassifier
    >>> from dpsklearn.private_prediction import PrivatePredictionClassifier
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> X_private, y_private, X_public = X[:2500], y[:2500], X[2500:]
    >>> teacher = PrivatePredictionClassifier(
    ...     n_estimators=100, epsilon=4.0, max_queries=500, classes=[0, 1],
    ...     random_state=0)
    >>> kt = KnowledgeTransferClassifier(teacher).fit(
    ...     X_private, y_private, X_public=X_public)
    >>> kt.n_public_labelled_, kt.predict(X[:3]).shape
    (500, (3,))
    """

    _parameter_constraints: dict = {
        "teacher": [HasMethods(["fit", "predict"]), None],
        "student": [HasMethods(["fit", "predict"]), None],
    }

    def __init__(self, teacher=None, student=None):
        self.teacher = teacher
        self.student = student

    def __sklearn_is_fitted__(self):
        # Fitted means a completed fit (a failed one may have set n_features_in_).
        return hasattr(self, "student_")

    def _teacher(self):
        if self.teacher is None:
            from .private_prediction import PrivatePredictionClassifier

            return PrivatePredictionClassifier()
        return self.teacher

    def _student(self):
        return LogisticRegression() if self.student is None else self.student

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # labels carry privacy noise
        try:
            tags.non_deterministic = get_tags(self._teacher()).non_deterministic
        except Exception:  # not an estimator: fit will say so
            tags.non_deterministic = True
        tags.input_tags.sparse = False
        return tags

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
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        try:
            X_public = validate_data(self, X_public, reset=False)
        except ValueError as exc:
            raise ValueError(f"X_public is not valid for this model: {exc}") from exc
        if X_public.shape[0] == 0:
            raise ValueError("X_public has no rows.")

        teacher.fit(X, y)
        n_public = X_public.shape[0]
        try:
            labels, abstained = teacher.predict(X_public, return_abstained=True)
        except BudgetExhaustedError as err:
            labels = np.asarray(err.partial_predictions)[: err.n_answered]
            # Anything outside the teacher's classes is its abstain label.
            abstained = ~np.isin(labels, teacher.classes_)
            warnings.warn(
                f"the teacher's budget ran out after labelling {err.n_answered} "
                f"of {n_public} public rows; the other rows stay unlabelled.",
                UserWarning,
                stacklevel=2,
            )
        del teacher  # nothing of the teacher (or its teachers) is kept

        n_answered = len(labels)
        keep = ~np.asarray(abstained, dtype=bool)
        if not keep.any():
            raise ValueError(
                "the teacher labelled none of the public rows (all abstained or "
                "unanswered); there is nothing to fit the student on."
            )
        student.fit(X_public[:n_answered][keep], np.asarray(labels)[keep])
        self.student_ = student
        self.n_public_labelled_ = int(keep.sum())
        self.n_public_abstained_ = int(n_answered - keep.sum())
        self.n_public_unanswered_ = int(n_public - n_answered)
        return self

    @property
    def classes_(self):
        """The student's classes."""
        return self.student_.classes_

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
        return self.student_.predict(validate_data(self, X, reset=False))

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
        return self.student_.predict_proba(validate_data(self, X, reset=False))

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
        return self.student_.predict_log_proba(validate_data(self, X, reset=False))

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
        return self.student_.decision_function(validate_data(self, X, reset=False))
