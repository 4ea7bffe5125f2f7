"""Adaptive bounded-range composition at any size: blocks of the exact game.

The exact game of :mod:`._bounded_range` costs ``k^1.5`` and takes seconds
up to a few thousand releases. Beyond, ``k`` releases are cut into ``r``
blocks of at most :data:`BLOCK` releases and composed in two levels
(``docs/accounting_theory.rst``, "Any number of releases: blocks"):

1. **One block, every epsilon at once.** Started from loss ``x``, the game's
   value is ``V_{k1}(x) = delta_block(epsilon - x)``, so one run of the game
   on a window of ``x`` gives (upper bounds on) the block's whole privacy
   profile on the loss lattice of step ``h = eps0 / grid``.
2. **A pair that dominates the block.** The lower convex envelope of those
   points in ``y = e^epsilon`` lies above the true profile (which is
   convex), and is itself the profile of a pair whose privacy losses sit on
   the lattice (connect-the-dots, Doroshenko, Ghazi, Kamath, Kumar and
   Manurangsi 2022); mass beyond the window goes to an infinite loss. Every
   adaptively chosen block, whatever happened before, is dominated by that
   pair.
3. **Blocks compose as the product.** Adaptive composition of mechanisms
   each dominated by one pair is dominated by the product of the pairs
   (Dong, Roth and Su 2022, Theorem 3.2): the ``r``-fold convolution of the
   pair's loss distribution on the lattice, computed by FFT with a stated
   bound on its rounding error.

Each step only raises ``delta``, so the result is an upper bound; it is
within about 1.5 % of the direct game's ``delta`` at ``k = 20,000``
(``tests/test_bounded_range.py``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BLOCK", "blocks_delta", "compose_profile", "dominating_pair"]

#: Releases per block (the exact game on a block takes about 0.3 s).
BLOCK = 1000
# The window of a block's game, in standard deviations of its loss (Azuma:
# the loss leaves it with probability below e^-100); beyond it the profile
# is still an upper bound (the zCDP tail), only looser.
_SPAN_SD = 15.0
# Generous constant of the FFT rounding bound ||error||_2 <= c log2(N) u ||x||_2
# per transform (Higham 2002, Theorem 24.2, has a smaller one).
_FFT_CONSTANT = 10.0
_UNIT_ROUNDOFF = 2.0**-53


def block_profile(eps0, k1, grid):
    """Upper bounds on the privacy profile of ``k1`` adaptive ``eps0``-BR releases.

    Returns
    -------
    units : ndarray of int
        Lattice points ``i`` (epsilon ``i * eps0 / grid``), increasing.
    profile : ndarray
        Upper bounds on the tight ``delta`` at each point.
    """
    from ._bounded_range import _Cells, _one_round, _zcdp_tail

    h = eps0 / grid
    rho1 = eps0 * eps0 / 8.0
    mean = k1 * rho1
    sd = math.sqrt(k1) * eps0 / 2.0
    span = mean + _SPAN_SD * sd
    i_min = -math.ceil(span / h) - grid
    i_max = math.ceil((_SPAN_SD * sd) / h) + grid
    x = np.arange(i_min, i_max + 1, dtype=np.float64) * h
    n_nodes = x.size
    # Target 0: V_{k1}(x) is the block's delta at epsilon = -x.
    with np.errstate(over="ignore"):
        values = np.maximum(-np.expm1(-x), 0.0)
    cells = _Cells(eps0, grid)
    padded = np.empty(n_nodes + 2 * grid + 1)
    upper = np.empty((grid + 1, n_nodes))
    lower = np.empty((grid + 1, n_nodes))
    for j in range(1, k1 + 1):
        new = _one_round(values, cells, grid, 0, n_nodes - 1, padded, upper, lower)
        # Both are upper bounds on V_j: the zCDP tail of j rounds, and 0
        # where j maximal steps cannot reach epsilon = 0.
        np.minimum(new, _zcdp_tail(j * rho1, -x), out=new)
        new[x < -j * eps0 - 1e-9 * h] = 0.0
        values = new
    values = np.minimum(values * (1.0 + 1e-12 * (k1 + 1)), 1.0)
    units = -np.arange(i_min, i_max + 1)[::-1]
    return units, values[::-1]


def dominating_pair(units, profile, h):
    """A pair with lattice losses whose profile lies above ``profile``.

    Returns
    -------
    loss_units : ndarray of int
        The finite losses, in lattice steps.
    mass : ndarray
        Their probabilities under the first distribution.
    infinite : float
        The probability of an infinite loss.
    """
    y = np.exp(units * h)
    # Anchor (0, 1): delta -> sum P = 1 as y -> 0; the true convex profile
    # lies below the chord from there to the first point.
    xs = np.concatenate([[0.0], y])
    ds = np.concatenate([[1.0], profile])
    hull = [0]
    for i in range(1, xs.size):  # lower convex hull (monotone chain)
        while len(hull) >= 2:
            i1, i2 = hull[-2], hull[-1]
            cross = (xs[i2] - xs[i1]) * (ds[i] - ds[i1]) - (ds[i2] - ds[i1]) * (
                xs[i] - xs[i1]
            )
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    hull = np.asarray(hull)
    hx, hd = xs[hull], ds[hull]
    slopes = np.diff(hd) / np.diff(hx)
    # A kink at y_i of slope change Q_i is an atom (loss ln y_i, Q_i, y_i Q_i);
    # beyond the last point the profile stays at its last value: an atom of
    # infinite loss with that P-mass.
    right = np.concatenate([slopes[1:], [0.0]])
    q = np.maximum(right - slopes, 0.0)
    atoms = hull[1:] - 1
    return units[atoms], q * y[atoms], float(hd[-1])


def _convolve_power(mass, r):
    """The ``r``-fold self-convolution of ``mass`` and a bound on its error.

    Returns the array (length ``r (L - 1) + 1``) and ``e2``, a bound on the
    2-norm of its rounding error.
    """
    length = r * (mass.size - 1) + 1
    n = 1 << max(1, (length - 1).bit_length())
    spectrum = np.fft.rfft(mass, n)
    powered = spectrum**r
    out = np.fft.irfft(powered, n)[:length]
    # Each transform errs by c log2(n) u in relative 2-norm, the power by
    # about r u per entry: (r + 2) c log2(n) u ||out||_2 in all.
    bound = (r + 2) * _FFT_CONSTANT * math.log2(n) * _UNIT_ROUNDOFF
    e2 = bound * float(np.linalg.norm(out)) * 2.0
    return out, e2


def blocks_delta(eps0, k, epsilon, grid, block=BLOCK):
    """Upper bound on the delta of ``k`` adaptive ``eps0``-BR releases, by blocks."""
    r = math.ceil(k / block)
    k1 = math.ceil(k / r)  # r blocks of k1 >= k / r releases: more, not fewer
    h = eps0 / grid
    units, profile = block_profile(eps0, k1, grid)
    return compose_profile(units, profile, h, r, epsilon)


def compose_profile(units, profile, h, r, epsilon):
    """Upper bound on the delta at ``epsilon`` of ``r`` adaptive blocks.

    Each block has (upper bounds on) the privacy profile ``profile`` at the
    lattice points ``units * h``: the blocks are dominated by one lattice
    pair (:func:`dominating_pair`) and compose as its ``r``-fold product.
    """
    loss_units, mass, infinite = dominating_pair(units, profile, h)
    # Raising a loss only raises delta: fold the far lower tail up to
    # mean - 20 sd, which keeps the array short.
    finite = mass.sum()
    mean = float(np.dot(mass, loss_units)) / finite
    sd = math.sqrt(max(float(np.dot(mass, (loss_units - mean) ** 2)) / finite, 1.0))
    floor = math.floor(mean - 20.0 * sd)
    loss_units = np.maximum(loss_units, floor)
    lo, hi = int(loss_units.min()), int(loss_units.max())
    dense = np.zeros(hi - lo + 1)
    np.add.at(dense, loss_units - lo, mass)
    total, e2 = _convolve_power(dense, r)
    losses = (r * lo + np.arange(total.size)) * h
    keep = losses > epsilon
    weights = -np.expm1(epsilon - losses[keep])
    finite_part = float(np.dot(np.maximum(total[keep], 0.0), weights))
    # Cauchy-Schwarz: the rounding error of the weighted sum.
    error = e2 * float(np.linalg.norm(weights))
    infinite_part = -math.expm1(r * math.log1p(-min(infinite, 1.0)))
    delta = (finite_part + error) * (1.0 + 1e-12) + infinite_part
    return min(1.0, delta)
