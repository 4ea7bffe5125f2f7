"""Fit steps shared by the teacher ensembles.

The ensembles differ only in their mechanism; the teachers are the same:
``k`` clones of the base estimator fitted on a data-independent partition of
the rows, in parallel through joblib, and their votes on query rows counted
per class (through the fused path when every teacher is linear).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from sklearn.base import is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from .._base import PrivateEstimatorMixin
from .._param_validation import HasMethods, Interval, StrOptions
from .._validation import accepts_nan, warn_if_delta_large
from ..metrics._abstention import predict_with_abstentions, warn_if_abstained
from ..teachers import count_votes, fit_teacher_ensemble, fuse_teachers

__all__ = ["ENSEMBLE_CONSTRAINTS", "TeacherEnsembleMixin"]

# Constraints shared by every teacher ensemble.
ENSEMBLE_CONSTRAINTS = {
    "estimator": [HasMethods(["fit", "predict"]), None],
    "n_estimators": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "min_samples_per_shard": [Interval(Integral, 1, None, closed="left")],
    "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
    "random_state": ["random_state"],
    "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    "n_jobs": [Integral, None],
    "verbose": ["verbose"],
}


class TeacherEnsembleMixin(PrivateEstimatorMixin):
    """Fit steps shared by the ensembles; the subclass's mechanism answers."""

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
        warn_if_delta_large(delta, n_samples, stacklevel=5)

    def _supported_n_estimators(self, n_samples):
        """The most teachers that keep ``min_samples_per_shard`` rows each."""
        return max(1, n_samples // self.min_samples_per_shard)

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
            random_state=self.random_state,
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
        warn_if_abstained(self, abstained)
        metric = accuracy_score if is_classifier(self) else r2_score
        return float(metric(y, y_pred, sample_weight=sample_weight))

    def _validate_query(self, X):
        """Query rows by the input rule of ``fit`` (before anything is spent)."""
        check_is_fitted(self)
        return self._validate_input(X, reset=False)
