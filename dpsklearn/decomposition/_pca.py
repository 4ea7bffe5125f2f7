"""Private PCA and standardisation from one released Gram matrix or moment.

Each column is clipped to its public bounds and mapped to ``z`` in [-1, 1];
the row ``phi = [z, 1] / sqrt(d + 1)`` has norm at most 1. Both estimators
release through :class:`~dpsklearn.mechanisms.SufficientStatisticsRelease`
(``docs/no_public_rows.rst``, "The release"), exact Gaussian DP:

* :class:`PrivatePCA`: the Gram matrix ``Phi^T Phi`` alone (replace-one
  sensitivity ``sqrt 2``; the "Analyze Gauss" release of Dwork, Talwar,
  Thakurta and Zhang 2014, at the exact replace-one sensitivity), whose last
  column holds the sums and the rest the second moments: the covariance
  ``E[z z^T] - E[z] E[z]^T`` with the public ``n``, and its eigenvectors;
* :class:`PrivateStandardScaler`: the moment of ``[z, z^2, 1]`` (norm at
  most 1 after division by ``sqrt(2 d + 1)``) against a label column of
  ones, alone: per-column means and variances.

Everything fitted is post-processing, so both transformers are publishable.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._base import FitPlan, PrivateEstimatorMixin, keeps_live_model
from .._dask_input import DaskRows, check_partition, dask_rows, is_dask_collection
from .._param_validation import HasMethods, Interval
from .._validation import warn_if_delta_large
from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning
from ..mechanisms import SufficientStatisticsRelease

__all__ = ["PrivatePCA", "PrivateStandardScaler"]

_CONSTRAINTS: dict = {
    "bounds": ["array-like", None],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
    "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
}


class _BoundedColumnsMixin(PrivateEstimatorMixin):
    """Numeric columns mapped by public bounds to [-1, 1] (missing at 0)."""

    bounds: Any
    epsilon: float
    delta: float
    bounds_: np.ndarray

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = True
        return tags

    def _input_allows_nan(self):
        return True

    __dpsklearn_publishable__ = True

    def _validated_columns(self, X) -> tuple[Any, np.ndarray]:
        self._check_finite_epsilon()
        if is_dask_collection(X):
            return self._validated_dask_columns(X)
        X = self._validate_input(X, accept_sparse=False)
        X = np.asarray(X, dtype=np.float64)
        if self.bounds is None:
            warn_user(
                "bounds is None: the columns' ranges are read from the private "
                "training rows. Pass their public (lower, upper) as `bounds`.",
                PrivacyLeakWarning,
            )
            lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
            limits = np.vstack([lo, np.where(hi > lo, hi, lo + 1.0)])
            limits = np.nan_to_num(limits, nan=0.0)
            limits[1] = np.maximum(
                limits[1], limits[0] + 1.0 * (limits[1] <= limits[0])
            )
        else:
            limits = np.asarray(self.bounds, dtype=np.float64)
            if limits.shape == (2,):
                limits = np.tile(limits[:, None], (1, X.shape[1]))
            if (
                limits.shape != (2, X.shape[1])
                or not np.all(np.isfinite(limits))
                or np.any(limits[0] >= limits[1])
            ):
                raise ValueError(
                    "bounds must be finite (lower, upper) with lower < upper, of "
                    f"shape (2,) or (2, {X.shape[1]}), got {self.bounds!r}."
                )
        warn_if_delta_large(float(self.delta), X.shape[0])
        return X, limits

    def _validated_dask_columns(self, X) -> tuple[DaskRows, np.ndarray]:
        """A Dask ``X`` (``docs/cluster.rst``): handles, and the public bounds.

        The bounds must be given: reading them would read the rows. The
        statistic is summed over the partitions where they live, before the
        spend (:meth:`_train`), and released once, as for NumPy input.
        """
        from sklearn.utils.validation import validate_data

        if self.bounds is None:
            raise ValueError(
                "bounds: with a Dask X the columns' bounds must be public; pass "
                "`bounds` (they are not read from the rows on a cluster)."
            )
        rows = dask_rows(X, allow_nan=True, consumer=type(self).__name__)
        validate_data(self, rows.meta, reset=True, skip_check_array=True)
        d = rows.shape[1]
        limits = np.asarray(self.bounds, dtype=np.float64)
        if limits.shape == (2,):
            limits = np.tile(limits[:, None], (1, d))
        if (
            limits.shape != (2, d)
            or not np.all(np.isfinite(limits))
            or np.any(limits[0] >= limits[1])
        ):
            raise ValueError(
                "bounds must be finite (lower, upper) with lower < upper, of "
                f"shape (2,) or (2, {d}), got {self.bounds!r}."
            )
        warn_if_delta_large(float(self.delta), rows.shape[0])
        return rows, limits

    def _scaled(self, X, limits=None) -> np.ndarray:
        limits = self.bounds_ if limits is None else limits
        return _scale_columns(X, limits)

    def _query(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = self._validate_input(X, reset=False, accept_sparse=False)
        return self._scaled(np.asarray(X, dtype=np.float64))


class PrivatePCA(_BoundedColumnsMixin, TransformerMixin, BaseEstimator):
    """Differentially private PCA from one released Gram matrix (module notes).

    Parameters
    ----------
    n_components : int, default=None
        Components kept (``None``: all).
    bounds : array-like of shape (2,) or (2, n_features), default=None
        Public column bounds; ``None`` reads them from the rows with a
        :class:`~dpsklearn.PrivacyLeakWarning`. Components are in the units
        of the columns scaled to [-1, 1] by them.
    epsilon : float, default=1.0
    delta : float, default=1e-5
    accountant : PrivacyAccountant, default=None
    noise_random_state : int, default=None

    Attributes
    ----------
    bounds_ : ndarray of shape (2, n_features)
    mean_ : ndarray of shape (n_features,)
        Released mean of the scaled columns.
    components_ : ndarray of shape (n_components, n_features)
    explained_variance_ : ndarray of shape (n_components,)
    n_components_ : int
    privacy_mechanism_ : SufficientStatisticsRelease
    calibration_ : str
    noise_std_ : (float, float, float)
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.decomposition import PrivatePCA
    >>> rng = np.random.default_rng(0)
    >>> t = rng.uniform(-1, 1, 20_000)
    >>> noise = rng.normal(0, 0.1, size=(20_000, 2))
    >>> X = np.column_stack([t, t + noise[:, 0], noise[:, 1]])
    >>> pca = PrivatePCA(n_components=1, bounds=(-2, 2)).fit(X)
    >>> bool(abs(abs(pca.components_[0, 0]) - 0.707) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        **_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        n_components: int | None = None,
        *,
        bounds: ArrayLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: ArrayLike, y: Any = None) -> PrivatePCA:
        """Release the Gram matrix of the scaled rows and its eigenvectors.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        X, limits = self._validated_columns(X)
        d = X.shape[1]
        k = d if self.n_components is None else int(self.n_components)
        if k > d:
            raise ValueError(f"n_components={k} is more than the {d} columns.")
        mechanism = SufficientStatisticsRelease.calibrate(
            self.epsilon,
            self.delta,
            n_features=d + 1,
            feature_bound=1.0,
            label_bound=1.0,
            shares=(1.0, 0.0, 0.0),
        )
        return FitPlan(
            mechanism,
            X,
            None,
            delta=self.delta,
            serving={"released": True},
            attributes={"bounds_": limits, "n_components_": k},
        )

    def _train(self, plan):
        # Non-private until _release replaces it by its noisy release.
        X = plan.X
        if isinstance(X, DaskRows):
            limits = plan.attributes["bounds_"]
            gram = _sum_over_partitions(X, _partition_gram, limits)
            return {"_gram": gram, "_n": X.shape[0]}
        rows = np.hstack(
            [self._scaled(X, plan.attributes["bounds_"]), np.ones((X.shape[0], 1))]
        )
        rows /= math.sqrt(X.shape[1] + 1) / (1.0 - 2.0**-50)
        return {"_gram": rows.T @ rows, "_n": X.shape[0]}

    def _release(self, plan, fitted, noise):
        # Only the noisy Gram matrix leaves the fit.
        n = fitted.pop("_n")  # public: the number of rows
        gram = plan.mechanism.release(fitted.pop("_gram"), None, None, noise).gram
        d = gram.shape[0] - 1
        gram = gram * (d + 1) / (1.0 - 2.0**-50) ** 2 / n
        mean = np.clip(gram[:d, d], -1.0, 1.0)
        covariance = gram[:d, :d] - np.outer(mean, mean)
        values, vectors = linalg.eigh(covariance)
        order = np.argsort(values)[::-1][: plan.attributes["n_components_"]]
        components = vectors[:, order].T
        # A deterministic sign (the largest entry positive), as scikit-learn's.
        signs = np.sign(
            components[np.arange(len(order)), np.argmax(np.abs(components), axis=1)]
        )
        fitted["mean_"] = mean
        fitted["components_"] = components * signs[:, None]
        fitted["explained_variance_"] = np.maximum(values[order], 0.0)

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project the scaled rows onto the released components (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_queries, n_components)
        """
        return (self._query(X) - self.mean_) @ self.components_.T


class PrivateStandardScaler(
    OneToOneFeatureMixin, _BoundedColumnsMixin, TransformerMixin, BaseEstimator
):
    """Differentially private standardisation from released sums (module notes).

    ``transform`` returns ``(z - mean_) / scale_`` for the columns scaled to
    ``z`` in [-1, 1] by their public bounds.

    Parameters
    ----------
    bounds : array-like of shape (2,) or (2, n_features), default=None
        Public column bounds (``None``: read, with a warning).
    epsilon : float, default=1.0
    delta : float, default=1e-5
    accountant : PrivacyAccountant, default=None
    noise_random_state : int, default=None

    Attributes
    ----------
    bounds_ : ndarray of shape (2, n_features)
    mean_, var_, scale_ : ndarray of shape (n_features,)
        Released mean and variance of ``z`` (variance floored at 1e-6) and
        its square root.
    privacy_mechanism_ : SufficientStatisticsRelease
    calibration_ : str
    noise_std_ : (float, float, float)
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.decomposition import PrivateStandardScaler
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(50_000, 2))
    >>> Z = PrivateStandardScaler(bounds=(0, 10)).fit(X).transform(X)
    >>> np.round(Z.std(axis=0), 1).tolist()
    [1.0, 1.0]
    """

    _parameter_constraints: dict = dict(_CONSTRAINTS)

    def __init__(
        self,
        *,
        bounds: ArrayLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: ArrayLike, y: Any = None) -> PrivateStandardScaler:
        """Release the columns' sums and sums of squares.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        X, limits = self._validated_columns(X)
        mechanism = SufficientStatisticsRelease.calibrate(
            self.epsilon,
            self.delta,
            n_features=2 * X.shape[1] + 1,
            feature_bound=1.0,
            label_bound=1.0,
            shares=(0.0, 1.0, 0.0),
        )
        return FitPlan(
            mechanism,
            X,
            None,
            delta=self.delta,
            serving={"released": True},
            attributes={"bounds_": limits},
        )

    def _train(self, plan):
        # Non-private until _release replaces it by its noisy release.
        if isinstance(plan.X, DaskRows):
            limits = plan.attributes["bounds_"]
            return {"_sums": _sum_over_partitions(plan.X, _partition_sums, limits)}
        z = self._scaled(plan.X, plan.attributes["bounds_"])
        rows = np.hstack([z, z * z, np.ones((z.shape[0], 1))])
        scale = (1.0 - 2.0**-50) / math.sqrt(rows.shape[1])
        return {"_sums": rows.sum(axis=0) * scale}

    def _release(self, plan, fitted, noise):
        # Only the noisy sums leave the fit.
        sums = plan.mechanism.release(None, fitted.pop("_sums"), None, noise).moment
        sums = sums * math.sqrt(sums.shape[0]) / (1.0 - 2.0**-50)
        d = (sums.shape[0] - 1) // 2
        count = max(sums[-1], 1.0)
        mean = np.clip(sums[:d] / count, -1.0, 1.0)
        variance = np.maximum(sums[d : 2 * d] / count - mean**2, 1e-6)
        fitted.update(mean_=mean, var_=variance, scale_=np.sqrt(variance))

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Standardise with the released mean and scale (free).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_queries, n_features)
        """
        return (self._query(X) - self.mean_) / self.scale_


def _scale_columns(X, limits) -> np.ndarray:
    """Columns mapped by their public bounds to [-1, 1], missing values at 0."""
    z = (np.clip(X, limits[0], limits[1]) - limits[0]) / (limits[1] - limits[0])
    return np.nan_to_num(2.0 * z - 1.0, nan=0.0)


def _partition_gram(X, limits) -> np.ndarray:
    """One partition's Gram matrix of the scaled rows and a constant (a worker)."""
    check_partition(X, None, None, allow_nan=True, consumer="PrivatePCA")
    X = np.asarray(X, dtype=np.float64)
    rows = np.hstack([_scale_columns(X, limits), np.ones((X.shape[0], 1))])
    rows /= math.sqrt(X.shape[1] + 1) / (1.0 - 2.0**-50)
    return rows.T @ rows


def _partition_sums(X, limits) -> np.ndarray:
    """One partition's sums of ``[z, z^2, 1]``, scaled (a worker)."""
    check_partition(X, None, None, allow_nan=True, consumer="PrivateStandardScaler")
    z = _scale_columns(np.asarray(X, dtype=np.float64), limits)
    rows = np.hstack([z, z * z, np.ones((z.shape[0], 1))])
    scale = (1.0 - 2.0**-50) / math.sqrt(rows.shape[1])
    return rows.sum(axis=0) * scale


def _sum_over_partitions(rows: DaskRows, statistic, limits) -> np.ndarray:
    """``statistic`` of every partition, where it lives, added in the client."""
    import dask

    parts = [dask.delayed(statistic)(part, limits) for part in rows.partitions]
    return np.sum(dask.compute(*parts), axis=0)
