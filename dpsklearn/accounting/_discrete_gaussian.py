"""Exact composition of discrete Gaussian releases through Gaussian DP.

Adaptive composition of Gaussian mechanisms is exactly ``mu``-GDP with
``mu^2 = sum_i (shift_i / sigma_i)^2`` (Dong, Roth and Su 2022, Corollary
3.3), and ``mu``-GDP is ``(epsilon, delta)``-DP exactly when ``delta >=
Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`` (their
Corollary 2.13). dpsklearn adds *discrete* Gaussian noise, whose privacy
curve is not below the continuous one (a single release at ``sigma`` is
about ``(1/sigma)(1 + 1/(24 sigma^2))``-GDP near its centre); this module
bounds the composition of discrete releases from above instead
(``docs/accounting_theory.rst``, "Discrete Gaussian releases through
Gaussian DP"):

* the releases of one *group* (``count`` releases of ``N_Z(0, sigma^2)``
  noise on integer statistics that move by at most ``shift`` between
  neighbours) are dominated by the product of ``count`` shift-``shift``
  pairs, whose privacy loss is a function of the sum ``S`` of ``count``
  independent discrete Gaussians;
* ``S`` is, up to an additive error below ``1e-20`` for ``sigma >= 4``, the
  continuous ``N(0, count sigma^2)`` within one lattice unit; so the whole
  composition is the continuous ``mu``-GDP curve read at ``epsilon - kappa``,
  ``kappa = sum over groups of shift / sigma^2`` (one lattice step of privacy
  loss per group), plus that error.

At GNMax's sizes ``kappa`` is about ``1e-5``: the discrete releases keep
the exact Gaussian composition to five digits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scipy.special import log_ndtr, ndtr, ndtri

from .._monotone import largest_certified, smallest_within

__all__ = [
    "MIN_DISCRETE_GAUSSIAN_SIGMA",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "pure_gdp_mu",
]

#: Below this noise scale (in lattice units) the aliasing terms of the
#: discrete Gaussian's characteristic function are not negligible; the bound
#: returns 1 (nothing certified) and callers use the Renyi route.
MIN_DISCRETE_GAUSSIAN_SIGMA = 4.0
# Relative margin on every returned delta, for floating point (the GDP
# formula is evaluated in log space to a few ulps).
_MARGIN = 1e-12
# The window of the lattice-sum argument, in standard deviations of S.
_WINDOW = 40.0


def gdp_delta(epsilon: float, mu: float) -> float:
    """``delta`` at ``epsilon`` of ``mu``-GDP (Dong, Roth and Su 2022, Cor. 2.13).

    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``, in log
    space (no cancellation for small delta). Not validated (it runs inside
    bisections).

    Examples
    --------
    >>> from dpsklearn.accounting import gdp_delta
    >>> round(gdp_delta(1.0, 0.268) * 1e5, 2)
    1.0
    """
    epsilon, mu = float(epsilon), float(mu)
    if mu <= 0:
        return 0.0 if epsilon >= 0 else -math.expm1(epsilon)
    first = float(log_ndtr(-epsilon / mu + mu / 2.0))
    second = epsilon + float(log_ndtr(-epsilon / mu - mu / 2.0))
    if not math.isfinite(first):
        return 0.0
    return math.exp(first) * -math.expm1(min(second - first, 0.0))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest ``epsilon`` at which ``mu``-GDP is ``(epsilon, delta)``-DP.

    The inverse of :func:`gdp_delta` in ``epsilon`` (which it decreases),
    taken from the safe side (rounded up); ``inf`` when ``delta <= 0`` and
    ``mu > 0``.

    Examples
    --------
    >>> from dpsklearn.accounting import gdp_epsilon
    >>> round(gdp_epsilon(0.268, 1e-5), 3)
    1.0
    """
    mu, delta = float(mu), float(delta)
    if mu <= 0:
        return 0.0
    if not delta > 0:
        return math.inf
    return smallest_within(lambda eps: gdp_delta(eps, mu) <= delta, 1.0, grow=True)


def gdp_mu(epsilon: float, delta: float, rtol: float = 1e-12) -> float:
    """The largest ``mu`` whose ``mu``-GDP is ``(epsilon, delta)``-DP.

    The budget of the Gaussian-DP filter (``docs/accountant.rst``, "Which
    events a shared budget accepts"): 0.268 at ``(1, 1e-5)``, i.e. a
    ``rho = mu^2 / 2`` of 0.0359 for Gaussian releases, against 0.0306 for
    the zCDP filter.

    Examples
    --------
    >>> from dpsklearn.accounting import gdp_mu
    >>> mu = gdp_mu(1.0, 1e-5)
    >>> round(mu, 4), round(mu**2 / 2, 4)
    (0.2681, 0.0359)
    """
    epsilon, delta = float(epsilon), float(delta)
    if not delta > 0:
        return 0.0
    # gdp_epsilon grows with mu; bisection on log mu from the safe side.
    return largest_certified(lambda mu: gdp_epsilon(mu, delta), epsilon, rtol)


def pure_gdp_mu(epsilon: float) -> float:
    """A ``mu`` for which every ``epsilon``-DP mechanism is ``mu``-GDP.

    ``mu = 2 Phi^-1(e^epsilon / (1 + e^epsilon))``: the Gaussian trade-off
    curve ``G_mu`` is convex and meets the ``epsilon``-DP curve
    ``f_{epsilon,0}`` at ``(0, 1)``, ``(1, 0)`` and at its kink ``alpha* =
    1 / (1 + e^epsilon)`` (``G_mu(alpha*) = alpha*`` for this ``mu``); a
    convex curve lies below its chords, and ``f_{epsilon,0}`` is the two
    chords, so ``G_mu <= f_{epsilon,0}`` (Dong, Roth and Su 2022, the
    trade-off-function view of Definitions 2.3 and 2.6). Exact for
    randomized response.

    Examples
    --------
    >>> from dpsklearn.accounting import pure_gdp_mu
    >>> round(pure_gdp_mu(0.1), 4)
    0.1253
    """
    epsilon = float(epsilon)
    if epsilon <= 0:
        return 0.0
    if math.isinf(epsilon):
        return math.inf
    # e^eps / (1 + e^eps) = 1 - 1/(1 + e^eps), computed without cancellation.
    return -2.0 * float(ndtri(1.0 / (1.0 + math.exp(min(epsilon, 700.0)))))


def _theta_tail(x):
    """``2 sum_{k >= 1} exp(-2 pi^2 x^2 k^2)``, bounded from above."""
    q = math.exp(-2.0 * math.pi**2 * x * x)
    return 2.0 * q / (1.0 - q) if q < 1.0 else math.inf


def _group_error(sigma, count):
    """Additive error of the one-unit sandwich of ``S`` (sum of ``count`` N_Z).

    ``P[S <= t]`` lies within ``[Phi((t - 1)/Sigma), Phi((t + 1)/Sigma)]``
    up to this error, ``Sigma = sqrt(count) sigma`` (the derivation is in
    ``docs/accounting_theory.rst``).
    """
    big = math.sqrt(count) * sigma
    window = math.ceil(_WINDOW * big) + 1
    root = math.sqrt(2.0 * math.pi)
    # |p_S(s) - f_Sigma(s)|, uniformly in s (Fourier inversion).
    pointwise = (
        count
        * (root / sigma)
        * (2.0 * float(ndtr(-math.pi * sigma)) + _theta_tail(sigma))
        + 2.0 * (root / big) * float(ndtr(-math.pi * big))
    ) / (2.0 * math.pi)
    tails = 2.0 * math.exp(-((window / big) ** 2) / 2.0) + 2.0 * float(
        ndtr(-(window - 1) / big)
    )
    return _theta_tail(big) + tails + (2 * window + 1) * pointwise


def _checked_groups(groups):
    out = []
    for sigma, shift, count in groups:
        sigma, shift, count = float(sigma), int(shift), int(count)
        if count <= 0 or shift == 0:
            continue
        out.append((sigma, abs(shift), count))
    return out


def discrete_gaussian_delta(
    epsilon: float, groups: Iterable[tuple[float, int, int]]
) -> float:
    """Upper bound on ``delta`` at ``epsilon`` of adaptive discrete Gaussian releases.

    Parameters
    ----------
    epsilon : float
        Target epsilon.
    groups : iterable of (sigma, shift, count)
        ``count`` releases of discrete Gaussian noise ``N_Z(0, sigma^2)``
        (``sigma`` in lattice units) on integer statistics that move by at
        most ``shift`` (an integer) between neighbours, in any adaptive
        order. A vector release whose coordinates move by one unit each
        counts once per moving coordinate (GNMax's count vector: two).

    Returns
    -------
    delta : float
        ``gdp_delta(epsilon - kappa, mu)`` plus the lattice-sum error, with
        ``mu^2 = sum count shift^2 / sigma^2`` and ``kappa = sum shift /
        sigma^2``; 1 when some ``sigma`` is below
        :data:`MIN_DISCRETE_GAUSSIAN_SIGMA` (not covered).

    Examples
    --------
    >>> from dpsklearn.accounting import discrete_gaussian_delta, gdp_delta
    >>> # GNMax: 1,000 count vectors at sigma 167, two moving counts each.
    >>> d = discrete_gaussian_delta(1.0, [(167.0, 1, 2000)])
    >>> bool(gdp_delta(1.0, (2000 / 167.0**2) ** 0.5) < d < 1e-5)
    True
    """
    groups = _checked_groups(groups)
    if not groups:
        return 0.0 if epsilon >= 0 else -math.expm1(epsilon)
    if min(sigma for sigma, _, _ in groups) < MIN_DISCRETE_GAUSSIAN_SIGMA:
        return 1.0
    mu = math.sqrt(math.fsum(c * (s / sg) ** 2 for sg, s, c in groups))
    kappa = math.fsum(s / (sg * sg) for sg, s, _ in groups)
    error = math.fsum(_group_error(sg, c) for sg, _, c in groups)
    delta = (gdp_delta(float(epsilon) - kappa, mu) + error) * (1.0 + _MARGIN)
    return min(1.0, delta)


def discrete_gaussian_epsilon(
    delta: float,
    groups: Iterable[tuple[float, int, int]],
    *,
    cap: float | None = None,
) -> float:
    """The smallest epsilon at which :func:`discrete_gaussian_delta` is ``<= delta``.

    Bisection from above (the returned epsilon is certified); ``inf`` when
    nothing is certified (``delta <= 0``, or a ``sigma`` below the minimum),
    and at most ``cap`` when given (a figure known to hold anyway).

    Examples
    --------
    >>> from dpsklearn.accounting import discrete_gaussian_epsilon
    >>> round(discrete_gaussian_epsilon(1e-5, [(167.0, 1, 2000)]), 3)
    0.999
    """
    groups = _checked_groups(groups)
    if not groups:
        return 0.0
    if not delta > 0 or discrete_gaussian_delta(1e6, groups) > delta:
        return math.inf if cap is None else float(cap)

    def ok(eps):
        return discrete_gaussian_delta(eps, groups) <= delta

    epsilon = smallest_within(ok, 1.0, grow=True)
    return epsilon if cap is None else min(epsilon, float(cap))
