"""Shared fit machinery of the teacher-ensemble estimators (SPEC 2.1, 3, 8).

The ensembles differ only in how they answer a query; validation, the public
label set, the partition, the parallel fit of teachers, the vote counts, the
accountant and the noise generators are the same, so they live here once.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .accounting import PrivacyAccountant
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .fused import fused_ensemble, why_not_fusable
from .sharding import fit_teachers, partition_indices, teacher_outputs, teacher_seeds
from .votes import vote_counts

__all__ = []

# Constraints shared by every teacher ensemble (sklearn's _param_validation,
# the accepted private import: SPEC "Dependencies").
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

ACCEPT_SPARSE = ("csr", "csc")


@contextlib.contextmanager
def _naming_empty_input():
    """Say that an empty array is ``X`` (sklearn's message names no input, SPEC 6)."""
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        if "0 sample(s)" in message or "0 feature(s)" in message:
            raise ValueError(f"X must not be empty: {message}") from exc
        raise


class BudgetMixin:
    """The budget steps every private estimator shares (SPEC 4).

    ``accountant=None`` gives the model its own accountant for ``(epsilon,
    delta)``; a shared one is used as it is. Before any private computation
    the fit checks that the accountant can pay for all of the release's
    events together (under its own composition), so a short budget refuses
    the fit, not a later query.
    """

    # Fitted means a completed fit: a fit that failed part-way (a refused
    # budget, a bad abstain_label) may already have set classes_, which alone
    # would make check_is_fitted pass and predict crash or serve stale state.
    _fitted_marker = "_serving_state_"

    def __sklearn_is_fitted__(self):
        return hasattr(self, self._fitted_marker)

    def _start_fit(self):
        """Forget a previous fit, so a refit that fails leaves the model unfitted."""
        vars(self).pop(self._fitted_marker, None)
        self._validate_params()

    def _get_accountant(self, epsilon, delta=0.0):
        if self.accountant is None:
            return PrivacyAccountant._for_model(epsilon, delta)
        return self.accountant

    def _check_budget_available(self, accountant, events):
        """Refuse before training when the accountant cannot pay for the fit."""
        events = list(events)
        if not accountant.can_spend_events(events):
            epsilon = math.fsum(e.epsilon * e.count for e in events)
            delta = math.fsum(e.delta * e.count for e in events)
            remaining = accountant.remaining
            raise BudgetExhaustedError(
                f"the accountant cannot pay for this fit: it needs (epsilon="
                f"{epsilon:.6g}, delta={delta:.3g}) under basic composition and "
                f"has (epsilon={remaining[0]:.6g}, delta={remaining[1]:.3g}) left "
                f"under {getattr(accountant, 'composition', 'its composition')}.",
                spends=accountant.events,
            )


class PublicLabelsMixin:
    """Classifier input validation with a public label set (SPEC 1).

    ``classes`` is a public parameter; left unset, ``classes_ = unique(y)``
    with a :class:`PrivacyLeakWarning`. Labels become indices into
    ``classes_`` so every teacher or hypothesis votes on the global classes.
    """

    # -- validation ----------------------------------------------------------
    def _validate_classification_data(self, X, y):
        """Validate ``X, y``, fix ``classes_`` and return ``y`` as class indices."""
        with _naming_empty_input():
            X, y = validate_data(self, X, y, accept_sparse=ACCEPT_SPARSE)
        try:
            check_classification_targets(y)
        except ValueError as exc:  # sklearn's message does not say which input
            raise ValueError(f"y must hold class labels: {exc}") from exc
        if self.classes is None:
            warnings.warn(
                "classes is None: the label set is taken from the private "
                "training labels (classes_ = unique(y)), so a label held by one "
                "record can appear in the output range. Pass the public label "
                "set as `classes`.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            classes = np.unique(y)
        else:
            classes = np.unique(np.asarray(self.classes))
            if classes.ndim != 1 or classes.size == 0:
                raise ValueError("classes must be a non-empty 1-D array of labels.")
            unseen = np.setdiff1d(np.unique(y), classes)
            if unseen.size:
                raise ValueError(
                    f"y contains {unseen.size} label(s) that are not in the given "
                    "`classes`; every training label must be one of `classes`."
                )
        self.classes_ = classes
        return X, np.searchsorted(classes, y).astype(np.int64)


class TeacherEnsembleMixin(BudgetMixin, PublicLabelsMixin):
    """Fit steps shared by the ensembles; the subclass answers queries."""

    def _base_estimator(self):
        if self.estimator is None:
            return LogisticRegression()
        return self.estimator

    def _check_epsilon_delta(self, n_samples, *, delta_positive):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon!r}.")
        delta = getattr(self, "delta", 0.0)
        if delta_positive and not (0 < delta < 1):
            raise ValueError(
                f"delta must be in (0, 1) for {type(self).__name__}, got {delta!r}."
            )
        if delta > 0 and delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={delta:g} is not below 1/n_samples={1.0 / n_samples:g}: "
                "a mechanism could then publish a whole record with probability "
                "delta. Choose delta well below 1/n.",
                UserWarning,
                stacklevel=3,
            )

    def _resolve_n_estimators(self, n_samples):
        if self.n_estimators == "auto":
            return max(1, n_samples // self.min_samples_per_shard)
        if self.n_estimators > n_samples:
            raise ValueError(
                f"n_estimators={self.n_estimators} needs at least one row per "
                f"shard, but n_samples={n_samples}."
            )
        return int(self.n_estimators)

    # -- teachers ------------------------------------------------------------
    def _fit_teacher_ensemble(self, X, y_encoded, n_estimators, *, classifier=True):
        rng = check_random_state(self.random_state)
        shards = partition_indices(X.shape[0], n_estimators, rng)
        seeds = teacher_seeds(rng, n_estimators)
        self.estimators_ = fit_teachers(
            clone(self._base_estimator()),
            X,
            y_encoded,
            shards,
            seeds,
            n_classes=len(self.classes_) if classifier else None,
            n_jobs=self.n_jobs,
            verbose=self.verbose,
        )
        self.n_estimators_ = n_estimators
        self._fused_ensemble_ = self._build_fused_ensemble() if classifier else None

    def _build_fused_ensemble(self):
        """Stack linear teachers for the fused vote path (issue 7, item 3).

        ``fused="auto"`` (also the default of estimators without a ``fused``
        parameter) uses it when every teacher can be fused; ``True`` requires
        it; ``False`` keeps the per-teacher path. Votes are identical either
        way (:mod:`dpsklearn.fused`).
        """
        mode = getattr(self, "fused", "auto")
        if mode is False:
            return None
        fused = fused_ensemble(self.estimators_, len(self.classes_))
        if fused is None and mode is True:
            reasons = {why_not_fusable(t) for t in self.estimators_} - {None}
            raise ValueError(
                "fused=True needs every teacher to be a linear classifier or a "
                "Pipeline of affine scalers and one; here: "
                f"{'; '.join(sorted(reasons)) or 'teachers disagree on n_features'}."
                " Use fused='auto' or False."
            )
        return fused

    def _vote_counts(self, X):
        """Vote counts ``(n_queries, n_classes)`` of the teachers on ``X`` (chunked)."""
        fused = getattr(self, "_fused_ensemble_", None)
        if fused is not None:
            return fused.vote_counts(X, self.estimators_)
        n_classes = len(self.classes_)
        counts = np.empty((X.shape[0], n_classes), dtype=np.int64)
        for rows, predictions in teacher_outputs(self.estimators_, X, "predict"):
            counts[rows] = vote_counts(predictions.astype(np.int64), n_classes)
        return counts

    def _validate_query(self, X):
        check_is_fitted(self)
        with _naming_empty_input():
            return validate_data(self, X, reset=False, accept_sparse=ACCEPT_SPARSE)


def check_abstain_label(abstain_label, classes, needed_by):
    """``abstain_label`` must be given, outside ``classes`` and of the same kind."""
    if abstain_label is None:
        raise ValueError(
            f"abstain_label must be set when {needed_by}: it is the answer "
            "returned for queries the model abstains on."
        )
    numeric_classes = classes.dtype.kind in "biuf"
    is_number = isinstance(abstain_label, (Real, np.number)) and not isinstance(
        abstain_label, (bool, np.bool_)
    )
    if numeric_classes != is_number:
        raise TypeError(
            f"abstain_label={abstain_label!r} must have the same type as the "
            f"class labels ({'numbers' if numeric_classes else 'strings'})."
        )
    if np.any(classes == abstain_label):
        raise ValueError(
            f"abstain_label={abstain_label!r} is one of the classes; it must be "
            "a value that no real answer can take."
        )


def check_regression_targets(y):
    """Regression targets as numbers, or a ValueError naming ``y`` (SPEC 6).

    scikit-learn's ``y_numeric`` converts object arrays only: an array of
    strings passes ``validate_data`` unchanged and fails later (in a
    teacher's fit, the loss, a clip) with a message that names no
    parameter. Strings and objects are converted to float here, before
    ``validate_data``; what does not convert is refused. The message never
    shows the values (they are private labels). ``None`` and arrays that
    are not rectangular are left to ``validate_data`` and its messages.
    """
    if y is None:
        return y
    try:
        values = np.asarray(y)
    except (TypeError, ValueError):
        return y
    if values.dtype.kind not in "USO":
        return y
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "y must hold numeric regression targets, got an array of dtype "
            f"{values.dtype} whose values are not numbers."
        ) from None


def output_dtype(classes, abstain_label):
    if abstain_label is None:
        return classes.dtype
    return np.result_type(classes, np.asarray([abstain_label]))
