"""Continuous noise for vector releases: the analytic Gaussian and the L2 Laplace.

These draw floating-point noise; :mod:`dpsklearn.noise._grid` rounds it onto
a grid before anything is released (``docs/design.rst``, "Noise
primitives"). The analytic Gaussian mechanism (Balle and Wang 2018) gives
the smallest ``sigma`` that is ``(epsilon, delta)``-DP at every epsilon; the
high-dimensional Laplace, density ``~ exp(-||z||_2 / scale)``, is pure
``epsilon``-DP for L2 sensitivity ``epsilon * scale``. Neither has an exact
integer sampler here: both are exact only up to about ``2**-53``.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr

from .._monotone import smallest_within
from .._validation import COUNT, FINITE_POSITIVE, OPEN_UNIT, validate_params

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "high_dimensional_laplace",
    "rounded_gaussian",
]


@validate_params(
    {
        "sigma": [FINITE_POSITIVE],
        "epsilon": [FINITE_POSITIVE],
        "sensitivity": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def analytic_gaussian_delta(
    sigma: float, epsilon: float, sensitivity: float = 1.0
) -> float:
    """The exact ``delta`` of the Gaussian mechanism at ``epsilon``.

    Balle and Wang (2018), Theorem 8: adding ``N(0, sigma^2 I)`` to a vector
    of L2 sensitivity ``Delta`` is ``(epsilon, delta)``-DP if and only if
    ``delta >= Phi(Delta/(2 sigma) - epsilon sigma/Delta)
    - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta)``.
    Evaluated in log space (``scipy.special.log_ndtr``), so ``e^epsilon``
    never overflows.

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise (> 0).
    epsilon : float
        Target epsilon (> 0).
    sensitivity : float, default=1.0
        L2 sensitivity ``Delta`` (> 0).

    Returns
    -------
    delta : float

    Examples
    --------
    >>> from dpsklearn.noise import analytic_gaussian_delta
    >>> round(analytic_gaussian_delta(1.0, 1.0), 4)
    0.1269
    """
    sigma = float(sigma)
    epsilon = float(epsilon)
    sensitivity = float(sensitivity)
    return _analytic_delta_unit(sigma / sensitivity, epsilon)


def _analytic_delta_unit(sigma, epsilon):
    # Sensitivity 1; delta = Phi(a) - e^eps Phi(-b), a = 1/(2s) - eps s,
    # b = 1/(2s) + eps s. Written as Phi(a) (1 - e^(log term - log Phi(a))).
    a = 0.5 / sigma - epsilon * sigma
    b = 0.5 / sigma + epsilon * sigma
    log_first = float(log_ndtr(a))
    log_second = epsilon + float(log_ndtr(-b))
    if log_second >= log_first:  # only by rounding: delta is then ~0
        return 0.0
    return math.exp(log_first) * -math.expm1(log_second - log_first)


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [OPEN_UNIT],
        "sensitivity": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def analytic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0
) -> float:
    """Smallest ``sigma`` making the Gaussian mechanism ``(epsilon, delta)``-DP.

    The analytic Gaussian mechanism (Balle and Wang 2018, Algorithm 1 and
    Theorem 8): ``delta(sigma)`` of :func:`analytic_gaussian_delta` decreases
    in ``sigma``; bisection on ``log sigma`` finds the root, returned from the
    safe side (``analytic_gaussian_delta(sigma, epsilon) <= delta``). Unlike
    the classic ``Delta sqrt(2 ln(1.25/delta)) / epsilon``, it holds at every
    ``epsilon > 0`` and is smaller. ``sigma`` scales linearly in ``Delta``;
    the unit-sensitivity root is memoised.

    Parameters
    ----------
    epsilon : float
        Target epsilon (finite, > 0).
    delta : float
        Target delta, in (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity ``Delta`` (> 0).

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> import math
    >>> from dpsklearn.noise import analytic_gaussian_sigma
    >>> sigma = analytic_gaussian_sigma(0.5, 1e-5)
    >>> bool(sigma < math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)  # classic
    True
    """
    epsilon = float(epsilon)
    delta = float(delta)
    sensitivity = float(sensitivity)
    return sensitivity * _analytic_sigma_unit(epsilon, delta)


@functools.lru_cache(maxsize=1024)
def _analytic_sigma_unit(epsilon, delta):
    def ok(sigma):
        return _analytic_delta_unit(sigma, epsilon) <= delta

    return smallest_within(ok, 1.0, grow=True, log=True, rtol=1e-14)


@validate_params(
    {
        "sigma": [FINITE_POSITIVE],
        "size": [None, Integral, tuple],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def rounded_gaussian(
    sigma: float,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator,
) -> NDArray[np.int64] | np.int64:
    """Integer noise ``round(N(0, sigma^2))`` (the grid Gaussian in grid units).

    For an integer-valued vector ``a``, ``a + round(N)`` equals
    ``round(a + N)``: a deterministic function of the Gaussian mechanism's
    output, so it has exactly the Gaussian mechanism's ``(epsilon, delta)``
    (post-processing). Exact up to numpy's floating-point normal sampler
    (about ``2**-53``).

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian before rounding (> 0).
    size : int or tuple of int, optional
    rng : numpy.random.Generator

    Returns
    -------
    noise : int64 ndarray or numpy.int64

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import rounded_gaussian
    >>> rounded_gaussian(3.0, size=4, rng=np.random.default_rng(0)).dtype
    dtype('int64')
    """
    sigma = float(sigma)
    draws = rng.normal(0.0, sigma, size=size)
    return np.rint(draws).astype(np.int64)[()]


@validate_params(
    {
        "scale": [FINITE_POSITIVE],
        "dimension": [COUNT],
        "size": [None, Integral, tuple],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def high_dimensional_laplace(
    scale: float,
    dimension: int,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Draw ``Z`` in ``R^d`` with density proportional to ``exp(-||z||_2 / scale)``.

    The direction is uniform on the sphere (a normalised standard normal
    vector) and the norm is ``Gamma(d, scale)``, since the density of the norm
    is proportional to ``r^(d-1) exp(-r / scale)``. Adding it to a vector of
    L2 sensitivity ``Delta`` with ``scale = Delta / epsilon`` is
    ``epsilon``-DP: ``||z|| - ||z - v|| <= ||v||``. There is no exact integer
    sampler for this distribution; numpy's floating-point normal and gamma
    draws make it exact only up to about ``2**-53``.

    Parameters
    ----------
    scale : float
        ``Delta / epsilon`` (> 0).
    dimension : int
        ``d`` (>= 1).
    size : int or tuple of int, optional
        Number (shape) of independent vectors; the result has shape
        ``size + (d,)``.
    rng : numpy.random.Generator

    Returns
    -------
    z : float ndarray of shape ``size + (d,)``

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import high_dimensional_laplace
    >>> high_dimensional_laplace(1.0, 3, size=2, rng=np.random.default_rng(0)).shape
    (2, 3)
    """
    scale = float(scale)
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    directions = rng.standard_normal(shape + (int(dimension),))
    norms = np.linalg.norm(directions, axis=-1, keepdims=True)
    while np.any(norms == 0):  # probability 0 in exact arithmetic
        zero = norms[..., 0] == 0
        directions[zero] = rng.standard_normal((int(zero.sum()), int(dimension)))
        norms = np.linalg.norm(directions, axis=-1, keepdims=True)
    radii = rng.gamma(float(dimension), scale, size=shape)
    return directions / norms * np.asarray(radii)[..., None]
