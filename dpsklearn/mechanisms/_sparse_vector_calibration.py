"""Calibrations of the sparse vector stability test.

The guarantee of the test has two parts (``docs/design.rst``, "The sparse
vector stability test"):

* the *sparse vector part*: ``T`` AboveThreshold instances, each with
  threshold noise ``DLap(lam)`` and query noise ``DLap(2 lam)``, each
  ``eps0 = 2 / lam``-DP, composed over the ``T`` threshold draws;
* the *stability part*: the bad event that a query whose answer differs
  between neighbours passes. Over at most ``T`` threshold draws it has
  probability at most ``T p`` with ``p = P(DLap(2 lam) - DLap(lam) > w)``,
  computed exactly by :func:`stability_tail_probability`.

A calibration chooses ``lam`` and ``w`` for a budget:

``"paper"``
    Bassily, Thakkar and Thakurta (2018), Algorithm 3: ``lam = sqrt(32 T
    ln(2/delta)) / epsilon`` and ``w = 2 lam ln(2T/delta)``, justified by
    advanced composition at ``delta/2``; admissible only where that bound
    really is at most ``epsilon`` (it overspends at large epsilon).
``"exact"``
    ``lam = 2 / eps0`` with ``eps0`` the largest per-instance epsilon whose
    ``T``-fold optimal composition (Kairouz, Oh and Viswanath 2015) is
    ``(epsilon, delta/2)``-DP; ``w`` as for paper.
``"pure"``
    ``lam = 2T / epsilon`` (basic composition) and ``w = 2 lam ln(T/delta)``:
    the whole delta goes to the stability part.

``"auto"`` takes the admissible calibration with the smallest threshold
``w``: the pass rate depends on ``w``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._validation import (
    COUNT,
    DELTA_POSITIVE,
    FINITE_POSITIVE,
    validate_params,
)
from ..accounting._composition import (
    _drv_epsilon,
    _kov_epsilon,
    _kov_log_delta,
    _kov_max_epsilon0,
)

__all__ = [
    "SPARSE_VECTOR_CALIBRATIONS",
    "SparseVectorCalibration",
    "calibrate_sparse_vector",
    "sparse_vector_candidates",
    "stability_tail_bound",
    "stability_tail_probability",
]

#: Calibrations of the sparse vector engine, in order of preference on ties.
SPARSE_VECTOR_CALIBRATIONS = ("pure", "exact", "paper")

_FINITE = Interval(Real, -math.inf, math.inf, closed="neither")


# -- the stability part: the exact tail of DLap(2 lam) - DLap(lam) ----------
def _tail_n(threshold):
    """Smallest integer n with n > threshold (the difference is an integer)."""
    return math.floor(threshold) + 1


def _log_tail_at_least(n, b, log_b):
    """log P(D >= n) for an integer n >= 1, D = DLap(2 lam) - DLap(lam).

    Derivation (``docs/design.rst``, "The sparse vector stability test").
    With ``a = b`` and ``c = b**2`` the geometric parameters of DLap(2 lam)
    and DLap(lam), the pmf of D = Z1 + (-Z2) (both
    symmetric) is, for d >= 0, a convolution of two two-sided geometric
    series::

        P(D = d) = K [ c^d (1/(1-ac) - a/(a-c)) + a^d (1/(1-ac) + c/(a-c)) ]

    with ``K = (1-a)(1-c) / ((1+a)(1+c)) = (1-b)^2 / (1+b^2)``. Summing the
    two geometric tails from d = n and simplifying with ``a = b, c = b^2``::

        P(D >= n) = b^n / (1+b+b^2) * [ (1+b) - b^(n+1) / (1+b^2) ].

    The first term alone is :func:`stability_tail_bound`; the bracket lies in
    (1/2, 2), so the product is well conditioned and only ``b^n`` needs log space.
    """
    # ``log_b = -1/(2 lam)`` is passed exactly, not recomputed from ``b``.
    bracket = (1.0 + b) - math.exp((n + 1) * log_b) / (1.0 + b * b)
    return n * log_b + math.log(bracket) - math.log1p(b + b * b)


def _b_of(noise_scale):
    log_b = -1.0 / (2.0 * noise_scale)
    return math.exp(log_b), log_b


@validate_params(
    {
        "noise_scale": [FINITE_POSITIVE],
        "threshold": [_FINITE],
    },
    prefer_skip_nested_validation=True,
)
def stability_tail_probability(noise_scale, threshold):
    """Exact probability that the stability test passes an unstable query.

    Returns ``P(Z1 - Z2 > w)`` for independent ``Z1 ~ DLap(2 lam)`` and
    ``Z2 ~ DLap(lam)``, where ``DLap(t)`` has ``P(z) = (1-a)/(1+a) a^|z|``,
    ``a = exp(-1/t)`` (``docs/design.rst``, "Noise primitives"). Since ``Z1 - Z2`` is an
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
    stability_tail_bound : the simpler upper bound.

    Examples
    --------
    >>> from dpsklearn.mechanisms import stability_tail_probability
    >>> p = stability_tail_probability(10.0, 100.0)
    >>> bool(p < 1e-2 / 2)
    True
    """
    return _tail(float(noise_scale), float(threshold))


def _tail(noise_scale, threshold):
    """:func:`stability_tail_probability` without validation (for inner loops)."""
    b, log_b = _b_of(noise_scale)
    n = _tail_n(threshold)
    if n >= 1:
        return math.exp(_log_tail_at_least(n, b, log_b))
    # D is symmetric: P(D >= n) = 1 - P(D <= n - 1) = 1 - P(D >= 1 - n).
    return -math.expm1(_log_tail_at_least(1 - n, b, log_b))


@validate_params(
    {
        "noise_scale": [FINITE_POSITIVE],
        "threshold": [_FINITE],
    },
    prefer_skip_nested_validation=True,
)
def stability_tail_bound(noise_scale, threshold):
    """The simple upper bound on :func:`stability_tail_probability`.

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
    >>> from dpsklearn.mechanisms import stability_tail_bound
    >>> round(stability_tail_bound(1.0, 0.0), 4)  # b (1 + b) / (1 + b + b^2)
    0.4935
    """
    b, log_b = _b_of(float(noise_scale))
    log_bound = (
        _tail_n(float(threshold)) * log_b + math.log1p(b) - math.log1p(b + b * b)
    )
    return math.exp(min(0.0, log_bound))


# -- the calibrations ----------------------------------------------------------
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
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
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

    def epsilon_after(self, n_instances):
        """Epsilon of the first ``n_instances`` AboveThreshold instances.

        The calibration's own composition theorem at the sparse vector
        part's delta, never above basic composition ``n eps0``.
        """
        n = int(n_instances)
        if n <= 0:
            return 0.0
        eps0 = self.per_instance_epsilon
        return min(n * eps0, _COMPOSED[self.name](eps0, n, self.delta))

    def delta_after(self, n_instances):
        """Delta of the first ``n_instances`` instances: their part plus ``n p``."""
        n = int(n_instances)
        if n <= 0:
            return 0.0
        return self.sparse_vector_delta + n * self.tail_probability


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
        tail_probability=_tail(lam, w),
    )


def _paper(epsilon, delta, cutoff):
    # Bassily, Thakkar and Thakurta 2018, Algorithm 3: lam from advanced
    # composition at delta/2;
    # w puts P(pass | unstable) < exp(-w / (2 lam)) = delta / (2T) per draw.
    lam = math.sqrt(32.0 * cutoff * math.log(2.0 / delta)) / epsilon
    w = 2.0 * lam * math.log(2.0 * cutoff / delta)
    composed = _drv_epsilon(2.0 / lam, cutoff, delta / 2.0)
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
# The composition theorem each calibration certifies its instances with.
_COMPOSED = {
    "paper": lambda eps0, n, delta: _drv_epsilon(eps0, n, delta / 2.0),
    "exact": lambda eps0, n, delta: _kov_epsilon(eps0, n, delta / 2.0),
    "pure": lambda eps0, n, delta: n * eps0,
}


@functools.lru_cache(maxsize=1024)
def _candidates(epsilon, delta, cutoff):
    out = {}
    for name in SPARSE_VECTOR_CALIBRATIONS:
        out[name] = _SPARSE_VECTOR_BUILDERS[name](epsilon, delta, cutoff)
    return out


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "cutoff": [COUNT],
    },
    prefer_skip_nested_validation=True,
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
    >>> from dpsklearn.mechanisms import sparse_vector_candidates
    >>> cands = sparse_vector_candidates(50.0, 1e-5, 100)
    >>> cands["paper"] is None, cands["exact"].name
    (True, 'exact')
    """
    cands = _candidates(float(epsilon), float(delta), int(cutoff))
    return {name: (c if c.admissible else None) for name, c in cands.items()}


@validate_params(
    {
        "epsilon": [FINITE_POSITIVE],
        "delta": [DELTA_POSITIVE],
        "cutoff": [COUNT],
        "calibration": [StrOptions({"auto", *SPARSE_VECTOR_CALIBRATIONS})],
    },
    prefer_skip_nested_validation=True,
)
def calibrate_sparse_vector(epsilon, delta, cutoff, calibration="auto"):
    """Noise scale and threshold of the sparse vector engine.

    See ``docs/design.rst``, "The sparse vector stability test".

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
    >>> from dpsklearn.mechanisms import calibrate_sparse_vector
    >>> cal = calibrate_sparse_vector(1.0, 1e-5, 100)
    >>> cal.name, round(cal.threshold, -1)
    ('exact', 2580.0)
    """
    return _calibrate_cached(float(epsilon), float(delta), int(cutoff), calibration)


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
