"""Exact tails of the sparse vector test's noise: ``P(Z_query - Z_thresh >= n)``.

The stability test passes a query of integer distance ``d`` when ``d +
Z_query > w + Z_threshold``. Both noises are symmetric integer noises, so
the pass probability, the stability part's bad event (a query of distance 0
passing) and the planner's figures are all tails of the integer difference
``D = Z_query - Z_threshold``, which has the law of ``Z_query + Z_threshold``.

* Discrete Laplace noises of any two scales: a closed form
  (``docs/design.rst``, "The tail of the difference of two discrete Laplace
  noises"), evaluated in log space.
* Discrete Gaussian noises: summed numerically over the threshold noise
  with the query noise's survival function, rounded towards a larger tail
  (truncated normalisers, the truncated mass added back, a relative margin).
  The sum of two discrete Gaussians is not a discrete Gaussian, so no
  Gaussian tail formula is used.

Every tail here is an upper bound on the true probability up to ``1e-9``
relative (the closed form is exact; the margin covers rounding).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import smallest_integer

__all__ = [
    "difference_log_tail",
    "difference_tail",
    "noise_quantiles",
    "noise_survival",
    "smallest_tail_index",
]

# Relative safety margin on every computed tail: floating-point rounding in
# the sums is below 1e-12 relative; the margin keeps each bound on the side
# of more privacy loss.
_MARGIN = 1e-9


def _logaddexp(x, y):
    """Scalar ``log(e^x + e^y)`` (math, not numpy: it runs in inner loops)."""
    if x < y:
        x, y = y, x
    if y == -math.inf:
        return x
    return x + math.log1p(math.exp(y - x))


# -- discrete Laplace: the closed form ---------------------------------------------
def _log_geometric_block(log_x, log_y, k):
    """``log((x^k - y^k) / (x - y))`` for ``0 < y <= x < 1``, ``k >= 1``.

    Stable for ``x`` close to ``y`` (the limit ``k x^(k-1)`` at ``x = y``).
    """
    if log_x == log_y:
        return math.log(k) + (k - 1) * log_x
    ratio = log_y - log_x  # < 0
    return (
        (k - 1) * log_x
        + math.log(-math.expm1(k * ratio))
        - math.log(-math.expm1(ratio))
    )


def _laplace_log_tail_positive(n, query_scale, threshold_scale):
    """log P(D >= n) for an integer ``n >= 1``, D = DLap(s_q) + DLap(s_t).

    With ``alpha = e^(-1/s_q)``, ``beta = e^(-1/s_t)``, ``c = (1-beta)/(1+beta)``
    (``docs/design.rst``, "The tail of the difference of two discrete
    Laplace noises")::

        P(D >= n) = c/(1+alpha) [ sum_{j=1}^{n-1} beta^j alpha^(n-j)
                                  + alpha^n / (1 - alpha beta) ]
                  + c beta^n [ 1/(1-beta) - alpha / ((1+alpha)(1-alpha beta)) ]

    the first line summing the threshold draws below ``n``, the second those
    at or above it. Every term is positive.
    """
    log_a = -1.0 / query_scale
    log_b = -1.0 / threshold_scale
    alpha, beta = math.exp(log_a), math.exp(log_b)
    log_c = math.log(-math.expm1(log_b)) - math.log1p(beta)
    one_minus_ab = -math.expm1(log_a + log_b)
    log_head = n * log_a - math.log(one_minus_ab)
    if n >= 2:
        # sum_{j=1}^{n-1} beta^j alpha^(n-j) = alpha beta (a^(n-1) - b^(n-1)) / (a - b)
        log_block = (
            log_a
            + log_b
            + _log_geometric_block(max(log_a, log_b), min(log_a, log_b), n - 1)
        )
        log_head = _logaddexp(log_head, log_block)
    below = log_c - math.log1p(alpha) + log_head
    bracket = 1.0 / -math.expm1(log_b) - alpha / ((1.0 + alpha) * one_minus_ab)
    above = log_c + n * log_b + math.log(bracket)
    return _logaddexp(below, above)


# -- discrete Gaussian: a rigorous numerical sum --------------------------------------
# Support kept for a discrete Gaussian of scale sigma: |z| <= 14 sigma + 2. The
# mass outside is below exp(-98) and is added back as an explicit bound.
_GAUSSIAN_WIDTH = 14.0


@functools.lru_cache(maxsize=64)
def _gaussian_table(sigma):
    """``(radius, pmf, survival, outside, reversed)`` of a discrete Gaussian.

    ``pmf[i]`` is ``P(Z = i - radius)`` with the normaliser summed over the
    kept support (a lower bound on the true normaliser, so every kept
    probability is over-estimated); ``survival[i] = P(Z >= i - radius)`` as
    a reverse cumulative sum (small terms first); ``outside`` bounds the
    true mass of ``|Z| > radius``; ``reversed`` is ``survival[::-1]`` kept
    contiguous for the dot products of :func:`_gaussian_tail`.
    """
    radius = int(math.ceil(_GAUSSIAN_WIDTH * sigma)) + 2
    z = np.arange(-radius, radius + 1, dtype=np.float64)
    weights = np.exp(-(z * z) / (2.0 * sigma * sigma))
    pmf = weights / weights.sum()
    survival = np.cumsum(pmf[::-1])[::-1]
    # sum_{z > R} e^{-z^2/(2 s^2)} <= e^{-R^2/(2 s^2)} / (1 - e^{-R/s^2}), twice
    # for both sides, over the kept normaliser (>= 1: the z = 0 term is 1).
    r = float(radius)
    outside = (
        2.0
        * math.exp(-(r * r) / (2.0 * sigma * sigma))
        / -math.expm1(-r / (sigma * sigma))
        / weights.sum()
    )
    return radius, pmf, survival, outside, np.ascontiguousarray(survival[::-1])


def _gaussian_tail(n, query_sigma, threshold_sigma):
    """Upper bound on P(D >= n), D = N_Z(0, s_q^2) + N_Z(0, s_t^2), any integer n.

    ``sum_t P(Z_t = t) P(Z_q >= n - t)`` over the kept threshold values, in
    three slices of ``j = t + r_t`` (no per-call arrays beyond the overlap):
    where ``n - t <= -r_q`` the query tail is 1 (a survival sum of the
    threshold noise, small terms first); where ``n - t > r_q`` it is at most
    the query noise's outside mass; in between it is the kept survival plus
    that outside mass. The threshold noise's own outside mass is added last.
    """
    r_q, _, _, outside_q, reversed_q = _gaussian_table(query_sigma)
    r_t, pmf_t, survival_t, outside_t, _ = _gaussian_table(threshold_sigma)
    size_t = pmf_t.size
    first_one = n + r_q + r_t  # first j whose query tail is 1
    first_kept = n - r_q + r_t  # first j whose query index n - t + r_q < 2 r_q + 1
    total = outside_t
    if first_one < size_t:
        total += float(survival_t[max(first_one, 0)])
    if first_kept > 0:  # threshold values whose query tail is only outside mass
        total += outside_q
    lo, hi = max(first_kept, 0), min(first_one, size_t)
    if lo < hi:
        # query index first_one - j runs from first_one - lo down to
        # first_one - hi + 1: in the reversed survival, size - 1 - index.
        shift = reversed_q.size - 1 - first_one
        tail_q = reversed_q[shift + lo : shift + hi]
        total += float(np.dot(pmf_t[lo:hi], np.minimum(tail_q + outside_q, 1.0)))
    return min(1.0, total)


# -- the public entry points -------------------------------------------------------
def difference_tail(n, query_scale, threshold_scale, noise="laplace"):
    """``P(Z_query - Z_threshold >= n)`` for an integer ``n``, from the safe side.

    Parameters
    ----------
    n : int
    query_scale, threshold_scale : float
        Scales of the two noises: the discrete Laplace ``t`` (``P(z) ~
        exp(-|z|/t)``) or the discrete Gaussian ``sigma``.
    noise : {"laplace", "gaussian"}

    Returns
    -------
    p : float
        The exact tail for Laplace noises, an upper bound within ``1e-9``
        relative for Gaussian noises.

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_tails import difference_tail
    >>> round(difference_tail(1, 2.0, 1.0), 6)  # P(D >= 1) = (1 - P(D = 0)) / 2
    0.410902
    """
    n = int(n)
    if noise == "gaussian":
        return min(1.0, _gaussian_tail(n, query_scale, threshold_scale) * (1 + _MARGIN))
    if n >= 1:
        log_p = _laplace_log_tail_positive(n, query_scale, threshold_scale)
        return min(1.0, math.exp(log_p) * (1 + _MARGIN))
    # D is symmetric: P(D >= n) = 1 - P(D >= 1 - n).
    log_p = _laplace_log_tail_positive(1 - n, query_scale, threshold_scale)
    return -math.expm1(log_p)


def difference_log_tail(n, query_scale, threshold_scale, noise="laplace"):
    """``log P(Z_query - Z_threshold >= n)`` for an integer ``n >= 1``.

    Kept in log space for the Laplace closed form (tails far below the
    smallest float still invert correctly).

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_tails import difference_log_tail
    >>> bool(difference_log_tail(5000, 100.0, 100.0) < -40)
    True
    """
    n = int(n)
    if noise == "laplace" and n >= 1:
        return _laplace_log_tail_positive(n, query_scale, threshold_scale) + math.log1p(
            _MARGIN
        )
    p = difference_tail(n, query_scale, threshold_scale, noise)
    return math.log(p) if p > 0 else -math.inf


def smallest_tail_index(
    log_target, query_scale, threshold_scale, noise="laplace", guess=None
):
    """Smallest integer ``n >= 1`` with ``log P(D >= n) <= log_target``.

    The tail decreases in ``n``: a doubling search (from ``guess`` when one
    is given, in steps of about 1/64 of it, so a close guess such as the
    normal approximation costs a few evaluations), then bisection on the
    integers. The result does not depend on ``guess``. The sparse vector
    threshold is ``w = n - 1`` (a query of distance 0 passes when ``D > w``,
    i.e. ``D >= n``).

    Examples
    --------
    >>> import math
    >>> from dpsklearn.mechanisms._sparse_vector_tails import (
    ...     difference_log_tail, smallest_tail_index)
    >>> n = smallest_tail_index(math.log(1e-8), 50.0, 50.0)
    >>> difference_log_tail(n, 50.0, 50.0) <= math.log(1e-8)
    True
    >>> difference_log_tail(n - 1, 50.0, 50.0) > math.log(1e-8)
    True
    """

    def ok(n):
        return difference_log_tail(n, query_scale, threshold_scale, noise) <= log_target

    return smallest_integer(ok, low=1, guess=guess)


def pass_probabilities(distances, threshold, query_scale, threshold_scale, noise):
    """``P(d + Z_query > w + Z_threshold)`` for each integer distance ``d``.

    ``= P(D >= floor(w - d) + 1)``; vectorised over the distinct values.
    Used for planning (public numbers only), not for a guarantee.
    """
    d = np.asarray(distances, dtype=np.int64)
    n = np.floor(float(threshold) - d).astype(np.int64) + 1
    unique, inverse = np.unique(n, return_inverse=True)
    values = np.array(
        [_exact_tail(int(u), query_scale, threshold_scale, noise) for u in unique],
        dtype=np.float64,
    )
    out = values[inverse].reshape(d.shape)
    return float(out) if out.ndim == 0 else out


def noise_survival(n: ArrayLike, scale: float, noise: str) -> np.ndarray:
    """``P(Z >= n)`` for integers ``n``: ``Z ~ DLap(scale)`` or ``N_Z(0, scale^2)``.

    For planning figures (no safety margin).

    Examples
    --------
    >>> from dpsklearn.mechanisms import noise_survival
    >>> float(noise_survival(0, 10.0, "laplace")) > 0.5
    True
    """
    n = np.asarray(n, dtype=np.float64)
    if noise == "gaussian":
        radius, _, survival, _, _ = _gaussian_table(float(scale))
        index = np.clip(n + radius, 0, survival.size)
        padded = np.append(survival, 0.0)
        return padded[index.astype(np.int64)]
    log_b = -1.0 / scale
    log_1pb = math.log1p(math.exp(log_b))
    upper = np.exp(np.minimum(n, 1e300) * log_b - log_1pb)  # n >= 1
    lower = -np.expm1((1.0 - n) * log_b - log_1pb)  # n <= 0
    return np.where(n >= 1, np.where(n > 1e15, 0.0, upper), lower)


def noise_quantiles(scale: float, noise: str, n_nodes: int) -> np.ndarray:
    """Mid-point quantiles of the noise: a quadrature of ``n_nodes`` equal weights.

    Examples
    --------
    >>> from dpsklearn.mechanisms import noise_quantiles
    >>> noise_quantiles(5.0, "gaussian", 4).tolist()
    [-6.0, -2.0, 2.0, 6.0]
    """
    u = (np.arange(n_nodes) + 0.5) / n_nodes
    if noise == "gaussian":
        radius, pmf, _, _, _ = _gaussian_table(float(scale))
        cdf = np.cumsum(pmf)
        return np.searchsorted(cdf, u).astype(np.float64) - radius
    log_b = -1.0 / scale
    b = math.exp(log_b)
    with np.errstate(divide="ignore"):
        negative = np.ceil(np.log(u * (1.0 + b)) / -log_b)
        positive = np.maximum(0.0, np.ceil(np.log((1.0 - u) * (1.0 + b)) / log_b - 1.0))
    return np.where(u <= b / (1.0 + b), negative, positive)


def _exact_tail(n, query_scale, threshold_scale, noise):
    """The tail without the safety margin (for planning figures)."""
    if noise == "gaussian":
        return _gaussian_tail(n, query_scale, threshold_scale)
    if n >= 1:
        return math.exp(_laplace_log_tail_positive(n, query_scale, threshold_scale))
    return -math.expm1(_laplace_log_tail_positive(1 - n, query_scale, threshold_scale))
