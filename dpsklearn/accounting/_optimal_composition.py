"""Optimal composition of two kinds of pure-DP mechanisms.

The sparse vector test composes ``k_a`` AboveThreshold instances of
``eps_a`` each with ``k_b`` fallback answers of ``eps_b`` each, in a fixed
interleaved order. Composing the two groups separately and adding the
epsilons (what basic composition of the two parts does) wastes budget; the
optimal composition of the whole heterogeneous sequence is exact and
cheap for two kinds (``docs/design.rst``, "Joint composition of the test and
its fallback").

Every ``eps``-DP mechanism is a post-processing of randomized response with
the same epsilon, also under adaptive composition (Kairouz, Oh and
Viswanath 2015, Theorem 3.3; Murtagh and Vadhan 2016, Theorem 1.5 for
different epsilons), so the tight ``delta`` at ``epsilon`` of the whole
sequence is the hockey-stick divergence of the product of randomized
responses. Its privacy loss is ``L = eps_a (k_a - 2 i) + eps_b (k_b - 2 j)``
where ``i ~ Binomial(k_a, q_a)`` and ``j ~ Binomial(k_b, q_b)`` count the
flipped outcomes, ``q = 1 / (1 + e^eps)``, and::

    delta(epsilon) = E[(1 - e^(epsilon - L))_+].

For each ``i`` the sum over ``j`` is a difference of two binomial CDFs:
with ``j*(i)`` the largest ``j`` at which ``L > epsilon``,

    sum_{j <= j*} P(j) (1 - e^(epsilon - L)) = F(j*) - e^(epsilon - L_a(i)) G(j*)

where ``F`` is the CDF of ``Binomial(k_b, q_b)`` and ``G`` that of
``Binomial(k_b, 1 - q_b)`` (``P(j) e^(-eps_b (k_b - 2j))`` is the pmf of
the latter). So ``delta`` costs ``O(k_a + k_b)``, in log space.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import gammaln

from .._monotone import largest_within, smallest_within
from ._composition import _log_rounding_margin, kov_log_delta

__all__ = [
    "largest_two_kind_scale",
    "two_kind_epsilon",
    "two_kind_log_delta",
]

# Absolute safety margin, relative to the mass summed: rounding in the
# differences F - e^(..) G is below 1e-15 of F.
_ROUNDING = 1e-13


def _log_binomial_pmf(k, log_q, log_p):
    """log pmf of Binomial(k, q) at 0..k, from ``log q`` and ``log(1 - q)``."""
    j = np.arange(k + 1, dtype=np.float64)
    log_choose = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
    return log_choose + j * log_q + (k - j) * log_p


def two_kind_log_delta(
    eps_a: float, k_a: int, eps_b: float, k_b: int, epsilon: float
) -> float:
    """log optimal ``delta`` at ``epsilon`` of ``k_a`` eps_a-DP and ``k_b`` eps_b-DP.

    Parameters
    ----------
    eps_a, eps_b : float
        Epsilons of the two kinds (>= 0).
    k_a, k_b : int
        How many of each (>= 0).
    epsilon : float
        Target epsilon (>= 0).

    Returns
    -------
    log_delta : float
        ``-inf`` when delta is 0. Rounded up (towards more privacy loss): an
        absolute ``1e-13`` of the mass summed for the differences of CDFs, and
        a relative margin for the logs of the pmfs (``_log_rounding_margin``,
        about ``1e-12`` at ``k = 100``); checked against exact rational
        arithmetic in the tests.

    Examples
    --------
    >>> import math
    >>> from dpsklearn.accounting import kov_delta, two_kind_log_delta
    >>> d = math.exp(two_kind_log_delta(0.1, 50, 0.1, 50, 1.0))
    >>> math.isclose(d, kov_delta(0.1, 100, 1.0), rel_tol=1e-9)
    True
    """
    eps_a, eps_b, epsilon = float(eps_a), float(eps_b), float(epsilon)
    k_a, k_b = int(k_a), int(k_b)
    if k_b == 0 or eps_b == 0.0:
        return kov_log_delta(eps_a, k_a, epsilon) if k_a else -math.inf
    if k_a == 0 or eps_a == 0.0:
        return kov_log_delta(eps_b, k_b, epsilon)
    if k_a * eps_a + k_b * eps_b <= epsilon:
        return -math.inf
    log_q_a = -float(np.logaddexp(0.0, eps_a))
    log_p_a = -float(np.logaddexp(0.0, -eps_a))
    log_q_b = -float(np.logaddexp(0.0, eps_b))
    log_p_b = -float(np.logaddexp(0.0, -eps_b))
    i = np.arange(k_a + 1, dtype=np.float64)
    log_pmf_a = _log_binomial_pmf(k_a, log_q_a, log_p_a)
    loss_a = eps_a * (k_a - 2.0 * i)
    # Largest j with loss_a + eps_b (k_b - 2 j) > epsilon, clipped to [-1, k_b].
    bound = (k_b + (loss_a - epsilon) / eps_b) / 2.0
    j_star = np.clip(np.ceil(bound) - 1.0, -1.0, k_b).astype(np.int64)
    keep = j_star >= 0
    if not keep.any():
        return -math.inf
    log_f = np.logaddexp.accumulate(_log_binomial_pmf(k_b, log_q_b, log_p_b))
    log_g = np.logaddexp.accumulate(_log_binomial_pmf(k_b, log_p_b, log_q_b))
    js = j_star[keep]
    log_ratio = epsilon - loss_a[keep] + log_g[js] - log_f[js]
    # Mathematically < 0 (every summed term is positive); clamp rounding.
    log_ratio = np.minimum(log_ratio, 0.0)
    with np.errstate(divide="ignore"):
        log_factor = np.log(-np.expm1(log_ratio))
    log_mass = log_pmf_a[keep] + log_f[js]
    terms = log_mass + log_factor
    log_delta = _log_sum(terms)
    log_error = math.log(_ROUNDING) + _log_sum(log_mass)
    # The logs of the binomial pmfs and their sums err by the margin of
    # _log_rounding_margin (relative, the larger of the two kinds' figures,
    # doubled for the two pmfs that multiply): rounded up by it.
    margin = 2.0 * max(
        _log_rounding_margin(k_a, eps_a), _log_rounding_margin(k_b, eps_b)
    )
    log_delta = float(np.logaddexp(log_delta, log_error)) + math.log1p(margin)
    return min(0.0, log_delta)


def _log_sum(log_terms):
    top = float(np.max(log_terms))
    if not math.isfinite(top):
        return -math.inf
    return top + math.log(float(np.sum(np.exp(log_terms - top))))


@functools.lru_cache(maxsize=4096)
def two_kind_epsilon(eps_a, k_a, eps_b, k_b, delta):
    """Smallest epsilon with :func:`two_kind_log_delta` ``<= log(delta)``.

    Never above basic composition ``k_a eps_a + k_b eps_b``; bisection,
    returned from above (rounded up).

    Examples
    --------
    >>> from dpsklearn.accounting import two_kind_epsilon
    >>> e = two_kind_epsilon(0.01, 100, 0.02, 100, 1e-5)
    >>> bool(e < 100 * 0.01 + 100 * 0.02)
    True
    """
    hi = k_a * eps_a + k_b * eps_b
    if delta <= 0 or hi == 0.0:
        return hi
    log_target = math.log(delta)

    def ok(epsilon):
        return two_kind_log_delta(eps_a, k_a, eps_b, k_b, epsilon) <= log_target

    return smallest_within(ok, hi)


@functools.lru_cache(maxsize=1024)
def largest_two_kind_scale(epsilon, delta, k_a, k_b, ratio):
    """Largest ``eps_a`` at which ``k_a`` x eps_a, ``k_b`` x ratio eps_a fit a budget.

    The optimal composition of the two kinds (:func:`two_kind_log_delta`),
    inverted by bisection on ``eps_a`` from the safe side.

    Examples
    --------
    >>> from dpsklearn.accounting import kov_max_epsilon0, largest_two_kind_scale
    >>> e0 = largest_two_kind_scale(1.0, 1e-5, 100, 100, 1.0)
    >>> import math; math.isclose(e0, kov_max_epsilon0(1.0, 1e-5, 200), rel_tol=1e-9)
    True
    """
    lo = epsilon / (k_a + k_b * ratio)  # basic composition: delta = 0
    log_target = math.log(delta)

    def ok(eps_a):
        return two_kind_log_delta(eps_a, k_a, ratio * eps_a, k_b, epsilon) <= log_target

    return largest_within(ok, lo)
