"""Exact adaptive composition of bounded-range mechanisms (Dong, Durfee, Rogers 2020).

An ``eps0``-bounded-range (BR) mechanism, such as the exponential mechanism
at ``eps0``, has a privacy loss whose range on every pair of neighbours is
an interval ``[t - eps0, t]`` with ``t`` in ``[0, eps0]``. Every such pair is
a post-processing of *generalized randomized response* with parameter
``t``: two outcomes, of privacy loss ``t`` (probability ``p(t) = (e^eps0 -
e^t) / (e^eps0 - 1)`` under the first neighbour) and ``t - eps0``. When
``k`` BR mechanisms are chosen adaptively, the analyst picks ``t`` round by
round from what it has seen, and the tight ``delta`` at a target
``epsilon`` is the value of a game over the accumulated privacy loss ``x``
(Dong, Durfee and Rogers 2020, section 6):

    V_0(x) = (1 - e^(epsilon - x))_+,
    V_j(x) = sup_{0 <= t <= eps0} p(t) V_{j-1}(x + t)
                                  + (1 - p(t)) V_{j-1}(x + t - eps0),
    delta  = V_k(0).

One ``t`` for every round (their non-adaptive formula), or a privacy loss
distribution built from one worst-case pair, is not valid here: the
analyst's best ``t`` depends on the loss accumulated so far.

:func:`bounded_range_delta` evaluates the game numerically with a
discretisation that can only overstate ``delta`` (``docs/accounting_theory.rst``,
"Computing the game from above"):

* ``V_j`` is convex and non-increasing in ``u = e^-x``, so on a grid of
  step ``h = eps0 / grid`` in ``x`` the chord in ``u`` between two nodes
  lies above it, whatever ``grid`` is (a finer grid only brings the chords
  closer to ``V_j``);
* on that piecewise-chord function the supremum over ``t`` of each cell of
  width ``h`` is found in closed form (a function ``A + B s + C / s`` of
  ``s = e^t``), so no ``t`` is missed;
* below the computed window ``V_j`` is replaced by the zCDP tail bound of
  ``j`` rounds, above it by 1; both are upper bounds;
* the result is inflated by a relative floating-point slack.

:func:`bounded_range_max_epsilon0` inverts it in ``eps0``. The work is
``O(k^1.5 grid^2)``; the direct game uses ``grid = 16`` (one evaluation at
``k = 1000`` takes about 0.6 s; ``grid = 8`` certified 0.4 % less
``eps0``). Beyond ``DIRECT_MAX`` releases the game is played on blocks and
the blocks composed through their privacy profile (:func:`blocks_delta`),
at the cost of one block at any ``k``, on ``grid = 8``: a block's window is
wider, and 16 would cost about 5 s per evaluation.

In blocks, ``k`` releases are cut into ``r`` blocks of at most :data:`BLOCK`
releases and composed in two levels (``docs/accounting_theory.rst``, "Any
number of releases: blocks"):

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

import functools
import math

import numpy as np

from .._validation import COUNT, DELTA, FINITE_POSITIVE, NON_NEGATIVE, validate_params
from ._composition import largest_rdp_rho

__all__ = [
    "BLOCK",
    "blocks_delta",
    "bounded_range_delta",
    "bounded_range_max_epsilon0",
    "compose_profile",
    "dominating_pair",
]

#: Grid cells per ``eps0`` of the direct game's loss grid
#: (``docs/accounting_theory.rst``, "Computing the game from above").
DEFAULT_GRID = 16
#: Grid cells per ``eps0`` of a block's game (:func:`blocks_delta`):
#: its profile window is wider, so each cell costs more.
BLOCKS_GRID = 8
#: Up to this many releases the game is played directly; beyond, in blocks
#: of at most :data:`BLOCK` composed as a product (:func:`blocks_delta`).
DIRECT_MAX = 1500
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

# Nodes whose chance of being reached (or whose tail bound) is below this
# share of the target delta lie outside the computed window.
_TAIL_SHARE = 1e-4


def _tail_log(k, delta_hint):
    return math.log(k / (_TAIL_SHARE * delta_hint))


def _zcdp_tail(rho, epsilon_left):
    """``delta`` of a ``rho``-zCDP mechanism at ``epsilon_left`` (Bun and Steinke 2016).

    ``exp(-(e - rho)^2 / (4 rho))`` for ``e > rho``, else 1: the bound behind
    Proposition 1.3, valid for every adaptive composition of ``eps0``-BR
    mechanisms with ``rho = j eps0^2 / 8`` (Cesar and Rogers 2021).
    """
    e = np.asarray(epsilon_left, dtype=np.float64)
    out = np.ones_like(e)
    if rho <= 0:
        out[e >= 0] = 0.0
        return out
    above = e > rho
    out[above] = np.exp(-((e[above] - rho) ** 2) / (4.0 * rho))
    return out


def _grid_range(eps0, k, epsilon, grid, log_tail):
    """First and last node index (in steps of ``eps0 / grid``) the game can need."""
    h = eps0 / grid
    spread = math.sqrt(k * eps0 * eps0 * log_tail / 2.0)
    rho = k * eps0 * eps0 / 8.0
    low = max(
        -spread,
        -k * eps0,
        min(epsilon - rho - math.sqrt(4.0 * rho * log_tail), epsilon - k * eps0),
    )
    high = min(rho + spread, k * eps0)
    i_min = math.floor(low / h) - grid - 1
    i_max = max(math.ceil(high / h), math.ceil(epsilon / h)) + grid + 1
    return i_min, i_max


def game_work(eps0, k, epsilon, delta, grid=DEFAULT_GRID):
    """Cells the direct game evaluates (at most): k rounds of nodes, grid each."""
    i_min, i_max = _grid_range(eps0, k, epsilon, grid, _tail_log(k, delta))
    return k * (i_max - i_min + 1) * grid


class _Cells:
    """The supremum over ``t`` of one round on the chord functions, per node.

    Row ``c`` of ``up`` (``low``) holds ``V_{j-1}`` at ``x + c h``
    (``x - eps0 + c h``), ``c = 0..grid``, for each node ``x`` (a column).
    The cell ends ``t = c h`` land on nodes: no interpolation. Inside cell
    ``c`` both points move along one chord each, by the same fraction; in
    ``s = e^t`` the value is ``K0 + K1 s + K2 / s``, which can peak inside
    the cell only when ``K1, K2 < 0``, at ``s = sqrt(K2 / K1)``: both the
    ends and that point are evaluated, so no ``t`` is missed.
    """

    def __init__(self, eps0, grid):
        h = eps0 / grid
        cells = np.arange(grid, dtype=np.float64)
        q_end = np.expm1(np.arange(grid + 1) * h) / math.expm1(eps0)  # 1 - p(t)
        self.p_end, self.q_end = (1.0 - q_end)[:, None], q_end[:, None]
        self.em1h = math.expm1(-h)
        self.inv_em1h = 1.0 / self.em1h
        self.e_eps0 = math.exp(eps0)
        self.s_lo_col = np.exp(cells * h)[:, None]
        # s^2 = K2 / K1 = -(k2 / k1) e^(c h); its range in cell c.
        self.s2_scale = -self.s_lo_col
        self.s2_lo = np.exp(2 * cells * h)[:, None]
        self.s2_hi = np.exp(2 * (cells + 1) * h)[:, None]
        self.inv_em1 = 1.0 / math.expm1(eps0)

    def best(self, up, low):
        best = np.max(up * self.p_end + low * self.q_end, axis=0)
        a1, d1 = up[:-1], np.diff(up, axis=0)
        a2, d2 = low[:-1], np.diff(low, axis=0)
        k2 = d1 * self.e_eps0 - d2  # K2 = k2 * e^(c h) / em1h, and em1h < 0
        k1 = (a2 - a1) * (-self.em1h) + (d2 - d1)  # K1 * (-em1h)
        hump = (k2 > 0) & (k1 < 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            s2 = k2 / k1  # K2 / K1 = -(k2 / k1) e^(c h)
        s2 *= self.s2_scale
        np.clip(s2, self.s2_lo, self.s2_hi, out=s2)  # s^2 inside the cell
        s = np.sqrt(s2, out=s2)
        phi = self.s_lo_col / s  # e^-(t - c h)
        phi -= 1.0
        phi *= self.inv_em1h  # chord fraction, in [0, 1]
        q_t = s
        q_t -= 1.0
        q_t *= self.inv_em1  # 1 - p(t)
        d1 *= phi
        d1 += a1  # V_{j-1} at x + t, on its chord
        d2 *= phi
        d2 += a2  # V_{j-1} at x + t - eps0
        d2 *= q_t
        q_t -= 1.0
        d1 *= q_t
        d2 -= d1  # (1 - q) upper + q lower
        np.maximum(best, np.max(d2, axis=0, where=hump, initial=0.0), out=best)
        return best


def _windows(x, rows, n):
    """``x[c : c + n]`` for ``c < rows`` as one (rows, n) view of ``x``, no copy.

    ``x`` is contiguous and one-dimensional (numpy's ``sliding_window_view``
    gives the same view, but checks its arguments at many times the cost).
    """
    return np.ndarray((rows, n), dtype=x.dtype, buffer=x, strides=(x.itemsize,) * 2)


def _one_round(values, cells, grid, a, b, padded):
    """``max over t`` at the nodes ``a..b`` of one round before ``values``.

    ``V_{j-1}`` beyond the grid: below the first node its value there
    (it is non-decreasing), above the last node 1; both upper bounds.
    The rows of ``upper`` and ``lower`` are overlapping windows of
    ``padded``: read in place, not copied (the same values, so the same
    arithmetic; ``tests/test_game_identity.py``).
    """
    n_nodes = values.size
    padded[:grid] = values[0]
    padded[grid : grid + n_nodes] = values
    padded[grid + n_nodes :] = 1.0
    n_rows = b - a + 1
    upper = _windows(padded[a + grid :], grid + 1, n_rows)
    lower = _windows(padded[a:], grid + 1, n_rows)
    return np.minimum(cells.best(upper, lower), 1.0)


def _delta(eps0, k, epsilon, grid, delta_hint):
    """Upper bound on the adaptive ``delta``: the game, directly or in blocks.

    ``grid=None``: :data:`DEFAULT_GRID` directly, :data:`BLOCKS_GRID` in blocks.
    """
    if k <= DIRECT_MAX:
        return _game(eps0, k, epsilon, grid or DEFAULT_GRID, delta_hint)
    return blocks_delta(eps0, k, epsilon, grid or BLOCKS_GRID)


def _game(eps0, k, epsilon, grid, delta_hint):
    """Upper bound on ``V_k(0)``, the adaptive ``delta`` at ``epsilon``."""
    h = eps0 / grid
    rho1 = eps0 * eps0 / 8.0  # KL (and zCDP rho) of one round
    log_tail = _tail_log(k, delta_hint)

    def forward_reach(i):
        # After i rounds the loss under the first neighbour is a sum of
        # increments in ranges of width eps0 with mean <= eps0^2/8 (its KL):
        # by Azuma-Hoeffding it leaves [-s, i rho1 + s] with probability
        # below the tail share.
        s = math.sqrt(i * eps0 * eps0 * log_tail / 2.0)
        return max(-s, -i * eps0), min(i * rho1 + s, i * eps0)

    def zero_below(j):
        # V_j(x) = 0 when even j maximal steps cannot pass epsilon.
        return epsilon - j * eps0

    def tail_below(j):
        rho = j * rho1
        return epsilon - rho - math.sqrt(4.0 * rho * log_tail)

    i_min, i_max = _grid_range(eps0, k, epsilon, grid, log_tail)
    x = np.arange(i_min, i_max + 1, dtype=np.float64) * h
    n_nodes = x.size
    with np.errstate(over="ignore"):
        values = np.maximum(-np.expm1(epsilon - x), 0.0)  # V_0, exact at the nodes
    cells = _Cells(eps0, grid)
    padded = np.empty(n_nodes + 2 * grid + 1)
    for j in range(1, k + 1):
        i = k - j  # rounds already played when j remain
        reach_lo, reach_hi = forward_reach(i)
        lo = max(reach_lo, zero_below(j), tail_below(j))
        a = max(0, math.floor((lo - x[0]) / h) - 1)
        b = min(n_nodes - 1, math.ceil((reach_hi - x[0]) / h) + 1)
        new = np.empty_like(values)
        new[:a] = np.minimum(_zcdp_tail(j * rho1, epsilon - x[:a]), 1.0)
        new[max(a, b + 1) :] = 1.0
        # Exactly zero where j rounds cannot pass epsilon (with a margin
        # against rounding of the node positions).
        new[x < zero_below(j) - 1e-9 * h] = 0.0
        if b >= a:  # else nothing reachable lies between the two bounds
            window = _one_round(values, cells, grid, a, b, padded)
            window[x[a : b + 1] < zero_below(j) - 1e-9 * h] = 0.0
            new[a : b + 1] = window
        values = new
    delta = float(values[-i_min])
    # Every value is a sum of non-negative terms: rounding is relative.
    return min(1.0, delta * (1.0 + 1e-12 * (k + 1)))


# The game in blocks, for any number of releases.


def block_profile(eps0, k1, grid):
    """Upper bounds on the privacy profile of ``k1`` adaptive ``eps0``-BR releases.

    Returns
    -------
    units : ndarray of int
        Lattice points ``i`` (epsilon ``i * eps0 / grid``), increasing.
    profile : ndarray
        Upper bounds on the tight ``delta`` at each point.
    """
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
    for j in range(1, k1 + 1):
        new = _one_round(values, cells, grid, 0, n_nodes - 1, padded)
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
    corners = np.asarray(hull)
    hx, hd = xs[corners], ds[corners]
    slopes = np.diff(hd) / np.diff(hx)
    # A kink at y_i of slope change Q_i is an atom (loss ln y_i, Q_i, y_i Q_i);
    # beyond the last point the profile stays at its last value: an atom of
    # infinite loss with that P-mass.
    right = np.concatenate([slopes[1:], [0.0]])
    q = np.maximum(right - slopes, 0.0)
    atoms = corners[1:] - 1
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

@validate_params(
    {
        "eps0": [NON_NEGATIVE],
        "k": [COUNT],
        "epsilon": [NON_NEGATIVE],
        "grid": [COUNT, None],
    },
    prefer_skip_nested_validation=True,
)
def bounded_range_delta(
    eps0: float, k: int, epsilon: float, *, grid: int | None = None
) -> float:
    """An upper bound on the delta of ``k`` adaptive ``eps0``-bounded-range mechanisms.

    The tight delta at ``epsilon`` of any adaptive composition of ``k``
    mechanisms, each ``eps0``-bounded-range given the outputs before it
    (for example ``k`` exponential-mechanism answers at ``eps0``), is the
    value of Dong, Durfee and Rogers' (2020) game; this computes it on a
    grid of ``grid`` cells per ``eps0`` from above, so the result is never
    below the true delta (``docs/accounting_theory.rst``). Finer grids are
    tighter and slower (work grows as ``grid^2``). Beyond ``DIRECT_MAX =
    1500`` releases the game is played on blocks of at most 1,000, whose
    privacy profile is composed exactly (about 1.5 % more delta at 20,000
    releases; about a second at any ``k``).

    Parameters
    ----------
    eps0 : float
        Bounded-range parameter of each mechanism (>= 0).
    k : int
        Number of mechanisms (>= 1).
    epsilon : float
        Target epsilon (>= 0).
    grid : int, default=None
        Loss-grid cells per ``eps0``; None: 16 for the direct game (up to
        ``DIRECT_MAX`` releases), 8 for the blocks beyond.

    Returns
    -------
    delta : float

    Examples
    --------
    >>> import math
    >>> from dpsklearn.accounting import bounded_range_delta, kov_delta
    >>> # One round: max over t of p(t) (1 - e^(epsilon - t)), here at t = eps0/2.
    >>> d = bounded_range_delta(1.0, 1, 0.0)
    >>> math.isclose(d, math.tanh(0.25), rel_tol=1e-6)
    True
    >>> # 1,000 answers at 0.0168: within (1, 1e-5), which an eps0-DP
    >>> # accounting (optimal composition) cannot certify.
    >>> bounded_range_delta(0.0168, 1000, 1.0) < 1e-5 < kov_delta(0.0168, 1000, 1.0)
    True
    """
    eps0, epsilon = float(eps0), float(epsilon)
    if eps0 == 0 or k * eps0 <= epsilon:
        return 0.0
    grid = None if grid is None else int(grid)
    return _delta(eps0, int(k), epsilon, grid, delta_hint=1e-12)


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA],
        "k": [COUNT],
        "grid": [COUNT, None],
    },
    prefer_skip_nested_validation=True,
)
def bounded_range_max_epsilon0(
    epsilon: float,
    delta: float,
    k: int,
    *,
    grid: int | None = None,
    rtol: float = 5e-4,
) -> float:
    """The largest ``eps0`` whose ``k`` adaptive bounded-range releases fit a budget.

    ``k`` releases at the returned ``eps0`` are ``(epsilon, delta)``-DP.

    Inverts :func:`bounded_range_delta` in ``eps0`` (Newton and secant
    steps on ``log delta``, a few evaluations), from the safe side: the returned
    ``eps0`` is certified by the computation. Never below basic composition
    ``epsilon / k``, which needs no delta.

    Parameters
    ----------
    epsilon : float
        Target epsilon (> 0).
    delta : float
        Target delta, in [0, 1).
    k : int
        Number of releases (>= 1).
    grid : int, default=None
        Loss-grid cells per ``eps0`` (see :func:`bounded_range_delta`).
    rtol : float, default=5e-4
        Relative precision of the search.

    Returns
    -------
    eps0 : float

    Examples
    --------
    >>> from dpsklearn.accounting import bounded_range_max_epsilon0
    >>> round(bounded_range_max_epsilon0(1.0, 1e-5, 1000), 4)
    0.0169
    """
    grid = None if grid is None else int(grid)
    return _max_epsilon0(float(epsilon), float(delta), int(k), grid, float(rtol))


@functools.lru_cache(maxsize=256)
def _max_epsilon0(epsilon, delta, k, grid, rtol):
    basic = epsilon / k
    if delta == 0:
        return basic
    log_target = math.log(delta)

    def excess(eps0):
        # log(delta(eps0) / delta), > 0 when eps0 is too large.
        if k * eps0 <= epsilon:
            return -math.inf
        if eps0 > 700.0:  # e^eps0 overflows; one such release is not private
            return math.inf
        value = _delta(eps0, k, epsilon, grid, delta_hint=delta)
        return (math.log(value) if value > 0 else -math.inf) - log_target

    # Newton steps on log(delta) against log(eps0), from the RDP split made
    # about 7 % larger (the exact game's usual gain). The first slope is that
    # of the zCDP tail exp(-(epsilon - rho)^2 / (4 rho)), rho = k eps0^2/8:
    # (epsilon^2 - rho^2) / (2 rho); later ones are secants. Each step aims
    # a little past the root on the side not yet held, so that the bracket
    # [certified, refused] closes to rtol in a few evaluations.
    rdp = math.sqrt(8.0 * largest_rdp_rho(epsilon, delta) / k)
    x = math.log(max(basic, 1.07 * rdp))
    lo, hi = math.log(basic), math.inf  # certified, refused (log eps0)
    previous = None
    for _ in range(40):
        f = excess(math.exp(x))
        if f <= 0:
            lo = max(lo, x)
        else:
            hi = min(hi, x)
        if hi - lo <= math.log1p(rtol):
            break
        if previous is not None and previous[1] != f and math.isfinite(f):
            slope = (previous[1] - f) / (previous[0] - x)
        else:
            rho = k * math.exp(2.0 * x) / 8.0
            slope = max((epsilon * epsilon - rho * rho) / (2.0 * rho), 1.0)
        if math.isfinite(f):
            previous = (x, f)
        aim = -0.3 * math.log1p(rtol) if f > 0 else 0.3 * math.log1p(rtol)
        step = x - f / slope + aim if math.isfinite(f) and slope > 0 else math.nan
        if not lo < step < hi:  # outside the bracket: bisect it
            step = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 0.1
        x = step
    return math.exp(lo)


bounded_range_max_epsilon0.cache_clear = _max_epsilon0.cache_clear
bounded_range_max_epsilon0.cache_info = _max_epsilon0.cache_info
