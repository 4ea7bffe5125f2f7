"""Private empirical risk minimisation by the exponential mechanism.

Nikolov's CSC2412 notes, "Exponential Mechanism & Private PAC Learning": over a
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
It may be published (``docs/design.rst``, "Exponential-mechanism ERM").

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
with binary search otherwise), never ``O(n |C|)``. ``benchmarks/erm_scale.py``
measures 51,200 stumps
on 100,000 rows at about half the time of one ``np.argsort`` of ``X``.

Floating point: the Gumbel draws are numpy floats, so the sampling
distribution is exact only up to about ``2**-53``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import FitPlan, PrivateEstimatorMixin, PublicLabelsMixin, keeps_live_model
from .._dask_input import is_dask_collection
from .._param_validation import HasMethods, Interval
from .._validation import (
    ACCEPT_SPARSE,
    accepts_nan,
    check_regression_targets,
    naming_empty_input,
)
from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning
from ..mechanisms import ExponentialSelection
from ._hypotheses import (
    HypothesisSpace,
    _bind_hypotheses,
    _ClippedSquaredLoss,
    _predict_with,
    _ZeroOneLoss,
)

__all__ = ["ExponentialMechanismERM", "ExponentialMechanismERMRegressor"]

_HYPOTHESES_CONSTRAINT = [list, tuple, HasMethods(["bind"]), None]


class _ERMMixin(PrivateEstimatorMixin):
    """Fit steps shared by the classifier and the regressor."""

    if TYPE_CHECKING:
        # The estimators' parameter, and the hypothesis a fit releases.
        hypotheses: HypothesisSpace | Sequence[Any] | None
        hypothesis_: Any

    def _given_hypotheses(self):
        return isinstance(self.hypotheses, (list, tuple))

    def _input_allows_nan(self):
        hypotheses = self.hypotheses
        return isinstance(hypotheses, (list, tuple)) and all(
            accepts_nan(h) for h in hypotheses
        )

    def _input_consumer(self):
        return "a hypothesis" if self._given_hypotheses() else "the hypothesis space"

    def _validate_input(self, X, y="no_validation", *, reset=True, **kwargs):
        """Given hypotheses read ``X`` as given; a hypothesis space reads numbers.

        A Dask collection is refused either way (the mixin's rule), rather
        than computed into this process.
        """
        if self._given_hypotheses() or is_dask_collection(X) or is_dask_collection(y):
            return super()._validate_input(X, y, reset=reset, **kwargs)
        with naming_empty_input():
            return validate_data(
                self, X, y, reset=reset, accept_sparse=ACCEPT_SPARSE, **kwargs
            )

    def _selection_plan(self, X, bound, loss, **attributes):
        """The plan of every ERM fit: one exponential-mechanism selection."""
        mechanism = ExponentialSelection(self.epsilon, loss.sensitivity)
        return FitPlan(
            mechanism,
            X,
            training={"bound": bound, "loss": loss},
            serving={"released": True},
            attributes={
                **attributes,
                "n_hypotheses_": int(bound.n_hypotheses),
                "utility_sensitivity_": float(loss.sensitivity),
                "loss_": loss.name,
            },
        )

    def _train(self, plan):
        # Every hypothesis's total loss on the private rows (not kept).
        losses = plan.training["bound"].total_losses(plan.X, plan.training["loss"])
        return {"_losses": np.asarray(losses, dtype=np.float64)}

    def _release(self, plan, fitted, noise):
        index = plan.mechanism.select(-fitted.pop("_losses"), noise)
        # The fitted model keeps the chosen hypothesis only.
        fitted["hypothesis_"] = plan.training["bound"].hypothesis(index)

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
        X = self._validate_input(X, reset=False)
        return np.asarray(_predict_with(self.hypothesis_, X))


class ExponentialMechanismERM(
    PublicLabelsMixin, _ERMMixin, ClassifierMixin, BaseEstimator
):
    """Private classifier: the exponential mechanism over a finite hypothesis class.

    ``fit`` scores every hypothesis by its number of training errors and
    samples one with probability proportional to
    ``exp(-epsilon * errors / 2)`` (Nikolov's notes; ``Delta_u = 1`` under
    replace-one). The fitted model is that hypothesis: it may be published,
    and its predictions cost nothing.

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
    dpsklearn.planning.erm_sample_size : the sample size of Nikolov's notes.

    Notes
    -----
    With ``n`` rows, the notes' bound says ``n >= max(4 ln(2|C|/beta) /
    (epsilon alpha), 2 ln(2|C|/beta) / alpha^2)`` suffices for error at most
    ``alpha`` with probability ``1 - beta`` in the realizable case.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn import DecisionStumps, ExponentialMechanismERM
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
        hypotheses: HypothesisSpace | Sequence[Any] | None = None,
        *,
        epsilon: float = 1.0,
        classes: ArrayLike | None = None,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.hypotheses = hypotheses
        self.epsilon = epsilon
        self.classes = classes
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> ExponentialMechanismERM:
        """Choose one hypothesis with the exponential mechanism.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        X, y_index, classes = self._validate_classification_data(X, y)
        self._check_finite_epsilon()
        bound = _bind_hypotheses(self.hypotheses, X, classes)
        return self._selection_plan(
            X, bound, _ZeroOneLoss(y_index, classes), classes_=classes
        )


class ExponentialMechanismERMRegressor(_ERMMixin, RegressorMixin, BaseEstimator):
    """Private regressor: the exponential mechanism on the clipped squared loss.

    ``fit`` scores every hypothesis by ``L(h) = sum_i min((h(x_i) - y_i)^2, B)``
    and samples one with probability proportional to
    ``exp(-epsilon L(h) / (2 B))``: replacing one record moves ``L`` by at
    most ``B``, so ``Delta_u = B`` (the notes' mechanism). The fitted
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
    >>> from dpsklearn import DecisionStumps, ExponentialMechanismERMRegressor
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
        hypotheses: HypothesisSpace | Sequence[Any] | None = None,
        *,
        target_range: ArrayLike | None = None,
        n_leaf_values: int = 5,
        loss_bound: float | None = None,
        epsilon: float = 1.0,
        accountant: Any = None,
        noise_random_state: int | None = None,
    ) -> None:
        self.hypotheses = hypotheses
        self.target_range = target_range
        self.n_leaf_values = n_leaf_values
        self.loss_bound = loss_bound
        self.epsilon = epsilon
        self.accountant = accountant
        self.noise_random_state = noise_random_state

    def _target_range(self, y):
        if self.target_range is None:
            warn_user(
                "target_range is None: it is taken from the minimum and maximum "
                "of the private targets, which reveals them. Pass the public "
                "range as `target_range`.",
                PrivacyLeakWarning,
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

    @keeps_live_model
    def fit(self, X: ArrayLike, y: ArrayLike) -> ExponentialMechanismERMRegressor:
        """Choose one hypothesis with the exponential mechanism.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        return self._fit(X, y)

    def _plan(self, X, y):
        y = check_regression_targets(y)
        X, y = self._validate_input(X, y, y_numeric=True)
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
        return self._selection_plan(
            X, bound, _ClippedSquaredLoss(y, outputs, bound_B), leaf_values_=leaf_values
        )
