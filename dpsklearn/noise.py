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

Exactness caveat: numpy's geometric and Gumbel samplers work in floating
point, so the distributions above are exact only up to about ``2**-53`` in
probability. The guarantees are stated for the ideal distributions; the
documentation states this caveat.

Every function takes the :class:`numpy.random.Generator` it draws from, so
tests can pin noise. Estimators obtain theirs from :func:`make_noise_generators`,
seeded from OS entropy unless ``noise_random_state`` is set.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral

import numpy as np

from .exceptions import PrivacyLeakWarning

__all__ = [
    "DiscreteLaplaceStream",
    "default_grid_step",
    "discrete_laplace",
    "exponential_mechanism",
    "grid_laplace",
    "grid_units",
    "make_noise_generators",
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
    The draw for an index is fixed once made, whatever the pattern of calls,
    so a vectorised consumer that looks ahead and a sequential consumer see
    the same noise. Draws are made lazily in chunks: a consumer that stops
    early never pays for noise it does not use. Indices below the oldest
    retained one may not be requested again (the stream only moves forward).

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
            n_new = max(stop - have_until, self.chunk_size)
            fresh = discrete_laplace(self.scale, size=n_new, rng=self.rng)
            self._buffer = np.concatenate([self._buffer, fresh])
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
