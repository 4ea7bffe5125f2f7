"""Fit steps shared by the teacher ensembles.

The ensembles differ only in their mechanism; the teachers are the same:
``k`` clones of the base estimator fitted on a data-independent partition of
the rows, in parallel through joblib, and their votes on query rows counted
per class (through the fused path when every teacher is linear).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special
from sklearn.base import is_classifier, is_regressor
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._base import PrivateEstimatorMixin
from .._param_validation import HasMethods, Interval, StrOptions
from .._validation import (
    QueryRule,
    accepts_nan,
    output_dtype,
    take_rows,
    warn_if_delta_large,
)
from .._warn import warn_user, warning_scope
from ..metrics import predict_with_abstentions, warn_if_abstained
from ..teachers import count_votes, fit_teacher_ensemble, fuse_teachers
from ._student import AnswerStudent

__all__ = [
    "ENSEMBLE_CONSTRAINTS",
    "MIN_SAMPLES_PER_SHARD",
    "TeacherEnsembleMixin",
    "absent_class_share",
    "answer_sources",
    "labels_from_indices",
    "one_class_read_from_y",
    "predict_outputs",
    "unanimous_release_share",
    "warn_if_absent_classes_would_be_answered",
]

#: Rows per shard that ``n_estimators="auto"`` keeps at least.
MIN_SAMPLES_PER_SHARD = 20
#: Fewer rows per teacher than this draws a warning before anything is trained.
_FEW_ROWS_PER_SHARD = 10
#: The released answers name one class this often, over at least this many
#: answers: the teachers have likely collapsed to the majority class.
_ONE_CLASS_SHARE = 0.97
_ONE_CLASS_MIN_ANSWERS = 200
#: The estimated share of one-class votes is trusted once its standard error
#: is at most this (blurred answers need more of them).
_ONE_CLASS_MAX_ERROR = 0.05
#: ``fit`` warns when the noise alone would name a class without votes in at
#: least this share of answers (three classes or more).
_ABSENT_CLASS_SHARE = 0.02
#: Parameters of common estimators that a teacher's shard must meet:
#: ``name: (factor, smallest value that constrains)``. A shard of fewer than
#: ``factor * value`` rows cannot be split (two leaves need twice the leaf
#: size) or cannot answer (a neighbour search needs ``n_neighbors`` rows);
#: values below the second number are the estimators' no-constraint defaults.
_SHARD_SIZE_PARAMETERS = {
    "min_samples_leaf": (2, 2),
    "min_samples_split": (1, 3),
    "n_neighbors": (1, 1),
    "min_child_samples": (2, 2),
}

# Constraints shared by every teacher ensemble.
ENSEMBLE_CONSTRAINTS = {
    "estimator": [HasMethods(["fit", "predict"]), None],
    "n_estimators": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
    "random_state": ["random_state"],
    "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    "n_jobs": [Integral, None],
    "verbose": ["verbose"],
}


class TeacherEnsembleMixin(PrivateEstimatorMixin):
    """Fit steps shared by the ensembles; the subclass's mechanism answers."""

    if TYPE_CHECKING:
        # The ensembles' parameters (ENSEMBLE_CONSTRAINTS, set by each
        # __init__; ``classes`` by the classifiers') and fitted teachers.
        estimator: Any
        n_estimators: int | Literal["auto"]
        classes: ArrayLike | None
        random_state: int | np.random.RandomState | None
        n_jobs: int | None
        verbose: int
        estimators_: list[Any]
        classes_: NDArray[Any]

    # A search over an ensemble's privacy parameters warns once per kind.
    _warnings_once_per_kind = True
    # Dask collections are fitted where their partitions live (docs/cluster.rst).
    _accepts_dask_collections = True

    def _base_estimator(self):
        if self.estimator is None:
            return LogisticRegression()
        return self.estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # X reaches the teachers as given: the ensemble takes what they take
        # (as BaggingClassifier's tags say).
        try:
            tags.input_tags.sparse = get_tags(self._base_estimator()).input_tags.sparse
        except Exception:  # not an estimator: fit will say so
            pass
        return tags

    def _warn_from_plan(self, plan):
        # A class of ``classes`` absent from y would still be named by the
        # noise: said from public numbers, since checking y would read it.
        n_classes = plan.training.get("n_classes")
        if is_classifier(self) and n_classes:
            warn_if_absent_classes_would_be_answered(
                self, plan.mechanism, plan.training["n_estimators"], n_classes
            )

    def _input_allows_nan(self):
        return accepts_nan(self._base_estimator())

    def _input_consumer(self):
        return f"the teacher ({type(self._base_estimator()).__name__})"

    def _check_epsilon_delta(self, n_samples, *, delta_positive):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon!r}.")
        delta = getattr(self, "delta", 0.0)
        if delta_positive and not (0 < delta < 1):
            raise ValueError(
                f"delta must be in (0, 1) for {type(self).__name__}, got {delta!r}."
            )
        warn_if_delta_large(delta, n_samples)

    #: Rows per teacher that ``n_estimators="auto"`` keeps at least.
    _min_rows_per_teacher = MIN_SAMPLES_PER_SHARD

    def _supported_n_estimators(self, n_samples):
        """The most teachers that keep ``_min_rows_per_teacher`` rows each."""
        return max(1, n_samples // self._min_rows_per_teacher)

    def _check_teacher(self, n_samples, *, classifier):
        """Refuse, before anything is spent, a teacher that cannot learn here.

        Public facts only: the estimator's type and parameters, and the
        number of rows each of the most teachers the data supports would get
        (``n_estimators`` itself is checked again once resolved, by
        :meth:`_check_shard_size`). Never the private labels: with a public
        ``classes``, a ``y`` of one class is a neighbour of one with two
        (replace one record), so refusing it would show which one was given
        (``docs/privacy_contract.rst``, "What fit reads before the spend").
        Its shards' teachers are constant teachers, voting that class.
        """
        base = self._base_estimator()
        if classifier and is_regressor(base):
            raise TypeError(
                f"estimator={base!r} is a regressor, but {type(self).__name__} "
                "needs classifier teachers (their votes are class labels). Use a "
                "classifier, or a regression estimator of dpsklearn."
            )
        if not classifier and is_classifier(base):
            raise TypeError(
                f"estimator={base!r} is a classifier, but {type(self).__name__} "
                "averages regression predictions. Use a regressor."
            )

    def _check_label_set(self, classes):
        """Refuse a label set of fewer than two classes (public with ``classes``).

        With ``classes`` given, only that public parameter is read. With
        ``classes=None`` the label set was read from the private labels
        (which :class:`~dpsklearn.PrivacyLeakWarning` has said), so this
        refusal reads them too, and says so.
        """
        if len(classes) >= 2:
            return
        if self.classes is None:
            raise ValueError(one_class_read_from_y())
        raise ValueError(
            f"classes={self.classes!r} holds one label: every answer would be "
            "it. Pass the public label set, with at least two classes."
        )

    def _check_shard_size(self, n_samples, n_estimators):
        """Warn (or refuse) before training when shards are too small to learn."""
        rows = n_samples // n_estimators
        base = self._base_estimator()
        try:
            params = base.get_params(deep=True)
        except Exception:
            params = {}
        for name, value in params.items():
            key = name.rsplit("__", 1)[-1]
            rule = _SHARD_SIZE_PARAMETERS.get(key)
            if rule is None or isinstance(value, bool):
                continue
            if not isinstance(value, Integral):
                continue
            factor, constrains = rule
            value = int(value)
            if value >= constrains and rows < factor * value:
                raise ValueError(
                    f"n_estimators={n_estimators} leaves {rows} rows per teacher, "
                    f"but the teacher's {name}={value} needs at least "
                    f"{factor * value}: every teacher would predict a constant. "
                    "Use fewer teachers (more rows each), or lower "
                    f"{name}."
                )
        if rows < _FEW_ROWS_PER_SHARD:
            warn_user(
                f"n_estimators={n_estimators} leaves {rows} rows per teacher: "
                "teachers this small rarely learn more than the majority "
                "class. Fewer, larger shards (or a public feature map) help.",
                UserWarning,
            )

    def _resolve_n_estimators(self, n_samples):
        if self.n_estimators == "auto":
            return self._supported_n_estimators(n_samples)
        if self.n_estimators > n_samples:
            raise ValueError(
                f"n_estimators={self.n_estimators} needs at least one row per "
                f"shard, but n_samples={n_samples}."
            )
        return int(self.n_estimators)

    # -- teachers ------------------------------------------------------------
    def _fit_teachers(self, X, y, n_estimators, *, n_classes=None, fuse=True):
        """Fit the teachers; return their fitted attributes (set by the caller).

        ``n_classes`` is the number of global classes for classifier
        teachers (labels are class indices), None for regressors.
        """
        teachers = fit_teacher_ensemble(
            self._base_estimator(),
            X,
            y,
            n_estimators,
            random_state=self._teacher_random_state(),
            n_classes=n_classes,
            n_jobs=self.n_jobs,
            verbose=self.verbose,
        )
        fused = (
            fuse_teachers(teachers, n_classes, getattr(self, "fused", "auto"))
            if fuse and n_classes
            else None
        )
        return {
            "estimators_": teachers,
            "n_estimators_": n_estimators,
            "_fused_ensemble_": fused,
        }

    @available_if(is_classifier)
    def vote_counts(self, X: ArrayLike) -> NDArray[np.int64]:
        """The teachers' vote counts on ``X``: NOT private, for public data only.

        Counts, for each query row, how many teachers predict each class of
        ``classes_``. This reads the private teachers directly, with no
        noise and no charge to the budget: **its output is not
        differentially private** and must never be published. It is for
        non-private baselines (:func:`dpsklearn.baselines.
        teacher_majority_vote`), planning on public labelled data
        (:func:`dpsklearn.planning.private_margin_histogram`, which adds its
        own noise) and tests. ``X`` is validated by the rule ``predict``
        uses.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix} of n_queries rows
            Query rows, in the form of the training rows.

        Returns
        -------
        counts : int64 ndarray of shape (n_queries, n_classes)
            Each row sums to ``n_estimators_``; columns follow ``classes_``.

        Examples
        --------
        >>> import warnings
        >>> from sklearn.datasets import make_classification
        >>> from dpsklearn import SubsampleAggregateClassifier
        >>> X, y = make_classification(n_samples=300, random_state=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     model = SubsampleAggregateClassifier(
        ...         n_estimators=5, classes=[0, 1], random_state=0).fit(X, y)
        >>> counts = model.vote_counts(X[:3])  # not private: public rows only
        >>> counts.shape, counts.sum(axis=1).tolist()
        ((3, 2), [5, 5, 5])
        """
        return self._vote_counts(self._validate_query(X))

    def _vote_counts(self, X):
        """Vote counts ``(n_queries, n_classes)`` of the teachers on ``X`` (chunked)."""
        return count_votes(
            self.estimators_,
            X,
            len(self.classes_),
            getattr(self, "_fused_ensemble_", None),
            n_jobs=self.n_jobs,
            verbose=self.verbose,
        )

    def score(self, X, y, sample_weight=None):
        """Accuracy (classifiers) or R^2 (regressors) of ``predict(X)``, with a warning.

        The answers are one private release like any other ``predict`` call
        (same budget); ``y`` is used in the clear, so a score on private rows
        is outside the guarantee. When the model abstained on some rows, an
        :class:`~dpsklearn.AbstentionWarning` gives their count: they enter
        the score as answers (``abstain_label`` is never a true label). See
        :func:`dpsklearn.metrics.make_abstention_scorer` for the answered
        fraction beside the score.

        Parameters
        ----------
        X : {array-like, DataFrame, list of str, sparse matrix}
        y : array-like of shape (n_rows,)
        sample_weight : array-like of shape (n_rows,), default=None

        Returns
        -------
        score : float
        """
        y_pred, abstained = predict_with_abstentions(self, X)
        with warning_scope(self._warning_scope("score")):
            warn_if_abstained(self, abstained)
        metric = accuracy_score if is_classifier(self) else r2_score
        return float(metric(y, y_pred, sample_weight=sample_weight))

    # -- the student of released answers ----------------------------------------
    def _new_student(self, options, n_classes):
        """An empty student of released answers, or None (``unanswered="abstain"``)."""
        if getattr(options, "unanswered", "abstain") != "student":
            return None
        return AnswerStudent(self._base_estimator(), n_classes)

    def _student_fallback(self, X, sources, *, proba=False):
        """The serving loop's ``fallback``: the student of the released answers.

        It first learns the rows this call's mechanism answered (query rows
        and released labels; for ``predict_proba``, the argmax of each
        released row), then answers the rows left unanswered. Only released
        answers and public query rows reach it: post-processing, free
        (``docs/privacy_contract.rst``, "Rows the mechanism does not
        answer"). ``sources["student"]`` receives the mask of rows it
        answered. None when the model has no student.
        """
        student = getattr(self, "_answer_student_", None)
        if student is None:
            return None
        classes = self.classes_

        def fallback(answers, abstained):
            answered = np.flatnonzero(~abstained)
            if answered.size:
                released = answers[answered]
                index = (
                    np.argmax(released, axis=1)
                    if proba
                    else _indices_of(classes, released)
                )
                known = index >= 0
                student.add(take_rows(X, answered[known]), index[known])
            from_student = np.zeros(len(answers), dtype=bool)
            rows = np.flatnonzero(abstained)
            if rows.size:
                X_rows = take_rows(X, rows)
                if proba:
                    filled = student.predict_proba(X_rows)
                else:
                    index = student.predict(X_rows)
                    filled = None if index is None else classes[index]
                if filled is not None:
                    answers = answers.copy()
                    answers[rows] = filled
                    from_student[rows] = True
            sources["student"] = from_student
            return answers, from_student

        return fallback

    def _query_rule(self):
        # Decided once, at the end of fit: the teacher's tags (NaN) and the
        # columns of the training rows (docs/architecture.rst, "The path of
        # one query").
        return QueryRule(
            self, allow_nan=self._input_allows_nan(), consumer=self._input_consumer()
        )

    def _validate_query(self, X):
        """Query rows by the input rule decided at ``fit`` (before any spend)."""
        rule = self.__dict__.get("_query_rule_")
        if rule is None:  # not fitted: NotFittedError
            check_is_fitted(self)
            return self._validate_input(X, reset=False)
        return rule.validate(self, X)


def one_class_read_from_y():
    """The refusal of a one-class ``y`` when the label set was read from it."""
    return (
        "classes is None, so the label set was read from the private training "
        "labels (classes_ = unique(y), with a PrivacyLeakWarning), and they hold "
        "one class only; a label set of one class cannot be served. This "
        "refusal reads the private labels, as reading the label set from them "
        "does. Pass the public label set as `classes`: a y of one class is then "
        "fitted like any other (its teachers vote that class)."
    )


def _plain(label):
    """A class label as the user wrote it (``2``, not ``np.int64(2)``)."""
    return label.item() if isinstance(label, np.generic) else label


def _gaussian_argmax_share(lead, n_classes):
    """``E[Phi(lead + Z)^(C-1)]``: a count ``lead`` noise scales ahead wins."""
    z = np.linspace(-8.0, 8.0, 801)
    weights = np.exp(-0.5 * z**2)
    inner = special.ndtr(lead + z) ** (n_classes - 1)
    return float(np.sum(weights * inner) / np.sum(weights))


def unanimous_release_share(mechanism, n_teachers, n_classes):
    """How often ``mechanism`` releases the class all ``k`` teachers vote for.

    Public numbers only: the calibrated mechanism (its per-query epsilon or
    noise scale), ``k`` and the number of classes. The exponential
    mechanism releases the class of ``k`` unanimous votes with probability
    ``e^(eps k / 2) / (e^(eps k / 2) + C - 1)``; a Gaussian noisy argmax
    (GNMax, Confident-GNMax's answers) with ``E[Phi(k / sigma + Z)^(C-1)]``
    (continuous noise, a close bound for the discrete noise it draws). Other
    mechanisms release the teachers' majority itself when they agree (the
    stability test): 1.
    """
    noise = None if mechanism is None else mechanism.argmax_noise()
    if noise is None or n_teachers < 1 or n_classes < 2:
        return 1.0
    kind, scale = noise
    if kind == "exponential":
        top = min(0.5 * scale * n_teachers, 700.0)
        return float(math.exp(top) / (math.exp(top) + n_classes - 1))
    return _gaussian_argmax_share(n_teachers / scale, n_classes)


def absent_class_share(mechanism, n_teachers, n_classes):
    """The most often ``mechanism`` names a class that no teacher votes for.

    Public numbers only. The worst case spreads the ``k`` votes evenly over
    the other ``C - 1`` classes: the exponential mechanism then names the
    empty class with probability ``1 / (1 + (C - 1) e^(eps k / (2 (C - 1))))``,
    a Gaussian noisy argmax with ``E[Phi(Z - k / ((C - 1) sigma))^(C-1)]``.
    Mechanisms that release the majority itself never name it: 0.
    """
    noise = None if mechanism is None else mechanism.argmax_noise()
    if noise is None or n_teachers < 1 or n_classes < 2:
        return 0.0
    kind, scale = noise
    share = n_teachers / (n_classes - 1)
    if kind == "exponential":
        top = min(0.5 * scale * share, 700.0)
        return float(1.0 / (1.0 + (n_classes - 1) * math.exp(top)))
    return _gaussian_argmax_share(-share / scale, n_classes)


def _unanimous_release_share(model):
    return unanimous_release_share(
        getattr(model, "privacy_mechanism_", None),
        int(getattr(model, "n_estimators_", 0) or 0),
        len(model.classes_),
    )


def warn_if_absent_classes_would_be_answered(model, mechanism, n_teachers, n_classes):
    """Warn before training when a class absent from ``y`` would still be answered.

    Whether every class of ``classes`` occurs in ``y`` is not checked: that
    would read the private labels before the spend (a ``y`` without one
    class is a neighbour of one with it), an unpaid release
    (``docs/privacy_contract.rst``, "What fit reads before the spend").
    This says instead, from public numbers only, how often the mechanism's
    noise alone would name such a class; after the spend, the released
    answers are watched for it (free).
    """
    share = absent_class_share(mechanism, n_teachers, n_classes)
    if n_classes < 3 or share < _ABSENT_CLASS_SHARE:
        return
    warn_user(
        f"{type(model).__name__} with {n_classes} classes and {n_teachers} "
        f"teachers at epsilon={model.epsilon:g}: a class that no teacher votes "
        f"for would still be named in up to {share:.1%} of answers, by the "
        "noise alone. If a class in `classes` may not occur in your training "
        "labels, leave it out of `classes`: every answer naming it would be "
        "noise. (Whether it occurs is not checked, since that would read the "
        "private labels; the released answers are watched for it, for free.)",
        UserWarning,
    )


def _watch_for_absent_classes(model, counts):
    """Warn once when a class is named no more often than noise alone names one.

    Post-processing of released answers and public numbers: a class named
    in at most the share the mechanism gives a class without votes
    (:func:`absent_class_share`, within two standard errors; never named,
    for mechanisms that release the majority itself), over 200 or more
    answers, likely does not occur in the training labels.
    """
    state = model._serving_state_
    n_classes = len(model.classes_)
    total = int(counts.sum())
    if (
        getattr(state, "absent_class_warned", False)
        or n_classes < 3
        or total < _ONE_CLASS_MIN_ANSWERS
    ):
        return
    noise = absent_class_share(
        model.privacy_mechanism_, model.n_estimators_, n_classes
    )
    bound = noise + 2.0 * math.sqrt(noise * (1.0 - noise) / total)
    rare = int(counts.argmin())
    if counts[rare] / total > bound or (noise == 0.0 and counts[rare] > 0):
        return
    state.absent_class_warned = True
    label = _plain(model.classes_[rare])
    warn_user(
        f"class {label!r} is named in {counts[rare] / total:.1%} "
        f"of the {total} answers {type(model).__name__} released so far, no "
        "more often than the noise alone names a class that no teacher votes "
        f"for (up to {noise:.1%}): it may not occur in the training labels, "
        "and then every answer naming it is noise. If it is not a real "
        "outcome, leave it out of `classes` in the next fit. (This check "
        "reads only the released answers: it is free and private.)",
        UserWarning,
    )


def _watch_for_one_class(model, index):
    """Warn once when the released answers name one class almost always.

    Reads only what the model has released (answered rows' labels) and
    public numbers, so the check is post-processing of private answers:
    free, and nothing about the data beyond the answers is shown. It
    catches teachers that learned nothing but the majority class (tiny
    shards of text, say). A mechanism that blurs its answers (the
    exponential mechanism, GNMax) releases a unanimous class only with a
    probability ``p`` it knows from public numbers
    (:func:`_unanimous_release_share`), and another class otherwise; so the
    share ``s`` of the top class is compared with what that noise alone
    gives: the share of queries the teachers vote it on is estimated as
    ``q = (s - r) / (p - r)``, ``r = (1 - p) / (C - 1)``, and the warning
    fires when ``q`` reaches 97 % (within two standard errors of the
    count), once the estimate is within 5 %.
    """
    state = model._serving_state_
    n_classes = len(model.classes_)
    counts = getattr(state, "released_class_counts", None)
    if counts is None:
        counts = np.zeros(n_classes, dtype=np.int64)
    counts = counts + np.bincount(index, minlength=n_classes)
    state.released_class_counts = counts
    _watch_for_absent_classes(model, counts)
    total = int(counts.sum())
    if (
        getattr(state, "one_class_warned", False)
        or n_classes < 2
        or total < _ONE_CLASS_MIN_ANSWERS
    ):
        return
    share = counts.max() / total
    unanimous = _unanimous_release_share(model)
    other = (1.0 - unanimous) / (n_classes - 1)
    spread = unanimous - other
    if spread <= 0:
        return
    voted = (share - other) / spread
    error = math.sqrt(share * (1.0 - share) / total) / spread
    if error > _ONE_CLASS_MAX_ERROR or voted < _ONE_CLASS_SHARE - 2.0 * error:
        return
    state.one_class_warned = True
    top = _plain(model.classes_[int(counts.argmax())])
    blurred = (
        ""
        if unanimous >= 1.0 - 1e-9
        else (
            f" That is about what this model's noise alone gives (it releases "
            f"a class every teacher votes for {unanimous:.0%} of the time), "
            "so its teachers likely vote that class on almost every query."
        )
    )
    warn_user(
        f"{share:.1%} of the {total} answers {type(model).__name__} released "
        f"so far name one class ({top!r}).{blurred} Teachers that vote one "
        "class on almost every query learned little but the majority class: "
        "fewer, larger shards (a smaller n_estimators), a public feature map "
        "fitted on public data, or a KnowledgeTransferClassifier student "
        "help. (This check reads only the released answers: it is free and "
        "private.)",
        UserWarning,
    )


def labels_from_indices(model, values):
    """Class labels of released class indices; ``abstain_label_`` where abstained.

    ``values`` holds the fields ``"label"`` (indices into ``classes_``) and,
    optionally, ``"abstained"``; the array has a dtype that holds both the
    classes and the abstention label (so padding never truncates it).
    """
    classes = model.classes_
    index = values["label"]
    abstained = values.get("abstained")
    if abstained is None:
        abstained = np.zeros(index.shape[0], dtype=bool)
    labels = np.empty(index.shape[0], dtype=output_dtype(classes, model.abstain_label_))
    labels[~abstained] = classes[index[~abstained]]
    _watch_for_one_class(model, index[~abstained])
    if abstained.any():
        labels[abstained] = model.abstain_label_
    return labels


def _indices_of(classes, labels):
    """Indices into ``classes`` of released labels (every label is a class)."""
    import pandas as pd

    return pd.Index(classes).get_indexer(np.asarray(labels, dtype=object))


def answer_sources(abstained, from_student):
    """Where each row's answer came from: ``"private"``, ``"student"``, ``"abstained"``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.ensemble._base import answer_sources
    >>> answer_sources(np.array([False, False, True]),
    ...                np.array([False, True, False])).tolist()
    ['private', 'student', 'abstained']
    """
    source = np.full(len(abstained), "private", dtype="<U9")
    if from_student is not None:
        source[from_student] = "student"
    source[abstained] = "abstained"
    return source


def predict_outputs(answers, abstained, sources, return_abstained, return_source):
    """``predict``'s return value: the answers, then the masks asked for."""
    if not (return_abstained or return_source):
        return answers
    out = [answers]
    if return_abstained:
        out.append(abstained)
    if return_source:
        out.append(answer_sources(abstained, sources.get("student")))
    return tuple(out)
