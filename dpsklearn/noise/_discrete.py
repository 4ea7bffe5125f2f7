"""Integer noise: discrete Laplace, the geometric mechanism, the discrete Gaussian.

Every integer-valued score the library releases (vote counts, distances to
instability, bin counts, counting queries) gets integer noise from here, so
that no released float carries low-order bits of the data (Mironov 2012).
The formulas and their guarantees are in ``docs/design.rst``, "Noise
primitives". :class:`DiscreteNoiseStream` addresses discrete Laplace or
Gaussian draws by index, so that the sparse vector engine's vectorised search and its
sequential reference in the tests consume the same noise.

Exactness: numpy's geometric sampler and the discrete Gaussian's acceptance
test work in floating point, so these distributions are exact only up to
about ``2**-53`` in probability; the guarantees are stated for the ideal
distributions.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import FINITE_POSITIVE, validate_params

__all__ = [
    "DiscreteLaplaceStream",
    "DiscreteNoiseStream",
    "discrete_gaussian",
    "discrete_laplace",
    "truncated_geometric",
]


@validate_params(
    {
        "scale": [FINITE_POSITIVE],
        "size": [None, Integral, tuple],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def discrete_laplace(
    scale: float,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator,
) -> NDArray[np.int64] | np.int64:
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
    scale = float(scale)
    success = -math.expm1(-1.0 / scale)
    if success >= 1.0:  # scale so small that the noise is 0 with certainty
        return np.zeros(size, dtype=np.int64) if size is not None else np.int64(0)
    first = rng.geometric(success, size=size)
    second = rng.geometric(success, size=size)
    return (np.asarray(first, dtype=np.int64) - np.asarray(second, dtype=np.int64))[()]


@validate_params(
    {
        "counts": ["array-like", Integral],
        "epsilon": [FINITE_POSITIVE],
        "lower": [Integral],
        "upper": [Integral],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def truncated_geometric(
    counts: ArrayLike,
    epsilon: float,
    lower: int,
    upper: int,
    *,
    rng: np.random.Generator,
) -> NDArray[np.int64] | np.int64:
    """Geometric mechanism for integer counts, truncated to ``[lower, upper]``.

    The geometric mechanism (S. O. Chan's CSCI4230 notes 21, after
    Balcan): release ``count + DLap(1/epsilon)`` for a counting query of
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
    epsilon = float(epsilon)
    counts = np.asarray(counts, dtype=np.int64)
    noisy = counts + discrete_laplace(1.0 / epsilon, size=counts.shape, rng=rng)
    return np.clip(noisy, lower, upper)[()]


@validate_params(
    {
        "sigma": [FINITE_POSITIVE],
        "size": [None, Integral, tuple],
        "rng": [np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def discrete_gaussian(
    sigma: float,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator,
) -> NDArray[np.int64] | np.int64:
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

    Exactness caveat: the proposal comes from numpy's
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
    sigma = float(sigma)
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


class DiscreteNoiseStream:
    """Integer noise draws addressed by a non-decreasing index.

    ``stream(start, stop)`` returns the draws for indices ``start..stop-1``,
    from the discrete Laplace ``DLap(scale)`` (:func:`discrete_laplace`) or
    the discrete Gaussian ``N_Z(0, scale^2)`` (:func:`discrete_gaussian`).
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
    of a served model never replays the original's future noise
    (``docs/design.rst``, "Serving state, copies and the ledger").

    Parameters
    ----------
    scale : float
        The discrete Laplace scale ``t`` or the discrete Gaussian ``sigma``.
    rng : numpy.random.Generator
    reseed_on_copy : bool, default=True
    chunk_size : int, default=4096
    distribution : {"laplace", "gaussian"}, default="laplace"

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import DiscreteNoiseStream
    >>> s = DiscreteNoiseStream(3.0, np.random.default_rng(0), distribution="gaussian")
    >>> a = s(0, 10); b = s(5, 12)
    >>> bool((a[5:] == b[:5]).all())
    True
    """

    def __init__(
        self,
        scale: float,
        rng: np.random.Generator,
        reseed_on_copy: bool = True,
        chunk_size: int = 4096,
        distribution: str = "laplace",
    ) -> None:
        self.scale = float(scale)
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}.")
        if distribution not in _SAMPLERS:
            raise ValueError(
                f"distribution must be 'laplace' or 'gaussian', got {distribution!r}."
            )
        self.distribution = distribution
        self.rng = rng
        self.reseed_on_copy = bool(reseed_on_copy)
        self.chunk_size = int(chunk_size)
        self._buffer = np.zeros(0, dtype=np.int64)
        self._buffer_start = 0  # index of self._buffer[0]

    def __call__(self, start: int, stop: int) -> NDArray[np.int64]:
        if self._buffer_start is None:  # a fresh copy: anchor at the first request
            self._buffer_start = start
        if start < self._buffer_start:
            raise ValueError(f"{type(self).__name__} only moves forward.")
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
            sampler = _SAMPLERS[self.distribution]
            fresh = [
                np.asarray(sampler(self.scale, size=self.chunk_size, rng=self.rng))
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


_SAMPLERS = {"laplace": discrete_laplace, "gaussian": discrete_gaussian}


class DiscreteLaplaceStream(DiscreteNoiseStream):
    """:class:`DiscreteNoiseStream` of discrete Laplace draws ``DLap(scale)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.noise import DiscreteLaplaceStream
    >>> s = DiscreteLaplaceStream(3.0, np.random.default_rng(0))
    >>> a = s(0, 10); b = s(5, 12)
    >>> bool((a[5:] == b[:5]).all())
    True
    """

    def __init__(
        self,
        scale: float,
        rng: np.random.Generator,
        reseed_on_copy: bool = True,
        chunk_size: int = 4096,
    ) -> None:
        super().__init__(scale, rng, reseed_on_copy, chunk_size, "laplace")
