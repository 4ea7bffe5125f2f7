"""Searches over monotone predicates: the inverses every calibration takes.

A calibration asks for the smallest integer (a threshold, a margin, a tail
index) at which a monotone condition first holds. One galloping bisection
serves them all, so each caller states only its condition and, where it
has one, a guess near the answer.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["smallest_integer"]


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
