"""Private empirical risk minimisation by the exponential mechanism (SPEC 3.6).

Seed 004 (Nikolov, "Exponential mechanism and private PAC learning"): over a
finite hypothesis class ``C`` fixed before seeing the data, pick ``h`` with
probability proportional to ``exp(epsilon u(h) / (2 Delta_u))`` where ``u(h)``
is minus the training loss of ``h``:

* 0-1 loss (:class:`ExponentialMechanismERM`): ``u(h) = -#{i : h(x_i) != y_i}``.
  Replacing one record changes every error count by at most 1, so
  ``Delta_u = 1``.
* clipped squared loss (:class:`ExponentialMechanismERMRegressor`):
  ``u(h) = -sum_i min((h(x_i) - y_i)^2, B)``; one record moves the sum by at
  most ``B``, so ``Delta_u = B``.

The whole fit is one ``epsilon``-DP release (McSherry and Talwar 2007), drawn
in log space by the Gumbel-max trick (:func:`dpsklearn.noise.exponential_mechanism`),
so no weight underflows whatever ``epsilon``, ``n`` or the gaps between the
losses. The output is the chosen hypothesis only: the losses are discarded,
and predictions of the fitted model are post-processing, free and unlimited.
This is one of the models SPEC 1 allows to be published.

Hypothesis classes
------------------
``hypotheses`` is one of

* a list of fitted estimators (fitted on data independent of the private
  training set; wrap each in :class:`sklearn.frozen.FrozenEstimator` so that
  :func:`~sklearn.base.clone` and :class:`~sklearn.model_selection.GridSearchCV`
  keep them fitted) or of callables ``h(X) -> predictions``;
* a hypothesis space: :class:`DecisionStumps` (every feature, a grid of
  thresholds from public ``feature_bounds``, every ordered pair of distinct
  outputs on the two sides) or :class:`Thresholds` (one feature, one
  orientation). A custom space implements ``bind(X, outputs)`` returning an
  object with ``n_hypotheses``, ``total_losses(X, loss)`` and
  ``hypothesis(index)`` (see :class:`HypothesisSpace`).

The losses of all stumps come from one pass per feature: the column is
bucketed into the sorted threshold grid (a counting sort of the rows into
``n_thresholds + 1`` buckets: arithmetic on the evenly spaced grid, then an
exact fix-up against the thresholds, so ``x == t`` lands exactly where
``x <= t`` says), the per-bucket loss of each output is a ``bincount`` and
the loss left of every threshold a cumulative sum. That is ``O(n d + |C|)``
time for ``d`` features on an evenly spaced grid (``O(n d log K + |C|)``
with binary search otherwise), within the ``O(n d log n + |C|)`` of SPEC
3.6, never ``O(n |C|)``. ``benchmarks/erm_scale.py`` measures 51,200 stumps
on 100,000 rows at about half the time of one ``np.argsort`` of ``X``.

Floating point: the Gumbel draws are numpy floats, so the sampling
distribution is exact only up to about ``2**-53`` (SPEC 1).
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import BudgetMixin, PublicLabelsMixin, check_regression_targets
from .accounting import PrivacyEvent
from .exceptions import PrivacyLeakWarning
from .noise import exponential_mechanism, make_noise_generators

__all__ = [
    "DecisionStumps",
    "ExponentialMechanismERM",
    "ExponentialMechanismERMRegressor",
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

    def __init__(self, feature, threshold, left, right):
        self.feature = int(feature)
        self.threshold = float(threshold)
        self.left = left
        self.right = right

    def predict(self, X):
        """Outputs for the rows of ``X`` (a 2-D array or sparse matrix)."""
        outputs = np.asarray([self.left, self.right])
        return outputs[(_column(X, self.feature) > self.threshold).astype(np.intp)]

    __call__ = predict

    def __repr__(self):
        return (
            f"Stump(feature={self.feature}, threshold={self.threshold!r}, "
            f"left={self.left!r}, right={self.right!r})"
        )


class HypothesisSpace(BaseEstimator):
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

    def bind(self, X, outputs):  # pragma: no cover - interface
        raise NotImplementedError


def _check_bounds_pair(lo, hi, name):
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{name} must be finite.")
    if np.any(lo > hi):
        raise ValueError(f"{name} must satisfy lower <= upper for every feature.")


def _infer_bounds(X, name):
    warnings.warn(
        f"{name} is None: the threshold grid is placed between the minimum and "
        "maximum of the private training data, which reveals them. Pass public "
        f"bounds as `{name}`.",
        PrivacyLeakWarning,
        stacklevel=4,
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
        :class:`~dpsklearn.exceptions.PrivacyLeakWarning` (SPEC 8).
    n_thresholds : int, default=64
        Grid points per feature.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.erm import DecisionStumps
    >>> X = np.array([[0.1, 5.0], [0.7, 2.0]])
    >>> space = DecisionStumps(feature_bounds=[(0, 1), (0, 10)], n_thresholds=3)
    >>> space.bind(X, np.array([0, 1])).n_hypotheses  # 2 features x 3 x 2 signs
    12
    """

    _parameter_constraints: dict = {
        "feature_bounds": ["array-like", None],
        "n_thresholds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, feature_bounds=None, n_thresholds=64):
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

    def bind(self, X, outputs):
        """Validate against ``X`` and the outputs; return the bound space."""
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
    """One-dimensional thresholds ``h_t(x) = b if x > t else a`` (seed 004).

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
    >>> from dpsklearn.erm import Thresholds
    >>> space = Thresholds(bounds=(0, 1), n_thresholds=9).bind(
    ...     np.zeros((4, 1)), np.array([0, 1]))
    >>> space.n_hypotheses, space.hypothesis(4)
    (9, Stump(feature=0, threshold=0.5, left=np.int64(0), right=np.int64(1)))
    """

    _parameter_constraints: dict = {
        "bounds": ["array-like", None],
        "n_thresholds": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, bounds=None, n_thresholds=64):
        self.bounds = bounds
        self.n_thresholds = n_thresholds

    def bind(self, X, outputs):
        """Validate against ``X`` and the outputs; return the bound space."""
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

_HYPOTHESES_CONSTRAINT = [list, tuple, HasMethods(["bind"]), None]
_ACCEPT_SPARSE = ("csr", "csc")


class _SingleReleaseMixin(BudgetMixin):
    """Budget steps of a model whose whole release is paid for at ``fit``.

    Shared by the ERM estimators and :class:`~dpsklearn.statistical_queries.
    PrivateStatisticalQueries`: an accountant (the model's own when
    ``accountant=None``), a check that it can pay before the private data is
    touched, and "fitted" meaning a completed fit (``_fitted_marker``), so a
    fit refused part-way leaves the model unfitted.
    """

    _fitted_marker = "hypothesis_"

    def _check_finite_epsilon(self):
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite and > 0, got {self.epsilon!r}.")


class _ERMMixin(_SingleReleaseMixin):
    """Fit steps shared by the classifier and the regressor."""

    def _select(self, X, bound, loss):
        """Reserve the budget, score every hypothesis, sample one, spend."""
        accountant = self._get_accountant(self.epsilon, 0.0)
        events = [
            PrivacyEvent(
                float(self.epsilon), 0.0, kind="exponential", label=type(self).__name__
            )
        ]
        self._check_budget_available(accountant, events)
        losses = bound.total_losses(X, loss)
        (rng,), _ = make_noise_generators(self.noise_random_state, 1)
        index = exponential_mechanism(
            -np.asarray(losses, dtype=np.float64),
            self.epsilon,
            loss.sensitivity,
            rng=rng,
        )
        del losses  # the fitted model keeps the chosen hypothesis only
        accountant.spend_events(events)
        self.accountant_ = accountant
        self.hypothesis_ = bound.hypothesis(index)
        self.n_hypotheses_ = int(bound.n_hypotheses)
        self.utility_sensitivity_ = float(loss.sensitivity)
        self.loss_ = loss.name

    def predict(self, X):
        """Predictions of the chosen hypothesis: post-processing, free and unlimited.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, accept_sparse=_ACCEPT_SPARSE)
        return np.asarray(_predict_with(self.hypothesis_, X))


class ExponentialMechanismERM(
    PublicLabelsMixin, _ERMMixin, ClassifierMixin, BaseEstimator
):
    """Private classifier: the exponential mechanism over a finite hypothesis class.

    ``fit`` scores every hypothesis by its number of training errors and
    samples one with probability proportional to
    ``exp(-epsilon * errors / 2)`` (seed 004; ``Delta_u = 1`` under
    replace-one). The fitted model is that hypothesis: it may be published,
    and its predictions cost nothing (SPEC 1, 3.6).

    Privacy: the fit is ``epsilon``-DP (``delta = 0``) with respect to
    replacing one training record; ``epsilon`` is reserved from the
    accountant as one event. Everything the fitted model ever outputs is
    post-processing of that release.

    Parameters
    ----------
    hypotheses : list, tuple, hypothesis space or None, default=None
        The public class ``C``: fitted estimators (wrapped in
        :class:`sklearn.frozen.FrozenEstimator`) or callables ``h(X)``
        returning labels, or a :class:`HypothesisSpace` such as
        :class:`DecisionStumps` or :class:`Thresholds`. ``None`` means
        ``DecisionStumps()``.
    epsilon : float, default=1.0
        The privacy budget of the fit.
    classes : array-like, default=None
        The public label set. ``None`` takes ``unique(y)`` with a
        :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from; ``None`` gives the model its own.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests only (warns with
        :class:`~dpsklearn.exceptions.PrivacyLeakWarning`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    hypothesis_ : object
        The chosen hypothesis (a :class:`Stump` for the built-in spaces).
    n_hypotheses_ : int
        ``|C|``.
    utility_sensitivity_ : float
        ``Delta_u`` (1 for the 0-1 loss).
    loss_ : str
        ``"zero_one"``.
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    ExponentialMechanismERMRegressor : the clipped squared loss.
    dpsklearn.planning.erm_sample_size : seed 004's sample size.

    Notes
    -----
    With ``n`` rows, seed 004's bound says ``n >= max(4 ln(2|C|/beta) /
    (epsilon alpha), 2 ln(2|C|/beta) / alpha^2)`` suffices for error at most
    ``alpha`` with probability ``1 - beta`` in the realizable case.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.erm import DecisionStumps, ExponentialMechanismERM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(2000, 3))
    >>> y = (X[:, 1] > 0.4).astype(int)
    >>> clf = ExponentialMechanismERM(
    ...     DecisionStumps(feature_bounds=(0, 1), n_thresholds=32),
    ...     epsilon=1.0, classes=[0, 1]).fit(X, y)
    >>> clf.n_hypotheses_
    192
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "hypotheses": _HYPOTHESES_CONSTRAINT,
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "classes": ["array-like", None],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        hypotheses=None,
        *,
        epsilon=1.0,
        classes=None,
        accountant=None,
        noise_random_state=None,
    ):
        self.hypotheses = hypotheses
        self.epsilon = epsilon
        self.classes = classes
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True  # truthful: noise costs accuracy
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y):
        """Choose one hypothesis with the exponential mechanism.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._start_fit()
        X, y_index = self._validate_classification_data(X, y)
        self._check_finite_epsilon()
        bound = _bind_hypotheses(self.hypotheses, X, self.classes_)
        self._select(X, bound, _ZeroOneLoss(y_index, self.classes_))
        return self


class ExponentialMechanismERMRegressor(_ERMMixin, RegressorMixin, BaseEstimator):
    """Private regressor: the exponential mechanism on the clipped squared loss.

    ``fit`` scores every hypothesis by ``L(h) = sum_i min((h(x_i) - y_i)^2, B)``
    and samples one with probability proportional to
    ``exp(-epsilon L(h) / (2 B))``: replacing one record moves ``L`` by at
    most ``B``, so ``Delta_u = B`` (seed 004's mechanism, SPEC 3.6). The fitted
    model is the chosen hypothesis; its predictions are free.

    Parameters
    ----------
    hypotheses : list, tuple, hypothesis space or None, default=None
        Fitted regressors (wrapped in :class:`sklearn.frozen.FrozenEstimator`)
        or callables, or a :class:`HypothesisSpace` whose outputs are the leaf
        grid. ``None`` means ``DecisionStumps()``.
    target_range : (float, float), default=None
        Public range of the target; the built-in spaces predict values on
        ``linspace(*target_range, n_leaf_values)``. ``None`` infers it from
        ``y`` with a :class:`~dpsklearn.exceptions.PrivacyLeakWarning` (a
        constant ``y`` gives ``(y - 0.5, y + 0.5)``). Not needed when
        ``hypotheses`` is a list and ``loss_bound`` is given.
    n_leaf_values : int, default=5
        Size of the leaf grid (>= 2).
    loss_bound : float, default=None
        ``B`` (> 0), the clip of the per-example loss and ``Delta_u``.
        ``None`` means ``(upper - lower)^2`` of ``target_range``.
    epsilon : float, default=1.0
    accountant : PrivacyAccountant, default=None
    noise_random_state : int, default=None

    Attributes
    ----------
    hypothesis_ : object
    n_hypotheses_ : int
    utility_sensitivity_ : float
        ``B``.
    loss_ : str
        ``"squared"``.
    leaf_values_ : ndarray or None
        The leaf grid (None for a list of hypotheses).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.erm import DecisionStumps, ExponentialMechanismERMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(3000, 2))
    >>> y = np.where(X[:, 0] > 0.5, 1.0, 0.0)
    >>> reg = ExponentialMechanismERMRegressor(
    ...     DecisionStumps(feature_bounds=(0, 1), n_thresholds=15),
    ...     target_range=(0, 1), n_leaf_values=3, epsilon=1.0).fit(X, y)
    >>> reg.hypothesis_.feature, reg.n_hypotheses_
    (0, 180)
    """

    _parameter_constraints: dict = {
        "hypotheses": _HYPOTHESES_CONSTRAINT,
        "target_range": ["array-like", None],
        "n_leaf_values": [Interval(Integral, 2, None, closed="left")],
        "loss_bound": [Interval(Real, 0, None, closed="neither"), None],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        hypotheses=None,
        *,
        target_range=None,
        n_leaf_values=5,
        loss_bound=None,
        epsilon=1.0,
        accountant=None,
        noise_random_state=None,
    ):
        self.hypotheses = hypotheses
        self.target_range = target_range
        self.n_leaf_values = n_leaf_values
        self.loss_bound = loss_bound
        self.epsilon = epsilon
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = True
        return tags

    def _target_range(self, y):
        if self.target_range is None:
            warnings.warn(
                "target_range is None: it is taken from the minimum and maximum "
                "of the private targets, which reveals them. Pass the public "
                "range as `target_range`.",
                PrivacyLeakWarning,
                stacklevel=4,
            )
            lo, hi = float(np.min(y)), float(np.max(y))
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            return lo, hi
        try:
            bounds = np.asarray(self.target_range, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                "target_range must be a numeric pair (lower, upper)."
            ) from None
        if (
            bounds.shape != (2,)
            or not np.all(np.isfinite(bounds))
            or bounds[0] >= bounds[1]
        ):
            raise ValueError(
                "target_range must be a finite pair (lower, upper) with lower < "
                f"upper, got {self.target_range!r}."
            )
        return float(bounds[0]), float(bounds[1])

    def fit(self, X, y):
        """Choose one hypothesis with the exponential mechanism.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._start_fit()
        y = check_regression_targets(y)
        X, y = validate_data(self, X, y, accept_sparse=_ACCEPT_SPARSE, y_numeric=True)
        self._check_finite_epsilon()
        is_list = isinstance(self.hypotheses, (list, tuple))
        leaf_values = None
        if is_list and self.loss_bound is not None:
            bound_B = float(self.loss_bound)
        else:
            lo, hi = self._target_range(y)
            bound_B = (
                float(self.loss_bound)
                if self.loss_bound is not None
                else (hi - lo) ** 2
            )
            if not is_list:
                leaf_values = np.linspace(lo, hi, self.n_leaf_values)
        if not math.isfinite(bound_B):
            raise ValueError(f"loss_bound must be finite, got {bound_B!r}.")
        outputs = leaf_values if leaf_values is not None else np.zeros(0)
        bound = _bind_hypotheses(self.hypotheses, X, outputs)
        self._select(X, bound, _ClippedSquaredLoss(y, outputs, bound_B))
        self.leaf_values_ = leaf_values
        return self
