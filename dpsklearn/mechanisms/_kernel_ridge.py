"""Output perturbation of kernel ridge regression: its sensitivity and releases.

For ``f_z = argmin (1/n) sum_i (f(x_i) - y_i)^2 + alpha ||f||_K^2`` over the
RKHS of a kernel with ``kappa^2 = sup_x K(x, x)`` and targets in ``[-M,
M]``, ``alpha ||f_z||^2 <= mean(y^2) <= M^2`` gives ``||f_z||_K <= R = M /
sqrt(alpha)``, and strong convexity (modulus ``2 alpha``) with the ``2
(kappa R + M)``-Lipschitz squared loss on that range gives, under
replace-one (Nie and Wang 2017, Lemma 2, written without its ``R >= M``
shortcut; ``docs/design.rst``, "Kernel ridge: sensitivity and releases")::

    ||f_z - f_z'||_K   <= 2 kappa (kappa R + M) / (alpha n)
    ||f_z - f_z'||_inf <= 2 kappa^2 (kappa R + M) / (alpha n)

* :func:`kernel_ridge_prediction_release` -- each prediction, clipped to
  ``[-M, M]`` (sensitivity at most ``2 M`` then), with grid Laplace noise
  per query (Nie and Wang 2017, Proposition 1, composed over
  ``max_queries``).
* sharded fits (divide and conquer, Zhang, Duchi and Wainwright 2013): the
  average of ``k`` shard solutions, each on at least ``s = n // k`` rows.
  A replaced record changes one shard, by at most the bound above at ``s``
  rows, clipped (``2 M`` for clipped predictions, ``2 R`` for weights of
  norm at most ``R``); the average divides that by ``k``
  (``docs/design.rst``, "Sharded kernel ridge"). At ``k = 1`` this is the
  bound above.
* :func:`kernel_ridge_weight_release` and :class:`WeightRelease` -- the
  weights of a model on features with ``sup ||phi(x)|| = kappa`` (random
  Fourier features), released once with the analytic Gaussian mechanism
  (Balle and Wang 2018) for ``delta > 0`` or the high-dimensional Laplace
  for ``delta = 0``, on a grid with L2 sensitivity ``Delta/g + sqrt(d)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..accounting import GaussianEvent, PrivacyEvent, PureEvent
from ..noise import (
    NoiseSource,
    analytic_gaussian_sigma,
    default_grid_step,
    grid_gaussian,
    grid_high_dimensional_laplace,
    l2_grid_units,
)
from ._base import Engine, Mechanism
from ._per_query import GridLaplaceRelease

__all__ = [
    "WeightRelease",
    "function_sensitivity",
    "kernel_ridge_prediction_release",
    "kernel_ridge_weight_release",
    "weight_sensitivity",
]


def _shard_rows(n_samples, n_shards):
    """The fewest rows of any of ``n_shards`` near-equal shards of ``n_samples``."""
    return int(n_samples) // int(n_shards)


def function_sensitivity(
    kappa: float, y_bound: float, alpha: float, n_samples: int
) -> float:
    """Lemma 2: ``sup |f_z - f_z'| <= 2 kappa^2 (kappa R + M) / (alpha n)``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import function_sensitivity
    >>> function_sensitivity(1.0, 1.0, 1.0, 100)
    0.04
    """
    radius = y_bound / math.sqrt(alpha)
    return 2.0 * kappa**2 * (kappa * radius + y_bound) / (alpha * n_samples)


def weight_sensitivity(
    kappa: float, y_bound: float, alpha: float, n_samples: int
) -> float:
    """L2 sensitivity of the weights, ``2 kappa (kappa R + M) / (alpha n)``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import weight_sensitivity
    >>> weight_sensitivity(1.0, 1.0, 1.0, 100)
    0.04
    """
    radius = y_bound / math.sqrt(alpha)
    return 2.0 * kappa * (kappa * radius + y_bound) / (alpha * n_samples)


def kernel_ridge_prediction_release(
    epsilon: float,
    delta: float,
    max_queries: int,
    *,
    kappa: float,
    y_bound: float,
    alpha: float,
    n_samples: int,
    n_shards: int = 1,
    calibration: str = "auto",
) -> GridLaplaceRelease:
    """Per-query grid Laplace on the mean of ``k`` clipped shard predictions.

    Each of the ``k = n_shards`` shard fits has at least ``s = n // k`` rows;
    replacing one record changes one shard's prediction by at most
    ``min(Lemma 2 at s rows, 2 M)`` (clipped predictions differ by at most
    ``2 M`` whatever the fit), and the average of the ``k`` clipped
    predictions by that over ``k``. ``k = 1`` is the unsharded fit.

    Examples
    --------
    >>> from dpsklearn.mechanisms import kernel_ridge_prediction_release
    >>> mech = kernel_ridge_prediction_release(
    ...     1.0, 1e-5, 100, kappa=1.0, y_bound=1.0, alpha=0.1, n_samples=10_000)
    >>> round(mech.sensitivity, 6), mech.bounds
    (0.008325, (-1.0, 1.0))
    >>> sharded = kernel_ridge_prediction_release(
    ...     1.0, 1e-5, 100, kappa=1.0, y_bound=1.0, alpha=0.1, n_samples=10_000,
    ...     n_shards=10)
    >>> round(sharded.sensitivity, 6)  # Lemma 2 at 1,000 rows, over 10
    0.008325
    """
    shard_sensitivity = min(
        function_sensitivity(kappa, y_bound, alpha, _shard_rows(n_samples, n_shards)),
        2.0 * y_bound,
    )
    return GridLaplaceRelease.calibrate(
        epsilon,
        delta,
        max_queries,
        sensitivity=shard_sensitivity / n_shards,
        bounds=(-y_bound, y_bound),
        calibration=calibration,
    )


class WeightRelease(Mechanism):
    """One release of a weight vector of L2 sensitivity ``sensitivity``.

    The weights are rounded to a grid of step ``g`` (L2 sensitivity
    ``Delta/g + sqrt(d)`` in grid units) and integer noise is added: the
    rounded analytic Gaussian, ``(epsilon, delta)``-DP, when ``delta > 0``;
    the rounded high-dimensional Laplace, pure ``epsilon``-DP, when ``delta
    = 0`` (no exact integer sampler: exact to about ``2**-53``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import WeightRelease
    >>> WeightRelease.calibrate(1.0, 1e-5, sensitivity=0.1, n_weights=20).name
    'grid_gaussian'
    >>> WeightRelease.calibrate(1.0, 0.0, sensitivity=0.1, n_weights=20).name
    'grid_high_dimensional_laplace'
    """

    n_streams = 1

    def __init__(
        self, epsilon: float, delta: float, sensitivity: float, n_weights: int
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.sensitivity = float(sensitivity)
        self.n_weights = int(n_weights)
        self.grid_step = default_grid_step(self.sensitivity)
        self.units = l2_grid_units(self.sensitivity, self.grid_step, self.n_weights)
        self.sigma_units = (
            analytic_gaussian_sigma(self.epsilon, self.delta, self.units)
            if self.delta > 0
            else None
        )

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float, *, sensitivity: float, n_weights: int
    ) -> WeightRelease:
        """The noise of one release of ``n_weights`` weights."""
        return cls(epsilon, delta, sensitivity, n_weights)

    @property
    def name(self) -> str:
        if self.sigma_units is not None:
            return "grid_gaussian"
        return "grid_high_dimensional_laplace"

    @property
    def noise_scale(self) -> float:
        """Per-weight Gaussian standard deviation, or the Laplace norm's scale."""
        if self.sigma_units is not None:
            return self.grid_step * self.sigma_units
        return self.grid_step * self.units / self.epsilon

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        if self.sigma_units is not None:
            return [
                GaussianEvent(
                    self.sigma_units,
                    self.units,
                    epsilon=self.epsilon,
                    delta=self.delta,
                    label=label,
                )
            ]
        return [PureEvent(self.epsilon, label=label)]

    def release(self, weights: ArrayLike, noise: NoiseSource) -> NDArray[np.float64]:
        """The noisy weights (the only thing that leaves the fit)."""
        if self.sigma_units is not None:
            noisy, _ = grid_gaussian(
                weights,
                self.sensitivity,
                self.epsilon,
                self.delta,
                rng=noise[0],
                grid_step=self.grid_step,
            )
        else:
            noisy, _ = grid_high_dimensional_laplace(
                weights,
                self.sensitivity,
                self.epsilon,
                rng=noise[0],
                grid_step=self.grid_step,
            )
        return noisy

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        return self.epsilon, self.delta

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "sensitivity_": self.sensitivity,
            "grid_step_": self.grid_step,
            "noise_scale_": self.noise_scale,
        }


def kernel_ridge_weight_release(
    epsilon: float,
    delta: float,
    *,
    kappa: float,
    y_bound: float,
    alpha: float,
    n_samples: int,
    n_weights: int,
    n_shards: int = 1,
) -> WeightRelease:
    """The mean weights of ``k`` random-feature shard fits, released once.

    Each shard's weights have norm at most ``R = M / sqrt(alpha)`` and move
    by at most ``min(2 kappa (kappa R + M) / (alpha s), 2 R)`` when one of
    its ``s >= n // k`` rows is replaced; the mean of the ``k`` shards' weights
    by that over ``k``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import kernel_ridge_weight_release
    >>> mech = kernel_ridge_weight_release(
    ...     1.0, 1e-5, kappa=1.0, y_bound=1.0, alpha=0.1, n_samples=10_000,
    ...     n_weights=200)
    >>> mech.name, round(mech.sensitivity, 5)
    ('grid_gaussian', 0.00832)
    """
    radius = y_bound / math.sqrt(alpha)
    shard_sensitivity = min(
        weight_sensitivity(kappa, y_bound, alpha, _shard_rows(n_samples, n_shards)),
        2.0 * radius,
    )
    return WeightRelease.calibrate(
        epsilon,
        delta,
        sensitivity=shard_sensitivity / n_shards,
        n_weights=n_weights,
    )
