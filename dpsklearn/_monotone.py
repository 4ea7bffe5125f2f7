"""Searches over monotone predicates: the inverses every calibration takes.

A calibration asks for the smallest integer (a threshold, a margin, a tail
index) at which a monotone condition first holds, or for the largest (or
smallest) real number a certified bound admits (a per-instance epsilon, a
zCDP rho, a noise scale). One galloping bisection serves each kind, written
once with its rounding on the safe side, so each caller states only its
condition, its starting bracket and its precision. Every bisection of the
package is one of these (``tests/test_monotone.py`` checks that none is
written by hand elsewhere); the module imports nothing of the package, so
every unit may use it.

* :func:`smallest_integer` -- the smallest integer where a condition holds.
* :func:`largest_within`, :func:`smallest_within` -- the largest (smallest)
  real number where a condition holds, bracketed by galloping from a start.
* :func:`largest_certified` -- the largest ``x`` a certified, increasing
  bound ``certify(x) <= epsilon`` admits (on ``log x``).
* :func:`bisection` -- the step all of them share: a bracket narrowed to
  its end where the condition holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = [
    "bisection",
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
    >>> from dpsklearn._monotone import smallest_integer
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


def bisection(
    ok: Callable[[float], bool],
    good: float,
    bad: float,
    *,
    log: bool = False,
    rtol: float = 1e-13,
    max_steps: int = 200,
) -> float:
    """Narrow a bracket of a monotone ``ok`` to its end where ``ok`` holds.

    ``ok(good)`` holds and ``ok(bad)`` does not (``bad`` may lie on either
    side of ``good``; neither end is evaluated). Each step evaluates ``ok``
    at the midpoint of the bracket, arithmetic or, with ``log``, geometric
    (both ends then positive), and moves the end on its side. The search
    stops when the ends are within ``rtol`` -- ``|bad - good| <= rtol *
    good``, or ``hi / lo - 1 <= rtol`` on the log scale -- when the
    midpoint rounds onto an end, or after ``max_steps`` evaluations. On the
    log scale the midpoint is ``sqrt(lo * hi)``, so the product of the ends
    must stay within floating point (ends between about ``1e-150`` and
    ``1e150``); beyond, the search stops at once, still on the safe side.

    Parameters
    ----------
    ok : callable
        ``ok(x) -> bool``, monotone between ``good`` and ``bad``.
    good, bad : float
        The bracket: ``ok`` holds at ``good``, not at ``bad``.
    log : bool, default=False
        Bisect ``log x`` (a scale, a rho) rather than ``x``.
    rtol : float, default=1e-13
        Relative width at which the search stops.
    max_steps : int, default=200
        Most evaluations of ``ok``.

    Returns
    -------
    good : float
        The narrowed ``good`` end: ``ok`` holds there, so the inverse is
        taken from the safe side whichever way ``ok`` runs.

    Examples
    --------
    >>> from dpsklearn._monotone import bisection
    >>> x = bisection(lambda x: x * x <= 2.0, 1.0, 2.0)  # the largest
    >>> round(x, 12), x * x <= 2.0
    (1.414213562373, True)
    >>> x = bisection(lambda x: x * x >= 2.0, 2.0, 1.0, log=True, rtol=1e-6)
    >>> round(x, 5), x * x >= 2.0
    (1.41421, True)
    """
    for _ in range(max_steps):
        lo, hi = (good, bad) if good < bad else (bad, good)
        mid = math.sqrt(lo * hi) if log else 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if log:
            if hi / lo - 1.0 <= rtol:
                break
        elif hi - lo <= rtol * good:
            break
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def largest_certified(
    certify: Callable[[float], float], epsilon: float, rtol: float
) -> float:
    """Largest ``x`` with ``certify(x) <= epsilon``, from the safe side.

    ``certify`` increases with ``x``; from ``x = 1`` the bracket walks by
    factors of 4, then :func:`bisection` on ``log x`` to relative precision
    ``rtol``.

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
    return bisection(
        lambda x: certify(x) <= epsilon,
        lo,
        hi,
        log=True,
        rtol=rtol,
        max_steps=10_000,
    )


def largest_within(
    ok: Callable[[float], bool],
    lo: float,
    cap: float = 1e6,
    *,
    hi: float | None = None,
    factor: float = 2.0,
    shrink: bool = False,
    log: bool = False,
    rtol: float = 1e-13,
) -> float:
    """Largest ``x`` with ``ok(x)``, for ``ok`` true at ``lo`` and monotone.

    From ``hi`` (by default ``factor * lo``), ``x`` is multiplied by
    ``factor`` while ``ok`` holds, never past ``cap`` (returned when ``ok``
    holds there); then :func:`bisection` (on ``log x`` with ``log``) to
    ``rtol`` relative. The result always satisfies ``ok`` (``lo`` is taken to
    satisfy it): the inverse is taken from the safe side.

    Parameters
    ----------
    ok : callable
        ``ok(x) -> bool``, true up to some ``x``, false beyond.
    lo : float
        A point where ``ok`` holds (with ``shrink``, a first guess of one).
    cap : float, default=1e6
        The largest candidate.
    hi : float, default=None
        Where the galloping starts (``factor * lo`` when None).
    factor : float, default=2.0
        The galloping step.
    shrink : bool, default=False
        When ``ok`` fails at ``hi`` straight away, check ``lo`` too and divide
        it by ``factor`` until ``ok`` holds.
    log : bool, default=False
        Bisect ``log x`` rather than ``x``.
    rtol : float, default=1e-13
        Relative precision of the bisection.

    Returns
    -------
    x : float

    Examples
    --------
    >>> from dpsklearn._monotone import largest_within
    >>> x = largest_within(lambda x: x**3 <= 10.0, 1.0)
    >>> round(x, 10), x**3 <= 10.0
    (2.15443469, True)
    >>> largest_within(lambda x: x <= 3e6, 1.0)  # capped
    1000000.0
    """
    hi = min(factor * lo if hi is None else hi, cap)
    grew = False
    while ok(hi):
        if hi >= cap:
            return hi
        lo, hi, grew = hi, min(factor * hi, cap), True
    if shrink and not grew:
        while not ok(lo):
            hi, lo = lo, lo / factor
    return bisection(ok, lo, hi, log=log, rtol=rtol)


def smallest_within(
    ok: Callable[[float], bool],
    hi: float,
    *,
    grow: bool = False,
    factor: float = 2.0,
    log: bool = False,
    floor: float = 1e-300,
    rtol: float = 1e-13,
) -> float:
    """Smallest ``x >= 0`` with ``ok(x)``, for monotone ``ok`` true at ``hi``.

    With ``grow``, ``hi`` need not satisfy ``ok``: it is multiplied by
    ``factor`` until ``ok`` holds. The lower end is 0 (returned when ``ok``
    holds there) or the last ``hi`` that failed; on the log scale, ``x`` is
    positive and the lower end walks down from ``hi`` by ``factor`` until
    ``ok`` fails (or ``x`` reaches ``floor``). Then :func:`bisection` to
    ``rtol`` relative. The result always satisfies ``ok``: the inverse is
    taken from the safe side (rounded up), as :func:`largest_within` rounds
    down.

    Parameters
    ----------
    ok : callable
        ``ok(x) -> bool``, false up to some ``x``, true beyond.
    hi : float
        A point where ``ok`` holds (with ``grow``, where the search starts).
    grow : bool, default=False
        Multiply ``hi`` by ``factor`` until ``ok`` holds.
    factor : float, default=2.0
        The galloping step.
    log : bool, default=False
        Bisect ``log x`` rather than ``x`` (the answer is then positive).
    floor : float, default=1e-300
        On the log scale, the smallest lower end.
    rtol : float, default=1e-13
        Relative precision of the bisection.

    Returns
    -------
    x : float

    Examples
    --------
    >>> from dpsklearn._monotone import smallest_within
    >>> x = smallest_within(lambda x: x**3 >= 10.0, 1.0, grow=True)
    >>> round(x, 10), x**3 >= 10.0
    (2.15443469, True)
    >>> x = smallest_within(lambda x: x >= 1e-7, 1.0, log=True, rtol=1e-9)
    >>> round(x * 1e7, 6)
    1.0
    """
    if not log and ok(0.0):
        return 0.0
    below = None
    if grow:
        while not ok(hi):
            below, hi = hi, factor * hi
    if below is not None:
        lo = below
    elif log:
        lo = hi / factor
        while ok(lo) and lo > floor:
            hi, lo = lo, lo / factor
    else:
        lo = 0.0
    return bisection(ok, hi, lo, log=log, rtol=rtol)
