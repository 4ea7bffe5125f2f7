"""Noise scales of the Gaussian vote mechanisms, GNMax and Confident-GNMax.

Both add discrete Gaussian noise to vote counts (Papernot et al. 2018,
"Scalable private learning with PATE"). Replacing one record moves one vote,
so the largest count has sensitivity 1 and the count vector L2 sensitivity
``sqrt(2)``: a threshold check on the largest count is ``1/(2 sigma1^2)``
-zCDP and a noisy argmax ``1/sigma2^2``-zCDP, with discrete noise as with
continuous (Canonne, Kamath and Steinke 2020). The accounting is
data-independent: the worst case charges every one of ``m`` threshold checks
and every allowed answer, ``rho = m/(2 sigma1^2) + A/sigma2^2``, and the
calibration finds the largest ``rho`` that the chosen conversion certifies
within ``(epsilon, delta)`` (``docs/design.rst``, "GNMax and
Confident-GNMax"):

* ``"gdp"``: the exact composition of the discrete Gaussian releases through
  Gaussian DP (Dong, Roth and Su 2022), read at ``epsilon - kappa`` for the
  lattice (:func:`~dpsklearn.accounting.discrete_gaussian_delta`,
  ``docs/accounting_theory.rst``), the tightest;
* ``"rdp"``: dp_accounting's RDP accountant on the curve ``alpha * rho``;
* ``"zcdp"``: ``rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._param_validation import StrOptions
from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    OPEN_UNIT,
    validate_params,
)
from ..accounting import (
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    largest_certified,
    rdp_epsilon_of_rho,
    zcdp_epsilon,
    zcdp_rho,
)

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "GaussianCalibration",
    "calibrate_confident_gnmax",
    "gaussian_spent",
    "gnmax_sigma",
    "largest_gaussian_rho",
]

#: Calibrations of the Gaussian mechanisms, in order of preference on ties.
GAUSSIAN_CALIBRATIONS = ("rdp", "zcdp", "gdp")


@dataclass(frozen=True)
class GaussianCalibration:
    """Noise scales of a Gaussian vote mechanism for its worst-case run.

    Attributes
    ----------
    name : {"rdp", "zcdp", "gdp"}
        The conversion that certified the total: dp_accounting's RDP
        accountant, zCDP with ``epsilon = rho + 2 sqrt(rho ln(1/delta))``, or
        the exact composition of the discrete Gaussian releases through
        Gaussian DP (:func:`~dpsklearn.accounting.discrete_gaussian_delta`).
    epsilon, delta : float
        The total budget.
    max_queries : int
        ``m``: threshold checks (Confident-GNMax) or noisy argmaxes (GNMax)
        charged.
    max_answers : int
        Noisy argmaxes charged (``max_queries`` for GNMax).
    sigma_threshold : float or None
        ``sigma1`` of the threshold check on the largest count
        (``None`` for GNMax).
    sigma_argmax : float
        ``sigma2`` of the noisy argmax (every count).
    rho : float
        zCDP ``rho`` of the worst case, ``m / (2 sigma1^2) + A / sigma2^2``
        (``A`` = ``max_answers``); the RDP curve is ``alpha * rho``.
    certified_epsilon : float
        The epsilon at ``delta`` that the named conversion gives for the
        worst case (at most ``epsilon``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_confident_gnmax
    >>> cal = calibrate_confident_gnmax(8.0, 1e-5, 2000, 2000)
    >>> cal.name, bool(cal.certified_epsilon <= 8.0)
    ('gdp', True)
    """

    name: str
    epsilon: float
    delta: float
    max_queries: int
    max_answers: int
    sigma_threshold: float | None
    sigma_argmax: float
    rho: float
    certified_epsilon: float


def _gaussian_sigmas(rho, m, answers, threshold_share):
    """The noise scales of the worst case at a total ``rho``.

    Confident-GNMax (``threshold_share > 0``): ``m`` threshold checks with
    ``m / (2 sigma1^2) = share * rho`` and ``answers`` noisy argmaxes with
    ``answers / sigma2^2 = (1 - share) * rho``. GNMax (``share = 0``):
    ``answers`` noisy argmaxes with ``answers / sigma2^2 = rho``.
    """
    sigma2 = math.sqrt(answers / ((1.0 - threshold_share) * rho))
    sigma1 = (
        math.sqrt(m / (2.0 * threshold_share * rho)) if threshold_share > 0 else None
    )
    return sigma1, sigma2


def _vote_groups(rho, m, answers, share):
    """The discrete Gaussian releases of the worst case at a total ``rho``.

    As ``(sigma, shift, count)`` groups of unit lattice moves: each noisy
    argmax releases a count vector of which two coordinates move by one
    (``2 * answers`` unit moves at ``sigma2``), each threshold check the
    largest count, which moves by at most one (``m`` at ``sigma1``).
    """
    sigma1, sigma2 = _gaussian_sigmas(rho, m, answers, share)
    groups = [(sigma2, 1, 2 * answers)]
    if sigma1 is not None:
        groups.append((sigma1, 1, m))
    return groups


def _largest_rho(name, epsilon, delta, rtol, groups_of):
    """The largest total ``rho`` the conversion ``name`` certifies, and its epsilon.

    Every Gaussian release of L2 sensitivity ``s`` and noise ``sigma`` is
    ``s^2/(2 sigma^2)``-zCDP with that exact Renyi curve (discrete noise:
    Canonne, Kamath and Steinke 2020), so ``"rdp"`` and ``"zcdp"`` certify a
    total ``rho`` whatever the releases; ``"gdp"`` certifies the releases
    themselves, ``groups_of(rho)`` (:func:`discrete_gaussian_delta`).
    """
    if name == "zcdp":
        rho = zcdp_rho(epsilon, delta) * (1.0 - 1e-12)  # safe side of rounding
        return rho, zcdp_epsilon(rho, delta)
    if name == "rdp":
        rho = largest_certified(lambda r: rdp_epsilon_of_rho(r, delta), epsilon, rtol)
        return rho, rdp_epsilon_of_rho(rho, delta)

    def certify(r):
        # Increasing in r, and <= epsilon exactly when delta is certified.
        return epsilon * discrete_gaussian_delta(epsilon, groups_of(r)) / delta

    rho = largest_certified(certify, epsilon, rtol)
    return rho, discrete_gaussian_epsilon(delta, groups_of(rho))


def gaussian_spent(
    name: str, delta: float, rho: float, groups: Sequence[tuple[float, int, int]]
) -> tuple[float, float]:
    """``(epsilon, delta)`` of Gaussian releases under a calibration's conversion.

    ``rho`` is their zCDP total and ``groups`` their discrete Gaussian
    releases (``(sigma, shift, count)``, :func:`discrete_gaussian_delta`).
    """
    if rho <= 0:
        return 0.0, 0.0
    if name == "gdp":
        return discrete_gaussian_epsilon(delta, groups), delta
    if name == "zcdp":
        return zcdp_epsilon(rho, delta), delta
    return rdp_epsilon_of_rho(rho, delta), delta


@functools.lru_cache(maxsize=1024)
def _calibrate_gaussian_cached(epsilon, delta, m, answers, share, calibration, rtol):
    names = GAUSSIAN_CALIBRATIONS if calibration == "auto" else (calibration,)
    best = None
    for name in names:
        rho, certified = _largest_rho(
            name,
            epsilon,
            delta,
            rtol,
            lambda r: _vote_groups(r, m, answers, share),
        )
        sigma1, sigma2 = _gaussian_sigmas(rho, m, answers, share)
        candidate = GaussianCalibration(
            name=name,
            epsilon=epsilon,
            delta=delta,
            max_queries=m,
            max_answers=answers,
            sigma_threshold=sigma1,
            sigma_argmax=sigma2,
            rho=rho,
            certified_epsilon=certified,
        )
        if best is None or candidate.rho > best.rho:
            best = candidate
    return best


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_queries": [COUNT],
        "max_answers": [COUNT],
        "calibration": [StrOptions({"auto", *GAUSSIAN_CALIBRATIONS})],
        "threshold_share": [OPEN_UNIT],
        "rtol": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def calibrate_confident_gnmax(
    epsilon: float,
    delta: float,
    max_queries: int,
    max_answers: int,
    *,
    calibration: str = "auto",
    threshold_share: float = 0.5,
    rtol: float = 1e-6,
) -> GaussianCalibration:
    """Noise scales of Confident-GNMax for its worst case.

    See ``docs/design.rst``, "GNMax and Confident-GNMax".

    Confident-GNMax (Papernot et al. 2018, "Scalable private learning with
    PATE", Algorithm 1) answers a query only when the largest vote count plus
    ``N(0, sigma1^2)`` clears a threshold, and then with the noisy argmax of
    the counts plus ``N(0, sigma2^2)`` each. Replace-one moves one vote, so
    the largest count has sensitivity 1 and the count vector L2 sensitivity
    ``sqrt(2)``: a threshold check is ``1/(2 sigma1^2)``-zCDP and a noisy
    argmax (post-processing of the noisy counts) ``1/sigma2^2``-zCDP, with
    discrete Gaussian noise as with continuous (CKS 2020). The worst case
    that the data cannot change charges every one of the ``m`` threshold
    checks plus ``max_answers`` noisy argmaxes (the model halts after that
    many answers), in total ``rho = m/(2 sigma1^2) + max_answers/sigma2^2``
    and RDP ``alpha * rho`` at every order ``alpha``. A share
    ``threshold_share`` of ``rho`` goes to the threshold checks.

    ``"gdp"`` composes the discrete Gaussian releases exactly through
    Gaussian DP (Dong, Roth and Su 2022), with the lattice correction of
    :func:`~dpsklearn.accounting.discrete_gaussian_delta` (the number of
    argmaxes depends on the data, but the run is a post-processing of one
    that always makes ``m`` checks and ``max_answers`` argmaxes, in an
    adaptive order: ``docs/design.rst``, "GNMax and Confident-GNMax");
    ``"rdp"`` composes those Gaussian events in dp_accounting's
    :class:`RdpAccountant` (replace-one sensitivities); each finds the
    largest ``rho`` it certifies within ``(epsilon, delta)`` by bisection
    (relative tolerance ``rtol`` on ``rho``, returned from the safe side);
    ``"zcdp"`` uses ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun and
    Steinke 2016) in closed form; ``"auto"`` takes the one with the larger
    ``rho`` (smaller noise), nearly always ``"gdp"``.

    Parameters
    ----------
    epsilon : float
        Total epsilon of everything the model will release (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    max_queries : int
        ``m``, the number of queries (threshold checks), >= 1. Part of the
        guarantee.
    max_answers : int
        Noisy argmaxes the model pays for (it halts after that many
        answers), in ``[1, max_queries]``.
    calibration : {"auto", "gdp", "rdp", "zcdp"}, default="auto"
    threshold_share : float, default=0.5
        Share of ``rho`` spent on the threshold checks, in (0, 1).
    rtol : float, default=1e-6
        Relative precision of the ``rho`` bisection.

    Returns
    -------
    calibration : GaussianCalibration

    Raises
    ------
    ValueError
        Naming the bad parameter and its allowed values.

    Notes
    -----
    Memoised on its inputs (``calibrate_confident_gnmax.cache_info()``).

    Examples
    --------
    >>> from dpsklearn.mechanisms import calibrate_confident_gnmax
    >>> cal = calibrate_confident_gnmax(2.0, 1e-5, 2000, 500)
    >>> cal.name, round(cal.sigma_threshold), round(cal.sigma_argmax)
    ('gdp', 126, 89)
    """
    if max_answers > max_queries:
        raise ValueError(
            f"max_answers must be at most max_queries={max_queries}, got "
            f"{max_answers!r}."
        )
    return _calibrate_gaussian_cached(
        float(epsilon),
        float(delta),
        int(max_queries),
        int(max_answers),
        float(threshold_share),
        calibration,
        float(rtol),
    )


calibrate_confident_gnmax.cache_info = _calibrate_gaussian_cached.cache_info
calibrate_confident_gnmax.cache_clear = _calibrate_gaussian_cached.cache_clear


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "max_queries": [COUNT],
        "calibration": [StrOptions({"auto", *GAUSSIAN_CALIBRATIONS})],
        "rtol": [FINITE_POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def gnmax_sigma(
    epsilon: float,
    delta: float,
    max_queries: int,
    *,
    calibration: str = "auto",
    rtol: float = 1e-6,
) -> tuple[float, str]:
    """``sigma`` of GNMax: ``max_queries`` Gaussian noisy argmaxes within the budget.

    GNMax (Papernot et al. 2018) answers every query with the argmax of the
    vote counts plus ``N(0, sigma^2)`` each (discrete Gaussian in dpsklearn).
    One record moves one vote, L2 sensitivity ``sqrt(2)``, so each answer is
    ``1/sigma^2``-zCDP and ``m`` answers ``rho = m / sigma^2``; the largest
    ``rho`` within ``(epsilon, delta)`` is found as in
    :func:`calibrate_confident_gnmax` (Gaussian DP, dp_accounting RDP, or
    zCDP).

    Parameters
    ----------
    epsilon : float
        Total epsilon (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    max_queries : int
        ``m``, >= 1 (part of the guarantee).
    calibration : {"auto", "gdp", "rdp", "zcdp"}, default="auto"
    rtol : float, default=1e-6

    Returns
    -------
    sigma : float
    name : str
        The calibration used.

    Examples
    --------
    >>> from dpsklearn.mechanisms import gnmax_sigma
    >>> sigma, name = gnmax_sigma(1.0, 1e-5, 1000)
    >>> name, round(sigma)
    ('gdp', 167)
    """
    cal = calibrate_gnmax(epsilon, delta, max_queries, calibration, rtol)
    return cal.sigma_argmax, cal.name


def calibrate_gnmax(
    epsilon: float,
    delta: float,
    max_queries: int,
    calibration: str = "auto",
    rtol: float = 1e-6,
) -> GaussianCalibration:
    """GNMax's calibration: ``max_queries`` noisy argmaxes and no threshold check."""
    return _calibrate_gaussian_cached(
        float(epsilon),
        float(delta),
        int(max_queries),
        int(max_queries),
        0.0,
        calibration,
        float(rtol),
    )


def _value_groups(rho, m, units):
    """``m`` releases moving by at most ``units`` lattice steps, total ``rho``."""
    return [(units * math.sqrt(m / (2.0 * rho)), units, m)]


@functools.lru_cache(maxsize=1024)
def _largest_value_rho(epsilon, delta, m, units, calibration, rtol):
    names = GAUSSIAN_CALIBRATIONS if calibration == "auto" else (calibration,)
    best = None
    for name in names:
        if name == "gdp" and m is None:
            continue
        rho, _ = _largest_rho(
            name, epsilon, delta, rtol, lambda r: _value_groups(r, m, units)
        )
        if best is None or rho > best[0]:
            best = (rho, name)
    return best


def largest_gaussian_rho(
    epsilon: float,
    delta: float,
    calibration: str = "auto",
    rtol: float = 1e-6,
    *,
    max_queries: int | None = None,
    units: int = 1,
) -> tuple[float, str]:
    """The largest total zCDP ``rho`` of Gaussian releases within ``(epsilon, delta)``.

    Gaussian releases (continuous or discrete) compose to the Renyi curve
    ``alpha * rho``; ``"rdp"`` certifies ``rho`` with dp_accounting's RDP
    accountant, ``"zcdp"`` with ``rho + 2 sqrt(rho ln(1/delta))``. ``"gdp"``
    (given ``max_queries``) certifies ``max_queries`` discrete Gaussian
    releases of values that move by at most ``units`` lattice steps, exactly
    through Gaussian DP (:func:`~dpsklearn.accounting.discrete_gaussian_delta`).
    ``"auto"`` takes the largest ``rho``.

    Returns
    -------
    rho : float
    name : str
        The conversion that certified it.
    """
    return _largest_value_rho(
        float(epsilon),
        float(delta),
        None if max_queries is None else int(max_queries),
        int(units),
        calibration,
        float(rtol),
    )
