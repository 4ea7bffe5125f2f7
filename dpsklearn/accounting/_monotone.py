"""Searches over monotone predicates: the inverses every calibration takes.

A calibration asks for the smallest integer (a threshold, a margin, a tail
index) at which a monotone condition first holds, or for the largest (or
smallest) real number a certified bound admits (a per-instance epsilon, a
zCDP rho). One galloping bisection serves each kind, written once with its
rounding on the safe side, so each caller states only its condition.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = [
    "largest_certified",
    "largest_within",
    "smallest_integer",
    "smallest_within",
]


def smallest_integer(
    predicate: Callable[[int], bool], *, low: int = 0, guess: int | None = None
) -> int:
    """The smallest integer ``n >= low`` with ``predicate(n)`` true.

    ``predicate`` must be monotone (false, then true from some ``n`` on) and
    true somewhere above ``low``. From ``guess`` (when given and above
    ``low``), the search walks down or up in doubling steps of about
    ``(guess - low) / 64`` to bracket the answer, then bisects: about
    ``log2`` of the distance evaluations, fewer when the guess is close.

    Parameters
    ----------
    predicate : callable
        ``predicate(n) -> bool``, monotone in ``n``.
    low : int, default=0
        The smallest candidate.
    guess : int, default=None
        A candidate near the answer, to save evaluations.

    Returns
    -------
    n : int

    Examples
    --------
    >>> from dpsklearn.accounting import smallest_integer
    >>> smallest_integer(lambda n: n * n >= 1000)
    32
    >>> smallest_integer(lambda n: n * n >= 1000, low=1, guess=30)
    32
    """
    low = int(low)
    if guess is not None and int(guess) > low:
        high = int(guess)
        step = max(1, (high - low) // 64)
        if predicate(high):  # walk down until it fails (or reaches low)
            below = max(low, high - step)
            while below > low and predicate(below):
                high, step = below, 2 * step
                below = max(low, high - step)
            if below == low and predicate(low):
                return low
        else:  # walk up until it holds
            below, high = high, high + step
            while not predicate(high):
                below, step = high, 2 * step
                high = below + step
    else:
        if predicate(low):
            return low
        below, high = low, low + 1
        while not predicate(high):
            below, high = high, low + 2 * (high - low)
    # Invariant: predicate(high) and not predicate(below), below < high.
    while high - below > 1:
        middle = (below + high) // 2
        if predicate(middle):
            high = middle
        else:
            below = middle
    return high


def largest_certified(
    certify: Callable[[float], float], epsilon: float, rtol: float
) -> float:
    """Largest ``x`` with ``certify(x) <= epsilon``, from the safe side.

    ``certify`` increases with ``x``; bisection on ``log x`` to relative
    precision ``rtol``.

    Examples
    --------
    >>> from dpsklearn.accounting import largest_certified, zcdp_epsilon
    >>> rho = largest_certified(lambda r: zcdp_epsilon(r, 1e-5), 1.0, 1e-9)
    >>> round(rho, 4), zcdp_epsilon(rho, 1e-5) <= 1.0
    (0.0208, True)
    """
    lo = hi = 1.0
    while certify(lo) > epsilon:
        lo /= 4.0
    while certify(hi) <= epsilon:
        hi *= 4.0
    lo = min(lo, hi / 4.0)
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if certify(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def largest_within(ok: Callable[[float], bool], lo: float, cap: float = 1e6) -> float:
    """Largest ``x >= lo`` with ``ok(x)``, for ``ok`` true at ``lo`` and monotone.

    Doubling until ``ok`` fails (or ``x`` passes ``cap``), then bisection to
    ``1e-13`` relative. The result always satisfies ``ok``: the inverse is
    taken from the safe side.
    """
    hi = 2.0 * lo
    while ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > cap:  # delta -> 1 as epsilon grows, so this is never reached
            break
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-13 * lo:
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def smallest_within(ok: Callable[[float], bool], hi: float) -> float:
    """Smallest ``x`` in ``[0, hi]`` with ``ok(x)``, for monotone ``ok`` true at ``hi``.

    Bisection to ``1e-13`` relative. The result always satisfies ``ok``: the
    inverse is taken from the safe side (rounded up), as :func:`largest_within`
    rounds down.
    """
    if ok(0.0):
        return 0.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-13 * hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
