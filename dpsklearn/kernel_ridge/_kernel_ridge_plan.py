"""The fit plan of ``PrivateKernelRidge``'s output perturbation (Nie and Wang 2017).

From the options and public numbers only: the shards the memory guard
allows, the bound ``M`` on the centred targets, the kernel's ``kappa``, and
the calibrated release of Lemma 2's sensitivity (``docs/design.rst``,
"Kernel ridge: sensitivity and releases"). The AdaSSP plan of
``SufficientStatistics`` is :func:`._random_feature_ssp.plan_statistics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from sklearn.base import clone

from .._base import FitPlan
from ..mechanisms import OutputPerturbation
from ._kernel_checks import resolve_x_bound
from ._kernels import NORM_BOUNDED_KERNELS, _kappa
from ._sharding import plan_shards, resolve_working_memory

__all__ = ["plan_output_perturbation"]


def plan_output_perturbation(
    options: OutputPerturbation,
    X: Any,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    alpha: float,
    max_queries: int | None,
    kernel_spec: tuple[str, float | None, int | None, float | None],
    x_bound_source: tuple[str, Mapping[str, Any] | None],
    target_range: tuple[float, float],
    feature_bounds: Any,
) -> FitPlan:
    """The fit plan of ``OutputPerturbation``: shards, bounds, the release.

    Parameters
    ----------
    options : OutputPerturbation
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Validated rows (scaled by the public feature bounds, if any).
    y : ndarray of shape (n_samples,)
        Validated targets.
    epsilon, delta : float
        The whole release's budget.
    alpha : float
        The ridge penalty (per row, Nie and Wang's ``lambda``).
    max_queries : int or None
        Predictions paid for (``release="predictions"``).
    kernel_spec : tuple
        ``(kernel, gamma, degree, coef0)`` from ``check_kernel``.
    x_bound_source : tuple
        The estimator's ``(kernel, kernel_params)``, for the row-norm bound
        of norm-bounded kernels.
    target_range : tuple of float
        The public ``(lo, hi)`` of the targets.
    feature_bounds : ndarray or None
        The public feature bounds, kept as a fitted attribute.

    Returns
    -------
    plan : FitPlan
    """
    kernel, gamma, degree, coef0 = kernel_spec
    n_samples = X.shape[0]
    lo, hi = target_range
    working_memory = resolve_working_memory(None)
    model = options.release == "model"
    n_weights = 2 * options.n_components if model else None
    # The memory guard: refused here, before any Gram matrix exists.
    n_shards = plan_shards(n_samples, options.n_shards, working_memory, n_weights)
    # Lemma 2 reads |y| <= M: the fit runs on targets centred at the
    # public range's midpoint, so M is the half-width (hi - lo) / 2, the
    # smallest bound the public range gives; predictions add the
    # midpoint back (post-processing). A range (5, 10) thus costs M = 2.5,
    # not 10, and the model has no intercept to learn.
    center = 0.5 * (lo + hi)
    y_bound = 0.5 * (hi - lo)
    x_bound = None
    if kernel in NORM_BOUNDED_KERNELS:
        x_bound = resolve_x_bound(*x_bound_source, X)
    if model:
        kappa = 1.0  # paired Fourier features: ||phi(x)||_2 = 1 exactly
    else:
        kappa = _kappa(kernel, gamma, degree, coef0, x_bound)
    mechanism = options.calibrate(
        epsilon,
        delta,
        kappa=kappa,
        y_bound=y_bound,
        alpha=alpha,
        n_samples=n_samples,
        n_shards=n_shards,
        max_queries=max_queries,
    )
    serving = (
        {"released": True}
        if model
        else {
            # Not None: calibrate refuses None for release="predictions".
            "max_queries": int(cast(int, max_queries)),
            "on_exhausted": "abstain",
            "fill": 0.0,  # centred: the midpoint once it is added back
        }
    )
    if isinstance(y, np.ndarray):  # Dask targets: clipped on the workers
        y = np.clip(y, lo, hi) - center
    return FitPlan(
        mechanism,
        X,
        y,
        delta=delta,
        training={"spec": (kernel, gamma, degree, coef0, x_bound)},
        serving=serving,
        attributes={
            "mechanism_": clone(options).set_params(n_shards=n_shards),
            "kappa_": kappa,
            "n_estimators_": n_shards,
            "working_memory_": working_memory,
            "sensitivity_": mechanism.sensitivity,
            "grid_step_": mechanism.grid_step,
            "noise_scale_": mechanism.noise_scale,
            "y_bound_": y_bound,
            "target_range_": (lo, hi),
            "center_": center,
            "x_bound_": x_bound,
            "feature_bounds_": feature_bounds,
            "gamma_": gamma,
            "_kernel_spec_": (kernel, gamma, degree, coef0, x_bound),
        },
    )
