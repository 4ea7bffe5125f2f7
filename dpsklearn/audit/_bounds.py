"""The statistics of an audit: binomial bounds, the epsilon bound, exact losses.

Two output distributions of neighbouring inputs satisfy ``P[M(D) in E] <=
exp(epsilon) P[M(D') in E] + delta`` for every event ``E``. Clopper-Pearson
bounds on the two probabilities turn counted runs into a lower confidence
bound on ``epsilon`` (Jagielski, Ullman and Oprea 2020); where the
distributions can be enumerated, :func:`exact_epsilon` gives the exact
value instead.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._validation import COUNT, DELTA, NON_NEGATIVE, OPEN_UNIT, validate_params

__all__ = ["clopper_pearson", "epsilon_lower_bound", "exact_epsilon"]


# --------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------


@validate_params(
    {
        "count": ["array-like", Integral],
        "n_trials": ["array-like", Integral],
        "alpha": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def clopper_pearson(
    count: ArrayLike, n_trials: ArrayLike, alpha: float
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """One-sided Clopper-Pearson bounds on a binomial probability.

    Parameters
    ----------
    count : int or array-like of int
        Number of successes.
    n_trials : int or array-like of int
        Number of trials (``>= count``).
    alpha : float
        Error probability of *each* bound, in (0, 1).

    Returns
    -------
    lower, upper : float or ndarray
        ``P[p >= lower] >= 1 - alpha`` and ``P[p <= upper] >= 1 - alpha``
        (exact, conservative). ``lower = 0`` when ``count = 0`` and
        ``upper = 1`` when ``count = n_trials``.

    Examples
    --------
    >>> from dpsklearn.audit import clopper_pearson
    >>> lo, hi = clopper_pearson(50, 100, 0.025)
    >>> bool(0.39 < lo < 0.5 < hi < 0.61)
    True
    """
    k = np.asarray(count, dtype=np.float64)
    n = np.asarray(n_trials, dtype=np.float64)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("count must lie in [0, n_trials].")
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)
    return lower[()], upper[()]


def _directional_bounds(count_0, n_0, count_1, n_1, delta, alpha_each):
    """Epsilon lower bounds in both directions (vectorised over events)."""
    lo0, hi0 = clopper_pearson(count_0, n_0, alpha_each)
    lo1, hi1 = clopper_pearson(count_1, n_1, alpha_each)
    with np.errstate(divide="ignore", invalid="ignore"):
        # direction 0: the event is likelier on neighbour 0
        b0 = np.log(np.maximum(lo0 - delta, 0.0) / hi1)
        b1 = np.log(np.maximum(lo1 - delta, 0.0) / hi0)
    b0 = np.where(np.isnan(b0), -np.inf, b0)
    b1 = np.where(np.isnan(b1), -np.inf, b1)
    return b0, b1


@validate_params(
    {
        "count_0": [Integral],
        "n_0": [COUNT],
        "count_1": [Integral],
        "n_1": [COUNT],
        "delta": [DELTA],
        "confidence": [OPEN_UNIT],
    },
    prefer_skip_nested_validation=True,
)
def epsilon_lower_bound(
    count_0: int,
    n_0: int,
    count_1: int,
    n_1: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> tuple[float, int]:
    """Lower confidence bound on epsilon from event counts on two neighbours.

    With ``alpha = 1 - confidence``, each of the four one-sided
    Clopper-Pearson bounds (lower and upper, on each side) is taken at level
    ``alpha / 4``: Bonferroni over the two directions, and within a direction
    over its two bounds. Then, with probability at least ``confidence``,

    ``epsilon >= max(ln((p0_lower - delta) / p1_upper),
    ln((p1_lower - delta) / p0_upper), 0)``.

    Parameters
    ----------
    count_0, count_1 : int
        Runs in which the event happened, on neighbour 0 and neighbour 1.
    n_0, n_1 : int
        Runs on each neighbour.
    delta : float, default=0.0
        The delta of the claimed (epsilon, delta) guarantee.
    confidence : float, default=0.95
        Overall confidence of the bound.

    Returns
    -------
    epsilon_lower : float
        The bound, ``>= 0`` (0 means no evidence of any privacy loss).
    direction : int
        The neighbour (0 or 1) on which the event is likelier in the winning
        direction.

    Examples
    --------
    >>> from dpsklearn.audit import epsilon_lower_bound
    >>> eps, side = epsilon_lower_bound(5000, 10000, 1840, 10000)
    >>> side, round(eps, 2)
    (0, 0.93)
    """
    alpha_each = (1.0 - confidence) / 4.0
    b0, b1 = _directional_bounds(count_0, n_0, count_1, n_1, delta, alpha_each)
    b0, b1 = float(b0), float(b1)
    direction = 0 if b0 >= b1 else 1
    return max(b0, b1, 0.0), direction


def _point_estimate(count_0, n_0, count_1, n_1, delta, direction):
    p0, p1 = count_0 / n_0, count_1 / n_1
    num, den = (p0, p1) if direction == 0 else (p1, p0)
    num -= delta
    if num <= 0:
        return 0.0
    if den == 0:
        return math.inf
    return max(math.log(num / den), 0.0)


# --------------------------------------------------------------------------
# Exact audits of discrete mechanisms
# --------------------------------------------------------------------------


def _one_way_exact(p, q, delta):
    # smallest y = exp(eps) with P(S) <= y Q(S) + delta for every event S:
    # y* = max over super-level sets S of the ratio p/q of (P(S) - delta)/Q(S).
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / q, np.where(p > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    cum_p = np.cumsum(p[order])
    cum_q = np.cumsum(q[order])
    # close each group of tied ratios, so prefixes never split a tie
    r_sorted = ratio[order]
    last = np.r_[r_sorted[1:] != r_sorted[:-1], True]
    cum_p, cum_q = cum_p[last], cum_q[last]
    excess = cum_p - delta
    if np.any((cum_q <= 0) & (excess > 1e-15)):
        return math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.where(cum_q > 0, excess / cum_q, -np.inf)
    y_star = float(np.max(y)) if y.size else 0.0
    return math.log(y_star) if y_star > 1.0 else 0.0


@validate_params(
    {
        "p": ["array-like"],
        "q": ["array-like"],
        "delta": [DELTA],
        "atol": [NON_NEGATIVE],
    },
    prefer_skip_nested_validation=True,
)
def exact_epsilon(
    p: ArrayLike, q: ArrayLike, delta: float = 0.0, *, atol: float = 1e-9
) -> float:
    """The exact privacy loss between two discrete output distributions.

    The smallest ``epsilon >= 0`` such that ``P(S) <= exp(epsilon) Q(S) +
    delta`` and ``Q(S) <= exp(epsilon) P(S) + delta`` for every set ``S`` of
    outcomes. At ``delta = 0`` it is ``max_x |ln(p_x / q_x)|``; for ``delta >
    0`` it is found exactly from the super-level sets of the likelihood ratio
    (the events that attain the hockey-stick divergence). Use it where the
    outputs of a mechanism on two neighbours can be enumerated: it has no
    sampling error, so a test can compare it to the claim directly.

    Parameters
    ----------
    p, q : array-like of float, same shape
        Output probabilities on neighbour 0 and neighbour 1, over the same
        outcomes (any shape; flattened). Each must sum to 1 within ``atol``;
        a truncated enumeration should put its missing tail mass in an extra
        outcome, or account for it in ``delta``.
    delta : float, default=0.0
    atol : float, default=1e-9
        Tolerance on the sums.

    Returns
    -------
    epsilon : float
        ``inf`` when an outcome with probability above ``delta`` on one side
        is impossible on the other.

    Examples
    --------
    Randomized response with probability 3/4 of telling the truth is
    ``ln 3``-DP:

    >>> import math
    >>> from dpsklearn.audit import exact_epsilon
    >>> math.isclose(exact_epsilon([0.75, 0.25], [0.25, 0.75]), math.log(3))
    True
    >>> exact_epsilon([0.75, 0.25], [0.25, 0.75], delta=0.5)
    0.0
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape}, {q.shape}.")
    if (
        np.any(p < 0)
        or np.any(q < 0)
        or not (np.all(np.isfinite(p)) and np.all(np.isfinite(q)))
    ):
        raise ValueError("p and q must be finite, non-negative probabilities.")
    if abs(p.sum() - 1.0) > atol or abs(q.sum() - 1.0) > atol:
        raise ValueError(
            f"p and q must each sum to 1 (within atol={atol}), got "
            f"{p.sum():.12g} and {q.sum():.12g}."
        )
    return max(_one_way_exact(p, q, delta), _one_way_exact(q, p, delta))
