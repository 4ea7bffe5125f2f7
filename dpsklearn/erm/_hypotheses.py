"""Hypothesis classes for exponential-mechanism ERM, and their losses.

A class of hypotheses fixed before seeing the data, and the losses of all of
them on the private rows, computed without a loop over hypotheses: the
losses of all decision stumps come from one pass per feature (a counting
sort into the threshold grid, a ``bincount`` per output, a cumulative sum),
``O(n d + |C|)`` on an evenly spaced grid, never ``O(n |C|)``
(``docs/design.rst``, "Exponential-mechanism ERM"). The losses never leave
the fit: only the chosen hypothesis does.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, ValidatesParameters
from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning

__all__ = [
    "DecisionStumps",
    "HypothesisSpace",
    "Stump",
    "Thresholds",
]


# --------------------------------------------------------------------------
# Losses: what a hypothesis space needs to score its hypotheses
# --------------------------------------------------------------------------


class _ZeroOneLoss:
    """0-1 loss of predicting output ``v`` on a row whose label index is ``y``."""

    sensitivity = 1.0
    name = "zero_one"

    def __init__(self, y_index, outputs):
        self.y_index = np.asarray(y_index, dtype=np.int64)
        self.outputs = np.asarray(outputs)
        self.n_outputs = len(self.outputs)
        class_counts = np.bincount(self.y_index, minlength=self.n_outputs)
        self.totals = self.y_index.size - class_counts  # loss of a constant v

    def bin_sums(self, bins, n_bins):
        """``(n_bins, n_outputs)`` integer losses of predicting each output per bin."""
        counts = np.bincount(
            bins * self.n_outputs + self.y_index, minlength=n_bins * self.n_outputs
        ).reshape(n_bins, self.n_outputs)
        return counts.sum(axis=1, keepdims=True) - counts

    def of_predictions(self, predictions):
        """Total loss of a vector of predicted labels."""
        return int(np.count_nonzero(predictions != self.outputs[self.y_index]))


class _ClippedSquaredLoss:
    """``min((v - y)^2, B)`` for the outputs ``v`` of a space (Delta_u = B)."""

    name = "squared"

    def __init__(self, y, outputs, bound):
        self.y = np.asarray(y, dtype=np.float64)
        self.outputs = np.asarray(outputs, dtype=np.float64)
        self.n_outputs = len(self.outputs)
        self.sensitivity = float(bound)
        self._table = None

    @property
    def table(self):
        if self._table is None:  # (n, n_outputs), built only for spaces
            diff = self.outputs[None, :] - self.y[:, None]
            self._table = np.minimum(diff * diff, self.sensitivity)
        return self._table

    @property
    def totals(self):
        return self.table.sum(axis=0)

    def bin_sums(self, bins, n_bins):
        table = self.table
        return np.stack(
            [
                np.bincount(bins, weights=table[:, v], minlength=n_bins)
                for v in range(self.n_outputs)
            ],
            axis=1,
        )

    def of_predictions(self, predictions):
        predictions = np.asarray(predictions, dtype=np.float64)
        diff = predictions - self.y
        return float(np.minimum(diff * diff, self.sensitivity).sum())


# --------------------------------------------------------------------------
# Hypotheses
# --------------------------------------------------------------------------


def _column(X, j):
    """Column ``j`` of ``X`` as a dense 1-D array (CSC input is read directly)."""
    if sparse.issparse(X):
        if X.format != "csc":
            X = X.tocsc()
        start, stop = X.indptr[j], X.indptr[j + 1]
        col = np.zeros(X.shape[0], dtype=X.dtype)
        col[X.indices[start:stop]] = X.data[start:stop]
        return col
    return X[:, j]


class Stump:
    """A decision stump: ``left`` where ``x[feature] <= threshold``, else ``right``.

    Parameters
    ----------
    feature : int
        Column index.
    threshold : float
    left, right : object
        The two outputs (class labels or values).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.erm import Stump
    >>> Stump(0, 0.5, "no", "yes").predict(np.array([[0.2], [0.9]])).tolist()
    ['no', 'yes']
    """

    def __init__(self, feature: int, threshold: float, left: Any, right: Any) -> None:
        self.feature = int(feature)
        self.threshold = float(threshold)
        self.left = left
        self.right = right

    def predict(self, X: np.ndarray | sparse.spmatrix) -> np.ndarray:
        """Outputs for the rows of ``X`` (a 2-D array or sparse matrix)."""
        outputs = np.asarray([self.left, self.right])
        return outputs[(_column(X, self.feature) > self.threshold).astype(np.intp)]

    __call__ = predict

    def __repr__(self):
        return (
            f"Stump(feature={self.feature}, threshold={self.threshold!r}, "
            f"left={self.left!r}, right={self.right!r})"
        )


class HypothesisSpace(ValidatesParameters, BaseEstimator):
    """Base class of finite hypothesis classes fixed before seeing the data.

    A space is a set of public parameters (an estimator-like object, so
    ``get_params``/``set_params`` and grid search over them work). At ``fit``
    the estimator calls ``bind(X, outputs)``, which validates the parameters
    against ``X`` (feature count, bounds) before any budget is spent and
    returns a bound space with:

    * ``n_hypotheses`` -- ``|C|``;
    * ``total_losses(X, loss)`` -- a float array of shape ``(n_hypotheses,)``,
      the training loss of every hypothesis. ``loss.bin_sums(bins, n_bins)``
      gives the loss of predicting each output on the rows of each bucket,
      ``loss.totals`` the loss of each constant output;
    * ``hypothesis(index)`` -- the fitted predictor of one hypothesis, whose
      ``predict(X)`` returns elements of ``outputs``.

    ``outputs`` are the public values a hypothesis may predict: ``classes_``
    for a classifier, the leaf grid for a regressor. Nothing in a space may be
    computed from the private data, except bounds left unset, which are
    inferred with a :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.
    """

    def bind(  # pragma: no cover - interface
        self, X: np.ndarray | sparse.spmatrix, outputs: ArrayLike
    ) -> Any:
        """Validate against ``X`` and the outputs; return the bound space.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The private rows (their shape only is read here).
        outputs : array-like
            The public output set (the classes, or the regression grid).

        Returns
        -------
        space : object
            The hypotheses bound to ``X``'s columns, ready to score.
        """
        raise NotImplementedError


def _check_bounds_pair(lo, hi, name):
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{name} must be finite.")
    if np.any(lo > hi):
        raise ValueError(f"{name} must satisfy lower <= upper for every feature.")


def _infer_bounds(X, name):
    warn_user(
        f"{name} is None: the threshold grid is placed between the minimum and "
        "maximum of the private training data, which reveals them. Pass public "
        f"bounds as `{name}`.",
        PrivacyLeakWarning,
    )
    if sparse.issparse(X):
        lo = np.asarray(X.min(axis=0).toarray(), dtype=np.float64).ravel()
        hi = np.asarray(X.max(axis=0).toarray(), dtype=np.float64).ravel()
    else:
        lo = np.min(X, axis=0).astype(np.float64)
        hi = np.max(X, axis=0).astype(np.float64)
    return np.column_stack([lo, hi])


def _threshold_grid(bounds, n_thresholds):
    """``n_thresholds`` interior points of each ``[lo, hi]``, evenly spaced."""
    fractions = np.arange(1, n_thresholds + 1, dtype=np.float64) / (n_thresholds + 1)
    lo, hi = bounds[:, 0:1], bounds[:, 1:2]
    return lo + (hi - lo) * fractions[None, :]


# Columns are read in blocks of about this many entries, transposed once, so
# that each feature is a contiguous row (a strided column read would pull the
# whole matrix through the cache once per feature).
_BLOCK_ENTRIES = 1 << 21


def _columns(X, features):
    """Yield ``(j, X[:, features[j]])`` as contiguous 1-D arrays, block by block."""
    if sparse.issparse(X):
        X = X.tocsc()
        for j, f in enumerate(features):
            yield j, _column(X, f)
        return
    block = max(1, _BLOCK_ENTRIES // max(1, X.shape[0]))
    for start in range(0, len(features), block):
        cols = features[start : start + block]
        rows = np.ascontiguousarray(np.take(X, cols, axis=1).T)
        for offset, row in enumerate(rows):
            yield start + offset, row


def _bucketize(thresholds, x):
    """``np.searchsorted(thresholds, x, side="left")`` for a sorted grid, faster.

    On an evenly spaced grid the bucket is ``ceil((x - t_0) / step)``; the
    loop then moves every entry to the exact bucket ``#{k : t_k < x}`` by
    comparing with the true thresholds, so the result equals searchsorted's
    for any sorted grid (one pass of O(n) array work on a uniform grid,
    instead of a binary search per row).
    """
    k = len(thresholds)
    step = (thresholds[-1] - thresholds[0]) / (k - 1) if k > 1 else 0.0
    if not (step > 0 and np.isfinite(step)):
        return np.searchsorted(thresholds, x, side="left")
    guess = np.ceil((x - thresholds[0]) * (1.0 / step))
    np.clip(guess, 0, k, out=guess)
    bins = guess.astype(np.intp)
    padded = np.concatenate([[-np.inf], thresholds, [np.inf]])
    while True:
        up = padded[bins + 1] < x  # t[bins] < x: the bucket is higher
        down = padded[bins] >= x  # t[bins - 1] >= x: the bucket is lower
        if not (up.any() or down.any()):
            return bins
        bins += up
        bins -= down


class _BoundStumps:
    """Stumps on a grid; hypothesis ``(j, k, p)`` has index ``(j K + k) P + p``."""

    def __init__(self, thresholds, pairs, outputs, features):
        self.thresholds = thresholds  # (d, K), each row sorted
        self.pairs = pairs  # (P, 2) output indices (left, right)
        self.outputs = np.asarray(outputs)
        self.features = features  # (d,) column indices in X
        d, k = thresholds.shape
        self.n_hypotheses = d * k * len(pairs)

    def total_losses(self, X, loss):
        d, k = self.thresholds.shape
        left_idx, right_idx = self.pairs[:, 0], self.pairs[:, 1]
        totals = np.asarray(loss.totals)
        dtype = np.int64 if totals.dtype.kind in "iu" else np.float64
        out = np.empty((d, k, len(self.pairs)), dtype=dtype)
        for j, column in _columns(X, self.features):
            # x <= t_k  <=>  bucket <= k  (x == t_k falls in bucket k)
            bins = _bucketize(self.thresholds[j], column)
            per_bin = loss.bin_sums(bins, k + 1)  # (K + 1, V)
            left = np.cumsum(per_bin[:k], axis=0)  # loss of v on rows x <= t_k
            right = totals[None, :] - left  # loss of v on rows x > t_k
            out[j] = left[:, left_idx] + right[:, right_idx]
        return out.reshape(-1)

    def hypothesis(self, index):
        d, k = self.thresholds.shape
        n_pairs = len(self.pairs)
        j, rest = divmod(int(index), k * n_pairs)
        t, p = divmod(rest, n_pairs)
        left, right = self.pairs[p]
        return Stump(
            self.features[j],
            self.thresholds[j, t],
            self.outputs[left],
            self.outputs[right],
        )


class DecisionStumps(HypothesisSpace):
    """All decision stumps on a public grid of thresholds per feature.

    Hypothesis ``(j, t, a, b)`` predicts output ``a`` where ``x_j <= t`` and
    ``b`` elsewhere, for every feature ``j``, every grid threshold ``t`` and
    every ordered pair of distinct outputs ``a != b`` (for a binary problem,
    the two signs): ``|C| = n_features * n_thresholds * V (V - 1)`` with ``V``
    outputs. The grid has ``n_thresholds`` evenly spaced interior points of
    each feature's public ``[lower, upper]``.

    Parameters
    ----------
    feature_bounds : array-like of shape (n_features, 2) or (2,), default=None
        Public ``(lower, upper)`` per feature, or one pair for every feature.
        ``None`` infers them from the private data with a
        :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.
    n_thresholds : int, default=64
        Grid points per feature.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import DecisionStumps
    >>> X = np.array([[0.1, 5.0], [0.7, 2.0]])
    >>> space = DecisionStumps(feature_bounds=[(0, 1), (0, 10)], n_thresholds=3)
    >>> space.bind(X, np.array([0, 1])).n_hypotheses  # 2 features x 3 x 2 signs
    12
    """

    _parameter_constraints: dict = {
        "feature_bounds": ["array-like", None],
        "n_thresholds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self, feature_bounds: ArrayLike | None = None, n_thresholds: int = 64
    ) -> None:
        self.feature_bounds = feature_bounds
        self.n_thresholds = n_thresholds

    def _bounds(self, X):
        n_features = X.shape[1]
        if self.feature_bounds is None:
            return _infer_bounds(X, "feature_bounds")
        try:
            bounds = np.asarray(self.feature_bounds, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                "feature_bounds must be numeric, of shape (n_features, 2) or (2,)."
            ) from None
        if bounds.shape == (2,):
            bounds = np.tile(bounds, (n_features, 1))
        if bounds.shape != (n_features, 2):
            raise ValueError(
                f"feature_bounds must have shape (n_features, 2) = ({n_features}, 2) "
                f"or (2,), got {bounds.shape}."
            )
        _check_bounds_pair(bounds[:, 0], bounds[:, 1], "feature_bounds")
        return bounds

    def bind(self, X: np.ndarray | sparse.spmatrix, outputs: ArrayLike) -> _BoundStumps:
        """Validate against ``X`` and the outputs; return the bound space.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The private rows (their shape only is read here).
        outputs : array-like
            The public output set (the classes, or the regression grid).

        Returns
        -------
        space : object
            The hypotheses bound to ``X``'s columns, ready to score.
        """
        self._validate_params()
        outputs = np.asarray(outputs)
        if len(outputs) < 2:
            raise ValueError(
                f"DecisionStumps needs at least 2 outputs (classes), got "
                f"{len(outputs)} class."
            )
        bounds = self._bounds(X)
        pairs = np.array(
            [
                (a, b)
                for a in range(len(outputs))
                for b in range(len(outputs))
                if a != b
            ],
            dtype=np.intp,
        )
        return _BoundStumps(
            _threshold_grid(bounds, self.n_thresholds),
            pairs,
            outputs,
            np.arange(X.shape[1]),
        )


class Thresholds(HypothesisSpace):
    """One-dimensional thresholds ``h_t(x) = b if x > t else a`` (Nikolov's notes).

    The textbook class of thresholds on the line, with one orientation: the
    first output left of (and at) ``t``, the second right of it. ``X`` must
    have a single feature; with two outputs (binary classification, or a
    regressor with ``n_leaf_values=2``).

    Parameters
    ----------
    bounds : (float, float), default=None
        Public ``(lower, upper)`` of the feature; ``None`` infers them from
        the data with a :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.
    n_thresholds : int, default=64
        Evenly spaced interior grid points of ``[lower, upper]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import Thresholds
    >>> space = Thresholds(bounds=(0, 1), n_thresholds=9).bind(
    ...     np.zeros((4, 1)), np.array([0, 1]))
    >>> space.n_hypotheses, space.hypothesis(4)
    (9, Stump(feature=0, threshold=0.5, left=np.int64(0), right=np.int64(1)))
    """

    _parameter_constraints: dict = {
        "bounds": ["array-like", None],
        "n_thresholds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, bounds: ArrayLike | None = None, n_thresholds: int = 64) -> None:
        self.bounds = bounds
        self.n_thresholds = n_thresholds

    def bind(self, X: np.ndarray | sparse.spmatrix, outputs: ArrayLike) -> _BoundStumps:
        """Validate against ``X`` and the outputs; return the bound space.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The private rows (their shape only is read here).
        outputs : array-like
            The public output set (the classes, or the regression grid).

        Returns
        -------
        space : object
            The hypotheses bound to ``X``'s columns, ready to score.
        """
        self._validate_params()
        if X.shape[1] != 1:
            raise ValueError(
                f"Thresholds is a class of 1-D hypotheses: X must have 1 feature, "
                f"got {X.shape[1]}. Use DecisionStumps for several features."
            )
        outputs = np.asarray(outputs)
        if len(outputs) != 2:
            raise ValueError(
                f"Thresholds needs exactly 2 outputs (classes), got {len(outputs)}."
            )
        if self.bounds is None:
            bounds = _infer_bounds(X, "bounds")
        else:
            try:
                bounds = np.asarray(self.bounds, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    "bounds must be a numeric pair (lower, upper)."
                ) from None
            if bounds.shape != (2,):
                raise ValueError(
                    f"bounds must be a pair (lower, upper), got shape {bounds.shape}."
                )
            _check_bounds_pair(bounds[0], bounds[1], "bounds")
            bounds = bounds.reshape(1, 2)
        return _BoundStumps(
            _threshold_grid(bounds, self.n_thresholds),
            np.array([[0, 1]], dtype=np.intp),
            outputs,
            np.array([0]),
        )


class _BoundList:
    """A list of fitted estimators or callables, each scored on all rows."""

    def __init__(self, hypotheses):
        self.hypotheses = list(hypotheses)
        self.n_hypotheses = len(self.hypotheses)

    def total_losses(self, X, loss):
        out = np.empty(self.n_hypotheses, dtype=np.float64)
        for i, h in enumerate(self.hypotheses):
            predictions = np.asarray(_predict_with(h, X))
            if predictions.shape != (X.shape[0],):
                raise ValueError(
                    f"hypotheses[{i}] returned predictions of shape "
                    f"{predictions.shape}; expected ({X.shape[0]},)."
                )
            out[i] = loss.of_predictions(predictions)
        return out

    def hypothesis(self, index):
        return self.hypotheses[int(index)]


def _predict_with(h, X):
    if hasattr(h, "predict"):
        return h.predict(X)
    return h(X)


def _bind_hypotheses(hypotheses, X, outputs):
    """Validate ``hypotheses`` (before any budget is spent) and bind it."""
    if hypotheses is None:
        hypotheses = DecisionStumps()
    if hasattr(hypotheses, "bind"):
        return hypotheses.bind(X, outputs)
    hypotheses = list(hypotheses)
    if not hypotheses:
        raise ValueError(
            "hypotheses is an empty list: the exponential mechanism needs at "
            "least one hypothesis."
        )
    for i, h in enumerate(hypotheses):
        if hasattr(h, "predict"):
            if hasattr(h, "fit"):
                try:
                    check_is_fitted(h)
                except NotFittedError:
                    raise ValueError(
                        f"hypotheses[{i}] ({type(h).__name__}) is not fitted. "
                        "Hypotheses must be fitted on public data before fit; "
                        "wrap each in sklearn.frozen.FrozenEstimator so that "
                        "clone() keeps it fitted."
                    ) from None
        elif not callable(h):
            raise TypeError(
                f"hypotheses[{i}] must be a fitted estimator (with predict) or a "
                f"callable h(X) -> predictions, got {type(h).__name__}."
            )
    return _BoundList(hypotheses)


# --------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------
