"""Closed forms of composition: advanced, optimal and zero-concentrated DP.

The formulas every calibration and accountant in the package relies on,
each derived in ``docs/design.rst``, "Composition":

* :func:`drv_epsilon` -- advanced composition (Dwork, Rothblum and Vadhan
  2010, Theorem III.3).
* :func:`kov_delta`, :func:`kov_epsilon`, :func:`kov_max_epsilon0` -- the
  optimal composition of ``k`` pure ``eps0``-DP mechanisms (Kairouz, Oh and
  Viswanath 2015, Theorem 3.3; the closed form for every epsilon is Murtagh
  and Vadhan 2016, Theorem 1.5), evaluated in log space in ``O(k)``.
* :func:`zcdp_epsilon` and :func:`zcdp_rho` -- zero-concentrated DP to
  ``(epsilon, delta)`` and back (Bun and Steinke 2016, Proposition 1.3).
* :func:`cks_epsilon` and :func:`cks_rho` -- the same curve ``alpha * rho``
  converted at its best order by Canonne, Kamath and Steinke (2020),
  Proposition 12: what a zCDP budget (and the zCDP filter) certifies.
* :func:`rdp_epsilon_of_rho` -- the tighter conversion of the RDP curve
  ``alpha * rho`` by ``dp_accounting`` (Canonne, Kamath and Steinke 2020),
  and :func:`largest_certified`, which inverts any such conversion from the
  safe side.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import gammaln

from .._monotone import largest_certified, largest_within, smallest_within
from .._validation import (
    COUNT,
    DELTA,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    NON_NEGATIVE,
    validate_params,
)
from ._dp_accounting import dp_accounting

__all__ = [
    "cks_epsilon",
    "cks_rho",
    "drv_epsilon",
    "drv_epsilon_unchecked",
    "kov_delta",
    "kov_epsilon",
    "kov_epsilon_unchecked",
    "kov_log_delta",
    "kov_max_epsilon0",
    "kov_max_epsilon0_unchecked",
    "rdp_epsilon_of_rho",
    "rho_to_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
]


# -- zero-concentrated DP -----------------------------------------------------
def zcdp_epsilon(rho: float, delta: float) -> float:
    """Epsilon of a ``rho``-zCDP mechanism: ``rho + 2 sqrt(rho ln(1/delta))``.

    Bun and Steinke (2016), Proposition 1.3. Infinite at ``delta = 0`` unless
    ``rho = 0``. (Not validated: it runs inside bisections; callers pass
    numbers they computed.)

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.
    delta : float
        Target delta.

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from dpsklearn.accounting import zcdp_epsilon
    >>> round(zcdp_epsilon(0.5, 1e-6), 4)
    5.7565
    """
    rho = float(rho)
    if rho <= 0:
        return 0.0
    if not delta > 0:
        return math.inf
    if delta >= 1:
        return rho
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ``rho`` with ``zcdp_epsilon(rho, delta) <= epsilon``.

    ``rho = (sqrt(L + epsilon) - sqrt(L))^2`` with ``L = ln(1/delta)``,
    computed as ``(epsilon / (sqrt(L + epsilon) + sqrt(L)))^2``, the same
    number without the cancellation.

    Examples
    --------
    >>> from dpsklearn.accounting import zcdp_epsilon, zcdp_rho
    >>> rho = zcdp_rho(1.0, 1e-6)
    >>> round(zcdp_epsilon(rho, 1e-6), 12)
    1.0
    """
    epsilon = float(epsilon)
    if not delta > 0 or epsilon <= 0:
        return 0.0
    log_inv = math.log(1.0 / delta)
    return (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2


# Relative margin on every CKS figure: the bound is evaluated in floating
# point (relative error a few ulps); 1e-12 covers it with room to spare.
_CKS_MARGIN = 1e-12


def _cks_at_orders(rho, log_inv_delta, alphas):
    """CKS 2020, Proposition 12, for the curve ``alpha * rho`` at each order."""
    am1 = alphas - 1.0
    return (
        alphas * rho
        + (log_inv_delta + am1 * np.log1p(-1.0 / alphas) - np.log(alphas)) / am1
    )


def cks_epsilon(rho: float, delta: float) -> float:
    """Epsilon at ``delta`` of the Renyi curve ``alpha * rho``, at its best order.

    A mechanism that is ``(alpha, tau)``-RDP is ``(epsilon, delta)``-DP with
    ``epsilon = tau + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln alpha)
    / (alpha - 1)`` (Canonne, Kamath and Steinke 2020, Proposition 12). A
    ``rho``-zCDP mechanism has ``tau = alpha * rho`` at *every* order, so any
    order gives a valid figure: the order is searched (a scan of 241 orders
    from ``1 + e^-8`` to ``1 + e^16``, then golden-section refinement) and
    the smallest value found is returned, raised by a ``1e-12`` relative
    margin for floating point. Tighter than :func:`zcdp_epsilon` (the proof
    of Bun and Steinke's Proposition 1.3 uses a cruder tail bound): at
    ``(1, 1e-5)`` it certifies ``rho = 0.0306`` where :func:`zcdp_rho` gives
    ``0.0208``. Not validated (it runs inside bisections).

    It holds for the zCDP filter too (``docs/design.rst``, "Shared
    accountants and privacy filters"): the Feldman-Zrnic Renyi filter keeps
    the curve ``alpha * rho_B`` at every order at once, and Proposition 12
    rests on a pointwise bound of the hockey-stick integrand by
    ``e^((alpha - 1)(loss - epsilon))``.

    Parameters
    ----------
    rho : float
        zCDP parameter, ``>= 0``.
    delta : float
        Target delta.

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from dpsklearn.accounting import cks_epsilon, zcdp_epsilon
    >>> bool(cks_epsilon(0.0305, 1e-5) <= 1.0 < zcdp_epsilon(0.0305, 1e-5))
    True
    """
    rho = float(rho)
    if rho <= 0:
        return 0.0
    if not delta > 0:
        return math.inf
    if delta >= 1:
        return 0.0
    log_inv = math.log(1.0 / delta)
    grid = np.linspace(-8.0, 16.0, 241)
    values = _cks_at_orders(rho, log_inv, 1.0 + np.exp(grid))
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    best = float(values[i])
    golden = (math.sqrt(5.0) - 1.0) / 2.0

    def at(s):
        return float(_cks_at_orders(rho, log_inv, np.array([1.0 + math.exp(s)]))[0])

    c, d = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fc, fd = at(c), at(d)
    for _ in range(60):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - golden * (hi - lo)
            fc = at(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + golden * (hi - lo)
            fd = at(d)
    best = min(best, fc, fd)
    return max(best, 0.0) * (1.0 + _CKS_MARGIN)


@functools.lru_cache(maxsize=1024)
def cks_rho(epsilon: float, delta: float, rtol: float = 1e-9) -> float:
    """The largest ``rho`` with :func:`cks_epsilon` ``(rho, delta) <= epsilon``.

    Bisection on ``log rho`` to relative precision ``rtol``, from the safe
    side. What a zCDP budget ``(epsilon, delta)`` holds in ``rho`` (0.03056 at
    ``(1, 1e-5)``, 0.1083 at ``(2, 1e-5)``).

    Examples
    --------
    >>> from dpsklearn.accounting import cks_rho
    >>> round(cks_rho(1.0, 1e-5), 4)
    0.0306
    """
    epsilon, delta = float(epsilon), float(delta)
    if not delta > 0 or epsilon <= 0:
        return 0.0
    return largest_certified(lambda rho: cks_epsilon(rho, delta), epsilon, rtol)


def rdp_epsilon_of_rho(rho: float, delta: float) -> float:
    """Epsilon at ``delta`` of the RDP curve ``alpha * rho``, by ``dp_accounting``.

    A ``rho``-zCDP mechanism has Renyi divergence at most ``alpha * rho`` at
    every order ``alpha`` (Bun and Steinke 2016, Definition 1.1); the RDP
    accountant converts that curve with the bound of Canonne, Kamath and
    Steinke (2020), tighter than :func:`zcdp_epsilon`: at ``(1, 1e-5)`` it
    certifies ``rho = 0.0306`` where :func:`zcdp_rho` gives ``0.0208``.

    Examples
    --------
    >>> from dpsklearn.accounting import rdp_epsilon_of_rho, zcdp_epsilon
    >>> bool(rdp_epsilon_of_rho(0.02, 1e-5) < zcdp_epsilon(0.02, 1e-5))
    True
    """
    dpa = dp_accounting()
    # Explicit relation: replace-one sensitivities are what we feed it.
    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    accountant.compose(dpa.ZCDpEvent(rho=rho))
    return float(accountant.get_epsilon(delta))


def rho_to_epsilon(
    rho: float, delta: float, conversion: str = "zcdp"
) -> tuple[float, float]:
    """``(epsilon, delta)`` of a total ``rho`` under a conversion (0 for none).

    ``conversion`` is ``"zcdp"`` (:func:`zcdp_epsilon`) or ``"rdp"``
    (:func:`rdp_epsilon_of_rho`).

    Examples
    --------
    >>> from dpsklearn.accounting import rho_to_epsilon
    >>> eps, delta = rho_to_epsilon(0.02, 1e-5, "rdp")
    >>> bool(eps < 1.0), delta
    (True, 1e-05)
    """
    if rho <= 0:
        return 0.0, 0.0
    if conversion == "zcdp":
        return zcdp_epsilon(rho, delta), delta
    return rdp_epsilon_of_rho(rho, delta), delta


@functools.lru_cache(maxsize=256)
def largest_rdp_rho(epsilon: float, delta: float, rtol: float = 1e-9) -> float:
    """The largest ``rho`` whose RDP curve converts to ``<= epsilon`` at ``delta``.

    By ``dp_accounting``'s RDP accountant (its own orders); memoised.

    Examples
    --------
    >>> from dpsklearn.accounting import largest_rdp_rho
    >>> round(largest_rdp_rho(1.0, 1e-5), 4)
    0.0306
    """
    return largest_certified(lambda rho: rdp_epsilon_of_rho(rho, delta), epsilon, rtol)


# -- advanced composition -----------------------------------------------------
@validate_params(
    {
        "eps0": [NON_NEGATIVE],
        "k": [COUNT],
        "delta_prime": [DELTA_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def drv_epsilon(eps0: float, k: int, delta_prime: float) -> float:
    """Advanced composition (Dwork, Rothblum and Vadhan 2010, Theorem III.3).

    k mechanisms, each ``eps0``-DP, compose to ``(epsilon, delta')``-DP with
    ``epsilon = sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1)``
    (``docs/design.rst``, "Composition"). This is the formula itself, not
    ``min`` with basic composition.

    Parameters
    ----------
    eps0 : float
        Per-mechanism epsilon (>= 0).
    k : int
        Number of mechanisms (>= 1).
    delta_prime : float
        The extra delta of the composition, in (0, 1).

    Returns
    -------
    epsilon : float
        ``inf`` when ``e^eps0`` overflows.

    Examples
    --------
    >>> from dpsklearn.accounting import drv_epsilon
    >>> round(drv_epsilon(0.01, 100, 1e-5), 4)
    0.4899
    """
    return drv_epsilon_unchecked(float(eps0), int(k), float(delta_prime))


def drv_epsilon_unchecked(eps0: float, k: int, delta_prime: float) -> float:
    """:func:`drv_epsilon` without validating its arguments (for hot loops).

    Callers pass numbers they computed: ``eps0 >= 0``, ``k >= 1`` and
    ``0 < delta_prime < 1``; nothing is checked.

    Examples
    --------
    >>> from dpsklearn.accounting import drv_epsilon_unchecked
    >>> round(drv_epsilon_unchecked(0.01, 100, 1e-5), 4)
    0.4899
    """
    try:
        growth = math.expm1(eps0)
    except OverflowError:
        return math.inf
    return math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * eps0 + k * eps0 * growth


# -- optimal composition of k pure mechanisms ----------------------------------
def _log_rounding_margin(k, eps0):
    """A bound on the relative floating-point error of a binomial sum in log space.

    Every term's log is a sum of ``gammaln`` values of size up to ``ln k!``
    and ``k`` multiples of ``ln(1 + e^-eps0)``-sized logs, each computed to a
    few ulps (``u = 2^-53``), and the sum of up to ``k + 1`` positive terms
    adds ``k u`` relative: ``8 u (3 ln k! + k (eps0 + 1)) + 2 (k + 1) u``, plus
    ``1e-12``. Added to a delta it rounds it *up*.
    """
    u = 2.0**-53
    magnitude = 3.0 * float(gammaln(k + 1.0)) + k * (abs(eps0) + 1.0)
    return 8.0 * u * magnitude + 2.0 * (k + 1.0) * u + 1e-12


def kov_log_delta(eps0: float, k: int, epsilon: float) -> float:
    """log of the optimal-composition delta (``-inf`` when it is 0), unchecked.

    The fast form behind :func:`kov_delta`: it skips validation (callers
    pass ``eps0 >= 0``, an integer ``k >= 1``, ``epsilon >= 0``) and runs in
    bisections. Rounded up: the computed sum carries the relative margin of
    :func:`_log_rounding_margin`.

    Examples
    --------
    >>> import math
    >>> from dpsklearn.accounting import kov_delta, kov_log_delta
    >>> math.isclose(math.exp(kov_log_delta(0.03, 100, 1.0)), kov_delta(0.03, 100, 1.0))
    True

    The k-fold composition of eps0-DP mechanisms is dominated by k-fold
    randomized response (Kairouz, Oh and Viswanath 2015, Theorem 3.3), whose
    privacy loss is ``L = (k - 2l) eps0`` where ``l ~ Binomial(k, q)`` counts
    flipped outcomes, ``q = 1 / (1 + e^eps0)``. The tight delta is the
    hockey-stick divergence ``E[(1 - e^(epsilon - L))_+]`` (Murtagh and Vadhan
    2016, Theorem 1.5), summed here in log space over the l with L > epsilon:
    O(k) work, no overflow for large k or eps0.
    """
    if eps0 <= 0 or k * eps0 <= epsilon:
        return -math.inf
    # l < (k eps0 - epsilon) / (2 eps0)  <=>  (k - 2l) eps0 > epsilon.
    l_max = math.ceil((k * eps0 - epsilon) / (2.0 * eps0)) - 1
    l_max = min(l_max, k)
    if l_max < 0:
        return -math.inf
    ls = np.arange(l_max + 1, dtype=float)
    log_q = -np.logaddexp(0.0, eps0)  # log(1 / (1 + e^eps0))
    log_p = -np.logaddexp(0.0, -eps0)  # log(e^eps0 / (1 + e^eps0))
    log_binom = gammaln(k + 1.0) - gammaln(ls + 1.0) - gammaln(k - ls + 1.0)
    log_pmf = log_binom + ls * log_q + (k - ls) * log_p
    gap = epsilon - (k - 2.0 * ls) * eps0  # < 0 on the summed range
    with np.errstate(divide="ignore"):
        log_factor = np.log(-np.expm1(np.minimum(gap, 0.0)))
    terms = log_pmf + log_factor
    top = np.max(terms)
    if not np.isfinite(top):
        return -math.inf
    log_delta = float(top + np.log(np.sum(np.exp(terms - top))))
    # Rounded up by the stated margin; delta <= 1.
    return min(0.0, log_delta + math.log1p(_log_rounding_margin(k, eps0)))


@validate_params(
    {
        "eps0": [NON_NEGATIVE],
        "k": [COUNT],
        "epsilon": [NON_NEGATIVE],
    },
    prefer_skip_nested_validation=True,
)
def kov_delta(eps0: float, k: int, epsilon: float) -> float:
    """Optimal-composition delta of k eps0-DP mechanisms at a target epsilon.

    The smallest delta such that every k-fold (adaptive) composition of
    ``eps0``-DP mechanisms is ``(epsilon, delta)``-DP (Kairouz, Oh and
    Viswanath 2015, Theorem 3.3; for every epsilon, Murtagh and Vadhan 2016,
    Theorem 1.5)::

        delta = sum_{l : (k-2l) eps0 > epsilon} C(k, l)
                (e^((k-l) eps0) - e^(epsilon + l eps0)) / (1 + e^eps0)^k

    Parameters
    ----------
    eps0 : float
        Per-mechanism epsilon (>= 0).
    k : int
        Number of mechanisms (>= 1).
    epsilon : float
        Target epsilon (>= 0).

    Returns
    -------
    delta : float

    Examples
    --------
    >>> import math
    >>> from dpsklearn.accounting import kov_delta
    >>> # k = 1: delta = (e^eps0 - e^epsilon) / (1 + e^eps0)
    >>> d = kov_delta(1.0, 1, 0.5)
    >>> math.isclose(d, (math.e - math.exp(0.5)) / (1 + math.e))
    True
    """
    return math.exp(kov_log_delta(float(eps0), int(k), float(epsilon)))


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
        "k": [COUNT],
    },
    prefer_skip_nested_validation=True,
)
def kov_max_epsilon0(epsilon: float, delta: float, k: int) -> float:
    """Largest eps0 whose k-fold optimal composition is (epsilon, delta)-DP.

    Inverts :func:`kov_delta` (which increases with eps0) by bisection in log
    space, O(k) per evaluation. The result is conservative: the returned eps0
    satisfies ``kov_delta(eps0, k, epsilon) <= delta`` as computed.

    Parameters
    ----------
    epsilon : float
        Target epsilon (> 0).
    delta : float
        Target delta, in [0, 1). With ``delta = 0`` the answer is
        ``epsilon / k`` (basic composition is then optimal).
    k : int
        Number of mechanisms (>= 1).

    Returns
    -------
    eps0 : float
        At least ``epsilon / k`` (basic composition).

    Examples
    --------
    >>> import math
    >>> from dpsklearn.accounting import kov_max_epsilon0
    >>> # k = 1 has the closed form log((e^epsilon + delta) / (1 - delta))
    >>> e0 = kov_max_epsilon0(1.0, 1e-3, 1)
    >>> math.isclose(e0, math.log((math.e + 1e-3) / (1 - 1e-3)), rel_tol=1e-9)
    True
    """
    return kov_max_epsilon0_unchecked(float(epsilon), float(delta), int(k))


@functools.lru_cache(maxsize=1024)
def kov_max_epsilon0_unchecked(epsilon: float, delta: float, k: int) -> float:
    """:func:`kov_max_epsilon0` without validating its arguments (memoised).

    Callers pass ``epsilon > 0``, ``0 <= delta < 1`` and an integer ``k >= 1``
    as Python numbers; nothing is checked.

    Examples
    --------
    >>> from dpsklearn.accounting import kov_max_epsilon0_unchecked
    >>> round(kov_max_epsilon0_unchecked(1.0, 1e-5, 1000), 5)
    0.00849
    """
    lo = epsilon / k  # delta(lo) = 0: basic composition
    if delta == 0:
        return lo
    # 1e-13 below the target: exp(log delta) rounds within a few ulps, so
    # kov_delta at the result is never above delta.
    log_target = math.log(delta) + math.log1p(-1e-13)

    def ok(e0):
        return kov_log_delta(e0, k, epsilon) <= log_target

    return largest_within(ok, lo)


@validate_params(
    {
        "eps0": [NON_NEGATIVE],
        "k": [COUNT],
        "delta": [DELTA],
    },
    prefer_skip_nested_validation=True,
)
def kov_epsilon(eps0: float, k: int, delta: float) -> float:
    """Smallest epsilon at which k-fold composition of eps0-DP has ``delta``.

    The inverse of :func:`kov_delta` in its epsilon argument (optimal
    composition, Kairouz, Oh and Viswanath 2015), never above basic
    composition ``k eps0``; returned conservatively (rounded up).

    Parameters
    ----------
    eps0 : float
        Per-mechanism epsilon (>= 0).
    k : int
        Number of mechanisms (>= 1).
    delta : float
        Target delta, in [0, 1).

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from dpsklearn.accounting import kov_epsilon, drv_epsilon
    >>> bool(kov_epsilon(0.01, 100, 1e-5) < min(1.0, drv_epsilon(0.01, 100, 1e-5)))
    True
    """
    return kov_epsilon_unchecked(float(eps0), int(k), float(delta))


@functools.lru_cache(maxsize=1024)
def kov_epsilon_unchecked(eps0: float, k: int, delta: float) -> float:
    """:func:`kov_epsilon` without validating its arguments (memoised).

    Callers pass ``eps0 >= 0``, an integer ``k >= 1`` and ``0 <= delta < 1``
    as Python numbers; nothing is checked.

    Examples
    --------
    >>> from dpsklearn.accounting import kov_epsilon_unchecked
    >>> bool(kov_epsilon_unchecked(0.01, 100, 1e-5) < 1.0)
    True
    """
    hi = k * eps0  # delta(hi) = 0
    if delta == 0 or eps0 == 0:
        return hi
    log_target = math.log(delta)

    def ok(epsilon):
        return kov_log_delta(eps0, k, epsilon) <= log_target

    return smallest_within(ok, hi)
