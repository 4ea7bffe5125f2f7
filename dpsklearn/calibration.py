"""Calibration of the sparse vector engine and of per-query budgets.

Everything here is a pure function of public numbers (epsilon, delta, the
cutoff T, the number of queries m): it turns a *total* privacy budget into the
noise scales and thresholds that the mechanisms use, computed once at ``fit``
and memoised (SPEC section 8: estimator checks fit hundreds of times).

Sparse vector engine (SPEC section 2.4)
---------------------------------------
The guarantee of the engine has two parts:

* the *sparse vector part*: T AboveThreshold instances, each with threshold
  noise ``DLap(lam)`` and query noise ``DLap(2 lam)``, each
  ``eps0 = 2 / lam``-DP, composed over the T threshold draws;
* the *stability part*: the bad event that a query whose answer differs
  between neighbours passes. Over at most T threshold draws it has probability
  at most ``T p`` with ``p = P(DLap(2 lam) - DLap(lam) > w)``.

Three calibrations are offered (:func:`calibrate_sparse_vector`):

``"paper"``
    seed 002's calibration, ``lam = sqrt(32 T ln(2/delta)) / epsilon`` and
    ``w = 2 lam ln(2T/delta)``, justified by Dwork-Rothblum-Vadhan advanced
    composition at ``delta/2``. Admissible only when the DRV bound really is
    at most ``epsilon`` (it overspends at large epsilon).
``"exact"``
    ``lam = 2 / eps0`` with ``eps0`` the largest per-instance epsilon whose
    T-fold *optimal* composition (Kairouz, Oh and Viswanath 2015; the closed
    form for every epsilon is Murtagh and Vadhan 2016, Theorem 1.5) is
    ``(epsilon, delta/2)``-DP; ``w`` as for paper.
``"pure"``
    ``lam = 2T / epsilon`` (basic composition, sparse vector part
    ``(epsilon, 0)``) and ``w = 2 lam ln(T/delta)`` (stability part delta).

``"auto"`` takes the admissible calibration with the smallest threshold ``w``.

Per-query budgets (SPEC section 3.3)
------------------------------------
:func:`per_query_epsilon` splits ``(epsilon, delta)`` over ``m`` identical
releases by basic composition or through zero-concentrated DP.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "GaussianCalibration",
    "PER_QUERY_CALIBRATIONS",
    "SPARSE_VECTOR_CALIBRATIONS",
    "SparseVectorCalibration",
    "calibrate_confident_gnmax",
    "calibrate_sparse_vector",
    "drv_epsilon",
    "gnmax_sigma",
    "kov_delta",
    "kov_epsilon",
    "kov_max_epsilon0",
    "per_query_epsilon",
    "sparse_vector_candidates",
    "stability_tail_bound",
    "stability_tail_probability",
]

#: Calibrations of the sparse vector engine, in order of preference on ties.
SPARSE_VECTOR_CALIBRATIONS = ("pure", "exact", "paper")

#: Releases whose per-query epsilon :func:`per_query_epsilon` can calibrate.
_RELEASES = ("exponential", "laplace")

# zCDP cost of one eps-DP release (SPEC 3.3): a bounded-range exponential
# mechanism is eps^2/8-zCDP (Cesar and Rogers 2021); a pure eps-DP release
# of Laplace type is eps^2/2-zCDP (Bun and Steinke 2016, Proposition 1.4).
_ZCDP_RHO_FACTOR = {"exponential": 1.0 / 8.0, "laplace": 1.0 / 2.0}


# --------------------------------------------------------------------------
# Input validation (SPEC section 6: name the parameter and the allowed values)
# --------------------------------------------------------------------------


def _check_epsilon(epsilon, name="epsilon"):
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise ValueError(
            f"{name} must be a finite real number > 0, got {epsilon!r}."
        )
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"{name} must be a finite real number > 0, got {epsilon!r}.")
    return epsilon


def _check_delta(delta, *, allow_zero, name="delta"):
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise ValueError(f"{name} must be a real number in {interval}, got {delta!r}.")
    delta = float(delta)
    low_ok = delta >= 0 if allow_zero else delta > 0
    if not (low_ok and delta < 1):  # also rejects NaN
        raise ValueError(f"{name} must be a real number in {interval}, got {delta!r}.")
    return delta


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def _check_positive_float(value, name):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}.")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}.")
    return value


def _check_choice(value, allowed, name):
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {choices}; got {value!r}.")
    return value


# --------------------------------------------------------------------------
# Stability part: the exact tail of DLap(2 lam) - DLap(lam)
# --------------------------------------------------------------------------


def _tail_n(threshold):
    """Smallest integer n with n > threshold (the difference is an integer)."""
    return math.floor(threshold) + 1


def _log_tail_at_least(n, b, log_b):
    """log P(D >= n) for an integer n >= 1, D = DLap(2 lam) - DLap(lam).

    Derivation (SPEC 2.4). With ``a = b`` and ``c = b**2`` the geometric
    parameters of DLap(2 lam) and DLap(lam), the pmf of D = Z1 + (-Z2) (both
    symmetric) is, for d >= 0, a convolution of two two-sided geometric
    series::

        P(D = d) = K [ c^d (1/(1-ac) - a/(a-c)) + a^d (1/(1-ac) + c/(a-c)) ]

    with ``K = (1-a)(1-c) / ((1+a)(1+c)) = (1-b)^2 / (1+b^2)``. Summing the
    two geometric tails from d = n and simplifying with ``a = b, c = b^2``::

        P(D >= n) = b^n / (1+b+b^2) * [ (1+b) - b^(n+1) / (1+b^2) ].

    The first term alone is SPEC's bound; the bracket lies in (1/2, 2), so
    the product is well conditioned and only ``b^n`` needs log space.
    """
    # ``log_b = -1/(2 lam)`` is passed exactly, not recomputed from ``b``.
    bracket = (1.0 + b) - math.exp((n + 1) * log_b) / (1.0 + b * b)
    return n * log_b + math.log(bracket) - math.log1p(b + b * b)


def _b_of(noise_scale):
    log_b = -1.0 / (2.0 * noise_scale)
    return math.exp(log_b), log_b


def stability_tail_probability(noise_scale, threshold):
    """Exact probability that the stability test passes an unstable query.

    Returns ``P(Z1 - Z2 > w)`` for independent ``Z1 ~ DLap(2 lam)`` and
    ``Z2 ~ DLap(lam)``, where ``DLap(t)`` has ``P(z) = (1-a)/(1+a) a^|z|``,
    ``a = exp(-1/t)`` (SPEC sections 2.3-2.4). Since ``Z1 - Z2`` is an
    integer the event is ``Z1 - Z2 >= floor(w) + 1``.

    Parameters
    ----------
    noise_scale : float
        The threshold noise scale ``lam`` (> 0); the query noise has scale
        ``2 lam``.
    threshold : float
        The threshold ``w`` (any finite real).

    Returns
    -------
    p : float
        With ``b = exp(-1/(2 lam))`` and ``n = floor(w) + 1 >= 1``,
        ``p = b^n / (1+b+b^2) * ((1+b) - b^(n+1) / (1+b^2))``; for ``n <= 0``
        the symmetry of ``Z1 - Z2`` gives ``1 - P(Z1 - Z2 >= 1 - n)``.

    See Also
    --------
    stability_tail_bound : the simpler upper bound of SPEC 2.4.

    Examples
    --------
    >>> from dpsklearn.calibration import stability_tail_probability
    >>> p = stability_tail_probability(10.0, 100.0)
    >>> bool(p < 1e-2 / 2)
    True
    """
    lam = _check_positive_float(noise_scale, "noise_scale")
    if isinstance(threshold, bool) or not isinstance(threshold, Real):
        raise ValueError(f"threshold must be a finite real number, got {threshold!r}.")
    w = float(threshold)
    if not math.isfinite(w):
        raise ValueError(f"threshold must be a finite real number, got {threshold!r}.")
    b, log_b = _b_of(lam)
    n = _tail_n(w)
    if n >= 1:
        return math.exp(_log_tail_at_least(n, b, log_b))
    # D is symmetric: P(D >= n) = 1 - P(D <= n - 1) = 1 - P(D >= 1 - n).
    return -math.expm1(_log_tail_at_least(1 - n, b, log_b))


def stability_tail_bound(noise_scale, threshold):
    """SPEC 2.4's upper bound on :func:`stability_tail_probability`.

    Parameters
    ----------
    noise_scale : float
        The threshold noise scale ``lam`` (> 0).
    threshold : float
        The threshold ``w``.

    Returns
    -------
    bound : float
        ``b^(floor(w)+1) (1+b) / (1+b+b^2)`` with ``b = exp(-1/(2 lam))``,
        capped at 1. It is below ``exp(-w / (2 lam))``.

    Examples
    --------
    >>> from dpsklearn.calibration import stability_tail_bound
    >>> round(stability_tail_bound(1.0, 0.0), 4)  # b (1 + b) / (1 + b + b^2)
    0.4935
    """
    lam = _check_positive_float(noise_scale, "noise_scale")
    if isinstance(threshold, bool) or not isinstance(threshold, Real):
        raise ValueError(f"threshold must be a finite real number, got {threshold!r}.")
    w = float(threshold)
    if not math.isfinite(w):
        raise ValueError(f"threshold must be a finite real number, got {threshold!r}.")
    b, log_b = _b_of(lam)
    log_bound = _tail_n(w) * log_b + math.log1p(b) - math.log1p(b + b * b)
    return math.exp(min(0.0, log_bound))


# --------------------------------------------------------------------------
# Composition of k pure eps0-DP mechanisms
# --------------------------------------------------------------------------


def drv_epsilon(eps0, k, delta_prime):
    """Advanced composition (Dwork, Rothblum and Vadhan 2010, Theorem III.3).

    k mechanisms, each ``eps0``-DP, compose to ``(epsilon, delta')``-DP with
    ``epsilon = sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1)``
    (SPEC section 4). This is the formula itself, not ``min`` with basic
    composition.

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
    >>> from dpsklearn.calibration import drv_epsilon
    >>> round(drv_epsilon(0.01, 100, 1e-5), 4)
    0.4899
    """
    eps0 = float(eps0)
    if not (eps0 >= 0):
        raise ValueError(f"eps0 must be >= 0, got {eps0!r}.")
    k = _check_count(k, "k")
    delta_prime = _check_delta(delta_prime, allow_zero=False, name="delta_prime")
    try:
        growth = math.expm1(eps0)
    except OverflowError:
        return math.inf
    return math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * eps0 + k * eps0 * growth


def _kov_log_delta(eps0, k, epsilon):
    """log of the optimal-composition delta (``-inf`` when it is 0).

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
    # delta <= 1; rounding in the sum may exceed it by a few ulps.
    return min(0.0, float(top + np.log(np.sum(np.exp(terms - top)))))


def kov_delta(eps0, k, epsilon):
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
    >>> from dpsklearn.calibration import kov_delta
    >>> # k = 1: delta = (e^eps0 - e^epsilon) / (1 + e^eps0)
    >>> d = kov_delta(1.0, 1, 0.5)
    >>> math.isclose(d, (math.e - math.exp(0.5)) / (1 + math.e))
    True
    """
    eps0 = float(eps0)
    epsilon = float(epsilon)
    if not (eps0 >= 0 and math.isfinite(eps0)):
        raise ValueError(f"eps0 must be a finite real number >= 0, got {eps0!r}.")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite real number >= 0, got {epsilon!r}.")
    k = _check_count(k, "k")
    return math.exp(_kov_log_delta(eps0, k, epsilon))


def kov_max_epsilon0(epsilon, delta, k):
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
    >>> from dpsklearn.calibration import kov_max_epsilon0
    >>> # k = 1 has the closed form log((e^epsilon + delta) / (1 - delta))
    >>> e0 = kov_max_epsilon0(1.0, 1e-3, 1)
    >>> math.isclose(e0, math.log((math.e + 1e-3) / (1 - 1e-3)), rel_tol=1e-9)
    True
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, allow_zero=True)
    k = _check_count(k, "k")
    return _kov_max_epsilon0(epsilon, delta, k)


@functools.lru_cache(maxsize=1024)
def _kov_max_epsilon0(epsilon, delta, k):
    lo = epsilon / k  # delta(lo) = 0: basic composition
    if delta == 0:
        return lo
    log_target = math.log(delta)

    def ok(e0):
        return _kov_log_delta(e0, k, epsilon) <= log_target

    hi = 2.0 * lo
    while ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # delta -> 1 as eps0 grows, so this is never reached
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


def kov_epsilon(eps0, k, delta):
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
    >>> from dpsklearn.calibration import kov_epsilon, drv_epsilon
    >>> bool(kov_epsilon(0.01, 100, 1e-5) < min(1.0, drv_epsilon(0.01, 100, 1e-5)))
    True
    """
    eps0 = float(eps0)
    if not (eps0 >= 0 and math.isfinite(eps0)):
        raise ValueError(f"eps0 must be a finite real number >= 0, got {eps0!r}.")
    k = _check_count(k, "k")
    delta = _check_delta(delta, allow_zero=True)
    return _kov_epsilon(eps0, k, delta)


@functools.lru_cache(maxsize=1024)
def _kov_epsilon(eps0, k, delta):
    hi = k * eps0  # delta(hi) = 0
    if delta == 0 or eps0 == 0:
        return hi
    log_target = math.log(delta)
    if _kov_log_delta(eps0, k, 0.0) <= log_target:
        return 0.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-13 * hi:
            break
        if _kov_log_delta(eps0, k, mid) <= log_target:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------
# Sparse vector calibration (SPEC 2.4)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SparseVectorCalibration:
    """The frozen noise scale and threshold of a sparse vector engine.

    Attributes
    ----------
    name : {"paper", "exact", "pure"}
        Which calibration produced it.
    epsilon : float
        The epsilon given to the sparse vector part.
    delta : float
        The total delta (sparse vector part plus stability part).
    cutoff : int
        T, the number of threshold draws paid for.
    noise_scale : float
        ``lam``: threshold noise ``DLap(lam)``, query noise ``DLap(2 lam)``.
    threshold : float
        ``w``.
    per_instance_epsilon : float
        ``eps0 = 2 / lam``, the epsilon of one AboveThreshold instance.
    composed_epsilon : float
        What the calibration's own composition theorem gives for T instances
        of eps0 at the sparse vector part's delta (DRV for paper, optimal
        KOV composition for exact, ``T eps0`` for pure). At most ``epsilon``
        for an admissible calibration.
    tail_probability : float
        Exact ``p = P(DLap(2 lam) - DLap(lam) > w)``; the stability part's
        delta is at most ``T p``.

    Examples
    --------
    >>> from dpsklearn.calibration import calibrate_sparse_vector
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100, calibration="pure")
    >>> cal.noise_scale, cal.sparse_vector_delta
    (200.0, 0.0)
    """

    name: str
    epsilon: float
    delta: float
    cutoff: int
    noise_scale: float
    threshold: float
    per_instance_epsilon: float
    composed_epsilon: float
    tail_probability: float

    @property
    def sparse_vector_delta(self):
        """The delta of the sparse vector part (0 for ``pure``)."""
        return 0.0 if self.name == "pure" else self.delta / 2.0

    @property
    def stability_delta(self):
        """The delta reserved for the stability part (its bad event)."""
        return self.delta - self.sparse_vector_delta

    @property
    def admissible(self):
        """Whether the composed epsilon and the stability bound fit the budget."""
        return (
            self.composed_epsilon <= self.epsilon * (1 + 1e-12)
            and self.cutoff * self.tail_probability <= self.stability_delta
        )


def _make(name, epsilon, delta, cutoff, lam, w, composed):
    return SparseVectorCalibration(
        name=name,
        epsilon=epsilon,
        delta=delta,
        cutoff=cutoff,
        noise_scale=lam,
        threshold=w,
        per_instance_epsilon=2.0 / lam,
        composed_epsilon=composed,
        tail_probability=stability_tail_probability(lam, w),
    )


def _paper(epsilon, delta, cutoff):
    # Seed 002, Algorithm 3: lam from advanced composition at delta/2 (SPEC 2.4);
    # w puts P(pass | unstable) < exp(-w / (2 lam)) = delta / (2T) per draw.
    lam = math.sqrt(32.0 * cutoff * math.log(2.0 / delta)) / epsilon
    w = 2.0 * lam * math.log(2.0 * cutoff / delta)
    composed = drv_epsilon(2.0 / lam, cutoff, delta / 2.0)
    return _make("paper", epsilon, delta, cutoff, lam, w, composed)


def _exact(epsilon, delta, cutoff):
    # Optimal composition (KOV) of T AboveThreshold instances at delta/2.
    eps0 = _kov_max_epsilon0(epsilon, delta / 2.0, cutoff)
    log_target = math.log(delta / 2.0)
    lam = 2.0 / eps0
    # Re-verify with the eps0 = 2 / lam the engine really uses (one ulp of
    # rounding in 2 / (2 / eps0) must not tip it over the budget).
    while _kov_log_delta(2.0 / lam, cutoff, epsilon) > log_target:
        lam *= 1.0 + 1e-12
    w = 2.0 * lam * math.log(2.0 * cutoff / delta)
    # delta(epsilon) <= delta/2 was just checked, so the composed epsilon is
    # at most epsilon; the bisection in kov_epsilon may overshoot by 1e-13.
    composed = min(epsilon, _kov_epsilon(2.0 / lam, cutoff, delta / 2.0))
    return _make("exact", epsilon, delta, cutoff, lam, w, composed)


def _pure(epsilon, delta, cutoff):
    # Basic composition: T instances of epsilon/T; the whole delta goes to the
    # stability part, P(pass | unstable) < exp(-w / (2 lam)) = delta / T.
    lam = 2.0 * cutoff / epsilon
    w = 2.0 * lam * math.log(cutoff / delta)
    return _make("pure", epsilon, delta, cutoff, lam, w, 2.0 * cutoff / lam)


_SPARSE_VECTOR_BUILDERS = {"paper": _paper, "exact": _exact, "pure": _pure}


@functools.lru_cache(maxsize=1024)
def _candidates(epsilon, delta, cutoff):
    out = {}
    for name in SPARSE_VECTOR_CALIBRATIONS:
        out[name] = _SPARSE_VECTOR_BUILDERS[name](epsilon, delta, cutoff)
    return out


def _validate_sv(epsilon, delta, cutoff):
    return (
        _check_epsilon(epsilon),
        _check_delta(delta, allow_zero=False),
        _check_count(cutoff, "max_unstable"),
    )


def sparse_vector_candidates(epsilon, delta, cutoff):
    """All sparse vector calibrations for a budget; None where not admissible.

    Parameters
    ----------
    epsilon : float
        Epsilon of the sparse vector part (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    cutoff : int
        T, the number of threshold draws (the estimators' ``max_unstable``).

    Returns
    -------
    candidates : dict of str to SparseVectorCalibration or None
        Keys ``"paper"``, ``"exact"``, ``"pure"``. ``"paper"`` is None when
        its DRV composed epsilon exceeds ``epsilon``.

    Examples
    --------
    >>> from dpsklearn.calibration import sparse_vector_candidates
    >>> cands = sparse_vector_candidates(50.0, 1e-5, 100)
    >>> cands["paper"] is None, cands["exact"].name
    (True, 'exact')
    """
    epsilon, delta, cutoff = _validate_sv(epsilon, delta, cutoff)
    cands = _candidates(epsilon, delta, cutoff)
    return {name: (c if c.admissible else None) for name, c in cands.items()}


def calibrate_sparse_vector(epsilon, delta, cutoff, calibration="auto"):
    """Noise scale and threshold of the sparse vector engine (SPEC 2.4).

    Parameters
    ----------
    epsilon : float
        Epsilon of the sparse vector part (finite, > 0).
    delta : float
        Total delta, in (0, 1): half to the sparse vector part and half to the
        stability part for ``"paper"`` and ``"exact"``, all of it to the
        stability part for ``"pure"``.
    cutoff : int
        T, the number of threshold draws (``max_unstable``, >= 1).
    calibration : {"auto", "paper", "exact", "pure"}, default="auto"
        ``"auto"`` takes the admissible calibration with the smallest
        threshold ``w``.

    Returns
    -------
    calibration : SparseVectorCalibration
        Its ``name`` says which calibration was used.

    Raises
    ------
    ValueError
        For a bad input (naming ``epsilon``, ``delta``, ``max_unstable`` or
        ``calibration``), or when ``"paper"`` is requested where its composed
        epsilon exceeds ``epsilon``.

    Notes
    -----
    Memoised on its inputs (``calibrate_sparse_vector.cache_info()``).

    Examples
    --------
    >>> from dpsklearn.calibration import calibrate_sparse_vector
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
    >>> cal.name, round(cal.threshold, -1)
    ('exact', 2580.0)
    """
    epsilon, delta, cutoff = _validate_sv(epsilon, delta, cutoff)
    calibration = _check_choice(
        calibration, ("auto", *SPARSE_VECTOR_CALIBRATIONS), "calibration"
    )
    return _calibrate_cached(epsilon, delta, cutoff, calibration)


@functools.lru_cache(maxsize=1024)
def _calibrate_cached(epsilon, delta, cutoff, calibration):
    cands = _candidates(epsilon, delta, cutoff)
    if calibration != "auto":
        chosen = cands[calibration]
        if not chosen.admissible:
            raise ValueError(
                f"calibration={calibration!r} is not admissible for epsilon="
                f"{epsilon!r}, delta={delta!r}, max_unstable={cutoff}: its "
                f"composed epsilon is {chosen.composed_epsilon:.6g} > epsilon="
                f"{epsilon!r}. Use calibration='auto', 'exact' or 'pure'."
            )
        return chosen
    admissible = [c for c in cands.values() if c.admissible]
    order = {name: i for i, name in enumerate(SPARSE_VECTOR_CALIBRATIONS)}
    return min(admissible, key=lambda c: (c.threshold, order[c.name]))


calibrate_sparse_vector.cache_info = _calibrate_cached.cache_info
calibrate_sparse_vector.cache_clear = _calibrate_cached.cache_clear


# --------------------------------------------------------------------------
# Per-query epsilon for m identical releases (SPEC 3.3)
# --------------------------------------------------------------------------


def _per_query_basic(epsilon, delta, m, release):
    # Basic composition: m releases of epsilon / m (delta unused).
    return epsilon / m


def _per_query_zcdp(epsilon, delta, m, release):
    # Total rho = m * factor * eps_q^2 must satisfy the zCDP -> (eps, delta)
    # conversion rho + 2 sqrt(rho ln(1/delta)) <= epsilon (Bun and Steinke
    # 2016, Proposition 1.3). With L = ln(1/delta) the largest rho is
    # (sqrt(L + epsilon) - sqrt(L))^2 = (epsilon / (sqrt(L + epsilon) +
    # sqrt(L)))^2, the second form free of cancellation.
    if delta == 0:
        return None
    log_inv = -math.log(delta)
    sqrt_rho = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    return sqrt_rho / math.sqrt(m * _ZCDP_RHO_FACTOR[release])


def _per_query_rdp(epsilon, delta, m, release):
    # The m releases are each (factor * eps_q^2)-zCDP, i.e. RDP of order alpha
    # at most alpha * factor * eps_q^2 (Bun and Steinke 2016, Definition 1.1;
    # the exponential mechanism through bounded range, Cesar and Rogers 2021),
    # and RDP composes by adding curves under adaptive choice of the queries
    # (Mironov 2017, Proposition 1). The total curve alpha * rho is converted
    # to (epsilon, delta) by dp_accounting's RDP accountant, whose conversion
    # (Canonne, Kamath and Steinke 2020) is tighter than zCDP's
    # rho + 2 sqrt(rho ln(1/delta)): at (1, 1e-5) it certifies rho = 0.0306
    # where zCDP certifies 0.0208, so eps_q is 21 % larger.
    if delta == 0:
        return None
    rho = _largest_rdp_rho(epsilon, delta)
    # A hair below the bisection's safe end, so that the accountant's own
    # composition of the m events never lands a rounding error above epsilon.
    return math.sqrt(rho / (m * _ZCDP_RHO_FACTOR[release])) * (1.0 - 1e-9)


def _zcdp_rdp_epsilon(rho, delta):
    """Epsilon at ``delta`` of the RDP curve ``alpha * rho`` (dp_accounting)."""
    import dp_accounting as dpa

    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    accountant.compose(dpa.ZCDpEvent(rho=rho))
    return float(accountant.get_epsilon(delta))


def _largest_certified(certify, epsilon, rtol):
    """Largest ``x`` with ``certify(x) <= epsilon``, from the safe side.

    ``certify`` increases with ``x``; bisection on ``log x`` to relative
    precision ``rtol``.
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


@functools.lru_cache(maxsize=256)
def _largest_rdp_rho(epsilon, delta, rtol=1e-9):
    return _largest_certified(
        lambda rho: _zcdp_rdp_epsilon(rho, delta), epsilon, rtol
    )


#: Per-query calibrators: name -> f(epsilon, delta, m, release) returning the
#: per-query epsilon, or None where not admissible.
PER_QUERY_CALIBRATIONS = {
    "basic": _per_query_basic,
    "zcdp": _per_query_zcdp,
    "rdp": _per_query_rdp,
}


def per_query_epsilon(
    epsilon, delta, n_queries, release="exponential", calibration="auto"
):
    """Per-query epsilon for ``n_queries`` identical releases (SPEC 3.3).

    The m releases together are ``(epsilon, delta)``-DP.

    Parameters
    ----------
    epsilon : float
        Total epsilon (finite, > 0).
    delta : float
        Total delta, in [0, 1). ``"zcdp"`` needs ``delta > 0``.
    n_queries : int
        m, the number of releases (``max_queries``, >= 1).
    release : {"exponential", "laplace"}, default="exponential"
        ``"exponential"``: a bounded-range exponential mechanism,
        ``eps_q^2 / 8``-zCDP; ``"laplace"``: a pure ``eps_q``-DP release of
        Laplace type, ``eps_q^2 / 2``-zCDP.
    calibration : {"auto", "basic", "zcdp", "rdp"}, default="auto"
        ``"basic"``: ``eps_q = epsilon / m``. ``"zcdp"``: the largest eps_q
        with ``rho + 2 sqrt(rho ln(1/delta)) <= epsilon`` for the total
        ``rho``. ``"rdp"``: the same total zCDP ``rho`` read as the RDP
        curve ``alpha * rho`` and converted by dp_accounting's RDP
        accountant (a tighter conversion; the largest ``rho`` it certifies is
        found by bisection). ``"auto"``: the largest eps_q of the admissible
        ones, and the name of the one it took.

    Returns
    -------
    eps_q : float
        The per-query epsilon.
    name : str
        The calibration used (``"basic"``, ``"zcdp"`` or ``"rdp"``).

    Notes
    -----
    Memoised on its inputs (``per_query_epsilon.cache_info()``).

    Examples
    --------
    >>> from dpsklearn.calibration import per_query_epsilon
    >>> per_query_epsilon(1.0, 1e-5, 1)
    (1.0, 'basic')
    >>> eps_q, name = per_query_epsilon(1.0, 1e-5, 1000, calibration="zcdp")
    >>> name, round(eps_q, 4)
    ('zcdp', 0.0129)
    >>> eps_q, name = per_query_epsilon(1.0, 1e-5, 1000)
    >>> name, round(eps_q, 4)
    ('rdp', 0.0156)
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, allow_zero=True)
    m = _check_count(n_queries, "max_queries")
    release = _check_choice(release, _RELEASES, "release")
    calibration = _check_choice(
        calibration, ("auto", *PER_QUERY_CALIBRATIONS), "calibration"
    )
    return _per_query_cached(epsilon, delta, m, release, calibration)


@functools.lru_cache(maxsize=1024)
def _per_query_cached(epsilon, delta, m, release, calibration):
    if calibration != "auto":
        eps_q = PER_QUERY_CALIBRATIONS[calibration](epsilon, delta, m, release)
        if eps_q is None:
            raise ValueError(
                f"calibration={calibration!r} needs delta > 0, got delta={delta!r}."
            )
        return eps_q, calibration
    best = None
    for name, calibrator in PER_QUERY_CALIBRATIONS.items():
        eps_q = calibrator(epsilon, delta, m, release)
        if eps_q is not None and (best is None or eps_q > best[0]):
            best = (eps_q, name)
    return best


per_query_epsilon.cache_info = _per_query_cached.cache_info
per_query_epsilon.cache_clear = _per_query_cached.cache_clear


# --------------------------------------------------------------------------
# Gaussian noisy argmax: GNMax and Confident-GNMax (SPEC 3.1, 3.3)
# --------------------------------------------------------------------------

#: Calibrations of the Gaussian mechanisms, in order of preference on ties.
GAUSSIAN_CALIBRATIONS = ("rdp", "zcdp")

# Replace-one sensitivities on vote counts (SPEC 3.1): one record changes one
# teacher, which moves one vote from one class to another. The largest count
# moves by at most 1; the count vector by (+1, -1), L2 norm sqrt(2).
_TOP_COUNT_SENSITIVITY = 1.0
_COUNT_VECTOR_SENSITIVITY = math.sqrt(2.0)


@dataclass(frozen=True)
class GaussianCalibration:
    """Noise scales of a Gaussian vote mechanism for its worst-case run.

    Attributes
    ----------
    name : {"rdp", "zcdp"}
        The conversion that certified the total: dp_accounting's RDP
        accountant, or zCDP with ``epsilon = rho + 2 sqrt(rho ln(1/delta))``.
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
    >>> from dpsklearn.calibration import calibrate_confident_gnmax
    >>> cal = calibrate_confident_gnmax(8.0, 1e-5, 2000, 2000)
    >>> cal.name, bool(cal.certified_epsilon <= 8.0)
    ('rdp', True)
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


def _gaussian_dp_events(rho, m, answers, threshold_share):
    """The worst-case Gaussian events and sigmas at a total ``rho``.

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


def _rdp_epsilon(sigma1, sigma2, m, answers, delta):
    """Epsilon at ``delta`` of the worst case, from dp_accounting's RDP accountant."""
    import dp_accounting as dpa

    accountant = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
    )
    # GaussianDpEvent takes sigma / sensitivity; the replace-one sensitivities
    # are fed directly (SPEC section 4).
    if sigma1 is not None:
        accountant.compose(
            dpa.GaussianDpEvent(noise_multiplier=sigma1 / _TOP_COUNT_SENSITIVITY), m
        )
    accountant.compose(
        dpa.GaussianDpEvent(noise_multiplier=sigma2 / _COUNT_VECTOR_SENSITIVITY),
        answers,
    )
    return float(accountant.get_epsilon(delta))


def _zcdp_epsilon(rho, delta):
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@functools.lru_cache(maxsize=1024)
def _calibrate_gaussian_cached(epsilon, delta, m, answers, share, calibration, rtol):
    names = GAUSSIAN_CALIBRATIONS if calibration == "auto" else (calibration,)
    best = None
    for name in names:
        if name == "zcdp":
            # Largest rho with rho + 2 sqrt(rho ln(1/delta)) <= epsilon, in the
            # cancellation-free form (sqrt(L + eps) - sqrt(L))^2.
            log_inv = math.log(1.0 / delta)
            rho = (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2
            rho *= 1.0 - 1e-12  # stay on the safe side of rounding

            def certify(r):
                return _zcdp_epsilon(r, delta)
        else:

            def certify(r):
                s1, s2 = _gaussian_dp_events(r, m, answers, share)
                return _rdp_epsilon(s1, s2, m, answers, delta)

            # The largest rho certified within epsilon (epsilon(rho) increases
            # with rho).
            rho = _largest_certified(certify, epsilon, rtol)
        sigma1, sigma2 = _gaussian_dp_events(rho, m, answers, share)
        candidate = GaussianCalibration(
            name=name,
            epsilon=epsilon,
            delta=delta,
            max_queries=m,
            max_answers=answers,
            sigma_threshold=sigma1,
            sigma_argmax=sigma2,
            rho=rho,
            certified_epsilon=certify(rho),
        )
        if best is None or candidate.rho > best.rho:
            best = candidate
    return best


def _check_share(threshold_share):
    if isinstance(threshold_share, bool) or not isinstance(threshold_share, Real):
        raise ValueError(
            f"threshold_share must be a real number in (0, 1), got {threshold_share!r}."
        )
    share = float(threshold_share)
    if not 0.0 < share < 1.0:
        raise ValueError(
            f"threshold_share must be a real number in (0, 1), got {threshold_share!r}."
        )
    return share


def calibrate_confident_gnmax(
    epsilon,
    delta,
    max_queries,
    max_answers,
    *,
    calibration="auto",
    threshold_share=0.5,
    rtol=1e-6,
):
    """Noise scales of Confident-GNMax for its worst case (SPEC 3.1).

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

    ``"rdp"`` composes those Gaussian events in dp_accounting's
    :class:`RdpAccountant` (replace-one sensitivities, SPEC section 4) and
    finds the largest ``rho`` it certifies within ``(epsilon, delta)`` by
    bisection (relative tolerance ``rtol`` on ``rho``, returned from the safe
    side); ``"zcdp"`` uses ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun
    and Steinke 2016) in closed form; ``"auto"`` takes the one with the
    larger ``rho`` (smaller noise), nearly always ``"rdp"``.

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
    calibration : {"auto", "rdp", "zcdp"}, default="auto"
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
    >>> from dpsklearn.calibration import calibrate_confident_gnmax
    >>> cal = calibrate_confident_gnmax(2.0, 1e-5, 2000, 500)
    >>> cal.name, round(cal.sigma_threshold), round(cal.sigma_argmax)
    ('rdp', 136, 96)
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, allow_zero=False)
    m = _check_count(max_queries, "max_queries")
    answers = _check_count(max_answers, "max_answers")
    if answers > m:
        raise ValueError(
            f"max_answers must be at most max_queries={m}, got {answers!r}."
        )
    calibration = _check_choice(
        calibration, ("auto", *GAUSSIAN_CALIBRATIONS), "calibration"
    )
    share = _check_share(threshold_share)
    rtol = _check_positive_float(rtol, "rtol")
    return _calibrate_gaussian_cached(
        epsilon, delta, m, answers, share, calibration, rtol
    )


calibrate_confident_gnmax.cache_info = _calibrate_gaussian_cached.cache_info
calibrate_confident_gnmax.cache_clear = _calibrate_gaussian_cached.cache_clear


def gnmax_sigma(epsilon, delta, max_queries, *, calibration="auto", rtol=1e-6):
    """``sigma`` of GNMax: ``max_queries`` Gaussian noisy argmaxes within the budget.

    GNMax (Papernot et al. 2018) answers every query with the argmax of the
    vote counts plus ``N(0, sigma^2)`` each (discrete Gaussian in dpsklearn).
    One record moves one vote, L2 sensitivity ``sqrt(2)``, so each answer is
    ``1/sigma^2``-zCDP and ``m`` answers ``rho = m / sigma^2``; the largest
    ``rho`` within ``(epsilon, delta)`` is found as in
    :func:`calibrate_confident_gnmax` (dp_accounting RDP, or zCDP).

    Parameters
    ----------
    epsilon : float
        Total epsilon (finite, > 0).
    delta : float
        Total delta, in (0, 1).
    max_queries : int
        ``m``, >= 1 (part of the guarantee).
    calibration : {"auto", "rdp", "zcdp"}, default="auto"
    rtol : float, default=1e-6

    Returns
    -------
    sigma : float
    name : str
        The calibration used.

    Examples
    --------
    >>> from dpsklearn.calibration import gnmax_sigma
    >>> sigma, name = gnmax_sigma(1.0, 1e-5, 1000)
    >>> name, round(sigma)
    ('rdp', 181)
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, allow_zero=False)
    m = _check_count(max_queries, "max_queries")
    calibration = _check_choice(
        calibration, ("auto", *GAUSSIAN_CALIBRATIONS), "calibration"
    )
    rtol = _check_positive_float(rtol, "rtol")
    cal = _calibrate_gaussian_cached(epsilon, delta, m, m, 0.0, calibration, rtol)
    return cal.sigma_argmax, cal.name
