"""Private naive Bayes from per-class counts and sums released once.

Every numeric column ``j`` is mapped by its public bounds to ``t_j`` in [0,
1] (a missing value to the public fill 1/2; the log scale of
:class:`~dpsklearn.preprocessing.AdditiveFeatureMap` for wide non-negative
ranges) and contributes ``(t_j, t_j^2)``; every categorical column its
one-hot over the public categories and a missing slot; a constant counts
the rows. Divided by the public ``B = sqrt(1 + n_categorical + 2
n_numeric)``, the row ``phi`` has norm at most 1, and with the one-hot label
row ``y`` (``||y|| = 1``) the per-class counts, sums and sums of squares are
the moment ``Phi^T Y``, released once by
:class:`~dpsklearn.mechanisms.SufficientStatisticsRelease` with the whole
budget on the moment (the Gram matrix and eigenvalue not released; share
0). Its replace-one sensitivity is ``2 B_x B_y = 2``
(``docs/no_public_rows.rst``, "The release"); the Gaussian release is
``mu``-GDP, converted to ``(epsilon, delta)`` exactly. The class
priors, means, variances and category frequencies are post-processing.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._base import FitPlan, PrivateEstimatorMixin, keeps_live_model
from .._dask_input import (
    DaskLabels,
    DaskRows,
    check_partition,
    check_public_columns,
    dask_training_data,
    is_dask_collection,
)
from .._param_validation import HasMethods, Interval
from .._validation import warn_if_delta_large
from ..mechanisms import SufficientStatisticsRelease
from ..preprocessing import (
    AdditiveFeatureMap,
    PublicSchema,
    TabularInputMixin,
    resolve_columns,
)

__all__ = ["PrivateNaiveBayes"]

#: The smallest variance of ``t`` a released class may have (a column that is
#: constant in a class would otherwise score its other values at -inf).
VARIANCE_FLOOR = 1e-3


def _moment_features(feature_map: AdditiveFeatureMap, codes: np.ndarray) -> np.ndarray:
    """``[t, t^2]`` per numeric column, one-hot per categorical, a constant."""
    blocks, rows = [], np.arange(codes.shape[0])
    for j, (_, kind, desc) in enumerate(feature_map.columns):
        code = codes[:, j]
        if kind == "categorical":
            block = np.zeros((codes.shape[0], len(desc) + 1))
            slot = np.where(np.isnan(code), len(desc), np.nan_to_num(code))
            block[rows, slot.astype(np.int64)] = 1.0
        else:
            t = np.where(np.isnan(code), 0.5, code)
            block = np.column_stack([t, t * t])
        blocks.append(block)
    blocks.append(np.ones((codes.shape[0], 1)))
    return np.hstack(blocks) * _scale(feature_map)


def _scale(feature_map: AdditiveFeatureMap) -> float:
    kinds = [kind for _, kind, _ in feature_map.columns]
    squared = 1 + kinds.count("categorical") + 2 * kinds.count("numeric")
    return (1.0 - 2.0**-50) / math.sqrt(squared)


class PrivateNaiveBayes(
    TabularInputMixin, PrivateEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Differentially private naive Bayes (Gaussian and categorical columns).

    Per class: a Gaussian on each numeric column's scaled value ``t`` and the
    frequencies of each categorical column's categories, from counts, sums
    and sums of squares released once (module notes; the Gaussian
    mechanism on ``Phi^T Y``, Dong, Roth and Su 2022, Corollary 3.3 for the
    exact conversion). Noisy counts are floored at 1, variances at
    ``VARIANCE_FLOOR``, category counts at 0 plus one pseudo-count.

    Privacy: ``(epsilon, delta)``-DP with respect to replacing one record;
    the fitted model holds the public map and the released parameters only
    and may be published.

    Parameters
    ----------
    schema : PublicSchema, default=None
        Public bounds, categories and classes (unset ones are read from the
        rows with a :class:`~dpsklearn.PrivacyLeakWarning`).
    classes : array-like, default=None
        The public label set (else ``schema.classes``).
    epsilon : float, default=1.0
    delta : float, default=1e-5
    accountant : PrivacyAccountant, default=None
    noise_random_state : int, default=None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    feature_map_ : AdditiveFeatureMap
        The public columns (its encoding of ``t``; no bins are used).
    class_count_ : ndarray of shape (n_classes,)
        Released row counts per class (floored at 1).
    theta_, var_ : ndarray of shape (n_classes, n_numeric)
        Released means and variances of ``t`` per class.
    category_log_prob_ : list of ndarray of shape (n_classes, n_categories + 1)
        Per categorical column, log frequencies (the last slot: missing).
    privacy_mechanism_ : SufficientStatisticsRelease
    calibration_ : str
    noise_std_ : (float, float, float)
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.naive_bayes import PrivateNaiveBayes
    >>> from dpsklearn.preprocessing import PublicSchema
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 20_000)
    >>> X = rng.normal(3.0 * y[:, None], 1.0, size=(20_000, 2))
    >>> schema = PublicSchema(bounds={0: (-4, 6), 1: (-4, 6)}, classes=[0, 1])
    >>> model = PrivateNaiveBayes(schema=schema, noise_random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)
    True
    """

    _parameter_constraints: dict = {
        "schema": [PublicSchema, None],
        "classes": ["array-like", None],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    __dpsklearn_publishable__ = True

    def __init__(
        self,
        *,
        schema: PublicSchema | None = None,
        classes: ArrayLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.schema = schema
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: Any, y: ArrayLike) -> PrivateNaiveBayes:
        """Release the per-class statistics of ``(X, y)``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        self._check_finite_epsilon()
        if is_dask_collection(X) or is_dask_collection(y):
            X, classes, labels = self._validate_dask_table(X, y)
            table = X.meta
        else:
            X, classes, index = self._validate_labelled_table(X, y)
            labels = np.eye(classes.size)[index]
            table = X
        warn_if_delta_large(float(self.delta), X.shape[0])
        feature_map = AdditiveFeatureMap(resolve_columns(table, self.schema), 0)
        kinds = [kind for _, kind, _ in feature_map.columns]
        width = 2 * kinds.count("numeric") + 1
        width += sum(len(d) + 1 for _, k, d in feature_map.columns if k != "numeric")
        mechanism = SufficientStatisticsRelease.calibrate(
            self.epsilon,
            self.delta,
            n_features=width,
            feature_bound=1.0,
            label_bound=1.0,
            shares=(0.0, 1.0, 0.0),
            n_targets=classes.size,
        )
        return FitPlan(
            mechanism,
            X,
            labels,
            delta=self.delta,
            training={"feature_map": feature_map, "width": width},
            serving={"released": True},
            attributes={"classes_": classes, "feature_map_": feature_map},
        )

    def _train(self, plan):
        # Non-private until _release replaces it by its noisy release.
        feature_map = plan.training["feature_map"]
        if isinstance(plan.X, DaskRows):
            return {"_moment": _dask_moment(plan.X, plan.y, feature_map)}
        codes = feature_map.encode(plan.X)
        features = _moment_features(feature_map, codes)
        moment = features.T @ plan.y
        return {"_moment": moment}

    def _release(self, plan, fitted, noise):
        # Only the noisy moment leaves the fit; the rest is post-processing.
        released = plan.mechanism.release(None, fitted.pop("_moment"), None, noise)
        moment = released.moment / _scale(plan.training["feature_map"])
        columns = plan.training["feature_map"].columns
        counts = np.maximum(moment[-1], 1.0)
        means, variances, categorical, start = [], [], [], 0
        for _, kind, desc in columns:
            if kind == "numeric":
                mean = np.clip(moment[start] / counts, 0.0, 1.0)
                second = moment[start + 1] / counts
                means.append(mean)
                variances.append(np.maximum(second - mean**2, VARIANCE_FLOOR))
                start += 2
            else:
                block = np.maximum(moment[start : start + len(desc) + 1], 0.0) + 1.0
                categorical.append(np.log(block / block.sum(axis=0)).T)
                start += len(desc) + 1
        k = counts.shape[0]
        fitted["class_count_"] = counts
        fitted["theta_"] = np.array(means).T if means else np.zeros((k, 0))
        fitted["var_"] = np.array(variances).T if variances else np.zeros((k, 0))
        fitted["category_log_prob_"] = categorical

    def _validate_dask_table(self, X, y):
        """Dask ``X, y`` (``docs/cluster.rst``): public columns and classes only.

        The moment is summed over the partitions where they live (by
        :meth:`_train`, before the spend: a label outside ``classes`` is
        refused there and nothing is spent).
        """
        from sklearn.utils.validation import validate_data

        classes = self.classes
        if classes is None and self.schema is not None:
            classes = self.schema.classes
        if classes is None:
            raise ValueError(
                "classes: with Dask X and y the label set must be public; pass "
                "`classes` (or the schema's classes)."
            )
        classes = np.unique(np.asarray(classes))
        rows, labels = dask_training_data(
            X, y, allow_nan=True, consumer=self._input_consumer()
        )
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        check_public_columns(rows.meta, self.schema)
        return rows, classes, labels.encoded(classes)

    def _joint_log_likelihood(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = self._validate_input(X, reset=False, accept_sparse=False)
        codes = self.feature_map_.encode(X)
        kinds = [kind for _, kind, _ in self.feature_map_.columns]
        numeric = [j for j, kind in enumerate(kinds) if kind == "numeric"]
        categorical = [j for j, kind in enumerate(kinds) if kind != "numeric"]
        log_prior = np.log(self.class_count_ / self.class_count_.sum())
        joint = np.tile(log_prior, (codes.shape[0], 1))
        if numeric:
            t = codes[:, numeric]
            t = np.where(np.isnan(t), 0.5, t)[:, None, :]
            joint -= 0.5 * np.sum(
                np.log(2 * np.pi * self.var_)[None]
                + (t - self.theta_[None]) ** 2 / self.var_[None],
                axis=2,
            )
        for log_prob, j in zip(self.category_log_prob_, categorical, strict=True):
            code = codes[:, j]
            slot = np.where(np.isnan(code), log_prob.shape[1] - 1, np.nan_to_num(code))
            joint += log_prob[:, slot.astype(np.int64)].T
        return joint

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities (post-processing).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
        """
        joint = self._joint_log_likelihood(X)
        return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class (post-processing).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        joint = self._joint_log_likelihood(X)
        return self.classes_[np.argmax(joint, axis=1)]


def _partition_moment(X, y, classes, feature_map):
    """One partition's moment ``features^T onehot(y)`` (runs on a worker)."""
    index = check_partition(X, y, classes, allow_nan=True, consumer="the map")
    features = _moment_features(feature_map, feature_map.encode(X))
    return features.T @ np.eye(classes.size)[index]


def _dask_moment(rows: DaskRows, labels: DaskLabels, feature_map) -> np.ndarray:
    """The moment summed over the partitions (only the sums come back)."""
    import dask

    parts = [
        dask.delayed(_partition_moment)(X_part, y_part, labels.classes, feature_map)
        for X_part, y_part in zip(rows.partitions, labels.partitions, strict=True)
    ]
    return np.sum(dask.compute(*parts), axis=0)
