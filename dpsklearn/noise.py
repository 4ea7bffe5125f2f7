"""Noise primitives: the one place where dpsklearn draws mechanism noise.

Every released value in the package is computed from the primitives below
(SPEC section 2.3); no other module may call a floating-point Laplace sampler.

* :func:`discrete_laplace` -- integer noise ``P(z) ~ exp(-|z| / scale)``, the
  symmetric geometric mechanism of seed 003 with ``alpha = exp(1 / scale)``.
  Used for every integer-valued score (vote counts, distances, bin counts).
* :func:`grid_laplace` -- a real value rounded to a grid of step ``g`` plus
  discrete Laplace noise in grid units, so that no released float carries the
  low-order bits that Mironov's (2012) attack on textbook floating-point
  Laplace reads.
* :func:`exponential_mechanism` -- ``P(r) ~ exp(epsilon u(r) / (2 Delta_u))``
  by the Gumbel-max trick on log-weights (no overflow at any score).
* :class:`DiscreteLaplaceStream` -- discrete Laplace noise addressed by index,
  drawn lazily in chunks, so that the sparse vector engine's vectorised path
  and its sequential reference consume the same draws.
* :func:`analytic_gaussian_sigma` -- the smallest Gaussian ``sigma`` that is
  ``(epsilon, delta)``-DP at a given L2 sensitivity (the analytic Gaussian
  mechanism of Balle and Wang 2018, valid at every epsilon, unlike the classic
  ``sqrt(2 ln(1.25/delta)) Delta / epsilon`` that holds only for epsilon < 1).
* :func:`grid_gaussian` and :func:`grid_high_dimensional_laplace` -- vector
  releases with L2 sensitivity on a grid of step ``g``: the vector is rounded
  to the grid (L2 sensitivity in grid units ``Delta/g + sqrt(d)``) and integer
  noise is added, ``round(N(0, sigma^2 I))`` (:func:`rounded_gaussian`) for
  ``(epsilon, delta)``-DP or ``round(Z)`` with ``Z`` the high-dimensional
  Laplace (:func:`high_dimensional_laplace`, density ``~ exp(-epsilon ||z||_2
  / Delta)``) for ``epsilon``-DP. Rounding the noise of an integer vector is
  post-processing of the continuous mechanism, so the guarantee is the
  continuous one (SPEC 3.5).

Exactness caveat: numpy's geometric, Gumbel, normal and gamma samplers work
in floating point, so the distributions above are exact only up to about
``2**-53`` in probability. The guarantees are stated for the ideal
distributions; the documentation states this caveat. The high-dimensional
Laplace has no exact integer sampler at all (its rounded norm and direction
come from floating-point normal and gamma draws).

Every function takes the :class:`numpy.random.Generator` it draws from, so
tests can pin noise. Estimators obtain theirs from :func:`make_noise_generators`,
seeded from OS entropy unless ``noise_random_state`` is set.
"""

from __future__ import annotations

import functools
import math
import warnings
from numbers import Integral

import numpy as np
from scipy.special import log_ndtr

from .exceptions import PrivacyLeakWarning

__all__ = [
    "DiscreteLaplaceStream",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "default_grid_step",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential_mechanism",
    "grid_gaussian",
    "grid_high_dimensional_laplace",
    "grid_laplace",
    "grid_units",
    "high_dimensional_laplace",
    "l2_grid_units",
    "make_noise_generators",
    "project_to_simplex",
    "rounded_gaussian",
    "truncated_geometric",
]


def _check_scale(scale: float, name: str = "scale") -> float:
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {scale!r}.")
    return scale


def discrete_laplace(scale: float, size=None, *, rng: np.random.Generator):
    """Draw discrete Laplace noise ``P(z) = (1-a)/(1+a) a^|z|``, ``a = exp(-1/scale)``.

    Sampled as the difference of two independent geometric variables with
    success probability ``1 - exp(-1/scale)`` (their common offset cancels).
    Adding it to an integer score of sensitivity ``s`` is ``(s/scale)``-DP.

    Parameters
    ----------
    scale : float
        The scale ``t > 0``.
    size : int or tuple of int, optional
        Output shape; ``None`` returns a Python-int-like numpy scalar.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    noise : int64 ndarray or numpy.int64

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import discrete_laplace
    >>> z = discrete_laplace(2.0, size=5, rng=np.random.default_rng(0))
    >>> z.dtype
    dtype('int64')
    """
    scale = _check_scale(scale)
    success = -math.expm1(-1.0 / scale)
    if success >= 1.0:  # scale so small that the noise is 0 with certainty
        return np.zeros(size, dtype=np.int64) if size is not None else np.int64(0)
    first = rng.geometric(success, size=size)
    second = rng.geometric(success, size=size)
    return (np.asarray(first, dtype=np.int64) - np.asarray(second, dtype=np.int64))[()]


def truncated_geometric(counts, epsilon: float, lower, upper, *, rng):
    """Geometric mechanism for integer counts, truncated to ``[lower, upper]``.

    Seed 003: release ``count + DLap(1/epsilon)`` for a counting query of
    sensitivity 1, then clip to the range the true count can take (clipping
    is post-processing, so the release stays ``epsilon``-DP).

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import truncated_geometric
    >>> rng = np.random.default_rng(0)
    >>> int(truncated_geometric(5, 1.0, 0, 10, rng=rng)) in range(11)
    True
    """
    epsilon = _check_scale(epsilon, "epsilon")
    counts = np.asarray(counts, dtype=np.int64)
    noisy = counts + discrete_laplace(1.0 / epsilon, size=counts.shape, rng=rng)
    return np.clip(noisy, lower, upper)[()]


def default_grid_step(sensitivity: float) -> float:
    """The default grid step ``g``: a power of two near ``sensitivity / 1024`` (SPEC 8).

    Examples
    --------
    >>> from dpsklearn.noise import default_grid_step
    >>> default_grid_step(1.0)
    0.0009765625
    """
    sensitivity = _check_scale(sensitivity, "sensitivity")
    return float(2.0 ** round(math.log2(sensitivity / 1024.0)))


def grid_units(sensitivity: float, grid_step: float, n_coordinates: int = 1) -> int:
    """Sensitivity in grid units after rounding (SPEC section 1, Floating point).

    Rounding each of ``n_coordinates`` values to the grid can move each by one
    unit, so an L1 sensitivity ``Delta`` becomes ``floor(Delta/g) + d`` units.
    """
    return int(math.floor(sensitivity / grid_step)) + int(n_coordinates)


def grid_laplace(
    values,
    sensitivity: float,
    epsilon: float,
    *,
    rng: np.random.Generator,
    grid_step: float | None = None,
    n_coordinates: int = 1,
    bounds: tuple[float, float] | None = None,
):
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
    sensitivity = _check_scale(sensitivity, "sensitivity")
    epsilon = _check_scale(epsilon, "epsilon")
    if grid_step is None:
        grid_step = default_grid_step(sensitivity)
    grid_step = _check_scale(grid_step, "grid_step")
    values = np.asarray(values, dtype=np.float64)
    units = grid_units(sensitivity, grid_step, n_coordinates)
    on_grid = np.rint(values / grid_step).astype(np.int64)
    noisy_units = on_grid + discrete_laplace(
        units / epsilon, size=values.shape, rng=rng
    )
    noisy = noisy_units.astype(np.float64) * grid_step
    if bounds is not None:
        noisy = np.clip(noisy, bounds[0], bounds[1])
    return noisy


def exponential_mechanism(
    utilities, epsilon: float, sensitivity: float = 1.0, *, rng: np.random.Generator
):
    """Sample ``r`` with ``P(r) ~ exp(epsilon u(r) / (2 sensitivity))``, per row.

    Uses the Gumbel-max trick on log-weights: ``argmax_r(epsilon u_r /
    (2 Delta) + G_r)`` with i.i.d. standard Gumbel ``G_r`` has exactly that
    distribution, and never exponentiates, so it neither overflows nor
    underflows at any epsilon or score. ``epsilon``-DP when every utility has
    sensitivity ``sensitivity`` (McSherry and Talwar 2007; seed 004).

    Parameters
    ----------
    utilities : array-like of shape (n_candidates,) or (n_rows, n_candidates)
    epsilon : float
    sensitivity : float, default=1.0
    rng : numpy.random.Generator

    Returns
    -------
    index : int or int64 ndarray of shape (n_rows,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import exponential_mechanism
    >>> int(exponential_mechanism([0, 1000], 1.0, rng=np.random.default_rng(0)))
    1
    """
    epsilon = _check_scale(epsilon, "epsilon")
    sensitivity = _check_scale(sensitivity, "sensitivity")
    utilities = np.asarray(utilities, dtype=np.float64)
    log_weights = utilities * (epsilon / (2.0 * sensitivity))
    perturbed = log_weights + rng.gumbel(size=utilities.shape)
    return np.argmax(perturbed, axis=-1)[()]


def make_noise_generators(noise_random_state=None, n_streams: int = 1):
    """Independent noise generators for one fit (SPEC section 1, Randomness).

    With ``noise_random_state=None`` the generators are seeded from OS
    entropy, so every fit draws fresh noise. An integer seed makes the noise
    replayable, which is for tests and experiments only and warns with
    :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.

    Returns
    -------
    generators : list of numpy.random.Generator
    reseed_on_copy : bool
        ``True`` when copies of the serving state must draw fresh entropy.

    Examples
    --------
    >>> from dpsklearn.noise import make_noise_generators
    >>> gens, reseed = make_noise_generators(None, 2)
    >>> len(gens), reseed
    (2, True)
    """
    if noise_random_state is None:
        seq = np.random.SeedSequence()
        reseed_on_copy = True
    elif isinstance(noise_random_state, Integral) and not isinstance(
        noise_random_state, bool
    ):
        warnings.warn(
            "noise_random_state is set: the mechanism noise is replayable by "
            "anyone who knows the seed, and refits reuse the same noise. Use "
            "it for tests and experiments only.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        seq = np.random.SeedSequence(int(noise_random_state))
        reseed_on_copy = False
    else:
        raise TypeError(
            "noise_random_state must be None or an int, got "
            f"{type(noise_random_state).__name__}."
        )
    generators = [np.random.Generator(np.random.PCG64(s)) for s in seq.spawn(n_streams)]
    return generators, reseed_on_copy


class DiscreteLaplaceStream:
    """Discrete Laplace draws addressed by a non-decreasing index.

    ``stream(start, stop)`` returns the draws for indices ``start..stop-1``.
    Draws are made lazily, always in whole chunks of ``chunk_size``, so the
    draw for an index depends only on the generator and the index, whatever
    the pattern of calls (as long as no index is skipped: skipped indices are
    never drawn, and a request after a gap starts a new chunk there). A
    vectorised consumer that looks ahead and a sequential consumer therefore
    see the same noise, and a consumer that stops early never pays for noise
    it does not use. Indices below the oldest retained one may not be
    requested again (the stream only moves forward).

    A copy made by pickle or :func:`copy.deepcopy` drops its unused draws and,
    when ``reseed_on_copy`` is true, reseeds from OS entropy, so that a copy
    of a served model never replays the original's future noise (SPEC 8).

    Parameters
    ----------
    scale : float
    rng : numpy.random.Generator
    reseed_on_copy : bool, default=True
    chunk_size : int, default=4096

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import DiscreteLaplaceStream
    >>> s = DiscreteLaplaceStream(3.0, np.random.default_rng(0))
    >>> a = s(0, 10); b = s(5, 12)
    >>> bool((a[5:] == b[:5]).all())
    True
    """

    def __init__(self, scale, rng, reseed_on_copy=True, chunk_size=4096):
        self.scale = _check_scale(scale)
        self.rng = rng
        self.reseed_on_copy = bool(reseed_on_copy)
        self.chunk_size = int(chunk_size)
        self._buffer = np.zeros(0, dtype=np.int64)
        self._buffer_start = 0  # index of self._buffer[0]

    def __call__(self, start: int, stop: int):
        if self._buffer_start is None:  # a fresh copy: anchor at the first request
            self._buffer_start = start
        if start < self._buffer_start:
            raise ValueError("DiscreteLaplaceStream only moves forward.")
        # Discard what lies before start: it can never be asked for again.
        drop = min(start - self._buffer_start, self._buffer.size)
        if drop:
            self._buffer = self._buffer[drop:]
            self._buffer_start += drop
        if self._buffer.size == 0:  # skipped indices are never drawn
            self._buffer_start = start
        have_until = self._buffer_start + self._buffer.size
        if stop > have_until:
            # Always whole chunks of chunk_size: the draw for an index then
            # depends on its position in its chunk only, not on how large the
            # request was that first reached it.
            n_chunks = -(-(stop - have_until) // self.chunk_size)
            fresh = [
                discrete_laplace(self.scale, size=self.chunk_size, rng=self.rng)
                for _ in range(n_chunks)
            ]
            self._buffer = np.concatenate([self._buffer, *fresh])
        return self._buffer[start - self._buffer_start : stop - self._buffer_start]

    def __getstate__(self):
        state = self.__dict__.copy()
        if self.reseed_on_copy:
            # Unused draws stay with the original: a copy must not replay them.
            state["_buffer"] = np.zeros(0, dtype=np.int64)
            state["_buffer_start"] = None
            state["rng"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.reseed_on_copy:
            self.rng = np.random.default_rng()


# --------------------------------------------------------------------------
# Vector releases with L2 sensitivity (SPEC 3.5: kernel ridge model release)
# --------------------------------------------------------------------------


def _check_delta_open(delta):
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return delta


def analytic_gaussian_delta(sigma, epsilon, sensitivity=1.0):
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
    sigma = _check_scale(sigma, "sigma")
    epsilon = _check_scale(epsilon, "epsilon")
    sensitivity = _check_scale(sensitivity, "sensitivity")
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


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
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
    epsilon = _check_scale(epsilon, "epsilon")
    delta = _check_delta_open(delta)
    sensitivity = _check_scale(sensitivity, "sensitivity")
    return sensitivity * _analytic_sigma_unit(epsilon, delta)


@functools.lru_cache(maxsize=1024)
def _analytic_sigma_unit(epsilon, delta):
    def ok(sigma):
        return _analytic_delta_unit(sigma, epsilon) <= delta

    hi = 1.0
    while not ok(hi):
        hi *= 2.0
    lo = hi / 2.0
    while ok(lo) and lo > 1e-300:
        hi, lo = lo, lo / 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if not (lo < mid < hi) or hi / lo - 1.0 <= 1e-14:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def rounded_gaussian(sigma, size=None, *, rng: np.random.Generator):
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
    sigma = _check_scale(sigma, "sigma")
    draws = rng.normal(0.0, sigma, size=size)
    return np.rint(draws).astype(np.int64)[()]


def high_dimensional_laplace(scale, dimension, size=None, *, rng):
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
    scale = _check_scale(scale)
    if isinstance(dimension, bool) or not isinstance(dimension, Integral):
        raise ValueError(f"dimension must be an integer >= 1, got {dimension!r}.")
    if dimension < 1:
        raise ValueError(f"dimension must be an integer >= 1, got {dimension!r}.")
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    directions = rng.standard_normal(shape + (int(dimension),))
    norms = np.linalg.norm(directions, axis=-1, keepdims=True)
    while np.any(norms == 0):  # probability 0 in exact arithmetic
        zero = norms[..., 0] == 0
        directions[zero] = rng.standard_normal((int(zero.sum()), int(dimension)))
        norms = np.linalg.norm(directions, axis=-1, keepdims=True)
    radii = rng.gamma(float(dimension), scale, size=shape)
    return directions / norms * np.asarray(radii)[..., None]


def l2_grid_units(sensitivity: float, grid_step: float, n_coordinates: int) -> float:
    """L2 sensitivity in grid units after rounding a vector to the grid (SPEC 3.5).

    Rounding moves each of the ``d`` coordinates by at most half a unit, so
    two rounded neighbours differ by at most one unit per coordinate more than
    the exact ones: ``||round(v/g) - round(v'/g)||_2 <= Delta/g + sqrt(d)``.

    Examples
    --------
    >>> from dpsklearn.noise import l2_grid_units
    >>> l2_grid_units(1.0, 0.25, 4)
    6.0
    """
    sensitivity = _check_scale(sensitivity, "sensitivity")
    grid_step = _check_scale(grid_step, "grid_step")
    return sensitivity / grid_step + math.sqrt(int(n_coordinates))


def _vector_on_grid(values, sensitivity, grid_step):
    sensitivity = _check_scale(sensitivity, "sensitivity")
    if grid_step is None:
        grid_step = default_grid_step(sensitivity)
    grid_step = _check_scale(grid_step, "grid_step")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:
        values = values[None]
    units = l2_grid_units(sensitivity, grid_step, values.shape[-1])
    return np.rint(values / grid_step).astype(np.int64), grid_step, units


def grid_gaussian(values, sensitivity, epsilon, delta, *, rng, grid_step=None):
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


def grid_high_dimensional_laplace(values, sensitivity, epsilon, *, rng, grid_step=None):
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
    epsilon = _check_scale(epsilon, "epsilon")
    on_grid, grid_step, units = _vector_on_grid(values, sensitivity, grid_step)
    scale_units = units / epsilon
    noise = high_dimensional_laplace(
        scale_units, on_grid.shape[-1], size=on_grid.shape[:-1] or None, rng=rng
    )
    noisy = on_grid + np.rint(noise).astype(np.int64)
    return noisy.astype(np.float64) * grid_step, scale_units * grid_step


def project_to_simplex(values):
    """Euclidean projection of each row onto the probability simplex.

    Post-processing for noisy probability vectors (SPEC 3.3, ``predict_proba``):
    the result of row ``v`` is ``max(v - tau, 0)`` with the ``tau`` that makes
    it sum to one (Held, Wolfe and Crowder 1974; Duchi et al. 2008), found by
    sorting each row, vectorised over rows. It uses no data, so it costs no
    privacy.

    Parameters
    ----------
    values : array-like of shape (n_coordinates,) or (n_rows, n_coordinates)

    Returns
    -------
    projected : float ndarray of the same shape
        Non-negative rows that sum to one.

    Examples
    --------
    >>> from dpsklearn.noise import project_to_simplex
    >>> project_to_simplex([[0.5, 0.7, -0.4], [2.0, 0.0, 0.0]]).tolist()
    [[0.4, 0.6, 0.0], [1.0, 0.0, 0.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    rows = np.atleast_2d(values)
    if rows.ndim != 2 or rows.shape[-1] == 0:
        raise ValueError("project_to_simplex needs rows of at least one coordinate.")
    n = rows.shape[1]
    descending = -np.sort(-rows, axis=1)
    cumulative = np.cumsum(descending, axis=1) - 1.0
    index = np.arange(1, n + 1, dtype=np.float64)
    # rho: the largest j with descending_j - (cumsum_j - 1) / j > 0 (j >= 1 always).
    support = descending - cumulative / index > 0
    rho = n - 1 - np.argmax(support[:, ::-1], axis=1)
    tau = cumulative[np.arange(rows.shape[0]), rho] / (rho + 1.0)
    projected = np.maximum(rows - tau[:, None], 0.0)
    return projected.reshape(values.shape)


# --------------------------------------------------------------------------
# Discrete Gaussian (Canonne, Kamath and Steinke 2020): Gaussian noise on
# integer scores (SPEC 3.1: Confident-GNMax's vote counts)
# --------------------------------------------------------------------------


def discrete_gaussian(sigma, size=None, *, rng: np.random.Generator):
    """Draw discrete Gaussian noise ``P(z) ~ exp(-z^2 / (2 sigma^2))`` on the integers.

    Canonne, Kamath and Steinke (2020), Algorithm 3, vectorised: with
    ``t = floor(sigma) + 1``, propose ``Y ~ DLap(t)`` (:func:`discrete_laplace`,
    ``P(y) ~ exp(-|y|/t)``) and accept it with probability
    ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``; accepted proposals have
    exactly the discrete Gaussian distribution. Proposals
    are drawn in batches for all outstanding entries at once (no Python loop
    over entries); about 1.3 proposals are needed per draw for ``sigma >= 2``,
    at most about 2.3 below.

    Adding ``N_Z(0, sigma^2)`` independently to each coordinate of an integer
    vector whose replace-one neighbours differ by an integer vector of L2
    norm at most ``Delta`` is ``Delta^2 / (2 sigma^2)``-zCDP, i.e.
    ``(alpha, alpha Delta^2 / (2 sigma^2))``-RDP at every order ``alpha``:
    the same bound as the continuous Gaussian (CKS 2020 bound the Renyi
    divergence of one coordinate at an integer shift; divergences of
    independent coordinates add). So it is
    accounted with the continuous Gaussian's RDP curve, never its PLD.

    Exactness caveat (SPEC section 1): the proposal comes from numpy's
    floating-point geometric sampler and the acceptance test compares a
    floating-point uniform with ``exp(...)``, so the distribution is exact
    only up to about ``2**-53`` per draw; CKS's fully exact sampler uses
    rational arithmetic, which a vectorised numpy sampler cannot.

    Parameters
    ----------
    sigma : float
        The scale ``sigma > 0`` (the standard deviation is slightly below
        ``sigma`` for small ``sigma`` and equal to it up to ``1e-10`` for
        ``sigma >= 1``).
    size : int or tuple of int, optional
        Output shape; ``None`` returns a numpy scalar.
    rng : numpy.random.Generator

    Returns
    -------
    noise : int64 ndarray or numpy.int64

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import discrete_gaussian
    >>> z = discrete_gaussian(3.0, size=100_000, rng=np.random.default_rng(0))
    >>> z.dtype, bool(abs(z.std() - 3.0) < 0.05), bool(abs(z.mean()) < 0.05)
    (dtype('int64'), True, True)
    """
    sigma = _check_scale(sigma, "sigma")
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    n_total = int(np.prod(shape, dtype=np.int64))
    t = math.floor(sigma) + 1
    variance = sigma * sigma
    out = np.empty(n_total, dtype=np.int64)
    filled = 0
    while filled < n_total:
        need = n_total - filled
        n_draw = int(need * 1.4) + 16
        proposal = np.asarray(
            discrete_laplace(float(t), size=n_draw, rng=rng), dtype=np.int64
        )
        gap = np.abs(proposal) - variance / t
        accept = rng.random(n_draw) < np.exp(-(gap * gap) / (2.0 * variance))
        accepted = proposal[accept][:need]
        out[filled : filled + accepted.size] = accepted
        filled += accepted.size
    return out.reshape(shape)[()]
