"""What the knowledge-transfer students share: a private teacher labels public rows.

Bassily, Thakkar and Thakurta (2018), Algorithm 5: a private teacher labels
public, unlabelled rows through its private ``predict``; rows it abstains on
are dropped; a student is fitted on the rest. The student is
post-processing of ``(epsilon, delta)``-DP labels, so it may be published
and queried without limit (``docs/design.rst``, "Knowledge transfer to a
student").

:class:`BaseKnowledgeTransfer` holds the fit (validation, the teacher's
fit, the query strategy, the rounds of questions, the student's fit) and
the free prediction; the classifier and the regressor supply what differs:
the teacher they accept, how its labels are read, and how the
``"uncertainty"`` strategy ranks rows (:meth:`_priority`).
"""

from __future__ import annotations

import inspect
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted

from .._base import RefusesSeveredCopies, keeps_live_model
from .._dask_input import dask_training_data, is_dask_collection
from .._param_validation import HasMethods, Interval, StrOptions
from .._released import ReleasedModelMixin
from .._validation import accepts_nan, n_rows, take_rows, validate_input
from .._warn import warn_user
from ..exceptions import (
    AbstentionWarning,
    BudgetExhaustedError,
    PrivacyLeakWarning,
    StudentFitError,
)

__all__ = ["BaseKnowledgeTransfer"]

KNOWLEDGE_TRANSFER_CONSTRAINTS = {
    "teacher": [HasMethods(["fit", "predict"]), None],
    "student": [HasMethods(["fit", "predict"]), None],
    "query_strategy": [StrOptions({"sequential", "uncertainty"})],
    "n_queries": [Interval(Integral, 1, None, closed="left"), None],
    "n_rounds": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
}


def predict_accepts_abstained(teacher):
    """Whether ``teacher.predict`` takes ``return_abstained`` (the ensembles' do)."""
    try:
        parameters = inspect.signature(teacher.predict).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return "return_abstained" in parameters


class BaseKnowledgeTransfer(ReleasedModelMixin, RefusesSeveredCopies, BaseEstimator):
    """The fit and the free predictions of a student taught by a private teacher.

    Subclasses define ``_default_teacher``, ``_default_student``,
    ``_check_teacher``, ``_validate_training``, ``_released_labels``,
    ``_partial_abstained`` and ``_priority`` (and may resolve the teacher's
    defaults in ``_resolve_teacher``); see
    :class:`~dpsklearn.KnowledgeTransferClassifier` and
    :class:`~dpsklearn.KnowledgeTransferRegressor`.
    """

    _parameter_constraints: dict = dict(KNOWLEDGE_TRANSFER_CONSTRAINTS)

    def __sklearn_is_fitted__(self):
        # Fitted means a completed fit (a failed one may have set n_features_in_).
        return hasattr(self, "student_")

    def _resolve_student(self, student, X_public):
        """The student to fit, knowing the public rows (public); as given here."""
        return student

    def _published_student(self, student, teacher):
        """The student fitted last and published; the one that ranked rows
        (``student``) unless a subclass post-processes its answers."""
        return student

    def _teacher(self):
        return self._default_teacher() if self.teacher is None else self.teacher

    def _student(self):
        return self._default_student() if self.student is None else self.student

    def __sklearn_tags__(self):
        # (The subclasses set poor_score: their mixin adds its tags after this.)
        tags = super().__sklearn_tags__()
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
        warn_user(
            "the teacher passed as a parameter is already fitted: it stays in "
            "this object's parameters and holds the private data. Publish "
            "student_ alone, or set_params(teacher=None) before publishing.",
            PrivacyLeakWarning,
        )

    # -- validation: one place for the rows of every knowledge-transfer student
    def _validate_rows(
        self, X, y="no_validation", *, reset=True, allow_nan=False, consumer
    ):
        """The private rows (with ``y``) or other rows, as their consumer takes them.

        ``X`` reaches the teacher (and the student) as given: DataFrames, text
        and sparse matrices pass (:func:`dpsklearn._validation.validate_input`).
        """
        if isinstance(y, str) and y == "no_validation":
            return validate_input(
                self, X, reset=reset, allow_nan=allow_nan, consumer=consumer
            )
        return validate_input(
            self,
            X,
            y,
            reset=reset,
            allow_nan=allow_nan,
            consumer=consumer,
            **self._target_validation,
        )

    def _validate_private(self, X, y, teacher):
        """The private rows as the teacher takes them."""
        if is_dask_collection(X) or is_dask_collection(y):
            return self._validate_dask_private(X, y, teacher)
        return self._validate_rows(
            X,
            y,
            allow_nan=accepts_nan(teacher),
            consumer=f"the teacher ({type(teacher).__name__})",
        )

    def _validate_dask_private(self, X, y, teacher):
        """Dask ``X, y`` for a teacher that fits where the partitions live.

        The collections go to the teacher as given (``docs/cluster.rst``,
        "Data larger than one machine"); here, before anything is spent, only
        what lines them up is checked (lengths counted on the workers, the
        columns from the collection's metadata), and the label set must be
        public: the stand-in labels of the student's checks would otherwise
        read ``y``.
        """
        from sklearn.utils.validation import validate_data

        refusal = self._dask_teacher_refusal(teacher)
        if refusal is not None:
            raise ValueError(refusal)
        rows, _ = dask_training_data(
            X,
            y,
            allow_nan=accepts_nan(teacher),
            consumer=f"the teacher ({type(teacher).__name__})",
        )
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        return X, y

    def _dask_teacher_refusal(self, teacher):
        """Why ``teacher`` cannot take Dask input here (a message), or None.

        A classifier teacher must fit on Dask collections and have a public
        label set (the stand-in labels of the student's checks would
        otherwise read ``y``).
        """
        if not getattr(teacher, "_accepts_dask_collections", False) or not hasattr(
            teacher, "_validate_classification_data"
        ):
            return (
                f"X: the teacher ({type(teacher).__name__}) does not fit on Dask "
                "collections; use a SubsampleAggregateClassifier or "
                "PrivatePredictionClassifier teacher, or compute X and y first."
            )
        if getattr(teacher, "classes", None) is None:
            return (
                "classes: with Dask X and y the teacher's label set must be "
                "public; pass `classes` to the teacher."
            )
        return None

    def _validate_query(self, X):
        """Query rows as the student takes them (free: nothing is spent)."""
        return self._validate_rows(
            X,
            reset=False,
            allow_nan=accepts_nan(self.student_),
            consumer=f"the student ({type(self.student_).__name__})",
        )

    #: Warnings of the teacher's ``fit`` about its direct answers that do not
    #: apply to a student taught by it (regular expressions).
    _teacher_warnings_not_for_students: tuple = ()

    #: Extra ``validate_data`` arguments for ``y`` (``y_numeric`` for regressors).
    _target_validation: dict = {}

    def _validate_public(self, X_public, teacher, student):
        try:
            return self._validate_rows(
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
            Private labels (targets).
        X_public : array-like of shape (n_public, n_features)
            Public unlabelled rows, none of them private. Required.

        Returns
        -------
        self : object
        """
        self.__dict__.pop("student_", None)  # a failed refit leaves it unfitted
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
        X, y = self._validate_training(X, y, teacher)
        teacher = self._resolve_teacher(teacher, _private_rows(X))
        X_public = self._validate_public(X_public, teacher, student)
        student = self._resolve_student(student, X_public)

        n_public = n_rows(X_public)
        teacher = self._resolve_teacher_queries(teacher, n_public)
        n_queries = self._resolve_n_queries(teacher, n_public)
        if self.query_strategy == "uncertainty":
            self._check_can_rank(student)
        # Everything after the teacher's spend is tried first on public data
        # (X_public with stand-in labels), so that it cannot fail afterwards.
        self._check_student_on_public_rows(student, X_public, teacher, y)
        published = self._published_student(student, teacher)
        if published is not student:
            self._check_student_on_public_rows(published, X_public, teacher, y)
        with warnings.catch_warnings():
            for message in self._teacher_warnings_not_for_students:
                warnings.filterwarnings("ignore", message=message)
            teacher.fit(X, y)
        if self.query_strategy == "sequential":
            rounds = [np.arange(n_queries)]
        else:
            rounds = self._uncertainty_rounds(
                student,
                X_public,
                n_queries,
                min(self.n_rounds, n_queries),
                check_random_state(self.random_state),
            )
        asked, labels, abstained = self._ask_teacher(
            teacher, X_public, rounds, n_queries
        )
        del teacher  # nothing of the teacher (or its teachers) is kept

        keep = ~abstained
        if not keep.any():
            raise StudentFitError(
                "the teacher labelled none of the public rows (all abstained or "
                "unanswered); there is nothing to fit the student on.",
                rows=asked[keep],
                labels=labels[keep],
            )
        try:
            published.fit(take_rows(X_public, asked[keep]), labels[keep])
        except (ValueError, TypeError) as exc:
            # Only the released labels can make this fail now (the student was
            # fitted on X_public before the spend); they were paid for.
            raise StudentFitError(
                f"the student could not be fitted on the {int(keep.sum())} "
                f"labels the teacher released: {exc} The labels travel with "
                "this error (rows, labels).",
                rows=asked[keep],
                labels=labels[keep],
            ) from exc
        self.student_ = published
        self.n_public_labelled_ = int(keep.sum())
        self.n_public_abstained_ = int(len(asked) - keep.sum())
        self.n_public_unanswered_ = int(n_queries - len(asked))
        self.n_public_unqueried_ = int(n_public - n_queries)
        return self

    def _check_student_on_public_rows(self, student, X_public, teacher, y):
        """Fit the student (and the uncertainty ranker) on public stand-ins.

        The rows are the public ``X_public``; the labels are stand-ins taken
        from the public label set (or the public target range), never from
        private data, so this spends nothing and reveals nothing. A student
        that cannot read ``X_public`` (a plain ``LogisticRegression`` on a
        DataFrame of strings), or cannot fit at all, is refused here.
        """
        n_public = n_rows(X_public)
        rows = np.arange(min(n_public, _STAND_IN_ROWS))
        stand_in = self._stand_in_labels(teacher, y, len(rows))
        X_rows = take_rows(X_public, rows)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = clone(student).fit(X_rows, stand_in)
                fitted.predict(X_rows)
                if self.query_strategy == "uncertainty":
                    rng = check_random_state(0)
                    self._priority(student, X_rows, stand_in, X_rows, rng)
        except Exception as exc:
            kind = type(exc) if isinstance(exc, (TypeError, ValueError)) else ValueError
            raise kind(
                f"student={student!r} cannot be fitted on X_public "
                f"({type(exc).__name__}: {exc}). Checked before anything is "
                "spent: give the student the preprocessing the teacher's "
                "estimator has (e.g. the same ColumnTransformer in a Pipeline)."
            ) from exc

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
            if isinstance(budget, Integral) and 0 < int(budget) < n_public:
                return int(budget)
        return n_public

    def _resolve_teacher(self, teacher, n_samples):
        """The (cloned) teacher with defaults resolved for knowledge transfer.

        Public numbers only (``n_samples``, the teacher's parameters); the
        base class keeps the teacher as given.
        """
        return teacher

    def _resolve_teacher_queries(self, teacher, n_public):
        """The teacher with its query cap resolved for ``n_public`` public rows.

        Public numbers only; the base class keeps the teacher as given.
        """
        return teacher

    def _check_can_rank(self, student):
        """Refuse a student that ``_priority`` cannot rank rows with."""

    # -- the query strategies ------------------------------------------------
    def _uncertainty_rounds(self, student, X_public, n_queries, n_rounds, rng):
        """Yield the public row indices of each round (uncertainty sampling).

        A generator: each round is chosen after the labels of the previous
        ones are known (``send`` back the labelled rows and their labels).
        A round is the not-yet-asked rows with the smallest
        :meth:`_priority`; the first round, and any round for which
        ``_priority`` has nothing to rank with yet (``None``), is a random
        sample of the rows not yet asked.
        """
        sizes = [len(part) for part in np.array_split(np.arange(n_queries), n_rounds)]
        asked = np.zeros(n_rows(X_public), dtype=bool)
        known_rows: list[np.ndarray] = []
        known_labels: list[np.ndarray] = []
        for size in sizes:
            candidates = np.flatnonzero(~asked)
            priority = None
            if known_rows:
                rows = np.concatenate(known_rows)
                priority = self._priority(
                    student,
                    take_rows(X_public, rows),
                    np.concatenate(known_labels),
                    take_rows(X_public, candidates),
                    rng,
                )
            if priority is not None:
                chosen = candidates[np.argsort(priority, kind="stable")[:size]]
            else:
                chosen = rng.choice(candidates, size, replace=False)
            chosen = np.sort(chosen)
            asked[chosen] = True
            feedback = yield chosen
            known_rows.append(feedback[0])
            known_labels.append(feedback[1])

    def _ask_teacher(self, teacher, X_public, rounds, n_queries):
        """Ask the teacher round by round; stop when its budget runs out.

        Returns the asked row indices in the order asked, the released
        labels, and the abstention mask (rows the teacher abstained on).
        """
        asked, labels, abstained = [], [], []
        is_generator = inspect.isgenerator(rounds)
        rounds_iter = iter(rounds)
        chosen = next(rounds_iter)
        while True:
            served_before = _rows_served(teacher)
            try:
                with warnings.catch_warnings():
                    # Said once, below, as the rows left unlabelled (the
                    # teacher's own student answers none of them here).
                    warnings.simplefilter("ignore", AbstentionWarning)
                    warnings.filterwarnings(
                        "ignore",
                        message=".*answered by a student",
                        category=UserWarning,
                    )
                    released, abstain = self._released_labels(
                        teacher, take_rows(X_public, chosen)
                    )
                exhausted: bool | BudgetExhaustedError | None = None
                n_done = _rows_served(teacher) - served_before
                if _has_halted(teacher) and n_done < len(chosen):
                    # The rows after the budget ran out were abstained on
                    # (free); they were never answered, so they stay unasked.
                    exhausted = True
                    released, abstain = released[:n_done], abstain[:n_done]
            except BudgetExhaustedError as err:
                exhausted = err
                released = np.asarray(err.partial_predictions)[: err.n_answered]
                abstain = self._partial_abstained(teacher, released)
            released = np.asarray(released)
            abstain = np.asarray(abstain, dtype=bool)
            asked.append(chosen[: len(released)])
            labels.append(released)
            abstained.append(abstain)
            if exhausted is not None:
                n_asked = sum(len(rows) for rows in asked)
                warn_user(
                    f"the teacher's budget ran out after labelling {n_asked} of "
                    f"{n_queries} public rows to ask about; the other rows stay "
                    "unlabelled.",
                    UserWarning,
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

    # -- the student's free answers --------------------------------------------
    _released_attribute = "student_"

    def _configured_model(self):
        return self._student()

    def _validate_released_query(self, X):
        return self._validate_query(X)


#: Public rows the student is tried on before the spend.
_STAND_IN_ROWS = 200


def _rows_served(teacher):
    """Rows the teacher's mechanism has released so far (public counter)."""
    status = getattr(teacher, "budget_status", None)
    return status().n_served if callable(status) else 0


def _has_halted(teacher):
    """Whether the teacher answers nothing more (its budget or cap is spent)."""
    status = getattr(teacher, "budget_status", None)
    return bool(callable(status) and status().halted)


def _private_rows(X):
    """The number of private rows; a Dask collection's counted on the workers."""
    if is_dask_collection(X):
        return int(len(X))
    return n_rows(X)
