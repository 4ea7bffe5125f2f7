"""The public bounds of kernel ridge, checked before any budget is touched.

Lemma 2 of Nie and Wang (2017) bounds the sensitivity of the fit through
``kappa^2 = sup K(x, x)`` and the label bound ``M``; the AdaSSP release
(``docs/regression.rst``) through the label range. These functions resolve
the kernel, its parameters and those bounds from what the user passes, and
refuse what has no bound. Where a bound is missing, it is read from the
private rows with a :class:`~dpsklearn.exceptions.PrivacyLeakWarning`
(the noise scale would then reveal it).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils.extmath import row_norms

from .._param_validation import Interval, validate_parameter_constraints
from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning
from ..mechanisms import MechanismOptions
from ._kernels import KERNELS, SHIFT_INVARIANT_KERNELS

#: The keys ``kernel_params`` may carry, and their constraints.
KERNEL_PARAMETERS = {
    "gamma": [Interval(Real, 0, None, closed="neither"), None],
    "degree": [Interval(Real, 0, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
    "x_bound": [Interval(Real, 0, None, closed="neither"), None],
    "feature_bounds": ["array-like", None],
}


def check_kernel_params(kernel_params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``kernel_params`` with its keys and values checked."""
    params = dict(kernel_params or {})
    unknown = set(params) - set(KERNEL_PARAMETERS)
    if unknown:
        raise ValueError(
            f"kernel_params has unknown keys {sorted(unknown)}; it takes "
            f"{sorted(KERNEL_PARAMETERS)}."
        )
    validate_parameter_constraints(
        KERNEL_PARAMETERS, params, caller_name="kernel_params of PrivateKernelRidge"
    )
    return params


def check_kernel(
    kernel: str,
    kernel_params: Mapping[str, Any] | None,
    n_features: int,
    options: MechanismOptions,
) -> tuple[str, float | None, int | None, float | None]:
    """``(kernel, gamma, degree, coef0)`` resolved; refuse what has no bound."""
    if kernel not in KERNELS:
        raise ValueError(
            f"kernel={kernel!r} is not supported: PrivateKernelRidge needs a "
            "positive-definite kernel with a known bound on K(x, x). "
            f"Use one of {', '.join(repr(k) for k in KERNELS)}."
        )
    params = check_kernel_params(kernel_params)
    gamma = None
    if kernel in ("rbf", "laplacian", "poly"):
        given = params.get("gamma")
        gamma = 1.0 / n_features if given is None else float(given)
    degree, coef0 = None, None
    if kernel == "poly":
        degree, coef0 = params.get("degree", 3), params.get("coef0", 1)
        if not float(degree).is_integer() or degree < 1:
            raise ValueError(
                f"kernel_params['degree']={degree!r} is refused for "
                "kernel='poly': only an integer degree >= 1 gives a "
                "positive-definite kernel."
            )
        if coef0 < 0:
            raise ValueError(
                f"kernel_params['coef0']={coef0!r} is refused for "
                "kernel='poly': with coef0 < 0 the polynomial kernel is not "
                "positive definite, and the bound on how much one record moves "
                "the model, which the privacy guarantee rests on, does not "
                "hold. Use coef0 >= 0."
            )
        degree, coef0 = int(degree), float(coef0)
    statistics = options.releases_statistics
    if statistics and kernel not in SHIFT_INVARIANT_KERNELS:
        raise ValueError(
            f"SufficientStatistics maps rows through random Fourier features "
            f"of a shift-invariant kernel; kernel={kernel!r} is not one. Use "
            "kernel='rbf' or 'laplacian', or mechanism=OutputPerturbation()."
        )
    model = not statistics and options.publishes_model
    if model and kernel not in SHIFT_INVARIANT_KERNELS:
        raise ValueError(
            f"OutputPerturbation(release='model') needs a shift-invariant "
            f"kernel for random Fourier features; kernel={kernel!r} is not "
            "one. Use kernel='rbf' or 'laplacian', or release='predictions'."
        )
    return kernel, gamma, degree, coef0


def resolve_target_range(y_bound: Any, y: np.ndarray) -> tuple[float, float]:
    """``(lo, hi)``: ``(-M, M)`` for a bound ``M``, the pair for a range."""
    if y_bound is None:
        warn_user(
            "y_bound is None: the target bound M is taken from the private "
            "training labels (max |y|), which the noise scale then reveals. "
            "Pass the public bound (or range) as `y_bound`.",
            PrivacyLeakWarning,
        )
        bound = float(np.max(np.abs(y)))
        bound = bound if bound > 0 else 1.0  # any positive M bounds all-zero y
        return -bound, bound
    if np.ndim(y_bound) == 0:
        bound = float(y_bound)
        return -bound, bound
    try:
        lo, hi = (float(v) for v in np.asarray(y_bound).ravel())
    except (TypeError, ValueError):
        lo = hi = np.nan
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(
            "y_bound must be a positive bound M or a public range (lo, hi) with "
            f"lo < hi, got {y_bound!r}."
        )
    return lo, hi


def resolve_x_bound(
    kernel: str, kernel_params: Mapping[str, Any] | None, X: ArrayLike
) -> float:
    """The public row-norm bound, or the private rows' largest norm (warned)."""
    given = check_kernel_params(kernel_params).get("x_bound")
    if given is not None:
        return float(given)
    warn_user(
        f"kernel_params['x_bound'] is unset: the row-norm bound of "
        f"kernel={kernel!r} is taken from the private training rows "
        "(their largest norm), which the noise scale then reveals. Pass the "
        "public bound as kernel_params={'x_bound': ...}.",
        PrivacyLeakWarning,
    )
    bound = float(np.max(row_norms(X)))
    return bound if bound > 0 else 1.0


def resolve_feature_bounds(
    kernel_params: Mapping[str, Any] | None, n_features: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The public bounds of every column, ``(lo, hi)`` arrays; ``None`` if unset.

    ``kernel_params["feature_bounds"]`` is one pair ``(lo, hi)`` for every
    column or an array of shape ``(2, n_features)``; public numbers (a data
    dictionary, the columns' documented ranges), checked before anything is
    spent.
    """
    given = check_kernel_params(kernel_params).get("feature_bounds")
    if given is None:
        return None
    bounds = np.asarray(given, dtype=np.float64)
    if bounds.shape == (2,):
        bounds = np.repeat(bounds[:, None], n_features, axis=1)
    if bounds.shape != (2, n_features):
        raise ValueError(
            "kernel_params['feature_bounds'] must be one pair (lo, hi) for every "
            f"column or an array of shape (2, {n_features}): a row of lower "
            f"bounds and a row of upper bounds; got shape {bounds.shape}."
        )
    lo, hi = bounds
    if not (np.all(np.isfinite(bounds)) and np.all(lo < hi)):
        raise ValueError(
            "kernel_params['feature_bounds'] must be finite with lo < hi in "
            "every column."
        )
    return lo, hi


def scale_by_bounds(X: Any, bounds: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Each column clipped to its public bounds and mapped to unit variance.

    A column spread uniformly over ``(lo, hi)`` gets mean 0 and variance 1:
    ``(x - (lo + hi) / 2) / ((hi - lo) / 2) * sqrt(3)``, the scale the
    kernel's default width ``gamma = 1 / n_features`` assumes. Public
    constants only (the same map for every row). Dense rows only.
    """
    if sp.issparse(X):
        raise ValueError(
            "kernel_params['feature_bounds'] needs dense rows: mapping each "
            "column to unit variance centres it, which a sparse matrix cannot "
            "hold. Pass X as a dense array, or leave the bounds unset and scale "
            "the columns by public constants yourself."
        )
    lo, hi = bounds
    X = np.clip(X, lo, hi)
    return (X - (lo + hi) / 2.0) / ((hi - lo) / 2.0) * np.sqrt(3.0)
