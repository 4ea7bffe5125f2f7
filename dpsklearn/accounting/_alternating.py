"""Pure releases alternating with bounded-range ones: the exact adaptive game.

The sparse vector test with a noisy-max fallback releases, in this order,
an AboveThreshold instance (pure ``eps0``-DP), the exponential mechanism's
answer at the failure that ended it (``eps_b``-bounded range), the next
instance, its fallback, and so on, ``T`` of each at most (a model that
stops early is a post-processing of one that runs them all). Composing the
fallbacks as pure releases (optimal composition of two pure kinds) ignores
that an exponential-mechanism answer is bounded range, which costs a quarter
of a pure release's ``rho``. The game of :mod:`._bounded_range` takes both
kinds (Dong, Durfee and Rogers 2020, with the pure steps of Kairouz, Oh and
Viswanath 2015; ``docs/accounting_theory.rst``, "Pure and bounded-range
releases in turn"):

    V_0(x) = (1 - e^(epsilon - x))_+,
    pure step:  V(x) = p V'(x + eps0) + (1 - p) V'(x - eps0),  p = e^eps0/(1+e^eps0)
    BR step:    V(x) = sup_t p(t) V'(x + t) + (1 - p(t)) V'(x + t - eps_b),

played backwards from the last release, and ``delta = V(0)``. Every
``eps0``-DP pair is a post-processing of randomized response at ``eps0``
(one pair dominates them all, so the pure step has no choice); every
``eps_b``-BR pair one of generalized randomized response at some ``t``.
Computed from above on the lattice of step ``eps_b / grid``: chords in
``u = e^-x`` for points between nodes (``V`` is convex in ``u``), the BR
step's supremum in closed form per cell, the values beyond the window
bounded by its edge values (``V`` is non-decreasing) and 1.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._bounded_range import _Cells, _one_round, compose_profile

__all__ = ["alternating_delta", "largest_alternating_scale"]

#: Lattice cells per ``eps_b``.
ALTERNATING_GRID = 8
#: Up to this many pairs the game is played directly; beyond, in blocks of at
#: most ``BLOCK_PAIRS`` pairs composed through their privacy profile.
DIRECT_PAIRS = 150
BLOCK_PAIRS = 100
# Window half-width in standard deviations of the total loss (Azuma: the
# loss leaves it with probability below e^-98); beyond it only upper bounds.
_SPAN_SD = 14.0
#: The largest per-release epsilon the game is played at (floating point).
_LARGEST_STEP = 20.0


def _chord(values, x, h, points):
    """Upper bound on ``V`` at ``points``: chords in ``u = e^-x`` between nodes."""
    position = (points - x[0]) / h
    left = np.floor(position).astype(np.int64)
    out = np.empty_like(points)
    below, above = left < 0, left >= x.size - 1
    inside = ~(below | above)
    i = left[inside]
    # On a node the chord is exact (position rounds onto it).
    u_left, u_right = np.exp(-x[i]), np.exp(-x[i + 1])
    fraction = (np.exp(-points[inside]) - u_left) / (u_right - u_left)
    fraction = np.clip(fraction, 0.0, 1.0)
    out[inside] = values[i] + (values[i + 1] - values[i]) * fraction
    out[below] = values[0]
    out[above] = 1.0
    return out


def alternating_delta(
    eps_pure: float,
    eps_br: float,
    rounds: int,
    epsilon: float,
    grid: int = ALTERNATING_GRID,
) -> float:
    """Upper bound on delta of ``rounds`` (pure, bounded-range) pairs in turn.

    Parameters
    ----------
    eps_pure : float
        Epsilon of each pure release (the first of each pair).
    eps_br : float
        Bounded-range parameter of each second release (> 0).
    rounds : int
        Pairs.
    epsilon : float
        Target epsilon.
    grid : int, default=8
        Lattice cells per ``eps_br``.

    Returns
    -------
    delta : float

    Examples
    --------
    >>> from dpsklearn.accounting import alternating_delta, two_kind_log_delta
    >>> import math
    >>> game = alternating_delta(0.0184, 0.0184, 100, 1.0)
    >>> bool(game < math.exp(two_kind_log_delta(0.0184, 100, 0.0184, 100, 1.0)))
    True
    """
    eps_pure, eps_br, epsilon = float(eps_pure), float(eps_br), float(epsilon)
    rounds, grid = int(rounds), int(grid)
    if rounds * (eps_pure + eps_br) <= epsilon:
        return 0.0
    if max(eps_pure, eps_br) > _LARGEST_STEP:
        # Beyond the lattice's floating point (e^-x over/underflows): no
        # certificate from the game; 1 bounds any delta, so a caller keeps its
        # other routes.
        return 1.0
    if rounds > DIRECT_PAIRS:
        # In blocks: each block's whole profile from one game, composed as
        # the product of one dominating pair (as for bounded-range releases,
        # docs/accounting_theory.rst, "Any number of releases: blocks").
        r = math.ceil(rounds / BLOCK_PAIRS)
        k1 = math.ceil(rounds / r)
        h = eps_br / grid
        with np.errstate(over="ignore", invalid="ignore"):  # checked below
            x, values = _values(eps_pure, eps_br, k1, 0.0, grid, profile=True)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(values))):
            return 1.0  # the game left floating point: no certificate
        units = -np.rint(x / h).astype(np.int64)[::-1]
        delta = compose_profile(units, values[::-1], h, r, epsilon)
    else:
        with np.errstate(over="ignore", invalid="ignore"):  # checked below
            x, values = _values(eps_pure, eps_br, rounds, epsilon, grid, profile=False)
        delta = float(values[int(np.argmin(np.abs(x)))])
    # A NaN (an overflow inside the game) certifies nothing: 1 bounds any delta.
    return delta if math.isfinite(delta) else 1.0


def _values(eps_pure, eps_br, rounds, epsilon, grid, *, profile):
    """``V`` at every node of the window after ``rounds`` pairs (backwards).

    ``profile``: a window symmetric enough to read the whole profile (target
    0, ``V(x) = delta(-x)``); else one around the path from 0 to ``epsilon``.
    """
    h = eps_br / grid
    spread = _SPAN_SD * math.sqrt(rounds * (eps_pure**2 + eps_br**2 / 4.0))
    drift = rounds * (eps_pure * math.tanh(eps_pure / 2.0) + eps_br**2 / 8.0)
    if profile:
        low, high = -(drift + spread), spread
    else:
        low = min(-spread, epsilon - drift - spread)
        high = max(epsilon, drift + spread)
    low -= 2.0 * eps_pure + eps_br
    high += 2.0 * eps_pure + eps_br
    i_min = math.floor(low / h) - grid - 1
    x = np.arange(i_min, math.ceil(high / h) + grid + 2, dtype=np.float64) * h
    n_nodes = x.size
    with np.errstate(over="ignore"):
        values = np.maximum(-np.expm1(epsilon - x), 0.0)
    cells = _Cells(eps_br, grid)
    padded = np.empty(n_nodes + 2 * grid + 1)
    keep = 1.0 / (1.0 + math.exp(-eps_pure))  # randomized response at eps_pure
    for _ in range(rounds):
        # Backwards: the bounded-range release of the pair, then the pure one.
        values = _one_round(values, cells, grid, 0, n_nodes - 1, padded)
        ahead = _chord(values, x, h, x + eps_pure)
        behind = _chord(values, x, h, x - eps_pure)
        values = np.minimum(keep * ahead + (1.0 - keep) * behind, 1.0)
    # Sums of non-negative terms: rounding is relative.
    return x, np.minimum(values * (1.0 + 1e-12 * (2 * rounds + 1)), 1.0)


@functools.lru_cache(maxsize=512)
def largest_alternating_scale(
    epsilon: float,
    delta: float,
    rounds: int,
    ratio: float,
    start: float,
    grid: int = ALTERNATING_GRID,
    rtol: float = 1e-3,
) -> float:
    """Largest ``eps0`` whose pairs (``eps0`` pure, ``ratio eps0`` BR) fit a budget.

    ``start`` is an ``eps0`` known to fit (the optimal composition of the
    pairs as two pure kinds, which the game never exceeds). Secant steps on
    ``log delta`` against ``log eps0`` inside a bracket [fits, refused]
    closed to ``rtol``; the returned end is certified by the computation.

    Examples
    --------
    >>> from dpsklearn.accounting import largest_alternating_scale
    >>> from dpsklearn.accounting import largest_two_kind_scale
    >>> pure = largest_two_kind_scale(1.0, 5.5e-6, 100, 100, 1.0)
    >>> mixed = largest_alternating_scale(1.0, 5.5e-6, 100, 1.0, pure)
    >>> bool(mixed > 1.2 * pure)
    True
    """
    log_target = math.log(delta)

    def excess(log_eps0):
        eps0 = math.exp(log_eps0)
        value = alternating_delta(eps0, ratio * eps0, rounds, epsilon, grid)
        if not value >= 0:  # NaN: not certified, so it does not fit
            return math.inf
        return (math.log(value) if value > 0 else -math.inf) - log_target

    # Per-release epsilons beyond about 50 are outside the game's floating
    # point (e^eps) and far beyond any useful calibration: keep the start.
    cap = math.log(50.0 / max(1.0, ratio))
    if math.log(start) + math.log(1.3) >= cap:
        return start
    lo, f_lo = math.log(start), excess(math.log(start))
    if f_lo > 0:  # should not happen; the pure composition is looser
        return start
    hi = lo + math.log(1.3)
    f_hi = excess(hi)
    while f_hi <= 0:
        lo, f_lo = hi, f_hi
        hi += math.log(1.3)
        if hi >= cap:
            return math.exp(lo)
        f_hi = excess(hi)
    for _ in range(60):
        if hi - lo <= math.log1p(rtol):
            break
        if math.isfinite(f_lo):
            guess = lo - f_lo * (hi - lo) / (f_hi - f_lo)
            width = hi - lo
            # Stay well inside the bracket so that it closes from both sides.
            guess = min(max(guess, lo + 0.1 * width), hi - 0.1 * width)
        else:
            guess = 0.5 * (lo + hi)
        f_guess = excess(guess)
        if f_guess <= 0:
            lo, f_lo = guess, f_guess
        else:
            hi, f_hi = guess, f_guess
    return math.exp(lo)
