"""The full-strength sparse vector calibrations: ``laplace`` and ``gaussian``.

Both choose the noise of the threshold and of the queries, the threshold
``w`` and the fallback's epsilon for a whole stability test (its ``T``
AboveThreshold instances and at most ``n_fallbacks`` paid fallback answers:
one per instance for the classifier's test, ``ceil(T/2)`` for the soft-label
test's ``T + 1`` instances), minimising
``w``: a query passes when its distance to instability clears ``w``, so a
smaller ``w`` answers more. The derivations are in ``docs/design.rst``,
"The sparse vector test at full strength".

``laplace``
    Discrete Laplace noises with threshold scale ``s_t`` and query scale
    ``s_q``. One instance on integer scores of sensitivity 1 whose
    neighbouring values may move either way is ``eps0 = 1/s_t + 2/s_q``-DP
    (Lyu, Su and Li 2017, Theorem 2 with one positive outcome: any split of
    ``eps0`` between the two noises is private), so the split is free; we
    take the one that minimises ``w``, near equal scales. The ``T``
    instances and the fallback slots are composed together by the
    optimal composition of two kinds of pure mechanisms
    (:mod:`dpsklearn.accounting._optimal_composition`); ``w`` inverts the
    exact tail of the difference of the two noises; ``delta`` is split
    between the composition and the stability part where ``w`` is smallest.

``gaussian``
    Discrete Gaussian noises ``N_Z(0, s_t^2)`` and ``N_Z(0, s_q^2)``. One
    instance that sees at most ``K`` queries is ``(alpha, log(K)/(alpha-1) +
    alpha/s_t^2 + 2 alpha/s_q^2)``-RDP (Zhu and Wang 2020, Theorem 8, with
    sensitivity 1); an instance ends at a failure, so ``K`` is bounded only
    by ``max_queries``, which becomes part of the guarantee. The instances
    and the fallbacks (the exponential mechanism, ``eps^2/8``-zCDP; a pure
    release, ``eps^2/2``-zCDP) compose in RDP and convert to ``(epsilon,
    delta)`` (Canonne, Kamath and Steinke 2020, through ``dp_accounting``).
    ``w`` inverts the numerically summed tail of the difference of the two
    discrete Gaussians.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.stats import norm

from .._monotone import largest_within
from ..accounting import (
    alternating_delta,
    kov_max_epsilon0_unchecked,
    largest_alternating_scale,
    largest_two_kind_scale,
)
from ._sparse_vector_tails import smallest_tail_index

__all__ = [
    "alternating_certified",
    "gaussian_route",
    "laplace_route",
    "rdp_route_epsilon",
]

#: Fractions of delta given to the composition (the rest to the stability
#: part) and shares of eps0 given to the threshold noise (1/2 is the classic
#: 1:2 scales): a coarse grid, then a fine one around its best point.
_COARSE_FRACTIONS = tuple(np.round(np.arange(0.1, 0.91, 0.1), 2))
_COARSE_SHARES = tuple(np.round(np.arange(0.20, 0.601, 0.05), 2))
_FINE_STEP = 0.01
#: Ratios s_q / s_t tried for the Gaussian noises.
_GAUSSIAN_RATIOS = tuple(np.round(np.arange(0.6, 3.01, 0.1), 1))
#: Renyi orders at which RDP curves are converted (any order gives a valid bound).
_ORDERS = tuple(np.exp(np.linspace(math.log(1.01), math.log(1e5), 300)))

# Zhu and Wang (2020), Theorem 8: one instance at sensitivity 1 costs
# alpha / s_t^2 from the threshold and 2 alpha / s_q^2 from the queries.
_THRESHOLD_COEF, _QUERY_COEF = 1.0, 2.0
# zCDP coefficients of the fallbacks per epsilon^2: the exponential mechanism
# is eps^2/8-zCDP (bounded range, Cesar and Rogers 2021); a pure eps-DP
# release eps^2/2 (Bun and Steinke 2016, Proposition 1.4).
_FALLBACK_ZCDP = {"bounded_range": 1.0 / 8.0, "pure": 1.0 / 2.0}


# -- laplace --------------------------------------------------------------------------
@functools.lru_cache(maxsize=512)
def alternating_certified(eps0, fallback_epsilon, pairs, epsilon, delta):
    """Whether the exact alternating game certifies ``pairs`` within the budget.

    ``pairs`` AboveThreshold instances of ``eps0``, each followed by an
    exponential-mechanism answer of ``fallback_epsilon`` (bounded range),
    composed by :func:`~dpsklearn.accounting.alternating_delta` to at most
    ``delta`` at ``epsilon``. False where the game leaves its floating point
    (it overflows, or meets a NaN, at budgets of a few hundred), so that the
    caller keeps a composition that does certify.

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_routes import alternating_certified
    >>> alternating_certified(0.02, 0.02, 100, 1.0, 1e-5)
    True
    >>> alternating_certified(450.0, 450.0, 10, 700.0, 1e-5)
    False
    """
    try:
        game = alternating_delta(eps0, fallback_epsilon, pairs, epsilon)
    except (OverflowError, ValueError):  # ValueError: a NaN in the blocks
        return False
    return bool(game <= delta)  # False for a NaN


def _laplace_scales(eps0, threshold_share):
    """``(s_q, s_t)`` with ``1/s_t = share eps0`` and ``2/s_q = (1 - share) eps0``."""
    return 2.0 / ((1.0 - threshold_share) * eps0), 1.0 / (threshold_share * eps0)


def _laplace_eps0(epsilon, delta_sv, cutoff, share, n_fallbacks):
    """Largest per-instance eps0 with the fallbacks at ``share/(1-share) eps0``."""
    if share == 0.0 or n_fallbacks == 0:
        return kov_max_epsilon0_unchecked(epsilon, delta_sv, cutoff)
    ratio = share / (1.0 - share)
    return largest_two_kind_scale(epsilon, delta_sv, cutoff, n_fallbacks, ratio)


def _slots(cutoff, share, n_fallbacks):
    """Paid fallback slots: ``n_fallbacks``, by default one per instance."""
    if not share:
        return 0
    return cutoff if n_fallbacks is None else int(n_fallbacks)


def _tail_target(delta, delta_sv, cutoff, stability):
    """The tail ``w`` must reach: the stability part's ``delta`` per draw.

    Without a stability part, ``delta / T``: a yardstick for the far tail of
    the noises' difference only (no delta is spent on it).
    """
    return (delta - delta_sv if stability else delta) / cutoff


def _refine(values, step, lo, hi):
    """The fine grid within one coarse step either side of the coarse best."""
    best = values
    grid = np.arange(best - 5 * step, best + 5.5 * step, step)
    return tuple(np.round(grid[(grid >= lo) & (grid <= hi)], 4))


@functools.lru_cache(maxsize=512)
def laplace_route(
    epsilon,
    delta,
    cutoff,
    share,
    n_fallbacks=None,
    fallback_kind="pure",
    stability=True,
):
    """The ``laplace`` calibration: a dict of its parameters (smallest ``w``).

    The delta split and the noise split are searched on a grid (public
    numbers only; any point of the grid is a valid calibration, the search
    only finds a smaller ``w``).

    Parameters
    ----------
    epsilon, delta : float
        Budget of the whole test (instances and fallbacks).
    cutoff : int
        ``T``, the AboveThreshold instances.
    share : float
        In [0, 1): each fallback answer's epsilon is ``share / (1 - share)``
        times an instance's (with one slot per instance, the fallbacks' share
        of basic composition); 0 without a paid fallback.
    n_fallbacks : int, optional
        The paid fallback answers that can occur (default: one per
        instance). The soft-label test has ``T + 1`` instances but at most
        ``ceil(T/2)`` fallback answers (each adds 2 to its failure count).
    fallback_kind : {"pure", "bounded_range"}, default="pure"
        With ``"bounded_range"`` (the exponential mechanism) and one slot per
        instance, each fallback follows the instance it ends: the pairs are
        composed by the exact alternating game
        (:func:`~dpsklearn.accounting.largest_alternating_scale`), a quarter
        of a pure release's cost per answer; else both kinds as pure.
    stability : bool, default=True
        Whether the test has a stability part. Without one (a test that
        releases nothing for being stable, such as the public-prior test)
        all of ``delta`` goes to the composition, and ``w`` is only the
        yardstick that chooses the noise split: the threshold a stability
        test with these noises would need at tail ``delta / T``.

    Returns
    -------
    params : dict
        ``eps0``, ``fallback_epsilon``, ``query_scale``, ``threshold_scale``,
        ``threshold`` (an integer ``w``), ``sparse_vector_delta``,
        ``composition`` (``"joint"``: two pure kinds; ``"alternating"``).

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_routes import laplace_route
    >>> route = laplace_route(1.0, 1e-5, 100, 0.0)
    >>> 2000 < route["threshold"] < 2200
    True
    """
    scores = {}
    slots = _slots(cutoff, share, n_fallbacks)

    def score(fraction, threshold_share):
        key = (fraction, threshold_share)
        if key not in scores:
            delta_sv = fraction * delta
            eps0 = _laplace_eps0(epsilon, delta_sv, cutoff, share, slots)
            s_q, s_t = _laplace_scales(eps0, threshold_share)
            log_target = math.log(_tail_target(delta, delta_sv, cutoff, stability))
            n = smallest_tail_index(log_target, s_q, s_t, "laplace")
            scores[key] = (n, eps0, delta_sv, s_q, s_t)
        return scores[key][0], -fraction, threshold_share

    fractions = _COARSE_FRACTIONS if stability else (1.0,)
    coarse = min((score(f, u), f, u) for f in fractions for u in _COARSE_SHARES)
    _, f0, u0 = coarse
    fine = min(
        (score(f, u), f, u)
        for f in (_refine(f0, _FINE_STEP, 0.01, 0.99) if stability else (1.0,))
        for u in _refine(u0, _FINE_STEP, 0.05, 0.95)
    )
    _, fraction, threshold_share = fine
    n, eps0, delta_sv, s_q, s_t = scores[(fraction, threshold_share)]
    composition = "joint"
    if fallback_kind == "bounded_range" and slots and slots == cutoff:
        # The exact alternating game at the two-pure-kinds optimum's delta
        # split (searching the split again moves w by 0.1 % and costs five
        # times the time), and the noise split again: a valid calibration.
        ratio = share / (1.0 - share)
        try:
            game_eps0 = largest_alternating_scale(
                epsilon, fraction * delta, cutoff, ratio, eps0
            )
        except (ValueError, OverflowError):
            # The search left the game's floating point (a NaN delta in the
            # blocks beyond 150 pairs, at budgets of a few hundred): keep the
            # two kinds' eps0, which the game then does not have to certify.
            game_eps0 = eps0
        log_target = math.log(_tail_target(delta, delta_sv, cutoff, stability))
        tried = []
        for u in _refine(threshold_share, _FINE_STEP, 0.05, 0.95):
            q, t = _laplace_scales(game_eps0, u)
            m = smallest_tail_index(log_target, q, t, "laplace")
            tried.append(((m, u), q, t))
        best = min(tried, key=lambda entry: entry[0])  # the first on ties
        # Only where the game certifies it (the check the calibration
        # repeats); beyond the game's floating point the two-kinds
        # composition that chose eps0 certifies the test instead.
        game_fallback = game_eps0 * share / (1.0 - share)
        if best[0][0] <= n and alternating_certified(
            game_eps0, game_fallback, cutoff, epsilon, fraction * delta
        ):
            (n, _), s_q, s_t = best
            eps0 = game_eps0
            composition = "alternating"
    return {
        "eps0": eps0,
        "fallback_epsilon": eps0 * share / (1.0 - share),
        "query_scale": float(s_q),
        "threshold_scale": float(s_t),
        "threshold": float(n - 1),
        "sparse_vector_delta": float(delta_sv),
        "composition": composition,
    }


# -- gaussian ----------------------------------------------------------------------
def _rdp_curve(n_instances, coefficient, max_queries, n_fallbacks, fallback_coef):
    """RDP at ``_ORDERS`` of ``n`` Gaussian instances and ``n_f`` fallbacks.

    Zhu and Wang's ``log K`` counts the outcomes of an instance: one that
    sees at most ``K`` queries stops at one of them or at none, ``K + 1``
    outcomes, so ``log(K + 1)`` is charged (the safe side of their count).
    """
    orders = np.asarray(_ORDERS)
    instance = math.log(max_queries + 1) / (orders - 1.0) + orders * coefficient
    return n_instances * instance + n_fallbacks * orders * fallback_coef


def rdp_route_epsilon(
    n_instances, coefficient, max_queries, n_fallbacks, fallback_coef, delta
):
    """Epsilon at ``delta`` of the RDP curve of :func:`_rdp_curve`.

    The conversion of Canonne, Kamath and Steinke (2020), Proposition 12 (the
    one ``dp_accounting``'s RDP accountant uses, vectorised here):
    ``epsilon = min_alpha RDP(alpha) + log(1 - 1/alpha) - log(delta alpha) /
    (alpha - 1)`` over a fixed grid of orders; every order gives a valid
    bound, so the grid only costs tightness.

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_routes import rdp_route_epsilon
    >>> bool(rdp_route_epsilon(100, 1e-5, 1000, 0, 0.0, 1e-5) > 0)
    True
    """
    if n_instances == 0 and n_fallbacks == 0:
        return 0.0
    rdp = _rdp_curve(n_instances, coefficient, max_queries, n_fallbacks, fallback_coef)
    orders = np.asarray(_ORDERS)
    epsilons = rdp + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1.0)
    return float(max(0.0, np.min(epsilons)))


def _largest_coefficient(epsilon, delta_sv, cutoff, max_queries, coef_ratio, slots):
    """Largest per-instance coefficient ``c = 1/s_t^2 + 2/s_q^2`` within budget."""

    def ok(c):
        return (
            rdp_route_epsilon(cutoff, c, max_queries, slots, coef_ratio * c, delta_sv)
            <= epsilon
        )

    if not ok(1e-300):
        return None  # the log(K) term alone exceeds the budget
    return largest_within(
        ok, 1e-12, math.inf, hi=1.0, factor=4.0, shrink=True, log=True, rtol=1e-10
    )


def _gaussian_sigmas(coefficient, ratio):
    """``(s_q, s_t)`` with ``s_q = ratio s_t`` and ``1/s_t^2 + 2/s_q^2 = c``."""
    s_t = math.sqrt((_THRESHOLD_COEF + _QUERY_COEF / ratio**2) / coefficient)
    return ratio * s_t, s_t


@functools.lru_cache(maxsize=256)
def gaussian_route(
    epsilon,
    delta,
    cutoff,
    share,
    max_queries,
    fallback_kind,
    n_fallbacks=None,
    stability=True,
):
    """The ``gaussian`` calibration: a dict of its parameters, or None.

    None when no coefficient fits the budget (the ``log K`` term alone is
    too expensive). ``share`` splits the zCDP coefficients: the fallbacks
    get ``share / (1 - share)`` of an instance's ``c`` each. ``stability``
    as in :func:`laplace_route`.

    Examples
    --------
    >>> from dpsklearn.mechanisms._sparse_vector_routes import gaussian_route
    >>> route = gaussian_route(1.0, 1e-5, 100, 0.0, 2000, "bounded_range")
    >>> route["threshold"] > 5000  # the log K term makes it lose to laplace
    True
    """
    coef_ratio = share / (1.0 - share)
    fallback_coef = _FALLBACK_ZCDP[fallback_kind]
    slots = _slots(cutoff, share, n_fallbacks)
    # Rank every (delta fraction, sigma ratio) by the normal approximation of
    # the tail, then settle the best few with the exact discrete tail.
    ranked = []
    fractions = (0.01, 0.02, *_COARSE_FRACTIONS) if stability else (1.0,)
    for fraction in fractions:
        delta_sv = fraction * delta
        c = _largest_coefficient(
            epsilon, delta_sv, cutoff, max_queries, coef_ratio, slots
        )
        if c is None:
            continue
        z = norm.isf(_tail_target(delta, delta_sv, cutoff, stability))
        for ratio in _GAUSSIAN_RATIOS:
            s_q, s_t = _gaussian_sigmas(c, ratio)
            ranked.append((z * math.hypot(s_q, s_t), fraction, ratio, c, delta_sv))
    if not ranked:
        return None
    ranked.sort()
    settled = []
    for approximate, fraction, ratio, c, delta_sv in ranked[:4]:
        s_q, s_t = _gaussian_sigmas(c, ratio)
        log_target = math.log(_tail_target(delta, delta_sv, cutoff, stability))
        n = smallest_tail_index(
            log_target, s_q, s_t, "gaussian", guess=int(approximate) + 1
        )
        settled.append(((n, -fraction), c, delta_sv, s_q, s_t))
    # The first on ties.
    (n, _), c, delta_sv, s_q, s_t = min(settled, key=lambda entry: entry[0])
    fallback_c = coef_ratio * c
    return {
        "coefficient": c,
        "fallback_coefficient": fallback_c,
        "fallback_epsilon": math.sqrt(fallback_c / fallback_coef),
        "query_scale": s_q,
        "threshold_scale": s_t,
        "threshold": float(n - 1),
        "sparse_vector_delta": delta_sv,
    }
