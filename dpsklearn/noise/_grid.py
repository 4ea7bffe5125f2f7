"""Real values released on a grid with integer noise.

A real value ``v`` of sensitivity ``Delta`` is rounded to a grid of step
``g`` and integer noise is added in grid units, so the release is an exact
multiple of ``g`` and carries no low-order bits of the data (Mironov 2012).
Rounding can move a scalar by one unit, so its sensitivity becomes
``floor(Delta/g) + 1`` units, a vector's L1 sensitivity ``floor(Delta/g) +
d`` units, and a vector's L2 sensitivity ``Delta/g + sqrt(d)`` units
(``docs/design.rst``, "Noise primitives"). Scalar and L1 releases use
discrete Laplace noise, or discrete Gaussian noise where a per-query release
is accounted in zCDP (:func:`grid_discrete_gaussian`); L2 vector releases the
analytic Gaussian or the high-dimensional Laplace
(:mod:`dpsklearn.noise._continuous`), rounded.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import COUNT, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ._continuous import (
    analytic_gaussian_sigma,
    high_dimensional_laplace,
    rounded_gaussian,
)
from ._discrete import discrete_gaussian, discrete_laplace

__all__ = [
    "default_grid_step",
    "grid_discrete_gaussian",
    "grid_gaussian",
    "grid_high_dimensional_laplace",
    "grid_laplace",
    "grid_units",
    "l2_grid_units",
]


@validate_params(
    {
        "sensitivity": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def default_grid_step(sensitivity: float) -> float:
    """The default grid step ``g``: a power of two near ``sensitivity / 1024``.

    Examples
    --------
    >>> from dpsklearn.noise import default_grid_step
    >>> default_grid_step(1.0)
    0.0009765625
    """
    sensitivity = float(sensitivity)
    return float(2.0 ** round(math.log2(sensitivity / 1024.0)))


def grid_units(sensitivity: float, grid_step: float, n_coordinates: int = 1) -> int:
    """Sensitivity in grid units after rounding.

    Rounding each of ``n_coordinates`` values to the grid can move each by one
    unit, so an L1 sensitivity ``Delta`` becomes ``floor(Delta/g) + d`` units.
    """
    return int(math.floor(sensitivity / grid_step)) + int(n_coordinates)


@validate_params(
    {
        "values": ["array-like", Real],
        "sensitivity": [FINITE_POSITIVE],
        "epsilon": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
        "grid_step": [None, FINITE_POSITIVE],
        "n_coordinates": [COUNT],
        "bounds": [None, tuple],
    },
    prefer_skip_nested_validation=True,
)
def grid_laplace(
    values: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    rng: np.random.Generator,
    grid_step: float | None = None,
    n_coordinates: int = 1,
    bounds: tuple[float, float] | None = None,
) -> NDArray[np.float64]:
    """Release real values on a grid with discrete Laplace noise in grid units.

    The release is ``g * (round(v/g) + DLap(units/epsilon))``.

    ``units = floor(sensitivity/g) + n_coordinates`` (:func:`grid_units`):
    for a scalar release ``n_coordinates = 1``; for a vector release whose L1
    sensitivity is ``sensitivity``, ``n_coordinates`` is its length (the noise
    is drawn per coordinate with that scale). The release is ``epsilon``-DP
    for neighbours whose values differ by at most ``sensitivity`` (in L1 over
    the last axis for vectors). The result is clipped to ``bounds`` if given
    (post-processing).

    Parameters
    ----------
    values : array-like
        True values; for vector releases the last axis has ``n_coordinates``.
    sensitivity : float
        Sensitivity (L1 over one release).
    epsilon : float
        Privacy parameter of one release.
    rng : numpy.random.Generator
    grid_step : float, optional
        Grid step ``g``; default :func:`default_grid_step` of ``sensitivity``.
    n_coordinates : int, default=1
    bounds : (float, float), optional

    Returns
    -------
    noisy : float ndarray, every entry an integer multiple of ``grid_step``
        (before clipping to ``bounds``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import grid_laplace
    >>> out = grid_laplace([0.3, 0.7], 1.0, 1.0, rng=np.random.default_rng(0),
    ...                    bounds=(0.0, 1.0))
    >>> out.shape
    (2,)
    """
    sensitivity = float(sensitivity)
    epsilon = float(epsilon)
    if grid_step is None:
        grid_step = default_grid_step(sensitivity)
    grid_step = float(grid_step)
    values = np.asarray(values, dtype=np.float64)
    units = grid_units(sensitivity, grid_step, n_coordinates)
    noise = discrete_laplace(units / epsilon, size=values.shape, rng=rng)
    return _on_grid_with_noise(values, noise, grid_step, bounds)


def _on_grid_with_noise(values, noise_units, grid_step, bounds):
    """``g * (round(v/g) + noise)``, clipped to ``bounds`` if given."""
    on_grid = np.rint(values / grid_step).astype(np.int64)
    noisy = (on_grid + noise_units).astype(np.float64) * grid_step
    if bounds is not None:
        noisy = np.clip(noisy, bounds[0], bounds[1])
    return noisy


@validate_params(
    {
        "values": ["array-like", Real],
        "sigma_units": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
        "grid_step": [FINITE_POSITIVE],
        "bounds": [None, tuple],
    },
    prefer_skip_nested_validation=True,
)
def grid_discrete_gaussian(
    values: ArrayLike,
    sigma_units: float,
    *,
    rng: np.random.Generator,
    grid_step: float,
    bounds: tuple[float, float] | None = None,
) -> NDArray[np.float64]:
    """Release real values on a grid with discrete Gaussian noise in grid units.

    The release is ``g * (round(v/g) + N_Z(0, sigma_units^2))``, each entry
    independently, clipped to ``bounds`` if given (post-processing). For
    scalar values whose neighbours differ by at most ``Delta``, the rounded
    integers differ by at most ``u = floor(Delta/g) + 1`` (:func:`grid_units`),
    so one release is ``u^2 / (2 sigma_units^2)``-zCDP, with the continuous
    Gaussian's Renyi curve at every order (Canonne, Kamath and Steinke 2020,
    for integer shifts; :func:`~dpsklearn.noise.discrete_gaussian`). The
    calibration of ``sigma_units`` is the mechanism's
    (:class:`~dpsklearn.mechanisms.GridGaussianRelease`).

    Parameters
    ----------
    values : array-like
        True values, one release each.
    sigma_units : float
        The discrete Gaussian's scale, in grid units.
    rng : numpy.random.Generator
    grid_step : float
        Grid step ``g``.
    bounds : (float, float), optional

    Returns
    -------
    noisy : float ndarray, every entry an integer multiple of ``grid_step``
        (before clipping to ``bounds``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import grid_discrete_gaussian
    >>> out = grid_discrete_gaussian([0.3, 0.7], 40.0, grid_step=2**-10,
    ...                              rng=np.random.default_rng(0))
    >>> out.shape, bool(np.all(out * 2**10 == np.rint(out * 2**10)))
    ((2,), True)
    """
    values = np.asarray(values, dtype=np.float64)
    noise = discrete_gaussian(float(sigma_units), size=values.shape, rng=rng)
    return _on_grid_with_noise(values, noise, float(grid_step), bounds)


@validate_params(
    {
        "sensitivity": [FINITE_POSITIVE],
        "grid_step": [FINITE_POSITIVE],
        "n_coordinates": [COUNT],
    },
    prefer_skip_nested_validation=True,
)
def l2_grid_units(sensitivity: float, grid_step: float, n_coordinates: int) -> float:
    """L2 sensitivity in grid units after rounding a vector to the grid.

    Rounding moves each of the ``d`` coordinates by at most half a unit, so
    two rounded neighbours differ by at most one unit per coordinate more than
    the exact ones: ``||round(v/g) - round(v'/g)||_2 <= Delta/g + sqrt(d)``.

    Examples
    --------
    >>> from dpsklearn.noise import l2_grid_units
    >>> l2_grid_units(1.0, 0.25, 4)
    6.0
    """
    sensitivity = float(sensitivity)
    grid_step = float(grid_step)
    return sensitivity / grid_step + math.sqrt(int(n_coordinates))


def _vector_on_grid(values, sensitivity, grid_step):
    sensitivity = float(sensitivity)
    if grid_step is None:
        grid_step = default_grid_step(sensitivity)
    grid_step = float(grid_step)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:
        values = values[None]
    units = l2_grid_units(sensitivity, grid_step, values.shape[-1])
    return np.rint(values / grid_step).astype(np.int64), grid_step, units


@validate_params(
    {
        "values": ["array-like", Real],
        "sensitivity": [FINITE_POSITIVE],
        "epsilon": [FINITE_POSITIVE],
        "delta": [OPEN_UNIT],
        "rng": [np.random.Generator],
        "grid_step": [None, FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def grid_gaussian(
    values: ArrayLike,
    sensitivity: float,
    epsilon: float,
    delta: float,
    *,
    rng: np.random.Generator,
    grid_step: float | None = None,
) -> tuple[NDArray[np.float64], float]:
    """Release a vector of L2 sensitivity ``Delta`` on a grid, ``(epsilon, delta)``-DP.

    The release is ``g * (round(v/g) + round(N(0, sigma_u^2 I)))`` with
    ``sigma_u = analytic_gaussian_sigma(epsilon, delta, Delta/g + sqrt(d))``
    (:func:`l2_grid_units`, :func:`analytic_gaussian_sigma`,
    :func:`rounded_gaussian`). It is the analytic Gaussian mechanism on the
    integer vector ``round(v/g)`` followed by rounding, so ``(epsilon,
    delta)``-DP; no released float carries low-order bits of ``v``.

    Parameters
    ----------
    values : array-like of shape (d,) or (k, d)
        The vector(s); each row along the last axis is one release.
    sensitivity : float
        L2 sensitivity of one vector.
    epsilon : float
    delta : float
        In (0, 1).
    rng : numpy.random.Generator
    grid_step : float, optional
        Default :func:`default_grid_step` of ``sensitivity``.

    Returns
    -------
    noisy : float ndarray, the shape of ``values`` (at least 1-D)
    sigma : float
        The noise standard deviation in the units of ``values``
        (``g * sigma_u``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import grid_gaussian
    >>> out, sigma = grid_gaussian(np.zeros(5), 1.0, 1.0, 1e-5,
    ...                            rng=np.random.default_rng(0))
    >>> out.shape
    (5,)
    """
    on_grid, grid_step, units = _vector_on_grid(values, sensitivity, grid_step)
    sigma_units = analytic_gaussian_sigma(epsilon, delta, units)
    noise = rounded_gaussian(sigma_units, size=on_grid.shape, rng=rng)
    return (on_grid + noise).astype(np.float64) * grid_step, sigma_units * grid_step


@validate_params(
    {
        "values": ["array-like", Real],
        "sensitivity": [FINITE_POSITIVE],
        "epsilon": [FINITE_POSITIVE],
        "rng": [np.random.Generator],
        "grid_step": [None, FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def grid_high_dimensional_laplace(
    values: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    rng: np.random.Generator,
    grid_step: float | None = None,
) -> tuple[NDArray[np.float64], float]:
    """Release a vector of L2 sensitivity ``Delta`` on a grid, ``epsilon``-DP.

    The release is ``g * (round(v/g) + round(Z))`` with ``Z`` the
    high-dimensional Laplace of scale ``(Delta/g + sqrt(d)) / epsilon``
    (:func:`high_dimensional_laplace`, :func:`l2_grid_units`): the pure-DP
    mechanism on the integer vector ``round(v/g)``, then rounding
    (post-processing). Exact only up to about ``2**-53`` (floating-point
    normal and gamma draws; there is no exact integer sampler).

    Parameters
    ----------
    values : array-like of shape (d,) or (k, d)
    sensitivity : float
        L2 sensitivity of one vector.
    epsilon : float
    rng : numpy.random.Generator
    grid_step : float, optional

    Returns
    -------
    noisy : float ndarray, the shape of ``values`` (at least 1-D)
    scale : float
        The scale of the noise norm's Gamma distribution, in the units of
        ``values`` (``g * units / epsilon``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import grid_high_dimensional_laplace
    >>> out, scale = grid_high_dimensional_laplace(
    ...     np.zeros(4), 1.0, 1.0, rng=np.random.default_rng(0))
    >>> out.shape
    (4,)
    """
    epsilon = float(epsilon)
    on_grid, grid_step, units = _vector_on_grid(values, sensitivity, grid_step)
    scale_units = units / epsilon
    noise = high_dimensional_laplace(
        scale_units, on_grid.shape[-1], size=on_grid.shape[:-1] or None, rng=rng
    )
    noisy = on_grid + np.rint(noise).astype(np.int64)
    return noisy.astype(np.float64) * grid_step, scale_units * grid_step
