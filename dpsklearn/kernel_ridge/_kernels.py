"""The non-private fit of kernel ridge regression: kernels, bounds, exact solves.

Everything here is deterministic linear algebra on the (private) training
rows; nothing is released. The mechanisms that release the fit, and the
sensitivity that calibrates them, are in :mod:`dpsklearn.mechanisms`
(``docs/design.rst``, "Kernel ridge: sensitivity and releases").
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from sklearn.metrics.pairwise import (
    cosine_similarity,
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.utils import check_random_state
from sklearn.utils.extmath import row_norms, safe_sparse_dot

__all__ = [
    "KERNELS",
    "NORM_BOUNDED_KERNELS",
    "SHIFT_INVARIANT_KERNELS",
]

#: Kernels with a known bound ``kappa^2 = sup K(x, x)``.
KERNELS = ("rbf", "laplacian", "cosine", "linear", "poly")
#: Kernels whose rows are clipped to ``x_bound`` to bound ``K(x, x)``.
NORM_BOUNDED_KERNELS = ("linear", "poly")
#: Shift-invariant kernels, the ones random Fourier features approximate.
SHIFT_INVARIANT_KERNELS = ("rbf", "laplacian")


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


def _solve_regularised(gram, rhs, ridge, rebuild=None):
    """Solve ``(gram + ridge I) x = rhs`` exactly (Cholesky).

    A direct solver, so no optimisation error enters the sensitivity. The
    symmetric indefinite solver is the fallback when rounding makes the
    Cholesky factorisation fail (a matrix that is positive definite in exact
    arithmetic). With ``rebuild`` (a function that recomputes ``gram``),
    ``gram`` is overwritten instead of copied, so a shard holds one ``n x n``
    matrix; the fallback then rebuilds it.
    """
    system = gram if rebuild is not None else np.array(gram, np.float64, copy=True)
    system.flat[:: system.shape[0] + 1] += ridge
    # The system is symmetric: its transpose is the same matrix in Fortran
    # order, which LAPACK factorises in place (a C-ordered one is copied,
    # twice the memory).
    try:
        return linalg.solve(
            system.T, rhs, assume_a="pos", overwrite_a=True, check_finite=False
        )
    except linalg.LinAlgError:
        if rebuild is not None:
            system = rebuild()
        else:
            system = np.array(gram, dtype=np.float64, copy=True)
        system.flat[:: system.shape[0] + 1] += ridge
        return linalg.solve(
            system.T, rhs, assume_a="sym", overwrite_a=True, check_finite=False
        )


def _fit_dual_coef(K, y, alpha, rebuild=None):
    """Dual coefficients ``c = (K + alpha n I)^-1 y``; ``f = sum_i c_i K(x_i, .)``.

    With ``rebuild``, ``K`` is overwritten (:func:`_solve_regularised`).
    """
    return _solve_regularised(K, y, alpha * K.shape[0], rebuild)


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
