"""Private kernel ridge regression by output perturbation (SPEC 3.5; seed 001).

The non-private fit is the regularised least squares of seed 001, eq. (1),

    f_z = argmin_{f in H_K} (1/n) sum_i (f(x_i) - y_i)^2 + alpha ||f||_K^2,

which is scikit-learn's ``KernelRidge(alpha=alpha * n)`` (that one sums the
squared errors instead of averaging them). Two releases are offered:

``release="predictions"``
    Each prediction is ``f_z(x)`` clipped to ``[-M, M]`` plus grid Laplace
    noise (seed 001, Proposition 1, one query; ``max_queries`` of them
    composed as in SPEC 3.3). The fitted object keeps the training rows and
    the dual coefficients, so it is as secret as the data.
``release="model"``
    For shift-invariant kernels: the fit runs on ``D`` paired random Fourier
    features and only the perturbed weights are kept, so the fitted model may
    be published and its predictions are free and unlimited.

Sensitivity (Lemma 2 of seed 001, written without its ``R >= M`` shortcut).
With ``kappa^2 = sup_x K(x, x)`` and targets in ``[-M, M]``, ``alpha
||f_z||_K^2 <= mean(y^2) <= M^2`` gives ``||f_z||_K <= R = M / sqrt(alpha)``
and ``|f_z(x)| <= kappa R``. Under replace-one, strong convexity of the
objective (modulus ``2 alpha``) and the ``2 (kappa R + M)``-Lipschitz squared
loss on that range give ``||f_z - f_z'||_K <= 2 kappa (kappa R + M) /
(alpha n)``, hence ``||f_z - f_z'||_inf <= 2 kappa^2 (kappa R + M) / (alpha
n)``, and at most ``2 M`` after clipping predictions to ``[-M, M]``. The same
argument in the weight space of features with ``sup ||phi(x)|| = kappa``
bounds the L2 change of the weights by ``2 kappa (kappa R + M) / (alpha n)``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics.pairwise import (
    cosine_similarity,
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.extmath import row_norms, safe_sparse_dot
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import BudgetMixin, check_regression_targets
from ._serving import ServingState
from .accounting import PrivacyEvent
from .calibration import PER_QUERY_CALIBRATIONS, per_query_epsilon
from .exceptions import BudgetExhaustedError, PrivacyLeakWarning
from .noise import (
    analytic_gaussian_sigma,
    default_grid_step,
    grid_gaussian,
    grid_high_dimensional_laplace,
    grid_laplace,
    grid_units,
    l2_grid_units,
    make_noise_generators,
)

__all__ = ["KernelRidgeSchedule", "PrivateKernelRidge", "kernel_ridge_schedule"]

#: Kernels with a known bound ``kappa^2 = sup K(x, x)`` (SPEC 3.5).
KERNELS = ("rbf", "laplacian", "cosine", "linear", "poly")
#: Kernels whose rows are clipped to ``x_bound`` to bound ``K(x, x)``.
NORM_BOUNDED_KERNELS = ("linear", "poly")
#: Shift-invariant kernels, the ones random Fourier features approximate.
SHIFT_INVARIANT_KERNELS = ("rbf", "laplacian")

_ACCEPT_SPARSE = ("csr", "csc")
# Rows per block when evaluating kernels on queries: about 32 MB of float64.
_BLOCK_ELEMENTS = 2**22


# --------------------------------------------------------------------------
# Pure functions of the fit (used by the estimator and by the tests)
# --------------------------------------------------------------------------


def _kernel_matrix(X, Y, kernel, gamma, degree, coef0):
    """``K(X, Y)`` for one of :data:`KERNELS` (dense ndarray)."""
    if kernel == "rbf":
        return rbf_kernel(X, Y, gamma=gamma)
    if kernel == "laplacian":
        return laplacian_kernel(X, Y, gamma=gamma)
    if kernel == "cosine":
        return cosine_similarity(X, Y)
    if kernel == "linear":
        return linear_kernel(X, Y)
    return polynomial_kernel(X, Y, degree=degree, gamma=gamma, coef0=coef0)


def _kappa(kernel, gamma, degree, coef0, x_bound):
    """``kappa = sqrt(sup K(x, x))`` over rows of norm at most ``x_bound``."""
    if kernel in ("rbf", "laplacian", "cosine"):
        return 1.0
    if kernel == "linear":
        return float(x_bound)
    return math.sqrt((gamma * x_bound**2 + coef0) ** degree)


def _clip_rows(X, bound):
    """Scale every row of ``X`` whose L2 norm exceeds ``bound`` down to it.

    The factor is shaded by ``2**-50`` so that floating-point rounding never
    leaves a clipped row above the bound.
    """
    norms = row_norms(X)
    over = norms > bound
    if not np.any(over):
        return X
    scale = np.ones_like(norms)
    scale[over] = bound / norms[over] * (1.0 - 2.0**-50)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale) @ X)
    return X * scale[:, None]


def _solve_regularised(gram, rhs, ridge):
    """Solve ``(gram + ridge I) x = rhs`` exactly (Cholesky; SPEC 3.5).

    A direct solver, so no optimisation error enters the sensitivity. The
    symmetric indefinite solver is the fallback when rounding makes the
    Cholesky factorisation fail (a matrix that is positive definite in exact
    arithmetic).
    """
    system = np.array(gram, dtype=np.float64, copy=True)
    system.flat[:: system.shape[0] + 1] += ridge
    try:
        return linalg.solve(system, rhs, assume_a="pos", check_finite=False)
    except linalg.LinAlgError:
        system = np.array(gram, dtype=np.float64, copy=True)
        system.flat[:: system.shape[0] + 1] += ridge
        return linalg.solve(system, rhs, assume_a="sym", check_finite=False)


def _fit_dual_coef(K, y, alpha):
    """Dual coefficients ``c = (K + alpha n I)^-1 y``; ``f = sum_i c_i K(x_i, .)``."""
    return _solve_regularised(K, y, alpha * K.shape[0])


def _fourier_frequencies(kernel, gamma, n_features, n_components, random_state):
    """Data-independent frequencies ``(D, d)`` of the kernel's spectral measure.

    rbf ``exp(-gamma ||x - x'||^2)``: ``omega ~ N(0, 2 gamma I)``; laplacian
    ``exp(-gamma ||x - x'||_1)``: i.i.d. Cauchy coordinates of scale
    ``gamma`` (Rahimi and Recht 2007, Bochner's theorem).
    """
    rng = check_random_state(random_state)
    shape = (n_components, n_features)
    if kernel == "rbf":
        return rng.normal(0.0, math.sqrt(2.0 * gamma), size=shape)
    return gamma * rng.standard_cauchy(size=shape)


def _fourier_features(X, frequencies):
    """Paired features ``[cos(X W^T), sin(X W^T)] / sqrt(D)``, norm exactly 1."""
    projection = safe_sparse_dot(X, frequencies.T, dense_output=True)
    scale = 1.0 / math.sqrt(frequencies.shape[0])
    return np.hstack([np.cos(projection), np.sin(projection)]) * scale


def _fit_weights(features, y, alpha):
    """Exact ``argmin_w (1/n) ||Phi w - y||^2 + alpha ||w||^2``.

    Solved in the smaller of the primal (``p x p``) and dual (``n x n``)
    systems; both give the same ``w``.
    """
    n, p = features.shape
    if n >= p:
        return _solve_regularised(features.T @ features, features.T @ y, alpha * n)
    return features.T @ _solve_regularised(features @ features.T, y, alpha * n)


def _function_sensitivity(kappa, y_bound, alpha, n_samples):
    """Lemma 2 of seed 001: ``sup|f_z - f_z'| <= 2 kappa^2 (kappa R + M)/(alpha n)``."""
    radius = y_bound / math.sqrt(alpha)
    return 2.0 * kappa**2 * (kappa * radius + y_bound) / (alpha * n_samples)


def _weight_sensitivity(kappa, y_bound, alpha, n_samples):
    """L2 sensitivity of the weights, ``2 kappa (kappa R + M) / (alpha n)``."""
    radius = y_bound / math.sqrt(alpha)
    return 2.0 * kappa * (kappa * radius + y_bound) / (alpha * n_samples)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


class PrivateKernelRidge(BudgetMixin, RegressorMixin, BaseEstimator):
    """Differentially private kernel ridge regression (SPEC 3.5, seed 001).

    Fits ``f = argmin (1/n) sum_i (f(x_i) - y_i)^2 + alpha ||f||_K^2`` over the
    reproducing kernel Hilbert space of ``kernel`` with an exact direct solver,
    on targets clipped to ``[-y_bound, y_bound]``, and releases it through one
    of two mechanisms (``release``).

    Privacy (SPEC 1): everything the fitted model ever releases is
    ``(epsilon, delta)``-DP with respect to replacing one training record
    (replace-one with ``n`` public; under add/remove-one no guarantee at the
    stated epsilon is claimed). The whole ``(epsilon, delta)`` is reserved
    from the accountant at ``fit``.

    * ``release="predictions"``: each prediction is ``clip(f(x), -M, M)``
      plus grid Laplace noise with sensitivity ``min(2 kappa^2 (kappa R + M)
      / (alpha n), 2 M)``, ``R = M / sqrt(alpha)`` (Lemma 2 and Proposition 1
      of seed 001), at a per-query epsilon that composes ``max_queries``
      releases to ``(epsilon, delta)``
      (:func:`~dpsklearn.calibration.per_query_epsilon`, ``release="laplace"``).
      ``max_queries`` is part of the guarantee: the query after it raises
      :class:`~dpsklearn.BudgetExhaustedError`. Every ``predict`` and
      ``score`` row is charged. The fitted object keeps the (clipped) training
      rows ``X_fit_`` and the dual coefficients: it is as
      secret as the training data, and a pickled copy carries a second,
      independent budget.
    * ``release="model"`` (``"rbf"``, ``"laplacian"``): the same objective is
      fitted on ``n_components`` paired random Fourier features
      ``[cos(w.x), sin(w.x)] / sqrt(D)`` (frequencies from ``random_state``,
      independent of the data; ``kappa = sup ||phi(x)|| = 1``) and the
      ``2 D`` weights are released once with noise calibrated to their L2
      sensitivity ``2 kappa (kappa R + M) / (alpha n)``: the analytic Gaussian
      mechanism (Balle and Wang 2018) when ``delta > 0``, the
      high-dimensional Laplace (pure ``epsilon``-DP) when ``delta = 0``, both
      on a grid of step ``g`` with integer noise and grid L2 sensitivity
      ``sensitivity + g sqrt(2 D)``. Only the noisy weights ``coef_`` and the
      frequencies are kept (no training rows, dual coefficients or unnoised
      weights), so the fitted model may be published; its predictions are
      post-processing, free, unlimited and deterministic.

    Floating point: every release lies on a grid of step ``grid_step_`` with
    integer noise (SPEC 1). The samplers are numpy's floating-point
    geometric, normal and gamma draws, exact only up to about ``2**-53``; the
    high-dimensional Laplace has no exact integer sampler.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "cosine", "linear", "poly"}, default="rbf"
        A positive-definite kernel with a known bound on ``K(x, x)``: 1 for
        rbf, laplacian and cosine; ``x_bound^2`` for linear and
        ``(gamma x_bound^2 + coef0)^degree`` for poly. Any other kernel is
        refused (no RKHS norm bound, so Lemma 2 does not apply).
    gamma : float, default=None
        Kernel coefficient of rbf, laplacian and poly; ``None`` means
        ``1 / n_features`` (public: it depends only on the number of columns).
    degree : int, default=3
        Degree of the poly kernel; must be an integer >= 1.
    coef0 : float, default=1
        Constant of the poly kernel; must be >= 0 (otherwise the kernel is not
        positive definite).
    alpha : float, default=1.0
        The per-sample regularisation ``alpha`` of the objective above. The
        non-private fit equals
        ``sklearn.kernel_ridge.KernelRidge(alpha=alpha * n_samples)``.
    y_bound : float, default=None
        ``M``: the public bound on ``|y|``; targets are clipped to ``[-M, M]``.
        ``None`` infers ``max |y|`` from the private data with a
        :class:`~dpsklearn.PrivacyLeakWarning`.
    x_bound : float, default=None
        Public bound on the L2 norm of rows for ``"linear"`` and ``"poly"``:
        training and query rows are clipped to it. ``None`` infers the largest
        training row norm with a :class:`~dpsklearn.PrivacyLeakWarning`.
        Ignored by the other kernels.
    epsilon : float, default=1.0
        Total privacy budget of the fitted model.
    delta : float, default=1e-5
        Total delta, in [0, 1). For ``release="model"``, ``delta = 0`` selects
        the pure-DP high-dimensional Laplace.
    max_queries : int, default=1000
        ``release="predictions"``: the number of prediction rows the budget
        pays for (part of the guarantee; ``None`` is refused). Ignored by
        ``release="model"``.
    calibration : {"auto", "basic", "zcdp", "rdp"}, default="auto"
        How ``release="predictions"`` splits the budget over ``max_queries``
        pure-DP releases (:func:`~dpsklearn.calibration.per_query_epsilon`
        with ``release="laplace"``); ``"auto"`` takes the larger per-query
        epsilon.
    release : {"predictions", "model"}, default="predictions"
        What is released (see above).
    n_components : int, default=100
        ``D``, the number of random Fourier frequencies of
        ``release="model"`` (``2 D`` weights).
    accountant : PrivacyAccountant, default=None
        A shared budget to draw from (``clone`` keeps it shared); ``None``
        gives the model its own budget of ``(epsilon, delta)``.
    random_state : int, RandomState instance or None, default=None
        Data-independent randomness only: the Fourier frequencies.
    noise_random_state : int, default=None
        Seeds the mechanism noise, for tests and experiments only (warns with
        :class:`~dpsklearn.PrivacyLeakWarning`). ``None``: OS entropy at every
        fit.

    Attributes
    ----------
    y_bound_ : float
        The ``M`` used.
    x_bound_ : float or None
        The row-norm bound used (linear and poly only).
    gamma_ : float or None
        The kernel coefficient used.
    kappa_ : float
        ``sqrt(sup K(x, x))`` (1 for ``release="model"``).
    sensitivity_ : float
        Sensitivity of one prediction (``release="predictions"``, sup norm)
        or of the weights (``release="model"``, L2 norm).
    grid_step_ : float
        The grid step ``g``.
    noise_scale_ : float
        ``"predictions"``: the scale of the discrete Laplace noise of one
        prediction, in units of ``y``; ``"model"``: the standard deviation of
        the Gaussian noise per weight, or the scale of the Gamma-distributed
        norm of the high-dimensional Laplace noise.
    mechanism_ : str
        ``"grid_laplace"``, ``"grid_gaussian"`` or
        ``"grid_high_dimensional_laplace"``.
    per_query_epsilon_ : float
        ``release="predictions"`` only.
    calibration_ : str
        ``release="predictions"`` only: the per-query calibration used.
    X_fit_ : ndarray of shape (n_samples, n_features)
        ``release="predictions"`` only: the (clipped) private training rows.
    dual_coef_ : ndarray of shape (n_samples,)
        ``release="predictions"`` only (private).
    coef_ : ndarray of shape (2 * n_components,)
        ``release="model"`` only: the released, noisy weights.
    random_frequencies_ : ndarray of shape (n_components, n_features)
        ``release="model"`` only (data independent).
    accountant_ : PrivacyAccountant
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.kernel_ridge.KernelRidge : the non-private fit (``alpha * n``).
    kernel_ridge_schedule : seed 001's choice of ``alpha`` and ``epsilon``.

    Notes
    -----
    The fit costs ``O(n^3)`` (exact solve of an ``n x n`` system) for
    ``release="predictions"`` and ``O(n D^2 + D^3)`` for ``release="model"``.
    Tuning ``alpha`` or ``epsilon`` by cross-validation on the private data is
    not covered by the guarantee (SPEC 1).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.kernel_ridge import PrivateKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 2))
    >>> y = np.sin(3 * X[:, 0])
    >>> model = PrivateKernelRidge(alpha=0.1, y_bound=1.0, epsilon=2.0,
    ...                            release="model", random_state=0).fit(X, y)
    >>> pred = model.predict(X[:3])            # free, unlimited, deterministic
    >>> bool(np.array_equal(pred, model.predict(X[:3])))
    True
    >>> served = PrivateKernelRidge(y_bound=1.0, max_queries=10).fit(X, y)
    >>> served.predict(X[:4]).shape
    (4,)
    >>> served.budget_status()["remaining_queries"]
    6
    """

    _parameter_constraints: dict = {
        "kernel": [str],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "degree": [Interval(Real, 0, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "y_bound": [Interval(Real, 0, None, closed="neither"), None],
        "x_bound": [Interval(Real, 0, None, closed="neither"), None],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "max_queries": [Interval(Integral, 1, None, closed="left"), None],
        "calibration": [StrOptions({"auto", *PER_QUERY_CALIBRATIONS})],
        "release": [StrOptions({"predictions", "model"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "accountant": [HasMethods(["spend", "spend_events", "can_spend"]), None],
        "random_state": ["random_state"],
        "noise_random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        kernel="rbf",
        *,
        gamma=None,
        degree=3,
        coef0=1,
        alpha=1.0,
        y_bound=None,
        x_bound=None,
        epsilon=1.0,
        delta=1e-5,
        max_queries=1000,
        calibration="auto",
        release="predictions",
        n_components=100,
        accountant=None,
        random_state=None,
        noise_random_state=None,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.y_bound = y_bound
        self.x_bound = x_bound
        self.epsilon = epsilon
        self.delta = delta
        self.max_queries = max_queries
        self.calibration = calibration
        self.release = release
        self.n_components = n_components
        self.accountant = accountant
        self.random_state = random_state
        self.noise_random_state = noise_random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # truthful: noise costs accuracy
        tags.non_deterministic = self.noise_random_state is None
        tags.input_tags.sparse = True
        return tags

    # -- validation (everything before any budget is touched) ----------------
    def _check_kernel(self, n_features):
        """The kernel and its resolved parameters; refuse what has no bound."""
        kernel = self.kernel
        if kernel not in KERNELS:
            raise ValueError(
                f"kernel={kernel!r} is not supported: PrivateKernelRidge needs a "
                "positive-definite kernel with a known bound on K(x, x) (SPEC "
                f"3.5). Use one of {', '.join(repr(k) for k in KERNELS)}."
            )
        gamma = None
        if kernel in ("rbf", "laplacian", "poly"):
            gamma = 1.0 / n_features if self.gamma is None else float(self.gamma)
        degree, coef0 = None, None
        if kernel == "poly":
            if not float(self.degree).is_integer() or self.degree < 1:
                raise ValueError(
                    f"degree={self.degree!r} is refused for kernel='poly': only "
                    "an integer degree >= 1 gives a positive-definite kernel "
                    "(SPEC 3.5)."
                )
            if self.coef0 < 0:
                raise ValueError(
                    f"coef0={self.coef0!r} is refused for kernel='poly': with "
                    "coef0 < 0 the polynomial kernel is not positive definite, "
                    "so it has no RKHS and Lemma 2's sensitivity fails (SPEC "
                    "3.5). Use coef0 >= 0."
                )
            degree, coef0 = int(self.degree), float(self.coef0)
        if self.release == "model" and kernel not in SHIFT_INVARIANT_KERNELS:
            raise ValueError(
                f"release='model' needs a shift-invariant kernel for random "
                f"Fourier features; kernel={kernel!r} is not one. Use kernel="
                "'rbf' or 'laplacian', or release='predictions'."
            )
        return kernel, gamma, degree, coef0

    def _check_delta(self, n_samples):
        delta = float(self.delta)
        if delta > 0 and delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={delta:g} is not below 1/n_samples={1.0 / n_samples:g}: "
                "a mechanism could then publish a whole record with probability "
                "delta. Choose delta well below 1/n.",
                UserWarning,
                stacklevel=3,
            )
        if self.release == "predictions" and self.max_queries is None:
            raise ValueError(
                "max_queries=None is refused for release='predictions': the "
                "number of predictions is part of the guarantee. Pass an int >= 1."
            )

    def _plan_release(self, n_samples, kappa, y_bound):
        """Everything the guarantee depends on, from public numbers only.

        Sensitivity, grid step, noise scale and the accountant events are
        computed here, before any budget is touched (SPEC 1, Frozen at fit).
        """
        alpha, epsilon = float(self.alpha), float(self.epsilon)
        delta = float(self.delta)
        label = type(self).__name__
        if self.release == "predictions":
            eps_q, calibration = per_query_epsilon(
                epsilon, delta, self.max_queries, "laplace", self.calibration
            )
            sensitivity = min(
                _function_sensitivity(kappa, y_bound, alpha, n_samples), 2.0 * y_bound
            )
            grid_step = default_grid_step(sensitivity)
            units = grid_units(sensitivity, grid_step)
            if calibration in ("zcdp", "rdp"):
                # m pure releases composed through zCDP (or its RDP curve):
                # the whole (epsilon, delta) is reserved as one approximate
                # event.
                events = [
                    PrivacyEvent.approximate(
                        epsilon, delta, kind="laplace_predictions", label=label
                    )
                ]
            else:
                events = [
                    PrivacyEvent.discrete_laplace(
                        units / eps_q, units, count=int(self.max_queries), label=label
                    )
                ]
            return {
                "kappa": kappa,
                "sensitivity": sensitivity,
                "grid_step": grid_step,
                "noise_scale": grid_step * units / eps_q,
                "mechanism": "grid_laplace",
                "per_query_epsilon": eps_q,
                "calibration": calibration,
                "events": events,
            }
        sensitivity = _weight_sensitivity(kappa, y_bound, alpha, n_samples)
        grid_step = default_grid_step(sensitivity)
        units = l2_grid_units(sensitivity, grid_step, 2 * self.n_components)
        if delta > 0:
            sigma_units = analytic_gaussian_sigma(epsilon, delta, units)
            event = PrivacyEvent.gaussian(
                sigma_units, units, epsilon=epsilon, delta=delta, label=label
            )
            mechanism, noise_scale = "grid_gaussian", grid_step * sigma_units
        else:
            event = PrivacyEvent(
                epsilon, 0.0, kind="high_dimensional_laplace", label=label
            )
            mechanism = "grid_high_dimensional_laplace"
            noise_scale = grid_step * units / epsilon
        return {
            "kappa": kappa,
            "sensitivity": sensitivity,
            "grid_step": grid_step,
            "noise_scale": noise_scale,
            "mechanism": mechanism,
            "events": [event],
        }

    def _resolve_y_bound(self, y):
        if self.y_bound is not None:
            return float(self.y_bound)
        warnings.warn(
            "y_bound is None: the target bound M is taken from the private "
            "training labels (max |y|), which the noise scale then reveals. "
            "Pass the public bound as `y_bound`.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        bound = float(np.max(np.abs(y)))
        return bound if bound > 0 else 1.0  # any positive M bounds all-zero y

    def _resolve_x_bound(self, X):
        if self.x_bound is not None:
            return float(self.x_bound)
        warnings.warn(
            f"x_bound is None: the row-norm bound of kernel={self.kernel!r} is "
            "taken from the private training rows (their largest norm), which "
            "the noise scale then reveals. Pass the public bound as `x_bound`.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        bound = float(np.max(row_norms(X)))
        return bound if bound > 0 else 1.0

    # -- fit -----------------------------------------------------------------
    # Set last in fit, in both release modes: a fit that fails leaves it unset.
    _fitted_marker = "accountant_"

    _FITTED_ATTRIBUTES = (
        "y_bound_",
        "x_bound_",
        "gamma_",
        "kappa_",
        "sensitivity_",
        "grid_step_",
        "noise_scale_",
        "mechanism_",
        "per_query_epsilon_",
        "calibration_",
        "X_fit_",
        "dual_coef_",
        "coef_",
        "random_frequencies_",
        "accountant_",
        "_kernel_spec_",
        "_serving_state_",
    )

    def fit(self, X, y):
        """Fit on private data and reserve the whole ``(epsilon, delta)``.

        Every input is validated, and the budget is checked, before anything
        is spent. Refitting starts a new release with a new budget (for the
        model's own accountant) or draws again from a shared one.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Private training rows.
        y : array-like of shape (n_samples,)
            Private targets, clipped to ``[-y_bound, y_bound]``.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            For an unsupported kernel, a poly kernel with ``coef0 < 0`` or a
            non-integer degree, ``release="model"`` with a kernel that is not
            shift invariant, ``max_queries=None`` with
            ``release="predictions"``, ``calibration="zcdp"`` or ``"rdp"`` with
            ``delta=0``, or bad data; before any budget is spent.
        BudgetExhaustedError
            When a shared accountant cannot pay for the fit (nothing is
            spent).
        """
        self._start_fit()
        y = check_regression_targets(y)
        X, y = validate_data(
            self, X, y, accept_sparse=_ACCEPT_SPARSE, y_numeric=True, dtype=np.float64
        )
        n_samples, n_features = X.shape
        kernel, gamma, degree, coef0 = self._check_kernel(n_features)
        self._check_delta(n_samples)
        y_bound = self._resolve_y_bound(y)
        x_bound = None
        if kernel in NORM_BOUNDED_KERNELS:
            x_bound = self._resolve_x_bound(X)
        if self.release == "model":
            kappa = 1.0  # paired Fourier features: ||phi(x)||_2 = 1 exactly
        else:
            kappa = _kappa(kernel, gamma, degree, coef0, x_bound)
        plan = self._plan_release(n_samples, kappa, y_bound)
        accountant = self._get_accountant(self.epsilon, self.delta)
        self._check_budget_available(accountant, plan["events"])

        y = np.clip(y, -y_bound, y_bound)
        spec = (kernel, gamma, degree, coef0, x_bound)
        if self.release == "model":
            fitted = self._fit_model_release(X, y, spec, plan)
        else:
            fitted = self._fit_prediction_release(X, y, spec, y_bound, plan)

        accountant.spend_events(plan["events"])  # atomic: the release is reserved
        for name in self._FITTED_ATTRIBUTES:  # a refit must not keep old state
            self.__dict__.pop(name, None)
        for name, value in fitted.items():
            setattr(self, name, value)
        self.kappa_ = plan["kappa"]
        self.sensitivity_ = plan["sensitivity"]
        self.grid_step_ = plan["grid_step"]
        self.noise_scale_ = plan["noise_scale"]
        self.mechanism_ = plan["mechanism"]
        self.y_bound_ = y_bound
        self.x_bound_ = x_bound
        self.gamma_ = gamma
        self.accountant_ = accountant
        self._kernel_spec_ = spec
        state = getattr(self, "_serving_state_", None)
        if state is not None:  # release="predictions": a durable query counter
            state.bind_ledger(accountant, type(self).__name__)
        return self

    def _fit_prediction_release(self, X, y, spec, y_bound, plan):
        kernel, gamma, degree, coef0, x_bound = spec
        if x_bound is not None:
            X = _clip_rows(X, x_bound)
        K = _kernel_matrix(X, X, kernel, gamma, degree, coef0)
        dual_coef = _fit_dual_coef(K, y, float(self.alpha))
        generators, reseed = make_noise_generators(self.noise_random_state, 1)
        config = {
            "max_queries": int(self.max_queries),
            "sensitivity": plan["sensitivity"],
            "per_query_epsilon": plan["per_query_epsilon"],
            "grid_step": plan["grid_step"],
            "y_bound": y_bound,
        }
        return {
            "X_fit_": X,
            "dual_coef_": dual_coef,
            "per_query_epsilon_": plan["per_query_epsilon"],
            "calibration_": plan["calibration"],
            "_serving_state_": ServingState(config, {"laplace": generators[0]}, reseed),
        }

    def _fit_model_release(self, X, y, spec, plan):
        kernel, gamma = spec[0], spec[1]
        frequencies = _fourier_frequencies(
            kernel, gamma, X.shape[1], self.n_components, self.random_state
        )
        weights = _fit_weights(_fourier_features(X, frequencies), y, float(self.alpha))
        (rng,), _ = make_noise_generators(self.noise_random_state, 1)
        if plan["mechanism"] == "grid_gaussian":
            coef, _ = grid_gaussian(
                weights,
                plan["sensitivity"],
                self.epsilon,
                self.delta,
                rng=rng,
                grid_step=plan["grid_step"],
            )
        else:
            coef, _ = grid_high_dimensional_laplace(
                weights,
                plan["sensitivity"],
                self.epsilon,
                rng=rng,
                grid_step=plan["grid_step"],
            )
        del weights  # only the noisy weights leave this function
        return {"coef_": coef, "random_frequencies_": frequencies}

    # -- predict -------------------------------------------------------------
    def _exact_predictions(self, X):
        """``clip(f(x), -M, M)`` from the private fit (never returned as is)."""
        kernel, gamma, degree, coef0, x_bound = self._kernel_spec_
        if x_bound is not None:
            X = _clip_rows(X, x_bound)
        X_fit = self.X_fit_
        values = np.empty(X.shape[0], dtype=np.float64)
        block = max(1, _BLOCK_ELEMENTS // max(1, X_fit.shape[0]))
        for rows in gen_batches(X.shape[0], block):
            K = _kernel_matrix(X[rows], X_fit, kernel, gamma, degree, coef0)
            values[rows] = K @ self.dual_coef_
        return np.clip(values, -self.y_bound_, self.y_bound_)

    def _model_predictions(self, X):
        values = np.empty(X.shape[0], dtype=np.float64)
        frequencies = self.random_frequencies_
        block = max(1, _BLOCK_ELEMENTS // (2 * frequencies.shape[0]))
        for rows in gen_batches(X.shape[0], block):
            values[rows] = _fourier_features(X[rows], frequencies) @ self.coef_
        return np.clip(values, -self.y_bound_, self.y_bound_)

    def predict(self, X):
        """Private predictions for ``X``.

        ``release="model"``: free, unlimited and deterministic (the released
        weights applied to ``X``, clipped to ``[-y_bound_, y_bound_]``).
        ``release="predictions"``: each row is a fresh grid Laplace release
        charged against ``max_queries``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_queries, n_features)
            Public query points (linear/poly: clipped to ``x_bound_``).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)

        Raises
        ------
        BudgetExhaustedError
            ``release="predictions"``, when ``max_queries`` is reached
            part-way; the error carries the answers already paid for in
            ``partial_predictions`` and their number in ``n_answered``.
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, reset=False, accept_sparse=_ACCEPT_SPARSE, dtype=np.float64
        )
        if self.mechanism_ != "grid_laplace":
            return self._model_predictions(X)
        state = self._serving_state_
        config = state.config
        n_queries = X.shape[0]
        with state.serving():
            n_allowed = state.queries_allowed(n_queries)
            answers = np.empty(0, dtype=np.float64)
            if n_allowed > 0:
                answers = grid_laplace(
                    self._exact_predictions(X[:n_allowed]),
                    config["sensitivity"],
                    config["per_query_epsilon"],
                    rng=state.generators["laplace"],
                    grid_step=config["grid_step"],
                    bounds=(-config["y_bound"], config["y_bound"]),
                )
                state.n_served += n_allowed
        if n_allowed < n_queries:
            raise BudgetExhaustedError(
                f"max_queries={config['max_queries']} is reached; {n_allowed} of "
                f"{n_queries} queries in this call were answered (see "
                "partial_predictions).",
                partial_predictions=answers,
                n_answered=n_allowed,
                spends=self.accountant_.events,
            )
        return answers

    def budget_status(self):
        """Public serving counters.

        Returns
        -------
        status : dict
            ``release``, ``n_answered``, ``max_queries`` and
            ``remaining_queries`` (``None`` for a released model: unlimited).
        """
        check_is_fitted(self)
        if self.mechanism_ != "grid_laplace":
            return {
                "release": "model",
                "n_answered": None,
                "max_queries": None,
                "remaining_queries": None,
            }
        state = self._serving_state_
        with state.serving():
            cap = state.config["max_queries"]
            return {
                "release": "predictions",
                "n_answered": state.n_served,
                "max_queries": cap,
                "remaining_queries": cap - state.n_served,
            }


# --------------------------------------------------------------------------
# Seed 001, Theorem 3, redone with R = M / sqrt(alpha) (SPEC 3.5)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelRidgeSchedule:
    """A choice of ``alpha`` and ``epsilon`` for ``n`` samples.

    Returned by :func:`kernel_ridge_schedule`.

    Attributes
    ----------
    alpha, epsilon : float
        ``alpha_scale * n^-alpha_exponent`` and
        ``epsilon_scale * n^-epsilon_exponent``.
    alpha_exponent, epsilon_exponent : float
    error_exponent : float
        The excess risk bound decays as ``n^-error_exponent``.
    seed_alpha_exponent, seed_epsilon_exponent : float
        The exponents printed in seed 001's Theorem 3, for comparison.
    """

    alpha: float
    epsilon: float
    alpha_exponent: float
    epsilon_exponent: float
    error_exponent: float
    seed_alpha_exponent: float
    seed_epsilon_exponent: float


def kernel_ridge_schedule(n, r=0.5, *, alpha_scale=1.0, epsilon_scale=1.0):
    """Regularisation and privacy schedule for :class:`PrivateKernelRidge` (SPEC 3.5).

    Seed 001's Theorem 3 balances the terms of its error decomposition; this
    redoes the balance with our ``R = M / sqrt(alpha)`` (seed 001 takes
    ``R = M``).

    Derivation. With ``f_{z,A} = pi(f_z) + b``, ``b`` Laplace with scale
    ``Delta / epsilon``, seed 001's decomposition (section 4, eq. (3)) is
    ``E[E(f_{z,A}) - E(f_rho)] <= R1 + R2 + S + D(alpha)``, where

    * ``R1 <= 2 epsilon G`` (Theorem 1, privacy as stability) with ``G``
      bounded by a constant times ``M^2 + E b^2``: order ``epsilon M^2 +
      Delta^2 / epsilon``;
    * ``R2 = E b^2 = 2 Delta^2 / epsilon^2`` (Proposition 3);
    * ``S`` of order ``M^2 / sqrt(n)`` (Hoeffding, Proposition 4);
    * ``D(alpha)`` of order ``alpha^s``, ``s = min(2 r, 1)``, when the
      regression function lies in the range of ``L_K^r`` (Proposition 4).

    Lemma 2 with ``R = M / sqrt(alpha)`` and ``alpha <= 1`` gives ``Delta = 2
    kappa^2 (kappa M / sqrt(alpha) + M) / (alpha n) <= 2 kappa^2 (kappa + 1)
    M / (alpha^(3/2) n)``, so ``R2 <= 8 kappa^4 (kappa + 1)^2 M^2 / (alpha^3
    n^2 epsilon^2)``: the noise term scales as ``1 / (alpha^3 n^2
    epsilon^2)``, not ``1 / (alpha^2 n^2 epsilon^2)`` as with ``R = M``. The
    ``Delta^2 / epsilon`` part of ``R1`` is smaller for ``epsilon <= 1``.
    Dropping constants, the bound is

        epsilon + alpha^-3 n^-2 epsilon^-2 + n^-1/2 + alpha^s.

    Equating the privacy term with the approximation term, ``epsilon =
    alpha^s``, and both with the noise term, ``alpha^s = alpha^(-3 - 2 s)
    n^-2``, gives ``alpha^(3 + 3 s) = n^-2``:

        alpha   = n^(-2 / (3 + 3 s)),
        epsilon = n^(-2 s / (3 + 3 s)),
        error   = O(n^(-2 s / (3 + 3 s))),

    and the sample term ``n^-1/2`` never dominates (``2 s / (3 + 3 s) <=
    1/3``). For ``r >= 1/2``: ``alpha = epsilon = n^-1/3``; for ``r < 1/2``:
    ``alpha = n^(-2 / (3 + 6 r))``, ``epsilon = n^(-4 r / (3 + 6 r))``.

    Comparison with the seed's printed exponents, ``alpha = n^(-2 / min(4, 3
    + 2 r))`` and ``epsilon = n^(-min(1/3, 4 r / (3 + 6 r)))``: the epsilon
    exponents agree; our alpha decays more slowly (``n^-1/3`` against
    ``n^-1/2`` for ``r >= 1/2``, ``2 / (3 + 6 r)`` against ``2 / (3 + 2 r)``
    below), because with ``R = M / sqrt(alpha)`` the noise grows as
    ``alpha^-3`` rather than ``alpha^-2`` when ``alpha`` shrinks.

    Parameters
    ----------
    n : int
        Number of training samples (>= 1).
    r : float, default=0.5
        Source-condition exponent (> 0) of seed 001's Theorem 3; the
        approximation error saturates at ``r = 1/2``.
    alpha_scale, epsilon_scale : float, default=1.0
        The constants in front of the rates (> 0); the theorem fixes only the
        exponents.

    Returns
    -------
    schedule : KernelRidgeSchedule

    Examples
    --------
    >>> from dpsklearn.kernel_ridge import kernel_ridge_schedule
    >>> s = kernel_ridge_schedule(10**6, r=0.5)
    >>> round(s.alpha, 6), round(s.epsilon, 6), s.seed_alpha_exponent
    (0.01, 0.01, 0.5)
    """
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}.")
    for name, value in (
        ("r", r),
        ("alpha_scale", alpha_scale),
        ("epsilon_scale", epsilon_scale),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, Real)
            or not (math.isfinite(value) and value > 0)
        ):
            raise ValueError(f"{name} must be a finite real number > 0, got {value!r}.")
    s = min(2.0 * r, 1.0)
    alpha_exponent = 2.0 / (3.0 + 3.0 * s)
    epsilon_exponent = 2.0 * s / (3.0 + 3.0 * s)
    return KernelRidgeSchedule(
        alpha=float(alpha_scale) * float(n) ** -alpha_exponent,
        epsilon=float(epsilon_scale) * float(n) ** -epsilon_exponent,
        alpha_exponent=alpha_exponent,
        epsilon_exponent=epsilon_exponent,
        error_exponent=epsilon_exponent,
        seed_alpha_exponent=2.0 / min(4.0, 3.0 + 2.0 * r),
        seed_epsilon_exponent=min(1.0 / 3.0, 4.0 * r / (3.0 + 6.0 * r)),
    )
