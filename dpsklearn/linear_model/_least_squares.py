"""Private least-squares classification and linear regression without public rows.

Both release AdaSSP sufficient statistics of the public additive feature map
once (:mod:`._additive_least_squares`; ``docs/no_public_rows.rst``) and
publish the weights solved from them.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from .._base import keeps_live_model
from .._dask_input import is_dask_collection
from .._param_validation import Interval
from .._validation import check_regression_targets
from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning
from ..preprocessing import PublicSchema
from ._additive_least_squares import (
    ADDITIVE_CONSTRAINTS,
    AdditiveLeastSquaresMixin,
    LabelRule,
)

__all__ = ["PrivateLeastSquaresClassifier", "PrivateLinearRegression"]

_ATTRIBUTES_DOC = """
    feature_map_ : AdditiveFeatureMap
        The public linear map (columns, bounds, categories; no data).
    bin_map_ : AdditiveFeatureMap or None
        The public bins of the second stage (None without bins).
    n_bins_ : int
        Bins per numeric column used.
    coef_ : ndarray of shape (n_features_out,) or (n_features_out, n_classes)
        The released linear stage's weights on ``feature_map_``
        (post-processing of the noisy statistics; the last row is the
        intercept's).
    bin_coef_ : ndarray or None
        The released bins stage's weights on ``bin_map_``.
    regulariser_, bin_regulariser_ : float or None
        Each stage's AdaSSP ridge ``lam``, set from its released smallest
        eigenvalue.
    label_bound_ : float
        ``B_y``, the bound on one record's centred label row.
    privacy_mechanism_ : SufficientStatisticsRelease or StagedStatisticsRelease
        The calibrated release (public figures only).
    calibration_ : str
        What certified the Gaussian noise (``"gdp"``: exact Gaussian DP).
    noise_std_ : tuple
        The noise deviations of the Gram matrix, moment and eigenvalue (of
        each stage, with bins).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str
"""


class PrivateLeastSquaresClassifier(
    AdditiveLeastSquaresMixin, ClassifierMixin, BaseEstimator
):
    __doc__ = (  # the shared attributes' entries are spliced in
        """A differentially private additive classifier for data with no public rows.

    Least squares on one-vs-rest labels over a public additive feature map
    (one-hot categories, per-column bins and the scaled value of numeric
    columns; :class:`~dpsklearn.preprocessing.AdditiveFeatureMap`), from
    sufficient statistics released once by AdaSSP (Wang 2018, Algorithm 2):
    the Gram matrix ``Phi^T Phi``, the per-class sums ``Phi^T Y`` and the
    Gram matrix's smallest eigenvalue, each with Gaussian noise at its
    replace-one sensitivity (``sqrt(2)``, ``2 B_y``, 1 for rows of norm at
    most 1), composed exactly as ``mu``-GDP (Dong, Roth and Su 2022,
    Corollary 3.3) and converted to ``(epsilon, delta)`` exactly
    (``docs/no_public_rows.rst``). Binary labels are one column ``y -
    1/2`` (``B_y = 1/2``); ``k > 2`` classes the one-hot rows centred at
    ``1/k`` (``B_y = sqrt((k - 1)/k)``). The class with the largest score is
    predicted (a threshold at 1/2 for two classes).

    Privacy: the fitted model is ``(epsilon, delta)``-DP with respect to
    replacing one training record; everything it holds is post-processing of
    the release, so it may be published, and its predictions are free,
    unlimited and deterministic. The whole budget is reserved at ``fit``.

    Parameters
    ----------
    schema : PublicSchema, default=None
        Public bounds of numeric columns, categories of categorical columns
        and (if ``classes`` is None) the label set. What it leaves unset is
        read from the training rows with a
        :class:`~dpsklearn.PrivacyLeakWarning`.
    n_bins : int or "auto", default="auto"
        Equal-width bins per numeric column (0: the scaled value only);
        ``"auto"``: :func:`~dpsklearn.preprocessing.auto_n_bins` of the
        number of numeric columns, of rows and ``epsilon`` (public).
    linear_share : float in (0, 1), default=0.3
        With bins: the linear stage's share of the budget (the bins fit its
        residuals with the rest).
    classes : array-like, default=None
        The public label set (else ``schema.classes``; else read from ``y``
        with a :class:`~dpsklearn.PrivacyLeakWarning`).
    epsilon : float, default=1.0
    delta : float, default=1e-5
        In (0, 1): the release is Gaussian.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from; ``None``: the model's own.
    noise_random_state : int, default=None
        Seeds the noise, for tests and experiments only. ``None``: OS entropy.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set used.
    """
        + _ATTRIBUTES_DOC
        + """
    See Also
    --------
    PrivateLinearRegression : the same release for a numeric target.
    dpsklearn.PrivateKernelRidge : random features on the same statistics.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dpsklearn.linear_model import PrivateLeastSquaresClassifier
    >>> from dpsklearn.preprocessing import PublicSchema
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"age": rng.uniform(18, 80, 5000),
    ...                   "job": rng.choice(["a", "b", None], 5000)})
    >>> y = (X["age"] > 40).astype(int)
    >>> schema = PublicSchema(bounds={"age": (18, 80)},
    ...                       categories={"job": ["a", "b"]}, classes=[0, 1])
    >>> model = PrivateLeastSquaresClassifier(schema=schema).fit(X, y)
    >>> bool(model.score(X, y) > 0.8), model.predict_proba(X[:2]).shape
    (True, (2, 2))
    """
    )

    _parameter_constraints: dict = {
        **ADDITIVE_CONSTRAINTS,
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        *,
        schema: PublicSchema | None = None,
        n_bins: int | str = "auto",
        linear_share: float = 0.3,
        classes: ArrayLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.schema = schema
        self.n_bins = n_bins
        self.linear_share = linear_share
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: Any, y: ArrayLike) -> PrivateLeastSquaresClassifier:
        """Release the statistics of ``(X, y)`` and the weights solved from them.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Private rows; strings, categoricals and missing values allowed.
        y : array-like of shape (n_samples,)
            Private labels, each in the public label set.

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        if is_dask_collection(X) or is_dask_collection(y):
            return self._plan_dask(X, y)
        X, classes, index = self._validate_labelled_table(X, y)
        k = classes.size
        if k <= 2:
            labels = (index == k - 1).astype(np.float64) - 0.5
            bound = 0.5
        else:
            labels = np.eye(k)[index] - 1.0 / k
            bound = math.sqrt((k - 1) / k)
        return self._plan_release(X, labels, bound, {"classes_": classes})

    def _plan_dask(self, X, y):
        # The label set must be public: reading it would read y.
        classes = self.classes
        if classes is None and self.schema is not None:
            classes = self.schema.classes
        if classes is None:
            raise ValueError(
                "classes: with Dask X and y the label set must be public; pass "
                "`classes` (or the schema's classes)."
            )
        classes = np.unique(np.asarray(classes))
        k = classes.size
        bound = 0.5 if k <= 2 else math.sqrt((k - 1) / k)
        rule = LabelRule("classes", classes=classes)
        return self._plan_dask_release(X, y, rule, bound, {"classes_": classes})

    def decision_function(self, X: Any) -> np.ndarray:
        """Released scores: ``(n,)`` for two classes, ``(n, k)`` otherwise.

        Free post-processing of the released weights.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        scores : ndarray
        """
        scores = self._scores(X)
        if self.classes_.size == 1:
            return np.zeros(scores.shape[0])
        return scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: the least-squares scores clipped and normalised.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
        """
        scores = self._scores(X)
        k = self.classes_.size
        if k == 1:
            return np.ones((scores.shape[0], 1))
        if k == 2:
            positive = np.clip(scores + 0.5, 0.0, 1.0)
            return np.column_stack([1.0 - positive, positive])
        proba = np.clip(scores + 1.0 / k, 1e-6, None)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """The class with the largest score (for two classes: score above 1/2).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        scores = self._scores(X)
        k = self.classes_.size
        if k == 1:
            return np.repeat(self.classes_, scores.shape[0])
        if k == 2:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]


class PrivateLinearRegression(AdditiveLeastSquaresMixin, RegressorMixin, BaseEstimator):
    __doc__ = (  # the shared attributes' entries are spliced in
        """Differentially private linear regression on a public additive map (AdaSSP).

    The linear stage of :class:`~dpsklearn.PrivateKernelRidge`'s default on
    its own, over the public additive feature map
    (:class:`~dpsklearn.preprocessing.AdditiveFeatureMap`; ``n_bins=0``:
    the scaled columns and one-hot categories only). Targets are clipped to
    the public range and centred at its midpoint (``B_y`` its half-width);
    ``Phi^T Phi``, ``Phi^T y`` and ``lambda_min`` are released once by
    AdaSSP (Wang 2018, Algorithm 2) with the replace-one sensitivities of
    ``docs/regression.rst``, "Sufficient-statistics perturbation", composed
    exactly as Gaussian DP. Predictions are clipped to the range.

    Privacy: the fitted model is ``(epsilon, delta)``-DP with respect to
    replacing one training record and may be published; its predictions are
    free.

    Parameters
    ----------
    schema : PublicSchema, default=None
        Public column bounds and categories, and (if ``y_bound`` is None) the
        target range; unset ones are read from the rows with a
        :class:`~dpsklearn.PrivacyLeakWarning`.
    n_bins : int or "auto", default="auto"
        As for :class:`PrivateLeastSquaresClassifier`. The bins stage fits
        the linear stage's residuals clipped to a quarter of the range's
        half-width: a target's residuals are small against its public range
        (``docs/no_public_rows.rst``, "Defaults").
    linear_share : float in (0, 1), default=0.7
        With bins: the linear stage's share of the budget.
    y_bound : (float, float), default=None
        The public target range (else ``schema.target_range``; else read
        from ``y`` with a :class:`~dpsklearn.PrivacyLeakWarning`).
    epsilon : float, default=1.0
    delta : float, default=1e-5
    accountant : PrivacyAccountant, default=None
    noise_random_state : int, default=None

    Attributes
    ----------
    target_range_ : (float, float)
        The public range used; predictions lie in it.
    center_ : float
        Its midpoint.
    """
        + _ATTRIBUTES_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.linear_model import PrivateLinearRegression
    >>> from dpsklearn.preprocessing import PublicSchema
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(20_000, 3))
    >>> y = 2 * X[:, 0] - X[:, 1] + rng.normal(0, 0.1, 20_000)
    >>> schema = PublicSchema(bounds={0: (0, 1), 1: (0, 1), 2: (0, 1)},
    ...                       target_range=(-2, 3))
    >>> model = PrivateLinearRegression(schema=schema).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)
    True
    """
    )

    _residual_bound_fraction = 0.25

    _parameter_constraints: dict = {
        **ADDITIVE_CONSTRAINTS,
        "y_bound": ["array-like", Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        *,
        schema: PublicSchema | None = None,
        n_bins: int | str = "auto",
        linear_share: float = 0.7,
        y_bound: Any = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.schema = schema
        self.n_bins = n_bins
        self.linear_share = linear_share
        self.y_bound = y_bound
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: Any, y: ArrayLike) -> PrivateLinearRegression:
        """Release the statistics of ``(X, y)`` and the weights solved from them.

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
        if is_dask_collection(X) or is_dask_collection(y):
            return self._plan_dask(X, y)
        y = check_regression_targets(y)
        X, y = self._validate_input(X, y, accept_sparse=False, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        target_range = self.y_bound
        if target_range is None and self.schema is not None:
            target_range = self.schema.target_range
        if target_range is None:
            warn_user(
                "y_bound is None: the target range is read from the private "
                "training targets. Pass the public range as `y_bound` or in the "
                "schema.",
                PrivacyLeakWarning,
            )
            lo, hi = float(np.min(y)), float(np.max(y))
            hi = hi if hi > lo else lo + 1.0
        elif np.ndim(target_range) == 0:
            lo, hi = -float(target_range), float(target_range)
        else:
            lo, hi = (float(v) for v in target_range)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(
                f"y_bound must be a finite range lo < hi, got {target_range!r}."
            )
        center = (lo + hi) / 2.0
        labels = np.clip(y, lo, hi) - center
        return self._plan_release(
            X,
            labels,
            (hi - lo) / 2.0,
            {"target_range_": (lo, hi), "center_": center},
        )

    def _plan_dask(self, X, y):
        # The target range must be public: reading it would read y.
        target_range = self.y_bound
        if target_range is None and self.schema is not None:
            target_range = self.schema.target_range
        if target_range is None:
            raise ValueError(
                "y_bound: with Dask X and y the target range must be public; "
                "pass `y_bound` (or the schema's target_range)."
            )
        if np.ndim(target_range) == 0:
            lo, hi = -float(target_range), float(target_range)
        else:
            lo, hi = (float(v) for v in target_range)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(
                f"y_bound must be a finite range lo < hi, got {target_range!r}."
            )
        center = (lo + hi) / 2.0
        rule = LabelRule("regression", lo=lo, hi=hi)
        return self._plan_dask_release(
            X,
            y,
            rule,
            (hi - lo) / 2.0,
            {"target_range_": (lo, hi), "center_": center},
        )

    def predict(self, X: Any) -> np.ndarray:
        """Free predictions, clipped to ``target_range_``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        return np.clip(self._scores(X) + self.center_, *self.target_range_)
